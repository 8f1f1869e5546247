//! # pmx-formats — stat results in files, both directions
//!
//! One crate for every form a counting result takes on disk or on a
//! terminal, written and read back:
//!
//! - [`model`]: the values a result is made of — [`Domain`] (total, CPU,
//!   core, socket, thread), [`EventStatus`], [`Row`], [`Spread`] over
//!   repeats and each run's values ([`RunCount`], [`RunMetric`], kept by
//!   `-r N`), [`Exit`], [`MetricLine`] — which `pmx::stat` produces and
//!   re-exports under its own paths, and [`EventTable`], the event names
//!   and units rows point into.
//! - [`write`](mod@write): pmx's writers over a live result ([`StatView`] for totals,
//!   [`IntervalRows`] for one `-I` interval): the readable table, CSV with
//!   any separator, the JSON document, interval CSV and JSON lines. The
//!   stream writers [`IntervalCsv`] and [`IntervalJson`] keep their
//!   buffers and do not allocate once warm.
//! - [`report`]: [`StatReport`], the one model of a result read from (or
//!   written to) a file: rows with event, domain, value, unit, status and
//!   reason, raw count and times, running share, spread over repeats,
//!   interval time; metric lines; the metrics perf printed
//!   ([`PrintedMetric`]); provenance (tool, form, file, command).
//! - [`read`]: readers of pmx's CSV (totals and intervals, any header),
//!   JSON (the document and JSON lines), everything `perf stat` writes
//!   (its text table, `-x SEP` and `-j`, with `-I`, `-A`/`--per-*`,
//!   cgroups, spreads, metric columns and metric-only lines), and per-rank
//!   result files, into a [`StatReport`]; errors name the file and line.
//! - [`perf`]: perf 6.1's own forms written from a [`StatReport`]: the
//!   text table, `-x SEP` and `-j` lines, totals and `-I` intervals
//!   ([`perf::PerfIntervals`]), byte for byte in perf's layout, with the
//!   shadow metrics perf prints beside counts ([`perf_shadow`]), `-G`
//!   cgroup columns and the `--metric-only` forms.
//! - [`timeline`]: interval files read as a [`Timeline`] of samples, the
//!   input of `pmx plot`'s charts.
//!
//! Every form pmx writes reads back to the same report (the round-trip
//! tests in `tests/round_trip.rs`). The crate depends on `pmx-model` and
//! serde only, so `pmx` itself uses its readers.

pub mod model;
pub mod numbers;
pub mod perf;
pub mod perf_shadow;
pub mod read;
pub mod report;
pub mod timeline;
pub mod write;

pub use model::{
    Domain, EventList, EventStatus, EventTable, Exit, MetricLine, Reason, Row, RunCount, RunMetric,
    Spread, ESTIMATE_BELOW,
};
pub use read::{read_file, read_text, ReadError};
pub use report::{
    Cut, PrintedMetric, Provenance, ReportMetric, ReportRow, RowStatus, SourceFormat, StatReport,
    Tool,
};
pub use timeline::Timeline;
pub use write::{IntervalCsv, IntervalJson, IntervalRows, StatView};
