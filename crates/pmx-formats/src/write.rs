//! Counting reports: table, CSV, JSON.
//!
//! CSV columns (`-x SEP`), one line per event and domain, no header unless
//! asked for:
//!
//! | # | column | meaning |
//! |---|--------|---------|
//! | 1 | domain | empty for totals; `CPU3`, `S0-C1`, `S0`, `tid 123` |
//! | 2 | value | scaled value (raw × enabled / running, × the event's scale); empty when not counted |
//! | 3 | unit | `msec`, sysfs unit, or empty |
//! | 4 | event | the event as typed |
//! | 5 | status | `counted`, `estimate`, `not-counted`, `not-supported` |
//! | 6 | running_pct | share of the enabled time the event ran, in % |
//! | 7 | raw | the raw count |
//! | 8 | enabled_ns | time enabled |
//! | 9 | running_ns | time running |
//! | 10 | stddev_pct | with `-r`: relative standard deviation in %, else empty |
//! | 11 | reason | why not counted / not supported |

use crate::model::{
    Domain, EventStatus, EventTable, Exit, MetricLine, Row, RunCount, RunMetric, Spread,
    ESTIMATE_BELOW,
};
use crate::numbers::{push_fixed, push_num, readable, readable_measure};
use crate::report::{Provenance, ReportMetric, ReportRow, RowStatus, StatReport};
use serde_json::json;
use std::fmt::Write as _;
use std::time::Duration;

/// Everything a counting report shows.
#[derive(Debug, Clone)]
pub struct StatView<'a> {
    /// What was measured, for the heading (`'sleep 1'`, `system wide`).
    pub target: String,
    /// The plan (event names, units).
    pub plan: &'a dyn EventTable,
    /// Status per planned event.
    pub status: Vec<EventStatus>,
    /// Rows (mean over runs with `-r`).
    pub rows: Vec<Row>,
    /// With `-r`: spread per row, same order.
    pub spreads: Vec<Option<Spread>>,
    /// With `-r`: every run's values per row, same order (empty without
    /// repeats); the JSON document keeps them as each event's `repeats`.
    pub repeats: Vec<Vec<RunCount>>,
    /// Runs made.
    pub runs: usize,
    /// Wall-clock time (mean over runs).
    pub elapsed: Duration,
    /// How the command ended.
    pub exit: Option<Exit>,
    /// Cut short by Ctrl-C.
    pub interrupted: bool,
    /// Extra lines for the reader (e.g. "3 runs, one per group set").
    pub notes: Vec<String>,
    /// Derived metrics (`-M`), computed from the rows.
    pub metrics: Vec<MetricLine>,
    /// With `-r`: every run's value per metric, same order as `metrics`
    /// (empty without repeats).
    pub metric_repeats: Vec<Vec<RunMetric>>,
}

/// The columns of interval CSV; totals CSV has the same without `time`.
pub const INTERVAL_COLUMNS: [&str; 12] = [
    "time",
    "domain",
    "value",
    "unit",
    "event",
    "status",
    "running_pct",
    "raw",
    "enabled_ns",
    "running_ns",
    "stddev_pct",
    "reason",
];

/// The words of the `status` column.
pub const STATUS_WORDS: [&str; 7] = [
    "counted",
    "estimate",
    "not-counted",
    "not-supported",
    "metric",
    "metric-estimate",
    "metric-missing",
];

/// A metric line in the CSV columns (without `time`).
fn metric_fields(m: &MetricLine) -> [String; 11] {
    [
        m.domain.clone(),
        m.value.map(crate::numbers::num).unwrap_or_default(),
        m.unit.clone(),
        m.name.clone(),
        metric_status(m).to_string(),
        m.reliability
            .map(|x| format!("{:.2}", x * 100.0))
            .unwrap_or_default(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        m.missing.clone().unwrap_or_default(),
    ]
}

/// The status word of a metric line.
fn metric_status(m: &MetricLine) -> &'static str {
    match (m.value, m.estimate) {
        (None, _) => "metric-missing",
        (Some(_), true) => "metric-estimate",
        (Some(_), false) => "metric",
    }
}

