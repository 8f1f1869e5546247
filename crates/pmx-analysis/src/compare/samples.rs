//! The samples of one side: every file's totals folded into one series
//! per event (or metric) and domain, one sample per run — each kept run of
//! `pmx stat -r N --json`, or the file's one value when it kept none.

use pmx_formats::{StatReport, ESTIMATE_BELOW};

/// An event row or a metric line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A counted event.
    Event,
    /// A derived metric.
    Metric,
}

/// What a series is of: the kind, the name as the file has it, the
/// domain label (empty for totals).
pub type Key = (Kind, String, String);

/// One event or metric in one domain over every run of a side.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Kind, name, domain.
    pub key: Key,
    /// The unit (`msec`, `%`), empty for plain counts.
    pub unit: String,
    /// One value per run.
    pub samples: Vec<f64>,
    /// Some run was scaled from a share under [`ESTIMATE_BELOW`] (a metric:
    /// from such an input).
    pub estimate: bool,
}

/// The series of `reports` (the files of one side, pooled), in first-seen
/// order; and how many files kept no runs but counted more than one
/// (their mean is all there is: a JSON document of `runs` > 1 without
/// `repeats`, or a CSV file with `stddev_pct`).
pub fn series_of(reports: &[StatReport]) -> (Vec<Series>, usize) {
    let mut out: Vec<Series> = Vec::new();
    let mut means_only = 0;
    for r in reports {
        let mut kept = false;
        for row in r.rows.iter().filter(|row| row.time.is_none()) {
            let (samples, estimate) = if row.repeats.is_empty() {
                (row.value.into_iter().collect(), row_estimate(row))
            } else {
                kept = true;
                let values = row.repeats.iter().filter_map(|c| c.value).collect();
                let est = row.repeats.iter().any(|c| c.is_estimate());
                (values, est || row_estimate(row))
            };
            let key = (Kind::Event, row.event.clone(), row.domain.clone());
            push(&mut out, key, &row.unit, samples, estimate);
        }
        for m in r.metrics.iter().filter(|m| m.time.is_none()) {
            let low = |rel: Option<f64>| rel.is_some_and(|x| x < ESTIMATE_BELOW);
            let (samples, estimate) = if m.repeats.is_empty() {
                (
                    m.value.into_iter().collect(),
                    m.estimate || low(m.reliability),
                )
            } else {
                kept = true;
                let values = m.repeats.iter().filter_map(|x| x.value).collect();
                let est = m.repeats.iter().any(|x| low(x.reliability));
                (values, est || m.estimate)
            };
            let key = (Kind::Metric, m.name.clone(), m.domain.clone());
            push(&mut out, key, &m.unit, samples, estimate);
        }
        let repeated = r.runs.unwrap_or(1) > 1 || r.rows.iter().any(|x| x.stddev_pct.is_some());
        if !kept && repeated {
            means_only += 1;
        }
    }
    (out, means_only)
}

fn row_estimate(row: &pmx_formats::ReportRow) -> bool {
    row.status == pmx_formats::RowStatus::Estimate
        || row.running_pct.is_some_and(|p| p < ESTIMATE_BELOW * 100.0)
}

fn push(out: &mut Vec<Series>, key: Key, unit: &str, samples: Vec<f64>, estimate: bool) {
    match out.iter_mut().find(|s| s.key == key) {
        Some(s) => {
            s.samples.extend(samples);
            s.estimate |= estimate;
        }
        None => out.push(Series {
            key,
            unit: unit.to_string(),
            samples,
            estimate,
        }),
    }
}

