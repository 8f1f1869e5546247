//! perf c2c report's `--stdio` tables: the Shared Data Cache Line Table
//! (one row per line with HITMs, or peer hits with `-d peer`, sorted on
//! the display's count) and the Shared Cache Line Distribution Pareto
//! (each of those lines, then its offsets with their code addresses,
//! mean weights, CPUs, symbols, objects, sources and nodes). Columns are
//! two spaces apart at perf's widths; a heading spanning columns covers
//! their widths and separators.

use super::lines::{Coalesce, Display, Entry, Line};
use super::{C2cReport, C2cStats};
use std::io::Write;

/// How to print the tables.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// `-d`.
    pub display: Display,
    /// `-c`'s keys.
    pub coalesce: Vec<Coalesce>,
    /// `--full-symbols`: symbols not cut at 30 characters.
    pub full_symbols: bool,
    /// `--no-source`.
    pub no_source: bool,
    /// `--show-all`: every line, also those without the display's count.
    pub show_all: bool,
}

/// A column: width, its heading's two lines (the first with how many
/// following columns it spans), right- or left-aligned cells.
struct Col {
    w: usize,
    top: Option<(String, usize)>,
    low: String,
}

fn col(w: usize, top: &str, span: usize, low: &str) -> Col {
    Col {
        w,
        top: (!top.is_empty() || span > 0).then(|| (top.to_string(), span)),
        low: low.to_string(),
    }
}

/// perf's `fill_line`: `text` centred in dashes over `len` characters.
fn fill_line(text: &str, len: usize) -> String {
    let j = (len / 2).saturating_sub(text.len() / 2);
    let mut s = "-".repeat(j.saturating_sub(1));
    s.push(' ');
    s.push_str(text);
    s.push(' ');
    while s.len() < len {
        s.push('-');
    }
    s
}

fn heading(out: &mut dyn Write, cols: &[Col]) -> std::io::Result<()> {
    let mut line = String::from("#");
    let mut skip = 0;
    for (i, c) in cols.iter().enumerate() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        line.push_str(if i == 0 { " " } else { "  " });
        let (t, span) = c.top.clone().unwrap_or_default();
        line.push_str(&format!("{t:>w$}", w = c.w));
        skip = span;
    }
    writeln!(out, "{line}")?;
    let low: Vec<String> = cols
        .iter()
        .map(|c| format!("{:>w$}", c.low, w = c.w))
        .collect();
    writeln!(out, "# {}", low.join("  "))?;
    let dots: Vec<String> = cols.iter().map(|c| ".".repeat(c.w)).collect();
    writeln!(out, "# {}", dots.join("  "))?;
    writeln!(out, "#")
}

fn row(out: &mut dyn Write, cells: &[String]) -> std::io::Result<()> {
    let mut line = String::new();
    for c in cells {
        line.push_str("  ");
        line.push_str(c);
    }
    writeln!(out, "{line}")
}

fn pct(v: u64, total: u64) -> String {
    let p = if total == 0 {
        0.0
    } else {
        100.0 * v as f64 / total as f64
    };
    format!("{:>7}", format!("{p:.2}%"))
}

fn n(v: u64, w: usize) -> String {
    format!("{v:>w$}")
}

fn loads(s: &C2cStats) -> u64 {
    s.llc_misses() + s.ld_fbhit + s.ld_l1hit + s.ld_l2hit + s.ld_llchit + s.lcl_hitm
}

fn records(s: &C2cStats) -> u64 {
    loads(s) + s.st_l1hit + s.st_l1miss + s.st_na
}

/// The lines shown, in the display's order, with their indexes.
fn shown<'a>(r: &'a C2cReport, o: &TableOptions) -> Vec<&'a Line> {
    let d = o.display;
    let sum: u64 = (r.lines.iter())
        .filter(|l| l.stats.tot_hitm + l.stats.tot_peer > 0)
        .map(|l| d.value(&l.stats))
        .sum();
    let mut v: Vec<&Line> = (r.lines.iter())
        .filter(|l| o.show_all || (sum > 0 && d.value(&l.stats) as f64 / sum as f64 >= 0.001))
        .collect();
    // Stable: equal lines keep the tree's order.
    v.sort_by_key(|l| std::cmp::Reverse(d.value(&l.stats)));
    v
}

