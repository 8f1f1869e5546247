//! # pmx — sessions: counting events for a command, processes or CPUs
//!
//! This crate puts the pieces together. An `-e` list is split into groups
//! ([`eventlist`]), each event is resolved through the event database
//! (`pmx-events`) into a perf attr or the reason it cannot be counted here
//! ([`stat::plan`]), and [`stat::run`] opens every event where it must count
//! — the launched command (counters created disabled and enabled at exec,
//! [`launch`]), each thread of `-p`, each `-t` thread, each CPU of `-a`/`-C`,
//! or the CPUs an uncore PMU names — then reads them into
//! `Count { value, enabled, running }` per counter. [`stat::aggregate`]
//! folds those into rows per total, CPU, core, socket or thread, with the
//! multiplexing scale and the share of time each event really ran.
//!
//! [`schedule`] knows the counters the CPU has and packs events onto them
//! (or splits them into one run per set for `--no-multiplex`).
//!
//! ## The library API: instrumenting a program
//!
//! The same grammar, database and groups serve programs that count parts
//! of themselves, the way PAPI and LIKWID's marker API are used:
//!
//! - [`Counters`] ([`counters`]): events opened as perf groups on the
//!   calling thread, a process, a thread or CPUs; `enable`, `disable`,
//!   `reset`, and reads — [`Counters::read_into`] is one `read(2)` per
//!   group into buffers allocated once (or `rdpmc` from user space where
//!   the kernel allows it, [`pmx_perf::rdpmc`]); metrics (`IPC`, TMA
//!   nodes) through [`metrics`]. [`Backend::Msr`] programs the same
//!   events through `/dev/cpu/N/msr` instead.
//! - Regions ([`region`](mod@region)): `let _r = pmx::region("solve");`
//!   accumulates counts per region name and thread, nested regions
//!   inclusive; the cost of an empty region is measured and reported.
//!   [`results`] is the one results format (JSON file, table, CSV) the
//!   Rust API, the C ABI (`pmx-capi`, `include/pmx.h`) and
//!   `pmx stat --regions` share.
//! - [`measure`]: count a command in one call (`pmx stat`'s pipeline,
//!   the totals as values; the Python package's `pmx.stat`).
//! - [`recorder`]: a set of per-CPU handles (perf events or MSRs) read
//!   together every N ms into a buffer of fixed capacity, each with a
//!   transform (raw, delta modulo the counter width, a closure), dumped
//!   as CSV.
//!
//! ## The commands as calls
//!
//! Besides `stat` and `record`, each of the CLI's commands is one call
//! that takes an options struct and returns a report value:
//! [`tma::run`] (count the top-down tree's inputs for a command, evaluate
//! the tree), [`info::collect`] (what this machine is),
//! [`catalog::list`] and [`catalog::explain`] (the events known for a CPU,
//! how one resolves), [`events_fetch::events_fetch`] (Intel's tables into
//! the events directory), [`registers::encode`] and [`registers::decode`]
//! (specs to register values and back). [`database`] chooses the CPU and
//! loads the event database from the options every resolving command
//! shares. The CLI's flags are checked here too, one rule and message
//! each: [`stat_events`] (what `pmx stat` counts: `-e`, `-M`,
//! `--topdown`), [`stat::RunOptions::from_flags`],
//! [`record::SamplingFlags`] (the sampling flags of `record` and `top`).
//!
//! [`analyze`] computes metrics and the top-down tree from counts saved
//! earlier; [`compare`] tells whether the counts, metrics and top-down
//! trees of two (or more) sides differ by more than noise; [`merge`]
//! combines per-rank result files. Both read through
//! `pmx-formats`, which also holds the value types of a result
//! ([`stat::Row`], [`stat::Domain`], …) and their writers.
//!
//! [`perf_personality`] is pmx run as `perf`: perf's command lines as
//! pmx's, and what perf's `stat` output says beyond the rows.
//! [`console`] is the terminal's width, a Ctrl-C that asks a long
//! operation to stop and clean up, and an error's causes on one line. [`completion`] is what a shell offers
//! after `-e` and `-M`: this CPU's event and metric names.
//!
//! Nothing here prints (but the line [`console::InterruptGuard`]'s
//! handler writes on Ctrl-C): renderers of `pmx stat` live in `pmx-formats`; the
//! region results render themselves to strings for the library's users.

pub mod analyze;
mod backend;
mod backend_msr;
mod backend_rdpmc;
pub mod catalog;
pub mod compare;
pub mod completion;
pub mod console;
pub mod counters;
pub mod database;
pub mod eventlist;
pub mod events_fetch;
mod formats;
pub mod info;
pub mod job;
pub mod launch;
pub mod measure;
pub mod merge;
pub mod metrics;
pub mod msr;
pub mod perf_personality;
pub mod record;
pub mod recorder;
pub mod region;
pub mod registers;
pub mod results;
pub mod schedule;
pub mod signals;
pub mod stat;
pub mod stat_events;
pub mod stat_file;
pub mod stat_msr;
mod ticker;
pub mod tma;

pub use counters::{Backend, CountTarget, Counters, MsrOptions, Reading};
pub use database::{Database, DatabaseOptions};
pub use eventlist::{parse_event_list, EventGroup};
pub use region::region;
pub use stat::{aggregate, plan, run, Aggregation, RunOptions, Scope, StatPlan, StatRun};
