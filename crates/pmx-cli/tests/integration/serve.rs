//! `pmx serve` against the real kernel on loopback: the OpenMetrics text
//! parses strictly, counts grow by what a workload did, `promtool` accepts
//! the Prometheus text, a real Prometheus server scrapes it, memory stays
//! flat over 1,000 scrapes, bad requests get 4xx, hotplug of the followed
//! CPU list adds and drops series, SIGTERM stops it with exit 0.

use pmx_testkit::workload::touch_pages;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::serve_support::*;

const PMX: &str = env!("CARGO_BIN_EXE_pmx");
#[test]
fn openmetrics_counts_grow_by_the_workload() {
    let d = start(&["-e", "page-faults,task-clock,context-switches,cycles"]);
    let a = samples(&scrape(&d.addr, true));
    assert_eq!(sum(&a, "pmx_up", &[]), 1.0);
    assert_eq!(sum(&a, "pmx_build_info", &[]), 1.0);
    assert_eq!(
        sum(
            &a,
            "pmx_event_supported",
            &[("event", "page-faults"), ("pmu", "software")]
        ),
        1.0
    );
    // No PMU in a VM: cycles is exported as absent, not as a zero count.
    let cycles_supported = sum(&a, "pmx_event_supported", &[("event", "cycles")]);
    if cycles_supported == 0.0 {
        assert!(series(&a, "pmx_events_total", &[("event", "cycles")]).is_empty());
    }
    let cpus = series(&a, "pmx_events_total", &[("event", "page-faults")]);
    assert!(!cpus.is_empty() && cpus.iter().all(|l| l.contains_key("cpu")));
    let n = 30_000u64;
    touch_pages(n as usize).unwrap();
    let b = samples(&scrape(&d.addr, true));
    let grew = sum(&b, "pmx_events_total", &[("event", "page-faults")])
        - sum(&a, "pmx_events_total", &[("event", "page-faults")]);
    // System-wide: at least the workload's faults, and not absurdly more.
    assert!(grew >= n as f64, "page faults grew by {grew}, want ≥ {n}");
    assert!(grew < 20.0 * n as f64, "page faults grew by {grew}");
    // Every counter is monotonic between the two scrapes.
    for (name, labels, v) in &b {
        if name.ends_with("_total") && name != "pmx_scrapes_total" {
            let before = a.iter().find(|(n2, l2, _)| n2 == name && l2 == labels);
            if let Some((_, _, old)) = before {
                assert!(v >= old, "{name} {labels:?} went from {old} to {v}");
            }
        }
    }
    // Software events always run: the running ratio over the window is 1.
    let ratio = sum(
        &b,
        "pmx_event_running_ratio",
        &[("event", "page-faults"), ("cpu", "0")],
    );
    assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
    assert!(sum(&b, "pmx_window_seconds", &[]) > 0.0);
    // The Prometheus text format of the same daemon has no EOF and is
    // typed by sample name.
    let t = scrape(&d.addr, false);
    assert!(t.contains("# TYPE pmx_events_total counter\n") && !t.contains("# EOF"));
}

