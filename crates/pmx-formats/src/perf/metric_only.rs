//! perf 6.1's `--metric-only` forms (`stat-display.c`:
//! `print_metric_headers`, `print_metric_only*`, `print_interval`): one
//! line per domain (the totals, each CPU with `-A`, each core, die,
//! socket or node), its metrics side by side under a header line of
//! their units.
//!
//! What perf puts in a line, counter by counter in event order: for a
//! counter that did not count (`<not counted>`, `<not supported>`, or no
//! running time in the interval) an empty column; for one that counted,
//! its shadow metric ([`crate::perf_shadow`]) unless it is a rate (`/sec`)
//! or `CPUs utilized`, which perf leaves out of this form, and with the
//! event's name before an `of all …` unit; then the `-M` metrics
//! (`%8.1f` with `UNIT  NAME`, `%8.2f` with the name). Text columns are
//! `%*s ` at least 20 wide (wider for a longer unit), `-x` columns the
//! metric's digits and the separator, JSON columns `{"metric-value" :
//! "V"}` objects on the domain's line.
//!
//! The header is perf's too, quirks included: text and `-x` headers list
//! the units of the shown metrics (`%20s ` each, even for a unit longer
//! than its column); the JSON header lists every unit the counters have
//! in one object (`/sec` and `CPUs utilized` included), counters apart
//! by `, `; and with an aggregation other than `-A`, perf lists only the
//! counters that feed a `-M` metric, so here only the `-M` metrics.

use super::{
    aggr_csv, aggr_json, aggr_text, json_str, metric_digits, metric_text, per_domain, text_footer,
    timestamp, Aggr, Line, PerfForm, PerfOptions,
};
use crate::perf_shadow::{shadow, Shadow};
use crate::report::{ReportMetric, ReportRow, RowStatus, StatReport};
use std::fmt::Write as _;

/// perf's `METRIC_ONLY_LEN`: the narrowest text column.
const COLUMN: usize = 20;

/// One metric column of a line: its unit (as the header names it) and
/// its printed value (empty when there is none); or (`summary`) perf's
/// `summary` cell, which its `-x` totals with `--summary` print before
/// each counter's columns.
#[derive(Default)]
struct Column {
    unit: String,
    value: String,
    summary: bool,
}

/// perf's `valid_only_metric`: rates and utilizations are left out.
fn shown(unit: &str) -> bool {
    !(unit.contains("/sec") || unit.contains("CPUs utilized"))
}

/// perf's `fixunit`: `of all …` units carry the event's name.
fn fix_unit(event: &str, unit: &str) -> String {
    if unit.starts_with("of all") {
        format!("{} {unit}", crate::perf_shadow::split_cgroup(event).0)
    } else {
        unit.to_string()
    }
}

/// A `-M` metric's unit as perf prints it: `UNIT  NAME`, or the name.
fn metric_label(m: &ReportMetric) -> String {
    if m.unit.is_empty() {
        m.name.clone()
    } else {
        format!("{}  {}", m.unit, m.name)
    }
}

/// The events in the order of their first row.
fn events(rows: &[ReportRow]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        if !out.contains(&r.event.as_str()) {
            out.push(&r.event);
        }
    }
    out
}

/// The domains in the order of their first row.
fn domains(rows: &[ReportRow]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        if !out.contains(&r.domain.as_str()) {
            out.push(&r.domain);
        }
    }
    if out.is_empty() {
        out.push("");
    }
    out
}

/// The printed columns of one domain's line.
fn columns(
    rows: &[ReportRow],
    metrics: &[ReportMetric],
    domain: &str,
    (wall_ns, summary): (Option<f64>, bool),
) -> Vec<Column> {
    let mut out = Vec::new();
    for event in events(rows) {
        let Some(row) = rows.iter().find(|r| r.event == event && r.domain == domain) else {
            continue;
        };
        if summary {
            out.push(Column {
                summary: true,
                ..Column::default()
            });
        }
        let run = row.running_ns.or(row.runtime_ns.map(|r| r as u64));
        let ok = row.value.is_some()
            && row.status != RowStatus::NotSupported
            && run.is_none_or(|r| r > 0)
            && row.enabled_ns.is_none_or(|e| e > 0);
        if !ok {
            out.push(Column::default());
            continue;
        }
        match shadow(rows, row, wall_ns) {
            Shadow::Value { fmt, value, unit } if shown(&unit) => out.push(Column {
                unit: fix_unit(event, &unit),
                value: fmt.print(value),
                summary: false,
            }),
            Shadow::Empty(unit) if shown(unit) => out.push(Column {
                unit: fix_unit(event, unit),
                ..Column::default()
            }),
            _ => {}
        }
    }
    // `-M` metrics whose unit is a rate or a utilization are left out
    // too (perf tests the `UNIT  NAME` it prints).
    for m in metrics
        .iter()
        .filter(|m| m.domain == domain && shown(&metric_label(m)))
    {
        out.push(match metric_text(m) {
            Some((value, unit)) => Column {
                unit,
                value,
                summary: false,
            },
            None => Column::default(),
        });
    }
    out
}

