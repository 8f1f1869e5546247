//! Helpers shared by the kernel tests: workloads whose effect on the
//! software counters is known exactly, and small system-call wrappers.

#![allow(dead_code)] // Each test binary uses a different subset.

use pmx_perf::{event_type, Attr, Counter, Target};
use std::time::{Duration, Instant};

/// The calling thread, on whatever CPU it runs.
pub const THREAD: Target = Target { pid: 0, cpu: -1 };

/// A software event, created disabled, default `read_format`.
pub fn sw(config: u64) -> Attr {
    Attr {
        type_: event_type::SOFTWARE,
        config,
        disabled: true,
        ..Attr::default()
    }
}

/// Open or fail the test with the error's message.
pub fn open(attr: &Attr, target: Target, group: Option<&Counter>) -> Counter {
    Counter::open(attr, target, group).unwrap_or_else(|e| panic!("{e}"))
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a configuration value and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).expect("page size")
}

/// An anonymous private mapping whose pages have never been touched, so the
/// first write to each is exactly one minor page fault (huge pages are
/// turned off for it, so one fault cannot fill 512 pages).
pub struct Pages {
    ptr: *mut u8,
    pages: usize,
    page: usize,
}

impl Pages {
    pub fn fresh(pages: usize) -> Pages {
        let page = page_size();
        let len = pages * page;
        // SAFETY: an anonymous mapping at an address of the kernel's choice;
        // no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(
            ptr,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: the range is the mapping just created. Failure (no THP
        // support) is fine: then there are no huge pages to avoid.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Pages {
            ptr: ptr.cast(),
            pages,
            page,
        }
    }

    pub fn len(&self) -> usize {
        self.pages
    }

    /// Write one byte to every page.
    #[inline(never)]
    pub fn touch(&self) {
        for i in 0..self.pages {
            // SAFETY: i * page is inside the mapping, which is writable and
            // lives as long as self.
            unsafe { std::ptr::write_volatile(self.ptr.add(i * self.page), 1) };
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns; no reference
        // into it outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.pages * self.page) };
    }
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

/// The sysfs `type` of a PMU, when it is registered.
pub fn pmu_type(name: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/bus/event_source/devices/{name}/type"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