/// The runs of `report` one by one: one report per kept run (each row's
/// value, count and times those of that run), or the report itself when
/// it kept none.
pub fn runs_of(report: &StatReport) -> Vec<StatReport> {
    let n = report
        .rows
        .iter()
        .map(|r| r.repeats.len())
        .chain(report.metrics.iter().map(|m| m.repeats.len()))
        .max()
        .unwrap_or(0);
    if n == 0 {
        return vec![report.clone()];
    }
    (0..n)
        .map(|i| {
            let mut one = report.clone();
            one.runs = Some(1);
            for row in &mut one.rows {
                if let Some(c) = row.repeats.get(i).copied() {
                    row.value = c.value;
                    row.raw = Some(c.raw);
                    row.enabled_ns = Some(c.time_enabled_ns);
                    row.running_ns = Some(c.time_running_ns);
                    row.running_pct = (c.time_enabled_ns > 0)
                        .then(|| 100.0 * c.time_running_ns as f64 / c.time_enabled_ns as f64);
                } else if !row.repeats.is_empty() {
                    row.value = None;
                }
                row.repeats.clear();
                row.spread = None;
                row.stddev_pct = None;
            }
            for m in &mut one.metrics {
                if let Some(x) = m.repeats.get(i) {
                    m.value = x.value;
                    m.reliability = x.reliability;
                }
                m.repeats.clear();
            }
            one
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_formats::{ReportMetric, ReportRow, RunCount, RunMetric};

    fn count(value: f64, running: u64) -> RunCount {
        RunCount {
            value: Some(value),
            raw: value as u64,
            time_enabled_ns: 100,
            time_running_ns: running,
        }
    }

    fn kept() -> StatReport {
        let mut faults = ReportRow::new("page-faults", "");
        faults.value = Some(11.0);
        faults.repeats = vec![count(10.0, 100), count(12.0, 50)];
        let mut plain = ReportRow::new("cycles", "CPU1");
        plain.value = Some(7.0);
        StatReport {
            runs: Some(2),
            rows: vec![faults, plain],
            metrics: vec![ReportMetric {
                time: None,
                name: "IPC".into(),
                domain: String::new(),
                value: Some(1.5),
                unit: String::new(),
                reliability: Some(1.0),
                estimate: false,
                missing: None,
                repeats: vec![
                    RunMetric {
                        value: Some(1.0),
                        reliability: Some(1.0),
                    },
                    RunMetric {
                        value: Some(2.0),
                        reliability: Some(0.5),
                    },
                ],
            }],
            ..StatReport::default()
        }
    }

    #[test]
    fn kept_runs_are_samples_and_files_pool() {
        let mut mean_only = kept();
        mean_only.rows[0].repeats.clear();
        mean_only.metrics[0].repeats.clear();
        // CSV of `-r 3`: the runs are unknown, the spread says it repeated.
        let mut csv = mean_only.clone();
        csv.runs = None;
        csv.rows[0].stddev_pct = Some(1.0);
        assert_eq!(series_of(&[csv]).1, 1);
        let (s, means) = series_of(&[kept(), mean_only]);
        assert_eq!(means, 1);
        assert_eq!(s[0].key, (Kind::Event, "page-faults".into(), String::new()));
        assert_eq!(s[0].samples, [10.0, 12.0, 11.0]);
        // The second run ran half the time.
        assert!(s[0].estimate);
        assert_eq!(s[1].samples, [7.0, 7.0]);
        assert!(!s[1].estimate);
        assert_eq!(s[2].key.0, Kind::Metric);
        assert_eq!(s[2].samples, [1.0, 2.0, 1.5]);
        assert!(s[2].estimate);
    }

    #[test]
    fn runs_come_apart() {
        let runs = runs_of(&kept());
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].rows[0].value, Some(12.0));
        assert_eq!(runs[1].rows[0].running_pct, Some(50.0));
        // A row that kept no runs keeps its value in each.
        assert_eq!(runs[1].rows[1].value, Some(7.0));
        assert_eq!(runs[0].metrics[0].value, Some(1.0));
        assert!(runs[0].rows[0].repeats.is_empty());
        let mut single = kept();
        single.rows[0].repeats.clear();
        single.metrics[0].repeats.clear();
        assert_eq!(runs_of(&single), [single]);
    }
}
