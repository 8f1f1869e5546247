//! # pmx-count — the counting engine
//!
//! One job: count events. An `-e` list is split into groups
//! ([`eventlist`]), each event is resolved through the event database
//! ([`database`] chooses the CPU and loads `pmx-events`) into a perf attr
//! or the reason it cannot be counted here ([`stat::plan`]), fitted onto
//! the counters the CPU has ([`schedule`], [`stat::fit`]), and
//! [`stat::run`] opens every event where it must count — the launched
//! command (held before exec and released once the counters are open,
//! [`launch`]), each thread of `-p`, each `-t` thread, each CPU of
//! `-a`/`-C`, or the CPUs an uncore PMU names — then reads them into
//! `Count { value, enabled, running }` per counter, at each interval
//! and at the end. [`stat::aggregate`] folds those into rows per total,
//! CPU, core, socket or thread, with the multiplexing scale and the share
//! of time each event really ran; [`stat::summarize`] makes the rows,
//! spreads and status a report shows.
//!
//! [`stat::Session`] is all of it as one value, over a
//! [`stat::CounterBackend`]: perf's, or [`stat_msr`]'s
//! [`MsrBackend`](stat_msr::MsrBackend), the same counting through
//! `/dev/cpu/N/msr` (the `--backend msr` engine). [`msr`] is the MSR
//! handles and commands (`pmx msr read/write/plan`, [`msr::MsrSession`]).
//! [`metrics`] chooses the metric library for a CPU and evaluates
//! metrics over counted rows. [`signals`] and [`console`] are the Ctrl-C
//! that asks a run to stop after flushing what it measured.
//!
//! What this crate never does: parse command lines (`pmx-args` turns
//! flags into the options here) or read the environment (the caller
//! passes what it means, as [`launch::Spawn`]), render or print a report (the caller's
//! sink does; the one exception is the line the Ctrl-C guard writes),
//! sample (`pmx-record`), or read saved results (`pmx-analysis`).

pub mod console;
pub mod database;
pub mod eventlist;
mod formats;
pub mod launch;
pub mod metrics;
pub mod msr;
pub mod schedule;
pub mod signals;
pub mod stat;
pub mod stat_msr;
mod ticker;
#[cfg(test)]
mod uncore_tests;

pub use database::{Database, DatabaseOptions};
pub use eventlist::{parse_event_list, EventGroup};
pub use stat::{aggregate, plan, run, Aggregation, RunOptions, Scope, StatPlan, StatRun};
