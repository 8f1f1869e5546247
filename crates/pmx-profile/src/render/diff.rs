//! Renderers of a [`DiffReport`]: perf diff's `--stdio` table ([`table`]:
//! `Baseline`, `New` and `Delta`/`Delta Abs`/`Ratio` columns, then the
//! keys) and JSON ([`json`]). The flame graph and the folded stacks are
//! [`DiffReport::flame_svg`] and [`DiffReport::folded`].

use super::{aligned, header_lines};
use crate::diff::{Compute, DiffReport, DiffRow, EventDiff, Side};
use crate::profile::SortKey;
use crate::report::Report;
use std::io::Write;

fn key_name(k: &SortKey) -> &'static str {
    match k {
        SortKey::Comm => "comm",
        SortKey::Pid => "pid",
        SortKey::Dso => "dso",
        SortKey::Symbol => "symbol",
        SortKey::Cpu => "cpu",
        SortKey::Tid => "tid",
    }
}

/// What the diff header says of one file: its name, then the lines of
/// its report header that tell recordings apart.
fn side_lines(what: &str, r: &Report) -> Vec<String> {
    let mut h = vec![format!("{what}: {}", r.file)];
    let keep = ["WARNING", "captured on", "host:", "cmdline:", "written by:"];
    h.extend(
        header_lines(r)
            .into_iter()
            .filter(|l| keep.iter().any(|k| l.starts_with(k)))
            .map(|l| format!("  {l}")),
    );
    h
}

/// The header of the differential table.
pub fn header(d: &DiffReport) -> Vec<String> {
    let keys: Vec<&str> = d.sort().iter().map(key_name).collect();
    let mut h = vec![
        format!(
            "pmx report --diff: rows matched by {} (names, never addresses); shares of each file's total {}period",
            keys.join(","),
            if d.new.options.children { "inclusive " } else { "" }
        ),
    ];
    h.extend(side_lines("base", &d.base));
    h.extend(side_lines("new", &d.new));
    if !d.only_base.is_empty() {
        h.push(format!("events in base only: {}", d.only_base.join(", ")));
    }
    if !d.only_new.is_empty() {
        h.push(format!("events in new only: {}", d.only_new.join(", ")));
    }
    h
}

fn share_cell(s: Option<Side>, missing: &str) -> String {
    s.map_or_else(|| missing.to_string(), |s| format!("{:.2}%", s.share))
}

fn change_cell(r: &DiffRow, compute: Compute) -> String {
    match compute {
        Compute::Ratio => r
            .ratio()
            .map_or_else(|| "N/A".into(), |x| format!("{x:.6}")),
        _ => format!("{:+.2}%", r.delta()),
    }
}

fn cells(d: &DiffReport, r: &DiffRow) -> Vec<String> {
    let mut c = vec![
        share_cell(r.base, "new"),
        share_cell(r.new, "gone"),
        change_cell(r, d.compute),
    ];
    for k in d.sort() {
        c.push(match k {
            SortKey::Comm => r.comm.clone().unwrap_or_default(),
            SortKey::Pid => r.pid.map(|x| x.to_string()).unwrap_or_default(),
            SortKey::Dso => r.dso.clone().unwrap_or_default(),
            SortKey::Symbol => r
                .symbol
                .as_ref()
                .map(|s| format!("[{}] {s}", if r.kernel { 'k' } else { '.' }))
                .unwrap_or_default(),
            SortKey::Cpu => r.cpu.map(|x| format!("{x:03}")).unwrap_or_default(),
            // Threads do not pair across two files.
            SortKey::Tid => String::new(),
        });
    }
    c
}

/// The column headings (the first three are numbers).
fn headings(d: &DiffReport) -> Vec<&'static str> {
    let mut h = vec![
        "Baseline",
        "New",
        match d.compute {
            Compute::DeltaAbs => "Delta Abs",
            Compute::Delta => "Delta",
            Compute::Ratio => "Ratio",
        },
    ];
    for k in d.sort() {
        h.push(match k {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid",
            SortKey::Dso => "Shared Object",
            SortKey::Symbol => "Symbol",
            SortKey::Cpu => "CPU",
            SortKey::Tid => "Tid",
        });
    }
    h
}

