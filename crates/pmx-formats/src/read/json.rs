//! JSON: pmx's document (`pmx stat --json`, with each run's values as
//! `repeats` after `-r N`), pmx's JSON lines (`-I MS
//! --json`: one object per row, `"kind":"metric"` for metric lines, then
//! the document), and perf's `-j` lines (`counter-value`, `interval`,
//! `event-runtime`, `pcnt-running`: `perf_json`).

use super::{cpu_comment, num, ReadError};
use crate::model::Exit;
use crate::report::{ReportMetric, ReportRow, RowStatus, SourceFormat, StatReport};
use serde_json::Value;
use std::path::Path;

fn jstr<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// A number member, or a string holding one.
fn jnum(v: &Value, k: &str) -> Option<f64> {
    match v.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => num(s),
        _ => None,
    }
}

/// A domain as pmx writes it (`{"kind":"cpu","cpu":3}`) or a label, as
/// its label.
pub fn domain_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("kind").and_then(Value::as_str) {
            Some("cpu") => format!("CPU{}", o.get("cpu").and_then(Value::as_u64).unwrap_or(0)),
            Some("core") => format!(
                "S{}-C{}",
                o.get("package").and_then(Value::as_u64).unwrap_or(0),
                o.get("core").and_then(Value::as_u64).unwrap_or(0)
            ),
            Some("socket") => {
                format!("S{}", o.get("package").and_then(Value::as_u64).unwrap_or(0))
            }
            Some("thread") => format!("tid {}", o.get("tid").and_then(Value::as_i64).unwrap_or(0)),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// Read JSON counts (pmx's or perf's) from `text`.
pub fn parse(path: &Path, text: &str) -> Result<StatReport, ReadError> {
    // The pmx totals document.
    if let Ok(doc) = serde_json::from_str::<Value>(text) {
        if doc.get("events").and_then(Value::as_array).is_some() {
            return document(&doc, path);
        }
    }
    let mut report = StatReport::default();
    let mut metric_only = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |message: String| ReadError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            message,
        };
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            if let Some(cpu) = cpu_comment(l) {
                report.provenance.cpu = Some(cpu);
            }
            continue;
        }
        if let Some(done) = super::perf_json::metric_only_61(&mut report, &mut metric_only, l) {
            done.map_err(bad)?;
            continue;
        }
        let v: Value = serde_json::from_str(l).map_err(|e| bad(format!("not JSON: {e}")))?;
        if !v.is_object() {
            return Err(bad("expected a JSON object".into()));
        }
        json_line(&mut report, &v).map_err(bad)?;
    }
    if report.rows.is_empty() && report.metrics.is_empty() && report.printed.is_empty() {
        return Err(ReadError::NoCounts {
            path: path.to_path_buf(),
        });
    }
    Ok(report)
}

/// One line of JSON lines (an object) into `report`.
fn json_line(report: &mut StatReport, v: &Value) -> Result<(), String> {
    if let Some(cpu) = jstr(v, "cpu_id") {
        report.provenance.cpu = Some(cpu.to_string());
    }
    if v.get("counter-value").is_some() {
        return super::perf_json::line(report, v);
    }
    if v.get("event").is_some() {
        report.provenance.format = Some(SourceFormat::PmxJsonIntervals);
        let time = jnum(v, "time");
        if jstr(v, "kind") == Some("metric") {
            report.metrics.push(metric(v, time));
        } else {
            report.rows.push(pmx_row(v, time)?);
        }
    } else if v.get("events").is_some() {
        // The totals document pmx writes after its interval lines: the
        // intervals already hold these counts.
        if report.rows.is_empty() && report.metrics.is_empty() {
            // The line's error names the file and line.
            let doc =
                document(v, Path::new("")).map_err(|_| "an entry without \"event\"".to_string())?;
            report.provenance.format = doc.provenance.format;
            report.elapsed_s = doc.elapsed_s;
            report.rows = doc.rows;
        }
    } else if v.get("metric-value").is_none()
        && v.get("metric-unit").is_none()
        && v.get("metric").is_none()
        && v.get("name").is_none()
    {
        return Err("neither a pmx nor a perf stat JSON line".into());
    } else {
        super::perf_json::metric_only(report, v);
    }
    Ok(())
}

/// pmx's document: `events`, `metrics`, and what was measured.
pub fn document(doc: &Value, path: &Path) -> Result<StatReport, ReadError> {
    document_with(doc, true, path)
}

