//! `pmx report --total-cycles`: the program's basic blocks by the cycles
//! the LBR says were spent in them, hottest first, as upstream perf
//! documents its block table (perf 6.1 crashes on it: docs/branches.md).
//!
//! Each branch entry carries the cycles since the branch before it, so
//! a sample's stack, read oldest first, is a run of blocks, each from
//! the previous entry's target to the entry's source. Per function, the
//! blocks are counted by branch source as `pmx annotate` counts them
//! (perf's `cyc_hist`, [`pmx_profile::annotate::CycHist`]): a block's
//! start is known when the previous target lies in the same function
//! before the source. A sample counts only when its newest entry has
//! cycles (as perf: a CPU that records none, an LBR call stack).
//!
//! Per block (a branch source with counted branches, and the start of
//! the longest block that ends there; offset 0 when no start is known):
//! `Sampled Cycles` is the cycles of every branch from its end,
//! `Sampled Cycles%` that share of the total (every entry's cycles in the
//! counted samples), `Avg Cycles` those cycles ÷ those branches, `Avg
//! Cycles%` that share of the sum of every block's average, the range
//! the source lines of its start and end (`[file:line -> file:line]`, or
//! their offsets in the function, `%7x`) and the binary. Rows under
//! `--percent-limit` are those whose longest block's own cycles are
//! under that share, as perf filters them.

use super::BranchError;
use pmx_perfdata::branch::BranchFlags;
use pmx_profile::annotate::CycHist;
use pmx_profile::perf_text::abbreviated;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_profile::report::{pct, report_with, Report, ReportOptions};
use pmx_symbols::symbolize::{FrameId, Symbolizer};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::io::Write;

/// The lowest kernel address (x86-64's canonical upper half).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// One basic block of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The function's name.
    pub symbol: String,
    /// Its binary's short name.
    pub dso: String,
    /// The block's start, an offset in the function.
    pub start: u64,
    /// Its end (the branch source), an offset in the function.
    pub end: u64,
    /// `[start's line -> end's line]`, or their offsets.
    pub range: String,
    /// The cycles of every branch from `end` (perf's `cycles_aggr`).
    pub cycles: u64,
    /// Those branches.
    pub branches: u64,
    /// The cycles of the longest block's branches alone (the
    /// `--percent-limit` filter's figure).
    pub own_cycles: u64,
}

impl Block {
    /// The average cycles of a branch from its end.
    pub fn average(&self) -> u64 {
        self.cycles / self.branches.max(1)
    }
}

/// One event's block table.
#[derive(Debug, Clone, Default)]
pub struct BlockEvent {
    /// The event's name.
    pub name: String,
    /// Its branches (the header's `Samples`, as the branch table's).
    pub branches: u64,
    /// The cycles of every entry of the counted samples.
    pub total_cycles: u64,
    /// The sum of the blocks' averages.
    pub average_cycles: u64,
    /// The blocks, hottest first.
    pub blocks: Vec<Block>,
}

/// `--total-cycles`'s report: the file's ordinary report and each
/// selected event's block table.
#[derive(Debug)]
pub struct BlockReport {
    /// The ordinary report of the same file.
    pub report: Report,
    /// The tables of the selected events with branch stacks.
    pub events: Vec<BlockEvent>,
}

