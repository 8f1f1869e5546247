//! `pmx serve` under load (issue 22, item 2): idle and half-open
//! connections cannot lock a scraper out, a burst of concurrent keep-alive
//! scrapers gets only 200s and counters that never go back, and memory
//! stays flat over many requests (the 100,000-request run is `#[ignore]`d;
//! `bench/faults.sh` runs it). Timings are printed, and asserted only
//! against generous bounds: the test machine may be loaded.

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::serve_support::*;

/// One scrape on a fresh connection, timed.
fn timed_scrape(addr: &str) -> (Duration, u16) {
    let t = Instant::now();
    let mut c = KeepAlive::connect(addr).unwrap();
    let (status, body) = c.get("/metrics").unwrap();
    assert!(body.contains("pmx_events_total"), "{body}");
    (t.elapsed(), status)
}

#[test]
fn three_hundred_half_open_connections_do_not_block_a_scrape() {
    raise_nofile();
    let d = start(&["-e", "page-faults,task-clock"]);
    let (cold, _) = timed_scrape(&d.addr);
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect(&d.addr).unwrap();
        // Half a request line each.
        s.write_all(b"GET /metr").unwrap();
        idle.push(s);
        if i == 150 {
            let (t, status) = timed_scrape(&d.addr);
            assert_eq!(status, 200);
            eprintln!("scrape with 150 half-open connections: {t:?}");
        }
    }
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let (t, status) = timed_scrape(&d.addr);
        assert_eq!(status, 200);
        worst = worst.max(t);
    }
    eprintln!("scrape alone: {cold:?}; with 300 half-open connections: worst of 5 {worst:?}");
    // 1 s on an idle machine (docs/RELIABILITY.md has the figures); a
    // generous bound here because other builds share the machine.
    assert!(worst < Duration::from_secs(5), "a scrape took {worst:?}");
    drop(idle);
}

/// `clients` keep-alive clients × `requests` scrapes each, all started
/// together; every answer must be a 200 with counters that never go back
/// for that client. Returns the number of errors seen.
fn burst(addr: &str, clients: usize, requests: usize) -> usize {
    let gate = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let addr = addr.to_string();
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || -> Result<(), String> {
                let mut c = KeepAlive::connect(&addr).map_err(|e| e.to_string())?;
                gate.wait();
                let (mut faults, mut clock, mut scrapes) = (0.0, 0.0, 0.0);
                for r in 0..requests {
                    let (status, body) = c.get("/metrics").map_err(|e| format!("{i}/{r}: {e}"))?;
                    if status != 200 {
                        return Err(format!("client {i} request {r}: status {status}"));
                    }
                    let f = quick_sum(&body, "pmx_events_total{event=\"page-faults\"");
                    let k = quick_sum(&body, "pmx_events_total{event=\"task-clock\"");
                    let s = quick_sum(&body, "pmx_scrapes_total ");
                    if f < faults || k < clock || s <= scrapes {
                        return Err(format!(
                            "client {i} request {r}: went back: faults {faults} → {f}, task-clock {clock} → {k}, scrapes {scrapes} → {s}"
                        ));
                    }
                    (faults, clock, scrapes) = (f, k, s);
                }
                Ok(())
            })
        })
        .collect();
    let mut errors = 0;
    for h in handles {
        if let Err(e) = h.join().unwrap() {
            eprintln!("{e}");
            errors += 1;
        }
    }
    errors
}

#[test]
fn twenty_concurrent_clients_get_only_200s_and_monotonic_counters() {
    let d = start(&["-e", "page-faults,task-clock"]);
    let t = Instant::now();
    let errors = burst(&d.addr, 20, 500);
    let took = t.elapsed();
    eprintln!(
        "20 clients × 500 requests: {errors} errors in {took:?} ({:.0} requests/s)",
        10_000.0 / took.as_secs_f64()
    );
    assert_eq!(errors, 0);
    let s = samples(&scrape(&d.addr, true));
    assert_eq!(sum(&s, "pmx_scrapes_total", &[]), 10_001.0);
}

#[test]
#[ignore = "long: 100,000 requests (bench/faults.sh runs it)"]
fn rss_stays_flat_over_100_000_requests() {
    let d = start(&["-e", "page-faults,task-clock"]);
    let pid = d.child.id();
    assert_eq!(burst(&d.addr, 20, 100), 0, "warm-up");
    let before = rss_kb(pid);
    let t = Instant::now();
    assert_eq!(burst(&d.addr, 20, 5_000), 0);
    let took = t.elapsed();
    let after = rss_kb(pid);
    eprintln!(
        "RSS over 100,000 requests (20 keep-alive clients): {before} kB → {after} kB in {took:?} ({:.0} requests/s)",
        100_000.0 / took.as_secs_f64()
    );
    let change = (after as f64 - before as f64) / before as f64;
    assert!(change.abs() < 0.10, "RSS {before} kB → {after} kB");
}
