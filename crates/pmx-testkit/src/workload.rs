//! Work with a known effect: fresh pages (one page fault each), CPU
//! spinning, and moving the calling thread between CPUs.
//!
//! The page work itself is [`pmx_perf::workload`]'s, which the
//! `pmx-workload` program and the library's own tests share: one
//! `touch_pages`, re-exported here.

use std::time::{Duration, Instant};

pub use pmx_perf::mmap::page_size;
pub use pmx_perf::workload::{touch_pages, Pages};

/// `n` fresh, untouched pages; panics when they cannot be mapped.
pub fn fresh_pages(n: usize) -> Pages {
    Pages::fresh(n).unwrap_or_else(|e| panic!("mmap: {e}"))
}

/// Burn CPU on this thread for `d` of wall-clock time.
pub fn spin(d: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// The CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is a valid value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes into
    // the live local `set`.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(
        r,
        0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads bit `c` of the set; c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Restrict this thread to `cpus`; returns once the kernel has moved it.
pub fn pin_to(cpus: &[usize]) {
    // SAFETY: as in allowed_cpus.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET sets bit `c`; callers pass CPUs < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: the kernel reads size_of::<cpu_set_t>() bytes from `set`.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(
        r,
        0,
        "sched_setaffinity: {}",
        std::io::Error::last_os_error()
    );
}

/// The calling thread's id.
pub fn tid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The calling thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`): unlike
/// wall time, it does not grow while the thread waits for a CPU.
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain integers (all-zero is valid), and
    // clock_gettime writes exactly one into the live local.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Touch `bytes` of this thread's stack below the caller's frame, so that
/// later calls up to that depth find their stack pages present: a first
/// touch of a stack page is a page fault too, and a test that counts
/// faults exactly must not be charged one by a deeper call.
#[inline(never)]
pub fn warm_stack(bytes: usize) {
    const CHUNK: usize = 16 * 1024;
    fn down(left: usize) {
        let mut frame = [0u8; CHUNK];
        std::hint::black_box(&mut frame);
        if left > CHUNK {
            down(left - CHUNK);
        }
        std::hint::black_box(&frame);
    }
    down(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_can_be_touched_and_zero_pages_are_nothing() {
        touch_pages(0).unwrap();
        touch_pages(3).unwrap();
        let p = fresh_pages(2);
        assert_eq!(p.len(), 2);
        p.touch();
        assert!(thread_cpu_ns() > 0);
        assert!(!allowed_cpus().is_empty());
    }
}
