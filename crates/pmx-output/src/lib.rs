//! # pmx-output — renderers
//!
//! Results come in as values from the `pmx` crate and leave as bytes: one
//! module per command's report. The formats of `pmx stat`'s results, both
//! directions, live in `pmx-formats` ([`stat`] re-exports its writers under
//! their old paths); the charts of `pmx plot` in `pmx-plot` ([`plot`]).

pub mod analyze;
pub mod merge;
pub mod stat;

pub use pmx_formats::numbers::{group_digits, readable, readable_measure};
pub use pmx_plot as plot;
