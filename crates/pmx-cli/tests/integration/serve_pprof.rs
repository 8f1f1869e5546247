//! `pmx serve`'s `/debug/pprof/profile`, read by the real client.
//!
//! A C program (built with `-g` and frame pointers) spins in `spin_here`
//! while `go tool pprof -raw -seconds 3` fetches a profile over HTTP: the
//! function is listed with its file and line; a second profile of the
//! program's pid alone (`?pid=`) ranks it first in `go tool pprof -top`;
//! `/metrics` answers while both are taken, and a real Prometheus
//! scraping every second sees a session running with the target up
//! throughout an 8-second profile. Bad values get 400 with the
//! reason; a second profile while the only session runs gets 429 with
//! `Retry-After`; the event loop sleeps while a profile runs; a client
//! that hangs up mid-profile leaves no session,
//! no thread and no perf fd behind; `--profile-events` that cannot be
//! sampled here still serves the CPU profile, with the reason in a header
//! and the log; a `{cpu-clock,page-faults}:S` group's member is a sample
//! type by which `go tool pprof -sample_index=page-faults` puts the page
//! faults of a program on the function that takes them. The checks that need `go` or `prometheus` skip with a
//! message without them (CI installs golang-go and prometheus).

use crate::serve_support::{http, perf_fds, quick_sum, scrape, start, wait_for};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One test at a time: a profile's export (symbols of every binary
/// sampled) is the slow part, and tests in parallel would only slow
/// each other on a small machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A profile request answered within 5 minutes: (status, head, body bytes).
fn profile(addr: &str, query: &str) -> (u16, String, Vec<u8>) {
    crate::serve_support::profile(addr, query, Duration::from_secs(300))
}

const SPIN: &str = r#"#include <stdlib.h>
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) void spin_here(void) {
    for (unsigned long i = 0; i < 100000000UL; i++) {
        sink += i * 7; /* SPIN LINE */
    }
}
int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 60;
    for (int i = 0; i < seconds * 100; i++) {
        spin_here();
    }
    return 0;
}
"#;

/// The line of `/* SPIN LINE */` in the source.
fn spin_line() -> usize {
    SPIN.lines().position(|l| l.contains("SPIN LINE")).unwrap() + 1
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn go_pprof() -> bool {
    let ok = Command::new("go")
        .args(["tool", "pprof", "-h"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        pmx_testkit::skip(
            "`go tool pprof` is not installed (apt-get install golang-go): the client checks do not run",
        );
    }
    ok
}

/// `go tool pprof ARGS…` with its home and profile directory in `dir`.
fn pprof(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("go")
        .args(["tool", "pprof", "-timeout", "300"])
        .args(args)
        .env("HOME", dir)
        .env("PPROF_TMPDIR", dir)
        .output()
        .expect("run go tool pprof");
    let out = pmx_testkit::text(&o.stdout);
    assert!(
        o.status.success(),
        "go tool pprof {args:?}: {}{out}",
        pmx_testkit::text(&o.stderr)
    );
    out
}

/// Sets its flag when dropped.
struct Done<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `/metrics` answers (within 10 s each) until `done` says stop; how many times.
fn scrape_while(addr: &str, done: &std::sync::atomic::AtomicBool) -> u32 {
    let mut n = 0;
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        let t = Instant::now();
        let body = scrape(addr, true);
        assert!(body.contains("pmx_events_total"), "{body}");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "a scrape took {:?} during a profile",
            t.elapsed()
        );
        n += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    n
}

#[test]
fn go_tool_pprof_lists_the_spinning_function_with_its_line_and_ranks_it_first() {
    let _one = serial();
    if !pmx_testkit::cc::require() || !go_pprof() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = pmx_testkit::cc::compile(
        dir.path(),
        "spin",
        SPIN,
        &["-g", "-O0", "-fno-omit-frame-pointer"],
    )
    .unwrap();
    let prog = Killed(Command::new(&bin).arg("120").spawn().unwrap());
    let pid = prog.0.id();
    let d = start(&["-e", "task-clock"]);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let scrapes = s.spawn(|| scrape_while(&d.addr, &done));
        // The scrapes stop however this ends (a failed check included).
        let stop = Done(&done);
        let url = format!("http://{}/debug/pprof/profile", d.addr);
        let raw = pprof(dir.path(), &["-raw", "-seconds", "3", &url]);
        assert!(raw.contains("spin_here"), "{raw}");
        let at = format!("spin.c:{}", spin_line());
        assert!(
            raw.lines()
                .any(|l| l.contains("spin_here") && l.contains(&at)),
            "spin_here at {at}:\n{raw}"
        );
        assert!(raw.contains(&format!("pid:[{pid}]")), "{raw}");
        assert!(raw.contains("comm:[spin]"), "{raw}");
        // The build id of the program's mapping.
        let build_id = pmx::record::build_id_of_file(&bin).expect("build id");
        let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
        // pprof keeps what it fetched; the mapping's build id is in it.
        let saved = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".pb.gz"))
            .expect("pprof saved the profile");
        let proto = Command::new("gzip")
            .arg("-dc")
            .arg(&saved)
            .output()
            .unwrap();
        assert!(proto.status.success(), "{}", saved.display());
        assert!(
            proto.stdout.windows(hex.len()).any(|w| w == hex.as_bytes()),
            "no build id {hex} in {}",
            saved.display()
        );
        let url = format!("http://{}/debug/pprof/profile?pid={pid}", d.addr);
        let top = pprof(dir.path(), &["-top", "-seconds", "3", &url]);
        let first = top
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat"))
            .nth(1)
            .unwrap_or("");
        assert!(first.ends_with("spin_here"), "first row {first:?}:\n{top}");
        drop(stop);
        let n = scrapes.join().unwrap();
        assert!(n >= 2, "only {n} scrapes during two profiles");
    });
    let body = scrape(&d.addr, true);
    assert_eq!(quick_sum(&body, "pmx_profiles_total"), 2.0, "{body}");
    assert_eq!(quick_sum(&body, "pmx_profile_sessions"), 0.0, "{body}");
}

