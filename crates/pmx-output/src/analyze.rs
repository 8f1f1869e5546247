//! `pmx analyze`'s report as text and as one JSON document; the top-down
//! tree (`--tma`) as [`crate::tma`] renders it for `pmx tma`.

use pmx::analyze::events::EventRead;
use pmx::analyze::printed::PrintedResult;
use pmx::analyze::{AnalyzeReport, IntervalSpread, MetricResult};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// A value with four decimals, or in scientific notation when very large
/// or small.
fn fmt_value(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e7 || v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        format!("{v:.4}")
    }
}

fn metric_json(r: &MetricResult) -> Value {
    let ev = &r.evaluated;
    json!({
        "name": r.name,
        "core_type": r.core_type,
        "value": r.value,
        "unit": r.unit,
        "reliability": ev.reliability,
        "least_running": ev.least_running,
        "estimate": ev.is_estimate(),
        "missing": ev.missing().map(|x| json!({
            "input": x.input, "reason": x.reason.to_string(), "chain": x.chain, "text": x.to_string(),
        })),
        "absent_inputs": r.absent,
        "intervals": r.spread.map(spread_json),
        "assumptions": ev.assumptions,
    })
}

fn spread_json(s: IntervalSpread) -> Value {
    json!({"n": s.n, "min": s.min, "mean": s.mean, "max": s.max})
}

fn event_json(e: &EventRead) -> Value {
    json!({
        "event": e.event,
        "instance": e.instance,
        "pmu": e.pmu,
        "value": e.value,
        "unit": e.unit,
        "why_not": e.why_not,
        "running_pct": e.running_pct,
        "running_min_pct": e.running_min_pct,
        "multiplexed_rows": e.multiplexed_rows,
        "domains": e.domains,
        "intervals": e.spread.map(spread_json),
    })
}

/// The report as one JSON document.
pub fn json(report: &AnalyzeReport, file: &Path) -> Value {
    let tma = report
        .tma
        .as_ref()
        .map(|t| crate::tma::tree_json(&t.report, &t.absent));
    let computed: Vec<Value> = report
        .metrics
        .iter()
        .filter(|r| r.value.is_some())
        .map(metric_json)
        .collect();
    let not: Vec<Value> = report
        .metrics
        .iter()
        .filter(|r| r.listed)
        .map(metric_json)
        .collect();
    json!({
        "file": file.display().to_string(),
        "format": report.format,
        "cpu": report.cpu,
        "cpu_note": report.cpu_note,
        "events": report.events,
        "events_read": report.events_read.iter().map(event_json).collect::<Vec<_>>(),
        "intervals": report.intervals,
        "smt_on": report.smt_on,
        "metrics": computed,
        "not_computed": not,
        "tma": tma,
        "modified_events": report.modified.iter().map(|(e, base, mods)| json!({
            "event": e, "matched_as": base, "modifiers": mods,
        })).collect::<Vec<_>>(),
        "perf_printed": report.printed.iter().map(printed_json).collect::<Vec<_>>(),
        "warnings": report.library.warnings,
    })
}

fn printed_json(p: &PrintedResult) -> Value {
    json!({
        "time": p.printed.time,
        "domain": p.printed.domain,
        "event": p.printed.event,
        "core_type": p.core_type,
        "perf_value": p.printed.value,
        "perf_unit": p.printed.unit,
        "perf_threshold": p.printed.threshold,
        "pmx_metric": p.pmx_metric,
        "pmx_value": p.pmx_value,
        "agrees": p.agrees(),
        "why_not": p.why_not,
    })
}

/// The report as text.
pub fn text(report: &AnalyzeReport, file: &Path) -> String {
    let mut s = heading(report, file);
    if let Some(n) = &report.cpu_note {
        let _ = writeln!(s, "{n}");
    }
    for (e, base, mods) in &report.modified {
        let _ = writeln!(
            s,
            "{e}: counted with modifier '{mods}', matched to metric inputs as {base}"
        );
    }
    events_text(&mut s, report);
    if report.selected {
        metrics_text(&mut s, report);
        not_computed_text(&mut s, report);
    }
    printed_text(&mut s, report);
    if let Some(t) = &report.tma {
        s.push('\n');
        s.push_str(&crate::tma::tree_text(&t.report, t.level, &t.absent, false));
    }
    for w in &report.library.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The metrics perf printed, pmx's value beside each.
fn printed_text(s: &mut String, report: &AnalyzeReport) {
    if report.printed.is_empty() {
        return;
    }
    let agree = report
        .printed
        .iter()
        .filter(|p| p.agrees() == Some(true))
        .count();
    let _ = writeln!(
        s,
        "\nMetrics perf printed ({}; pmx agrees on {agree}):",
        report.printed.len()
    );
    for p in &report.printed {
        let m = &p.printed;
        let mut at = String::new();
        if let Some(t) = m.time {
            let _ = write!(at, "{t:.3}s ");
        }
        if !m.domain.is_empty() {
            let _ = write!(at, "{} ", m.domain);
        }
        let perf = m
            .value
            .map(|v| format!("{v:.*}", m.decimals))
            .unwrap_or_else(|| "-".into());
        let pmx = match (p.pmx_value, &p.why_not) {
            (Some(v), _) => format!(
                "pmx {}{}",
                fmt_value(v),
                match p.agrees() {
                    Some(false) => "  DIFFERS",
                    _ => "",
                }
            ),
            (None, Some(why)) => format!("pmx: {why}"),
            (None, None) => "pmx: -".into(),
        };
        let rated = match &m.threshold {
            Some(t) => format!("  (perf: {t})"),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "  {at}{:<28} perf {perf:>10} {:<24} {pmx}{rated}",
            m.event, m.unit
        );
    }
}

/// A count as read: whole numbers without decimals.
fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        fmt_value(v)
    }
}

