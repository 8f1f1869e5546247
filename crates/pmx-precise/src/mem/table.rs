//! A memory report in perf report's `--stdio` layout with `--mem-mode`:
//! the lines before the table (`Total weight`, `Sort order` in place of
//! the event count), the columns two spaces apart and padded to perf's
//! widths (each key's least width, its heading's, its cells'), the tip.

use super::keys::MemKey;
use super::report::{MemEvent, MemReport};
use std::io::Write;

/// Which number columns to print before the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemColumns {
    /// Overhead (perf's default).
    pub overhead: bool,
    /// Samples (`-n`; `perf mem report` adds it).
    pub samples: bool,
}

impl Default for MemColumns {
    fn default() -> Self {
        MemColumns {
            overhead: true,
            samples: false,
        }
    }
}

/// The width of key `k`'s column: perf's least width for the key (for the
/// symbol and data columns, what an unresolved address takes), its
/// heading's, and for names, the longest.
fn width(k: MemKey, i: usize, e: &MemEvent) -> usize {
    let longest = || e.rows.iter().map(|r| r.cells[i].len()).max().unwrap_or(0);
    let least = match k {
        // `[k] 0x` and 16 digits, or a name with its level.
        MemKey::Sym | MemKey::SymbolDaddr | MemKey::Dcacheline => longest().max(22),
        // An unresolved object takes 16 (perf's unresolved column).
        MemKey::Dso | MemKey::DsoDaddr => {
            let unknown = e.rows.iter().any(|r| r.cells[i] == "[unknown]");
            longest().max(if unknown { 16 } else { 0 })
        }
        MemKey::Comm => longest(),
        _ => k.least_width(),
    };
    least.max(k.heading().len())
}

/// Print `r` as perf report does with `--mem-mode --stdio`.
pub fn print(out: &mut dyn Write, r: &MemReport, cols: MemColumns) -> std::io::Result<()> {
    writeln!(
        out,
        "# To display the perf.data header info, please use --header/--header-only options."
    )?;
    writeln!(out, "#\n#\n# Total Lost Samples: {}\n#", r.lost_samples)?;
    for (n, e) in r.events.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\n")?;
        }
        writeln!(
            out,
            "# Samples: {} of event '{}'",
            pmx_profile::perf_text::abbreviated(e.samples),
            e.name
        )?;
        writeln!(out, "# Total weight : {}", e.total)?;
        writeln!(out, "# Sort order   : {}\n#", r.sort_order)?;
        event_table(out, r, e, cols)?;
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx script -F ip,addr,data_src,weight lists every access)\n#"
    )
}

fn event_table(
    out: &mut dyn Write,
    r: &MemReport,
    e: &MemEvent,
    cols: MemColumns,
) -> std::io::Result<()> {
    let keys: Vec<(usize, MemKey, usize)> = (r.sort.iter().enumerate())
        .filter(|(_, k)| k.shown())
        .map(|(i, &k)| (i, k, width(k, i, e)))
        .collect();
    let mut heads: Vec<String> = Vec::new();
    let mut dots: Vec<String> = Vec::new();
    if cols.overhead {
        heads.push("Overhead".into());
        dots.push(".".repeat(8));
    }
    if cols.samples {
        heads.push(format!("{:>12}", "Samples"));
        dots.push(".".repeat(12));
    }
    for &(_, k, w) in &keys {
        heads.push(format!("{:<w$}", k.heading()));
        dots.push(".".repeat(w));
    }
    writeln!(out, "# {}", heads.join("  "))?;
    writeln!(out, "# {}", dots.join("  "))?;
    writeln!(out, "#")?;
    for row in &e.rows {
        let mut cells: Vec<String> = Vec::new();
        if cols.overhead {
            let pct = pmx_profile::report::pct(row.period, e.total);
            cells.push(format!("{pct:>9.2}%"));
        }
        if cols.samples {
            cells.push(format!("{:>12}", row.samples));
        }
        for &(i, _, w) in &keys {
            cells.push(format!("{:<w$}", row.cells[i]));
        }
        let line = cells.join("  ");
        // The first column sits under `# `'s heading.
        if cols.overhead {
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}
