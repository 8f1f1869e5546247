//! `pmx serve` across a real CPU hotplug: CPU 1 is taken offline and
//! brought back while the daemon counts. In the `system` target, so no
//! other test runs while a CPU is missing. Needs root, 2+ CPUs and a hot-
//! pluggable CPU 1; skips with a message otherwise. CPU 1 is always put
//! back online, even when an assertion fails.

use crate::serve_support::*;
use std::path::Path;
use std::time::{Duration, Instant};

const CPU1: &str = "/sys/devices/system/cpu/cpu1/online";

/// Puts CPU 1 back online when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(CPU1, "1");
    }
}

fn task_clock(s: &[Sample], cpu: &str) -> Option<f64> {
    s.iter()
        .find(|(n, l, _)| {
            n == "pmx_events_total"
                && l.get("event").map(String::as_str) == Some("task-clock")
                && l.get("cpu").map(String::as_str) == Some(cpu)
        })
        .map(|x| x.2)
}

#[test]
fn real_cpu_hotplug_drops_and_restores_the_series() {
    let _alone = crate::alone();
    if !Path::new(CPU1).exists()
        || std::fs::read_to_string(CPU1)
            .map(|s| s.trim() != "1")
            .unwrap_or(true)
    {
        pmx_testkit::skip(format_args!(
            "CPU 1 is not an online, hot-pluggable CPU here ({CPU1})"
        ));
        return;
    }
    // Probe: can we take it offline at all (root, not the boot CPU)?
    if std::fs::write(CPU1, "0").is_err() {
        pmx_testkit::skip("cannot take CPU 1 offline (needs root and a hot-pluggable CPU)");
        return;
    }
    let _restore = Restore;
    std::fs::write(CPU1, "1").expect("bring CPU 1 back");

    let d = start(&["-e", "task-clock,page-faults"]);
    let wait_for = |want: bool| -> Vec<Sample> {
        let t = Instant::now();
        loop {
            let s = samples(&scrape(&d.addr, true));
            if task_clock(&s, "1").is_some() == want {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "CPU 1 series should be present: {want}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let s = wait_for(true);
    assert_eq!(sum(&s, "pmx_cpus_counted", &[]), 2.0);
    let cpu1_before = task_clock(&s, "1").unwrap();

    std::fs::write(CPU1, "0").expect("take CPU 1 offline");
    let s = wait_for(false);
    assert_eq!(sum(&s, "pmx_cpus_counted", &[]), 1.0);
    let cpu0_while = task_clock(&s, "0").expect("CPU 0 keeps its series");

    std::fs::write(CPU1, "1").expect("bring CPU 1 back");
    let s = wait_for(true);
    assert_eq!(sum(&s, "pmx_cpus_counted", &[]), 2.0);
    // Counters never go backwards: CPU 1 carries on from what it had.
    let cpu1_after = task_clock(&s, "1").unwrap();
    assert!(cpu1_after >= cpu1_before, "{cpu1_after} < {cpu1_before}");
    assert!(
        task_clock(&s, "0").unwrap() > cpu0_while,
        "CPU 0 kept counting"
    );
    // And CPU 1 counts again after it came back.
    std::thread::sleep(Duration::from_millis(300));
    let later = task_clock(&samples(&scrape(&d.addr, true)), "1").unwrap();
    assert!(
        later > cpu1_after,
        "CPU 1 counts again: {later} vs {cpu1_after}"
    );
    d.assert_logged(&["CPU 1 offline", "CPU 1 online"]);
}
