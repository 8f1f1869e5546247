//! pmx's integration tests, one test binary: a module per suite.

mod counters_msr;
mod msr_session;
mod perf_grammar;
mod record_stream;
mod recorder_msr;
mod regions;
mod scaling;