/// Print the two tables after `--stats`' text.
pub fn print_tables(out: &mut dyn Write, r: &C2cReport, o: &TableOptions) -> std::io::Result<()> {
    let rule = "=================================================";
    writeln!(
        out,
        "\n{rule}\n           Shared Data Cache Line Table          \n{rule}\n#"
    )?;
    let lines = shown(r, o);
    line_table(out, r, o, &lines)?;
    writeln!(
        out,
        "\n{rule}\n      Shared Cache Line Distribution Pareto      \n{rule}\n#"
    )?;
    for (i, l) in lines.iter().enumerate() {
        let cols = entry_cols(r, o, l);
        if i == 0 {
            heading(out, &cols)?;
        } else {
            writeln!(out)?;
        }
        let dash = "  ----------------------------------------------------------------------";
        writeln!(out, "{dash}")?;
        let s = &l.stats;
        let (a, b) = match o.display {
            Display::Peer => (s.rmt_peer, s.lcl_peer),
            _ => (s.rmt_hitm, s.lcl_hitm),
        };
        let mut cells = vec![n(i as u64, 5), n(a, 7), n(b, 7)];
        cells.extend([s.st_l1hit, s.st_l1miss, s.st_na].map(|v| n(v, 7)));
        cells.push(format!("{:>18}", format!("{:#x}", l.addr & !63)));
        row(out, &cells)?;
        writeln!(out, "{dash}")?;
        entries(out, r, o, l, &cols)?;
    }
    Ok(())
}

fn line_table(
    out: &mut dyn Write,
    r: &C2cReport,
    o: &TableOptions,
    lines: &[&Line],
) -> std::io::Result<()> {
    let peer = o.display == Display::Peer;
    let (pt, pl) = match o.display {
        Display::Lcl => ("Lcl", "Hitm"),
        Display::Rmt => ("Rmt", "Hitm"),
        Display::Tot => ("Tot", "Hitm"),
        Display::Peer => ("Peer", "Snoop"),
    };
    let mut cols = vec![
        col(5, "", 0, "Index"),
        col(18, &fill_line("Cacheline", 32), 2, "Address"),
        col(4, "", 0, "Node"),
        col(6, "", 0, "PA cnt"),
        col(7, pt, 0, pl),
    ];
    if peer {
        cols.push(col(7, "------- Load Peer -------", 2, "Total"));
        cols.extend([col(7, "", 0, "Local"), col(7, "", 0, "Remote")]);
    } else {
        cols.push(col(7, "------- Load Hitm -------", 2, "Total"));
        cols.extend([col(7, "", 0, "LclHitm"), col(7, "", 0, "RmtHitm")]);
    }
    cols.extend([
        col(7, "Total", 0, "records"),
        col(7, "Total", 0, "Loads"),
        col(7, "Total", 0, "Stores"),
        col(7, "--------- Stores --------", 2, "L1Hit"),
        col(7, "", 0, "L1Miss"),
        col(7, "", 0, "N/A"),
        col(7, "----- Core Load Hit -----", 2, "FB"),
        col(7, "", 0, "L1"),
        col(7, "", 0, "L2"),
        col(8, "- LLC Load Hit --", 1, "LclHit"),
        col(7, "", 0, "LclHitm"),
        col(8, "- RMT Load Hit --", 1, "RmtHit"),
        col(7, "", 0, "RmtHitm"),
        col(8, "--- Load Dram ----", 1, "Lcl"),
        col(8, "", 0, "Rmt"),
    ]);
    heading(out, &cols)?;
    let total = o.display.value(&r.stats);
    for (i, l) in lines.iter().enumerate() {
        let s = &l.stats;
        let mut cells = vec![
            n(i as u64, 5),
            format!("{:>18}", format!("{:#x}", l.addr & !63)),
            format!("{:>4}", "N/A"),
            n(l.phys.count, 6),
            pct(o.display.value(s), total),
        ];
        let three = if peer {
            [s.tot_peer, s.lcl_peer, s.rmt_peer]
        } else {
            [s.lcl_hitm + s.rmt_hitm, s.lcl_hitm, s.rmt_hitm]
        };
        cells.extend(three.map(|v| n(v, 7)));
        cells.extend(
            [
                records(s),
                loads(s),
                s.store,
                s.st_l1hit,
                s.st_l1miss,
                s.st_na,
                s.ld_fbhit,
                s.ld_l1hit,
                s.ld_l2hit,
            ]
            .map(|v| n(v, 7)),
        );
        cells.extend([
            n(s.ld_llchit, 8),
            n(s.lcl_hitm, 7),
            n(s.rmt_hit, 8),
            n(s.rmt_hitm, 7),
            n(s.lcl_dram, 8),
            n(s.rmt_dram, 8),
        ]);
        row(out, &cells)?;
    }
    Ok(())
}

