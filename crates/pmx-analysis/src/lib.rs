//! # pmx-analysis — what counts mean, after the fact
//!
//! One job: analyses over counting results, saved or just counted.
//! [`analyze`] computes metrics and the top-down tree from counts saved
//! earlier (pmx's and perf's stat outputs, read through `pmx-formats`);
//! [`compare`] tells whether the counts, metrics and top-down trees of
//! two or more sides differ by more than their noise (its A/B runner
//! counts through `pmx-count`); [`merge`] combines per-rank result files;
//! [`stat_file`] reads and writes `perf stat record`'s files; [`tma`]
//! counts the top-down tree's inputs for a command and evaluates the
//! tree; [`check`] counts `pmx-kernels`' work with known answers and
//! compares; [`roofline`] measures the machine's ceilings with them and
//! counts a command's FLOPs and bytes.
//!
//! What this crate never does: parse command lines, or open a counter
//! but through `pmx-count`'s engine. The renderers of the analyses that
//! share `pmx stat`'s tables (analyze, compare, merge, tma) are
//! `pmx-output`'s; a command added since renders beside its engine
//! ([`check::render`], [`roofline::render`]), so adding one touches no
//! renderer crate.

pub mod analyze;
pub mod check;
pub mod compare;
pub mod merge;
pub mod roofline;
pub mod stat_file;
pub mod tma;
