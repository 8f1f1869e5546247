//! A branch report in perf report's `--branch-stack --stdio` layout
//! (the lines before the table as perf's, `Samples` counting branches),
//! and as JSON.

use super::{BranchEvent, BranchKey, BranchReport};
use pmx_profile::perf_text::abbreviated;
use pmx_profile::report::pct;
use std::io::Write;

/// The report to `out`: perf's table, or JSON; flushed.
pub fn write(out: &mut dyn Write, r: &BranchReport, json: bool) -> std::io::Result<()> {
    match json {
        true => writeln!(out, "{:#}", self::json(r))?,
        false => print(out, r)?,
    }
    out.flush()
}

/// perf's table of every event with branches.
pub fn print(out: &mut dyn Write, r: &BranchReport) -> std::io::Result<()> {
    writeln!(
        out,
        "# To display the perf.data header info, please use --header/--header-only options.\n#"
    )?;
    let lost = r.report.profile.stats.lost_samples;
    writeln!(out, "#\n# Total Lost Samples: {lost}\n#")?;
    for (n, e) in r.events.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\n")?;
        }
        writeln!(
            out,
            "# Samples: {} of event '{}'",
            abbreviated(e.branches),
            e.name
        )?;
        writeln!(out, "# Event count (approx.): {}\n#", e.branches)?;
        event_table(out, &r.keys, e, r.report.options.percent_limit)?;
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx script -F ip,brstack prints every branch of every sample)\n#"
    )
}

fn event_table(
    out: &mut dyn Write,
    keys: &[BranchKey],
    e: &BranchEvent,
    limit: f64,
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = keys.iter().map(|k| k.heading().len()).collect();
    for row in &e.rows {
        for (w, k) in widths.iter_mut().zip(keys) {
            *w = (*w).max(k.width(row));
        }
    }
    // perf pads every cell but a function or address in the last
    // column of a row (its headings are padded).
    let line = |cells: Vec<String>, row: bool| {
        let mut l = String::new();
        for (j, (c, (&w, k))) in cells.iter().zip(widths.iter().zip(keys)).enumerate() {
            l.push_str("  ");
            let c = match k.cut() {
                true => c.chars().take(w).collect::<String>(),
                false => c.clone(),
            };
            if row && j + 1 == keys.len() && k.unpadded_last() {
                l.push_str(&c);
            } else {
                l.push_str(&format!("{c:<w$}"));
            }
        }
        l
    };
    let heads = keys.iter().map(|k| k.heading().to_string()).collect();
    writeln!(out, "# Overhead{}", line(heads, false))?;
    let dots = widths.iter().map(|&w| ".".repeat(w)).collect();
    writeln!(out, "# ........{}\n#", line(dots, false))?;
    for row in &e.rows {
        let share = pct(row.count, e.branches);
        if share < limit {
            continue;
        }
        let cells = keys.iter().map(|k| k.cell(row)).collect();
        writeln!(out, "  {:>7.2}%{}", share, line(cells, true))?;
    }
    Ok(())
}

/// The report as JSON: per event its branches and rows (each key's cell
/// by perf's key name, the branches and their share).
pub fn json(r: &BranchReport) -> serde_json::Value {
    let events: Vec<serde_json::Value> = (r.events.iter())
        .map(|e| {
            let rows: Vec<serde_json::Value> = (e.rows.iter())
                .filter(|row| pct(row.count, e.branches) >= r.report.options.percent_limit)
                .map(|row| {
                    let mut m = serde_json::Map::new();
                    for k in &r.keys {
                        m.insert(k.name().into(), k.cell(row).into());
                    }
                    m.insert("branches".into(), row.count.into());
                    m.insert("overhead".into(), pct(row.count, e.branches).into());
                    m.into()
                })
                .collect();
            serde_json::json!({ "event": e.name, "branches": e.branches, "rows": rows })
        })
        .collect();
    serde_json::json!({ "file": r.report.file, "events": events })
}
