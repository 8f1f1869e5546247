//! perf's forms written from a [`StatReport`]: `perf stat -x SEP` (with
//! `-I` time and `-A` domain columns when the rows have them) and
//! `perf stat -j` lines. Values are written as perf writes them: the
//! number, or `<not counted>` / `<not supported>`; clocks stay in the
//! unit the row has.

use crate::report::{ReportRow, RowStatus, StatReport};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// The value field as perf writes it.
fn value_text(row: &ReportRow) -> String {
    match (row.status, row.value) {
        (RowStatus::NotSupported, _) => "<not supported>".to_string(),
        (_, None) => "<not counted>".to_string(),
        (_, Some(v)) => crate::numbers::num(v),
    }
}

/// `perf stat -x SEP` lines: `[time,][domain,]value,unit,event,run_time,
/// pct_running,,` (metric columns empty).
pub fn csv(report: &StatReport, sep: &str) -> String {
    let mut s = String::new();
    for row in &report.rows {
        if let Some(t) = row.time {
            let _ = write!(s, "{t:.9}{sep}");
        }
        if !row.domain.is_empty() {
            let _ = write!(s, "{}{sep}", row.domain);
        }
        let runtime = row.runtime_ns.map(crate::numbers::num).unwrap_or_default();
        let pct = row
            .running_pct
            .map(|p| format!("{p:.2}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{}{sep}{}{sep}{}{sep}{runtime}{sep}{pct}{sep}{sep}",
            value_text(row),
            row.unit,
            row.event
        );
    }
    s
}

/// The domain members of a perf `-j` line: `"cpu": "3"` for `CPU3`, else
/// the label under `core`, `socket` or `thread`.
fn domain_members(o: &mut Map<String, Value>, row: &ReportRow) {
    use crate::model::Domain;
    let key = match row.domain() {
        Some(Domain::Total) => return,
        Some(Domain::Cpu { cpu }) => {
            o.insert("cpu".into(), json!(cpu.to_string()));
            return;
        }
        Some(Domain::Socket { .. }) => "socket",
        Some(Domain::Die { .. }) => "die",
        Some(Domain::Cache { .. }) => "cache",
        Some(Domain::Node { .. }) => "node",
        Some(Domain::Thread { .. }) => "thread",
        Some(Domain::Core { .. }) | None => "core",
    };
    o.insert(key.into(), json!(row.domain));
}

/// `perf stat -j` lines, one object per row.
pub fn json(report: &StatReport) -> String {
    let mut s = String::new();
    for row in &report.rows {
        let mut o = Map::new();
        if let Some(t) = row.time {
            o.insert("interval".into(), json!(t));
        }
        domain_members(&mut o, row);
        o.insert("counter-value".into(), json!(value_text(row)));
        o.insert("unit".into(), json!(row.unit));
        o.insert("event".into(), json!(row.event));
        if let Some(r) = row.runtime_ns {
            o.insert("event-runtime".into(), json!(r));
        }
        if let Some(p) = row.running_pct {
            o.insert("pcnt-running".into(), json!(p));
        }
        let _ = writeln!(s, "{}", Value::Object(o));
    }
    s
}