/// The perf fds and profile threads of `pid`.
fn footprint(pid: u32) -> (usize, usize) {
    let long = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .map(|c| c.starts_with("pmx-serve-long"))
                .unwrap_or(false)
        })
        .count();
    (perf_fds(pid), long)
}

/// How many times the main thread (the event loop) of `pid` has gone
/// to sleep and woken since it started (its voluntary context switches).
fn main_thread_wakes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn bad_values_a_second_profile_and_a_client_that_hangs_up() {
    let _one = serial();
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        cfg.path(),
        "profile-sessions = 1\nprofile-max-seconds = 60\n",
    )
    .unwrap();
    let d = start(&["-e", "task-clock", "--config", cfg.path().to_str().unwrap()]);
    let pid = d.child.id();
    for (q, says) in [
        ("seconds=-1", "seconds=-1: not a whole number"),
        ("seconds=abc", "seconds=abc: not a whole number"),
        ("seconds=61", "maximum of 60 seconds"),
        ("hz=100000", "hz=100000"),
        ("pid=me", "not a process id"),
    ] {
        let req = format!("GET /debug/pprof/profile?{q} HTTP/1.1\r\nHost: x\r\n\r\n");
        let (status, head, body) = http(&d.addr, req.as_bytes());
        assert_eq!(status, 400, "{q}: {head}");
        assert!(body.contains(says), "{q}: {body}");
    }
    let before = footprint(pid);
    // One long profile, then a second request while it runs.
    let mut first = TcpStream::connect(&d.addr).unwrap();
    first
        .write_all(b"GET /debug/pprof/profile?seconds=40 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let sent = Instant::now();
    assert!(
        wait_for(
            &d.addr,
            "pmx_profile_sessions",
            1.0,
            Duration::from_secs(20)
        ),
        "the profile did not start"
    );
    // While it runs, the event loop sleeps until something happens: the
    // profile's connection is watched for a hang-up, without a deadline
    // to wake for (the head deadline it had, 10 s after it was accepted,
    // once had the loop wake every millisecond from then on).
    std::thread::sleep((sent + Duration::from_secs(11)).saturating_duration_since(Instant::now()));
    let wakes = || main_thread_wakes(pid);
    let (w0, t0) = (wakes(), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let per_second = (wakes() - w0) as f64 / t0.elapsed().as_secs_f64();
    assert!(
        per_second < 20.0,
        "the event loop woke {per_second:.0} times a second during a profile"
    );
    let (status, head, body) = http(
        &d.addr,
        b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(status, 429, "{head}");
    let retry: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("Retry-After: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {head}"));
    assert!((1..=40).contains(&retry), "{head}");
    assert!(body.contains("retry in"), "{body}");
    assert_eq!(
        quick_sum(&scrape(&d.addr, false), "pmx_profiles_refused_total"),
        1.0
    );
    // The first client hangs up: its session ends long before 40 s.
    let t = Instant::now();
    drop(first);
    assert!(
        wait_for(
            &d.addr,
            "pmx_profile_sessions",
            0.0,
            Duration::from_secs(20)
        ),
        "the session outlived its client"
    );
    assert!(t.elapsed() < Duration::from_secs(30));
    assert!(wait_for(
        &d.addr,
        "pmx_profiles_abandoned_total",
        1.0,
        Duration::from_secs(20)
    ));
    let deadline = Instant::now() + Duration::from_secs(20);
    while footprint(pid) != before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        footprint(pid),
        before,
        "(perf fds, profile threads) left behind"
    );
    d.assert_logged(&["profile abandoned", "the client hung up"]);
    // And the place is free again (a profile of this test's own pid: a
    // few binaries to symbolize).
    let me = std::process::id();
    let (status, head, body) = profile(&d.addr, &format!("seconds=1&pid={me}"));
    assert_eq!(status, 200, "{head}");
    assert!(body.starts_with(&[0x1f, 0x8b]), "gzip");
    // The binaries a profile reads are kept for the next one: a second
    // profile of the same busy process reads none.
    let busy = Killed(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let reads = || quick_sum(&scrape(&d.addr, false), "pmx_profile_binary_reads_total");
    let spinning = format!("seconds=1&pid={}", busy.0.id());
    let (status, head, _) = profile(&d.addr, &spinning);
    assert_eq!(status, 200, "{head}");
    let first = reads();
    assert!(first >= 1.0, "the shell's binaries were read: {first}");
    let (status, head, _) = profile(&d.addr, &spinning);
    assert_eq!(status, 200, "{head}");
    assert_eq!(
        reads(),
        first,
        "a second profile of the same process read binaries again"
    );
    let (status, head, body) = profile(&d.addr, "seconds=1&pid=999999999");
    assert_eq!(status, 400, "{head}");
    assert!(
        String::from_utf8_lossy(&body).contains("pid=999999999"),
        "{head}"
    );
}

/// `go tool pprof -top -cum -sample_index=INDEX URL` as (function, cum %).
fn pprof_cum(dir: &Path, index: &str, url: &str) -> Vec<(String, f64)> {
    let si = format!("-sample_index={index}");
    let args = ["-top", "-cum", "-nodecount=100", &si, "-seconds", "4", url];
    let out = pprof(dir, &args);
    assert!(out.contains(&format!("Type: {index}\n")), "{out}");
    let rows = pmx_testkit::pprof::top_rows(&out);
    rows.into_iter().map(|r| (r.name, r.cum_pct)).collect()
}

#[test]
fn a_sample_read_groups_member_ranks_functions_by_its_count() {
    let _one = serial();
    if !pmx_testkit::cc::require() || !go_pprof() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = include_str!("../programs/spin_fault.c");
    let flags = ["-g", "-O0", "-fno-omit-frame-pointer"];
    let bin = pmx_testkit::cc::compile(dir.path(), "spin_fault", src, &flags).unwrap();
    let prog = Killed(Command::new(&bin).arg("300").spawn().unwrap());
    let pid = prog.0.id();
    // cpu-clock samples that read page-faults: software events, sampled
    // without a PMU.
    let d = start(&[
        "-e",
        "task-clock",
        "--profile-events",
        "{cpu-clock,page-faults}:S",
    ]);
    // hz=1000: a member's count since the previous sample lands on the
    // sample that reads it, so the rate must be high next to the time
    // each function runs at a stretch (some 40 ms here).
    // (At most the kernel's rate, which it lowers when interrupts run long.)
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    let hz = max.min(1000);
    let url = format!("http://{}/debug/pprof/profile?pid={pid}&hz={hz}", d.addr);
    let faults = pprof_cum(dir.path(), "page-faults", &url);
    let cum = |rows: &[(String, f64)], f: &str| rows.iter().find(|r| r.0 == f).map_or(0.0, |r| r.1);
    assert!(cum(&faults, "fault_here") >= 80.0, "{faults:?}");
    assert!(cum(&faults, "spin_here") < 10.0, "{faults:?}");
    // The CPU profile is still there, the default sample type.
    let raw = pprof(dir.path(), &["-raw", "-seconds", "2", &url]);
    assert!(
        raw.contains("cpu-clock_samples/count cpu-clock/nanoseconds[dflt]")
            && raw.contains(" page-faults/count"),
        "{raw}"
    );
    assert!(raw.contains("spin_here"), "{raw}");
    let body = scrape(&d.addr, true);
    assert_eq!(quick_sum(&body, "pmx_profiles_total"), 2.0, "{body}");
}

fn has_cpu_pmu() -> bool {
    Path::new("/sys/bus/event_source/devices/cpu").exists()
}

#[test]
fn profile_events_that_cannot_be_sampled_here_leave_the_cpu_profile() {
    let _one = serial();
    if has_cpu_pmu() {
        pmx_testkit::skip("this machine has a CPU PMU: the no-PMU path is not taken here");
        return;
    }
    let d = start(&[
        "-e",
        "task-clock",
        "--profile-events",
        "{cycles,instructions}:S",
    ]);
    let me = std::process::id();
    let (status, head, body) = profile(&d.addr, &format!("seconds=1&pid={me}"));
    assert_eq!(status, 200, "{head}");
    assert!(body.starts_with(&[0x1f, 0x8b]), "gzip");
    let why = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Pmx-Profile-Events: "))
        .unwrap_or_else(|| panic!("no reason header: {head}"));
    assert!(
        why.starts_with("not sampled: ") && why.contains("cycles"),
        "{why}"
    );
    d.assert_logged(&["--profile-events not sampled", "cycles"]);
}

#[test]
fn profiles_are_off_on_a_non_loopback_address_unless_asked() {
    let _one = serial();
    // 0.0.0.0 is not loopback; the test still connects through 127.0.0.1.
    let d = crate::serve_support::start_at("0.0.0.0:0", &["-e", "task-clock"]);
    let addr = d.addr.replace("0.0.0.0", "127.0.0.1");
    let (status, _, body) = http(
        &addr,
        b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(status, 403);
    assert!(body.contains("--profiles"), "{body}");
    assert!(scrape(&addr, true).contains("pmx_events_total"));
    let d = crate::serve_support::start_at("0.0.0.0:0", &["-e", "task-clock", "--profiles"]);
    let addr = d.addr.replace("0.0.0.0", "127.0.0.1");
    let me = std::process::id();
    let (status, head, _) = profile(&addr, &format!("seconds=1&pid={me}"));
    assert_eq!(status, 200, "{head}");
}

#[test]
fn a_real_prometheus_scrapes_during_a_profile() {
    let _one = serial();
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        pmx_testkit::skip("prometheus not installed (Debian: apt-get install prometheus)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = start(&["-e", "task-clock"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = dir.path().join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: pmx\n    static_configs:\n      - targets: ['{}']\n",
            d.addr
        ),
    )
    .unwrap();
    let _prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let api = format!("127.0.0.1:{port}");
    let query = |q: &str| -> String {
        let req = format!(
            "GET /api/v1/query?query={q} HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n"
        );
        match TcpStream::connect(&api) {
            Ok(_) => http(&api, req.as_bytes()).2,
            Err(_) => String::new(),
        }
    };
    // Prometheus is scraping before the profile starts.
    let t = Instant::now();
    while !query("up").contains("\"1\"]") {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped pmx"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // An 8-second profile of every CPU; Prometheus scrapes every second
    // meanwhile and must see the session running with the target up.
    let (status, head, _) = profile(&d.addr, "seconds=8");
    assert_eq!(status, 200, "{head}");
    let t = Instant::now();
    loop {
        let seen = query("max_over_time(pmx_profile_sessions[2m])");
        let up = query("min_over_time(up[2m])");
        if seen.contains("\"1\"]") && up.contains("\"1\"]") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no scrape saw the session, or one failed: sessions {seen}, up {up}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_binary_cache_is_within_its_budget_after_a_profile() {
    // Lookups grow a binary's tables after it was opened (line rows of
    // the units they hit): a profile of this test binary, a Rust debug
    // build with its DWARF, reads far more than 1 MiB of tables; once the
    // profile is made, the cache is back within the budget it was given.
    let _one = serial();
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "profile-symbol-cache = 1\n").unwrap();
    let d = start(&["-e", "task-clock", "--config", cfg.path().to_str().unwrap()]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            x
        })
    };
    let me = std::process::id();
    let (status, head, _) = profile(&d.addr, &format!("seconds=2&pid={me}"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    assert_eq!(status, 200, "{head}");
    let m = scrape(&d.addr, false);
    let reads = quick_sum(&m, "pmx_profile_binary_reads_total");
    let held = quick_sum(&m, "pmx_profile_binary_bytes");
    let cap = quick_sum(&m, "pmx_profile_binary_capacity_bytes");
    assert!(reads >= 1.0, "no binary was read: {m}");
    assert_eq!(cap, 1048576.0, "{m}");
    assert!(held <= cap, "{held} bytes held, over the {cap} budget");
}
