//! The fault campaign's profile cases (docs/RELIABILITY.md): `pmx serve`'s
//! `/debug/pprof/profile` under many concurrent requests, half-open
//! requests, slow readers and clients that vanish, rounds after rounds.
//! Expected: every request answered (200 for as many as there are
//! sessions, 429 with `Retry-After` for the rest) or closed at its
//! deadline, nothing hangs, `/metrics` keeps answering, no session,
//! thread or perf fd left behind, and the daemon's memory flat from round
//! to round. A client that vanishes without a FIN (its network namespace's
//! link taken down mid-profile) is noticed by TCP keepalive and its
//! session stopped long before its end.

use crate::serve_support::{perf_fds, quick_sum, rss_kb, scrape, start};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Send `query`'s request; the status of the answer (0: closed).
fn ask(addr: &str, query: &str, timeout: Duration) -> u16 {
    crate::serve_support::profile(addr, query, timeout).0
}

#[test]
fn many_profile_requests_half_open_and_slow_clients_nothing_hangs() {
    let d = start(&["-e", "task-clock", "--max-connections", "200"]);
    let pid = d.child.id();
    let me = std::process::id();
    let fds_before = perf_fds(pid);
    let query = format!("seconds=1&pid={me}");
    let mut rss = Vec::new();
    let mut served = 0.0;
    // bench/faults.sh (PMX_FAULTS_LONG=1) runs 20 rounds.
    let rounds = if std::env::var_os("PMX_FAULTS_LONG").is_some() {
        20
    } else {
        4
    };
    for round in 0..rounds {
        let t = Instant::now();
        // 10 clients that ask a 30 s profile of every CPU and vanish:
        // each is refused (429) or its session stopped at once.
        let before = scrape(&d.addr, false);
        let gone = |b: &str| {
            quick_sum(b, "pmx_profiles_abandoned_total")
                + quick_sum(b, "pmx_profiles_refused_total")
        };
        for _ in 0..10 {
            let mut c = TcpStream::connect(&d.addr).unwrap();
            c.write_all(b"GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\n\r\n")
                .unwrap();
            drop(c);
        }
        let w = Instant::now();
        while gone(&scrape(&d.addr, false)) < gone(&before) + 10.0
            && w.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        let after = scrape(&d.addr, false);
        assert_eq!(
            gone(&after),
            gone(&before) + 10.0,
            "vanished clients: {after}"
        );
        // 40 profile requests at once, 20 half-open heads, 5 clients
        // that ask and do not read.
        let (statuses, idle): (Vec<u16>, Vec<TcpStream>) = std::thread::scope(|s| {
            let mut half = Vec::new();
            for _ in 0..20 {
                let mut c = TcpStream::connect(&d.addr).unwrap();
                c.write_all(b"GET /debug/pprof/profile?seconds=1 HT")
                    .unwrap();
                half.push(c);
            }
            let mut idle = Vec::new();
            for _ in 0..5 {
                let mut c = TcpStream::connect(&d.addr).unwrap();
                let req = format!("GET /debug/pprof/profile?{query} HTTP/1.1\r\n\r\n");
                c.write_all(req.as_bytes()).unwrap();
                idle.push(c);
            }
            let asks: Vec<_> = (0..40)
                .map(|_| s.spawn(|| ask(&d.addr, &query, Duration::from_secs(300))))
                .collect();
            // /metrics answers meanwhile.
            let body = scrape(&d.addr, false);
            assert!(body.contains("pmx_events_total"));
            let out = asks.into_iter().map(|h| h.join().unwrap()).collect();
            drop(half);
            (out, idle)
        });
        let ok = statuses.iter().filter(|&&s| s == 200).count();
        let busy = statuses.iter().filter(|&&s| s == 429).count();
        assert_eq!(ok + busy, 40, "round {round}: {statuses:?}");
        eprintln!(
            "round {round}: {ok} × 200, {busy} × 429 in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        // Everything ends: no session, no perf fd beyond the counters.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(120)
            && (quick_sum(&scrape(&d.addr, false), "pmx_profile_sessions") != 0.0
                || perf_fds(pid) != fds_before)
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(
            quick_sum(&scrape(&d.addr, false), "pmx_profile_sessions"),
            0.0
        );
        assert_eq!(perf_fds(pid), fds_before, "round {round}: perf fds left");
        drop(idle);
        let now = quick_sum(&scrape(&d.addr, false), "pmx_profiles_total");
        assert!(now > served, "round {round}: no profile served");
        served = now;
        rss.push(rss_kb(pid));
    }
    eprintln!("RSS after each round: {rss:?} kB");
    // Flat: from round to round memory grows by more than 16 MiB at most
    // once. What is loaded once is loaded when the first sample needs it
    // (the allocator's arenas, the kernel's symbols at the first kernel
    // sample, this test binary's tables at the first sample in it), and
    // with 1 s profiles of a mostly idle process that may be any round;
    // a leak grows every round.
    let jumps = rss.windows(2).filter(|w| w[1] > w[0] + 16 * 1024).count();
    assert!(jumps <= 1, "memory grows from round to round: {rss:?} kB");
    let body = scrape(&d.addr, false);
    eprintln!(
        "served {}, refused {}, abandoned {}",
        quick_sum(&body, "pmx_profiles_total"),
        quick_sum(&body, "pmx_profiles_refused_total"),
        quick_sum(&body, "pmx_profiles_abandoned_total")
    );
}

/// `ip ARGS…`; whether it succeeded.
fn ip(args: &[&str]) -> bool {
    std::process::Command::new("ip")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A network namespace joined to this one by a veth pair: the host end
/// `10.213.N.1`, the namespace's `10.213.N.2`; deleted on drop.
struct Netns {
    name: String,
    host: String,
    inner: String,
}

impl Netns {
    fn create() -> Option<Netns> {
        let n = std::process::id() % 250 + 1;
        let name = format!("pmxv{n}");
        let (host, inner) = (format!("pmxv{n}a"), format!("pmxv{n}b"));
        // A namespace left by a killed run of the same pid goes first.
        ip(&["netns", "del", &name]);
        if !ip(&["netns", "add", &name]) {
            return None;
        }
        let ns = Netns {
            name: name.clone(),
            host: host.clone(),
            inner: inner.clone(),
        };
        let ok = ip(&[
            "link", "add", &host, "type", "veth", "peer", "name", &inner, "netns", &name,
        ]) && ip(&["addr", "add", &format!("10.213.{n}.1/30"), "dev", &host])
            && ip(&["link", "set", &host, "up"])
            && ip(&[
                "-n",
                &name,
                "addr",
                "add",
                &format!("10.213.{n}.2/30"),
                "dev",
                &inner,
            ])
            && ip(&["-n", &name, "link", "set", &inner, "up"]);
        ok.then_some(ns)
    }

    fn host_addr(&self) -> String {
        format!("10.213.{}.1", std::process::id() % 250 + 1)
    }

    /// A TCP connection to `addr` from inside the namespace.
    fn connect(&self, addr: &str) -> std::io::Result<TcpStream> {
        let path = format!("/run/netns/{}", self.name);
        let addr = addr.to_string();
        std::thread::spawn(move || {
            let f = std::fs::File::open(&path)?;
            // SAFETY: setns on an open namespace file; only this thread
            // (which ends here) moves into it.
            let r = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&f), libc::CLONE_NEWNET) };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            TcpStream::connect(addr)
        })
        .join()
        .expect("connect thread")
    }

    /// The namespace's end goes down: its packets go nowhere, nothing
    /// is closed (a cable pulled).
    fn pull_the_cable(&self) -> bool {
        ip(&["-n", &self.name, "link", "set", &self.inner, "down"])
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.name]);
        ip(&["link", "del", &self.host]);
    }
}

