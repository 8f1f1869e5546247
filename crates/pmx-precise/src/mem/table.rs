//! A memory report in perf report's `--stdio` layout with `--mem-mode`:
//! the lines before the table (`Total weight`, `Sort order` in place of
//! the event count), the columns two spaces apart and padded to perf's
//! widths (each key's least width, its heading's, its cells'), the tip.

use super::export::MemExports;
use super::keys::MemKey;
use super::report::{MemEvent, MemReport};
use pmx_profile::perf_text::abbreviated;
use std::fmt::Write as _;
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
/// heading's, and for names, the longest. perf widens the data symbol's
/// column for a named address to the name and 22 (what an address takes
/// with its level), the cache line's to one more.
fn width(k: MemKey, r: &MemReport, e: &MemEvent) -> usize {
    let longest = || {
        e.rows
            .iter()
            .map(|row| r.cell_len(k, row))
            .max()
            .unwrap_or(0)
    };
    let named = || (e.rows.iter().filter_map(|row| r.perf_symbol_len(row))).max();
    let least = match k {
        // `[k] 0x` and 16 digits, or a name with its level.
        MemKey::Sym => longest().max(22),
        MemKey::SymbolDaddr => longest().max(22).max(named().map_or(0, |n| n + 22)),
        MemKey::Dcacheline => longest().max(22).max(named().map_or(0, |n| n + 23)),
        // An unresolved object takes 16 (perf's unresolved column), and
        // the code's binary as much when a row's symbol is unresolved
        // (perf's `hists__set_unres_dso_col_len`).
        MemKey::Dso if e.rows.iter().any(|row| r.unresolved(row)) => longest().max(16),
        MemKey::Dso | MemKey::DsoDaddr => {
            let unknown = (e.rows.iter()).any(|row| r.object_name(k, row) == Some("[unknown]"));
            longest().max(if unknown { 16 } else { 0 })
        }
        MemKey::Comm => longest(),
        _ => k.least_width(),
    };
    least.max(k.heading().len())
}

/// Spaces a cell is padded with, a slice at a time.
const SPACES: &str = "                                                                ";

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
            abbreviated(e.samples),
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
    let keys: Vec<(MemKey, usize)> = (r.sort.iter())
        .filter(|k| k.shown())
        .map(|&k| (k, width(k, r, e)))
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
    for &(k, w) in &keys {
        heads.push(format!("{:<w$}", k.heading()));
        dots.push(".".repeat(w));
    }
    writeln!(out, "# {}", heads.join("  "))?;
    writeln!(out, "# {}", dots.join("  "))?;
    writeln!(out, "#")?;
    // perf pads a symbol's cell (`sym`, `symbol_daddr`, `dcacheline`)
    // only before another column: not when its key is the last.
    let unpadded = r
        .sort
        .last()
        .filter(|k| matches!(k, MemKey::Sym | MemKey::SymbolDaddr | MemKey::Dcacheline));
    let mut line = String::new();
    let mut words = Words::default();
    // The rows come by cost: the percentage of the row before is mostly
    // this row's too (written once per cost, not once per row).
    let mut pct_of: (u64, String) = (u64::MAX, String::new());
    for row in &e.rows {
        line.clear();
        // The first column sits under `# `'s heading.
        if !cols.overhead {
            line.push_str("  ");
        }
        let mut sep = "";
        if cols.overhead {
            if pct_of.0 != row.period || pct_of.1.is_empty() {
                let pct = pmx_profile::report::pct(row.period, e.total);
                pct_of.1.clear();
                let _ = write!(pct_of.1, "{pct:>9.2}%");
                pct_of.0 = row.period;
            }
            line.push_str(&pct_of.1);
            sep = "  ";
        }
        if cols.samples {
            let _ = write!(line, "{sep}{:>12}", row.samples);
            sep = "  ";
        }
        for &(k, w) in &keys {
            line.push_str(sep);
            let at = line.len();
            match words.of(k, row.first.data_src) {
                Some(text) => line.push_str(text),
                None => r.write_cell(&mut line, k, row),
            }
            let cell = &line[at..];
            let n = if cell.is_ascii() {
                cell.len()
            } else {
                cell.chars().count()
            };
            if unpadded != Some(&k) {
                let mut pad = w.saturating_sub(n);
                while pad > 0 {
                    let k = pad.min(SPACES.len());
                    line.push_str(&SPACES[..k]);
                    pad -= k;
                }
            }
            sep = "  ";
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// The words of the `data_src` columns (`mem`, `snoop`, `tlb`, `blocked`),
/// made once per distinct value rather than once per row.
#[derive(Default)]
struct Words {
    made: rustc_hash::FxHashMap<u64, [String; 4]>,
}

impl Words {
    /// The text of key `k`'s cell for a sample of `data_src`; `None` for a
    /// key not of `data_src`.
    fn of(&mut self, k: MemKey, data_src: u64) -> Option<&str> {
        use pmx_profile::data_src as w;
        let i = match k {
            MemKey::Mem => 0,
            MemKey::Snoop => 1,
            MemKey::Tlb => 2,
            MemKey::Blocked => 3,
            _ => return None,
        };
        let texts = self.made.entry(data_src).or_insert_with(|| {
            let d = pmx_perfdata::mem::DataSrc::from_raw(data_src);
            [
                w::lvl_text(&d),
                w::snoop_text(&d),
                w::tlb_text(&d),
                w::blk_text(&d),
            ]
        });
        Some(&texts[i])
    }
}

/// Write `r` as `x` asks: the files of `--pprof` and `--flamegraph`, the
/// folded stacks to `out`; the table (perf's `--stdio` layout) when no
/// export is asked for.
pub fn print_exports(
    out: &mut dyn Write,
    r: &MemReport,
    cols: MemColumns,
    x: &MemExports,
) -> std::io::Result<()> {
    let Some(c) = r.collected.as_ref().filter(|_| x.any()) else {
        return print(out, r, cols);
    };
    if let Some(path) = &x.pprof {
        let mut bytes = Vec::new();
        c.export
            .write(pmx_profile::export::Format::Pprof, &mut bytes)?;
        pmx_io::write(path, &bytes)?;
    }
    let stacks = c.stacks(&r.names);
    if let Some(path) = &x.flamegraph {
        let opts = pmx_profile::flame::FlameOptions {
            title: "Data objects by weight".into(),
            unit: "weight".into(),
            ..Default::default()
        };
        pmx_io::write(path, pmx_profile::flame::svg(&stacks, &opts).as_bytes())?;
    }
    if x.folded {
        out.write_all(pmx_profile::flame::folded(&stacks).as_bytes())?;
    }
    Ok(())
}
