//! pmx-events's integration tests, one test binary: a module per source.
//! `amd_builtin`, `intel_json`, `perf_json`, `libpfm` (its own libpfm
//! initialization in a child process of this binary, re-run with
//! `--exact`), `resolve`, `suggest` (close matches), `builtin_tables` (the tables built into pmx and
//! their generator).

mod amd_builtin;
mod builtin_tables;
mod intel_json;
mod libpfm;
mod perf_json;
mod resolve;
mod suggest;

/// The generator of the built-in tables (`examples/intel_tables.rs`).
#[path = "../../examples/intel_tables.rs"]
#[allow(dead_code)]
mod intel_tables_generator;
