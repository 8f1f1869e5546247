//! Pieces of perf stat's output shared by its text, `-x` and `-j` forms:
//! the aggregation labels (`CPU3`, `S0-D0-C1`, `S0-D0`, `S0`, `N0`,
//! `comm-1234`), numbers with or without thousands separators, the time
//! stamp of `-I`, and metric units.

/// Kinds of perf's aggregation labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    /// `-A`: `CPU3` (no CPU count follows).
    Cpu,
    /// `--per-core`, `--per-socket`, `--per-die`, `--per-node`,
    /// `--per-cache`: `S0-D0-C1`, `S0`, `S0-D0`, `N0`, `S0-D0-L3-ID0`
    /// (the number of CPUs aggregated follows).
    Topology,
    /// `--per-thread`: `comm-pid` (no count follows).
    Thread,
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The kind of aggregation label `s` is, if it is one.
pub(crate) fn label(s: &str) -> Option<Label> {
    if let Some(n) = s.strip_prefix("CPU") {
        return digits(n).then_some(Label::Cpu);
    }
    if let Some(n) = s.strip_prefix('N') {
        if digits(n) {
            return Some(Label::Topology);
        }
    }
    if let Some(rest) = s.strip_prefix('S') {
        // S0, S0-D0, S0-C1, S0-D0-C1, S0-D0-L3-ID0.
        let mut parts = rest.split('-');
        if parts.next().is_some_and(digits)
            && parts.all(|p| {
                ["D", "C", "L", "ID"]
                    .iter()
                    .any(|k| p.strip_prefix(k).is_some_and(digits))
            })
        {
            return Some(Label::Topology);
        }
    }
    // perf --per-thread: `comm-pid` (the comm may hold dashes).
    let (comm, pid) = s.rsplit_once('-')?;
    (!comm.is_empty() && digits(pid) && !s.contains('/')).then_some(Label::Thread)
}

/// A count as perf prints it: `1,234,567` (`-B`), `1234567`,
/// `1,234.56` or `0.54` (msec). `None` for anything else.
pub(crate) fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty()
        || !s
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'-')
    {
        return None;
    }
    if s.matches('.').count() >= 2 && !s.contains(',') {
        // A locale's thousands separator (`627.912.025`).
        let mut groups = s.split('.');
        let first = groups.next().unwrap_or("");
        if first.is_empty() || first.len() > 3 || !groups.all(|g| g.len() == 3 && digits(g)) {
            return None;
        }
        return s.replace('.', "").parse::<f64>().ok();
    }
    if s.contains(',') {
        // Thousands separators: groups of three digits after the first.
        let int = s.split('.').next().unwrap_or(s);
        let mut groups = int.split(',');
        let first = groups.next().unwrap_or("");
        if first.is_empty() || first.len() > 3 || !groups.all(|g| g.len() == 3 && digits(g)) {
            return None;
        }
        return s
            .replace(',', "")
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite());
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// perf's `-I` time stamp: seconds with nine decimals (`1.000123456`).
pub(crate) fn time_stamp(s: &str) -> Option<f64> {
    let (i, f) = s.split_once('.')?;
    (digits(i) && f.len() == 9 && digits(f)).then(|| s.parse().ok())?
}

/// A metric value and unit as perf wrote them, with the unit normalized:
/// whitespace collapsed, a `%` written after the value (`1.15%`) moved
/// in front of the unit (`% of all branches`), like perf 6's `%  tma_…`.
#[cfg(test)]
pub(crate) fn metric(value: &str, unit: &str) -> (Option<f64>, String) {
    let (v, u, _) = metric_with_decimals(value, unit);
    (v, u)
}

/// [`metric`], with the number of decimals the value was written with.
pub(crate) fn metric_with_decimals(value: &str, unit: &str) -> (Option<f64>, String, usize) {
    let value = value.trim();
    let (v, pct) = match value.strip_suffix('%') {
        Some(v) => (v, true),
        None => (value, false),
    };
    let mut u: String = unit.split_whitespace().collect::<Vec<_>>().join(" ");
    if pct {
        u = if u.is_empty() {
            "%".into()
        } else {
            format!("% {u}")
        };
    } else if let Some(rest) = u.strip_prefix('%') {
        let rest = rest.trim_start();
        u = if rest.is_empty() {
            "%".into()
        } else {
            format!("% {rest}")
        };
    }
    let decimals = v.split_once('.').map_or(0, |(_, f)| f.len());
    (number(v).or_else(|| super::num(v)), u, decimals)
}

/// The last row, when it is `event`'s at `time`: the row a metric perf
/// printed belongs to.
pub(crate) fn row_of(
    report: &crate::report::StatReport,
    time: Option<f64>,
    event: &str,
) -> Option<usize> {
    let i = report.rows.len().checked_sub(1)?;
    let r = &report.rows[i];
    (r.event == event && r.time == time).then_some(i)
}

/// Keep a metric perf printed (`value` and `unit` as perf wrote them)
/// beside the row it belongs to; nothing when both are empty or the value
/// is not a number and has no unit.
pub(crate) fn push_printed(
    report: &mut crate::report::StatReport,
    time: Option<f64>,
    domain: String,
    event: String,
    value: &str,
    unit: &str,
) {
    if value.trim().is_empty() && unit.trim().is_empty() {
        return;
    }
    let (value, unit, decimals) = metric_with_decimals(value, unit);
    if value.is_none() && unit.is_empty() {
        return;
    }
    let row = row_of(report, time, &event);
    report.printed.push(crate::report::PrintedMetric {
        time,
        domain,
        event,
        value,
        unit,
        decimals,
        row,
        threshold: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_numbers_and_time_stamps() {
        assert_eq!(label("CPU12"), Some(Label::Cpu));
        for l in ["S0", "S1-D0", "S0-D0-C12", "S0-C3", "N1", "S0-D0-L3-ID0"] {
            assert_eq!(label(l), Some(Label::Topology), "{l}");
        }
        assert_eq!(label("perf-1234"), Some(Label::Thread));
        assert_eq!(label("kworker/0:1-events-15"), None);
        for l in ["cycles", "L1-dcache-load-misses", "CPU", "S0-X1", "1,234"] {
            assert_eq!(label(l), None, "{l}");
        }
        assert_eq!(number("1,234,567"), Some(1234567.0));
        assert_eq!(number("1,234.56"), Some(1234.56));
        assert_eq!(number("1234567"), Some(1234567.0));
        assert_eq!(number("0.54"), Some(0.54));
        assert_eq!(number("12,34"), None);
        assert_eq!(number("627.912.025"), Some(627912025.0));
        assert_eq!(number("cycles"), None);
        assert_eq!(time_stamp("1.000123456"), Some(1.000123456));
        assert_eq!(time_stamp("1,000.12"), None);
        assert_eq!(time_stamp("2.50"), None);
        assert_eq!(
            metric("1.15%", "of all branches"),
            (Some(1.15), "% of all branches".into())
        );
        assert_eq!(
            metric("17.3", "%  tma_frontend_bound"),
            (Some(17.3), "% tma_frontend_bound".into())
        );
        assert_eq!(
            metric("0.89", " insn per cycle "),
            (Some(0.89), "insn per cycle".into())
        );
    }
}
