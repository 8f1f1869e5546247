//! # pmx-args — what a command line means
//!
//! One job: turn argv-level semantics into the options the engines
//! take, so the binary only declares its flags. [`perf_personality`] is
//! pmx run as `perf`: perf's command lines (`record`, `report`, `top`,
//! `script`, …) as pmx's, the options perf has and pmx refuses by name,
//! perf's version line and the footer of `perf stat`. [`stat_events`] is
//! what `pmx stat` counts given `-e`, `-M` and `--topdown`;
//! [`stat_flags`] where a measurement happens (`-p`, `-t`, `-C`, `-a`, a
//! command) and one `pmx stat` run's options from its flags;
//! [`stat_file_args`] the words of `pmx stat record`/`report`;
//! [`stat_fast`] stat's common lines read without clap (start-up);
//! [`record_flags`] the sampling flags `record` and `top` share (and
//! `record`'s memory flags); [`mem_words`] `perf mem`'s commands (and the
//! machine's precise memory events, [`mem_words::events`]);
//! [`check_flags`] the words of `check` and `roofline`.
//!
//! What this crate never does: count, sample or render; it makes
//! options and checks them, with one message per rule.

pub mod check_flags;
pub mod mem_words;
pub mod perf_personality;
pub mod record_flags;
pub mod stat_events;
pub mod stat_fast;
pub mod stat_file_args;
pub mod stat_flags;
