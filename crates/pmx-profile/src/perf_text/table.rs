//! The hotspot table in perf report's `--stdio` layout: perf's lines
//! before it (`Total Lost Samples`, `Samples: 2K of event`, `Event count`),
//! its columns two spaces apart, headings over dots, and the tip block
//! perf ends with.

use super::graph::{self, Graph, GraphMode};
use crate::profile::{Row, SortKey};
use crate::report::{pct, Report};
use crate::EventProfile;
use pmx_symbols::symbolize::is_address;
use std::io::Write;

/// What perf report prints: its number columns (`-F
/// overhead,sample,period`, `-n`) and the parts (`--header`,
/// `--header-only`, `--stats`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Columns {
    /// Overhead (Children and Self with children).
    pub overhead: bool,
    /// `-F`'s `overhead_children`: `None` when `-F` is not given (perf
    /// shows the Children column whenever it cumulates; with `-F`
    /// only when asked, the rows then by their self share).
    pub children: Option<bool>,
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
    /// The call graph under each row, when the file has call chains
    /// (`-g`, `-G`, `--max-stack`; perf's default `graph,0.5`, callers
    /// first with children). The Children column is shown when the
    /// report has children shares and the file call chains (perf's rule).
    pub graph: Graph,
    /// `-t/--field-separator`: the columns joined by it instead of two
    /// spaces, a number left-aligned after a space, no dotted line.
    pub separator: Option<char>,
    /// perf's `-q`: no `#` line (headings, counts, tips), rows only.
    pub quiet: bool,
}

/// The header, the record counts or the table, as `cols` says.
pub fn print(out: &mut dyn Write, r: &Report, cols: &Columns) -> std::io::Result<()> {
    if cols.header_shown || cols.header_only {
        super::header(out, r)?;
    }
    if cols.stats {
        one_value_lines(out, r)?;
        return super::stats(out, r);
    }
    if !cols.header_only && cols.quiet {
        let mut all = Vec::new();
        table(&mut all, r, cols)?;
        for l in all.split_inclusive(|&b| b == b'\n') {
            if !l.starts_with(b"#") {
                out.write_all(l)?;
            }
        }
    } else if !cols.header_only {
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
        // perf's `%7d:%s`: the thread id, its last command.
        SortKey::Tid => (r.thread.as_ref())
            .map(|(t, c)| format!("{t:>7}:{c}"))
            .unwrap_or_default(),
    }
}

fn key_heading(k: SortKey) -> &'static str {
    match k {
        SortKey::Comm => "Command",
        SortKey::Pid => "Pid:Command",
        SortKey::Dso => "Shared Object",
        SortKey::Symbol => "Symbol",
        SortKey::Cpu => "CPU",
        SortKey::Tid => "    Pid:Command", // perf's, 15 wide
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
    one_value_lines(out, report)?;
    let lost = report.profile.stats.lost_samples;
    writeln!(out, "#\n# Total Lost Samples: {lost}\n#")?;
    let keys = shown_keys(report);
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
        let shape = Shape::of(report, e, cols);
        let index = if shape.shown || shape.children {
            graph::index(e)
        } else {
            graph::Index::default()
        };
        let starts = match shape.shown {
            true => graph::starts(e),
            false => graph::Starts::default(),
        };
        let (heads, nums) = headings(&keys, cols, &shape);
        let mut rows: Vec<Line> = Vec::new();
        for r in report.visible(e) {
            let (chains, inclusive) = shape.chains(e, &index, r);
            let inclusive =
                (shape.children && shape.graph.max_stack.is_some()).then_some(inclusive);
            if inclusive == Some(0) && r.period == 0 {
                continue;
            }
            let mut below = Vec::new();
            let parent = inclusive.unwrap_or(if shape.children {
                r.children_period
            } else {
                r.period
            });
            if shape.shown {
                graph::print(
                    &mut below,
                    (&chains, &starts),
                    parent,
                    e.period,
                    &shape.graph,
                )?;
            }
            // perf puts a caller above its callee of equal children share:
            // the deeper tree first in caller order, the shallower in callee.
            let depth = chains
                .iter()
                .map(|(c, _)| c.len() as i64)
                .max()
                .unwrap_or(0);
            let depth = if shape.graph.caller == Some(true) {
                -depth
            } else {
                depth
            };
            let c = cells(&keys, cols, r, e.period, &shape, inclusive);
            // By self share, perf breaks ties by the keys' names; by
            // children share without graphs (`-g none`) too, after the
            // self share (its caller-first rule needs the chains).
            let self_first = -(r.period.min(i64::MAX as u64) as i64);
            let key = match (shape.column, shape.children) {
                (true, _) if shape.shown => (u64::MAX - parent, depth, String::new()),
                (true, _) => (
                    u64::MAX - parent,
                    self_first,
                    tie_names(&keys, &c[nums..], r),
                ),
                (false, true) => (u64::MAX - r.period, 0, tie_names(&keys, &c[nums..], r)),
                (false, false) => (0, 0, String::new()),
            };
            rows.push((c, below, key));
        }
        rows.sort_by(|a, b| a.2.cmp(&b.2));
        let widths = column_widths(&heads, &rows, nums, &keys, e);
        let sep = cols.separator.map(String::from);
        let sep = sep.as_deref();
        let text = |cells: &[String], head: bool| line(cells, head, (&widths, nums), &keys, sep);
        let heads: Vec<String> = heads.iter().map(|h| h.to_string()).collect();
        writeln!(out, "# {}", text(&heads, true))?;
        if sep.is_none() {
            let dots: Vec<String> = widths.iter().map(|&w| ".".repeat(w)).collect();
            writeln!(out, "# {}\n#", dots.join("  "))?;
        }
        let indent = if sep.is_some() { "" } else { "  " };
        // perf pads every cell to its column's width but a function's
        // name in the last column.
        let sym_last = keys.last() == Some(&SortKey::Symbol);
        for (c, below, _) in &rows {
            let l = text(c, false);
            match sym_last {
                true => writeln!(out, "{indent}{}", l.trim_end())?,
                false => writeln!(out, "{indent}{l}")?,
            }
            out.write_all(below)?;
        }
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx report --flamegraph OUT.svg draws the same samples)\n#"
    )
}