/// Read `opts.input` and table its blocks.
pub fn report(
    opts: &ReportOptions,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<BlockReport, BranchError> {
    let mut sink = Blocks::default();
    let report = report_with(opts, progress, Some(&mut sink as &mut dyn SampleSink))?;
    let mut events = Vec::new();
    for &i in &report.selected {
        if let Some(mut e) = sink.done.get_mut(i).map(std::mem::take) {
            if e.branches > 0 {
                e.name = report.profile.events[i].name.clone();
                events.push(e);
            }
        }
    }
    if events.is_empty() {
        let names: Vec<String> = (report.selected.iter())
            .map(|&i| report.profile.events[i].name.clone())
            .collect();
        return Err(BranchError::NoBranches(
            report.file.clone(),
            names.join(", "),
        ));
    }
    Ok(BlockReport { report, events })
}

/// A function's counts: its process and where it starts there (for the
/// source lines; `None` in the kernel), per branch source its `cyc_hist`.
struct Function {
    pid: u32,
    base: Option<u64>,
    hist: BTreeMap<u64, CycHist>,
}

/// Per event: branches, total cycles, functions.
#[derive(Default)]
struct Counts {
    branches: u64,
    total_cycles: u64,
    functions: HashMap<FrameId, Function>,
}

/// The sink counting blocks.
#[derive(Default)]
struct Blocks {
    events: Vec<Counts>,
    /// Entries with a kernel source, counted once the kernel's names are
    /// settled: event, source, previous target in the kernel, cycles.
    kernel: Vec<(u32, u64, Option<u64>, u16)>,
    done: Vec<BlockEvent>,
}

/// Where the function of a user address starts: its frame, the
/// address's offset in it.
fn user_end(sym: &mut Symbolizer, pid: u32, addr: u64) -> Option<(FrameId, u64)> {
    sym.mapping(pid, addr)?;
    let (f, _, space) = sym.user_site(pid, addr);
    let start = sym.frame_start(f)?;
    Some((f, space.checked_sub(start)?))
}

/// The same for a kernel address (its names settled).
fn kernel_end(sym: &mut Symbolizer, addr: u64) -> Option<(FrameId, u64)> {
    let f = sym.kernel_frame(addr);
    let start = sym.frame_start(f)?;
    Some((f, addr.checked_sub(start)?))
}

/// One branch from `from` (frame, offset) after `cycles`, its block
/// starting at `prev` when that lies in the same function before it
/// (perf's `addr_map_symbol__account_cycles`); `at`: the process and the
/// function's start there, for a new function's source lines.
fn account_at(
    c: &mut Counts,
    from: (FrameId, u64),
    prev: Option<(FrameId, u64)>,
    cycles: u16,
    at: (u32, Option<u64>),
) {
    let start = prev.filter(|p| p.0 == from.0 && p.1 < from.1).map(|p| p.1);
    let f = c.functions.entry(from.0).or_insert_with(|| Function {
        pid: at.0,
        base: at.1,
        hist: BTreeMap::new(),
    });
    (f.hist.entry(from.1).or_default()).account(start, u64::from(cycles));
}

impl SampleSink for Blocks {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        if s.branches.is_empty() {
            return;
        }
        if self.events.len() <= s.event {
            self.events.resize_with(s.event + 1, Counts::default);
        }
        let entries = s.branches.chunks_exact(3);
        self.events[s.event].branches += entries.len() as u64;
        if s.branches
            .get(2)
            .is_none_or(|&w| BranchFlags(w).cycles() == 0)
        {
            return;
        }
        let mut prev: Option<u64> = None;
        for e in s.branches.chunks_exact(3).rev() {
            let (from, to, cycles) = (e[0], e[1], BranchFlags(e[2]).cycles());
            self.events[s.event].total_cycles += u64::from(cycles);
            let last = prev.replace(to);
            if cycles == 0 {
                continue;
            }
            if sym.mapping(s.pid, from).is_none() {
                if from >= KERNEL_START {
                    let last =
                        last.filter(|&t| t >= KERNEL_START && sym.mapping(s.pid, t).is_none());
                    self.kernel.push((s.event as u32, from, last, cycles));
                }
                continue;
            }
            let Some(f) = user_end(sym, s.pid, from) else {
                continue;
            };
            let p = last.and_then(|t| user_end(sym, s.pid, t));
            let at = (s.pid, Some(from - f.1));
            account_at(&mut self.events[s.event], f, p, cycles, at);
        }
    }

    fn side(&mut self, _: Side) {}

    fn finish(&mut self, sym: &mut Symbolizer, _remap: &[FrameId]) {
        for (event, from, prev, cycles) in std::mem::take(&mut self.kernel) {
            let Some(f) = kernel_end(sym, from) else {
                continue;
            };
            let p = prev.and_then(|t| kernel_end(sym, t));
            account_at(&mut self.events[event as usize], f, p, cycles, (0, None));
        }
        self.done = (std::mem::take(&mut self.events).into_iter())
            .map(|c| table(sym, c))
            .collect();
    }
}

/// An event's counts as its table.
fn table(sym: &mut Symbolizer, c: Counts) -> BlockEvent {
    let mut blocks = Vec::new();
    for (f, func) in c.functions {
        let frame = sym.frame(f);
        let (symbol, dso) = (frame.label(), sym.dso(frame.dso).short.clone());
        for (&end, h) in func.hist.iter().filter(|(_, h)| h.num_aggr > 0) {
            let range = range(sym, &func, h.start, end);
            blocks.push(Block {
                symbol: symbol.clone(),
                dso: dso.clone(),
                start: h.start,
                end,
                range,
                cycles: h.cycles_aggr,
                branches: h.num_aggr,
                own_cycles: h.cycles,
            });
        }
    }
    blocks.sort_by(|a, b| {
        (b.cycles.cmp(&a.cycles)).then_with(|| {
            (&a.dso, &a.symbol, a.start, a.end).cmp(&(&b.dso, &b.symbol, b.start, b.end))
        })
    });
    BlockEvent {
        name: String::new(),
        branches: c.branches,
        total_cycles: c.total_cycles,
        average_cycles: blocks.iter().map(Block::average).sum(),
        blocks,
    }
}