#[test]
fn promtool_accepts_the_text_format() {
    if Command::new("promtool").arg("--version").output().is_err() {
        pmx_testkit::skip("promtool not installed (Debian: apt-get install prometheus)");
        return;
    }
    let d = start(&[
        "-e",
        "page-faults,task-clock,{context-switches,cpu-migrations}",
    ]);
    for om in [false, true] {
        let body = scrape(&d.addr, om);
        if om {
            // promtool reads the Prometheus text format; check it strictly
            // here and with promtool below.
            samples(&body);
            continue;
        }
        let mut p = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        p.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}\n{body}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_real_prometheus_scrapes_it() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        pmx_testkit::skip("prometheus not installed (Debian: apt-get install prometheus)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("pmx.conf");
    std::fs::write(
        &conf,
        "events = page-faults,task-clock\ndefine faults_per_second = page-faults / duration_time\n",
    )
    .unwrap();
    let d = start(&["--config", conf.to_str().unwrap()]);
    let prom_port = free_port();
    let prom_conf = dir.path().join("prometheus.yml");
    std::fs::write(
        &prom_conf,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: pmx\n    static_configs:\n      - targets: ['{}']\n",
            d.addr
        ),
    )
    .unwrap();
    let prom = Command::new("prometheus")
        .arg(format!("--config.file={}", prom_conf.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _guard = Kill(prom);
    let api = format!("127.0.0.1:{prom_port}");
    let query = |q: &str| -> Option<String> {
        let s = TcpStream::connect(&api).ok()?;
        drop(s);
        let req = format!(
            "GET /api/v1/query?query={q} HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n"
        );
        let (status, _, body) = http(&api, req.as_bytes());
        (status == 200).then_some(body)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    let found = loop {
        if let Some(body) = query("pmx_events_total") {
            if body.contains("\"event\":\"page-faults\"") && body.contains("\"cpu\":\"0\"") {
                break true;
            }
            last = body;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(found, "Prometheus never returned pmx_events_total: {last}");
    // The target is up (OpenMetrics negotiated and parsed by Prometheus)
    // and the user metric's gauge is there after two scrapes.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let up = query("up").unwrap_or_default();
        let m = query("pmx_metric").unwrap_or_default();
        if up.contains("\"1\"]") && m.contains("\"metric\":\"faults_per_second\"") {
            break;
        }
        assert!(Instant::now() < deadline, "up: {up}\npmx_metric: {m}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_thousand_scrapes_keep_memory_flat_and_counts_right() {
    let d = start(&[
        "-e",
        "page-faults,task-clock,context-switches,cpu-migrations",
    ]);
    let pid = d.child.id();
    let mut last_faults = 0.0;
    let mut check = |body: &str, i: usize| {
        let s = samples(body);
        let f = sum(&s, "pmx_events_total", &[("event", "page-faults")]);
        assert!(f >= last_faults, "scrape {i}: page faults went back");
        last_faults = f;
        sum(&s, "pmx_scrapes_total", &[])
    };
    for i in 0..100 {
        check(&scrape(&d.addr, true), i);
    }
    let before = rss_kb(pid);
    let mut n = 0.0;
    for i in 0..1000 {
        n = check(&scrape(&d.addr, true), i);
    }
    let after = rss_kb(pid);
    eprintln!("RSS over 1,000 scrapes: {before} kB → {after} kB");
    assert_eq!(n, 1100.0, "pmx_scrapes_total after 1,100 scrapes");
    let change = (after as f64 - before as f64) / before as f64;
    assert!(
        change.abs() < 0.05,
        "RSS {before} kB → {after} kB ({:+.1}%)",
        change * 100.0
    );
}

#[test]
fn malformed_requests_get_4xx_and_the_daemon_keeps_serving() {
    let d = start(&["-e", "page-faults"]);
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"GET /metrics\r\n\r\n".to_vec(), 400),
        (
            b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
            400,
        ),
        (b"\x00\xff\xfe binary\r\n\r\n".to_vec(), 400),
        (
            format!(
                "GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n",
                "a".repeat(20_000)
            )
            .into_bytes(),
            431,
        ),
        (b"GET /metrics HTTP/2.0\r\n\r\n".to_vec(), 505),
        (
            b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
            405,
        ),
        (b"DELETE / HTTP/1.1\r\n\r\n".to_vec(), 405),
        (b"GET /admin HTTP/1.1\r\n\r\n".to_vec(), 404),
    ];
    for (req, want) in cases {
        let (status, head, _) = http(&d.addr, &req);
        assert_eq!(
            status,
            want,
            "{:?} → {head}",
            String::from_utf8_lossy(&req[..req.len().min(40)])
        );
    }
    // A client that connects and sends half a request, then goes away.
    {
        let mut s = TcpStream::connect(&d.addr).unwrap();
        s.write_all(b"GET /met").unwrap();
    }
    // HEAD has the headers and no body; / has a short page.
    let (status, head, body) = http(
        &d.addr,
        b"HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(
        head.contains("Content-Length: 0") && body.is_empty(),
        "{head}"
    );
    let (status, _, body) = http(&d.addr, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200);
    assert!(body.contains("/metrics") && body.contains("page-faults"));
    // Two requests on one keep-alive connection.
    let (status, _, body) = http(
        &d.addr,
        b"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert_eq!(
        body.matches("HTTP/1.1 200 OK").count(),
        1,
        "second response follows the first"
    );
    samples(&scrape(&d.addr, true));
}

#[test]
fn sigterm_stops_it_with_exit_zero() {
    let mut d = start(&["-e", "page-faults"]);
    // An idle keep-alive connection must not hold the stop up.
    let mut idle = TcpStream::connect(&d.addr).unwrap();
    idle.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) };
    let status = loop {
        if let Some(st) = d.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "still running 5 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let lines: Vec<String> = d.log.try_iter().collect();
    assert!(lines.iter().any(|l| l.contains("stopped")), "{lines:?}");
}

#[test]
fn hotplug_of_the_followed_cpu_list() {
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if n < 2 {
        pmx_testkit::skip("needs 2 CPUs to take one away");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let online = dir.path().join("online");
    std::fs::write(&online, "0-1\n").unwrap();
    let d = start(&[
        "-e",
        "task-clock,page-faults",
        "--online-file",
        online.to_str().unwrap(),
    ]);
    let has_cpu1 = |s: &[Sample]| !series(s, "pmx_events_total", &[("cpu", "1")]).is_empty();
    let wait_for = |want: bool| -> Vec<Sample> {
        let t = Instant::now();
        loop {
            let s = samples(&scrape(&d.addr, true));
            if has_cpu1(&s) == want {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "CPU 1 series present: {}",
                !want
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let s = wait_for(true);
    assert_eq!(sum(&s, "pmx_cpus_counted", &[]), 2.0);
    std::fs::write(&online, "0\n").unwrap();
    let s = wait_for(false);
    assert_eq!(sum(&s, "pmx_cpus_counted", &[]), 1.0);
    let clock_before = s
        .iter()
        .find(|(n, l, _)| {
            n == "pmx_events_total"
                && l.get("event").map(String::as_str) == Some("task-clock")
                && l.get("cpu").map(String::as_str) == Some("0")
        })
        .map(|x| x.2)
        .unwrap();
    std::fs::write(&online, "0-1\n").unwrap();
    let s = wait_for(true);
    let clock_after = sum(
        &s,
        "pmx_events_total",
        &[("event", "task-clock"), ("cpu", "0")],
    );
    assert!(clock_after > clock_before, "CPU 0 kept counting");
    d.assert_logged(&["CPU 1 offline", "CPU 1 online"]);
}

#[test]
fn per_socket_series_and_bad_input() {
    let d = start(&["-e", "task-clock", "--per-socket"]);
    let s = samples(&scrape(&d.addr, true));
    let ser = series(&s, "pmx_events_total", &[("event", "task-clock")]);
    assert!(!ser.is_empty());
    assert!(
        ser.iter()
            .all(|l| l.contains_key("socket") && !l.contains_key("cpu")),
        "{ser:?}"
    );
    drop(d);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.conf");
    std::fs::write(&bad, "listen = 127.0.0.1:0\nper = thread\n").unwrap();
    for args in [
        vec!["serve", "--config", bad.to_str().unwrap()],
        vec!["serve", "--listen", "nowhere"],
        vec!["serve", "--listen", "127.0.0.1:0", "-e", "page-faults:zz"],
        vec!["serve", "--config", "/nonexistent/pmx.conf"],
    ] {
        let out = Command::new(PMX).args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A port already taken is a failure to run (1), said plainly.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(PMX)
        .args(["serve", "-e", "page-faults", "--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on"));
}

#[test]
fn the_deploy_files_are_valid() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    // The sample configuration runs as it is (on a loopback port here:
    // flags override the file), and its user metric is exported.
    let conf = deploy.join("pmx-serve.conf");
    let d = start(&["--config", conf.to_str().unwrap()]);
    touch_pages(1000).unwrap();
    let s = samples(&scrape(&d.addr, true));
    let fps = sum(
        &s,
        "pmx_metric",
        &[("metric", "page_faults_per_second"), ("cpu", "0")],
    ) + sum(
        &s,
        "pmx_metric",
        &[("metric", "page_faults_per_second"), ("cpu", "1")],
    );
    assert!(fps > 0.0, "page_faults_per_second: {fps}");
    if Command::new("promtool").arg("--version").output().is_err() {
        pmx_testkit::skip(
            "the promtool checks: promtool not installed (Debian: apt-get install prometheus)",
        );
        return;
    }
    for (what, file) in [("config", "prometheus.yml"), ("rules", "pmx-rules.yml")] {
        let out = Command::new("promtool")
            .args(["check", what])
            .arg(deploy.join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool check {what} {file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn at_the_connection_cap_the_oldest_waiting_client_makes_room() {
    let d = start(&["-e", "page-faults", "--max-connections", "1"]);
    // One client holds the only slot with a half-sent request.
    let mut hog = TcpStream::connect(&d.addr).unwrap();
    hog.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // A scraper is not refused: the hog, which waited longest, is closed.
    let (status, head, body) = http(
        &d.addr,
        b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{head}");
    assert!(body.contains("pmx_events_total"));
    hog.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut rest = Vec::new();
    let _ = hog.read_to_end(&mut rest);
    assert!(rest.is_empty(), "the hog got {rest:?}");
    let t = Instant::now();
    let lines: Vec<String> = loop {
        let l: Vec<String> = d.log.try_iter().collect();
        if !l.is_empty() || t.elapsed() > Duration::from_secs(10) {
            break l;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        lines
            .iter()
            .any(|l| l.contains("(limit 1): closed 1 that waited longest")),
        "{lines:?}"
    );
}