/// A row's (or the headings', `head`) cells padded to the columns'
/// `widths` (the first `nums` of them numbers), joined by `sep` (else
/// two spaces).
fn line(
    cells: &[String],
    head: bool,
    (widths, nums): (&[usize], usize),
    keys: &[SortKey],
    sep: Option<&str>,
) -> String {
    let mut l = String::with_capacity(128);
    for (j, (s, &w)) in cells.iter().zip(widths).enumerate() {
        if j > 0 {
            l.push_str(sep.unwrap_or("  "));
        }
        let n = s.chars().count();
        match j < nums {
            // perf -t: ` 1.49%  `, ` 134        ` (a cell, not a heading).
            true if sep.is_some() && !head => {
                l.push(' ');
                padded(&mut l, s, 0, w.saturating_sub(1).saturating_sub(n));
            }
            true => padded(&mut l, s, w.saturating_sub(n), 0),
            // perf cuts a command to its column (`%-*.*s`).
            false if keys[j - nums] == SortKey::Comm && n > w => {
                l.extend(s.chars().take(w));
            }
            false => padded(&mut l, s, 0, w.saturating_sub(n)),
        }
    }
    l
}

/// `s` into `l` with `before` spaces before it and `after` after it.
fn padded(l: &mut String, s: &str, before: usize, after: usize) {
    l.extend(std::iter::repeat_n(' ', before));
    l.push_str(s);
    l.extend(std::iter::repeat_n(' ', after));
}