/// The status word of a row.
fn row_status(status: &[EventStatus], row: &Row) -> &'static str {
    match &status[row.event] {
        EventStatus::NotSupported(_) => "not-supported",
        EventStatus::NotCounted(_) => "not-counted",
        EventStatus::Counted if row.value.is_none() => "not-counted",
        EventStatus::Counted if row.is_estimate() => "estimate",
        EventStatus::Counted => "counted",
    }
}

/// Why a row has no value (empty when it has one).
fn row_reason<'a>(status: &'a [EventStatus], row: &Row, never_ran: &'a str) -> &'a str {
    match &status[row.event] {
        EventStatus::NotSupported(r) | EventStatus::NotCounted(r) => r.as_str(),
        EventStatus::Counted if row.value.is_none() => never_ran,
        EventStatus::Counted => "",
    }
}

fn status_word(report: &StatView, row: &Row) -> &'static str {
    row_status(&report.status, row)
}

fn reason(report: &StatView, row: &Row) -> String {
    row_reason(&report.status, row, "never ran").to_string()
}

/// One CSV field, quoted when it holds the separator, a quote or a newline.
fn csv_field(f: &str, sep: &str) -> String {
    if f.contains(sep) || f.contains('"') || f.contains('\n') {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

/// A value as the table shows it: counts as grouped whole numbers, values
/// with a unit with two decimals.
fn reading_text(v: f64, unit: Option<&str>) -> String {
    match unit {
        Some(u) if !u.is_empty() => readable_measure(for_reading(v, unit)),
        _ => readable(for_reading(v, unit)),
    }
}

/// A value rounded for the table: counts to whole numbers, values with a
/// unit (msec, J, MiB…) to two decimals.
fn for_reading(v: f64, unit: Option<&str>) -> f64 {
    match unit {
        Some(u) if !u.is_empty() => (v * 100.0).round() / 100.0,
        _ => v.round(),
    }
}

/// The readable table (for stderr).
pub fn table(report: &StatView) -> String {
    let mut s = String::new();
    let runs = if report.runs > 1 {
        format!(" ({} runs)", report.runs)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "\n Performance counter stats for {}{runs}:\n",
        report.target
    );
    let name_w = (0..report.plan.len())
        .map(|i| report.plan.name(i).len())
        .max()
        .unwrap_or(10)
        .clamp(10, 40);
    let dom_w = report
        .rows
        .iter()
        .map(|r| r.domain.label().len())
        .max()
        .unwrap_or(0);
    let mut footnotes: Vec<String> = Vec::new();
    let mut reason_counts: std::collections::HashMap<String, usize> = Default::default();
    for r in &report.rows {
        *reason_counts.entry(reason(report, r)).or_default() += 1;
    }
    for (i, row) in report.rows.iter().enumerate() {
        let ev = event_of(report.plan, row.event);
        let dom = if dom_w > 0 {
            format!("{:<dom_w$}  ", row.domain.label())
        } else {
            String::new()
        };
        let unit = ev.unit.unwrap_or_default().to_string();
        let word = status_word(report, row);
        let value = match (word, row.value) {
            ("not-supported", _) => "<not supported>".to_string(),
            (_, None) => "<not counted>".to_string(),
            (_, Some(v)) => reading_text(v, ev.unit),
        };
        let mut tail = String::new();
        if let Some(share) = row.running_share.filter(|_| row.value.is_some()) {
            let _ = write!(tail, "{:>6.1}% ran", share * 100.0);
            if share < ESTIMATE_BELOW {
                tail.push_str("  (estimate: scaled from a partial count)");
            }
        }
        if let Some(Some(sp)) = report.spreads.get(i) {
            let _ = write!(tail, "  ± {:.2}%", sp.relative * 100.0);
        }
        let why = reason(report, row);
        if !why.is_empty() {
            // A reason shared by several rows is printed once, below.
            let shared = reason_counts.get(&why).is_some_and(|&n| n > 1);
            if shared {
                let n = match footnotes.iter().position(|f| *f == why) {
                    Some(i) => i + 1,
                    None => {
                        footnotes.push(why.clone());
                        footnotes.len()
                    }
                };
                let _ = write!(tail, "  [{n}]");
            } else {
                let _ = write!(tail, "  {why}");
            }
        }
        let _ = writeln!(
            s,
            "  {dom}{value:>20} {unit:<5} {:<name_w$}  {tail}",
            ev.name
        );
    }
    for (n, f) in footnotes.iter().enumerate() {
        let _ = writeln!(s, "\n  [{}] {f}", n + 1);
    }
    table_metrics(&mut s, &report.metrics);
    let _ = writeln!(
        s,
        "\n {:>15.9} seconds time elapsed",
        report.elapsed.as_secs_f64()
    );
    if report.interrupted {
        let _ = writeln!(s, " (interrupted: counts cover the time until the stop)");
    }
    for n in &report.notes {
        let _ = writeln!(s, " {n}");
    }
    s
}

/// The metric lines of the table.
fn table_metrics(s: &mut String, metrics: &[MetricLine]) {
    if metrics.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let mw = metrics
        .iter()
        .map(|m| m.name.len())
        .max()
        .unwrap_or(10)
        .clamp(10, 40);
    for m in metrics {
        let dom = if m.domain.is_empty() {
            String::new()
        } else {
            format!("{}  ", m.domain)
        };
        match m.value {
            Some(v) => {
                let rel = match m.reliability {
                    Some(r) if m.estimate => {
                        format!("  (estimate: its inputs ran {:.1}% of the time)", r * 100.0)
                    }
                    Some(r) => format!("  (inputs ran {:.1}%)", r * 100.0),
                    None => String::new(),
                };
                let _ = writeln!(
                    s,
                    "  {dom}{:>20} {:<mw$} {}{rel}",
                    format!("{v:.3}"),
                    m.name,
                    m.unit
                );
            }
            None => {
                let why = m.missing.as_deref().unwrap_or("");
                let _ = writeln!(s, "  {dom}{:>20} {:<mw$}  {why}", "<not computed>", m.name);
            }
        }
    }
}

/// CSV with separator `sep` (columns in the module documentation).
pub fn csv(report: &StatView, sep: &str, header: bool) -> String {
    let mut s = String::new();
    if header {
        let _ = writeln!(s, "{}", INTERVAL_COLUMNS[1..].join(sep));
    }
    for (i, row) in report.rows.iter().enumerate() {
        let ev = event_of(report.plan, row.event);
        let fields = [
            row.domain.label(),
            row.value.map(crate::numbers::num).unwrap_or_default(),
            ev.unit.unwrap_or_default().to_string(),
            ev.name.to_string(),
            status_word(report, row).to_string(),
            row.running_share
                .map(|x| format!("{:.2}", x * 100.0))
                .unwrap_or_default(),
            row.count.value.to_string(),
            row.count.enabled.to_string(),
            row.count.running.to_string(),
            report
                .spreads
                .get(i)
                .copied()
                .flatten()
                .map(|sp| format!("{:.2}", sp.relative * 100.0))
                .unwrap_or_default(),
            reason(report, row),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f, sep)).collect();
        let _ = writeln!(s, "{}", line.join(sep));
    }
    for m in &report.metrics {
        let line: Vec<String> = metric_fields(m).iter().map(|f| csv_field(f, sep)).collect();
        let _ = writeln!(s, "{}", line.join(sep));
    }
    s
}

/// `entry` with a `repeats` list when there are runs to keep.
fn with_repeats<T: serde::Serialize>(
    mut entry: serde_json::Value,
    repeats: Option<&Vec<T>>,
) -> serde_json::Value {
    if let (Some(obj), Some(reps)) = (entry.as_object_mut(), repeats) {
        if !reps.is_empty() {
            obj.insert("repeats".into(), json!(reps));
        }
    }
    entry
}

/// The report as one JSON document: with `-r`, every event and metric
/// also keeps each run's values (`repeats`: value, raw count, enabled and
/// running ns; a metric's value and reliability).
pub fn json(report: &StatView) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = report
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let ev = event_of(report.plan, row.event);
            let entry = json!({
                "event": ev.name,
                "domain": row.domain,
                "value": row.value,
                "unit": ev.unit,
                "status": status_word(report, row),
                "reason": reason(report, row),
                "raw": row.count.value,
                "time_enabled_ns": row.count.enabled,
                "time_running_ns": row.count.running,
                "running_share": row.running_share,
                "estimate": row.is_estimate(),
                "counters": row.instances,
                "group": ev.group,
                "spread": report.spreads.get(i).copied().flatten(),
            });
            with_repeats(entry, report.repeats.get(i))
        })
        .collect();
    let metrics: Vec<serde_json::Value> = report
        .metrics
        .iter()
        .enumerate()
        .map(|(i, m)| with_repeats(json!(m), report.metric_repeats.get(i)))
        .collect();
    json!({
        "target": report.target,
        "runs": report.runs,
        "elapsed_s": report.elapsed.as_secs_f64(),
        "exit": report.exit,
        "interrupted": report.interrupted,
        "events": rows,
        "metrics": metrics,
        "notes": report.notes,
    })
}

