//! # pmx-args — what a command line means
//!
//! One job: turn argv-level semantics into the options the engines
//! take, so the binary only declares its flags. [`perf_personality`] is
//! pmx run as `perf`: perf's command lines (`record`, `report`, `top`,
//! `script`, …) as pmx's, the options perf has and pmx refuses by name,
//! perf's version line and the footer of `perf stat`. [`stat_events`] is
//! what `pmx stat` counts given `-e`, `-M` and `--topdown`.
//!
//! What this crate never does: count, sample or render; it makes
//! options and checks them, with one message per rule.

pub mod perf_personality;
pub mod stat_events;
