//! Launching the measured command so that counting starts exactly at exec.
//!
//! The child is cloned (sharing our memory until exec, see `spawn_held`)
//! and waits on a pipe before it calls `execvp`; the
//! parent opens the counters on the child's pid (created disabled, with
//! `enable_on_exec`), then releases it. If exec fails, the child sends its
//! errno back through a close-on-exec pipe and exits 127; a successful exec
//! closes that pipe, so the parent reads end-of-file.

use std::ffi::CString;
use std::io;

/// A forked child waiting to exec.
#[derive(Debug)]
pub struct Launched {
    /// The child's pid.
    pub pid: i32,
    go_w: i32,
    err_r: i32,
    released: bool,
    /// The child's stack and arguments while it may still run on them.
    held: Option<Held>,
}

/// How a command ended (a result value, defined in `pmx-formats`).
pub use pmx_formats::Exit;

/// `pidfd_open(2)`: a descriptor that polls readable when `pid` ends, so
/// a session can sleep until the command exits or its next deadline;
/// `None` on kernels before 5.3 (then poll with a timeout).
pub fn pidfd_open(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: the syscall returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// How the held child is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spawn {
    /// `clone(CLONE_VM)` on a small stack of its own: no page tables
    /// copied, no copy-on-write faults (see `spawn_held`).
    #[default]
    Clone,
    /// A plain `fork`: for a process under valgrind, which runs threads
    /// and forks but not a general clone.
    Fork,
}

impl Spawn {
    /// The way for a process whose `LD_PRELOAD` is `ld_preload`, read by
    /// the caller at its edge: [`Spawn::Fork`] when it names valgrind's
    /// preload library (`vgpreload`, which valgrind puts there for the
    /// programs it runs), else [`Spawn::Clone`].
    pub fn for_preload(ld_preload: Option<&std::ffi::OsStr>) -> Spawn {
        match ld_preload {
            Some(v) if v.to_string_lossy().contains("vgpreload") => Spawn::Fork,
            _ => Spawn::Clone,
        }
    }
}

/// Start `argv` and hold it before exec. `pin`: CPUs to pin it to;
/// `spawn`: how.
pub fn fork_held(argv: &[String], pin: Option<&[u32]>, spawn: Spawn) -> io::Result<Launched> {
    fork_held_to(argv, pin, false, spawn)
}

/// [`fork_held`], with the command's standard output sent to standard
/// error when `stdout_to_stderr` (`record -o -` streams perf.data on
/// standard output; perf does the same `dup2(2, 1)`).
pub fn fork_held_to(
    argv: &[String],
    pin: Option<&[u32]>,
    stdout_to_stderr: bool,
    spawn: Spawn,
) -> io::Result<Launched> {
    if argv.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no command given",
        ));
    }
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "an argument contains a NUL byte",
            )
        })?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if let Some(cpus) = pin {
        for &c in cpus {
            // SAFETY: CPU_SET on a zeroed set with an index below CPU_SETSIZE.
            if (c as usize) < libc::CPU_SETSIZE as usize {
                unsafe { libc::CPU_SET(c as usize, &mut set) };
            }
        }
    }
    let (go_r, go_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // The child is born on this CPU only, so it cannot be running while
    // the counters are opened on it: opening an event on a running task
    // interrupts its CPU (an IPI, in a VM a VM exit that may wait for the
    // host to run that vCPU: milliseconds), a held task needs nothing.
    // Both get their affinity back at once (the child before exec).
    let narrowed = narrow_to_this_cpu();
    if pin.is_none() {
        if let Some(orig) = &narrowed {
            set = *orig;
        }
    }
    let restore = pin.is_some() || narrowed.is_some();
    let mut child = Box::new(Child {
        _args: cargs,
        ptrs,
        set,
        restore,
        stdout_to_stderr,
        go_r,
        go_w,
        err_r,
        err_w,
        // SAFETY: a zeroed sigset is valid; filled below before the clone.
        mask: unsafe { std::mem::zeroed() },
    });
    let spawned = spawn_held(&mut child, spawn);
    if let Some(orig) = &narrowed {
        // SAFETY: setting our own affinity back from a set we read.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), orig) };
    }
    // SAFETY: closing the child's ends of our own pipes.
    unsafe {
        libc::close(go_r);
        libc::close(err_w);
    }
    let (pid, stack) = match spawned {
        Ok(s) => s,
        Err(e) => {
            // SAFETY: our own descriptors, closed once.
            unsafe {
                libc::close(go_w);
                libc::close(err_r);
            }
            return Err(e);
        }
    };
    Ok(Launched {
        pid,
        go_w,
        err_r,
        released: false,
        held: Some(Held {
            _child: child,
            _stack: stack,
        }),
    })
}

/// What the held child reads (it shares our memory until it execs).
struct Child {
    _args: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
    set: libc::cpu_set_t,
    restore: bool,
    /// `dup2(2, 1)` before the exec.
    stdout_to_stderr: bool,
    go_r: i32,
    go_w: i32,
    err_r: i32,
    err_w: i32,
    mask: libc::sigset_t,
}

/// The child's stack and arguments, kept until it has exec'd.
struct Held {
    _child: Box<Child>,
    _stack: Stack,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held")
    }
}

/// An anonymous mapping used as the held child's stack.
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: a mapping we made, unmapped once; only dropped when the
        // child no longer runs on it (see `Launched`).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

const STACK_LEN: usize = 64 * 1024;