/// One interval's rows, for `-I` output.
#[derive(Debug, Clone)]
pub struct IntervalRows<'a> {
    /// Seconds since the start, or since the epoch with absolute
    /// timestamps.
    pub time: f64,
    /// The plan (event names, units).
    pub plan: &'a dyn EventTable,
    /// Status per planned event.
    pub status: &'a [EventStatus],
    /// Rows of this interval (values are the interval's deltas).
    pub rows: &'a [Row],
    /// Metrics over this interval (`-M`).
    pub metrics: &'a [MetricLine],
}

impl IntervalRows<'_> {
    fn word(&self, row: &Row) -> &'static str {
        row_status(self.status, row)
    }

    fn why(&self, row: &Row) -> &str {
        row_reason(self.status, row, "did not run in this interval")
    }
}

/// The header line of interval CSV.
pub fn interval_csv_header(sep: &str) -> String {
    format!("{}\n", INTERVAL_COLUMNS.join(sep))
}

/// Interval rows as CSV: the stat columns with `time` first.
///
/// For a stream of intervals, keep one [`IntervalCsv`] instead: it builds
/// each row's fixed fields once.
pub fn interval_csv(iv: &IntervalRows, sep: &str) -> String {
    IntervalCsv::new(sep).format(iv).to_string()
}