/// [`document`]; when not `strict`, entries without `event` (or metrics
/// without `name`) are skipped instead of failing the read.
pub(crate) fn document_with(
    doc: &Value,
    strict: bool,
    path: &Path,
) -> Result<StatReport, ReadError> {
    let mut report = StatReport::default();
    report.provenance.format = Some(SourceFormat::PmxJson);
    report.provenance.cpu = jstr(doc, "cpu").map(str::to_string);
    report.provenance.command = jstr(doc, "target").map(str::to_string);
    report.provenance.host = jstr(doc, "host").map(str::to_string);
    report.provenance.rank = doc.get("rank").and_then(Value::as_u64);
    report.elapsed_s = jnum(doc, "elapsed_s");
    report.runs = doc.get("runs").and_then(Value::as_u64).map(|n| n as usize);
    report.exit = doc
        .get("exit")
        .and_then(|e| serde_json::from_value::<Exit>(e.clone()).ok());
    report.interrupted = doc.get("interrupted").and_then(Value::as_bool);
    report.notes = strings(doc.get("notes"));
    for e in doc["events"].as_array().into_iter().flatten() {
        match pmx_row(e, None) {
            Ok(row) => report.rows.push(row),
            Err(_) if !strict => {}
            Err(_) => {
                let path = path.to_path_buf();
                return Err(ReadError::EntryWithoutEvent { path });
            }
        }
    }
    let metrics = doc.get("metrics").and_then(Value::as_array);
    for m in metrics.into_iter().flatten() {
        if strict || jstr(m, "name").is_some() {
            report.metrics.push(metric(m, None));
        }
    }
    Ok(report)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// One entry of pmx's `events` (or one row line of `-I --json`).
fn pmx_row(e: &Value, time: Option<f64>) -> Result<ReportRow, String> {
    let event = jstr(e, "event").ok_or_else(|| "an entry without \"event\"".to_string())?;
    let domain = e.get("domain_label").or_else(|| e.get("domain"));
    let mut row = ReportRow::new(event, &domain.map(domain_label).unwrap_or_default());
    row.time = time;
    row.value = jnum(e, "value");
    row.unit = jstr(e, "unit").unwrap_or("").to_string();
    // Any other word counts as counted.
    row.status = jstr(e, "status")
        .and_then(RowStatus::from_word)
        .unwrap_or(RowStatus::Counted);
    row.reason = jstr(e, "reason").unwrap_or("").to_string();
    row.raw = e.get("raw").and_then(Value::as_u64);
    row.enabled_ns = e.get("time_enabled_ns").and_then(Value::as_u64);
    row.running_ns = e.get("time_running_ns").and_then(Value::as_u64);
    row.running_pct = jnum(e, "running_share").map(|s| s * 100.0);
    row.spread = e
        .get("spread")
        .filter(|s| !s.is_null())
        .map(|s| crate::model::Spread {
            runs: s.get("runs").and_then(Value::as_u64).unwrap_or(0) as usize,
            mean: jnum(s, "mean").unwrap_or(0.0),
            stddev: jnum(s, "stddev").unwrap_or(0.0),
            relative: jnum(s, "relative").unwrap_or(0.0),
        });
    row.stddev_pct = row.spread.map(|s| s.relative * 100.0);
    row.counters = e
        .get("counters")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    row.group = e.get("group").and_then(Value::as_u64).map(|n| n as usize);
    row.repeats = repeats(e, |r| crate::model::RunCount {
        value: jnum(r, "value"),
        raw: r.get("raw").and_then(Value::as_u64).unwrap_or(0),
        time_enabled_ns: r
            .get("time_enabled_ns")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        time_running_ns: r
            .get("time_running_ns")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    });
    Ok(row)
}

/// One metric line (`"kind":"metric"`) or an entry of `metrics`.
fn metric(m: &Value, time: Option<f64>) -> ReportMetric {
    ReportMetric {
        time,
        name: jstr(m, "name")
            .or_else(|| jstr(m, "event"))
            .unwrap_or("")
            .to_string(),
        domain: m
            .get("domain_label")
            .or_else(|| m.get("domain"))
            .map(domain_label)
            .unwrap_or_default(),
        value: jnum(m, "value"),
        unit: jstr(m, "unit").unwrap_or("").to_string(),
        reliability: jnum(m, "reliability"),
        estimate: m.get("estimate").and_then(Value::as_bool).unwrap_or(false),
        missing: jstr(m, "missing").map(str::to_string),
        repeats: repeats(m, |r| crate::model::RunMetric {
            value: jnum(r, "value"),
            reliability: jnum(r, "reliability"),
        }),
    }
}

/// An entry's `repeats` list (`pmx stat -r N --json`), each run read by
/// `one`; empty when there is none.
fn repeats<T>(e: &Value, one: impl Fn(&Value) -> T) -> Vec<T> {
    e.get("repeats")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(one)
        .collect()
}
