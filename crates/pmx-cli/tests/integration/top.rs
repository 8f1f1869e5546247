//! `pmx top` without a terminal (`--stdio`, automatic when standard
//! output is a pipe), through the real binary: a C program spinning in a
//! named function shows up with most of the samples of its process, and
//! `pmx top -p` ends by itself, exit 0, when the process exits; `-n`
//! counts refreshes; a pid that does not exist is bad input.

use crate::common::PMX;
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

/// `-m` is one flag of record and top (one check): a ring that is not a
/// power of two of pages is refused by both with the same words, exit 2;
/// a power of two is taken by top.
#[test]
fn top_refuses_a_ring_that_is_not_a_power_of_two_as_record_does() {
    let run = |args: &[&str]| Command::new(PMX).args(args).output().unwrap();
    let top = run(&["top", "-m", "3", "-n", "1", "--stdio"]);
    let record = run(&[
        "record",
        "-m",
        "3",
        "-o",
        "/nonexistent/d.data",
        "--",
        "true",
    ]);
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(top.status.code(), Some(2), "{}", err(&top));
    assert_eq!(record.status.code(), Some(2), "{}", err(&record));
    assert!(
        err(&top).contains("-m 3: the ring size must be a power of two"),
        "{}",
        err(&top)
    );
    assert_eq!(err(&top), err(&record));
    let o = run(&[
        "top",
        "-m",
        "4",
        "-n",
        "1",
        "-d",
        "0.5",
        "--stdio",
        "-e",
        "cpu-clock",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("pmx top: ")).count(),
        1,
        "{out}"
    );
}

/// Without the right to sample every CPU (a user without CAP_PERFMON,
/// `kernel.perf_event_paranoid` ≥ 1), system-wide `pmx top` exits 1 with
/// the reason and both fixes, said once. Run as `nobody` through
/// util-linux's `runuser` (the test runs as root).
#[test]
fn no_permission_says_why_and_the_fix() {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid");
    let paranoid: i32 = paranoid.map_or(2, |s| s.trim().parse().unwrap_or(2));
    let as_nobody = |args: &[&str]| {
        Command::new("runuser")
            .args(["-u", "nobody", "--", PMX])
            .args(args)
            .current_dir("/")
            .output()
    };
    match as_nobody(&["--version"]) {
        Ok(o) if o.status.success() && paranoid >= 1 => {}
        _ => {
            pmx_testkit::skip(
                "not root, no runuser, pmx not executable by nobody, or perf_event_paranoid < 1",
            );
            return;
        }
    }
    let o = as_nobody(&["top", "--stdio", "-n", "1", "-d", "1"]).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("kernel.perf_event_paranoid is {paranoid}")),
        "{err}"
    );
    assert!(err.contains("CAP_PERFMON"), "{err}");
    assert!(err.contains("sysctl kernel.perf_event_paranoid="), "{err}");
    let error: Vec<&str> = err.lines().filter(|l| l.starts_with("pmx: ")).collect();
    assert_eq!(error.len(), 1, "{err}");
    assert_eq!(
        error[0].matches("cannot open").count(),
        1,
        "said once: {err}"
    );
}