/// What a stream writer keeps per row: parts built once from each row's
/// event and domain, rebuilt only when the rows change (number, order,
/// events or domains).
#[derive(Debug, Clone, Default)]
struct RowCache<T> {
    /// The (event, domain) of each row the parts were built for.
    keys: Vec<(usize, Domain)>,
    parts: Vec<T>,
}

impl<T> RowCache<T> {
    /// The parts for `rows`, built by `build` if the rows changed.
    fn refresh(&mut self, rows: &[Row], build: impl FnMut(&Row) -> T) -> &[T] {
        let same = self.keys.len() == rows.len()
            && self
                .keys
                .iter()
                .zip(rows)
                .all(|(k, r)| k.0 == r.event && k.1 == r.domain);
        if !same {
            self.keys = rows.iter().map(|r| (r.event, r.domain.clone())).collect();
            self.parts = rows.iter().map(build).collect();
        }
        &self.parts
    }
}

/// Interval CSV for a stream of intervals, written into one reused buffer.
///
/// At `-I 10` on many CPUs this runs thousands of rows a second, so each
/// row's fixed fields (domain, unit, event name, quoted as they must be)
/// are built once and kept for as long as the rows keep their order, and
/// numbers are written without `core::fmt`. The bytes are those of
/// [`interval_csv`].
#[derive(Debug, Clone)]
pub struct IntervalCsv {
    sep: String,
    /// Numbers and status words never need quoting with this separator.
    plain: bool,
    /// Per row: the domain field, and `sep unit sep event sep`.
    fixed: RowCache<(String, String)>,
    /// The formatted interval, reused.
    buf: String,
    /// The time and one number, reused.
    time: String,
    field: String,
}

