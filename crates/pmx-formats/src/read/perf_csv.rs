//! perf stat's `-x SEP` lines, as perf 3 to 6 writes them:
//!
//! `[time,][label,[cpus,]]value,unit,event,[cgroup,][noise%,]run_time,
//! pct_running[,metric_value,metric_unit]`
//!
//! The time of `-I` (nine decimals); the label of `-A` (`CPU3`), of
//! `--per-core/-socket/-die/-node/-cache` (`S0-D0-C1`, then the number
//! of CPUs) and of `--per-thread` (`comm-pid`); the cgroup of `-G`; the
//! spread of `-r` (`0.50%`); the metric perf printed, also on lines of
//! their own (`1.000103288,,,,,,51.0,%  tma_frontend_bound`), kept in
//! [`StatReport::printed`]. perf 3's lines stop after the event.

use super::perf_fields::{label, metric_with_decimals, number, time_stamp, Label};
use crate::report::{PrintedMetric, ReportRow, RowStatus, SourceFormat, StatReport, Tool};

fn value_like(s: &str) -> bool {
    number(s).is_some() || super::num(s).is_some() || s.starts_with("<not ")
}

fn num_or_empty(s: &str) -> bool {
    s.is_empty() || super::num(s).is_some()
}

/// Read one perf `-x` line (already split) into `report`; false when it
/// is not one.
pub(crate) fn line(report: &mut StatReport, f: &[&str]) -> bool {
    let mut i = 0;
    let time = f.first().and_then(|s| time_stamp(s));
    if time.is_some() && f.len() > 3 {
        i = 1;
    }
    let mut domain = String::new();
    if let Some(kind) = f.get(i).and_then(|s| label(s)) {
        let nr = kind == Label::Topology && f.get(i + 1).is_some_and(|s| s.parse::<u32>().is_ok());
        let at = i + 1 + usize::from(nr);
        if f.get(at).is_some_and(|s| s.is_empty() || value_like(s)) {
            domain = f[i].to_string();
            i = at;
        }
    }
    let rest = &f[i.min(f.len())..];
    if rest.len() >= 5 && rest[..3].iter().all(|s| s.is_empty()) {
        return metric_only(report, time, domain, rest);
    }
    if rest.len() < 3 || !value_like(rest[0]) || rest[2].is_empty() || value_like(rest[2]) {
        return false;
    }
    let mut tail = &rest[3..];
    if let Some(cg) = tail.first().filter(|s| {
        !s.is_empty() && !s.ends_with('%') && super::num(s).is_none() && tail.len() >= 3
    }) {
        domain = if domain.is_empty() {
            cg.to_string()
        } else {
            format!("{domain} {cg}")
        };
        tail = &tail[1..];
    }
    let mut noise = None;
    if let Some(n) = tail.first().and_then(|s| s.strip_suffix('%')) {
        noise = super::num(n);
        tail = &tail[1..];
    }
    let runtime = tail.first().copied().unwrap_or("");
    let pct = tail.get(1).copied().unwrap_or("");
    if !num_or_empty(runtime) || !num_or_empty(pct) {
        return false;
    }
    let event = rest[2];
    let mut row = ReportRow::new(event, &domain);
    row.origin = Tool::Perf;
    row.time = time;
    row.unit = rest[1].to_string();
    row.runtime_ns = super::num(runtime);
    row.running_pct = super::num(pct);
    row.stddev_pct = noise;
    match number(rest[0]) {
        Some(v) => row.value = Some(v),
        None => super::perf_value(&mut row, rest[0]),
    }
    if row.status == RowStatus::Counted && row.value.is_none() {
        return false;
    }
    report.provenance.format = Some(if time.is_some() {
        SourceFormat::PerfCsvIntervals
    } else {
        SourceFormat::PerfCsv
    });
    report.rows.push(row);
    if tail.len() >= 4 {
        push_metric(report, time, domain, event.to_string(), tail[2], tail[3]);
    }
    true
}

/// A line that holds only a metric: its value and unit are the last two
/// fields; it belongs to the row before it.
fn metric_only(report: &mut StatReport, time: Option<f64>, domain: String, f: &[&str]) -> bool {
    let n = f.len();
    if !f[..n - 2].iter().all(|s| s.is_empty()) {
        return false;
    }
    let event = report
        .rows
        .last()
        .filter(|r| r.time == time)
        .map(|r| r.event.clone())
        .unwrap_or_default();
    let domain = match report.rows.last() {
        Some(r) if domain.is_empty() && r.time == time => r.domain.clone(),
        _ => domain,
    };
    push_metric(report, time, domain, event, f[n - 2], f[n - 1]);
    true
}

fn push_metric(
    report: &mut StatReport,
    time: Option<f64>,
    domain: String,
    event: String,
    value: &str,
    unit: &str,
) {
    if value.is_empty() && unit.trim().is_empty() {
        return;
    }
    let (value, unit, decimals) = metric_with_decimals(value, unit);
    report.printed.push(PrintedMetric {
        time,
        domain,
        event,
        value,
        unit,
        decimals,
    });
}

#[cfg(test)]
mod tests {
    use crate::read::read_text;
    use std::path::Path;

    #[test]
    fn metric_columns_metric_only_lines_labels_noise_and_cgroups() {
        let r = read_text(
            Path::new("t"),
            "1.000103288,1234,,cycles:u,1000,100.00,2.28,GHz\n\
             1.000103288,,,,,,51.0,%  tma_frontend_bound\n\
             S0-D0-C1,2,5678,,instructions,0.50%,2000,50.00,1.5,insn per cycle\n\
             CPU1,<not counted>,,cycles,/user.slice,0,0.00,,\n\
             12,,page-faults\n",
        )
        .unwrap();
        let rows: Vec<(&str, &str, Option<f64>, Option<f64>)> = r
            .rows
            .iter()
            .map(|r| (r.domain.as_str(), r.event.as_str(), r.value, r.stddev_pct))
            .collect();
        assert_eq!(
            rows,
            [
                ("", "cycles:u", Some(1234.0), None),
                ("S0-D0-C1", "instructions", Some(5678.0), Some(0.5)),
                ("CPU1 /user.slice", "cycles", None, None),
                ("", "page-faults", Some(12.0), None),
            ]
        );
        let p: Vec<(Option<f64>, &str, Option<f64>, &str)> = r
            .printed
            .iter()
            .map(|m| (m.time, m.event.as_str(), m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            p,
            [
                (Some(1.000103288), "cycles:u", Some(2.28), "GHz"),
                (
                    Some(1.000103288),
                    "cycles:u",
                    Some(51.0),
                    "% tma_frontend_bound"
                ),
                (None, "instructions", Some(1.5), "insn per cycle"),
            ]
        );
    }
}
