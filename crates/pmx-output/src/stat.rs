//! Counting reports: table, CSV, JSON, totals and intervals — the writers
//! of `pmx_formats::write`, under the paths `pmx stat` has always used
//! (the columns are documented there).

pub use pmx_formats::model::MetricLine;
pub use pmx_formats::write::{
    csv, interval_csv, interval_csv_header, interval_json, interval_table, json, table,
    IntervalCsv, IntervalJson, IntervalRows, StatView as StatReport, INTERVAL_COLUMNS,
    STATUS_WORDS,
};