impl IntervalCsv {
    /// A writer for separator `sep`.
    pub fn new(sep: &str) -> IntervalCsv {
        let risky = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '"');
        IntervalCsv {
            sep: sep.to_string(),
            plain: !sep.is_empty() && !sep.contains(risky) && !sep.contains('\n'),
            fixed: RowCache::default(),
            buf: String::new(),
            time: String::new(),
            field: String::new(),
        }
    }

    /// One interval's rows (and metric lines), each line complete.
    pub fn format(&mut self, iv: &IntervalRows) -> &str {
        let sep = self.sep.as_str();
        let fixed = self.fixed.refresh(iv.rows, |row| {
            let ev = event_of(iv.plan, row.event);
            let mut domain = String::new();
            push_csv_field(&mut domain, &row.domain.label(), sep);
            let mut mid = String::from(sep);
            push_csv_field(&mut mid, ev.unit.unwrap_or(""), sep);
            mid.push_str(sep);
            push_csv_field(&mut mid, ev.name, sep);
            mid.push_str(sep);
            (domain, mid)
        });
        let s = &mut self.buf;
        s.clear();
        self.time.clear();
        push_fixed(&mut self.time, iv.time, 1_000_000);
        let time = self.time.as_str();
        let field = &mut self.field;
        let mut num = itoa::Buffer::new();
        // A field that is plain text unless this separator makes it need
        // quotes.
        let plain = self.plain;
        let push = |s: &mut String, f: &str| {
            if plain {
                s.push_str(f);
            } else {
                push_csv_field(s, f, sep);
            }
        };
        for (row, (domain, mid)) in iv.rows.iter().zip(fixed) {
            push(s, time);
            s.push_str(sep);
            s.push_str(domain);
            s.push_str(sep);
            if let Some(v) = row.value {
                field.clear();
                push_num(field, v);
                push(s, field);
            }
            s.push_str(mid);
            push(s, iv.word(row));
            s.push_str(sep);
            if let Some(x) = row.running_share {
                field.clear();
                push_fixed(field, x * 100.0, 100);
                push(s, field);
            }
            for n in [row.count.value, row.count.enabled, row.count.running] {
                s.push_str(sep);
                push(s, num.format(n));
            }
            s.push_str(sep);
            s.push_str(sep);
            push_csv_field(s, iv.why(row), sep);
            s.push('\n');
        }
        for m in iv.metrics {
            push(s, time);
            for f in metric_fields(m) {
                s.push_str(sep);
                push_csv_field(s, &f, sep);
            }
            s.push('\n');
        }
        &self.buf
    }
}

/// Append `f` to `s` as a CSV field, quoted only when it must be.
fn push_csv_field(s: &mut String, f: &str, sep: &str) {
    if f.contains(sep) || f.contains('"') || f.contains('\n') {
        s.push('"');
        s.push_str(&f.replace('"', "\"\""));
        s.push('"');
    } else {
        s.push_str(f);
    }
}

/// Interval rows as JSON lines.
///
/// For a stream of intervals, keep one [`IntervalJson`] instead.
pub fn interval_json(iv: &IntervalRows) -> String {
    IntervalJson::new().format(iv).to_string()
}

/// Interval JSON lines for a stream of intervals, written into one reused
/// buffer: each row's fixed members (domain, its label, event, unit) are
/// serialized once and kept while the rows keep their order; the rest is
/// written member by member, numbers as `serde_json` writes them (`ryu`
/// for floats, `null` for a missing or non-finite value). Members in
/// alphabetical order, one object per line; the bytes are those of
/// `serde_json::json!` with the same members. Metric lines (`-M`) are
/// built with `serde_json` as before.
#[derive(Debug, Clone, Default)]
pub struct IntervalJson {
    /// Per row: `{"domain":…,"domain_label":…,"estimate":`,
    /// `,"event":…,"raw":` and `,"unit":…,"value":`.
    fixed: RowCache<(String, String, String)>,
    buf: String,
}

impl IntervalJson {
    /// An empty writer.
    pub fn new() -> IntervalJson {
        IntervalJson::default()
    }

