//! Per-rank result files (`pmx stat --json -o 'out-%h-%p-%r.json'`, one
//! per rank or host of a job): the totals document, which is the whole
//! file or, for `-I --json` files, its last line that is one.

use super::ReadError;
use crate::report::StatReport;
use serde_json::Value;
use std::path::Path;

/// Read the totals document of a per-rank file.
pub fn read_rank_file(path: &Path) -> Result<StatReport, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let doc = totals_document(&text).ok_or_else(|| ReadError::NotReport {
        path: path.to_path_buf(),
    })?;
    // Entries without a name are skipped, as `pmx merge` always has.
    let mut report = super::json::document_with(&doc, false, path)?;
    report.provenance.path = Some(path.to_path_buf());
    Ok(report)
}

/// The document in `text`: the whole text, or its last line that is one.
pub fn totals_document(text: &str) -> Option<Value> {
    let is_report = |v: &Value| v.get("events").is_some_and(Value::is_array);
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if is_report(&v) {
            return Some(v);
        }
    }
    text.lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(is_report))
}
