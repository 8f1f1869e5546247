//! `pmx compare`'s report ([`pmx::compare::Report`]) as text, CSV and
//! JSON.
//!
//! The text is benchstat's form: per event and metric each side's mean ±
//! its 95% confidence interval (in % of the mean), then per side after the
//! base the change in % (and in the row's unit) and `p=… n=A+B`, or `~`
//! when the change is not
//! significant; a `*` marks values scaled from partial counts. A summary
//! line per side follows, then with `--tma` both trees side by side, the
//! significant nodes marked `!`, and each side's bottleneck.

use pmx::compare::{Change, Estimate, Kind, Report, Row, TmaCompare};
use serde_json::json;
use std::fmt::Write as _;

/// A mean for reading: grouped digits from 1,000 up, else four
/// significant digits.
pub fn value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.abs() >= 1000.0 {
        let s = crate::group_digits(v.abs().round() as u64);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let digits = if v == 0.0 {
        0
    } else {
        (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{v:.digits$}")
}

/// `mean ± CI%` (`mean` alone with one run).
fn estimate(e: &Option<Estimate>) -> String {
    match e {
        None => "-".to_string(),
        Some(e) if e.ci95.is_nan() => value(e.mean),
        Some(e) if e.mean != 0.0 => {
            format!("{} ± {:.1}%", value(e.mean), 100.0 * e.ci95 / e.mean.abs())
        }
        Some(e) => format!("{} ± {}", value(e.mean), value(e.ci95)),
    }
}

/// The change column: `+12.34%`, or `~` when not significant.
fn change_word(c: &Change) -> String {
    match (c.significant, c.percent) {
        (false, _) => "~".to_string(),
        (true, Some(p)) => format!("{p:+.2}%"),
        (true, None) => "changed".to_string(),
    }
}

/// `p=0.003 n=10+10`, `p<0.001`, or `(no test) n=1+1`.
fn p_word(c: &Change, na: usize, nb: usize) -> String {
    let p = match c.p {
        Some(p) if p < 0.001 => "p<0.001".to_string(),
        Some(p) => format!("p={p:.3}"),
        None => "(no test)".to_string(),
    };
    format!("{p} n={na}+{nb}")
}

/// The row's label: name, `[domain]`, `(unit)`, `*` when an estimate.
fn label(r: &Row) -> String {
    let mut s = r.name.clone();
    if !r.domain.is_empty() {
        let _ = write!(s, " [{}]", r.domain);
    }
    if !r.unit.is_empty() {
        let _ = write!(s, " ({})", r.unit);
    }
    if r.estimate {
        s.push_str(" *");
    }
    s
}

fn cells(r: &Row) -> Vec<String> {
    let mut out = vec![label(r), estimate(&r.sides[0])];
    let na = r.sides[0].map_or(0, |e| e.n);
    for (i, c) in r.changes.iter().enumerate() {
        let side = &r.sides[i + 1];
        out.push(estimate(side));
        match c {
            Some(c) => {
                let mut word = change_word(c);
                if let (true, Some(a), Some(b)) = (c.significant, r.sides[0], side) {
                    let d = b.mean - a.mean;
                    let sign = if d >= 0.0 { "+" } else { "" };
                    let _ = write!(word, " ({sign}{})", value(d));
                }
                out.push(word);
                out.push(p_word(c, na, side.map_or(0, |e| e.n)));
            }
            None => out.extend(["-".to_string(), String::new()]),
        }
    }
    out
}

/// Lines of `cells`, columns padded (the first left-aligned).
fn table(head: &[String], lines: &[Vec<String>]) -> String {
    let cols = head.len();
    let width = |c: usize| {
        lines
            .iter()
            .chain(std::iter::once(&head.to_vec()))
            .map(|l| l.get(c).map_or(0, |x| x.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..cols).map(width).collect();
    let mut s = String::new();
    for l in std::iter::once(&head.to_vec()).chain(lines) {
        let mut line = String::new();
        for (c, w) in widths.iter().enumerate() {
            let cell = l.get(c).map(String::as_str).unwrap_or("");
            let pad = w.saturating_sub(cell.chars().count());
            if c == 0 {
                let _ = write!(line, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{cell}", " ".repeat(pad));
            }
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

fn header(report: &Report) -> Vec<String> {
    let mut head = vec![String::new(), report.sides[0].label.clone()];
    for s in &report.sides[1..] {
        head.extend([s.label.clone(), "change".into(), "p".into()]);
    }
    head
}

/// The report as text.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    for side in &report.sides {
        let _ = writeln!(
            s,
            "{}: {} ({} run{})",
            side.label,
            side.sources.join(", "),
            side.runs,
            if side.runs == 1 { "" } else { "s" }
        );
    }
    s.push('\n');
    for (kind, title) in [(Kind::Event, "events"), (Kind::Metric, "metrics")] {
        let lines: Vec<Vec<String>> = report
            .rows
            .iter()
            .filter(|r| r.kind == kind)
            .map(cells)
            .collect();
        if lines.is_empty() {
            continue;
        }
        let mut head = header(report);
        head[0] = format!("{title} (mean ± 95% CI)");
        s.push_str(&table(&head, &lines));
        s.push('\n');
    }
    if report.rows.iter().any(|r| r.estimate) {
        s.push_str("* scaled from a partial count (ran < 70% of the time) on some side\n");
    }
    for line in summary_lines(report) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(t) = &report.tma {
        s.push('\n');
        s.push_str(&tma_text(t, report));
    }
    for n in &report.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// One line per side after the base.
pub fn summary_lines(report: &Report) -> Vec<String> {
    report
        .summaries
        .iter()
        .map(|m| {
            let geo = match m.geomean_percent {
                Some(g) => format!("; geomean of the significant changes {g:+.2}%"),
                None => String::new(),
            };
            format!(
                "{}: {} of {} changed significantly (p < {}){geo}",
                m.side, m.significant, m.compared, report.threshold
            )
        })
        .collect()
}

/// The trees side by side, then each side's bottleneck.
pub fn tma_text(t: &TmaCompare, report: &Report) -> String {
    let labels: Vec<String> = report.sides.iter().map(|s| s.label.clone()).collect();
    let mut s = format!(
        "Top-down analysis to level {} (tree from {}), % of slots:\n",
        t.level, t.origin
    );
    let mut head = vec![String::new(), labels[0].clone()];
    for l in &labels[1..] {
        head.extend([l.clone(), "change".into(), "p".into()]);
    }
    let lines: Vec<Vec<String>> = t
        .nodes
        .iter()
        .map(|n| {
            let indent = "  ".repeat(n.level.saturating_sub(1) as usize);
            let sig = n.changes.iter().flatten().any(|c| c.significant);
            let mark = if sig { "! " } else { "  " };
            let mut row = vec![format!("{mark}{indent}{}", n.name)];
            let pct = |i: usize| match n.sides[i] {
                Some(e) if e.ci95.is_nan() => format!("{:.1}%", e.mean),
                Some(e) => format!("{:.1} ± {:.1}", e.mean, e.ci95),
                None => "-".into(),
            };
            let over = |i: usize| if n.over[i] { " OVER" } else { "" };
            row.push(format!("{}{}", pct(0), over(0)));
            let na = n.sides[0].map_or(0, |e| e.n);
            for (i, c) in n.changes.iter().enumerate() {
                row.push(format!("{}{}", pct(i + 1), over(i + 1)));
                match c {
                    Some(c) => {
                        let nb = n.sides[i + 1].map_or(0, |e| e.n);
                        let word = match (c.significant, c.welch) {
                            (true, Some(w)) => format!("{:+.1} pt", w.diff),
                            (true, None) => change_word(c),
                            (false, _) => "~".into(),
                        };
                        row.extend([word, p_word(c, na, nb)]);
                    }
                    None => row.extend(["-".into(), String::new()]),
                }
            }
            row
        })
        .collect();
    s.push_str(&table(&head, &lines));
    for (l, path) in labels.iter().zip(&t.bottlenecks) {
        let b = if path.is_empty() {
            "none flagged".to_string()
        } else {
            path.join(".")
        };
        let _ = writeln!(s, "Bottleneck of {l}: {b}");
    }
    for v in t.verdicts(&labels) {
        let _ = writeln!(s, "{v}");
    }
    s
}

/// The report as CSV with separator `sep`: one line per row and side
/// after the base (`kind, name, domain, unit, estimate, side, base_n,
/// base_mean, base_ci95, n, mean, ci95, change_pct, p, test,
/// significant`), after a header line.
pub fn csv(report: &Report, sep: &str) -> String {
    let cols = [
        "kind",
        "name",
        "domain",
        "unit",
        "estimate",
        "side",
        "base_n",
        "base_mean",
        "base_ci95",
        "n",
        "mean",
        "ci95",
        "change_pct",
        "p",
        "test",
        "significant",
    ];
    let mut s = cols.join(sep);
    s.push('\n');
    let num = |v: Option<f64>| v.filter(|x| x.is_finite()).map(|x| x.to_string());
    for r in &report.rows {
        let base = r.sides[0];
        for (i, c) in r.changes.iter().enumerate() {
            let (side, Some(c)) = (r.sides[i + 1], c) else {
                continue;
            };
            let kind = match r.kind {
                Kind::Event => "event",
                Kind::Metric => "metric",
            };
            let fields = [
                Some(kind.to_string()),
                Some(r.name.clone()),
                Some(r.domain.clone()),
                Some(r.unit.clone()),
                Some(r.estimate.to_string()),
                Some(report.sides[i + 1].label.clone()),
                base.map(|e| e.n.to_string()),
                num(base.map(|e| e.mean)),
                num(base.map(|e| e.ci95)),
                side.map(|e| e.n.to_string()),
                num(side.map(|e| e.mean)),
                num(side.map(|e| e.ci95)),
                num(c.percent),
                num(c.p),
                Some(c.test.to_string()),
                Some(c.significant.to_string()),
            ];
            let line: Vec<String> = fields
                .into_iter()
                .map(|f| quote(&f.unwrap_or_default(), sep))
                .collect();
            let _ = writeln!(s, "{}", line.join(sep));
        }
    }
    s
}

fn quote(f: &str, sep: &str) -> String {
    if f.contains(sep) || f.contains('"') || f.contains('\n') {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

/// The report as one JSON document (the [`Report`] itself, with the
/// summary lines and, with `--tma`, the bottleneck verdicts).
pub fn json(report: &Report) -> serde_json::Value {
    let mut doc = json!(report);
    if let (Some(obj), Some(t)) = (doc.as_object_mut(), &report.tma) {
        let labels: Vec<String> = report.sides.iter().map(|s| s.label.clone()).collect();
        obj.insert("tma_verdicts".into(), json!(t.verdicts(&labels)));
    }
    doc
}

/// One side of `pmx stat --compare`: its runs of `plan` summarized and
/// composed as `pmx stat -r N` reports them (every run kept, `-M`
/// metrics per run), as a report the comparison reads.
pub fn stat_side(
    label: String,
    command: &[String],
    plan: &pmx::stat::StatPlan,
    runs: &[pmx::stat::StatRun],
    how: pmx::stat::Aggregation,
    metrics: Option<&crate::stat_render::StatMetrics>,
    notes: Vec<String>,
) -> pmx::compare::Side {
    let summary = pmx::stat::summarize(plan, runs, how, None, runs.len() as u32);
    let target = format!("'{}'", command.join(" "));
    let view = crate::stat_render::compose(target, plan, summary, metrics, notes);
    pmx::compare::Side {
        label,
        reports: vec![view.to_report()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx::compare::{compare_sides, Side};
    use pmx_formats::{ReportRow, RunCount, StatReport};

    fn side(label: &str, faults: &[f64], clock: &[f64]) -> Side {
        let row = |name: &str, unit: &str, v: &[f64]| {
            let mut r = ReportRow::new(name, "");
            r.unit = unit.into();
            r.repeats = v
                .iter()
                .map(|&x| RunCount {
                    value: Some(x),
                    raw: x as u64,
                    time_enabled_ns: 10,
                    time_running_ns: 10,
                })
                .collect();
            r
        };
        Side {
            label: label.into(),
            reports: vec![StatReport {
                rows: vec![
                    row("task-clock", "msec", clock),
                    row("page-faults", "", faults),
                ],
                ..StatReport::default()
            }],
        }
    }

    fn report() -> Report {
        let a = side("A", &[1000.0, 1001.0, 1000.0], &[1.0, 1.2, 1.1]);
        let b = side("B", &[2000.0, 2001.0, 2002.0], &[1.1, 1.0, 1.2]);
        compare_sides(&[a, b], 0.2).unwrap()
    }

    #[test]
    fn text_is_benchstat_like() {
        let t = text(&report());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "A: A (3 runs)");
        // Significant first; 3 + 3 runs with ties: the rank test's normal
        // approximation, p ≈ 0.0765 (SciPy; < 0.2).
        let faults = lines.iter().find(|l| l.starts_with("page-faults")).unwrap();
        // +100.03 %, the means 1,000.33 and 2,001 apart by 1,000.67.
        assert!(faults.contains("+100.03% (+1,001)"), "{t}");
        assert!(faults.contains("p=0.077"), "{t}");
        assert!(faults.contains("n=3+3"), "{t}");
        let clock = lines.iter().find(|l| l.starts_with("task-clock")).unwrap();
        assert!(clock.contains(" ~ "), "{t}");
        let pf = t.find("page-faults").unwrap();
        assert!(pf < t.find("task-clock").unwrap(), "{t}");
        assert!(
            t.contains("B: 1 of 2 changed significantly (p < 0.2); geomean of the significant changes +100.03%"),
            "{t}"
        );
    }

    #[test]
    fn csv_and_json_carry_the_numbers() {
        let r = report();
        let c = csv(&r, ";");
        let mut lines = c.lines();
        assert!(lines.next().unwrap().starts_with("kind;name;domain;unit"));
        let first: Vec<&str> = lines.next().unwrap().split(';').collect();
        assert_eq!(&first[..6], ["event", "page-faults", "", "", "false", "B"]);
        assert_eq!(first[15], "true");
        let j = json(&r);
        assert_eq!(j["rows"][0]["name"], "page-faults");
        assert_eq!(j["rows"][0]["changes"][0]["significant"], true);
        assert_eq!(j["summaries"][0]["significant"], 1);
    }

    #[test]
    fn values_read_well() {
        assert_eq!(value(1234567.4), "1,234,567");
        assert_eq!(value(12.3456), "12.35");
        assert_eq!(value(0.012345), "0.01235");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(-2500.0), "-2,500");
    }
}
