//! perf stat's `-j` lines (one object per line, perf 6's keys):
//! `counter-value`, `unit`, `event`, `event-runtime`, `pcnt-running`,
//! `metric-value`, `metric-unit`, `interval`, the aggregation (`cpu`,
//! `core`, `die`, `socket`, `node`, `thread`, with `aggregate-number`),
//! `cgroup`, `variance`; lines holding only `metric-value`/`metric-unit`
//! belong to the row before them; perf 6.1's `--metric-only` lines (a
//! header object of `"unit"` members, then per domain the interval and
//! aggregation members followed by `{"metric-value" : "V"}` objects,
//! which is not JSON: [`metric_only_61`]). Metrics land in
//! [`StatReport::printed`].

use super::perf_fields::number;
use super::perf_value;
use crate::report::{ReportRow, SourceFormat, StatReport, Tool};
use serde_json::Value;

fn jstr<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn jnum(v: &Value, k: &str) -> Option<f64> {
    match v.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => super::num(s),
        _ => None,
    }
}

/// The text of a member that is a string or a number.
fn jtext(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(x) => Some(x.to_string()),
        _ => None,
    }
}

/// The domain label: the aggregation's, then the cgroup.
fn domain(v: &Value) -> String {
    let Some(o) = v.as_object() else {
        return String::new();
    };
    let d = crate::timeline::perf_domain(o);
    match jstr(v, "cgroup") {
        Some(cg) if d != cg.trim() && !d.is_empty() => format!("{d} {}", cg.trim()),
        _ => d,
    }
}

/// One line with `counter-value`.
pub(crate) fn line(report: &mut StatReport, v: &Value) -> Result<(), String> {
    let time = jnum(v, "interval");
    report.provenance.format = Some(if time.is_some() {
        SourceFormat::PerfJsonIntervals
    } else {
        SourceFormat::PerfJson
    });
    let Some(event) = jstr(v, "event") else {
        return Err("no \"event\"".into());
    };
    let Some(value) = jtext(v, "counter-value") else {
        return Err("no \"counter-value\"".into());
    };
    let domain = domain(v);
    let mut row = ReportRow::new(event, &domain);
    row.origin = Tool::Perf;
    row.time = time;
    row.unit = jstr(v, "unit").unwrap_or("").to_string();
    row.runtime_ns = jnum(v, "event-runtime");
    row.running_pct = jnum(v, "pcnt-running");
    row.stddev_pct = jnum(v, "variance");
    match number(&value) {
        Some(x) => row.value = Some(x),
        None => perf_value(&mut row, &value),
    }
    report.rows.push(row);
    push_metric(report, v, time, domain, event.to_string());
    Ok(())
}

/// A line with only `metric-value`/`metric-unit`: the metric of the row
/// before it.
pub(crate) fn metric_only(report: &mut StatReport, v: &Value) {
    let time = jnum(v, "interval");
    let mut domain = domain(v);
    let last = report.rows.last().filter(|r| r.time == time);
    let event = last.map(|r| r.event.clone()).unwrap_or_default();
    if domain.is_empty() {
        domain = last.map(|r| r.domain.clone()).unwrap_or_default();
    }
    push_metric(report, v, time, domain, event);
}