/// Every event read, with its value, unit, running share and spread;
/// on a hybrid part under the PMU it counted on.
fn events_text(s: &mut String, report: &AnalyzeReport) {
    let evs = &report.events_read;
    if evs.is_empty() {
        return;
    }
    let mut pmus: Vec<Option<&str>> = Vec::new();
    for e in evs {
        if !pmus.contains(&e.pmu.as_deref()) {
            pmus.push(e.pmu.as_deref());
        }
    }
    pmus.sort_by_key(|p| p.is_some());
    let name = |e: &EventRead| match e.instance {
        0 => e.event.clone(),
        n => format!("{} #{}", e.event, n + 1),
    };
    let w = evs
        .iter()
        .map(|e| name(e).len())
        .max()
        .unwrap_or(10)
        .clamp(10, 48);
    let _ = writeln!(s, "\nEvents read ({}):", evs.len());
    let hybrid = pmus.iter().any(|p| p.is_some());
    for pmu in pmus {
        if hybrid {
            let _ = writeln!(s, "  {}:", pmu.unwrap_or("no core PMU"));
        }
        let indent = if hybrid { "    " } else { "  " };
        for e in evs.iter().filter(|e| e.pmu.as_deref() == pmu) {
            let _ = writeln!(s, "{indent}{:<w$} {}", name(e), event_tail(e));
        }
    }
}

fn event_tail(e: &EventRead) -> String {
    let mut t = match (e.value, &e.why_not) {
        (Some(v), _) => format!("{:>16} {:<6}", fmt_count(v), e.unit),
        (None, why) => format!("{:>16} {:<6} {}", "-", e.unit, why.as_deref().unwrap_or("")),
    };
    if let Some(p) = e.running_pct.filter(|_| e.value.is_some()) {
        let _ = write!(t, " running {p:6.2}%");
        if let Some(m) = e.running_min_pct.filter(|m| *m < p - 0.005) {
            let _ = write!(t, " (min {m:.2}%)");
        }
    }
    if e.domains > 1 {
        let _ = write!(t, "  {} domains summed", e.domains);
    }
    if let Some(sp) = e.spread {
        let _ = write!(
            t,
            "  per interval min {} mean {} max {}",
            fmt_count(sp.min),
            fmt_count(sp.mean),
            fmt_count(sp.max)
        );
    }
    t.trim_end().to_string()
}

fn heading(report: &AnalyzeReport, file: &Path) -> String {
    let intervals = report.intervals;
    format!(
        "{}: {}, {} events{}, CPU {}{}\n",
        file.display(),
        report.format,
        report.events.len(),
        if intervals > 0 {
            format!(
                ", {intervals} intervals (values over their sum; min/mean/max per interval beside)"
            )
        } else {
            String::new()
        },
        report.cpu,
        if report.smt_on {
            ", SMT on"
        } else {
            ", SMT off (--smt on if it was on)"
        },
    )
}

fn metrics_text(s: &mut String, report: &AnalyzeReport) {
    let shown: Vec<&MetricResult> = report
        .metrics
        .iter()
        .filter(|r| r.value.is_some())
        .collect();
    let w = shown
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(10)
        .clamp(10, 48);
    let _ = writeln!(s, "\nMetrics ({} computed):", shown.len());
    for r in &shown {
        let ev = &r.evaluated;
        let mut tail = String::new();
        if let Some(rel) = ev.reliability {
            let _ = write!(tail, "  reliability {:.0}%", rel * 100.0);
        }
        if ev.is_estimate() {
            let _ = write!(
                tail,
                "  ESTIMATE ({} ran {:.0}% of the time)",
                ev.least_running.as_deref().unwrap_or("an input"),
                ev.reliability.unwrap_or(0.0) * 100.0
            );
        }
        if let Some(sp) = r.spread {
            let _ = write!(
                tail,
                "  per interval min {} mean {} max {}",
                fmt_value(sp.min),
                fmt_value(sp.mean),
                fmt_value(sp.max)
            );
        }
        let v = r.value.unwrap_or(0.0);
        let name = match &r.core_type {
            Some(c) => format!("{} ({c})", r.name),
            None => r.name.clone(),
        };
        let _ = writeln!(s, "  {:<w$} {:>14} {:<8}{tail}", name, fmt_value(v), r.unit);
    }
}

fn not_computed_text(s: &mut String, report: &AnalyzeReport) {
    let not: Vec<&MetricResult> = report.metrics.iter().filter(|r| r.listed).collect();
    if !not.is_empty() {
        let _ = writeln!(s, "\nNot computed ({}):", not.len());
        for r in &not {
            let why = r
                .evaluated
                .missing()
                .map(|m| m.to_string())
                .unwrap_or_default();
            if r.absent.is_empty() {
                let _ = writeln!(s, "  {}: {why}", r.name);
            } else {
                const SHOW: usize = 6;
                let mut list = r.absent[..r.absent.len().min(SHOW)].join(", ");
                if r.absent.len() > SHOW {
                    let _ = write!(
                        list,
                        " and {} more (--json lists all)",
                        r.absent.len() - SHOW
                    );
                }
                let _ = writeln!(s, "  {}: missing {list}", r.name);
            }
        }
    }
    if report.default_mode {
        let other = report.metrics.iter().filter(|r| r.value.is_none()).count() - not.len();
        if other > 0 {
            let _ = writeln!(
                s,
                "\n({other} other metrics of the library have none of their inputs in the file; name them with -M to see what they need)"
            );
        }
    }
}