/// Start the held child. It shares our memory (`CLONE_VM`) until exec,
/// so starting it copies no page tables and costs no copy-on-write
/// faults in either process (a `fork` of pmx's address space did); it
/// runs on its own small stack and makes only raw system calls. Every
/// signal is blocked while it starts, so no handler of ours ever runs on
/// its stack; it restores our mask just before exec. With
/// [`Spawn::Fork`] (under valgrind) it is forked instead.
fn spawn_held(child: &mut Child, spawn: Spawn) -> io::Result<(i32, Stack)> {
    // SAFETY: an anonymous private mapping; checked below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK_LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let stack = Stack {
        base,
        len: STACK_LEN,
    };
    // SAFETY: sigset calls on valid sets; `child` outlives the child's use
    // of it (kept in `Launched` until exec is confirmed, or leaked); the
    // stack top is 16-byte aligned inside the mapping.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut child.mask);
        let top = (base as *mut u8).add(STACK_LEN) as *mut libc::c_void;
        let arg: *mut libc::c_void = (child as *mut Child).cast();
        let pid = if spawn == Spawn::Fork {
            // Valgrind runs only threads and forks, not a general clone.
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(held_child(arg));
            }
            pid
        } else {
            libc::clone(held_child, top, libc::CLONE_VM | libc::SIGCHLD, arg)
        };
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &child.mask, std::ptr::null_mut());
        if pid < 0 {
            return Err(err);
        }
        Ok((pid, stack))
    }
}

/// The held child: wait for the go byte, restore what the parent changed
/// (affinity, SIGINT/SIGTERM, the signal mask), send standard output to
/// standard error when asked, exec. On failure the
/// errno goes back through the close-on-exec pipe (1000 + errno when the
/// affinity could not be restored). Only system calls, no allocation:
/// the allocator and everything else is the parent's, running meanwhile.
extern "C" fn held_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Child`, alive until we exec or exit.
    unsafe {
        let c = &*(arg as *const Child);
        libc::close(c.go_w);
        libc::close(c.err_r);
        let mut b = [0u8; 1];
        if libc::read(c.go_r, b.as_mut_ptr().cast(), 1) != 1 {
            libc::_exit(127);
        }
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        if c.restore
            && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &c.set) != 0
        {
            let msg = (1000 + *libc::__errno_location()).to_ne_bytes();
            libc::write(c.err_w, msg.as_ptr().cast(), 4);
            libc::_exit(127);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &c.mask, std::ptr::null_mut());
        if c.stdout_to_stderr {
            libc::dup2(2, 1);
        }
        libc::execvp(c.ptrs[0], c.ptrs.as_ptr());
        let msg = (*libc::__errno_location()).to_ne_bytes();
        libc::write(c.err_w, msg.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}

/// Pin this thread to the CPU it runs on; its affinity before, or `None`
/// when either cannot be read or set (nothing changed then).
fn narrow_to_this_cpu() -> Option<libc::cpu_set_t> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls write at
    // most `size` bytes into it and read ours.
    unsafe {
        let mut orig: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut orig) != 0 {
            return None;
        }
        let cpu = libc::sched_getcpu();
        if cpu < 0 || cpu as usize >= libc::CPU_SETSIZE as usize {
            return None;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut one);
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(orig)
    }
}

fn pipe() -> io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Why the command could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// exec failed with this errno.
    Exec(i32),
    /// Pinning failed with this errno.
    Pin(i32),
}

impl Drop for Launched {
    fn drop(&mut self) {
        // A child that has not exec'd may still run on its stack (until
        // it exits): leave that memory mapped (64 KiB, only on failures).
        if let Some(held) = self.held.take() {
            std::mem::forget(held);
        }
    }
}

impl Launched {
    /// Let the child exec. Returns the exec error, if it failed.
    pub fn release(&mut self) -> Result<(), StartError> {
        self.released = true;
        let b = [1u8];
        // SAFETY: plain writes/reads on our own pipe fds.
        unsafe {
            libc::write(self.go_w, b.as_ptr().cast(), 1);
            libc::close(self.go_w);
            let mut e = [0u8; 4];
            let n = libc::read(self.err_r, e.as_mut_ptr().cast(), 4);
            libc::close(self.err_r);
            if n == 0 {
                // End of file: exec closed the pipe, after the child had
                // left our memory for its own; its stack can go.
                self.held = None;
            }
            if n == 4 {
                let code = i32::from_ne_bytes(e);
                return Err(if code >= 1000 {
                    StartError::Pin(code - 1000)
                } else {
                    StartError::Exec(code)
                });
            }
        }
        Ok(())
    }

    /// Kill a child that was never released (counters could not be set up).
    pub fn abandon(&mut self) {
        if !self.released {
            // SAFETY: closing our pipe ends makes the child's read fail and
            // it exits 127; then we reap it.
            unsafe {
                libc::close(self.go_w);
                libc::close(self.err_r);
            }
            self.released = true;
            let _ = self.wait();
        }
    }

    /// Wait for the child, retrying on EINTR.
    pub fn wait(&self) -> io::Result<Exit> {
        loop {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if libc::WIFEXITED(status) {
                return Ok(Exit::Code {
                    code: libc::WEXITSTATUS(status),
                });
            }
            if libc::WIFSIGNALED(status) {
                return Ok(Exit::Signal {
                    signal: libc::WTERMSIG(status),
                });
            }
        }
    }
}