/// The strings after each `key` in `line`: `"key" : "…"`.
fn quoted_after<'a>(line: &'a str, key: &str) -> Vec<&'a str> {
    let pat = format!("\"{key}\" : \"");
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(&pat) {
        rest = &rest[i + pat.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// A line of perf 6.1's `-j --metric-only`, read into `report`; `header`
/// keeps the units of the last header line. `None`: not such a line.
///
/// The header object lists the units of every counter (`{"unit" :
/// "GHz", "unit" : "insn per cycle"}`, empty but for indentation when
/// the aggregation lists none); a domain's line is `[{"interval" :
/// T}][{]"cpu" : "0", ` then one `{"metric-value" : "V"}` per column.
/// The lines leave out rates and `CPUs utilized`, as the header does
/// not: the header's other units name the columns when there are as many
/// as values.
pub(crate) fn metric_only_61(
    report: &mut StatReport,
    header: &mut Vec<String>,
    line: &str,
) -> Option<Result<(), String>> {
    if line.starts_with('{') && line.ends_with('}') && !line.contains("\"metric-value\"") {
        let v: Value = serde_json::from_str(line).ok()?;
        let o = v.as_object()?;
        if o.len() == 1 && o.contains_key("interval") {
            // `-I`: an interval whose columns are all left out.
            return Some(Ok(()));
        }
        if !o.keys().all(|k| k == "unit") {
            return None;
        }
        *header = quoted_after(line, "unit")
            .into_iter()
            .filter(|u| !(u.contains("/sec") || u.contains("CPUs utilized")))
            .map(str::to_string)
            .collect();
        return Some(Ok(()));
    }
    let Some(at) = line.find("{\"metric-value\" : \"") else {
        // A domain whose columns are all left out: `{"cpu" : "0", `.
        let rest = match line.strip_prefix("{\"interval\" : ") {
            Some(r) => &r[r.find('}')? + 1..],
            None => line,
        };
        let fields = rest
            .trim()
            .trim_start_matches('{')
            .trim_end_matches([',', ' ']);
        let v: Value = serde_json::from_str(&format!("{{{fields}}}")).ok()?;
        const AGGR: &[&str] = &["cpu", "core", "die", "socket", "node", "aggregate-number"];
        let only_domain = v.as_object()?.keys().all(|k| AGGR.contains(&k.as_str()));
        return (only_domain && line.trim_end().ends_with(',')).then_some(Ok(()));
    };
    let (mut head, values) = line.split_at(at);
    let mut time = None;
    if let Some(rest) = head.strip_prefix("{\"interval\" : ") {
        let end = rest.find('}')?;
        time = Some(super::num(rest[..end].trim())?);
        head = &rest[end + 1..];
    }
    let fields = head
        .trim()
        .trim_start_matches('{')
        .trim_end_matches([',', ' ']);
    let domain = if fields.is_empty() {
        String::new()
    } else {
        match serde_json::from_str::<Value>(&format!("{{{fields}}}")) {
            Ok(v) => domain(&v),
            Err(e) => return Some(Err(format!("a --metric-only line's domain: {e}"))),
        }
    };
    report.provenance.format = Some(match time {
        Some(_) => SourceFormat::PerfJsonIntervals,
        None => SourceFormat::PerfJson,
    });
    let values = quoted_after(values, "metric-value");
    let named = values.len() == header.len();
    for (i, value) in values.iter().enumerate() {
        let unit = if named { header[i].as_str() } else { "" };
        super::perf_fields::push_printed(report, time, domain.clone(), String::new(), value, unit);
    }
    Some(Ok(()))
}

fn push_metric(
    report: &mut StatReport,
    v: &Value,
    time: Option<f64>,
    domain: String,
    event: String,
) {
    let value = jtext(v, "metric-value").unwrap_or_default();
    let unit = jstr(v, "metric-unit").unwrap_or("");
    // perf 6.1 prints a NULL unit of a counter without a metric.
    if unit == "(null)" {
        return;
    }
    let kept = report.printed.len();
    super::perf_fields::push_printed(report, time, domain, event, &value, unit);
    // perf 6.6 and later: `"metric-threshold" : "good"`.
    if let (Some(t), true) = (jstr(v, "metric-threshold"), report.printed.len() > kept) {
        if let Some(m) = report.printed.last_mut() {
            m.threshold = Some(t.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::read::read_text;
    use std::path::Path;

    #[test]
    fn perf61s_null_unit_is_no_metric() {
        // perf 6.1 here: `perf stat -j -I 100 --summary -e page-faults …`.
        let r = read_text(
            Path::new("t"),
            "{\"interval\" : 0.111667978, \"counter-value\" : \"3213.000000\", \"unit\" : \"\", \"event\" : \"page-faults\", \"event-runtime\" : 21249454, \"pcnt-running\" : 100.00, \"metric-value\" : 0.000000, \"metric-unit\" : \"(null)\"}\n",
        )
        .unwrap();
        assert_eq!(r.rows[0].value, Some(3213.0));
        assert!(r.printed.is_empty(), "{:?}", r.printed);
    }

    #[test]
    fn metrics_metric_only_lines_and_domains() {
        let r = read_text(
            Path::new("t"),
            "{\"interval\" : 1.000103288, \"core\" : \"S0-D0-C0\", \"aggregate-number\" : 2, \"counter-value\" : \"1234.000000\", \"unit\" : \"\", \"event\" : \"cpu_core/cycles/\", \"event-runtime\" : 1000, \"pcnt-running\" : 100.00, \"metric-value\" : \"2.280000\", \"metric-unit\" : \"GHz\"}\n\
             {\"interval\" : 1.000103288, \"core\" : \"S0-D0-C0\", \"metric-value\" : \"51.000000\", \"metric-unit\" : \"%  tma_frontend_bound\", \"metric-threshold\" : \"bad\"}\n\
             {\"counter-value\" : \"<not counted>\", \"unit\" : \"\", \"event\" : \"cycles\", \"cgroup\" : \"/user.slice\", \"event-runtime\" : 0, \"pcnt-running\" : 0.00, \"metric-value\" : \"0.000000\", \"metric-unit\" : \"\"}\n",
        )
        .unwrap();
        assert_eq!(r.rows[0].domain, "S0-D0-C0");
        assert_eq!(r.rows[0].value, Some(1234.0));
        assert_eq!(r.rows[1].domain, "/user.slice");
        assert_eq!(r.rows[1].value, None);
        let p: Vec<(&str, &str, Option<f64>, &str)> = r
            .printed
            .iter()
            .map(|m| {
                (
                    m.domain.as_str(),
                    m.event.as_str(),
                    m.value,
                    m.unit.as_str(),
                )
            })
            .collect();
        assert_eq!(
            p,
            [
                ("S0-D0-C0", "cpu_core/cycles/", Some(2.28), "GHz"),
                (
                    "S0-D0-C0",
                    "cpu_core/cycles/",
                    Some(51.0),
                    "% tma_frontend_bound"
                ),
                ("/user.slice", "cycles", Some(0.0), ""),
            ]
        );
        let rated: Vec<Option<&str>> = r.printed.iter().map(|m| m.threshold.as_deref()).collect();
        assert_eq!(rated, [None, Some("bad"), None]);
    }
}
