//! pmx-events's integration tests, one test binary: a module per source.
//! `amd_builtin`, `intel_json`, `perf_json`, `libpfm` (its own libpfm initialization in a
//! child process of this binary, re-run with `--exact`), `resolve`.

mod amd_builtin;
mod intel_json;
mod libpfm;
mod perf_json;
mod resolve;
