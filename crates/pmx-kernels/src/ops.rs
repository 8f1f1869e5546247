//! Kernels whose counts are exact by construction: the branch loop, page
//! touches, the pipe ping-pong; and the clocks' kernels (a spin, the
//! time-stamp counter's rate).

use std::time::{Duration, Instant};

/// Instructions, branches and taken branches of one [`branch_loop`]
/// iteration: a decrement and a conditional jump back.
pub const LOOP_PER_ITERATION: (u64, u64, u64) = (2, 1, 1);

/// Run `n` (at least 1) iterations of `dec; jnz` (x86-64) or `subs;
/// b.ne` (AArch64): 2n instructions retired, n branches, n − 1 taken.
/// `false` on an architecture without such a loop here.
#[inline(never)]
pub fn branch_loop(n: u64) -> bool {
    let n = n.max(1);
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: only the named register changes; no memory, no stack.
        unsafe {
            std::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) n => _,
                options(nomem, nostack));
        }
        true
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: only the named register and the flags change.
        unsafe {
            std::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _,
                options(nomem, nostack));
        }
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = n;
        false
    }
}

/// Why a kernel could not run: the system call and its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError(pub String);

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KernelError {}

fn os_error(what: &str) -> KernelError {
    KernelError(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// The page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Map `pages` fresh anonymous pages (no huge pages), write one byte to
/// each, unmap them: exactly `pages` page faults.
pub fn touch_pages(pages: usize) -> Result<(), KernelError> {
    if pages == 0 {
        return Ok(());
    }
    let ps = page_size();
    let len = pages
        .checked_mul(ps)
        .ok_or_else(|| KernelError(format!("{pages} pages do not fit in memory")))?;
    // SAFETY: a private anonymous mapping of `len` bytes, checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(os_error(&format!("mmap of {len} bytes")));
    }
    // SAFETY: `p` is our mapping; the advice is only a hint (it fails on
    // kernels without transparent huge pages, which is fine).
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    let base = p.cast::<u8>();
    for i in 0..pages {
        // SAFETY: inside the mapping; volatile so every page is written.
        unsafe { base.add(i * ps).write_volatile(1) };
    }
    // SAFETY: unmapping our own mapping.
    unsafe { libc::munmap(p, len) };
    Ok(())
}

/// `rounds` round trips of one byte between this process and a child
/// over two pipes, both pinned to the CPU this one runs on: each round
/// blocks each side once, so 2 × `rounds` context switches (more when
/// something else preempts them). Where the process may, it takes the
/// real-time class (`SCHED_FIFO`, lowest priority; the child inherits
/// it), so that other tasks on a loaded CPU do not preempt either side and
/// every switch counted is one of the round trips'.
pub fn ping_pong(rounds: u64) -> Result<(), KernelError> {
    pin_here()?;
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: a valid sched_param for this process; failing (no
    // privilege) leaves the normal class, which is fine on a quiet CPU.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    let (mut to_child, mut to_parent) = ([0i32; 2], [0i32; 2]);
    // SAFETY: arrays of two fds, as pipe(2) wants.
    if unsafe { libc::pipe(to_child.as_mut_ptr()) } != 0
        || unsafe { libc::pipe(to_parent.as_mut_ptr()) } != 0
    {
        return Err(os_error("pipe"));
    }
    // SAFETY: the child only reads, writes and exits (async-signal-safe).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    let mut b = [0u8; 1];
    if pid == 0 {
        for _ in 0..rounds {
            // SAFETY: our pipe ends and a one-byte buffer.
            unsafe {
                if libc::read(to_child[0], b.as_mut_ptr().cast(), 1) != 1
                    || libc::write(to_parent[1], b.as_ptr().cast(), 1) != 1
                {
                    libc::_exit(1);
                }
            }
        }
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let mut ok = true;
    for _ in 0..rounds {
        // SAFETY: our pipe ends and a one-byte buffer.
        unsafe {
            if libc::write(to_child[1], b.as_ptr().cast(), 1) != 1
                || libc::read(to_parent[0], b.as_mut_ptr().cast(), 1) != 1
            {
                ok = false;
                break;
            }
        }
    }
    let mut status = 0;
    // SAFETY: closing our fds and reaping our child.
    unsafe {
        for fd in [to_child[0], to_child[1], to_parent[0], to_parent[1]] {
            libc::close(fd);
        }
        libc::waitpid(pid, &mut status, 0);
    }
    match ok && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        true => Ok(()),
        false => Err(KernelError("the ping-pong child did not answer".into())),
    }
}

/// Pin the calling thread to the CPU it is running on.
pub fn pin_here() -> Result<(), KernelError> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return Err(os_error("sched_getcpu"));
    }
    // SAFETY: a zeroed set with one CPU, for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(os_error(&format!("pinning to CPU {cpu}")));
        }
    }
    Ok(())
}

/// Keep the CPU busy for `d` of wall-clock time.
pub fn spin(d: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
}

/// The time-stamp counter now (x86-64); `None` elsewhere.
pub fn rdtsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions in user mode on Linux.
        Some(unsafe { core::arch::x86_64::_rdtsc() })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The time-stamp counter's rate in Hz, measured against the monotonic
/// clock over `window` of sleep (both are wall clocks, so load does not
/// change the ratio).
pub fn tsc_hz(window: Duration) -> Option<f64> {
    let (t0, c0) = (Instant::now(), rdtsc()?);
    std::thread::sleep(window);
    let (c1, t1) = (rdtsc()?, Instant::now());
    let secs = (t1 - t0).as_secs_f64();
    (secs > 0.0 && c1 > c0).then(|| (c1 - c0) as f64 / secs)
}
