//! perf's "shadow" metrics: the `# …` comment perf stat prints beside a
//! count (`CPUs utilized` beside a clock, `K/sec` beside a software
//! count, `GHz`, `insn per cycle`, `of all branches`, `of all cache
//! refs`), computed from the other rows of the same interval, domain and
//! modifiers as perf 6.1's `stat-shadow.c` does, and printed in perf's
//! formats (`%8.3f`, `%7.2f `, `%7.2f%%`, `%8.3f %%`).

use crate::report::{ReportRow, RowStatus};

/// A metric's printf format, as perf passes it to its printers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricFmt {
    /// `%8.3f` (CPUs utilized, GHz, rates).
    F8_3,
    /// `%7.2f ` (insn per cycle).
    F7_2Space,
    /// `%7.2f%%` (of all branches).
    F7_2Pct,
    /// `%8.3f %%` (of all cache refs).
    F8_3SpacePct,
}

impl MetricFmt {
    /// The value as the format prints it.
    pub fn print(self, v: f64) -> String {
        match self {
            MetricFmt::F8_3 => format!("{v:8.3}"),
            MetricFmt::F7_2Space => format!("{v:7.2} "),
            MetricFmt::F7_2Pct => format!("{v:7.2}%"),
            MetricFmt::F8_3SpacePct => format!("{v:8.3} %"),
        }
    }
}

/// What perf prints in a row's metric columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Shadow {
    /// No metric for this event (perf passes a NULL unit: JSON says
    /// `"(null)"`).
    None,
    /// A metric without a value (a NULL format): the unit only.
    Empty(&'static str),
    /// A value, its format and unit.
    Value {
        /// The format.
        fmt: MetricFmt,
        /// The value.
        value: f64,
        /// The unit (`CPUs utilized`, `K/sec`).
        unit: String,
    },
}

/// An event's name without pmx's ` (cgroup NAME)` suffix (`-G`), and
/// the cgroup.
pub fn split_cgroup(event: &str) -> (&str, Option<&str>) {
    match event
        .strip_suffix(')')
        .and_then(|e| e.rsplit_once(" (cgroup "))
    {
        Some((name, cg)) => (name, Some(cg)),
        None => (event, None),
    }
}

/// The event's name without its `:mods` suffix (and cgroup), and the
/// modifier and cgroup context (perf keeps a metric's inputs in the same
/// modifiers and cgroup).
fn split_mods(event: &str) -> (&str, (&str, Option<&str>)) {
    let (event, cgroup) = split_cgroup(event);
    let (base, mods) = match event.rsplit_once(':') {
        Some((base, mods)) if !base.contains('/') || base.ends_with('/') => (base, mods),
        _ => (event, ""),
    };
    (base, (mods, cgroup))
}

fn is_clock(base: &str) -> bool {
    matches!(base, "task-clock" | "cpu-clock")
}

/// The nanoseconds a clock row stands for (its value is in `msec`).
fn clock_ns(r: &ReportRow) -> Option<f64> {
    let v = r.value?;
    Some(match r.unit.as_str() {
        "msec" => v * 1e6,
        "usec" => v * 1e3,
        "sec" => v * 1e9,
        _ => v,
    })
}

/// perf's `convert_unit_double`: K, M, G steps above 1000.
fn scaled_rate(v: f64) -> (f64, &'static str) {
    let mut v = v;
    let mut unit = "/sec";
    for u in ["K/sec", "M/sec", "G/sec"] {
        if v > 1000.0 {
            v /= 1000.0;
            unit = u;
        }
    }
    (v, unit)
}

/// The rows of the same interval, domain and modifiers as `row`.
fn peers<'a>(rows: &'a [ReportRow], row: &'a ReportRow) -> impl Iterator<Item = &'a ReportRow> {
    let mods = split_mods(&row.event).1;
    rows.iter().filter(move |r| {
        r.time == row.time
            && r.domain == row.domain
            && split_mods(&r.event).1 == mods
            && r.status != RowStatus::NotSupported
            && r.value.is_some()
    })
}

