//! pmx-perfdata's integration tests, one test binary: a module per suite.

mod branch_stack;
mod compress;
mod in_place;
mod perf_reads;
mod pipe_write;
mod sample_read;
mod tracing;
