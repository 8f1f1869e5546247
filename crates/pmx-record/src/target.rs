//! The target's lifecycle: the command launched held before `exec` and
//! released once everything is open; the end of the recording (the
//! command exits, every `-p`/`-t` task is gone, the duration passes, or
//! SIGINT/SIGTERM arrives, forwarded to the command); and the command's
//! exit status collected at the end.

use super::options::{RecordError, RecordOptions};
use pmx_count::launch::{self, Exit, Launched, StartError};
use pmx_count::stat::Scope;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The command of `opts`, forked and held before `exec`; `None` without one.
pub(super) fn launch(opts: &RecordOptions) -> io::Result<Option<Launched>> {
    if opts.command.is_empty() {
        return Ok(None);
    }
    let to_stdout = opts.output.as_os_str() == "-";
    launch::fork_held_to(&opts.command, None, to_stdout, opts.spawn).map(Some)
}

/// A recording under way: what ends it and how it ended.
pub(super) struct Lifecycle<'a> {
    child: Option<&'a Launched>,
    /// Readable when the command exits.
    pidfd: Option<OwnedFd>,
    /// The `-p`/`-t` tasks: recording ends when all are gone.
    watched: Vec<i32>,
    duration: Option<Duration>,
    start: Instant,
    /// How the command ended, once it has.
    pub(super) exit: Option<Exit>,
    /// SIGINT/SIGTERM arrived, or `stop` was set.
    pub(super) interrupted: bool,
    /// The caller's stop request (a live session's owner).
    stop: Option<Arc<AtomicBool>>,
}

impl<'a> Lifecycle<'a> {
    /// Start: release the held command (its events start at its `exec`)
    /// and start the clock.
    pub(super) fn start(
        child: Option<&'a mut Launched>,
        opts: &RecordOptions,
        stop: Option<Arc<AtomicBool>>,
    ) -> Result<Lifecycle<'a>, RecordError> {
        let start = Instant::now();
        let (child, pidfd) = match child {
            Some(c) => {
                pmx_count::signals::set_child(c.pid);
                if let Err(e) = c.release() {
                    let _ = c.wait();
                    return Err(RecordError::Exec {
                        cmd: opts.command[0].clone(),
                        reason: exec_reason(e),
                    });
                }
                let fd = launch::pidfd_open(c.pid);
                (Some(&*c), fd)
            }
            None => (None, None),
        };
        Ok(Lifecycle {
            child,
            pidfd,
            watched: match &opts.scope {
                Scope::Pids(p) => p.clone(),
                Scope::Tids(t) => t.clone(),
                _ => Vec::new(),
            },
            duration: opts.duration,
            start,
            exit: None,
            interrupted: false,
            stop,
        })
    }

    /// The fd to poll besides the rings: the command's pidfd.
    pub(super) fn poll_fd(&self) -> Option<i32> {
        self.pidfd.as_ref().map(|p| p.as_raw_fd())
    }

    /// Whether the recording is over; notes the command's exit and a stop
    /// request on the way.
    pub(super) fn over(&mut self) -> bool {
        if let Some(c) = self.child {
            let mut status = 0;
            // SAFETY: polling our own child without blocking.
            let r = unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) };
            if r == c.pid {
                self.exit = Some(Exit::from_wait_status(status));
                return true;
            }
        }
        if self
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            // As the duration's end: a command still running is
            // interrupted by `finish`.
            self.interrupted = self.child.is_none();
            if self.child.is_some() {
                self.duration = Some(Duration::ZERO);
            }
            return true;
        }
        if pmx_count::signals::stop_requested() {
            self.interrupted = true;
            if self.child.is_none() {
                return true;
            }
            // The signal was forwarded (one that came during the setup
            // is forwarded now); the command's exit ends the loop.
            pmx_count::signals::forward_pending();
        }
        if self.duration.is_some_and(|d| self.start.elapsed() >= d) {
            return true;
        }
        !self.watched.is_empty()
            && self
                .watched
                .iter()
                .all(|&t| !pmx_count::stat::task_alive(t))
    }

    /// How long to sleep before the next look: 100 ms, less near the end
    /// of the duration.
    pub(super) fn timeout_ms(&self) -> i32 {
        match self.duration {
            Some(d) => d
                .saturating_sub(self.start.elapsed())
                .as_millis()
                .clamp(1, 100) as i32,
            None => 100,
        }
    }

    /// Time since the start.
    pub(super) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// After the last drain: a command still running when the duration
    /// ended is interrupted (as `pmx stat` does), and waited for.
    pub(super) fn finish(mut self) -> io::Result<(Option<Exit>, bool)> {
        if self.exit.is_none() {
            if let Some(c) = self.child {
                if self.duration.is_some() && !self.interrupted {
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(c.pid, libc::SIGINT) };
                }
                self.exit = Some(c.wait()?);
            }
        }
        pmx_count::signals::set_child(0);
        Ok((self.exit, self.interrupted))
    }
}

/// Why the command could not be started.
fn exec_reason(e: StartError) -> String {
    match e {
        StartError::Exec(libc::ENOENT) => "command not found".to_string(),
        StartError::Exec(libc::EACCES) => "permission denied (not executable?)".to_string(),
        StartError::Exec(errno) => io::Error::from_raw_os_error(errno).to_string(),
        StartError::Pin(errno) => io::Error::from_raw_os_error(errno).to_string(),
    }
}

/// Sleep until one of `fds` is readable, or `timeout_ms`.
pub(super) fn poll_fds(fds: &[i32], timeout_ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of p.len() pollfds.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(scope: Scope, duration: Option<Duration>) -> RecordOptions {
        RecordOptions {
            scope,
            command: vec![],
            inherit: false,
            rate: pmx_perf::SampleRate::Frequency(1000),
            call_graph: crate::CallGraph::None,
            mmap_pages: 1,
            duration,
            output: "x".into(),
            cmdline: vec![],
            spawn: Default::default(),
            file: Default::default(),
        }
    }

    #[test]
    fn a_duration_ends_the_recording() {
        let opts = options(Scope::Cpus(vec![0]), Some(Duration::ZERO));
        let mut life = Lifecycle::start(None, &opts, None).unwrap();
        assert_eq!(life.poll_fd(), None);
        assert!(life.over());
        assert_eq!(life.timeout_ms(), 1);
        assert_eq!(life.finish().unwrap(), (None, false));
        let open = options(Scope::Cpus(vec![0]), None);
        let mut life = Lifecycle::start(None, &open, None).unwrap();
        assert!(!life.over());
        assert_eq!(life.timeout_ms(), 100);
    }

    #[test]
    fn gone_tasks_end_the_recording() {
        let opts = options(Scope::Tids(vec![i32::MAX]), None);
        assert!(Lifecycle::start(None, &opts, None).unwrap().over());
    }

    #[test]
    fn a_command_that_cannot_run_is_an_exec_error() {
        let mut opts = options(Scope::Command, None);
        opts.command = vec!["/nonexistent/pmx-test".into()];
        let mut child = launch(&opts).unwrap().unwrap();
        match Lifecycle::start(Some(&mut child), &opts, None) {
            Err(RecordError::Exec { reason, .. }) => assert_eq!(reason, "command not found"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        pmx_count::signals::set_child(0);
    }
}
