//! Counting: `pmx stat`'s engine, a pipeline of small stages.
//!
//! ```text
//! plan ──► pack ──► open ──► target ──► read loop ──► aggregate ──► (render: the caller's)
//! ```
//!
//! - [`plan`] (`plan.rs`): the `-e` groups resolved to perf attrs, or to
//!   the reason an event cannot be counted, in a [`StatPlan`];
//!   `pack.rs` fits it onto the CPU's counters ([`StatPlan::pack`],
//!   [`StatPlan::group_software`], [`StatPlan::run_sets`]).
//! - open (`open.rs`): every group on every place it must count — the
//!   command's pid, each thread of `-p`/`-t` (`tasks.rs` lists them),
//!   each CPU of `-a`/`-C`, or the CPUs an uncore PMU names — with a
//!   hidden sampling leader (`crate::ticker`) for system-wide software
//!   groups read at intervals; failures become each event's
//!   [`EventStatus`].
//! - target (`target.rs`, `follow.rs`): the command launched held before
//!   exec and released once the counters are open, followed task by task
//!   for `--per-thread`; `-p`/`-t` tasks watched; system-wide runs end by
//!   time or signal.
//! - read loop (`run.rs`, `read.rs`, `clock.rs`): [`run_with`] waits for
//!   the command, the duration, the interval count or Ctrl-C, reading at
//!   each `-I` boundary (the deltas go to the caller as a [`Tick`]), and
//!   reads the totals into a [`StatRun`]: one [`Instance`] per opened
//!   counter. The interval path allocates nothing once warm.
//! - [`aggregate`] (`aggregate.rs`): instances folded into [`Row`]s per
//!   total, CPU, core, socket or thread; [`Aggregator`] refills them in
//!   place interval after interval.
//! - a whole `pmx stat` (`repeat.rs`, `summary.rs`): [`fit`] packs the
//!   plan and splits it into `--no-multiplex` sets, [`Fitted::run`] runs
//!   them once per repeat, and [`summarize`] folds the runs into the rows,
//!   spreads and status a report shows.
//! - the session (`session.rs`): [`Session`] is that whole `pmx stat`
//!   as one value — [`SessionOptions`] given once, [`Session::new`] fits
//!   and checks, [`Session::count`] counts (intervals to a [`StatSink`])
//!   and summarizes. Every caller that counts a command uses it.
//! - the backends (`backend.rs`): a [`Session`] reaches the counters
//!   through a [`CounterBackend`] — perf's ([`Fitted::run`], what
//!   [`Session::new`] makes) or the msr devices'
//!   (`crate::stat_msr::MsrBackend`, [`Session::with_backend`]); the
//!   plan, rows, summary and intervals are the same for both.
//!
//! - perf's own options (`perf_options.rs`): the default and `-d` sets,
//!   `--all-user`/`--all-kernel`, `-G`/`--for-each-cgroup` (each event
//!   opened per CPU in its cgroup, `PERF_FLAG_PID_CGROUP`), `--null`,
//!   and the [`RunHooks`] of `-D`, `--pre`, `--post`, `-S`.
//! - the flags that name a target or a run are `pmx-args`' (`stat_flags`):
//!   this engine takes the [`RunOptions`] made there and never sees a flag.
//!
//! The plain values of a report ([`Row`], [`Domain`], [`EventStatus`],
//! [`Spread`]) are `pmx-formats`'s, re-exported here.

mod aggregate;
mod backend;
#[cfg(test)]
mod boxes_tests;
mod clock;
mod follow;
mod open;
mod options;
mod outcome;
mod pack;
mod perf_options;
mod plan;
mod read;
mod repeat;
mod run;
mod session;
mod summary;
mod target;
mod tasks;

pub use aggregate::{aggregate, Aggregation, Aggregator};
pub use backend::{BackendRuns, CounterBackend, StatSink};
pub use clock::next_tick_after;
pub(crate) use clock::IntervalClock;
pub use options::{RunOptions, Scope};
pub use outcome::headed;
pub use outcome::{
    exit_code, merge_runs, open_reason, EventOpenError, Instance, RunError, StatRun, Tick,
};
pub use perf_options::{
    cgroup_path, cgroup_root, default_events, detailed_events, host_default_events,
    host_stall_events, refused_perf_option, run_hook, DetailLevel, PerfOptionError,
    PerfStatOptions, Privilege, RunHooks, Start, CGROUP_ROOT, REFUSED_PERF_OPTIONS,
};
pub use plan::{plan, tracepoint_id, PlanGroup, PlannedEvent, PmuBox, StatPlan, DEFAULT_EVENTS};
/// The result values, defined in `pmx-formats` (whose readers and writers
/// take them) and used here under their old paths.
pub use pmx_formats::{Domain, EventStatus, Reason, Row, Spread, ESTIMATE_BELOW};
pub use repeat::{fit, FitError, Fitted};
pub use run::{run, run_with};
pub use session::{Counted, Session, SessionOptions};
pub use summary::{summarize, Summary};
pub use tasks::{numeric_entries, online_cpus, task_alive, thread_comm, thread_comms, threads_of};

pub use crate::signals::{install as install_signal_handlers, stop_requested, stop_signal};

#[cfg(test)]
mod tests {
    use crate::launch::Exit;

    #[test]
    fn exit_codes() {
        assert_eq!(Exit::Code { code: 3 }.shell_code(), 3);
        assert_eq!(Exit::Signal { signal: 9 }.shell_code(), 137);
    }
}
