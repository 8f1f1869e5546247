//! The metrics perf printed in a file, each beside pmx's value of the same
//! metric computed from the counts of the same interval, domain and core
//! type (perf prints per CPU, per core, per interval; hybrid parts per
//! `cpu_core`/`cpu_atom`).
//!
//! perf's text names the metric by its unit (`insn per cycle`, `GHz`,
//! `% of all branches`, `M/sec`) or, since perf 6, by a metric name
//! after the unit (`%  tma_frontend_bound`, `cs/sec  cs_per_second`);
//! [`counterpart`] maps each to pmx's metric (the builtins carry perf's
//! `stat-shadow.c` formulas) or to the rate of the event per second of
//! task-clock.

use super::counts::{inputs_of, Counts};
use pmx_formats::{PrintedMetric, ReportRow, StatReport};
use pmx_metrics::{KeyFn, Library, Machine, MetricId};
use std::collections::HashMap;

/// What pmx has for a metric perf printed.
#[derive(Debug, Clone, PartialEq)]
pub enum Counterpart {
    /// A metric of pmx's library, by name.
    Metric(String),
    /// perf's rate of the event per second of task-clock (`K/sec`), with
    /// the unit's factor (1e3 for `K/sec`).
    Rate(f64),
    /// None: why.
    None(String),
}

/// The pmx counterpart of perf's metric unit text.
pub fn counterpart(unit: &str) -> Counterpart {
    let m = |s: &str| Counterpart::Metric(s.to_string());
    let u = unit.trim();
    // perf 6's `unit  metric_name`: the name decides.
    let last = u.rsplit(' ').next().unwrap_or("");
    if last.contains('_') && u.contains(' ') || last.starts_with("tma_") {
        return match last {
            "insn_per_cycle" => m("IPC"),
            "cycles_frequency" => m("running_frequency"),
            "branch_miss_rate" => m("branch_miss_ratio"),
            "stalled_cycles_per_instruction" => m("stalled_cycles_per_insn"),
            "l1d_miss_rate" => m("l1d_load_miss_ratio"),
            "l1i_miss_rate" => m("l1i_load_miss_ratio"),
            "llc_miss_rate" => m("llc_load_miss_ratio"),
            "dtlb_miss_rate" => m("dtlb_load_miss_ratio"),
            "itlb_miss_rate" => m("itlb_load_miss_ratio"),
            name => m(name),
        };
    }
    let lower = u.to_ascii_lowercase();
    // perf 4-6's names of the top-down nodes (`7.5% Retiring`, `Fetch
    // Latency`; perf 4's `--topdown -x,` columns without the `%`).
    let node = lower.strip_prefix("% ").unwrap_or(&lower);
    let tma = match node {
        "retiring" | "bad speculation" | "frontend bound" | "backend bound"
        | "heavy operations" | "light operations" | "machine clears" | "fetch latency"
        | "fetch bandwidth" | "memory bound" | "core bound" => {
            Some(format!("tma_{}", node.replace(' ', "_")))
        }
        "branch mispredict" => Some("tma_branch_mispredicts".to_string()),
        _ => None,
    };
    if let Some(t) = tma {
        return Counterpart::Metric(t);
    }
    // perf 6's `-j`/`-x` drop the `%` before `of all branches`.
    let u = u.strip_prefix("% ").unwrap_or(u);
    match u {
        "insn per cycle" | "insns per cycle" | "IPC" => m("IPC"),
        "GHz" => m("running_frequency"),
        "CPUs utilized" | "CPU utilized" => m("CPUs_utilized"),
        "of all branches" => m("branch_miss_ratio"),
        "frontend cycles idle" => m("frontend_cycles_idle"),
        "backend cycles idle" => m("backend_cycles_idle"),
        "stalled cycles per insn" => m("stalled_cycles_per_insn"),
        "of all cache refs" => m("cache_miss_ratio"),
        "of all L1-dcache accesses" | "of all L1-dcache hits" => m("l1d_load_miss_ratio"),
        "of all L1-icache accesses" | "of all L1-icache hits" => m("l1i_load_miss_ratio"),
        "of all LL-cache accesses" | "of all LL-cache hits" => m("llc_load_miss_ratio"),
        "of all dTLB cache accesses" | "of all dTLB cache hits" => m("dtlb_load_miss_ratio"),
        "of all iTLB cache accesses" | "of all iTLB cache hits" => m("itlb_load_miss_ratio"),
        "/sec" => Counterpart::Rate(1.0),
        "K/sec" => Counterpart::Rate(1e3),
        "M/sec" => Counterpart::Rate(1e6),
        "G/sec" => Counterpart::Rate(1e9),
        "" => Counterpart::None("perf printed no unit".into()),
        // perf 6's `-M NAME` metrics print the name alone (`2.61
        // UNCORE_FREQ`).
        name if !name.contains(' ')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') =>
        {
            m(name)
        }
        other => Counterpart::None(format!("pmx has no metric perf calls '{other}'")),
    }
}