/// The units each counter names in perf's header (perf evaluates every
/// counter's shadow metric against the first domain's counts), then the
/// `-M` metrics'; `all`: with the units the lines leave out (JSON).
fn header_units(
    rows: &[ReportRow],
    metrics: &[ReportMetric],
    aggr: &Aggr,
    all: bool,
    wall_ns: Option<f64>,
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let first = domains(rows)[0];
    if matches!(aggr, Aggr::Cpu(_)) {
        for event in events(rows) {
            let Some(row) = rows.iter().find(|r| r.event == event && r.domain == first) else {
                continue;
            };
            let mut probe = row.clone();
            probe.value = Some(0.0);
            probe.status = RowStatus::Counted;
            let mut peers: Vec<ReportRow> = rows.to_vec();
            if let Some(p) = peers
                .iter_mut()
                .find(|r| r.event == event && r.domain == first)
            {
                *p = probe.clone();
            }
            let unit = match shadow(&peers, &probe, wall_ns) {
                // A rate's header is perf's unscaled `/sec` (its value is 0).
                Shadow::Value { unit, .. } if unit.ends_with("/sec") => "/sec".to_string(),
                Shadow::Value { unit, .. } => unit,
                Shadow::Empty(unit) => unit.to_string(),
                Shadow::None => continue,
            };
            if all || shown(&unit) {
                out.push(vec![fix_unit(event, &unit)]);
            }
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for m in metrics
        .iter()
        .filter(|m| m.domain == first || m.domain.is_empty())
    {
        if seen.contains(&m.name.as_str()) {
            continue;
        }
        seen.push(&m.name);
        let label = metric_label(m);
        if all || shown(&label) {
            out.push(vec![label]);
        }
    }
    out
}

/// perf's indentation of the header line (`aggr_header_lens`).
fn indent(aggr: &Aggr) -> usize {
    match aggr {
        Aggr::Core(..) => 24,
        Aggr::Die(..) => 18,
        Aggr::Socket(_) => 12,
        Aggr::Cpu(_) | Aggr::Node(_) => 6,
        Aggr::Thread(_) => 24,
        Aggr::Global | Aggr::Other(_) => 0,
    }
}

/// perf's `aggr_header_csv` (6.1: `die,cpus` and `socket,cpus` without
/// the trailing comma the others have).
fn csv_title(aggr: &Aggr) -> &'static str {
    match aggr {
        Aggr::Core(..) => "core,cpus,",
        Aggr::Die(..) => "die,cpus",
        Aggr::Socket(_) => "socket,cpus",
        Aggr::Node(_) => "node,",
        Aggr::Cpu(_) => "cpu,",
        Aggr::Thread(_) => "comm-pid,",
        Aggr::Global | Aggr::Other(_) => "",
    }
}

/// The `#  time` title of `-I`'s text header, per aggregation.
fn interval_title(aggr: &Aggr) -> &'static str {
    match aggr {
        Aggr::Node(_) => "#           time node   cpus",
        Aggr::Socket(_) => "#           time socket cpus",
        Aggr::Die(..) => "#           time die          cpus",
        Aggr::Core(..) => "#           time core            cpus",
        Aggr::Cpu(_) => "#           time CPU    ",
        Aggr::Thread(_) => "#           time             comm-pid",
        Aggr::Global | Aggr::Other(_) => "#           time",
    }
}

/// The header line; `interval`: `-I`'s (after its title, no indentation).
fn header(
    s: &mut String,
    report: &StatReport,
    o: &PerfOptions,
    aggr: &Aggr,
    interval: bool,
    wall_ns: Option<f64>,
) {
    let json = o.form == PerfForm::Json;
    let units = header_units(&report.rows, &report.metrics, aggr, json, wall_ns);
    match &o.form {
        PerfForm::Text => {
            if interval {
                s.push_str(interval_title(aggr));
                s.push(' ');
            } else {
                s.push_str(&" ".repeat(indent(aggr)));
            }
            for u in units.iter().flatten() {
                let _ = write!(s, "{u:>COLUMN$} ");
            }
        }
        PerfForm::Csv(sep) => {
            if interval {
                s.push_str(" time,");
            }
            s.push_str(csv_title(aggr));
            for u in units.iter().flatten() {
                let _ = write!(s, "{u}{sep}");
            }
        }
        PerfForm::Json => {
            s.push('{');
            if !interval {
                s.push_str(&" ".repeat(indent(aggr)));
            }
            let counters: Vec<String> = units
                .iter()
                .map(|us| {
                    us.iter()
                        .map(|u| format!("\"unit\" : \"{}\"", json_str(u)))
                        .collect()
                })
                .collect();
            s.push_str(&counters.join(", "));
            s.push('}');
        }
    }
    s.push('\n');
}

