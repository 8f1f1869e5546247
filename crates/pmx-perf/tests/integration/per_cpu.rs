//! Events bound to a CPU: the `msr` PMU's TSC counted CPU-wide, and a
//! per-task event bound to one CPU while the task runs on two, which is
//! genuine `time_running < time_enabled` without a hardware PMU.

use crate::common::{open, pmu_type, sw, THREAD};
use pmx_perf::{software, Attr, Counter, OpenCause, Target};
use pmx_testkit::workload::{allowed_cpus, pin_to, spin};
use std::time::Duration;

#[test]
fn msr_tsc_counted_on_cpu_0_grows() {
    let Some(msr) = pmu_type("msr") else {
        pmx_testkit::skip("no msr PMU registered");
        return;
    };
    // `msr/tsc/` is config 0 (sysfs: events/tsc = "event=0x00").
    let attr = Attr {
        type_: msr,
        config: 0,
        ..Attr::default()
    };
    let cpu0 = Target { pid: -1, cpu: 0 };
    let c = match Counter::open(&attr, cpu0, None) {
        Ok(c) => c,
        Err(e) if matches!(e.cause, OpenCause::Permission { .. }) => {
            pmx_testkit::skip(format_args!("not allowed to count CPU-wide here: {e}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let a = c.read().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let b = c.read().unwrap();
    eprintln!("tsc on CPU 0: {a:?} then {b:?}");
    assert!(b.value > a.value, "{a:?} {b:?}");
    assert!(b.enabled > a.enabled && b.enabled >= 5_000_000, "{b:?}");
    assert_eq!(b.running, b.enabled, "nothing competes for the msr PMU");
}

#[test]
fn msr_pmu_refuses_privilege_filters() {
    let Some(msr) = pmu_type("msr") else {
        pmx_testkit::skip("no msr PMU registered");
        return;
    };
    let attr = Attr {
        type_: msr,
        exclude_kernel: true,
        ..Attr::default()
    };
    let e = Counter::open(&attr, Target { pid: -1, cpu: 0 }, None).unwrap_err();
    eprintln!("{e}");
    if matches!(e.cause, OpenCause::Permission { .. }) {
        return;
    }
    assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("msr PMU event config 0x0"), "{e}");
    assert!(
        e.to_string()
            .contains("does not filter by privilege level (exclude_kernel set"),
        "{e}"
    );
}

#[test]
fn a_task_bound_to_cpu_0_runs_only_part_of_its_enabled_time() {
    let cpus = allowed_cpus();
    if !(cpus.contains(&0) && cpus.contains(&1)) {
        pmx_testkit::skip(format_args!("needs CPUs 0 and 1, may run on {cpus:?}"));
        return;
    }
    // task-clock of this thread, counted only while it is on CPU 0.
    let on_cpu0 = open(&sw(software::TASK_CLOCK), Target { pid: 0, cpu: 0 }, None);
    let migrations = open(&sw(software::CPU_MIGRATIONS), THREAD, None);
    const ROUNDS: u64 = 10;
    on_cpu0.enable(false).unwrap();
    migrations.enable(false).unwrap();
    for _ in 0..ROUNDS {
        pin_to(&[0]);
        spin(Duration::from_millis(3));
        pin_to(&[1]);
        spin(Duration::from_millis(3));
    }
    migrations.disable(false).unwrap();
    on_cpu0.disable(false).unwrap();
    pin_to(&cpus);

    let c = on_cpu0.read().unwrap();
    let m = migrations.read().unwrap();
    eprintln!(
        "bound to CPU 0: {c:?}, running share {:.2}, scaled {:?}; migrations {}",
        c.running_share().unwrap_or(0.0),
        c.scaled(),
        m.value
    );
    assert!(c.running > 0, "ran on CPU 0 some of the time: {c:?}");
    assert!(c.running < c.enabled, "and elsewhere the rest: {c:?}");
    assert!(c.value > 0, "{c:?}");
    // Every change of affinity moved the thread: 2 per round, give or take
    // the first one if it already sat on CPU 0.
    assert!(m.value >= 2 * ROUNDS - 1, "{m:?}");
}
