//! Fault campaign, resource limits (issue 22, item 3): `pmx stat -a` with
//! more counters than `ulimit -n 32` allows. With a hard limit above the
//! soft one pmx raises its soft limit as perf does and counts everything;
//! with both at 32 the events that do not fit are marked not counted with
//! the limit named.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use crate::faults_support::*;

/// 27 software events (9 events × 3 privilege modifiers).
fn many_events() -> String {
    let mut v = Vec::new();
    for m in ["u", "k", "h"] {
        for e in [
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "cpu-clock",
        ] {
            v.push(format!("{e}:{m}"));
        }
    }
    v.join(",")
}

fn stat_under(soft: u64, hard: u64) -> Option<Run> {
    let mut c = Command::new(PMX);
    c.args([
        "stat",
        "-a",
        "-x",
        ",",
        "-e",
        &many_events(),
        "--",
        "sleep",
        "0.1",
    ]);
    // SAFETY: setrlimit between fork and exec touches only the child.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run_bounded(&mut c, Duration::from_secs(60))
}

#[test]
fn too_few_descriptors_raise_the_soft_limit_or_name_it() {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if 27 * cpus <= 40 {
        pmx_testkit::skip("27 events on this machine's CPUs fit in 32 descriptors");
        return;
    }
    let mut t = Tally::new("ulimit -n 32 → stat -a, 27 events");
    // Soft 32, hard 4096: raised, everything counted.
    t.tried += 1;
    match stat_under(32, 4096) {
        None => t.hang("soft 32, hard 4096"),
        Some(r) if r.panicked() || r.crashed() => t.panic("soft 32, hard 4096", &r.stderr),
        Some(r) => {
            let counted = r.stderr.lines().filter(|l| l.contains(",counted,")).count();
            if r.status.success() && counted == 27 {
                t.accepted += 1;
            } else {
                t.lost(
                    "soft 32, hard 4096",
                    &format!("{counted} of 27 counted: {}", r.stderr),
                );
            }
        }
    }
    // Soft = hard = 32: the events that did not fit everywhere are marked
    // not counted, with the limit named (perf gives up on the whole run).
    t.tried += 1;
    match stat_under(32, 32) {
        None => t.hang("soft = hard = 32"),
        Some(r) if r.panicked() || r.crashed() => t.panic("soft = hard = 32", &r.stderr),
        Some(r) => {
            let named = r
                .stderr
                .lines()
                .filter(|l| l.contains(",not-counted,") && l.contains("ulimit -n is 32"))
                .count();
            if named > 0 && matches!(r.status.code(), Some(0 | 1)) {
                t.refused += 1;
            } else {
                t.unclear(
                    "soft = hard = 32",
                    &format!("exit {:?}: {}", r.status.code(), r.stderr),
                );
            }
        }
    }
    t.finish();
}