/// One metric perf printed, and pmx's value of it.
#[derive(Debug, Clone)]
pub struct PrintedResult {
    /// As the file has it.
    pub printed: PrintedMetric,
    /// The core type it is for on a hybrid part (`cpu_core`).
    pub core_type: Option<String>,
    /// pmx's metric (its name), or `rate` for perf's per-second rates.
    pub pmx_metric: Option<String>,
    /// pmx's value in perf's unit.
    pub pmx_value: Option<f64>,
    /// Without a pmx value: why.
    pub why_not: Option<String>,
    /// The relative precision of the clock counts the value was computed
    /// from: perf prints msec with two decimals (`0.85 msec task-clock`
    /// may be 0.845 to 0.855), which bounds how closely any value
    /// computed from the file can meet the one perf computed before
    /// rounding.
    pub input_slack: f64,
}

impl PrintedResult {
    /// pmx's value agrees with perf's: within 0.1 percentage point for a
    /// percentage, 0.5 % relative (plus [`PrintedResult::input_slack`]),
    /// or half a unit of the last digit perf printed. `None` without both
    /// values.
    pub fn agrees(&self) -> Option<bool> {
        let (p, x) = (self.printed.value?, self.pmx_value?);
        let d = (p - x).abs();
        let half_digit = 0.5 * 10f64.powi(-(self.printed.decimals as i32)) + 1e-12;
        let pct = self.printed.unit.starts_with('%') && d <= 0.1 + 1e-12;
        let rel = (0.005 + self.input_slack) * p.abs().max(x.abs());
        Some(pct || d <= rel || d <= half_digit)
    }
}

/// The hybrid core PMU an event or perf group header names.
pub(crate) fn core_type(name: &str) -> Option<&'static str> {
    ["cpu_core", "cpu_atom"]
        .into_iter()
        .find(|p| name.starts_with(&format!("{p}/")) || name.contains(&format!("({p})")))
}

/// The rows of one time and domain, grouped once.
struct Groups<'a> {
    rows: HashMap<(Option<u64>, &'a str), Vec<&'a ReportRow>>,
    /// The interval times in file order, to tell each interval's length.
    times: Vec<f64>,
}

impl<'a> Groups<'a> {
    fn of(report: &'a StatReport) -> Groups<'a> {
        let mut rows: HashMap<(Option<u64>, &str), Vec<&ReportRow>> = HashMap::new();
        let mut times: Vec<f64> = Vec::new();
        for r in &report.rows {
            rows.entry((r.time.map(f64::to_bits), r.domain.as_str()))
                .or_default()
                .push(r);
            if let Some(t) = r.time {
                if times.last().is_none_or(|&l| (l - t).abs() > 1e-9) {
                    times.push(t);
                }
            }
        }
        Groups { rows, times }
    }

    /// The length of the interval ending at `t`.
    fn interval(&self, t: f64) -> f64 {
        let i = self.times.iter().position(|&x| (x - t).abs() < 1e-9);
        match i {
            Some(i) if i > 0 => t - self.times[i - 1],
            _ => t,
        }
    }
}

/// What [`compare`] reads with.
pub(crate) struct Ctx<'a> {
    pub lib: &'a Library,
    pub key: &'a KeyFn,
    pub machine: &'a Machine,
}

/// Each metric perf printed in `report`, beside pmx's.
pub(crate) fn compare(report: &StatReport, ctx: &Ctx) -> Vec<PrintedResult> {
    let groups = Groups::of(report);
    report
        .printed
        .iter()
        .map(|p| one(report, &groups, ctx, p))
        .collect()
}

