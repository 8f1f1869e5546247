//! pmx-perf's integration tests, one test binary: a module per suite, with
//! `common`'s helpers.

mod breakpoints;
mod common;
mod errors;
mod groups;
mod per_cpu;
mod software;