/// `perf top` with pmx installed as `perf`: perf top's flags watch a
/// process (its busy function shows up; the tables end with it, exit 0),
/// and every option of the installed perf's `top -h` is taken or refused
/// by name (exit 2), never "unknown".
#[test]
fn perf_top_under_the_perf_name() {
    let Some(mut spinner) = Spinner::start() else {
        return;
    };
    let bin = tempfile::tempdir().unwrap();
    let perf = bin.path().join("perf");
    std::os::unix::fs::symlink(PMX, &perf).unwrap();
    let pid = spinner.child.id().to_string();
    let mut top = Command::new(&perf)
        .args([
            "top",
            "--stdio",
            "-d1",
            "-E",
            "5",
            "-n",
            "-p",
            &pid,
            "--call-graph=fp,graph,0.5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut top);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = false;
    while !seen && Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_secs(1)) {
            Ok(l) => seen = l.contains("top_spin_marker"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    std::fs::write(&spinner.stop_file, b"").unwrap();
    let _ = spinner.child.wait();
    let status = wait_exit(&mut top, Duration::from_secs(60));
    assert!(seen, "perf top -p never showed top_spin_marker");
    assert_eq!(status.and_then(|s| s.code()), Some(0));

    let refused = Command::new(&perf).args(["top", "-K"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("-K/--hide_kernel_symbols is not supported by pmx top"),
        "{err}"
    );
    let Ok(help) = Command::new("perf").args(["top", "-h"]).output() else {
        pmx_testkit::skip("perf is not installed: perf top -h's options not checked");
        return;
    };
    let help =
        String::from_utf8_lossy(&help.stderr).into_owned() + &String::from_utf8_lossy(&help.stdout);
    let mut names = 0;
    for l in help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
    {
        let long = l.split_whitespace().find(|w| w.starts_with("--"));
        let name = long.unwrap_or_else(|| l.split_whitespace().next().unwrap());
        let name = name.trim_end_matches(',').split(['=', '[']).next().unwrap();
        let line = pmx_args::perf_personality::top::command_line;
        let parsed = match line(&[name.into()]) {
            Err(e) if e.0.ends_with("needs a value") => line(&[name.into(), "fp".into()]),
            r => r,
        };
        if let Err(e) = parsed {
            assert!(
                e.0.contains("is not supported by pmx top"),
                "perf top {name}: {e}"
            );
        }
        names += 1;
    }
    assert!(names > 60, "perf top -h: {help}");
}

/// A tmux session running `sh` in a terminal of a given size.
struct Tmux(String);

impl Tmux {
    /// pmx top has ended with exit 0 (`top-exit=0`, echoed by the command
    /// line that ran it) and the terminal is back in its normal mode: a
    /// line typed is echoed and run.
    fn back_at_the_prompt(&self) {
        let s = self.wait_for(30, "the shell back", |s| {
            s.lines().any(|l| l.starts_with("top-exit="))
        });
        assert!(s.lines().any(|l| l == "top-exit=0"), "{s}");
        self.typed("echo cooked-$((6*7))");
        self.keys(&["Enter"]);
        self.wait_for(30, "a terminal in its normal mode", |s| {
            s.lines().any(|l| l == "cooked-42")
        });
    }

    fn start(tag: &str, cols: u32, rows: u32) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            pmx_testkit::skip("no tmux");
            return None;
        }
        let name = format!("pmx-top-{tag}-{}", std::process::id());
        let (x, y) = (cols.to_string(), rows.to_string());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name, "-x", &x, "-y", &y])
            .arg("env PS1='prompt$ ' TERM=xterm-256color sh")
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session");
        let t = Tmux(name);
        // Keys typed before the shell's first prompt are echoed before it,
        // and the prompt then lands in front of the command's output.
        t.wait_for(60, "the shell's prompt", |s| s.contains("prompt$"));
        Some(t)
    }

    fn keys(&self, keys: &[&str]) {
        let mut c = Command::new("tmux");
        c.args(["send-keys", "-t", &self.0]).args(keys);
        assert!(c.status().unwrap().success());
    }

    fn typed(&self, text: &str) {
        let mut c = Command::new("tmux");
        c.args(["send-keys", "-l", "-t", &self.0, text]);
        assert!(c.status().unwrap().success());
    }

    fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen once `ok` holds for it, polled for up to `secs`.
    fn wait_for(&self, secs: u64, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(secs),
                "{what}: the screen is\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn header_line(screen: &str) -> String {
    screen.lines().next().unwrap_or("").to_string()
}

#[test]
fn the_terminal_ui_shows_filters_annotates_and_quits() {
    let Some(spin) = Spinner::start() else {
        return;
    };
    let Some(t) = Tmux::start("ui", 120, 40) else {
        return;
    };
    let pid = spin.child.id();
    t.typed(&format!(
        "{PMX} top -p {pid} -d 1 -F 1000; echo top-exit=$?"
    ));
    t.keys(&["Enter"]);
    // The busy function, with most of the samples, within a few refreshes.
    let s = t.wait_for(60, "top_spin_marker at 50% or more", |s| {
        s.lines()
            .any(|l| marker_share(l).is_some_and(|p| p >= 50.0))
    });
    assert!(
        s.starts_with("pmx top: cpu-clock on pid ") || s.starts_with("pmx top: cycles"),
        "{s}"
    );
    // The screen refreshes: the header's figures change.
    let first = header_line(&s);
    t.wait_for(30, "a refresh", |s| {
        header_line(s) != first && s.contains("top_spin_marker")
    });
    // `/` filters: nothing matches a name that is not there; then the function.
    t.keys(&["/"]);
    t.typed("no_such_function_here");
    t.keys(&["Enter"]);
    t.wait_for(30, "an empty filtered table", |s| {
        s.contains("(no row matches the filter)") && !s.contains("[.] top_spin_marker")
    });
    // Esc clears it (alone: Esc and a key at once read as Alt+key).
    t.keys(&["/"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["Escape"]);
    t.wait_for(30, "the filter cleared", |s| !s.contains("filter: "));
    t.keys(&["/"]);
    t.typed("top_spin");
    t.keys(&["Enter"]);
    let s = t.wait_for(30, "the filtered table", |s| {
        s.contains("filter: top_spin") && s.contains("[.] top_spin_marker")
    });
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("%  ")).collect();
    assert!(rows.iter().all(|l| l.contains("top_spin")), "{s}");
    // Enter: the function's instructions with their samples.
    t.keys(&["Home", "Enter"]);
    let s = t.wait_for(30, "the annotate view", |s| {
        s.contains("disassembly of top_spin_marker")
    });
    assert!(s.contains("top_spin_marker in spinner"), "{s}");
    assert!(
        s.lines()
            .any(|l| l.contains(" : ") && l.trim_start().starts_with(['*', '+', '0'])),
        "instructions with their samples: {s}"
    );
    // Back, then q: exit 0 and the shell's prompt.
    t.keys(&["Escape"]);
    t.wait_for(30, "the table again", |s| s.contains("[.] top_spin_marker"));
    t.keys(&["q"]);
    t.back_at_the_prompt();
}

/// The pid of the program the pane's shell runs.
fn pane_child(t: &Tmux) -> i32 {
    let o = Command::new("tmux")
        .args(["display-message", "-p", "-t", &t.0, "#{pane_pid}"])
        .output()
        .unwrap();
    let shell = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    children.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_closed_terminal_ends_top() {
    let Some(t) = Tmux::start("hangup", 120, 40) else {
        return;
    };
    t.typed(&format!("{PMX} top -d 1"));
    t.keys(&["Enter"]);
    t.wait_for(60, "the header", |s| s.contains("pmx top:"));
    let pmx = pane_child(&t);
    // The window closes under it: no spinning on a dead terminal.
    drop(t);
    let start = Instant::now();
    while std::path::Path::new(&format!("/proc/{pmx}")).exists() {
        let state = std::fs::read_to_string(format!("/proc/{pmx}/stat")).unwrap_or_default();
        if state.split_whitespace().nth(2) == Some("Z") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "pmx top ({pmx}) still runs 30 s after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_small_terminal_is_told_and_sigterm_gives_the_terminal_back() {
    let Some(t) = Tmux::start("small", 40, 8) else {
        return;
    };
    t.typed(&format!("{PMX} top -d 1; echo top-exit=$?"));
    t.keys(&["Enter"]);
    t.wait_for(60, "the size message", |s| {
        s.contains("terminal too small (40x8)")
    });
    // SIGTERM: the terminal restored, exit 0.
    let pmx = pane_child(&t);
    assert_eq!(unsafe { libc::kill(pmx, libc::SIGTERM) }, 0);
    t.back_at_the_prompt();
}

#[test]
fn a_sample_read_group_shows_each_members_count_per_row_and_the_metrics_columns() {
    let Some(mut spin) = Spinner::start() else {
        return;
    };
    let pid = spin.child.id().to_string();
    let bad = Command::new(PMX)
        .args([
            "top",
            "--stdio",
            "-p",
            &pid,
            "-e",
            "{cpu-clock,page-faults}:S",
        ])
        .args(["-M", "NoSuchMetricAnywhere"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("-M: ") && err.contains("NoSuchMetricAnywhere"),
        "{err}"
    );

    let mut top = Command::new(PMX)
        .args(["top", "-p", &pid, "-d", "1", "-F", "1000", "-E", "5"])
        .args(["-e", "{cpu-clock,task-clock}:S", "-M", "IPC"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut top);
    let t = Instant::now();
    let (mut head, mut row) = (String::new(), None);
    while row.is_none() && t.elapsed() < Duration::from_secs(60) {
        let Ok(l) = lines.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if l.contains("samples   cpu-clock:S") {
            head = l;
        } else if !head.is_empty() && marker_share(&l).is_some_and(|s| s >= 50.0) {
            row = Some(l);
        }
    }
    spin.stop();
    let _ = wait_exit(&mut top, Duration::from_secs(60));
    let _ = top.kill();
    let row = row.expect("a top_spin_marker row of the group table");
    let cols: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(
        cols[..5],
        ["self", "samples", "cpu-clock:S", "task-clock:S", "IPC"],
        "{head}"
    );
    // cpu-clock and task-clock count the same nanoseconds of the spinner:
    // each member's count, a column each, about equal.
    let f: Vec<&str> = row.split_whitespace().collect();
    let (a, b): (f64, f64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
    assert!(a > 0.0 && (a - b).abs() <= 0.05 * a, "{row}");
    // IPC's inputs are not counted here (no PMU): not a number, as report.
    assert_eq!(f[4], "-", "{row}");
}

impl Tmux {
    /// Bytes written to the terminal as they are, as a terminal sends a
    /// key's sequence: one write.
    fn bytes(&self, bytes: &[u8]) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut c = Command::new("tmux");
        c.args(["send-keys", "-t", &self.0, "-H"]).args(&hex);
        assert!(c.status().unwrap().success());
    }

    /// The table's rows on screen (their text) and the selected one (the
    /// row drawn in reverse video).
    fn rows(&self) -> (Vec<String>, Option<usize>) {
        let o = Command::new("tmux")
            .args(["capture-pane", "-e", "-p", "-t", &self.0])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&o.stdout);
        let (mut rows, mut selected, mut table) = (Vec::new(), None, false);
        for l in s.lines() {
            let text = without_sgr(l);
            if text.contains("samples  command") {
                table = true;
            } else if table && text.contains("%  ") {
                if reversed(l) {
                    selected = Some(rows.len());
                }
                rows.push(text);
            }
        }
        (rows, selected)
    }

    /// Wait until the selected row is `want(rows on screen)`.
    fn selected(&self, what: &str, want: impl Fn(&[String]) -> usize) -> Vec<String> {
        let t = Instant::now();
        loop {
            let (rows, sel) = self.rows();
            if sel.is_some() && sel == Some(want(&rows)) {
                return rows;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{what}: row {sel:?} selected of {rows:#?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Whether a captured line is drawn in reverse video: one of its SGR
/// sequences (`ESC [ 7 m`, `ESC [ 0 ; 7 m`) has the parameter 7.
fn reversed(l: &str) -> bool {
    l.split("\x1b[").skip(1).any(|seq| {
        seq.split_once('m')
            .is_some_and(|(params, _)| params.split(';').any(|p| p == "7"))
    })
}

/// A captured line without its SGR sequences (`ESC [ … m`).
fn without_sgr(l: &str) -> String {
    let mut out = String::new();
    let mut sgr = false;
    for c in l.chars() {
        match c {
            '\x1b' => sgr = true,
            'm' if sgr => sgr = false,
            _ if sgr => {}
            _ => out.push(c),
        }
    }
    out
}

/// The keys as terminals send them, in both cursor-key modes: tmux's own
/// keys with the pane in application cursor mode (`ESC [ ? 1 h`: `ESC O
/// B` for ↓), and raw sequences written as they are — normal mode,
/// xterm's modifier forms, the `ESC [ N ~` forms of Home/End/PgUp/PgDn,
/// several keys in one write. They move the selection of a paused
/// table; in the `/` prompt UTF-8 text, Backspace and unknown sequences
/// (dropped whole, nothing typed) make the filter; keypad Enter
/// annotates, a lone Esc goes back, Alt+q does not quit, q does.
#[test]
fn keys_in_both_cursor_modes_move_the_selection_and_filter() {
    let Some(spin) = Spinner::start() else {
        return;
    };
    let Some(t) = Tmux::start("keys", 120, 40) else {
        return;
    };
    let _spin = spin;
    t.typed(&format!(
        "printf '\\033[?1h'; {PMX} top -d 1 -F 1000; echo top-exit=$?"
    ));
    t.keys(&["Enter"]);
    // Enough rows to move in (the whole machine: the spinner, pmx, the
    // kernel, tmux), the spinner's among them.
    t.wait_for(60, "six rows or more, top_spin_marker's among them", |s| {
        s.contains("[.] top_spin_marker") && s.lines().filter(|l| l.contains("%  ")).count() >= 6
    });
    let mode = Command::new("tmux")
        .args(["display-message", "-p", "-t", &t.0, "#{keypad_cursor_flag}"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&mode.stdout).trim(),
        "1",
        "the pane is in application cursor mode: tmux sends ESC O A for ↑"
    );
    // Paused: the rows stay where they are.
    t.keys(&["p"]);
    t.wait_for(30, "paused", |s| s.contains("[paused]"));
    let first = |_: &[String]| 0;
    let last = |rows: &[String]| rows.len() - 1;
    t.keys(&["Home"]);
    t.selected("Home (tmux: ESC [ 1 ~)", first);
    t.keys(&["Down"]);
    t.selected("↓ in application mode (ESC O B)", |_| 1);
    t.bytes(b"\x1b[B");
    t.selected("ESC [ B", |_| 2);
    t.bytes(b"\x1b[B\x1bOB\x1b[1;2B");
    t.selected("ESC [ B, ESC O B, Shift-↓ in one write", |_| 5);
    t.bytes(b"\x1bOA");
    t.selected("ESC O A", |_| 4);
    t.bytes(b"\x1b[1;5A");
    t.selected("Ctrl-↑ (ESC [ 1 ; 5 A)", |_| 3);
    t.keys(&["Up"]);
    t.selected("↑ in application mode (ESC O A)", |_| 2);
    t.bytes(b"\x1b[7~");
    t.selected("Home (ESC [ 7 ~)", first);
    t.bytes(b"\x1b[F");
    t.selected("End (ESC [ F)", last);
    t.bytes(b"\x1bOH");
    t.selected("Home (ESC O H)", first);
    t.bytes(b"\x1b[4~");
    t.selected("End (ESC [ 4 ~)", last);
    t.bytes(b"\x1b[1~");
    t.selected("Home (ESC [ 1 ~)", first);
    t.bytes(b"\x1b[6~");
    t.selected("PgDn (ESC [ 6 ~)", last);
    t.bytes(b"\x1b[5~");
    t.selected("PgUp (ESC [ 5 ~)", first);
    // Alt+q (ESC q) is not q; unknown sequences are not typed into the
    // filter; é is one character (one Backspace, BS 0x08, takes it).
    t.bytes(b"\x1bq");
    t.bytes(b"/");
    t.wait_for(30, "the filter prompt", |s| {
        s.contains("(Enter: keep, Esc: clear)")
    });
    t.bytes(b"\x1b[99~\x1b[<0;3;4Mtop\x1b[I_spi");
    t.bytes("é".as_bytes());
    t.bytes(b"\x08n\x1b[1;5Q\r");
    let s = t.wait_for(30, "the filter top_spin", |s| {
        s.contains("filter: top_spin   ") && !s.contains("(Enter: keep")
    });
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("%  ")).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|l| l.contains("top_spin")),
        "{s}"
    );
    // Keypad Enter (ESC O M) on the first row: the annotate view (of the
    // whole machine: other tests' spinners may make it ask for --dso);
    // a lone Esc: back.
    t.bytes(b"\x1bOH\x1bOM");
    t.wait_for(30, "the annotate view", |s| {
        s.contains("top_spin_marker in spinner   (Esc: back)")
    });
    t.bytes(b"\x1b");
    t.wait_for(30, "the table again", |s| {
        s.contains("[.] top_spin_marker") && s.contains("filter: top_spin")
    });
    t.keys(&["q"]);
    t.back_at_the_prompt();
}