/// One domain's line (after the interval's time stamp).
fn line(s: &mut String, row: Option<&ReportRow>, cols: &[Column], o: &PerfOptions, aggr: &Aggr) {
    if let Some(row) = row.filter(|_| *aggr != Aggr::Global) {
        let l = Line {
            row,
            aggr: Aggr::of(&row.domain),
            nr: row.counters.filter(|n| *n > 0).unwrap_or(1),
            run: None,
            ena: None,
            ok: true,
            noise: None,
            metric: Shadow::None,
        };
        match &o.form {
            PerfForm::Text => aggr_text(s, &l, o),
            PerfForm::Csv(sep) => aggr_csv(s, &l, o, sep),
            PerfForm::Json => {
                if row.time.is_none() {
                    s.push('{');
                }
                aggr_json(s, &l, o);
            }
        }
    }
    for c in cols {
        if c.summary {
            if let PerfForm::Csv(sep) = &o.form {
                let _ = write!(s, "{:>16}{sep}", "summary");
            }
            continue;
        }
        match &o.form {
            PerfForm::Text => {
                let w = if COLUMN < c.unit.len() {
                    c.unit.len() + 1
                } else {
                    COLUMN
                };
                let _ = write!(s, "{:>w$} ", c.value);
            }
            PerfForm::Csv(sep) => {
                let _ = write!(s, "{}{sep}", metric_digits(&c.value));
            }
            PerfForm::Json => {
                let _ = write!(s, "{{\"metric-value\" : \"{}\"}}", metric_digits(&c.value));
            }
        }
    }
    s.push('\n');
}

