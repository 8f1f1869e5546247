//! Fault campaign, signals (issue 22, item 3): SIGINT or SIGTERM at a
//! random moment to `pmx stat -I 100`, `pmx stat -r 5` and `pmx record`.
//! Expected (README's exit-code table): exit 128+N (the command is
//! stopped by the same signal, so its own status says the same); the
//! command reaped (not left running); nothing measured lost: the interval
//! rows printed add up to the totals, which are printed; `-r` says how
//! many runs it completed; the recording reads and holds the samples.
//! Each case prints its seed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::faults_support::*;
use pmx_testkit::mutate::Rng;

/// The command pmx runs: writes its pid to `pidfile`, then spins.
fn command(pidfile: &Path, seconds: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "echo $$ > {}; exec {WORKLOAD} spin {seconds}",
            pidfile.display()
        ),
    ]
}

/// The command pmx ran is not running any more (gone, or a zombie
/// already handed to init).
fn reaped(pidfile: &Path) -> Result<(), String> {
    let Ok(pid) = std::fs::read_to_string(pidfile) else {
        return Ok(()); // stopped before the command started
    };
    let pid = pid.trim();
    if pid.is_empty() {
        // Stopped between creating the file and writing the pid: the
        // shell had not exec'd the command yet.
        return Ok(());
    }
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return Ok(()),
            Ok(s) if s.split(' ').nth(2) == Some("Z") => {}
            Ok(_) => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!(
        "the command (pid {pid}) still runs after pmx exited"
    ))
}

/// Start `pmx args`, signal it after a random delay, collect it.
fn signalled(args: &[String], rng: &mut Rng, min_ms: usize, max_ms: usize) -> (i32, Option<Run>) {
    let sig = *rng.pick(&[libc::SIGINT, libc::SIGTERM]);
    let delay = Duration::from_millis((min_ms + rng.below(max_ms - min_ms)) as u64);
    let mut cmd = Command::new(PMX);
    cmd.args(args).stdin(Stdio::null());
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    // SAFETY: signalling our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, sig) };
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(o)) => (
            sig,
            Some(Run {
                status: o.status,
                stdout: pmx_testkit::text(&o.stdout),
                stderr: pmx_testkit::text(&o.stderr),
                took: delay,
            }),
        ),
        _ => {
            // SAFETY: our own child, hung.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            (sig, None)
        }
    }
}

/// The interval rows' task-clock values, and the totals' (CSV on stderr).
fn interval_sums(csv: &str) -> (Vec<(f64, f64)>, Option<f64>) {
    let mut rows = Vec::new();
    let mut total = None;
    for l in csv.lines() {
        let f: Vec<&str> = l.split(',').collect();
        if let Some(t) = l.strip_prefix("# ,") {
            total = t.split(',').next().and_then(|v| v.parse().ok());
        } else if f.len() > 4 && f[4] == "task-clock" {
            if let (Ok(t), Ok(v)) = (f[0].parse(), f[2].parse()) {
                rows.push((t, v));
            }
        }
    }
    (rows, total)
}

fn judge_exit(t: &mut Tally, case: &str, sig: i32, r: &Run) -> bool {
    if r.panicked() || r.crashed() {
        t.panic(case, &r.stderr);
        return false;
    }
    if r.status.code() != Some(128 + sig) {
        t.unclear(
            case,
            &format!(
                "exit {:?}, want {}: {}",
                r.status.code(),
                128 + sig,
                r.stderr
            ),
        );
        return false;
    }
    true
}