fn one(report: &StatReport, groups: &Groups, ctx: &Ctx, p: &PrintedMetric) -> PrintedResult {
    let ct = core_type(&p.event);
    let mut out = PrintedResult {
        printed: p.clone(),
        core_type: ct.map(str::to_string),
        pmx_metric: None,
        pmx_value: None,
        why_not: None,
        input_slack: 0.0,
    };
    let rows: Vec<ReportRow> = groups
        .rows
        .get(&(p.time.map(f64::to_bits), p.domain.as_str()))
        .into_iter()
        .flatten()
        .filter(|r| ct.is_none() || core_type(&r.event).is_none_or(|c| Some(c) == ct))
        .map(|&r| r.clone())
        .collect();
    out.input_slack = rows
        .iter()
        .filter(|r| r.unit == "msec")
        .filter_map(|r| r.value.filter(|v| *v > 0.0).map(|v| 0.005 / v))
        .fold(0.0, f64::max);
    let sub = StatReport {
        rows,
        elapsed_s: report.elapsed_s,
        ..StatReport::default()
    };
    let counts = Counts::of(&sub);
    let keys: Vec<String> = counts.events.iter().map(|e| (ctx.key)(e)).collect();
    let mut inputs = inputs_of(ctx.key, &keys, &counts.totals());
    let has_duration_time = counts.events.iter().any(|e| e == "duration_time");
    if !has_duration_time {
        inputs.duration = match p.time {
            Some(t) => Some(groups.interval(t)),
            None => report.elapsed_s,
        };
    }
    match counterpart(&p.unit) {
        Counterpart::None(why) => out.why_not = Some(why),
        Counterpart::Rate(factor) => {
            out.pmx_metric = Some("rate".into());
            let clock = ["task-clock", "cpu-clock"]
                .into_iter()
                .find_map(|c| inputs.get(c).and_then(scaled));
            // The row perf printed it beside (an event may be listed twice).
            let ev = match p.row.and_then(|i| report.rows.get(i)) {
                Some(r) => r.value.map(|v| if r.unit == "msec" { v * 1e6 } else { v }),
                None => inputs.get(&p.event).and_then(scaled),
            };
            match (ev, clock) {
                (Some(v), Some(ns)) if ns > 0.0 => out.pmx_value = Some(v / ns * 1e9 / factor),
                (None, _) => out.why_not = Some(format!("{} has no count", p.event)),
                _ => out.why_not = Some("no task-clock or cpu-clock in the file".into()),
            }
        }
        Counterpart::Metric(name) => {
            out.pmx_metric = Some(name.clone());
            let ids = candidates(ctx.lib, &name, ct);
            if ids.is_empty() {
                out.why_not = Some(format!("pmx's library has no {name} for this CPU"));
            } else {
                let mut ev = ctx.lib.evaluator(&inputs, ctx.machine);
                match ev
                    .first_with_value(&ids)
                    .and_then(|(id, e)| e.value().map(|v| (id, v)))
                {
                    Some((id, v)) => out.pmx_value = Some(ctx.lib.metric(id).display_value(v)),
                    None => {
                        let e = ev.metric(ids[0]);
                        out.why_not = Some(
                            e.missing()
                                .map(|m| m.to_string())
                                .unwrap_or_else(|| "no value".into()),
                        );
                    }
                }
            }
        }
    }
    out
}

/// The value of a reading folded from a file.
fn scaled(r: &pmx_metrics::Reading) -> Option<f64> {
    match *r {
        pmx_metrics::Reading::Scaled { value, .. } => Some(value),
        pmx_metrics::Reading::Counted { count } => count.scaled(),
        _ => None,
    }
}

/// The definitions of `name`, those of the core type's table first (the
/// first with a value is taken: Intel's tables, then pmx's builtins).
fn candidates(lib: &Library, name: &str, ct: Option<&str>) -> Vec<MetricId> {
    let mut ids = lib.lookup(name);
    ids.sort_by_key(|&id| lib.source_of(id).pmu.as_deref() != ct);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_units_map_to_pmx_metrics_and_rates() {
        let m = |s: &str| Counterpart::Metric(s.into());
        assert_eq!(counterpart("insn per cycle"), m("IPC"));
        assert_eq!(counterpart("GHz"), m("running_frequency"));
        assert_eq!(counterpart("of all branches"), m("branch_miss_ratio"));
        assert_eq!(counterpart("% tma_frontend_bound"), m("tma_frontend_bound"));
        assert_eq!(counterpart("cs/sec cs_per_second"), m("cs_per_second"));
        assert_eq!(counterpart("GHz cycles_frequency"), m("running_frequency"));
        assert_eq!(counterpart("M/sec"), Counterpart::Rate(1e6));
        assert_eq!(counterpart("% Retiring"), m("tma_retiring"));
        assert_eq!(counterpart("bad speculation"), m("tma_bad_speculation"));
        assert_eq!(
            counterpart("% Branch Mispredict"),
            m("tma_branch_mispredicts")
        );
        assert!(matches!(counterpart("frobs per sec"), Counterpart::None(_)));
        assert_eq!(counterpart("UNCORE_FREQ"), m("UNCORE_FREQ"));
        assert_eq!(core_type("cpu_atom/cycles/"), Some("cpu_atom"));
        assert_eq!(core_type("TopdownL1 (cpu_core)"), Some("cpu_core"));
        assert_eq!(core_type("cycles"), None);
    }
}
