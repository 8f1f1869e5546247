//! # pmx-perfdata — the perf.data file format
//!
//! (Being written: the format's layout, a reader for file and pipe mode,
//! and a writer that `perf report` and `perf script` read.)
