//! Hardware breakpoints (`PERF_TYPE_BREAKPOINT`) on the real kernel: exact
//! counts of the accesses the test makes, and the four debug registers of
//! x86 running out.

#![cfg(any(target_arch = "x86_64", target_arch = "x86"))]

use crate::common::{open, THREAD};
use pmx_perf::{bp, Attr, Counter, OpenCause};
use std::ptr::{read_volatile, write_volatile};
use std::sync::atomic::AtomicU64;

/// A watchpoint on the 8 bytes at `addr`, counting user-space hits only
/// (which `perf_event_paranoid` 2 allows), created disabled.
fn watch(addr: *const u64, bp_type: u32) -> Attr {
    Attr {
        disabled: true,
        exclude_kernel: true,
        exclude_hv: true,
        ..Attr::breakpoint(addr as u64, 8, bp_type)
    }
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

#[test]
fn a_write_watchpoint_counts_exactly_the_writes() {
    let mut heap = Box::new(0u64);
    let targets: [(&str, *mut u64); 2] = [("static", WATCHED.as_ptr()), ("heap", &mut *heap)];
    for (name, p) in targets {
        let c = open(&watch(p, bp::W), THREAD, None);
        c.enable(false).unwrap();
        for i in 0..100 {
            // SAFETY: p points to a live, aligned u64 that only this thread
            // touches while the test runs.
            unsafe { write_volatile(p, i) };
        }
        for _ in 0..50 {
            // SAFETY: as above; reads must not count on a W watchpoint.
            std::hint::black_box(unsafe { read_volatile(p) });
        }
        c.disable(false).unwrap();
        // SAFETY: as above; this write happens while disabled.
        unsafe { write_volatile(p, 7) };
        let n = c.read().unwrap();
        eprintln!("{name}: {n:?}");
        assert_eq!(n.value, 100, "{name}");
    }
}

#[test]
fn a_read_write_watchpoint_counts_both() {
    let mut v = Box::new(0u64);
    let p: *mut u64 = &mut *v;
    let c = open(&watch(p, bp::RW), THREAD, None);
    c.enable(false).unwrap();
    for i in 0..30 {
        // SAFETY: p points to a live, aligned u64 only this thread uses.
        unsafe { write_volatile(p, i) };
    }
    for _ in 0..20 {
        // SAFETY: as above.
        std::hint::black_box(unsafe { read_volatile(p) });
    }
    c.disable(false).unwrap();
    assert_eq!(c.read().unwrap().value, 50);
}

#[inline(never)]
fn watched_function(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

#[test]
fn an_execute_breakpoint_counts_the_calls() {
    let f: fn(u64) -> u64 = watched_function;
    let attr = Attr {
        disabled: true,
        exclude_kernel: true,
        // An execute breakpoint is sizeof(long) long.
        ..Attr::breakpoint(
            f as usize as u64,
            std::mem::size_of::<usize>() as u64,
            bp::X,
        )
    };
    let c = open(&attr, THREAD, None);
    let f = std::hint::black_box(f);
    c.enable(false).unwrap();
    let mut acc = 0;
    for i in 0..25 {
        acc += f(i);
    }
    c.disable(false).unwrap();
    std::hint::black_box(acc);
    assert_eq!(c.read().unwrap().value, 25);
}

#[test]
fn a_fifth_breakpoint_finds_no_debug_register() {
    let slots: Vec<Box<u64>> = (0..5).map(Box::new).collect();
    let addr = |i: usize| &*slots[i] as *const u64;
    // The first four take DR0-DR3 for this thread.
    let held: Vec<Counter> = (0..4)
        .map(|i| open(&watch(addr(i), bp::W), THREAD, None))
        .collect();
    let e = Counter::open(&watch(addr(4), bp::W), THREAD, None).unwrap_err();
    eprintln!("{e}");
    assert!(matches!(e.cause, OpenCause::NoDebugRegister), "{e}");
    assert_eq!(e.errno, libc::ENOSPC);
    assert!(
        e.to_string()
            .contains("no free debug register: x86 has four"),
        "{e}"
    );
    // Give one back and the fifth fits.
    drop(held);
    let _fifth = open(&watch(addr(4), bp::W), THREAD, None);
}

#[test]
fn shapes_the_cpu_cannot_watch_are_invalid() {
    let v = Box::new(0u64);
    let p = &*v as *const u64 as u64;
    for (attr, what) in [
        (Attr::breakpoint(p, 3, bp::W), "len 3"),
        (Attr::breakpoint(p + 1, 8, bp::W), "misaligned"),
        (Attr::breakpoint(p, 8, bp::R), "read-only (x86 has none)"),
    ] {
        let e = Counter::open(&attr, THREAD, None).unwrap_err();
        assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{what}: {e}");
        assert!(e.to_string().contains("len 1, 2, 4 or 8"), "{what}: {e}");
    }
}