/// The columns' widths: the headings', the number cells', and the key
/// columns' by every row (those --percent-limit hides too), as perf sizes
/// them: a command by the last command of the row's first thread.
fn column_widths(
    heads: &[&str],
    rows: &[Line],
    nums: usize,
    keys: &[SortKey],
    e: &EventProfile,
) -> Vec<usize> {
    let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
    for (c, _, _) in rows {
        for (w, s) in widths[..nums].iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    for r in &e.rows {
        for (w, &k) in widths[nums..].iter_mut().zip(keys) {
            let n = match (k, &r.thread) {
                (SortKey::Comm, Some((_, c))) => c.chars().count(),
                _ => cell_width(&key_cell(k, r)),
            };
            *w = (*w).max(n);
        }
    }
    // An entry without a symbol (an address, `0x…` in a binary, or the
    // bare zero where no binary was mapped) sizes perf's columns as an
    // address would: Symbol `[.] 0x` and 16 digits, Shared Object at
    // least 16 (`hists__calc_col_len`, `hists__set_unres_dso_col_len`).
    let unresolved = |r: &Row| r.symbol.as_deref().is_some_and(is_address);
    if let Some(s) = keys.iter().position(|&k| k == SortKey::Symbol) {
        if e.rows.iter().any(unresolved) {
            widths[nums + s] = widths[nums + s].max(4 + 2 + 16);
            if let Some(i) = keys.iter().position(|&k| k == SortKey::Dso) {
                widths[nums + i] = widths[nums + i].max(16);
            }
        }
    }
    widths
}

/// The key cells of a row as perf orders equal rows: by each key's text
/// in turn, a row without a binary or a symbol after those with one
/// (`sort__dso_cmp`, `sort__sym_sort`: `cmp_null`).
fn tie_names(keys: &[SortKey], cells: &[String], r: &Row) -> String {
    let mut t = String::new();
    for (&k, c) in keys.iter().zip(cells) {
        let none = match k {
            SortKey::Dso => r.dso.is_none() || c == "[unknown]",
            SortKey::Symbol => r.symbol.as_deref().is_none_or(is_address),
            _ => false,
        };
        t.push(if none { '\u{10ffff}' } else { ' ' });
        t.push_str(c);
        t.push('\0');
    }
    t
}

/// A cell's width as perf sizes its column: an inlined function's name
/// without its ` (inlined)` mark.
fn cell_width(s: &str) -> usize {
    s.strip_suffix(" (inlined)").unwrap_or(s).chars().count()
}

/// perf's `# comm: sf` lines: the keys a filter holds to one value.
fn one_value_lines(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    for (k, v) in &report.one_value {
        let name = match k {
            SortKey::Comm => "comm",
            SortKey::Dso => "dso",
            _ => "symbol",
        };
        writeln!(out, "# {name}: {v}")?;
    }
    Ok(())
}

/// A row's cells, the graph under it, and its order key.
type Line = (Vec<String>, Vec<u8>, (u64, i64, String));

/// What a table of one event shows beside its rows: the Children
/// column, the call graph (in which order).
struct Shape {
    /// perf cumulates: children chains, the rows' inclusive totals.
    children: bool,
    /// The Children column is shown.
    column: bool,
    /// The self (Overhead) column is shown.
    own: bool,
    shown: bool,
    graph: Graph,
}

impl Shape {
    fn of(report: &Report, e: &EventProfile, cols: &Columns) -> Shape {
        let chains = has_call_chains(report, e);
        let children = report.options.children && chains;
        let mut graph = cols.graph;
        graph.caller = Some(graph.caller.unwrap_or(children));
        let stacks = report.options.stacks || report.options.graphs;
        let shown = chains && stacks && graph.mode != GraphMode::None;
        let column = children && cols.children != Some(false);
        let own = cols.overhead || (!column && cols.children == Some(true));
        Shape {
            children,
            column,
            own,
            shown,
            graph,
        }
    }

    /// The row's chains and their total (when the graph or `--max-stack`
    /// needs them).
    fn chains<'a>(
        &self,
        e: &'a EventProfile,
        ix: &graph::Index,
        r: &Row,
    ) -> (Vec<(Vec<graph::Link<'a>>, u64)>, u64) {
        if !(self.shown || self.children && self.graph.max_stack.is_some()) {
            return (Vec::new(), 0);
        }
        graph::chains(e, ix, r, &self.graph, self.children)
    }
}

/// Whether the file's events sample call chains (a stream: whether any
/// stack has more than one frame).
fn has_call_chains(report: &Report, e: &EventProfile) -> bool {
    match report.file != "standard input" {
        true => call_chains(&report.options.input).unwrap_or(false),
        false => {
            e.stacks.iter().any(|(s, _, _)| s.len() > 2)
                || e.binary_stacks.iter().any(|s| s.frames.len() > 1)
        }
    }
}

/// Whether an event of the file at `path` samples call chains (perf's
/// rule for `--children` and the graph); `None` for a stream (`-`) or a
/// file that cannot be read.
pub fn call_chains(path: &std::path::Path) -> Option<bool> {
    use pmx_perfdata::format::sample_type::CALLCHAIN;
    if path.as_os_str() == "-" {
        return None;
    }
    let r = pmx_perfdata::Reader::open(path).ok()?;
    Some((r.events().iter()).any(|x| x.attr.sample_type & CALLCHAIN != 0))
}

/// The key columns shown: those a filter holds to one value left out
/// (perf's elision), unless none would be left.
fn shown_keys(report: &Report) -> Vec<SortKey> {
    let held = |k: &SortKey| report.one_value.iter().any(|(o, _)| o == k);
    let keys: Vec<SortKey> = report.sort.iter().filter(|k| !held(k)).copied().collect();
    match keys.is_empty() {
        true => report.sort.clone(),
        false => keys,
    }
}

fn headings(keys: &[SortKey], cols: &Columns, shape: &Shape) -> (Vec<&'static str>, usize) {
    let mut h = Vec::new();
    match (shape.column, shape.own) {
        (true, true) => h.extend(["Children", "    Self"]),
        (true, false) => h.push("Children"),
        (false, true) => h.push("Overhead"),
        (false, false) => {}
    }
    if cols.samples {
        h.push("     Samples"); // perf's width: 12
    }
    if cols.period {
        h.push("      Period");
    }
    let nums = h.len();
    h.extend(keys.iter().map(|&k| key_heading(k)));
    (h, nums)
}

fn cells(
    keys: &[SortKey],
    cols: &Columns,
    r: &Row,
    total: u64,
    shape: &Shape,
    inclusive: Option<u64>,
) -> Vec<String> {
    let mut c = Vec::new();
    if shape.column {
        let v = inclusive.unwrap_or(r.children_period);
        c.push(format!("{:.2}%", pct(v, total)));
    }
    if shape.own {
        c.push(format!("{:.2}%", pct(r.period, total)));
    }
    if cols.samples {
        c.push(r.samples.to_string());
    }
    if cols.period {
        c.push(r.period.to_string());
    }
    c.extend(keys.iter().map(|&k| key_cell(k, r)));
    c
}