/// The widths of a line's name columns: perf's column lengths over every
/// entry of the line (shown or not).
struct Widths {
    thread: usize,
    symbol: usize,
    dso: usize,
    src: usize,
}

fn widths(l: &Line, o: &TableOptions) -> Widths {
    let max = |f: &dyn Fn(&Entry) -> usize| l.entries.iter().map(f).max().unwrap_or(0);
    let unresolved = l.entries.iter().any(|e| e.symbol.len() == 22);
    let symbol = max(&|e| e.symbol.len());
    Widths {
        thread: max(&|e| e.comm.len()) + 8,
        symbol: if o.full_symbols {
            symbol
        } else {
            symbol.min(30)
        },
        dso: max(&|e| e.dso.as_deref().map_or(0, str::len)).max(if unresolved { 16 } else { 0 }),
        src: max(&|e| e.srcline.len()).max("Source:Line".len()),
    }
}

fn has(o: &TableOptions, k: Coalesce) -> bool {
    o.coalesce.contains(&k)
}

fn entry_cols(_r: &C2cReport, o: &TableOptions, l: &Line) -> Vec<Col> {
    let w = widths(l, o);
    let peer = o.display == Display::Peer;
    let mut cols = vec![col(5, "", 0, "Num")];
    if peer {
        cols.extend([col(7, "-- Peer Snoop --", 1, "Rmt"), col(7, "", 0, "Lcl")]);
    } else {
        cols.extend([
            col(7, "----- HITM -----", 1, "RmtHitm"),
            col(7, "", 0, "LclHitm"),
        ]);
    }
    cols.extend([
        col(7, "------- Store Refs ------", 2, "L1 Hit"),
        col(7, "", 0, "L1 Miss"),
        col(7, "", 0, "N/A"),
        col(18, &fill_line("Data address", 32), 2, "Offset"),
        col(4, "", 0, "Node"),
        col(6, "", 0, "PA cnt"),
    ]);
    if has(o, Coalesce::Pid) {
        cols.push(col(7, "", 0, "Pid"));
    }
    if has(o, Coalesce::Tid) {
        cols.push(col(w.thread, "", 0, "Tid"));
    }
    let iaddr = has(o, Coalesce::Iaddr);
    if iaddr {
        cols.push(col(18, "", 0, "Code address"));
    }
    let cycles = "---------- cycles ----------";
    if peer {
        cols.extend([col(8, cycles, 2, "rmt peer"), col(8, "", 0, "lcl peer")]);
    } else {
        cols.extend([col(8, cycles, 2, "rmt hitm"), col(8, "", 0, "lcl hitm")]);
    }
    cols.extend([
        col(8, "", 0, "load"),
        col(7, "Total", 0, "records"),
        col(8, "cpu", 0, "cnt"),
    ]);
    if iaddr {
        cols.push(col(w.symbol, "", 0, "Symbol"));
    }
    if iaddr || has(o, Coalesce::Dso) {
        cols.push(col(w.dso, "Shared", 0, "Object"));
    }
    if iaddr && !o.no_source {
        cols.push(col(w.src, "", 0, "Source:Line"));
    }
    cols.push(col(4, "", 0, "Node"));
    cols
}

