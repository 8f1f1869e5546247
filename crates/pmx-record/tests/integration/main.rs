//! pmx-record's integration tests, one test binary: a module per
//! subject, on the real kernel (software events and cpu-clock sampling
//! work without a PMU).

mod readers;
mod sink;
