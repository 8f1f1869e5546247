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
//! Nothing here prints: renderers live in `pmx-output`.

pub mod eventlist;
pub mod launch;
pub mod schedule;
pub mod stat;
mod ticker;

pub use eventlist::{parse_event_list, EventGroup};
pub use stat::{aggregate, plan, run, Aggregation, RunOptions, Scope, StatPlan, StatRun};
