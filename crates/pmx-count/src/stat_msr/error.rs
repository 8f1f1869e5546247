//! The errors of an msr counting session.

use super::events::MsrEventError;
use pmx_msr::{MsrError, PlanError};

/// How to take the counters over, in the refusals.
pub(super) const FORCE_HINT: &str =
    "stop what uses them, or pass --force to take them over (pmx puts every register back when it ends)";

/// Why an msr counting session could not be planned, started or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An event cannot be programmed (bad input).
    #[error("{0}")]
    Event(#[from] MsrEventError),
    /// An event needs the database and none was given.
    #[error("{0}: no event database loaded")]
    NoDatabase(String),
    /// The events do not fit the counters, or the CPUs are wrong (bad
    /// input).
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The msr devices: opening, a register that refused, or a session
    /// error other than [`Error::Busy`].
    #[error("{0}")]
    Device(#[from] MsrError),
    /// Registers the session would write show the counters enabled.
    #[error("the counters are in use ({}): something else is counting with them; {FORCE_HINT}", .0.join("; "))]
    Busy(Vec<String>),
    /// The NMI watchdog or other processes' perf events use the counters.
    #[error("the counters are in use: {}; {FORCE_HINT}", .0.join("; "))]
    InUse(Vec<String>),
    /// The command could not be forked.
    #[error("cannot start '{cmd}': {error}")]
    Start {
        /// The command's name.
        cmd: String,
        /// Why.
        error: std::io::Error,
    },
    /// The command could not run (exec or pinning failed); the registers
    /// are back and nothing was counted. The shell's code is 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command's name.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// Reading the counters failed while counting; the registers were put
    /// back (as far as possible) and nothing is reported.
    #[error("reading the counters: {0}")]
    Read(MsrError),
}

/// A device error in one sentence; without the driver, pointing at
/// `--backend perf`.
pub fn device_message(e: &MsrError) -> String {
    match e {
        MsrError::DriverNotLoaded { path } => format!(
            "{}: not found — load the msr driver (modprobe msr) or use --backend perf",
            path.display()
        ),
        e => crate::console::error_chain(e),
    }
}

impl Error {
    /// The error in one sentence, a device error as [`device_message`]
    /// says it.
    pub fn message(&self) -> String {
        match self {
            Error::Device(e) => device_message(e),
            Error::Read(e) => format!("reading the counters: {}", device_message(e)),
            e => e.to_string(),
        }
    }

    /// The error is the caller's input (an event, the CPUs), not the
    /// machine: the CLI's exit code 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::Event(_) | Error::Plan(_))
    }
}
