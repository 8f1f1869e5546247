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

/// Killed by the very signal the case sent: it came before pmx installed
/// its handlers (a process still starting on a loaded machine; found by
/// seed 2, SIGTERM 50 ms in at load 17), the default action, as for any
/// program. A shell reports it as 128+N too; a command left running or
/// counts left unprinted are caught by the checks after this one.
fn killed_by(r: &Run, sig: i32) -> bool {
    use std::os::unix::process::ExitStatusExt;
    r.status.signal() == Some(sig)
}

fn judge_exit(t: &mut Tally, case: &str, sig: i32, r: &Run) -> bool {
    if killed_by(r, sig) {
        return true;
    }
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
        Some(total) => match interval_loss(&rows, total) {
            Some(why) => t.lost(&case, &format!("{why}: {}", r.stderr)),
            None => t.accepted += 1,
        },
    }
}

/// What the interval rows lost against the totals, if anything: the
/// counts not in any row (to 10⁻³). A boundary missing from the rows is
/// no loss: a wake-up later than one interval (seed 2 at load 17, every
/// case that failed had its rows summing to the totals) skips the
/// boundaries it missed and its row covers them (`pmx-count`'s
/// `clock::next_tick_after`, on the grid instead of drifting); the
/// check that every boundary had its row made the campaign depend on
/// the machine's load.
fn interval_loss(rows: &[(f64, f64)], total: f64) -> Option<String> {
    let sum: f64 = rows.iter().map(|r| r.1).sum();
    ((sum - total).abs() > 1e-3 * total.max(1.0))
        .then(|| format!("rows sum {sum} ms, totals {total} ms"))
}

/// Found by seed 2 (load 17): 0.1 s then 0.4 s, the 0.2 and 0.3 s
/// boundaries skipped by late wake-ups, the rows' sum the totals' —
/// counted as data lost before (two boundaries missing failed the old
/// check, one was let pass).
#[test]
fn a_skipped_boundary_whose_counts_are_in_the_next_row_is_no_loss() {
    let rows = [(0.1, 4.0), (0.4, 7.5), (0.45, 1.5)];
    assert_eq!(interval_loss(&rows, 13.0), None);
    assert!(interval_loss(&rows[..2], 13.0).is_some());
}

/// Found by seed 2 (SIGTERM 50 ms in, load 17): pmx killed by the signal
/// itself before its handlers were installed was counted as a crash.
#[test]
fn death_by_the_signal_sent_is_no_crash() {
    use std::os::unix::process::ExitStatusExt;
    let run = |raw| Run {
        status: std::process::ExitStatus::from_raw(raw),
        stdout: String::new(),
        stderr: String::new(),
        took: Duration::ZERO,
    };
    let mut t = Tally::new("test");
    assert!(judge_exit(
        &mut t,
        "SIGTERM",
        libc::SIGTERM,
        &run(libc::SIGTERM)
    ));
    assert!(!judge_exit(
        &mut t,
        "SIGSEGV",
        libc::SIGTERM,
        &run(libc::SIGSEGV)
    ));
    assert_eq!((t.panics, t.unclear), (1, 0));
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
