//! pmx-cli's integration tests: one test binary, a module per command or
//! subject (`stat`, `record`, `report_export`, `serve`, `top`, …), each
//! running the `pmx` binary of this build. Run one module alone with its
//! path as the filter: `cargo test -p pmx-cli --test integration report_diff::`.
//!
//! The modules run as threads of one process, so none of them changes the
//! process's own state (environment, working directory, signal handlers,
//! limits lowered): what a child `pmx` needs is given to its `Command`.
//! A test that must run in a process of its own re-runs this binary with
//! `--exact` and its harness name (`regions::child_program`).
//!
//! Shared helpers: `common` (running pmx, the msr fixture machine) and
//! `serve_support` (a `pmx serve` daemon and its HTTP client), both also
//! used by the suites kept in targets of their own: `perf_diff`,
//! `perf_suite`, `report_viewer` and `faults` (docs/testing.md).

mod amd_builtin;
mod analyze;
mod annotate;
mod annotate_lbr;
mod annotate_memory;
mod branch_history;
mod branch_insn;
mod branches;
mod builtin_tables;
mod c2c;
mod check;
mod check_msr;
#[path = "../common/mod.rs"]
mod common;
mod compare;
mod deploy_profiles;
mod encode_decode;
mod fetch;
mod info;
mod kernel_cache;
mod lbr_stacks;
mod lbr_stitch;
mod likwid_groups;
mod mem_flags;
mod mem_objects;
mod mem_types;
mod memory;
mod merge;
mod metric_dirs;
mod msr;
mod offcpu;
mod offcpu_live;
mod offcpu_wall;
mod optimizers;
mod outputs;
mod perf_corpus;
mod perf_events;
mod perf_format;
mod perf_sampling;
mod perf_stat_forms;
mod plot;
mod progress;
mod record;
mod record_dwarf;
mod record_dwarf_ldso;
mod record_namespaces;
mod record_terms;
mod report;
mod report_binaries;
mod report_diff;
mod report_export;
mod report_groups;
mod report_jobs;
mod report_threads;
mod roofline;
mod script;
mod script_trace;
mod serve;
mod serve_load;
mod serve_pprof;
#[path = "../serve_support/mod.rs"]
mod serve_support;
mod shell;
mod start;
mod stat;
mod stat_fast;
mod stat_msr;
mod stat_perf;
mod stat_record;
mod tma;
mod top;
mod total_cycles;
mod uncore_boxes;
