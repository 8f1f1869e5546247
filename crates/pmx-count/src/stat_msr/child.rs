//! The measured command: held before exec until the counters run,
//! pinned to the measured CPUs, signalled and reaped whatever happens.

use crate::launch::{Exit, Launched, StartError};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long the command gets to end after the session signals it, before
/// SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// The measured command: held before exec until the counters run, reaped
/// (signalled first if need be) whatever happens.
#[derive(Debug)]
pub(super) struct Child {
    pub(super) launched: Launched,
    pub(super) released: bool,
    /// Reaped (or gone).
    pub(super) done: bool,
    pub(super) exit: Option<Exit>,
}

impl Child {
    pub(super) fn pid(&self) -> i32 {
        self.launched.pid
    }

    /// Let it exec; the reason when it cannot run.
    pub(super) fn release(&mut self) -> Result<(), String> {
        self.released = true;
        match self.launched.release() {
            Ok(()) => Ok(()),
            Err(e) => {
                let reason = match e {
                    StartError::Exec(libc::ENOENT) => "command not found".to_string(),
                    StartError::Exec(libc::EACCES) => {
                        "permission denied (not executable?)".to_string()
                    }
                    StartError::Exec(errno) => std::io::Error::from_raw_os_error(errno).to_string(),
                    StartError::Pin(errno) => format!(
                        "cannot pin it to the measured CPUs: {}",
                        std::io::Error::from_raw_os_error(errno)
                    ),
                };
                self.exit = self.launched.wait().ok();
                self.done = true;
                Err(reason)
            }
        }
    }

    /// Has it ended? Reaps it when it has.
    pub(super) fn poll(&mut self) -> bool {
        if self.done {
            return true;
        }
        let mut st = 0;
        // SAFETY: a non-blocking wait for our own child.
        let r = unsafe { libc::waitpid(self.pid(), &mut st, libc::WNOHANG) };
        if r == self.pid() {
            self.exit = Some(Exit::from_wait_status(st));
            self.done = true;
        } else if r < 0 {
            self.done = true;
        }
        self.done
    }

    pub(super) fn signal(&self, sig: i32) {
        if !self.done {
            // SAFETY: kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(self.pid(), sig) };
        }
    }

    /// Signal it, give it [`GRACE`] to end, then SIGKILL; reaped after.
    pub(super) fn stop(&mut self, sig: i32) {
        if self.poll() {
            return;
        }
        self.signal(sig);
        let until = Instant::now() + GRACE;
        while Instant::now() < until {
            if self.poll() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.signal(libc::SIGKILL);
        self.exit = self.launched.wait().ok();
        self.done = true;
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.released {
            self.launched.abandon();
        } else if !self.done {
            self.stop(libc::SIGTERM);
        }
    }
}

/// Sleep up to `ms`, less when the command ends or a signal arrives (the
/// session's handlers do not restart system calls).
pub(super) fn nap(fd: Option<&OwnedFd>, ms: i32) {
    let mut p = libc::pollfd {
        fd: fd.map_or(-1, |f| f.as_raw_fd()),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd (a negative fd is ignored by poll).
    unsafe { libc::poll(&mut p, 1, ms) };
}