    /// One interval's rows (and metric lines), each line complete.
    pub fn format(&mut self, iv: &IntervalRows) -> &str {
        let fixed = self.fixed.refresh(iv.rows, |row| {
            let ev = event_of(iv.plan, row.event);
            let head = format!(
                "{{\"domain\":{},\"domain_label\":{},\"estimate\":",
                json!(row.domain),
                json!(row.domain.label())
            );
            let event = format!(",\"event\":{},\"raw\":", json!(ev.name));
            let unit = format!(",\"unit\":{},\"value\":", json!(ev.unit));
            (head, event, unit)
        });
        let s = &mut self.buf;
        s.clear();
        let mut int = itoa::Buffer::new();
        let mut float = ryu::Buffer::new();
        let mut push_f64 = |s: &mut String, v: Option<f64>| match v {
            Some(v) if v.is_finite() => s.push_str(float.format_finite(v)),
            _ => s.push_str("null"),
        };
        for (row, (head, event, unit)) in iv.rows.iter().zip(fixed) {
            s.push_str(head);
            s.push_str(if row.is_estimate() { "true" } else { "false" });
            s.push_str(event);
            s.push_str(int.format(row.count.value));
            s.push_str(",\"reason\":");
            push_json_str(s, iv.why(row));
            s.push_str(",\"running_share\":");
            push_f64(s, row.running_share);
            s.push_str(",\"status\":");
            push_json_str(s, iv.word(row));
            s.push_str(",\"time\":");
            push_f64(s, Some(iv.time));
            s.push_str(",\"time_enabled_ns\":");
            s.push_str(int.format(row.count.enabled));
            s.push_str(",\"time_running_ns\":");
            s.push_str(int.format(row.count.running));
            s.push_str(unit);
            push_f64(s, row.value);
            s.push_str("}\n");
        }
        for m in iv.metrics {
            let line = json!({
                "time": iv.time,
                "kind": "metric",
                "domain_label": m.domain,
                "event": m.name,
                "value": m.value,
                "unit": m.unit,
                "status": metric_status(m),
                "reliability": m.reliability,
                "estimate": m.estimate,
                "missing": m.missing,
            });
            let _ = writeln!(s, "{line}");
        }
        &self.buf
    }
}

/// `v` as a JSON string, escaped as `serde_json` escapes it, appended to
/// `s` without allocating for plain text.
fn push_json_str(s: &mut String, v: &str) {
    if v.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7f)
    {
        s.push('"');
        s.push_str(v);
        s.push('"');
    } else {
        let _ = write!(s, "{}", json!(v));
    }
}

/// Interval rows as a readable table (perf's `-I` layout plus the running
/// share).
pub fn interval_table(iv: &IntervalRows) -> String {
    let mut s = String::new();
    let name_w = (0..iv.plan.len())
        .map(|i| iv.plan.name(i).len())
        .max()
        .unwrap_or(10)
        .clamp(10, 40);
    for row in iv.rows {
        let ev = event_of(iv.plan, row.event);
        let value = match (iv.word(row), row.value) {
            ("not-supported", _) => "<not supported>".to_string(),
            (_, None) => "<not counted>".to_string(),
            (_, Some(v)) => reading_text(v, ev.unit),
        };
        let share = row
            .running_share
            .filter(|_| row.value.is_some())
            .map(|x| format!("{:>6.1}%", x * 100.0))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{:>14.6} {:<8} {value:>20} {:<5} {:<name_w$} {share}",
            iv.time,
            row.domain.label(),
            ev.unit.unwrap_or_default().to_string(),
            ev.name
        );
    }
    for m in iv.metrics {
        let value = match m.value {
            Some(v) => format!("{v:.3}"),
            None => "<not computed>".to_string(),
        };
        let tail = match (&m.missing, m.estimate) {
            (Some(why), _) => format!("  {why}"),
            (None, true) => "  (estimate)".to_string(),
            (None, false) => String::new(),
        };
        let _ = writeln!(
            s,
            "{:>14.6} {:<8} {value:>20} {:<5} {:<name_w$}{tail}",
            iv.time, m.domain, m.unit, m.name
        );
    }
    s
}

/// One planned event as the writers see it.
#[derive(Debug, Clone, Copy)]
struct EventRef<'a> {
    name: &'a str,
    unit: Option<&'a str>,
    group: usize,
}

fn event_of(plan: &dyn EventTable, i: usize) -> EventRef<'_> {
    EventRef {
        name: plan.name(i),
        unit: plan.unit(i),
        group: plan.group(i),
    }
}

