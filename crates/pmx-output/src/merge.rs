//! `pmx merge`'s report: as a table with the members that stand out, as
//! CSV, or as one JSON object.

use pmx::merge::{MergeReport, Merged, ValueKind};
use serde_json::{json, Value};

/// A number for the table: whole numbers as integers, others with one
/// (≥ 100) or four decimals, trailing zeros dropped.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = if v.abs() >= 100.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.4}")
        };
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn member(report: &MergeReport, i: usize) -> String {
    report.members[i].name.clone()
}

/// The report as one JSON object (and a newline).
pub fn json(report: &MergeReport) -> String {
    let name = |i: usize| member(report, i);
    let list = |kind: ValueKind| -> Vec<Value> {
        report
            .values
            .iter()
            .filter(|m| m.key.0 == kind)
            .map(|Merged { key, unit, stats: s }| {
                json!({
                    "name": key.1,
                    "domain": key.2,
                    "unit": unit,
                    "n": s.n,
                    "sum": s.sum,
                    "min": s.min.0,
                    "min_member": name(s.min.1),
                    "max": s.max.0,
                    "max_member": name(s.max.1),
                    "mean": s.mean,
                    "median": s.median,
                    "outliers": s.outliers.iter().map(|(i, v, pct)| json!({
                        "member": name(*i), "value": v, "deviation_pct": if pct.is_finite() { json!(pct) } else { Value::Null },
                    })).collect::<Vec<_>>(),
                })
            })
            .collect()
    };
    let doc = json!({
        "by": report.by.word(),
        "members": report.members.iter().map(|m| json!({
            "name": m.name, "host": m.host, "rank": m.rank, "files": m.files,
        })).collect::<Vec<_>>(),
        "events": list(ValueKind::Event),
        "metrics": list(ValueKind::Metric),
    });
    format!("{doc}\n")
}

/// The report as CSV with separator `sep`, header first.
pub fn csv(report: &MergeReport, sep: &str) -> String {
    let cols = [
        "kind",
        "name",
        "domain",
        "unit",
        "n",
        "sum",
        "min",
        "min_member",
        "max",
        "max_member",
        "mean",
        "median",
        "outliers",
    ];
    let mut out = cols.join(sep);
    out.push('\n');
    let name = |i: usize| member(report, i);
    for Merged {
        key,
        unit,
        stats: s,
    } in &report.values
    {
        let outl: Vec<String> = s.outliers.iter().map(|(i, _, _)| name(*i)).collect();
        let fields = [
            key.0.word().to_string(),
            key.1.clone(),
            key.2.clone(),
            unit.clone(),
            s.n.to_string(),
            s.sum.to_string(),
            s.min.0.to_string(),
            name(s.min.1),
            s.max.0.to_string(),
            name(s.max.1),
            s.mean.to_string(),
            s.median.to_string(),
            outl.join(" "),
        ];
        let quoted: Vec<String> = fields
            .iter()
            .map(|f| {
                if f.contains(sep) || f.contains('"') {
                    format!("\"{}\"", f.replace('"', "\"\""))
                } else {
                    f.clone()
                }
            })
            .collect();
        out.push_str(&quoted.join(sep));
        out.push('\n');
    }
    out
}

/// The report as a table, the members that stand out, and the values not
/// every member has.
pub fn text(report: &MergeReport) -> String {
    let mut out = format!(
        "pmx merge: {} files, {} members (by {})\n\n",
        report.files,
        report.members.len(),
        report.by.word()
    );
    table(&mut out, report);
    outliers(&mut out, report);
    let n = report.members.len();
    let short: Vec<String> = report
        .values
        .iter()
        .filter(|m| m.stats.n < n)
        .map(|m| format!("{} ({} of {n})", m.key.1, m.stats.n))
        .collect();
    if !short.is_empty() {
        out.push_str(&format!("not in every member: {}\n", short.join(", ")));
    }
    out
}

fn table(out: &mut String, report: &MergeReport) {
    let name = |i: usize| member(report, i);
    let mut table: Vec<[String; 8]> = vec![[
        "name".into(),
        "domain".into(),
        "n".into(),
        "sum".into(),
        "min (member)".into(),
        "max (member)".into(),
        "mean".into(),
        "unit".into(),
    ]];
    for Merged {
        key,
        unit,
        stats: s,
    } in &report.values
    {
        table.push([
            key.1.clone(),
            key.2.clone(),
            s.n.to_string(),
            num(s.sum),
            format!("{} ({})", num(s.min.0), name(s.min.1)),
            format!("{} ({})", num(s.max.0), name(s.max.1)),
            num(s.mean),
            unit.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &table {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 || c == 1 || c == 7 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn outliers(out: &mut String, report: &MergeReport) {
    let flagged: Vec<&Merged> = report
        .values
        .iter()
        .filter(|m| !m.stats.outliers.is_empty())
        .collect();
    out.push('\n');
    if flagged.is_empty() {
        out.push_str("no member stands out (robust z > 3.5, > 10% from the median, and for counts beyond counting noise)\n");
        return;
    }
    out.push_str("stand out (robust z > 3.5, > 10% from the median, and for counts beyond counting noise):\n");
    for Merged {
        key,
        unit,
        stats: s,
    } in flagged
    {
        for (i, v, pct) in &s.outliers {
            let what = if key.2.is_empty() {
                key.1.clone()
            } else {
                format!("{} {}", key.1, key.2)
            };
            out.push_str(&format!(
                "  {what}: {} = {}{} (median {}, {})\n",
                member(report, *i),
                num(*v),
                if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                },
                num(s.median),
                if pct.is_finite() {
                    format!("{pct:+.0}%")
                } else {
                    "median is 0".to_string()
                }
            ));
        }
    }
}