fn interval_case(t: &mut Tally, dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let pidfile = dir.join(format!("pid-{seed}"));
    let mut args: Vec<String> = ["stat", "-I", "100", "-e", "task-clock", "-x", ",", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(command(&pidfile, "10"));
    let (sig, run) = signalled(&args, &mut rng, 50, 1500);
    let case = format!("stat -I 100, signal {sig}, seed {seed}");
    t.tried += 1;
    let Some(r) = run else { return t.hang(&case) };
    if !judge_exit(t, &case, sig, &r) {
        return;
    }
    if let Err(e) = reaped(&pidfile) {
        return t.lost(&case, &e);
    }
    let (rows, total) = interval_sums(&r.stderr);
    match total {
        None if rows.is_empty() => t.refused += 1, // stopped before counting
        None => t.lost(
            &case,
            &format!("no totals after {} rows: {}", rows.len(), r.stderr),
        ),
        Some(total) => {
            let sum: f64 = rows.iter().map(|r| r.1).sum();
            // Every interval printed, and nothing counted left out of them.
            // (A tick due just before the stop may be folded into the
            // partial last row on a loaded machine: nothing is lost.)
            let tenths = |t: f64| ((t * 10.0).round() - t * 10.0).abs() < 1e-6;
            let whole = rows.iter().filter(|r| tenths(r.0)).count();
            let last = rows.last().map(|r| r.0).unwrap_or(0.0);
            let due = (last * 10.0 + 1e-6).floor() as usize;
            if (sum - total).abs() > 1e-3 * total.max(1.0) || whole + 1 < due {
                t.lost(
                    &case,
                    &format!("rows sum {sum} ms, totals {total} ms: {}", r.stderr),
                );
            } else {
                t.accepted += 1;
            }
        }
    }
}

fn repeat_case(t: &mut Tally, dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let pidfile = dir.join(format!("pid-{seed}"));
    let mut args: Vec<String> = ["stat", "-r", "5", "-e", "task-clock", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // Five runs of 0.6 s: the signal (at most 2 s in) lands in one.
    args.extend(command(&pidfile, "0.6"));
    let (sig, run) = signalled(&args, &mut rng, 100, 2000);
    let case = format!("stat -r 5, signal {sig}, seed {seed}");
    t.tried += 1;
    let Some(r) = run else { return t.hang(&case) };
    if !judge_exit(t, &case, sig, &r) {
        return;
    }
    if let Err(e) = reaped(&pidfile) {
        return t.lost(&case, &e);
    }
    // The runs completed (and the interrupted one) are reported.
    if r.stderr.contains("task-clock") && r.stderr.contains("stopped after") {
        t.accepted += 1;
    } else if !r.stderr.contains("task-clock") && !pidfile.exists() {
        t.refused += 1; // stopped before the first run started
    } else {
        t.lost(&case, &r.stderr);
    }
}

fn record_case(t: &mut Tally, dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let pidfile = dir.join(format!("pid-{seed}"));
    let data = dir.join(format!("rec-{seed}.data"));
    let mut args: Vec<String> = vec!["record".into(), "-e".into(), "cpu-clock".into()];
    args.extend(["-o".into(), data.display().to_string(), "--".into()]);
    args.extend(command(&pidfile, "10"));
    let (sig, run) = signalled(&args, &mut rng, 100, 2000);
    let case = format!("record, signal {sig}, seed {seed}");
    t.tried += 1;
    let Some(r) = run else { return t.hang(&case) };
    if !judge_exit(t, &case, sig, &r) {
        return;
    }
    if let Err(e) = reaped(&pidfile) {
        return t.lost(&case, &e);
    }
    if !data.exists() && !pidfile.exists() {
        t.refused += 1; // stopped before it started
        return;
    }
    // The file reads, and holds the samples the summary line counted.
    let said: Option<u64> = r
        .stderr
        .split(" samples of ")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok());
    let opts = pmx_profile::ReportOptions {
        sort: "comm".into(),
        symfs: Some(dir.to_path_buf()),
        ..pmx_profile::ReportOptions::for_input(data.clone())
    };
    match pmx_profile::report(&opts, &mut |_, _| {}) {
        Ok(rep) => {
            let n: u64 = rep.profile.events.iter().map(|e| e.samples).sum();
            if said.is_some_and(|s| s != n) {
                t.lost(
                    &case,
                    &format!("{n} samples read, {said:?} said: {}", r.stderr),
                );
            } else {
                t.accepted += 1;
            }
        }
        Err(e) => t.lost(&case, &format!("{e}: {}", r.stderr)),
    }
    let _ = std::fs::remove_file(&data);
}

fn campaign(category: &str, n: usize, f: fn(&mut Tally, &Path, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tally::new(category);
    for k in 0..n {
        f(&mut t, dir.path(), base_seed() + k as u64);
    }
    t.finish();
}

#[test]
fn signals_to_stat_interval_keep_every_row() {
    campaign("SIGINT/SIGTERM → stat -I 100", cases(3, 40), interval_case);
}

#[test]
fn signals_to_stat_repeat_keep_the_runs_done() {
    campaign("SIGINT/SIGTERM → stat -r 5", cases(3, 40), repeat_case);
}

#[test]
fn signals_to_record_keep_a_readable_file() {
    campaign("SIGINT/SIGTERM → record", cases(3, 40), record_case);
}

/// Found by the campaign (seed 2 of the long run: SIGINT 1.5 s into
/// `stat -r 5` of 0.6 s runs): a signal that stops the repeats while the
/// last command run exited 0 left pmx exiting 0, as if all five runs were
/// done. The command here ignores SIGINT, sends it to pmx and exits 0.
#[test]
fn a_signal_that_cuts_the_repeats_short_is_not_a_success() {
    let out = Command::new(PMX)
        .args(["stat", "-r", "5", "-e", "task-clock", "--", "sh", "-c"])
        .arg("trap '' INT; kill -INT $PPID; sleep 0.2")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = pmx_testkit::text(&out.stderr);
    assert!(err.contains("stopped after 1 of 5 runs"), "{err}");
    assert_eq!(out.status.code(), Some(130), "{err}");
}