/// One row as the files state it: what a reader gives back.
fn report_row(
    plan: &dyn EventTable,
    status: &[EventStatus],
    row: &Row,
    never_ran: &str,
) -> ReportRow {
    let ev = event_of(plan, row.event);
    let mut r = ReportRow::new(ev.name, &row.domain.label());
    r.value = row.value;
    r.unit = ev.unit.unwrap_or_default().to_string();
    r.status = RowStatus::from_word(row_status(status, row)).unwrap_or(RowStatus::Counted);
    r.reason = row_reason(status, row, never_ran).to_string();
    r.raw = Some(row.count.value);
    r.enabled_ns = Some(row.count.enabled);
    r.running_ns = Some(row.count.running);
    r.running_pct = row.running_share.map(|x| x * 100.0);
    r
}

fn report_metric(m: &MetricLine, time: Option<f64>) -> ReportMetric {
    ReportMetric {
        time,
        name: m.name.clone(),
        domain: m.domain.clone(),
        value: m.value,
        unit: m.unit.clone(),
        reliability: m.reliability,
        estimate: m.estimate,
        missing: m.missing.clone(),
        repeats: Vec::new(),
    }
}

impl StatView<'_> {
    /// The report these writers put in a file: what the readers give back
    /// from pmx's JSON document (its CSV states the rows and metrics only).
    pub fn to_report(&self) -> StatReport {
        let rows = self.rows.iter().enumerate().map(|(i, row)| {
            let mut r = report_row(self.plan, &self.status, row, "never ran");
            r.spread = self.spreads.get(i).copied().flatten();
            r.stddev_pct = r.spread.map(|sp| sp.relative * 100.0);
            r.counters = Some(row.instances);
            r.group = Some(self.plan.group(row.event));
            r.repeats = self.repeats.get(i).cloned().unwrap_or_default();
            r
        });
        StatReport {
            provenance: Provenance {
                command: Some(self.target.clone()),
                ..Provenance::default()
            },
            runs: Some(self.runs),
            elapsed_s: Some(self.elapsed.as_secs_f64()),
            exit: self.exit,
            interrupted: Some(self.interrupted),
            notes: self.notes.clone(),
            rows: rows.collect(),
            metrics: self
                .metrics
                .iter()
                .enumerate()
                .map(|(i, m)| ReportMetric {
                    repeats: self.metric_repeats.get(i).cloned().unwrap_or_default(),
                    ..report_metric(m, None)
                })
                .collect(),
        }
    }
}

