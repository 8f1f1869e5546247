//! Fault campaign, `pmx serve` (issue 22, item 3): hostile HTTP. Random
//! garbage, oversized heads, pipelined requests (good ones, and a bad one
//! among them), slow senders and slow readers, 1,000 connections at once.
//! Expected: every request gets a well-formed answer (4xx for the bad
//! ones) or a closed connection, nothing hangs (time bounds), the daemon
//! never panics and still scrapes at the end.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::faults_support::{base_seed, cases, Tally};
use crate::serve_support::*;
use pmx_testkit::mutate::Rng;

/// Everything the server sends until it closes (or `bound` passes).
fn read_all(s: &mut TcpStream, bound: Duration) -> Result<Vec<u8>, String> {
    s.set_read_timeout(Some(bound)).unwrap();
    let mut v = Vec::new();
    match s.read_to_end(&mut v) {
        Ok(_) => Ok(v),
        // A reset after the answer (we sent more than was read) is fine.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(v),
        Err(e) => Err(format!("{e} after {} bytes", v.len())),
    }
}

fn status_of(resp: &[u8]) -> Option<u16> {
    let t = String::from_utf8_lossy(resp);
    let line = t.lines().next()?;
    let code = line.strip_prefix("HTTP/1.1 ")?.split(' ').next()?;
    code.parse().ok()
}

fn garbage(t: &mut Tally, addr: &str, n: usize) {
    let mut rng = Rng::new(base_seed() ^ 0x6761_7262);
    for i in 0..n {
        let seed_note = format!("garbage case {i} (seed {})", base_seed());
        let len = rng.below(3000);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if rng.below(3) == 0 {
            // A plausible start, then junk.
            let mut v = b"GET /metrics HTTP/1.1\r\n".to_vec();
            v.append(&mut bytes);
            bytes = v;
        }
        t.tried += 1;
        let mut s = TcpStream::connect(addr).unwrap();
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(Shutdown::Write);
        match read_all(&mut s, Duration::from_secs(30)) {
            Err(e) => t.hang(&format!("{seed_note}: {e}")),
            Ok(r) if r.is_empty() => t.refused += 1,
            Ok(r) => match status_of(&r) {
                Some(c) if (400..=505).contains(&c) => t.refused += 1,
                Some(200) => t.accepted += 1,
                _ => t.unclear(&seed_note, &String::from_utf8_lossy(&r)),
            },
        }
    }
}

fn huge_heads(t: &mut Tally, addr: &str) {
    let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
    let cases: Vec<(String, Vec<u8>)> = vec![
        (
            "one 9 KiB header".into(),
            format!(
                "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
                "a".repeat(9 * 1024)
            )
            .into_bytes(),
        ),
        (
            "100 headers".into(),
            format!("GET /metrics HTTP/1.1\r\n{many}\r\n").into_bytes(),
        ),
        (
            "1 MiB head without an end".into(),
            [
                b"GET /metrics HTTP/1.1\r\nX: ".to_vec(),
                vec![b'a'; 1 << 20],
            ]
            .concat(),
        ),
        (
            "a 64 KiB request line".into(),
            format!("GET /{} HTTP/1.1\r\n\r\n", "m".repeat(64 * 1024)).into_bytes(),
        ),
    ];
    for (what, bytes) in cases {
        t.tried += 1;
        let mut s = TcpStream::connect(addr).unwrap();
        // The server stops reading at the limit: the write may fail.
        let _ = s.write_all(&bytes);
        match read_all(&mut s, Duration::from_secs(30)) {
            Ok(r) if status_of(&r) == Some(431) => t.refused += 1,
            Ok(r) => t.unclear(&what, &String::from_utf8_lossy(&r[..r.len().min(200)])),
            Err(e) => t.hang(&format!("{what}: {e}")),
        }
    }
}

