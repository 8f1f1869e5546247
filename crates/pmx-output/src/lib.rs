//! # pmx-output — renderers
//!
//! Results come in as values from the `pmx` crate and leave as bytes: one
//! module per command's report. The formats of `pmx stat`'s results, both
//! directions, live in `pmx-formats` ([`stat`] re-exports its writers under
//! their old paths); the charts of `pmx plot` in `pmx-plot` ([`plot`]).
//!
//! The other commands' reports render here too, each in its own module:
//! [`tma`] (the top-down tree, shared with `pmx analyze --tma`), [`info`]
//! (what this machine is), [`catalog`] (`pmx list`, `pmx explain`),
//! [`registers`] (field tables, `pmx encode`, `pmx decode`), [`fetch`]
//! (`pmx events fetch`'s progress and summary), [`analyze`] (`pmx
//! analyze`'s metrics), [`compare`] (`pmx compare`'s benchstat-like
//! table, CSV, JSON, trees side by side) and [`merge`] (`pmx merge`'s
//! table, CSV, JSON). Commands added since render beside their engines
//! (`pmx check`'s and `pmx roofline`'s in `pmx-analysis`).
//! [`stat_render`] puts `pmx stat`'s output together from [`stat`]'s
//! writers for both backends: the interval rows as they are measured,
//! the `-M` metric lines, the totals, the `--plot` chart; [`sink`] is
//! where the report goes (`-o`, `--log-fd`, `-q`, stderr).

pub mod analyze;
pub mod catalog;
pub mod compare;
pub mod fetch;
pub mod info;
pub mod merge;
pub mod msr;
pub mod progress;
pub mod registers;
pub mod sink;
pub mod stat;
pub mod stat_render;
pub mod tma;

pub use pmx_formats::numbers::{group_digits, readable, readable_measure};
pub use pmx_plot as plot;