/// The lines of `report` (one interval, or the totals); `header`: the
/// header line first (totals: always; intervals: the first and every
/// 25th).
pub(crate) fn body(
    s: &mut String,
    report: &StatReport,
    o: &PerfOptions,
    wall_ns: Option<f64>,
    header_line: bool,
) {
    let rows = per_domain(&report.rows);
    let time = rows
        .iter()
        .find_map(|r| r.time)
        .or(report.metrics.iter().find_map(|m| m.time));
    let aggr = rows.first().map_or(Aggr::Global, |r| Aggr::of(&r.domain));
    if o.form == PerfForm::Text && time.is_none() {
        let _ = write!(s, "\n Performance counter stats for {}:\n\n", o.target);
    }
    let mut rep = report.clone();
    rep.rows = rows;
    // After `-I`'s intervals (`--summary`) perf prints the totals
    // without the header.
    if header_line && !(time.is_none() && o.intervals) {
        header(s, &rep, o, &aggr, time.is_some(), wall_ns);
    }
    for d in domains(&rep.rows) {
        if let Some(t) = time {
            let _ = match &o.form {
                PerfForm::Text => write!(s, "{} ", timestamp(t, 6)),
                PerfForm::Csv(sep) => write!(s, "{}{sep}", timestamp(t, 6)),
                PerfForm::Json => write!(s, "{{\"interval\" : {}}}", timestamp(t, 0)),
            };
        }
        let summary = time.is_none() && o.summary && !o.no_csv_summary;
        let cols = columns(&rep.rows, &rep.metrics, d, (wall_ns, summary));
        let row = rep.rows.iter().find(|r| r.domain == d);
        line(s, row, &cols, o, &aggr);
    }
    if o.form == PerfForm::Text && time.is_none() {
        text_footer(s, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(domain: &str, event: &str, value: Option<f64>, unit: &str) -> ReportRow {
        let mut r = ReportRow::new(event, domain);
        r.value = value;
        r.unit = unit.into();
        r.running_ns = Some(1_000_000);
        r.enabled_ns = Some(1_000_000);
        if value.is_none() {
            r.status = RowStatus::NotSupported;
        }
        r
    }

    fn metric(domain: &str, name: &str, value: Option<f64>, unit: &str) -> ReportMetric {
        ReportMetric {
            time: None,
            name: name.into(),
            domain: domain.into(),
            value,
            unit: unit.into(),
            reliability: None,
            estimate: false,
            missing: None,
            repeats: Vec::new(),
        }
    }

    /// Hardware metrics, which this machine cannot count: the lines
    /// perf 6.1's `print_metric_only*` and `print_metric_header` write for
    /// `-a -A --metric-only -e task-clock,cycles,instructions,branches,branch-misses`
    /// (stat-display.c and stat-shadow.c of linux-source-6.1 6.1.187-1:
    /// `%8.3f` GHz, `%7.2f ` insn per cycle, `%7.2f%%` of all branches
    /// with the event's name before the unit, `%*s ` columns of 20 or
    /// the unit's length + 1; the header's `%20s `).
    #[test]
    fn hardware_metrics_in_perfs_columns() {
        let mut rows = Vec::new();
        for cpu in ["CPU0", "CPU1"] {
            rows.push(row(cpu, "task-clock", Some(100.0), "msec"));
            rows.push(row(cpu, "cycles", Some(250e6), ""));
            rows.push(row(cpu, "instructions", Some(500e6), ""));
            rows.push(row(cpu, "branches", Some(1e6), ""));
            rows.push(row(cpu, "branch-misses", Some(2.5e4), ""));
        }
        let report = StatReport {
            rows,
            ..StatReport::default()
        };
        let mut o = PerfOptions::new(PerfForm::Text);
        o.target = "'system wide'".into();
        o.elapsed = (0.1, 0.0);
        let mut s = String::new();
        body(&mut s, &report, &o, Some(1e8), true);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[3],
            "                       GHz       insn per cycle branch-misses of all branches "
        );
        assert_eq!(
            lines[4],
            "CPU0                      2.500                2.00                           2.50% "
        );
        let mut o = PerfOptions::new(PerfForm::Csv(";".into()));
        o.elapsed = (0.1, 0.0);
        let mut s = String::new();
        body(&mut s, &report, &o, Some(1e8), true);
        assert_eq!(
            s,
            "cpu,GHz;insn per cycle;branch-misses of all branches;\nCPU0;2.500;2.00;2.50;\nCPU1;2.500;2.00;2.50;\n"
        );
        o.form = PerfForm::Json;
        let mut s = String::new();
        body(&mut s, &report, &o, Some(1e8), true);
        let want = concat!(
            r#"{      "unit" : "CPUs utilized", "unit" : "GHz", "unit" : "insn per cycle", "unit" : "/sec", "unit" : "branch-misses of all branches"}"#,
            "\n",
            r#"{"cpu" : "0", {"metric-value" : "2.500"}{"metric-value" : "2.00"}{"metric-value" : "2.50"}"#,
            "\n"
        );
        assert!(s.starts_with(want), "{s}");
    }

    /// `-M` metrics: perf's `generic_metric` forms, `%8.1f` with `UNIT
    /// NAME`, `%8.2f` with the name; aggregated (here per socket) the
    /// header lists only them.
    #[test]
    fn m_metrics_are_columns() {
        let mut r = row("S0", "task-clock", Some(10.0), "msec");
        r.counters = Some(2);
        let report = StatReport {
            rows: vec![r],
            metrics: vec![
                metric("S0", "tma_retiring", Some(41.27), "%"),
                metric("S0", "IPC", None, ""),
                // Left out, as perf leaves out rates (`/sec  NAME`).
                metric("S0", "page_faults_per_second", Some(3.0), "/sec"),
            ],
            ..StatReport::default()
        };
        let mut o = PerfOptions::new(PerfForm::Csv(",".into()));
        let mut s = String::new();
        body(&mut s, &report, &o, Some(1e7), true);
        assert_eq!(s, "socket,cpus%  tma_retiring,IPC,\nS0,2,41.3,,\n");
        o.form = PerfForm::Text;
        let mut s = String::new();
        body(&mut s, &report, &o, Some(1e7), true);
        assert!(
            s.contains("\n                 %  tma_retiring                  IPC \nS0        2                 41.3                      \n"),
            "{s:?}"
        );
    }

    /// A counter that ran no time in an interval: an empty column (perf's
    /// `printout` with `run == 0`), in each form; `-I`'s JSON header.
    #[test]
    fn idle_intervals_have_empty_columns() {
        let mut a = row("", "task-clock", Some(0.0), "msec");
        a.running_ns = Some(0);
        a.time = Some(0.200385127);
        let mut b = row("", "page-faults", Some(0.0), "");
        b.running_ns = Some(0);
        b.time = a.time;
        let report = StatReport {
            rows: vec![a, b],
            ..StatReport::default()
        };
        let mut s = String::new();
        body(
            &mut s,
            &report,
            &PerfOptions::new(PerfForm::Text),
            Some(1e8),
            true,
        );
        assert_eq!(
            s,
            format!("#           time \n     0.200385127 {}\n", " ".repeat(42))
        );
        let mut s = String::new();
        body(
            &mut s,
            &report,
            &PerfOptions::new(PerfForm::Csv(",".into())),
            Some(1e8),
            false,
        );
        assert_eq!(s, "     0.200385127,,,\n");
        let mut s = String::new();
        body(
            &mut s,
            &report,
            &PerfOptions::new(PerfForm::Json),
            Some(1e8),
            true,
        );
        assert_eq!(
            s,
            "{}\n{\"interval\" : 0.200385127}{\"metric-value\" : \"\"}{\"metric-value\" : \"\"}\n"
        );
    }
}