fn pipelined(t: &mut Tally, addr: &str) {
    // 100 requests in one write: 100 answers, in order.
    t.tried += 1;
    let mut c = KeepAlive::connect(addr).unwrap();
    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100);
    c.stream().write_all(req.as_bytes()).unwrap();
    let mut last = 0.0;
    for i in 0..100 {
        match c.response() {
            Ok((200, body)) => {
                let n = quick_sum(&body, "pmx_scrapes_total ");
                if n <= last {
                    t.unclear(
                        "100 pipelined",
                        &format!("answer {i}: scrape {n} after {last}"),
                    );
                }
                last = n;
            }
            other => {
                t.unclear("100 pipelined", &format!("answer {i}: {other:?}"));
                break;
            }
        }
    }
    // Good, bad, good: the good one is answered, the bad one gets 400,
    // and the connection closes (nothing after a bad request is read).
    t.tried += 1;
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\nGARBAGE\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        .unwrap();
    match read_all(&mut s, Duration::from_secs(30)) {
        Ok(r) => {
            let text = String::from_utf8_lossy(&r);
            let n200 = text.matches("HTTP/1.1 200 OK").count();
            let n400 = text.matches("HTTP/1.1 400 Bad Request").count();
            if (n200, n400) != (1, 1) {
                t.unclear("good, bad, good", &text);
            }
        }
        Err(e) => t.hang(&format!("good, bad, good: {e}")),
    }
}

fn slow_clients(t: &mut Tally, addr: &str) {
    // A request one byte every 10 ms (well within the head timeout).
    t.tried += 1;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    for b in b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n" {
        s.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    match read_all(&mut s, Duration::from_secs(30)) {
        Ok(r) if status_of(&r) == Some(200) => t.accepted += 1,
        Ok(r) => t.unclear("byte by byte", &String::from_utf8_lossy(&r)),
        Err(e) => t.hang(&format!("byte by byte: {e}")),
    }
    // A reader that does not read: 300 pipelined requests, nothing read
    // for a while; meanwhile others are served; then it reads them all.
    t.tried += 1;
    let mut lazy = KeepAlive::connect(addr).unwrap();
    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(300);
    lazy.stream().write_all(req.as_bytes()).unwrap();
    for _ in 0..5 {
        let t0 = Instant::now();
        let mut c = KeepAlive::connect(addr).unwrap();
        match c.get("/metrics") {
            Ok((200, _)) if t0.elapsed() < Duration::from_secs(5) => {}
            other => t.unclear(
                "a scrape beside a slow reader",
                &format!("{other:?} in {:?}", t0.elapsed()),
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut got = 0;
    while got < 300 {
        match lazy.response() {
            Ok((200, _)) => got += 1,
            other => {
                t.unclear(
                    "the slow reader's answers",
                    &format!("{got} then {other:?}"),
                );
                break;
            }
        }
    }
}

fn thousand_connections(t: &mut Tally, addr: &str) {
    t.tried += 1;
    let mut held = Vec::new();
    for i in 0..1000 {
        match TcpStream::connect(addr) {
            Ok(mut s) => {
                let _ = s.write_all(if i % 2 == 0 { b"GET /me" } else { b"" });
                held.push(s);
            }
            Err(e) => {
                t.unclear("1,000 connections", &format!("connect {i}: {e}"));
                break;
            }
        }
    }
    let t0 = Instant::now();
    let mut c = KeepAlive::connect(addr).unwrap();
    let r = c.get("/metrics");
    let took = t0.elapsed();
    eprintln!(
        "a scrape with 1,000 other connections open: {took:?} ({r:?})",
        r = r.as_ref().map(|x| x.0)
    );
    match r {
        Ok((200, _)) if took < Duration::from_secs(5) => t.accepted += 1,
        other => t.unclear(
            "a scrape among 1,000 connections",
            &format!("{other:?} in {took:?}"),
        ),
    }
    drop(held);
}

#[test]
fn hostile_http_leaves_the_daemon_serving() {
    raise_nofile();
    let mut d = start(&["-e", "page-faults", "--max-connections", "1100"]);
    let mut t = Tally::new("hostile HTTP → serve");
    garbage(&mut t, &d.addr, cases(40, 1000));
    huge_heads(&mut t, &d.addr);
    pipelined(&mut t, &d.addr);
    slow_clients(&mut t, &d.addr);
    thousand_connections(&mut t, &d.addr);
    // Still there, still scraping, nothing panicked.
    assert!(d.child.try_wait().unwrap().is_none(), "pmx serve exited");
    samples(&scrape(&d.addr, true));
    let lines: Vec<String> = d.log.try_iter().collect();
    if let Some(p) = lines.iter().find(|l| l.contains("panicked")) {
        t.panic("the daemon's log", p);
    }
    t.finish();
}