/// The differential table of every event of both files, after the
/// header: a row in NEW only says `new` in the Baseline column, one in
/// BASE only `gone` in the New column.
pub fn table(out: &mut dyn Write, d: &DiffReport) -> std::io::Result<()> {
    for l in header(d) {
        writeln!(out, "# {l}")?;
    }
    for e in &d.events {
        writeln!(out, "#")?;
        writeln!(
            out,
            "# Event '{}': base {} samples (event count {}), new {} samples (event count {})",
            e.name, e.base.samples, e.base.period, e.new.samples, e.new.period
        )?;
        writeln!(out, "#")?;
        let heads = headings(d);
        let rows: Vec<Vec<String>> = d.visible(e).map(|r| cells(d, r)).collect();
        let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
        for c in &rows {
            for (w, s) in widths.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        writeln!(out, "{}", aligned("#", &heads, &widths, 3).trim_end())?;
        writeln!(out, "#")?;
        for c in &rows {
            writeln!(out, "{}", aligned(" ", c, &widths, 3).trim_end())?;
        }
        if e.rows.is_empty() {
            writeln!(out, "  (no samples in either file)")?;
        }
    }
    Ok(())
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn side_json(s: Option<Side>) -> serde_json::Value {
    s.map_or(
        serde_json::Value::Null,
        |s| serde_json::json!({"share": round(s.share), "samples": s.samples, "period": s.period}),
    )
}

fn event_json(d: &DiffReport, e: &EventDiff) -> serde_json::Value {
    use serde_json::json;
    let rows: Vec<serde_json::Value> = d
        .visible(e)
        .map(|r| {
            json!({
                "change": r.change().name(),
                "comm": r.comm, "pid": r.pid, "dso": r.dso, "symbol": r.symbol,
                "kernel": r.kernel, "cpu": r.cpu,
                "base": side_json(r.base),
                "new": side_json(r.new),
                "delta": round(r.delta()),
                "ratio": r.ratio(),
            })
        })
        .collect();
    json!({
        "name": e.name,
        "base": {"samples": e.base.samples, "period": e.base.period},
        "new": {"samples": e.new.samples, "period": e.new.period},
        "rows": rows,
    })
}

fn file_json(r: &Report) -> serde_json::Value {
    let f = &r.profile.features;
    serde_json::json!({
        "file": r.file,
        "hostname": f.hostname,
        "cmdline": f.cmdline,
        "version": f.version,
        "truncated": r.profile.truncated.is_some(),
    })
}

/// The differential profile as one JSON value: both files, how rows were
/// matched and computed, per event both totals and the rows shown
/// (`change`: `matched`, `new` or `gone`; `base`/`new`: share, samples and
/// period, or null; `delta` in percentage points; `ratio` of periods).
pub fn json(d: &DiffReport) -> serde_json::Value {
    serde_json::json!({
        "base": file_json(&d.base),
        "new": file_json(&d.new),
        "compute": d.compute.name(),
        "sort": d.sort().iter().map(key_name).collect::<Vec<_>>(),
        "children": d.new.options.children,
        "events": d.events.iter().map(|e| event_json(d, e)).collect::<Vec<_>>(),
        "events_only_in_base": d.only_base,
        "events_only_in_new": d.only_new,
        "warnings": d.warnings(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::tests::moved;

    /// BASE: alpha 75%, common 25%; NEW: beta 60%, common 25%, alpha 15%
    /// (the profiles of `crate::diff`'s tests).
    #[test]
    fn table_says_new_and_gone_and_aligns_like_perf_diff() {
        let mut d = moved(Compute::DeltaAbs);
        // alpha gone from NEW: its row shows `gone` in the New column.
        let e = &mut d.new.profile.events[0];
        e.rows.retain(|r| r.symbol.as_deref() != Some("alpha"));
        e.period = 340;
        let d = crate::diff::compare(d.base, d.new, Compute::DeltaAbs);
        let mut out = Vec::new();
        table(&mut out, &d).unwrap();
        let want = "\
# pmx report --diff: rows matched by dso,symbol (names, never addresses); shares of each file's total period
# base: a/base.data
# new: b/new.data
#
# Event 'cpu-clock': base 20 samples (event count 200), new 40 samples (event count 340)
#
# Baseline     New  Delta Abs  Shared Object  Symbol
#
    75.00%    gone    -75.00%  m              [.] alpha
       new  70.59%    +70.59%  m              [.] beta
    25.00%  29.41%     +4.41%  m              [.] common
";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn ratio_column_and_json_fields() {
        let d = moved(Compute::Ratio);
        let mut out = Vec::new();
        table(&mut out, &d).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("# Baseline     New     Ratio  Shared Object  Symbol\n"),
            "{t}"
        );
        assert!(
            t.contains("\n       new  60.00%       N/A  m              [.] beta\n"),
            "{t}"
        );
        assert!(
            t.contains("\n    75.00%  15.00%  0.400000  m              [.] alpha\n"),
            "{t}"
        );
        let v = json(&d);
        assert_eq!(v["compute"], "ratio");
        assert_eq!(v["sort"], serde_json::json!(["dso", "symbol"]));
        let beta = &v["events"][0]["rows"][0];
        assert_eq!(beta["change"], "new");
        assert_eq!(beta["base"], serde_json::Value::Null);
        assert_eq!(
            beta["new"],
            serde_json::json!({"share": 60.0, "samples": 24, "period": 240})
        );
        assert_eq!(beta["delta"], 60.0);
        assert_eq!(beta["ratio"], serde_json::Value::Null);
        let alpha = &v["events"][0]["rows"][2];
        assert_eq!(alpha["change"], "matched");
        assert_eq!(alpha["ratio"], 0.4);
        assert_eq!(
            v["events"][0]["new"],
            serde_json::json!({"samples": 40, "period": 400})
        );
    }
}
