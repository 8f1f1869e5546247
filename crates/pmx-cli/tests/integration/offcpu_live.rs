//! Off-CPU profiles live, on `programs/waits.c` (nanosleep, a pipe read
//! and a futex lock in functions of their own, a spin that never waits):
//! `pmx top --off-cpu --stdio -p` names the waiting functions in its
//! `offcpu-time` rows, weighed by the time waited, and never the spinning
//! one; `pmx serve`'s off-CPU profile (`offcpu=1`), fetched by `go tool
//! pprof -top`, ranks the waiting functions by nanoseconds and has no
//! `spin`.

use crate::common::PMX;
use crate::offcpu::waits_program;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const WAITS: [&str; 3] = ["wait_sleep", "wait_pipe", "wait_mutex"];

/// The scheduler's tracepoint can be opened here (tracefs mounted).
fn tracefs() -> bool {
    let ok = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| Path::new(d).join("events/sched/sched_switch/id").exists());
    if !ok {
        pmx_testkit::skip("no tracefs with sched:sched_switch: --off-cpu cannot record here");
    }
    ok
}

/// The (share %, symbol) rows of every `offcpu-time` table of `pmx top
/// --stdio`'s output.
fn off_cpu_rows(out: &[String]) -> Vec<(f64, String)> {
    let mut rows = Vec::new();
    let mut inside = false;
    for l in out {
        if l.starts_with("offcpu-time:") {
            inside = true;
        } else if l.trim().is_empty() {
            inside = false;
        } else if inside {
            let w: Vec<&str> = l.split_whitespace().collect();
            let share = w
                .first()
                .and_then(|s| s.strip_suffix('%')?.parse::<f64>().ok());
            if let (Some(share), Some(sym)) = (share, w.last()) {
                rows.push((share, sym.to_string()));
            }
        }
    }
    rows
}

#[test]
fn top_off_cpu_rows_are_the_waiting_functions() {
    if !tracefs() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    // The program starts once top is running (its first table printed):
    // a shell blocked on a FIFO, then exec'd into the program.
    let fifo = dir.path().join("go");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let script = format!(
        "read x < '{}'; exec '{}' 100",
        fifo.display(),
        prog.display()
    );
    let mut sh = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = sh.id().to_string();
    let mut top = Command::new(PMX)
        .args(["top", "--stdio", "--off-cpu", "-p", &pid, "-d", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = top.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    // A hang guard only: the first table comes within a second or so.
    let first = rx.recv_timeout(Duration::from_secs(120));
    let mut out = vec![first.expect("pmx top printed no table")];
    std::fs::write(&fifo, "go\n").unwrap();
    out.extend(rx.iter());
    let status = top.wait().unwrap();
    let err = pmx_testkit::text(&top.stderr.take().map_or(Vec::new(), |mut e| {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut v).unwrap();
        v
    }));
    assert!(status.success(), "pmx top: {err}\n{}", out.join("\n"));
    let mut printed = String::new();
    std::io::Read::read_to_string(&mut sh.stdout.take().unwrap(), &mut printed).unwrap();
    sh.wait().unwrap();
    crate::offcpu::measured(&printed, 100.0);
    let text = out.join("\n");
    let rows = off_cpu_rows(&out);
    for f in WAITS {
        assert!(
            rows.iter().any(|(share, s)| s == f && *share > 0.0),
            "{f} is no offcpu-time row:\n{text}"
        );
    }
    assert!(rows.iter().all(|(_, s)| s != "spin"), "{text}");
    // Its cells are the time waited, in ms.
    assert!(text.contains("ms waited"), "{text}");
}

#[test]
fn serve_off_cpu_profile_ranks_the_waiting_functions() {
    if !tracefs() || !go_pprof() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    // The program again and again (each run about 1.5 s), so every
    // kind of wait ends within the profile's seconds.
    let script = format!("while :; do '{}' 100 >/dev/null; done", prog.display());
    let mut looped = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let d = crate::serve_support::start(&["-e", "task-clock"]);
    let url = format!("http://{}/debug/pprof/profile?offcpu=1&comm=waits", d.addr);
    let top = pprof(dir.path(), &["-top", "-seconds", "5", &url]);
    let _ = looped.kill();
    let _ = looped.wait();
    assert!(top.contains("Type: offcpu-time\n"), "{top}");
    let rows = pmx_testkit::pprof::top_rows(&top);
    for f in WAITS {
        let flat = rows
            .iter()
            .find(|r| r.name == f)
            .map_or(0.0, |r| r.flat_pct);
        assert!(flat > 0.0, "{f}: {flat}%\n{top}");
    }
    assert!(rows.iter().all(|r| r.name != "spin"), "{top}");
}

/// `go tool pprof` is installed (else the test skips, saying so).
fn go_pprof() -> bool {
    let ok = Command::new("go")
        .args(["tool", "pprof", "-h"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        pmx_testkit::skip("`go tool pprof` is not installed (apt-get install golang-go)");
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
    let err = pmx_testkit::text(&o.stderr);
    assert!(o.status.success(), "go tool pprof {args:?}: {err}{out}");
    out
}
