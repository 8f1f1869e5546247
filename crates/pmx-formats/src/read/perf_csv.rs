//! perf stat's `-x SEP` lines, as perf 3 to 6 writes them:
//!
//! `[time,][label,[cpus,]]value,unit,event,[cgroup,][noise%,]run_time,
//! pct_running[,metric_value,metric_unit]`
//!
//! The time of `-I` (nine decimals; `summary` on the totals `--summary`
//! adds after the intervals, which are rows without a time, as are the
//! totals of `--no-csv-summary`); the label of `-A` (`CPU3`), of
//! `--per-core/-socket/-die/-node/-cache` (`S0-D0-C1`, then the number
//! of CPUs) and of `--per-thread` (`comm-pid`); the cgroup of `-G`; the
//! spread of `-r` (`0.50%`); the metric perf printed, also on lines of
//! their own (`1.000103288,,,,,,51.0,%  tma_frontend_bound`), kept in
//! [`StatReport::printed`]. perf 3's lines stop after the event. The
//! lines of their own come in two layouts: perf 6.1–6.4 write 3 empty
//! fields plus one per aggregation field before `,VALUE,UNIT`
//! (`,,,,0.44,stalled cycles per insn`), perf 6.5 and later 4 (lining the
//! value up under the metric column). perf 6.13 adds a column after the
//! unit: how the value compares with the metric's threshold (`good`,
//! `bad`, …, or empty), on metric lines, count lines and group lines
//! (`,225849327050,100.00,,,,TopdownL1,`).

use super::perf_fields::{label, number, time_stamp, Label};
use crate::report::{ReportRow, RowStatus, SourceFormat, StatReport, Tool};

fn value_like(s: &str) -> bool {
    number(s).is_some() || super::num(s).is_some() || s.starts_with("<not ")
}

fn num_or_empty(s: &str) -> bool {
    s.is_empty() || super::num(s).is_some()
}

/// perf 6.13's threshold words (`metric_threshold_classify__str`).
const THRESHOLDS: &[&str] = &["unknown", "bad", "nearly bad", "less good", "good"];

/// A line without its last field when that is perf 6.13's threshold
/// column after a metric unit or a group name (a threshold word, or
/// empty after a field that is no value), with the threshold.
fn without_threshold<'a, 'b>(f: &'b [&'a str]) -> (&'b [&'a str], Option<&'a str>) {
    let n = f.len();
    if n < 3 {
        return (f, None);
    }
    let (last, before) = (f[n - 1], f[n - 2]);
    let after_unit = !before.is_empty() && !value_like(before);
    if after_unit && (last.is_empty() || THRESHOLDS.contains(&last)) {
        return (&f[..n - 1], Some(last));
    }
    (f, None)
}

/// Set the threshold perf wrote on the metric just kept.
fn rate_last(report: &mut StatReport, kept: usize, threshold: Option<&str>) {
    if let (Some(t), true) = (threshold, report.printed.len() > kept) {
        if let Some(m) = report.printed.last_mut() {
            m.threshold = (!t.is_empty()).then(|| t.to_string());
        }
    }
}

/// What earlier lines of a perf `-x` file said: the `--metric-only`
/// columns, perf's group header (`TopdownL1 (cpu_atom)`) the metric lines
/// after it belong to.
#[derive(Debug, Default)]
pub(crate) struct PerfCsv {
    metric_cols: Vec<String>,
    group: Option<String>,
}

/// Column names of `--metric-only` headers that are not metrics.
const NOT_METRICS: &[&str] = &[
    "time", "core", "cpus", "socket", "die", "node", "cache", "cpu", "CPU", "thread", "cgroup",
    "counts", "unit", "events",
];

impl PerfCsv {
    /// Read one perf `-x` line (already split) into `report`; false when it
    /// is not one.
    pub(crate) fn line(&mut self, report: &mut StatReport, f: &[&str]) -> bool {
        let titles = f
            .iter()
            .all(|s| s.is_empty() || NOT_METRICS.contains(&s.trim()));
        if f.iter().all(|s| !value_like(s))
            && (f.iter().filter(|s| !s.is_empty()).count() >= 2 || (titles && f.len() > 1))
        {
            // A `--metric-only` header.
            let cols = f.iter().skip_while(|s| NOT_METRICS.contains(&s.trim()));
            self.metric_cols = cols.map(|s| s.to_string()).collect();
            while self.metric_cols.last().is_some_and(|s| s.is_empty()) {
                self.metric_cols.pop();
            }
            // (`core,cpus,`: a header whose counters show no metric.)
            return !self.metric_cols.is_empty()
                || f.iter()
                    .all(|s| s.is_empty() || NOT_METRICS.contains(&s.trim()));
        }
        let (time, domain, i) = prefix(f);
        let rest = &f[i.min(f.len())..];
        if rest.iter().all(|s| s.is_empty()) && (time.is_some() || !domain.is_empty()) {
            // A `--metric-only` line whose columns are all empty.
            return true;
        }
        if !self.metric_cols.is_empty() && rest.iter().all(|s| s.is_empty() || value_like(s)) {
            for (v, c) in rest.iter().zip(&self.metric_cols) {
                if !v.is_empty() {
                    super::perf_fields::push_printed(
                        report,
                        time,
                        domain.clone(),
                        String::new(),
                        v,
                        c,
                    );
                }
            }
            return true;
        }
        let kept = report.printed.len();
        let (rest, threshold) = without_threshold(rest);
        if rest.len() >= 3 && rest[0].is_empty() {
            let n = rest.len();
            let (v, u) = (rest[n - 2], rest[n - 1]);
            if v.is_empty() && u.starts_with("Topdown") {
                self.group = Some(u.to_string());
                return true;
            }
            if v.is_empty() || value_like(v) {
                let (event, domain) = match report.rows.last().filter(|r| r.time == time) {
                    Some(r) => (
                        self.group.clone().unwrap_or_else(|| r.event.clone()),
                        if domain.is_empty() {
                            r.domain.clone()
                        } else {
                            domain
                        },
                    ),
                    None => (self.group.clone().unwrap_or_default(), domain),
                };
                super::perf_fields::push_printed(report, time, domain, event, v, u);
                rate_last(report, kept, threshold);
                return true;
            }
        }
        self.group = None;
        count_line(report, f)
    }
}