impl IntervalRows<'_> {
    /// This interval's rows and metric lines as the files state them.
    pub fn to_report(&self) -> StatReport {
        let time = Some(self.time);
        let rows = self.rows.iter().map(|row| {
            let mut r = report_row(self.plan, self.status, row, "did not run in this interval");
            r.time = time;
            r
        });
        StatReport {
            rows: rows.collect(),
            metrics: self
                .metrics
                .iter()
                .map(|m| report_metric(m, time))
                .collect(),
            ..StatReport::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventList;
    use pmx_model::count::Count;

    /// Interval CSV as the columns say, one field at a time through the
    /// general CSV quoting: what `IntervalCsv` must write.
    fn reference(iv: &IntervalRows, sep: &str) -> String {
        let mut s = String::new();
        for row in iv.rows {
            let ev = event_of(iv.plan, row.event);
            let fields = [
                format!("{:.6}", iv.time),
                row.domain.label(),
                row.value
                    .map(|v| {
                        if v.fract() == 0.0 {
                            format!("{}", v as i64)
                        } else {
                            format!("{v:.6}")
                        }
                    })
                    .unwrap_or_default(),
                ev.unit.unwrap_or_default().to_string(),
                ev.name.to_string(),
                iv.word(row).to_string(),
                row.running_share
                    .map(|x| format!("{:.2}", x * 100.0))
                    .unwrap_or_default(),
                row.count.value.to_string(),
                row.count.enabled.to_string(),
                row.count.running.to_string(),
                String::new(),
                iv.why(row).to_string(),
            ];
            let line: Vec<String> = fields.iter().map(|f| csv_field(f, sep)).collect();
            s.push_str(&line.join(sep));
            s.push('\n');
        }
        s
    }

    /// Three events (one with a unit, one whose name needs quoting and
    /// escaping, one not supported with a reason that does too), their
    /// statuses, and three intervals of rows on two CPUs (as pmx's per-CPU
    /// aggregation makes them: value scaled by enabled / running and the
    /// event's scale, none when it never ran), the last with fewer rows
    /// (the cached fields must follow).
    fn fixture() -> (EventList, Vec<EventStatus>, Vec<Vec<Row>>) {
        let plan = EventList {
            events: vec![
                ("task-clock".to_string(), Some("msec".to_string()), 0),
                ("faults, \"odd\"\tname\\".to_string(), None, 0),
                ("gone".to_string(), Some("µs".to_string()), 0),
            ],
        };
        let scale = [1e-6, 1.0, 1.0];
        let status = vec![
            EventStatus::Counted,
            EventStatus::Counted,
            EventStatus::NotSupported("no \"such\" event; here\n\u{1}".into()),
        ];
        let row = |event: usize, cpu, value, running| {
            let count = Count {
                value,
                enabled: 10_000_000,
                running,
            };
            Row {
                event,
                domain: Domain::Cpu { cpu },
                count,
                value: count
                    .scaled()
                    .filter(|_| running > 0)
                    .map(|v| v * scale[event]),
                running_share: count.running_share(),
                instances: 1,
            }
        };
        let intervals = vec![
            vec![
                row(0, 0, 10_001_234, 10_000_000),
                row(0, 1, 9_999_999, 10_000_000),
                row(1, 0, 7, 5_000_000),
                row(1, 1, 0, 0),
            ],
            vec![
                row(0, 0, 10_000_000, 10_000_000),
                row(0, 1, 1, 10_000_000),
                row(1, 0, 12, 10_000_000),
                row(1, 1, 3, 10_000_000),
            ],
            vec![row(0, 0, 5_000_000, 10_000_000), row(1, 0, 4, 10_000_000)],
        ];
        (plan, status, intervals)
    }

    #[test]
    fn interval_csv_matches_the_columns_for_any_separator() {
        let (plan, status, intervals) = fixture();
        for sep in [",", ";", "\t", " | ", ".", "-", "0", "x"] {
            let mut csv = IntervalCsv::new(sep);
            for (k, rows) in intervals.iter().enumerate() {
                let iv = IntervalRows {
                    time: 0.01 * (k + 1) as f64 + 1e-7,
                    plan: &plan,
                    status: &status,
                    rows,
                    metrics: &[],
                };
                let want = reference(&iv, sep);
                assert_eq!(csv.format(&iv), want, "separator {sep:?}, interval {k}");
                assert_eq!(interval_csv(&iv, sep), want);
            }
        }
    }

    /// The rows as `serde_json::json!` writes them: what `IntervalJson`
    /// must write (metric lines are `json!` in both).
    fn reference_json(iv: &IntervalRows) -> String {
        let mut s = String::new();
        for row in iv.rows {
            let ev = event_of(iv.plan, row.event);
            let line = json!({
                "time": iv.time,
                "domain": row.domain,
                "domain_label": row.domain.label(),
                "event": ev.name,
                "value": row.value,
                "unit": ev.unit,
                "status": iv.word(row),
                "reason": iv.why(row),
                "raw": row.count.value,
                "time_enabled_ns": row.count.enabled,
                "time_running_ns": row.count.running,
                "running_share": row.running_share,
                "estimate": row.is_estimate(),
            });
            let _ = writeln!(s, "{line}");
        }
        s
    }

    #[test]
    fn interval_json_matches_serde_json() {
        let (plan, status, intervals) = fixture();
        let mut json = IntervalJson::new();
        for (k, rows) in intervals.iter().enumerate() {
            let mut rows = rows.clone();
            // A value no count gives, written as serde_json writes it.
            rows[0].value = Some(f64::NAN);
            for time in [0.01 * (k + 1) as f64, 1.7e9 + 0.123456] {
                let iv = IntervalRows {
                    time,
                    plan: &plan,
                    status: &status,
                    rows: &rows,
                    metrics: &[],
                };
                let want = reference_json(&iv);
                assert_eq!(json.format(&iv), want, "interval {k}");
                assert_eq!(interval_json(&iv), want);
                for line in want.lines() {
                    let _: serde_json::Value = serde_json::from_str(line).unwrap();
                }
            }
        }
    }
}
