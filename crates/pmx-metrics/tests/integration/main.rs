//! pmx-metrics's integration tests, one test binary: a module per suite.
//! `amd_cache`, `amd_pipeline` (the built-in Zen 4/5 tree against perf's),
//! `amd_tables`, `likwid` (LIKWID's groups), `intel_tables` (Intel's and perf's tables from
//! `../shared`, skipped with a message without it), `evaluation`, `no_panics`
//! (proptest; its regressions file sits beside the module).

mod amd_cache;
mod amd_pipeline;
mod amd_tables;
mod evaluation;
mod intel_tables;
mod likwid;
mod no_panics;
