//! Counting by programming the PMU through the msr devices
//! (`/dev/cpu/N/msr`) instead of `perf_event_open`: the session behind
//! `pmx stat --backend msr`.
//!
//! The register work is pmx-msr's ([`pmx_msr::plan()`], [`Session`](pmx_msr::Session),
//! [`EnergyMeter`](pmx_msr::EnergyMeter)). This module resolves the events to register
//! encodings ([`msr_event`]), plans them onto the CPU's counters
//! ([`MsrStat::new`]), checks that nobody else is using the counters, runs
//! the command pinned to the measured CPUs ([`MsrStat::start`]), reads
//! deltas ([`MsrRunning::run`]) and gives them back as a [`StatRun`](crate::stat::StatRun) of the
//! perf backend's shape: one [`Instance`](crate::stat::Instance) per counter per CPU (per package
//! for package-scope events), each a `Count { value: delta, enabled: ns,
//! running: ns }`. The msr backend never multiplexes, so running always
//! equals enabled (the measured length of the run, or of the interval for
//! a [`Tick`](crate::stat::Tick)), and [`crate::stat::aggregate`] and `pmx-output`'s
//! table/CSV/JSON and interval renderers work unchanged. [`run_with`]
//! does both steps, like [`crate::stat::run_with`].
//!
//! `pmx stat --backend msr` counts through a [`crate::stat::Session`] as
//! the perf backend does: [`MsrBackend`] (the planned [`MsrStat`], the
//! devices, `force`) is the session's
//! [`CounterBackend`](crate::stat::CounterBackend), handed to
//! [`Session::with_backend`](crate::stat::Session::with_backend); the
//! session's [`RunOptions`](crate::stat::RunOptions) give the command,
//! `--pin`, the duration and the intervals, its sink gets the interval
//! deltas and its [`Counted`](crate::stat::Counted) carries the notes
//! below and a restore failure (`late_error`).
//!
//! ## Counters in use
//!
//! Unless [`MsrRunOptions::force`], the session refuses to program the PMU
//! when:
//!
//! - a register it will write says one of its counters is already enabled
//!   (the counter's bit in the global control register, EN in an event
//!   select, a fixed counter's ring bits): [`Session::start`](pmx_msr::Session::start) checks the
//!   values it saves ([`Error::Busy`]);
//! - the NMI watchdog is on (`/proc/sys/kernel/nmi_watchdog` is not 0): the
//!   hard-lockup detector keeps a perf cycles event on every CPU, and the
//!   kernel rewrites PMU registers whenever it schedules perf events
//!   ([`Error::InUse`]);
//! - a process holds a perf event open (an entry of `/proc/PID/fd` linking
//!   to `anon_inode:[perf_event]`; as root, which the msr device needs,
//!   every process is visible). Software-only perf events look the same
//!   and are refused too ([`Error::InUse`]).
//!
//! perf events opened after the session has started are not noticed. With
//! `force` the other user loses the counters until the session ends; every
//! register it wrote is put back then, and the [`MsrOutcome::notes`] say
//! what was taken over.
//!
//! ## Ending
//!
//! The session restores every register it touched on a normal end, when
//! the process unwinds from a panic or returns early (`Drop`), and on
//! SIGINT/SIGTERM/SIGHUP: under [`Signals::Defer`](pmx_msr::Signals::Defer) the first signal is
//! only recorded, the session forwards it to the command, waits for the
//! command to end, reads the counters a last time, returns what it has
//! and restores; a second signal restores at once and ends the process by
//! that signal. The command is held before exec until the counters run,
//! and is always reaped (signalled, then killed after a grace period, if
//! the session ends first).
//!
//! ## Energy
//!
//! `energy-pkg` (also `power/energy-pkg/` and `rapl/energy-pkg/`) is the
//! package energy counter (Intel `MSR_PKG_ENERGY_STATUS`, AMD
//! `PKG_ENERGY_STAT`) in joules, read once per package through
//! [`EnergyMeter`](pmx_msr::EnergyMeter), with the 32-bit wrap handled. Its raw count is in the
//! package's energy units and its scale converts them to joules (set by
//! [`MsrStat::start`], nanojoules when packages disagree on the unit); it
//! brings a `power-pkg` event in watts (each interval's energy over its
//! length). The notes add the energy and average power per package.
//!
//! ## Stages
//!
//! `events.rs` resolves each event ([`msr_event`]); `session.rs` plans
//! them ([`MsrEvents`], [`MsrStat`]) and starts the session, after
//! `users.rs` checked who else uses the counters and `child.rs` launched
//! the command held; `counting.rs` reads until the end ([`MsrRunning`])
//! with the loop clock the perf backend uses; `backend.rs` is the
//! session's backend over both ([`MsrBackend`]); `error.rs` holds
//! [`Error`].

mod backend;
mod child;
mod counting;
mod error;
mod events;
mod session;
mod users;

pub use backend::MsrBackend;
pub use counting::{MsrOutcome, MsrRunning};
pub use error::{device_message, Error};

/// The events counted when `-e` is not given: the hardware part of perf's
/// default set (the software events are the kernel's, not the PMU's).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,branches,branch-misses";
pub use events::{
    default_cpus, is_energy_pkg, msr_event, needs_database, pmu_counters, MsrEventError,
};
pub use pmx_msr::{MsrError, MsrRoot};
pub use session::{run_with, MsrEvents, MsrRunOptions, MsrStat};

/// What the msr backend cannot do with these `pmx stat` flags, in one
/// sentence (`None`: nothing): it counts CPUs (`cpus`: -a or -C given),
/// not tasks (`tasks`: -p/-t), not per thread, one run.
pub fn refused_flags(
    tasks: bool,
    per_thread: bool,
    repeat: u32,
    cpus: bool,
) -> Option<&'static str> {
    if tasks {
        Some("--backend msr counts CPUs, not tasks: it programs each CPU's counters and cannot follow a process from CPU to CPU; use -a or -C LIST (with the command after --), or --backend perf for -p/-t")
    } else if per_thread {
        Some("--per-thread needs per-thread counters, and --backend msr counts CPUs; use --backend perf")
    } else if repeat != 1 {
        Some("-r: --backend msr counts one run; repeat the command yourself or use --backend perf")
    } else if !cpus {
        Some("--backend msr counts CPUs: give -a or -C LIST (a command after -- runs pinned to them)")
    } else {
        None
    }
}

use std::path::Path;

/// Where the msr devices are: `dir` (default `/dev/cpu`), with the
/// topology read under `sysfs_root`'s `sys` when given (tests).
pub fn msr_root(dir: Option<&Path>, sysfs_root: Option<&Path>) -> MsrRoot {
    let root = match dir {
        Some(dir) if dir != Path::new(MsrRoot::DEFAULT_DIR) => MsrRoot::new(dir),
        _ => MsrRoot::host(),
    };
    match sysfs_root {
        Some(r) => root.with_sysfs(r.join("sys")),
        None => root,
    }
}

#[cfg(test)]
mod tests;
