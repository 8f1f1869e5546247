//! Metrics per row of a sample-read group (`pmx report -M IPC`): each
//! row's metric is the formula over that row's member counts (the sums of
//! its deltas), with the samples behind it and a 95% confidence interval.
//!
//! The formulas are not parsed here (the metric library is `pmx`'s): the
//! caller gives the names and a function that evaluates them from input
//! counts looked up by name. The interval is the delta method over the
//! per-sample deltas: the samples of a row are taken as independent
//! draws, so the members' totals have the covariance n·Cov(d) (Cov from
//! the per-sample products, [`crate::Moments::covariance`]), and the
//! metric's variance is ∇fᵀ·n·Cov(d)·∇f with the gradient taken by
//! finite differences. For a ratio `y / x` that is the ratio estimator's
//! usual variance, n·Var(y − R·x) / X². Rows with fewer than
//! [`MIN_SAMPLES`] samples are marked.

use crate::profile::{GroupTable, Moments};
use crate::report::Report;

/// Below this many samples a row's interval is not to be trusted.
pub const MIN_SAMPLES: u64 = 10;

/// Evaluates metrics from input counts: `get(name)` is the count of the
/// input the library names `name`, `None` when the group has no such
/// member; one value per metric.
pub type Evaluate<'a> = &'a dyn Fn(&dyn Fn(&str) -> Option<f64>) -> Vec<Option<f64>>;

/// One metric of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricCell {
    /// The metric over the row's counts; `None` when an input is missing
    /// or it cannot be computed (a zero denominator).
    pub value: Option<f64>,
    /// Half the width of the 95% confidence interval.
    pub half_width: Option<f64>,
    /// The leader's samples behind it.
    pub samples: u64,
    /// Fewer than [`MIN_SAMPLES`] samples.
    pub few: bool,
}

impl MetricCell {
    /// The cell as a table shows it: `value ±half` (and `*` with few
    /// samples); `-` when there is no value.
    pub fn text(&self) -> String {
        let Some(v) = self.value else {
            return "-".into();
        };
        let mut s = format_value(v);
        if let Some(h) = self.half_width {
            s.push_str(&format!(" ±{}", format_value(h)));
        }
        if self.few {
            s.push('*');
        }
        s
    }

    /// The cell in JSON: `value`, `low`, `high` (the 95% interval),
    /// `samples`, `few_samples`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "value": self.value,
            "low": self.value.zip(self.half_width).map(|(v, h)| v - h),
            "high": self.value.zip(self.half_width).map(|(v, h)| v + h),
            "samples": self.samples,
            "few_samples": self.few,
        })
    }
}

/// The metrics of one group's rows.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMetrics {
    /// The leader (index into the profile's events).
    pub event: usize,
    /// The metrics' names.
    pub names: Vec<String>,
    /// Per row of the group's table (same order), one cell per metric.
    pub rows: Vec<Vec<MetricCell>>,
    /// Over the whole group.
    pub total: Vec<MetricCell>,
}

/// An event's name without PMU and modifiers, lower-case.
fn base(name: &str) -> String {
    let n = name.trim();
    let n = n
        .strip_prefix("cpu/")
        .map_or(n, |x| x.split('/').next().unwrap_or(x));
    n.split(':').next().unwrap_or(n).to_ascii_lowercase()
}

/// The metrics `names` (evaluated by `eval`) for every selected sample-read
/// group of `report`.
pub fn evaluate(report: &Report, names: &[String], eval: Evaluate<'_>) -> Vec<GroupMetrics> {
    let p = &report.profile;
    let mut out = Vec::new();
    for &i in &report.selected {
        let Some(g) = &p.events[i].group else {
            continue;
        };
        let members: Vec<String> = g
            .members
            .iter()
            .map(|&m| p.events[m].name.clone())
            .collect();
        // A described group's counts are sampled periods: values only.
        let cell = |m: &Moments| {
            let mut c = cells(m, &members, names.len(), eval);
            if !g.from_reads {
                c.iter_mut().for_each(|c| c.half_width = None);
            }
            c
        };
        out.push(GroupMetrics {
            event: i,
            names: names.to_vec(),
            rows: g.rows.iter().map(|r| cell(&r.moments)).collect(),
            total: cell(&whole(g)),
        });
    }
    out
}

/// The moments of every row together.
fn whole(g: &GroupTable) -> Moments {
    let mut all = Moments::default();
    for r in &g.rows {
        all.merge(&r.moments);
    }
    all
}

/// The `n` metrics of one row (or instruction, or any set of samples)
/// whose members' deltas are summed in `m`: values at the totals,
/// intervals from the gradient and the per-sample covariance. `members`
/// are the group's event names, leader first (PMU and modifiers are
/// ignored when `eval` looks its inputs up).
pub fn cells(m: &Moments, members: &[String], n: usize, eval: Evaluate<'_>) -> Vec<MetricCell> {
    let members: Vec<String> = members.iter().map(|x| base(x)).collect();
    let totals: Vec<f64> = m.sums.iter().map(|&s| s as f64).collect();
    let at = |t: &[f64]| {
        let get = |name: &str| {
            let b = base(name);
            members.iter().position(|x| *x == b).map(|j| t[j])
        };
        eval(&get)
    };
    let f0 = at(&totals);
    // ∂f/∂Tⱼ by a forward difference.
    let grads: Vec<Vec<Option<f64>>> = (0..totals.len())
        .map(|j| {
            let h = (totals[j].abs() * 1e-6).max(1e-3);
            let mut t = totals.clone();
            t[j] += h;
            at(&t)
                .iter()
                .zip(&f0)
                .map(|(a, b)| Some((a.as_ref()? - b.as_ref()?) / h))
                .collect()
        })
        .collect();
    let samples = m.samples as f64;
    (0..n)
        .map(|k| {
            let value = f0.get(k).copied().flatten().filter(|v| v.is_finite());
            let g: Option<Vec<f64>> = grads
                .iter()
                .map(|gj| gj.get(k).copied().flatten())
                .collect();
            let half_width = value.and(g).and_then(|g| {
                let mut var = 0.0;
                for (j, gj) in g.iter().enumerate() {
                    for (l, gl) in g.iter().enumerate() {
                        var += gj * gl * samples * m.covariance(j, l);
                    }
                }
                (var.is_finite() && m.samples >= 2).then(|| 1.96 * var.max(0.0).sqrt())
            });
            MetricCell {
                value,
                half_width,
                samples: m.samples,
                few: m.samples < MIN_SAMPLES,
            }
        })
        .collect()
}

/// A metric's value as the table shows it: 4 significant digits at least.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}
