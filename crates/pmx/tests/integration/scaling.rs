//! Genuine multiplexing scale on the real kernel: a per-task event bound
//! to CPU 0 runs only while the task is on CPU 0, so its running time is
//! about half its enabled time when the task alternates between CPU 0 and
//! CPU 1; scaled by enabled/running, it estimates the whole run.

use pmx_perf::{software, Attr, Counter, Target};
use pmx_testkit::workload::thread_cpu_ns;
use std::time::Duration;

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set, for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Burn `d` of this thread's own CPU time: each CPU then gets the same
/// share of the thread's running time however loaded the machine is.
fn spin(d: Duration) {
    let end = thread_cpu_ns() + d.as_nanos() as u64;
    let mut x = 0u64;
    while thread_cpu_ns() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
}

#[test]
fn scaled_count_of_a_half_running_event_is_within_ten_percent() {
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if ncpu < 2 {
        pmx_testkit::skip("needs two CPUs");
        return;
    }
    let clock = |cpu: i32| {
        let a = Attr {
            type_: 1,
            config: software::TASK_CLOCK,
            disabled: true,
            ..Attr::default()
        };
        Counter::open(&a, Target { pid: 0, cpu }, None).expect("task-clock")
    };
    let truth = clock(-1);
    let bound = clock(0);
    truth.enable(false).unwrap();
    bound.enable(false).unwrap();
    for i in 0..20 {
        pin(i % 2);
        spin(Duration::from_millis(10));
    }
    bound.disable(false).unwrap();
    truth.disable(false).unwrap();
    pin(0);
    let t = truth.read().unwrap();
    let b = bound.read().unwrap();
    assert!(b.running < b.enabled, "bound event ran all the time: {b:?}");
    let share = b.running_share().unwrap();
    assert!((0.2..0.8).contains(&share), "running share {share}");
    let scaled = b.scaled().unwrap();
    let err = (scaled - t.value as f64).abs() / t.value as f64;
    assert!(
        err < 0.10,
        "scaled {scaled:.0} vs truth {} ({:.1}% off, share {share:.2})",
        t.value,
        err * 100.0
    );
}
