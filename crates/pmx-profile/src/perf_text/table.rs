//! The hotspot table in perf report's `--stdio` layout: perf's lines
//! before it (`Total Lost Samples`, `Samples: 2K of event`, `Event count`),
//! its columns two spaces apart, headings over dots, and the tip block
//! perf ends with.

use crate::profile::{Row, SortKey};
use crate::report::{pct, Report};
use std::io::Write;

/// What perf report prints: its number columns (`-F
/// overhead,sample,period`, `-n`) and the parts (`--header`,
/// `--header-only`, `--stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Columns {
    /// Overhead (Children and Self with children).
    pub overhead: bool,
    /// Samples.
    pub samples: bool,
    /// Period.
    pub period: bool,
    /// The header block first (`--header`): no hint line then.
    pub header_shown: bool,
    /// Only the header (`--header-only`).
    pub header_only: bool,
    /// The record counts instead of the table (`--stats`).
    pub stats: bool,
}

/// The header, the record counts or the table, as `cols` says.
pub fn print(out: &mut dyn Write, r: &Report, cols: &Columns) -> std::io::Result<()> {
    if cols.header_shown || cols.header_only {
        super::header(out, r)?;
    }
    if cols.stats {
        return super::stats(out, r);
    }
    if !cols.header_only {
        table(out, r, cols)?;
    }
    Ok(())
}

fn key_cell(k: SortKey, r: &Row) -> String {
    match k {
        SortKey::Comm => r.comm.clone().unwrap_or_default(),
        SortKey::Pid => match (r.pid, &r.comm) {
            (Some(p), Some(c)) => format!("{p}:{c}"),
            (p, _) => p.map(|x| x.to_string()).unwrap_or_default(),
        },
        SortKey::Dso => r.dso.clone().unwrap_or_default(),
        SortKey::Symbol => match &r.symbol {
            Some(s) => format!("[{}] {s}", if r.kernel { 'k' } else { '.' }),
            None => String::new(),
        },
        SortKey::Cpu => r.cpu.map(|x| format!("{x:03}")).unwrap_or_default(),
    }
}

fn key_heading(k: SortKey) -> &'static str {
    match k {
        SortKey::Comm => "Command",
        SortKey::Pid => "Pid:Command",
        SortKey::Dso => "Shared Object",
        SortKey::Symbol => "Symbol",
        SortKey::Cpu => "CPU",
    }
}

/// The table of every selected event in perf's layout.
pub fn table(out: &mut dyn Write, report: &Report, cols: &Columns) -> std::io::Result<()> {
    if !cols.header_shown {
        writeln!(
            out,
            "# To display the perf.data header info, please use --header/--header-only options."
        )?;
        writeln!(out, "#")?;
    }
    let lost = report.profile.stats.lost_samples;
    writeln!(out, "#\n# Total Lost Samples: {lost}\n#")?;
    for (n, &i) in report.selected.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\n")?;
        }
        let e = &report.profile.events[i];
        writeln!(
            out,
            "# Samples: {} of event '{}'",
            super::abbreviated(e.samples),
            e.name
        )?;
        writeln!(out, "# Event count (approx.): {}\n#", e.period)?;
        let (heads, nums) = headings(report, cols);
        let rows: Vec<Vec<String>> = (report.visible(e))
            .map(|r| cells(report, cols, r, e.period))
            .collect();
        let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
        for c in &rows {
            for (w, s) in widths.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let v: Vec<String> = (cells.iter().zip(&widths).enumerate())
                .map(|(j, (s, &w))| {
                    if j < nums {
                        format!("{s:>w$}")
                    } else {
                        format!("{s:<w$}")
                    }
                })
                .collect();
            v.join("  ")
        };
        let heads: Vec<String> = heads.iter().map(|h| h.to_string()).collect();
        writeln!(out, "# {}", line(&heads))?;
        let dots: Vec<String> = widths.iter().map(|&w| ".".repeat(w)).collect();
        writeln!(out, "# {}\n#", dots.join("  "))?;
        for c in &rows {
            writeln!(out, "  {}", line(c).trim_end())?;
        }
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx report --flamegraph OUT.svg draws the same samples)\n#"
    )
}

fn headings(report: &Report, cols: &Columns) -> (Vec<&'static str>, usize) {
    let mut h = Vec::new();
    if cols.overhead && report.options.children {
        h.extend(["Children", "    Self"]);
    } else if cols.overhead {
        h.push("Overhead");
    }
    if cols.samples {
        h.push("Samples");
    }
    if cols.period {
        h.push("Period");
    }
    let nums = h.len();
    h.extend(report.sort.iter().map(|&k| key_heading(k)));
    (h, nums)
}

fn cells(report: &Report, cols: &Columns, r: &Row, total: u64) -> Vec<String> {
    let mut c = Vec::new();
    if cols.overhead && report.options.children {
        c.push(format!("{:.2}%", pct(r.children_period, total)));
    }
    if cols.overhead {
        c.push(format!("{:.2}%", pct(r.period, total)));
    }
    if cols.samples {
        c.push(r.samples.to_string());
    }
    if cols.period {
        c.push(r.period.to_string());
    }
    c.extend(report.sort.iter().map(|&k| key_cell(k, r)));
    c
}
