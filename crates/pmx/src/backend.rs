//! What [`crate::Counters`] and its backends (perf, MSR) share: the
//! events a set of counters was asked for, each with its status
//! ([`EventInfo`]), and the [`Error`] building or reading them fails with.
//! Both are re-exported as `pmx::counters::{Error, EventInfo}`; this module sits below it
//! and below the backends so neither side has to reach into the other.

use crate::metrics::UnknownMetric;
use crate::stat::EventStatus;
use std::io;

/// Why counters could not be built or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A malformed event list (bad input).
    #[error("{0}")]
    Spec(#[from] pmx_model::spec::SpecError),
    /// A metric this CPU's library does not have (bad input).
    #[error("{0}")]
    Metric(#[from] UnknownMetric),
    /// No event could be opened; the reasons, one per event.
    #[error("no event could be counted: {0}")]
    Open(String),
    /// This machine has no CPUID to find its event tables by.
    #[error("this machine has no CPUID, so its events cannot be looked up")]
    NoCpu,
    /// A read or ioctl failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A target that cannot be counted as asked (bad input), e.g. a pid
    /// and a CPU at once ([`crate::CountTarget::from_pid_cpu`]).
    #[error("{0}")]
    Target(String),
}

impl Error {
    /// The error is the caller's input (a spec or metric name), not the
    /// machine: the CLI's exit code 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::Spec(_) | Error::Metric(_) | Error::Target(_))
    }
}

/// One event of a set of counters.
#[derive(Debug, Clone, PartialEq)]
pub struct EventInfo {
    /// The spec as given (`page-faults`, `cycles:u`).
    pub name: String,
    /// Unit of a reading's `value` (`msec` for the clocks).
    pub unit: Option<String>,
    /// Raw value × `scale` = value in `unit`.
    pub scale: f64,
    /// Counting, or why not.
    pub status: EventStatus,
}

/// The error when no event could be opened: each event with its reason.
pub(crate) fn nothing_opened(events: &[EventInfo]) -> Error {
    let why: Vec<String> = events
        .iter()
        .map(|e| match &e.status {
            EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => {
                format!("{}: {w}", e.name)
            }
            EventStatus::Counted => e.name.clone(),
        })
        .collect();
    Error::Open(why.join("; "))
}