#[test]
fn a_client_that_vanishes_without_a_fin_frees_its_session() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        pmx_testkit::skip("not root: no network namespace for a vanishing client");
        return;
    }
    let Some(ns) = Netns::create() else {
        pmx_testkit::skip("`ip netns`/veth unavailable here: the vanishing client is not tried");
        return;
    };
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        cfg.path(),
        "profile-sessions = 1\nprofile-keepalive = 1\nprofile-max-seconds = 120\n",
    )
    .unwrap();
    let listen = format!("{}:0", ns.host_addr());
    let d = crate::serve_support::start_at(
        &listen,
        &[
            "-e",
            "task-clock",
            "--profiles",
            "--config",
            cfg.path().to_str().unwrap(),
        ],
    );
    let pid = d.child.id();
    let fds_before = perf_fds(pid);
    let me = std::process::id();
    // A client in the namespace asks for 90 s and then vanishes.
    let mut c = ns.connect(&d.addr).expect("connect from the namespace");
    let req = crate::serve_support::profile_request(&format!("seconds=90&pid={me}"));
    c.write_all(req.as_bytes()).unwrap();
    assert!(
        crate::serve_support::wait_for(
            &d.addr,
            "pmx_profile_sessions",
            1.0,
            Duration::from_secs(30)
        ),
        "the profile did not start"
    );
    assert!(ns.pull_the_cable(), "cannot take the namespace's link down");
    let t = Instant::now();
    // Keepalive after 1 s of silence, 3 probes 1 s apart: noticed within
    // about 4 s; 40 s is the margin of a loaded machine, far under 90 s.
    assert!(
        crate::serve_support::wait_for(
            &d.addr,
            "pmx_profile_sessions",
            0.0,
            Duration::from_secs(40)
        ),
        "the session of a vanished client is still running after {:?}",
        t.elapsed()
    );
    eprintln!(
        "vanished client noticed after {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let body = scrape(&d.addr, false);
    assert_eq!(
        quick_sum(&body, "pmx_profiles_abandoned_total"),
        1.0,
        "{body}"
    );
    d.assert_logged(&["profile abandoned"]);
    // Its place is free: the next profile is served, not refused.
    let (status, head, _) = crate::serve_support::profile(
        &d.addr,
        &format!("seconds=1&pid={me}"),
        Duration::from_secs(300),
    );
    assert_eq!(status, 200, "{head}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while perf_fds(pid) != fds_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(perf_fds(pid), fds_before, "perf fds left behind");
    drop(c);
}
