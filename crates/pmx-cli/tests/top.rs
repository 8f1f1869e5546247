//! `pmx top` without a terminal (`--stdio`, automatic when standard
//! output is a pipe), through the real binary: a C program spinning in a
//! named function shows up with most of the samples of its process, and
//! `pmx top -p` ends by itself, exit 0, when the process exits; `-n`
//! counts refreshes; a pid that does not exist is bad input.

mod common;

use common::PMX;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Spins in `top_spin_marker` until the file named by its argument exists.
const SPINNER: &str = r#"
#include <unistd.h>
__attribute__((noinline)) unsigned long top_spin_marker(unsigned long n) {
    volatile unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1;
    return x;
}
int main(int argc, char **argv) {
    while (access(argv[1], F_OK) != 0) top_spin_marker(2000000);
    return 0;
}
"#;

pub struct Spinner {
    pub child: Child,
    pub stop_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Spinner {
    pub fn start() -> Option<Spinner> {
        if !pmx_testkit::cc::require() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let bin = pmx_testkit::cc::compile(dir.path(), "spinner", SPINNER, &["-O1", "-g"]).unwrap();
        let stop_file = dir.path().join("stop");
        let child = Command::new(&bin).arg(&stop_file).spawn().unwrap();
        Some(Spinner {
            child,
            stop_file,
            _dir: dir,
        })
    }

    pub fn stop(&mut self) {
        std::fs::write(&self.stop_file, b"").unwrap();
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Lines of a child's stdout, as they come.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// The share (%) of the first `top_spin_marker` row of a table line.
fn marker_share(line: &str) -> Option<f64> {
    line.contains("top_spin_marker").then(|| {
        line.split_whitespace()
            .next()?
            .trim_end_matches('%')
            .parse()
            .ok()
    })?
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn stdio_top_of_a_pid_shows_its_busy_function_and_ends_with_it() {
    let Some(mut spin) = Spinner::start() else {
        return;
    };
    let pid = spin.child.id().to_string();
    let mut top = Command::new(PMX)
        .args(["top", "-p", &pid, "-d", "1", "-F", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut top);
    let (mut share, mut headers) = (0.0f64, 0);
    let t = Instant::now();
    while share < 50.0 && t.elapsed() < Duration::from_secs(60) {
        let Ok(l) = lines.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        headers += l.starts_with("pmx top: ") as usize;
        share = share.max(marker_share(&l).unwrap_or(0.0));
    }
    assert!(
        share >= 50.0,
        "top_spin_marker at {share}% after {headers} refreshes"
    );
    // The process ends: so does pmx top, by itself, exit 0.
    spin.stop();
    spin.child.wait().unwrap();
    let status = wait_exit(&mut top, Duration::from_secs(60));
    let _ = top.kill();
    let rest: Vec<String> = lines.try_iter().collect();
    assert_eq!(status.map(|s| s.code()), Some(Some(0)), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l == "(the sampled tasks have all exited)"),
        "{rest:?}"
    );
}

#[test]
fn stdio_top_stops_after_n_refreshes() {
    let Some(_spin) = Spinner::start() else {
        return;
    };
    let o = Command::new(PMX)
        .args(["top", "--stdio", "-d", "0.5", "-n", "3", "-E", "5"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("pmx top: ")).count(),
        3,
        "{out}"
    );
    assert!(out.contains(" on all CPUs ("), "{out}");
    // Without a PMU the default event is cpu-clock, and pmx says so.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        out.contains("pmx top: cycles") || err.contains("sampling cpu-clock instead"),
        "{err}"
    );
}

#[test]
fn a_pid_that_does_not_exist_is_bad_input() {
    let o = Command::new(PMX)
        .args(["top", "--stdio", "-p", "2147483646"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("process 2147483646 does not exist"), "{err}");
    assert!(
        !err.contains("cpu-clock"),
        "said before anything else: {err}"
    );
}