fn valid(e: &Entry, d: Display) -> bool {
    e.stats.store > 0 || d.value(&e.stats) > 0
}

fn entries(
    out: &mut dyn Write,
    r: &C2cReport,
    o: &TableOptions,
    l: &Line,
    _cols: &[Col],
) -> std::io::Result<()> {
    let w = widths(l, o);
    let d = o.display;
    let mut v: Vec<&Entry> = l.entries.iter().filter(|e| valid(e, d)).collect();
    // perf's resort: the offset, then the display's counts, descending.
    let key = |e: &Entry| -> (u64, u64) {
        match d {
            Display::Tot => (e.stats.tot_hitm, 0),
            Display::Rmt => (e.stats.rmt_hitm, e.stats.lcl_hitm),
            Display::Lcl => (e.stats.lcl_hitm, e.stats.rmt_hitm),
            Display::Peer => (e.stats.tot_peer, 0),
        }
    };
    v.sort_by(|a, b| (a.addr & 63).cmp(&(b.addr & 63)).then(key(b).cmp(&key(a))));
    let ls = &l.stats;
    for e in v {
        let s = &e.stats;
        let mut cells = vec![" ".repeat(5)];
        if d == Display::Peer {
            cells.extend([pct(s.rmt_peer, ls.rmt_peer), pct(s.lcl_peer, ls.lcl_peer)]);
        } else {
            cells.extend([pct(s.rmt_hitm, ls.rmt_hitm), pct(s.lcl_hitm, ls.lcl_hitm)]);
        }
        cells.extend([
            pct(s.st_l1hit, ls.st_l1hit),
            pct(s.st_l1miss, ls.st_l1miss),
            pct(s.st_na, ls.st_na),
            format!("{:>18}", format!("{:#x}", e.data_rel & 63)),
            format!("{:>4}", "N/A"),
            n(e.phys.count, 6),
        ]);
        if has(o, Coalesce::Pid) {
            cells.push(format!("{:>7}", e.pid));
        }
        if has(o, Coalesce::Tid) {
            let cw = w.thread.max(7) - 8;
            cells.push(format!("{:>7}:{:<cw$.cw$}", e.tid, e.comm));
        }
        let iaddr = has(o, Coalesce::Iaddr);
        if iaddr {
            cells.push(format!("{:>18}", format!("{:#x}", e.ip)));
        }
        let mean = |i: usize| format!("{:>8}", format!("{:6.0}", e.means[i].get()));
        if d == Display::Peer {
            cells.extend([mean(2), mean(3)]);
        } else {
            cells.extend([mean(0), mean(1)]);
        }
        cells.extend([mean(4), n(records(s), 7), n(e.cpus.len() as u64, 8)]);
        if iaddr {
            cells.push(format!("{:<w$.w$}", e.symbol, w = w.symbol));
        }
        if iaddr || has(o, Coalesce::Dso) {
            let name = e.dso.as_deref().unwrap_or("[unknown]");
            cells.push(format!("{name:<w$.w$}", w = w.dso));
        }
        if iaddr && !o.no_source {
            cells.push(format!("{:<w$.w$}", e.srcline, w = w.src));
        }
        cells.push(nodes(r, e));
        row(out, &cells)?;
    }
    Ok(())
}

/// The nodes of an entry's CPUs (`%2d`, a space apart).
fn nodes(r: &C2cReport, e: &Entry) -> String {
    let mut ns: Vec<u32> = (e.cpus.iter())
        .filter_map(|&c| r.cpu_node.get(c as usize).copied().flatten())
        .collect();
    ns.sort_unstable();
    ns.dedup();
    let v: Vec<String> = ns.iter().map(|n| format!("{n:2}")).collect();
    v.join(" ")
}