/// A block's range as perf shows it: the source lines of its start and
/// end (file base names), or without both their offsets.
fn range(sym: &mut Symbolizer, func: &Function, start: u64, end: u64) -> String {
    let mut line = |off: u64| {
        let (file, line) = sym.source_line(func.pid, func.base?.checked_add(off)?)?;
        let base = file.rsplit('/').next().unwrap_or(&file).to_string();
        Some(format!("{base}:{line}"))
    };
    match (line(start), line(end)) {
        (Some(a), Some(b)) => format!("[{a} -> {b}]"),
        _ => format!("[{start:7x} -> {end:7x}]"),
    }
}

/// Cycles as perf's block table shows them (`2.8M`, `402.0K`, `18`).
fn cycles_text(n: u64) -> String {
    match n {
        1_000_000.. => format!("{:.1}M", n as f64 / 1e6),
        1_000.. => format!("{:.1}K", n as f64 / 1e3),
        _ => n.to_string(),
    }
}

/// The columns: heading and width.
const COLUMNS: [(&str, usize); 6] = [
    ("Sampled Cycles%", 15),
    ("Sampled Cycles", 14),
    ("Avg Cycles%", 11),
    ("Avg Cycles", 10),
    ("[Program Block Range]", 70),
    ("Shared Object", 20),
];

/// The report to `out`: perf's block table (`--stdio`), or JSON; flushed.
pub fn write(out: &mut dyn Write, r: &BlockReport, json: bool) -> std::io::Result<()> {
    match json {
        true => writeln!(out, "{:#}", self::json(r))?,
        false => print(out, r)?,
    }
    out.flush()
}

/// perf's block table of every event with branches.
pub fn print(out: &mut dyn Write, r: &BlockReport) -> std::io::Result<()> {
    super::table::preamble(out, &r.report)?;
    let limit = r.report.options.percent_limit;
    for (n, e) in r.events.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\n")?;
        }
        let count = abbreviated(e.branches);
        writeln!(out, "# Samples: {count} of event '{}'", e.name)?;
        writeln!(out, "# Event count (approx.): {}\n#", e.branches)?;
        let heads: Vec<String> = COLUMNS.iter().map(|(h, w)| format!("{h:>w$}")).collect();
        writeln!(out, "# {}", heads.join("  "))?;
        let dots: Vec<String> = COLUMNS.iter().map(|(_, w)| ".".repeat(*w)).collect();
        writeln!(out, "# {}\n#", dots.join("  "))?;
        for b in &e.blocks {
            if pct(b.own_cycles, e.total_cycles) < limit {
                continue;
            }
            writeln!(
                out,
                "  {:>14.2}%  {:>14}  {:>10.2}%  {:>10}  {:>70}  {:>20}",
                pct(b.cycles, e.total_cycles),
                cycles_text(b.cycles),
                pct(b.average(), e.average_cycles),
                cycles_text(b.average()),
                b.range,
                b.dso
            )?;
        }
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx annotate shows a function's IPC and cycles per instruction)\n#"
    )
}

/// The report as JSON: per event its branches, total cycles and blocks.
pub fn json(r: &BlockReport) -> serde_json::Value {
    let limit = r.report.options.percent_limit;
    let events: Vec<serde_json::Value> = (r.events.iter())
        .map(|e| {
            let blocks: Vec<serde_json::Value> = (e.blocks.iter())
                .filter(|b| pct(b.own_cycles, e.total_cycles) >= limit)
                .map(|b| {
                    serde_json::json!({
                        "symbol": b.symbol, "dso": b.dso, "start": b.start, "end": b.end,
                        "range": b.range, "sampled_cycles": b.cycles,
                        "sampled_cycles_percent": pct(b.cycles, e.total_cycles),
                        "branches": b.branches, "avg_cycles": b.average(),
                        "avg_cycles_percent": pct(b.average(), e.average_cycles),
                    })
                })
                .collect();
            serde_json::json!({
                "event": e.name, "branches": e.branches,
                "total_cycles": e.total_cycles, "blocks": blocks,
            })
        })
        .collect();
    serde_json::json!({ "file": r.report.file, "events": events })
}