/// The `-I` time, the aggregation label and where the value starts.
fn prefix(f: &[&str]) -> (Option<f64>, String, usize) {
    let mut i = 0;
    let time = f.first().and_then(|s| time_stamp(s));
    // `--summary` after `-I`: the totals, `summary` in the time column.
    if (time.is_some() || f.first() == Some(&"summary")) && f.len() > 1 {
        i = 1;
    }
    let mut domain = String::new();
    if let Some(kind) = f.get(i).and_then(|s| label(s)) {
        let nr = kind == Label::Topology && f.get(i + 1).is_some_and(|s| s.parse::<u32>().is_ok());
        let at = i + 1 + usize::from(nr);
        if f.get(at).is_none_or(|s| s.is_empty() || value_like(s)) {
            domain = f[i].to_string();
            i = at;
        }
    }
    (time, domain, i)
}

/// A count line: `value,unit,event,…`.
fn count_line(report: &mut StatReport, f: &[&str]) -> bool {
    let (time, mut domain, i) = prefix(f);
    let rest = &f[i.min(f.len())..];
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
    super::exact_clock(&mut row);
    report.provenance.format = Some(if time.is_some() {
        SourceFormat::PerfCsvIntervals
    } else {
        SourceFormat::PerfCsv
    });
    report.rows.push(row);
    if tail.len() >= 4 {
        let kept = report.printed.len();
        super::perf_fields::push_printed(report, time, domain, event.to_string(), tail[2], tail[3]);
        let threshold = tail
            .get(4)
            .filter(|t| THRESHOLDS.contains(t) || t.is_empty());
        rate_last(report, kept, threshold.copied());
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::read::read_text;
    use std::path::Path;

    #[test]
    fn a_clock_in_msec_takes_its_run_time_in_ns() {
        // perf stat -x, -e task-clock,page-faults true (perf 6.1, here):
        // its K/sec is 49 / 593034 ns.
        let r = read_text(
            Path::new("t"),
            "0.59,msec,task-clock,593034,100.00,0.432,CPUs utilized\n\
             49,,page-faults,593034,100.00,82.626,K/sec\n\
             0.59,msec,cpu-clock:u,599999,100.00,,\n\
             12.5,msec,user_time,593034,100.00,,\n",
        )
        .unwrap();
        let v: Vec<Option<f64>> = r.rows.iter().map(|r| r.value).collect();
        assert_eq!(v[0], Some(0.593034));
        assert_eq!(v[1], Some(49.0));
        // Not the same time to the printed digits, or not a clock: as printed.
        assert_eq!(v[2], Some(0.59));
        assert_eq!(v[3], Some(12.5));
    }

    #[test]
    fn thresholds_and_summaries() {
        // perf 6.13 (https://lore.kernel.org/r/20241010012135.1272535-7-irogers@google.com),
        // a group line with the trailing separator, then perf 6.1's
        // `--summary` totals.
        let r = read_text(
            Path::new("t"),
            "1.000103288,4677067630,,TOPDOWN.SLOTS,16029302700,100.00,31.1,%  tma_backend_bound,bad\n\
             1.000103288,,,,,,51.0,%  tma_frontend_bound,bad\n\
             1.000103288,,,,,,10.2,%  tma_retiring,good\n\
             1.000103288,476781750,,topdown-retiring,16029302700,100.00,,\n\
             1.000103288,,16029302700,100.00,,,,TopdownL1,\n\
             1.000103288,,,,,,0.73,insn per cycle,\n\
             \x20        summary,3216,,page-faults,137635706,100.00,23.366,K/sec\n",
        )
        .unwrap();
        let p: Vec<(&str, Option<f64>, Option<&str>)> = (r.printed.iter())
            .map(|m| (m.event.as_str(), m.value, m.threshold.as_deref()))
            .collect();
        assert_eq!(
            p,
            [
                ("TOPDOWN.SLOTS", Some(31.1), Some("bad")),
                ("TOPDOWN.SLOTS", Some(51.0), Some("bad")),
                ("TOPDOWN.SLOTS", Some(10.2), Some("good")),
                ("TopdownL1", Some(0.73), None),
                ("page-faults", Some(23.366), None),
            ]
        );
        let last = r.rows.last().unwrap();
        assert_eq!(
            (last.event.as_str(), last.time, last.value),
            ("page-faults", None, Some(3216.0))
        );
    }

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
