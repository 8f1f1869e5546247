//! Software events of the calling thread on the real kernel: exact counts
//! for workloads whose effect is known, and the enable/disable/reset rules.

use crate::common::{open, sw, THREAD};
use pmx_perf::{software, Counter};
use pmx_testkit::workload::{fresh_pages, spin};
use std::time::{Duration, Instant};

/// The counter's value over `work` alone: reset, enable, work, disable.
fn count_over(c: &Counter, work: impl FnOnce()) -> u64 {
    c.reset(false).unwrap();
    c.enable(false).unwrap();
    work();
    c.disable(false).unwrap();
    c.read().unwrap().value
}

#[test]
fn first_write_to_each_fresh_page_is_exactly_one_fault() {
    const N: u64 = 64;
    // Fault in the code paths and a mapping of the same shape first.
    let warm = fresh_pages(N as usize);
    warm.touch();
    for (config, name) in [
        (software::PAGE_FAULTS, "page-faults"),
        (software::PAGE_FAULTS_MIN, "minor-faults"),
    ] {
        let c = open(&sw(config), THREAD, None);
        // Control: the same loop over pages already present.
        let control = count_over(&c, || warm.touch());
        let fresh = fresh_pages(N as usize);
        let measured = count_over(&c, || fresh.touch());
        eprintln!("{name}: {measured} over {N} fresh pages, {control} over present ones");
        assert_eq!(measured - control, N, "{name}");
    }
    let major = open(&sw(software::PAGE_FAULTS_MAJ), THREAD, None);
    let fresh = fresh_pages(N as usize);
    assert_eq!(
        count_over(&major, || fresh.touch()),
        0,
        "anonymous memory needs no I/O"
    );
}

#[test]
fn enable_disable_and_reset() {
    let c = open(&sw(software::PAGE_FAULTS), THREAD, None);
    // Created disabled: nothing counted, no time.
    let before = c.read().unwrap();
    assert_eq!((before.value, before.enabled, before.running), (0, 0, 0));
    fresh_pages(8).touch();
    assert_eq!(c.read().unwrap().value, 0, "faults while disabled");

    let (a, b) = (fresh_pages(16), fresh_pages(8));
    c.enable(false).unwrap();
    a.touch();
    c.disable(false).unwrap();
    let on = c.read().unwrap();
    assert!(on.value >= 16, "{on:?}");
    assert!(on.enabled > 0, "{on:?}");
    // A software event is never off the PMU while enabled.
    assert_eq!(on.running, on.enabled, "{on:?}");

    b.touch();
    let off = c.read().unwrap();
    assert_eq!(off, on, "a disabled counter is frozen, value and times");

    c.reset(false).unwrap();
    let reset = c.read().unwrap();
    assert_eq!(reset.value, 0);
    assert_eq!(reset.enabled, on.enabled, "reset keeps the times");

    let d = fresh_pages(4);
    c.enable(false).unwrap();
    d.touch();
    c.disable(false).unwrap();
    let again = c.read().unwrap();
    assert!(again.value >= 4, "{again:?}");
    assert!(
        again.enabled > on.enabled,
        "times resume from where they were"
    );
}

#[test]
fn a_counter_opened_enabled_counts_at_once() {
    let pages = fresh_pages(32);
    let attr = pmx_perf::Attr {
        disabled: false,
        ..sw(software::PAGE_FAULTS)
    };
    let c = open(&attr, THREAD, None);
    pages.touch();
    let n = c.read().unwrap();
    assert!(n.value >= 32, "{n:?}");
    assert!(n.enabled > 0 && n.running == n.enabled, "{n:?}");
}

#[test]
fn task_clock_and_context_switches() {
    let clock = open(&sw(software::TASK_CLOCK), THREAD, None);
    let switches = open(&sw(software::CONTEXT_SWITCHES), THREAD, None);
    let start = Instant::now();
    clock.enable(false).unwrap();
    switches.enable(false).unwrap();
    spin(Duration::from_millis(5));
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    switches.disable(false).unwrap();
    clock.disable(false).unwrap();
    let wall = start.elapsed().as_nanos() as u64;
    let (t, s) = (clock.read().unwrap(), switches.read().unwrap());
    eprintln!("task-clock {t:?}, context-switches {s:?}, wall {wall} ns");
    // The thread cannot run longer than the wall-clock time it existed.
    assert!(t.value > 0 && t.value <= wall, "{t:?} vs {wall}");
    assert!(t.enabled > 0 && t.enabled <= wall, "{t:?} vs {wall}");
    // Each sleep gives the CPU up at least once.
    assert!(s.value >= 3, "{s:?}");
}

#[test]
fn ids_are_distinct_and_read_format_is_kept() {
    let attr = sw(software::DUMMY);
    let a = open(&attr, THREAD, None);
    let b = open(&attr, THREAD, None);
    assert_ne!(a.id(), b.id());
    assert_eq!(a.read_format(), attr.read_format);
    use std::os::fd::AsRawFd;
    assert!(a.as_raw_fd() >= 0 && a.as_raw_fd() != b.as_raw_fd());
    // Close-on-exec, as promised.
    // SAFETY: F_GETFD reads the fd's flags; the fd is open.
    let flags = unsafe { libc::fcntl(a.as_raw_fd(), libc::F_GETFD) };
    assert!(flags & libc::FD_CLOEXEC != 0);
}

#[test]
fn another_thread_is_counted_by_its_tid_even_after_it_exits() {
    use std::sync::mpsc;
    let (tid_tx, tid_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        tid_tx.send(tid).unwrap();
        go_rx.recv().unwrap();
        fresh_pages(24).touch();
    });
    let tid = tid_rx.recv().unwrap();
    let attr = pmx_perf::Attr {
        disabled: false,
        ..sw(software::PAGE_FAULTS)
    };
    let c = open(&attr, pmx_perf::Target { pid: tid, cpu: -1 }, None);
    go_tx.send(()).unwrap();
    worker.join().unwrap();
    // The thread is gone; its counter keeps the final value.
    let n = c.read().unwrap();
    assert!(n.value >= 24, "{n:?}");
    // This thread's own faults are not in it.
    fresh_pages(16).touch();
    assert_eq!(c.read().unwrap(), n);
}
