//! Launching the measured command so that counting starts exactly at exec.
//!
//! The child is forked and waits on a pipe before it calls `execvp`; the
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

/// Fork `argv` and hold it before exec. `pin`: CPUs to pin it to.
pub fn fork_held(argv: &[String], pin: Option<&[u32]>) -> io::Result<Launched> {
    fork_held_to(argv, pin, false)
}

/// [`fork_held`], with the command's standard output sent to standard
/// error when `stdout_to_stderr` (`record -o -` streams perf.data on
/// standard output; perf does the same `dup2(2, 1)`).
pub fn fork_held_to(
    argv: &[String],
    pin: Option<&[u32]>,
    stdout_to_stderr: bool,
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
    // SAFETY: the child only calls async-signal-safe functions (read,
    // sched_setaffinity, execvp, write, _exit) before exec.
    let pid = unsafe { libc::fork() };
    if let (true, Some(orig)) = (pid != 0, &narrowed) {
        // SAFETY: setting our own affinity back from a set we read.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), orig) };
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        unsafe {
            libc::close(go_w);
            libc::close(err_r);
            let mut b = [0u8; 1];
            let n = libc::read(go_r, b.as_mut_ptr().cast(), 1);
            if n != 1 {
                libc::_exit(127);
            }
            // Restore default signal handling the parent may have changed.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            if restore
                && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                let e = *libc::__errno_location();
                let msg = (1000 + e).to_ne_bytes();
                libc::write(err_w, msg.as_ptr().cast(), 4);
                libc::_exit(127);
            }
            if stdout_to_stderr {
                libc::dup2(2, 1);
            }
            libc::execvp(ptrs[0], ptrs.as_ptr());
            let e = *libc::__errno_location();
            let msg = e.to_ne_bytes();
            libc::write(err_w, msg.as_ptr().cast(), 4);
            libc::_exit(127);
        }
    }
    unsafe {
        libc::close(go_r);
        libc::close(err_w);
    }
    Ok(Launched {
        pid,
        go_w,
        err_r,
        released: false,
    })
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
