//! The target's lifecycle: the command launched held before exec (and,
//! for `--per-thread`, followed with ptrace), released once the counters
//! are open, watched until it ends or stopped when the run ends first;
//! the tasks of `-p`/`-t` watched until they are gone; nothing for `-a`
//! and `-C`, which end by time or signal.

use super::options::{RunOptions, Scope};
use super::outcome::RunError;
use super::tasks::task_alive;
use crate::launch::{self, Exit, Launched, StartError};

/// What a run counts, and the command it started.
#[derive(Debug)]
pub(crate) struct RunTarget {
    child: Option<Launched>,
    /// The command is followed task by task (`--per-thread`).
    pub traced: bool,
    /// The command is what is counted: its counters start at exec.
    pub by_exec: bool,
    /// `-p`/`-t`: the run ends when all of them are gone.
    watched: Vec<i32>,
}

/// The command's state, looked at without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Still running (or no command).
    Running,
    /// It ended so.
    Exited(Exit),
    /// It cannot be waited for.
    Gone,
}

impl RunTarget {
    /// Launch the command, if any, held before exec; with `trace_tasks`,
    /// seize it so that every new task stops before it first runs.
    pub fn launch(opts: &RunOptions) -> Result<RunTarget, RunError> {
        let child = if opts.command.is_empty() {
            None
        } else {
            Some(launch::fork_held(
                &opts.command,
                opts.pin.as_deref(),
                opts.spawn,
            )?)
        };
        let by_exec = opts.scope == Scope::Command;
        let mut target = RunTarget {
            traced: opts.trace_tasks && by_exec && child.is_some(),
            child,
            by_exec,
            watched: match &opts.scope {
                Scope::Pids(p) | Scope::Tids(p) => p.clone(),
                _ => Vec::new(),
            },
        };
        if let (true, Some(pid)) = (target.traced, target.pid()) {
            let options =
                libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_TRACEFORK | libc::PTRACE_O_TRACEVFORK;
            // SAFETY: seizing our own held child; no memory is passed.
            let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0usize, options as usize) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                target.abandon();
                // Not an event's open: the OS refused the trace.
                return Err(RunError::Io(std::io::Error::other(format!(
                    "--per-thread: cannot follow the command's threads with ptrace: {e} (is another tracer attached, or ptrace restricted by kernel.yama.ptrace_scope?)"
                ))));
            }
        }
        Ok(target)
    }

    /// The command's pid.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.pid)
    }

    /// Is there a command?
    pub fn has_command(&self) -> bool {
        self.child.is_some()
    }

    /// Kill a command that was never released.
    pub fn abandon(&mut self) {
        if let Some(c) = self.child.as_mut() {
            c.abandon();
        }
    }

    /// Let the command exec; signals are forwarded to it from now on.
    /// `name` is the command's name for the error.
    pub fn release(&mut self, name: &str) -> Result<(), RunError> {
        let Some(c) = self.child.as_mut() else {
            return Ok(());
        };
        crate::signals::set_child(c.pid);
        let Err(e) = c.release() else {
            return Ok(());
        };
        let reason = match e {
            StartError::Exec(errno) => match errno {
                libc::ENOENT => "command not found".to_string(),
                libc::EACCES => "permission denied (not executable?)".to_string(),
                _ => std::io::Error::from_raw_os_error(errno).to_string(),
            },
            StartError::Pin(errno) => format!(
                "--pin: cannot pin to those CPUs: {}",
                std::io::Error::from_raw_os_error(errno)
            ),
        };
        let _ = c.wait();
        crate::signals::set_child(0);
        Err(RunError::Exec {
            cmd: name.to_string(),
            reason,
        })
    }

    /// The command's state, without waiting.
    pub fn poll(&self) -> Waited {
        let Some(c) = self.child.as_ref() else {
            return Waited::Running;
        };
        let mut st = 0;
        // SAFETY: non-blocking wait for our own child.
        let r = unsafe { libc::waitpid(c.pid, &mut st, libc::WNOHANG) };
        if r == c.pid {
            Waited::Exited(Exit::from_wait_status(st))
        } else if r < 0 {
            Waited::Gone
        } else {
            Waited::Running
        }
    }

    /// Without a command: are all the watched tasks (`-p`/`-t`) gone?
    pub fn tasks_gone(&self) -> bool {
        self.child.is_none()
            && !self.watched.is_empty()
            && self.watched.iter().all(|&p| !task_alive(p))
    }

    /// A file descriptor that becomes readable when the command ends.
    pub fn pidfd(&self) -> Option<std::os::fd::OwnedFd> {
        self.pid().and_then(launch::pidfd_open)
    }

    /// The run ended first: interrupt the command and reap it.
    pub fn stop(&self) -> Option<Exit> {
        let c = self.child.as_ref()?;
        // SAFETY: signalling our own child; then reap it.
        unsafe { libc::kill(c.pid, libc::SIGINT) };
        c.wait().ok()
    }
}