/// The mean of the peers whose base name is one of `names`.
fn peer_avg(
    rows: &[ReportRow],
    row: &ReportRow,
    pick: impl Fn(&ReportRow) -> Option<f64>,
    names: &[&str],
) -> Option<f64> {
    let v: Vec<f64> = peers(rows, row)
        .filter(|r| names.contains(&split_mods(&r.event).0))
        .filter_map(pick)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The shadow metric of `row` among `rows`; `wall_ns`: the run's (or
/// the interval's) wall-clock time.
pub fn shadow(rows: &[ReportRow], row: &ReportRow, wall_ns: Option<f64>) -> Shadow {
    let Some(v) = row.value.filter(|_| row.status != RowStatus::NotSupported) else {
        return Shadow::Empty("");
    };
    let base = split_mods(&row.event).0;
    if is_clock(base) {
        return match (clock_ns(row), wall_ns.filter(|w| *w > 0.0)) {
            (Some(ns), Some(w)) => Shadow::Value {
                fmt: MetricFmt::F8_3,
                value: ns / w,
                unit: "CPUs utilized".into(),
            },
            _ => Shadow::Empty("CPUs utilized"),
        };
    }
    let ns = peer_avg(rows, row, clock_ns, &["task-clock", "cpu-clock"]);
    let value = |n: &[&str]| peer_avg(rows, row, |r| r.value, n);
    let ratio = |fmt, value, unit: &str| Shadow::Value {
        fmt,
        value,
        unit: unit.into(),
    };
    match base {
        "cycles" | "cpu-cycles" => match ns {
            Some(t) if t > 0.0 => ratio(MetricFmt::F8_3, v / t, "GHz"),
            _ => Shadow::Empty("Ghz"),
        },
        "instructions" => match value(&["cycles", "cpu-cycles"]) {
            Some(c) if c > 0.0 => ratio(MetricFmt::F7_2Space, v / c, "insn per cycle"),
            _ => Shadow::Empty("insn per cycle"),
        },
        "branch-misses" => match value(&["branches", "branch-instructions"]) {
            Some(b) if b > 0.0 => ratio(MetricFmt::F7_2Pct, 100.0 * v / b, "of all branches"),
            _ => Shadow::Empty("of all branches"),
        },
        "cache-misses" => match value(&["cache-references"]) {
            Some(b) if b > 0.0 => {
                ratio(MetricFmt::F8_3SpacePct, 100.0 * v / b, "of all cache refs")
            }
            _ => Shadow::Empty("of all cache refs"),
        },
        _ => match ns {
            Some(t) => {
                let rate = if t > 0.0 { 1e9 * v / t } else { 0.0 };
                let (value, unit) = scaled_rate(rate);
                ratio(MetricFmt::F8_3, value, unit)
            }
            None => Shadow::None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(event: &str, value: f64, unit: &str) -> ReportRow {
        let mut r = ReportRow::new(event, "");
        r.value = Some(value);
        r.unit = unit.into();
        r
    }

    #[test]
    fn clocks_rates_and_ratios_as_perf_computes_them() {
        let rows = vec![
            row("task-clock", 2.0, "msec"),
            row("page-faults", 50.0, ""),
            row("context-switches", 1.0, ""),
            row("cpu-migrations", 0.0, ""),
            row("page-faults:u", 7.0, ""),
        ];
        // 2 ms of task clock over 4 ms of wall clock.
        assert_eq!(
            shadow(&rows, &rows[0], Some(4e6)),
            Shadow::Value {
                fmt: MetricFmt::F8_3,
                value: 0.5,
                unit: "CPUs utilized".into()
            }
        );
        // 50 faults in 2 ms: 25,000/s, printed as 25.000 K/sec.
        let Shadow::Value { value, unit, .. } = shadow(&rows, &rows[1], None) else {
            panic!()
        };
        assert_eq!(
            (format!("{value:8.3}"), unit.as_str()),
            ("  25.000".into(), "K/sec")
        );
        let Shadow::Value { unit, .. } = shadow(&rows, &rows[2], None) else {
            panic!()
        };
        assert_eq!(unit, "/sec");
        // No clock counted with `:u`: no metric.
        assert_eq!(shadow(&rows, &rows[4], None), Shadow::None);
        assert_eq!(
            shadow(&rows, &rows[0], None),
            Shadow::Empty("CPUs utilized")
        );
        let hw = vec![row("cycles", 2000.0, ""), row("instructions", 3000.0, "")];
        assert_eq!(MetricFmt::F7_2Space.print(1.5), "   1.50 ");
        assert!(matches!(shadow(&hw, &hw[1], None), Shadow::Value { value, .. } if value == 1.5));
        assert_eq!(MetricFmt::F7_2Pct.print(12.5), "  12.50%");
    }
}
