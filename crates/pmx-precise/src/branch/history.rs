//! `report --branch-history`: each sample's branch stack added to its
//! call chain, as perf report's "add last branch records to call
//! history".
//!
//! perf 6.1 builds such a chain from the newest branch back (`-g caller`:
//! the oldest first): each branch's target, then its source, after
//! folding repeated runs of the same sources (loops) into one with their
//! iteration count (`remove_loops`: a run whose sources repeat the run
//! just before it, found through a 127-slot hash of the sources with no
//! collision handling, as perf). The chain's frames are keyed by address
//! (perf's `-g address`): a frame is its function and source line
//! (`main prog.c:12`; without line information `main+25`, the offset in
//! decimal) or, without a symbol, the address (`0x78e429407d96`). The
//! graph notes what the branches said at each frame ([`Note`]). Rows are
//! perf's default keys of the mode, `srcline,symbol,dso`, each with an
//! `IPC [IPC Coverage]` cell (`-      -`: no symbol).
//!
//! A file with call chains (`-a -b -g`) adds each sample's chain after
//! its branches, as perf 6.1's `thread__resolve_callchain_sample` does:
//! the chain less as many entries as there were branches after loops
//! were folded (`chain_nr -= nr`: the leaf side in `caller` order, the
//! root side in `callee` order, where the entries the branches overlap
//! at the leaf are skipped too), each frame looked up in the mode its
//! `PERF_CONTEXT_*` marker says and noted ` (calltrace)`. Such a file is
//! reported with children by default (`rows`): a row per distinct
//! frame of every chain.

mod json;
mod rows;

use super::BranchError;
use pmx_perfdata::branch::BranchFlags;
use pmx_perfdata::format::callchain::{self, CONTEXT_MAX};
use pmx_perfdata::format::misc;
use pmx_profile::perf_text::graph::{self, Graph, Link};
use pmx_profile::perf_text::notes::Note;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_profile::report::{report_with, Report, ReportOptions};
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer, UNKNOWN_DSO};
use rows::Row;
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

/// The lowest kernel address (x86-64's canonical upper half).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// perf's `--max-stack` default (`sysctl_perf_event_max_stack`).
const MAX_STACK: usize = 127;

/// A place code ran at, as the replay found it.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Site {
    frame: Option<FrameId>,
    level: u8,
    /// The address as perf's rows show it (map-relative for user code).
    shown: u64,
    /// The address in the symbol's space (ELF virtual address).
    space: u64,
    /// The address itself.
    addr: u64,
    /// Its source file (base name) and line, from DWARF.
    line: Option<(String, u32)>,
}

/// A sample's row and chain, as site indices.
pub(super) struct Sample {
    pub(super) site: u32,
    pub(super) period: u64,
    /// Its thread (perf breaks ties of children shares within a thread).
    pub(super) tid: u32,
    pub(super) chain: Vec<u32>,
    pub(super) notes: Vec<Note>,
}

#[derive(Default)]
struct Event {
    samples: u64,
    period: u64,
    list: Vec<Sample>,
}

/// The CPU mode a call chain's frames are looked up in (perf's
/// `cpumode`, set by the chain's context markers).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    User,
    Kernel,
    Hypervisor,
}

/// The mode a context marker sets; `None` for one perf takes for a
/// corrupt chain (a guest's, or no marker at all).
fn mode_of(marker: u64) -> Option<Mode> {
    match marker {
        callchain::CONTEXT_USER => Some(Mode::User),
        callchain::CONTEXT_KERNEL => Some(Mode::Kernel),
        callchain::CONTEXT_HV => Some(Mode::Hypervisor),
        _ => None,
    }
}

/// perf's `find_prev_cpumode`: the mode of the nearest marker below
/// index `ent` of `chain` (unchanged without one); `Err` for a corrupt
/// marker.
fn prev_mode(chain: &[u64], ent: usize, mode: &mut Mode) -> Result<(), ()> {
    let Some(m) = chain[..ent.min(chain.len())]
        .iter()
        .rev()
        .find(|&&ip| ip >= CONTEXT_MAX)
    else {
        return Ok(());
    };
    *mode = mode_of(*m).ok_or(())?;
    Ok(())
}

/// How many entries at the leaf of `chain` the branches `be` (newest
/// first) overlap: perf skips a marker, or a return address just after
/// a branch's source (a call of at most 8 bytes), once per branch.
fn first_call(be: &[Entry], chain: &[u64]) -> usize {
    let mut first = 0;
    for e in be {
        match chain.get(first) {
            Some(&ip) if ip >= CONTEXT_MAX => first += 1,
            Some(&ip) if e.from < ip && e.from >= ip.wrapping_sub(8) => first += 1,
            _ => {}
        }
    }
    first
}

/// The sink: every sample's site and branch chain, kept in file order.
struct History {
    caller: bool,
    sites: Vec<Site>,
    ids: HashMap<Site, u32>,
    events: Vec<Event>,
    /// Each site's names, settled at the end.
    named: Vec<Named>,
    /// Some sample had a branch stack.
    branches: bool,
    /// The file's kernel modules: start, end, file offset, perf's name.
    modules: Vec<(u64, u64, u64, String)>,
}

/// A branch as perf's `remove_loops` sees it.
#[derive(Clone, Copy)]
struct Entry {
    from: u64,
    to: u64,
    flags: BranchFlags,
}

/// perf 6.1's `hash_64(v, 7) % 127`: the slot of a source address.
fn slot(v: u64) -> usize {
    (v.wrapping_mul(0x61C8_8646_80B5_83EB) >> 57) as usize % 127
}

/// perf's `remove_loops`: each run of sources that repeats the run
/// before it is removed, its iteration and cycles counted at the entry
/// after it; (iterations, cycles) per entry kept.
fn remove_loops(l: &mut Vec<Entry>) -> Vec<(u64, u64)> {
    let mut iter = vec![(0u64, 0u64); l.len()];
    let mut hash = [usize::MAX; 127];
    let mut nr = l.len();
    let mut i = 0;
    while i < nr {
        let h = slot(l[i].from);
        if hash[h] == usize::MAX {
            hash[h] = i;
        } else if l[hash[h]].from == l[i].from {
            let (mut j, mut off, mut is_loop) = (hash[h], 0, true);
            while j < i && i + off < nr {
                if l[j].from != l[i + off].from {
                    is_loop = false;
                    break;
                }
                j += 1;
                off += 1;
            }
            if is_loop {
                if nr > i + off {
                    let cycles: u64 = (l[i..i + off].iter())
                        .map(|e| u64::from(e.flags.cycles()))
                        .sum();
                    let it = &mut iter[i + off];
                    (it.0, it.1) = (it.0 + 1, cycles);
                    iter.drain(i..i + off);
                    l.drain(i..i + off);
                }
                nr -= off;
            }
        }
        i += 1;
    }
    l.truncate(nr);
    iter.truncate(nr);
    iter
}

impl History {
    fn site(&mut self, sym: &mut Symbolizer, pid: u32, addr: u64, kernel: Option<bool>) -> u32 {
        let mapped = sym.mapping(pid, addr).is_some();
        let s = match kernel {
            Some(false) | None if mapped => {
                let (frame, shown, space) = sym.user_site(pid, addr);
                let named = matches!(sym.frame(frame).name, FrameName::Symbol(_));
                let line = named.then(|| sym.source_line(pid, addr)).flatten();
                let line = line.map(|(f, n)| (f.rsplit('/').next().unwrap_or("").to_string(), n));
                Site {
                    frame: Some(frame),
                    level: b'.',
                    shown,
                    space,
                    addr,
                    line,
                }
            }
            Some(true) | None if addr >= KERNEL_START => Site {
                frame: Some(sym.kernel_frame(addr)),
                level: b'k',
                shown: addr,
                space: addr,
                addr,
                line: None,
            },
            _ => Site {
                frame: None,
                level: if kernel == Some(true) { b'k' } else { b'.' },
                shown: addr,
                space: addr,
                addr,
                line: None,
            },
        };
        self.intern(s)
    }

    fn intern(&mut self, s: Site) -> u32 {
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        let id = self.sites.len() as u32;
        self.ids.insert(s.clone(), id);
        self.sites.push(s);
        id
    }
}

impl History {
    /// perf's chain after the branches: `chain` less `first` entries at
    /// the leaf and the `nr` at the end perf's `chain_nr -= nr` cuts,
    /// each frame looked up in its marker's mode, appended to `out`
    /// with a call-trace note; `Err` for a corrupt marker (perf then
    /// empties the sample's whole chain, `callee`, or drops the sample).
    fn call_trace(
        &mut self,
        sym: &mut Symbolizer,
        pid: u32,
        (chain, first, nr): (&[u64], usize, usize),
        out: &mut (Vec<u32>, Vec<Note>),
    ) -> Result<(), ()> {
        let len = chain.len();
        let chain_nr = len.saturating_sub(nr);
        let mut mode = Mode::User;
        if self.caller {
            prev_mode(chain, len, &mut mode)?;
        }
        let mut entries = 0;
        for i in first..chain_nr.max(first) {
            if entries >= MAX_STACK {
                break;
            }
            let j = if self.caller { len - i - 1 } else { i };
            let ip = chain[j];
            if ip >= CONTEXT_MAX {
                match self.caller {
                    true => prev_mode(chain, j.saturating_sub(1), &mut mode)?,
                    false => mode = mode_of(ip).ok_or(())?,
                }
                continue;
            }
            entries += 1;
            let site = match mode {
                Mode::Hypervisor => self.unmapped(ip, b'H'),
                m => self.site(sym, pid, ip, Some(m == Mode::Kernel)),
            };
            out.0.push(site);
            out.1.push(Note::default());
        }
        Ok(())
    }

    /// A site no map holds.
    fn unmapped(&mut self, addr: u64, level: u8) -> u32 {
        self.intern(Site {
            frame: None,
            level,
            shown: addr,
            space: addr,
            addr,
            line: None,
        })
    }
}

impl SampleSink for History {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        if self.events.len() <= s.event {
            self.events.resize_with(s.event + 1, Event::default);
        }
        let kernel = s.misc & misc::CPUMODE_MASK == misc::KERNEL;
        let ip = s.addrs.first().copied().unwrap_or(0);
        let site = self.site(sym, s.pid, ip, Some(kernel));
        let all: Vec<Entry> = (s.branches.chunks_exact(3))
            .map(|e| Entry {
                from: e[0],
                to: e[1],
                flags: BranchFlags(e[2]),
            })
            .collect();
        // perf skips a stack deeper than PERF_MAX_BRANCH_DEPTH (127),
        // then keeps the chain whole.
        let mut be: Vec<Entry> = match (all.len() > MAX_STACK, self.caller) {
            (true, _) => Vec::new(),
            (false, false) => all,
            (false, true) => all.into_iter().rev().collect(),
        };
        let first = match self.caller {
            false => first_call(&be, s.chain),
            true => 0,
        };
        self.branches |= !be.is_empty();
        let iter = remove_loops(&mut be);
        let mut out = (Vec::new(), Vec::new());
        for (e, &(n, c)) in be.iter().zip(&iter) {
            let f = e.flags;
            out.0.push(self.site(sym, s.pid, e.to, None));
            out.1.push(match e.from {
                0 => Note::source(u64::from(f.cycles()), 0, 0),
                from => Note::target(from, e.to, f),
            });
            out.0.push(self.site(sym, s.pid, e.from, None));
            out.1.push(Note::source(u64::from(f.cycles()), n, c));
        }
        if !s.chain.is_empty() {
            let trace = (s.chain, first, be.len());
            if self.call_trace(sym, s.pid, trace, &mut out).is_err() {
                if !self.caller {
                    return;
                }
                out = (Vec::new(), Vec::new());
            }
        }
        let ev = &mut self.events[s.event];
        ev.samples += 1;
        // Saturating, as the other reports' totals: a damaged period
        // (2^64 - 1) is no overflow.
        ev.period = ev.period.saturating_add(s.period);
        ev.list.push(Sample {
            site,
            period: s.period,
            tid: s.tid,
            chain: out.0,
            notes: out.1,
        });
    }

    fn side(&mut self, _: Side) {}

    fn kernel_map(&mut self, start: u64, len: u64, pgoff: u64, path: &[u8]) {
        if let Some(name) = super::collect::module_name(&String::from_utf8_lossy(path)) {
            self.modules
                .push((start, start.saturating_add(len), pgoff, name));
        }
    }

    fn finish(&mut self, sym: &mut Symbolizer, remap: &[FrameId]) {
        self.named = self.sites.iter().map(|s| named(sym, remap, s)).collect();
        // A kernel address no symbol names, in a module the file mapped,
        // is that module's, shown relative to it (as perf).
        for (s, n) in self.sites.iter_mut().zip(&mut self.named) {
            if s.level != b'k' || s.frame.is_none() || n.symbol.is_some() {
                continue;
            }
            let m = self.modules.iter().find(|m| (m.0..m.1).contains(&s.addr));
            if let Some((start, _, pgoff, name)) = m {
                n.dso = Some(name.clone());
                s.shown = (s.addr - start).wrapping_add(*pgoff);
            }
        }
    }
}

/// One event's rows and chains.
pub struct HistoryEvent {
    name: String,
    samples: u64,
    period: u64,
    rows: Vec<Row>,
    /// Per sample: its period, chain (frames as links) and notes.
    chains: Vec<(u64, Vec<u32>, Vec<Note>)>,
}

/// `report --branch-history`: the file's report (header, events) and
/// each selected event's rows with their branch chains.
pub struct HistoryReport {
    /// The ordinary report of the same file (its rows unused).
    pub report: Report,
    events: Vec<HistoryEvent>,
    /// Each site's text in the graph (`main prog.c:12`, `0x401136`).
    texts: Vec<String>,
    /// Each site's rank by address: perf orders a graph's equal
    /// branches by address.
    ranks: Vec<u32>,
    /// Rows have children shares (a `Children` column).
    children: bool,
}

/// Read `opts.input` and build each sample's branch history; `caller`:
/// the oldest branch first (perf's `-g caller`); `children`: a row per
/// frame of the chains too where the file has call chains (perf's
/// default; not `--no-children`).
pub fn report(
    opts: &ReportOptions,
    (caller, children): (bool, bool),
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<HistoryReport, BranchError> {
    let children = children && pmx_profile::perf_text::call_chains(&opts.input) == Some(true);
    let mut sink = History {
        caller,
        sites: Vec::new(),
        ids: HashMap::default(),
        events: Vec::new(),
        named: Vec::new(),
        branches: false,
        modules: Vec::new(),
    };
    let report = report_with(opts, progress, Some(&mut sink as &mut dyn SampleSink))?;
    let texts = texts(&sink);
    if !sink.branches {
        return Err(BranchError::NoBranches(
            report.file.clone(),
            "--branch-history needs branch stacks".into(),
        ));
    }
    let mut events = Vec::new();
    for &i in &report.selected {
        let Some(e) = sink.events.get_mut(i).filter(|e| e.samples > 0) else {
            continue;
        };
        let e = std::mem::take(e);
        let name = report.profile.events[i].name.clone();
        events.push(event(&sink, name, e, children));
    }
    let mut order: Vec<usize> = (0..sink.sites.len()).collect();
    order.sort_by_key(|&i| (sink.sites[i].addr, i));
    let mut ranks = vec![0u32; order.len()];
    for (rank, &i) in order.iter().enumerate() {
        ranks[i] = rank as u32;
    }
    Ok(HistoryReport {
        report,
        events,
        texts,
        ranks,
        children,
    })
}

/// A site's symbol (name, start) and binary's short name, settled at
/// the end of the replay.
#[derive(Default, Clone)]
struct Named {
    symbol: Option<(String, u64)>,
    dso: Option<String>,
}

fn named(sym: &Symbolizer, remap: &[FrameId], s: &Site) -> Named {
    let Some(f) = s.frame else {
        return Named::default();
    };
    let f = remap.get(f as usize).copied().unwrap_or(f);
    let frame = sym.frame(f);
    Named {
        symbol: match &frame.name {
            FrameName::Symbol(n) => Some((n.clone(), sym.frame_start(f).unwrap_or(0))),
            FrameName::Address(_) => None,
        },
        dso: (frame.dso != UNKNOWN_DSO).then(|| sym.dso(frame.dso).short.clone()),
    }
}

/// perf's source line of a site: `file:line`, else `name+OFFSET`
/// (decimal), else `binary[hex]`, else `??:0`.
fn srcline(s: &Site, n: &Named) -> String {
    match (&s.line, &n.symbol, &n.dso) {
        (Some((f, l)), _, _) => format!("{f}:{l}"),
        (None, Some((name, start)), _) => format!("{name}+{}", s.space.wrapping_sub(*start)),
        (None, None, Some(d)) => format!("{d}[{:x}]", s.shown),
        (None, None, None) => "??:0".into(),
    }
}

/// Each site's text in the graph: `name srcline`, or its address.
fn texts(h: &History) -> Vec<String> {
    (h.sites.iter().zip(&h.named))
        .map(|(s, n)| match &n.symbol {
            Some((name, _)) => format!("{name} {}", srcline(s, n)),
            None => format!("{:#x}", s.addr),
        })
        .collect()
}

fn event(h: &History, name: String, e: Event, children: bool) -> HistoryEvent {
    let rows = rows::rows((&h.sites, &h.named), &e.list, children, h.caller);
    let chains = (e.list.into_iter())
        .map(|s| (s.period, s.chain, s.notes))
        .collect();
    HistoryEvent {
        name,
        samples: e.samples,
        period: e.period,
        rows,
        chains,
    }
}

impl HistoryReport {
    /// The report's warnings (binaries without symbols …).
    pub fn warnings(&self) -> &[String] {
        &self.report.profile.warnings
    }

    /// pmx's JSON of the report: per event its rows (keys, self and
    /// children periods and shares) and under each its chains, merged
    /// where their frames are the same (the period summed, each frame's
    /// note over the merged samples, as the graph prints it); flushed.
    /// Written as it is made, a chain at a time: a file of many chains
    /// holds one row's merged chains in memory, not the document.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &json::Doc(self)).map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()
    }

    /// perf's `--stdio` table with the graph `g` under each row; flushed.
    pub fn write(&self, out: &mut dyn Write, g: &Graph) -> std::io::Result<()> {
        super::table::preamble(out, &self.report)?;
        for (n, e) in self.events.iter().enumerate() {
            if n > 0 {
                writeln!(out, "\n")?;
            }
            self.event_table(out, e, g)?;
        }
        writeln!(
            out,
            "\n\n#\n# (Tip: pmx report -b counts the branches themselves)\n#"
        )?;
        out.flush()
    }

    fn event_table(&self, out: &mut dyn Write, e: &HistoryEvent, g: &Graph) -> std::io::Result<()> {
        let abbreviated = pmx_profile::perf_text::abbreviated(e.samples);
        writeln!(out, "# Samples: {abbreviated} of event '{}'", e.name)?;
        writeln!(out, "# Event count (approx.): {}\n#", e.period)?;
        let unresolved = e.rows.iter().any(|r| r.unresolved);
        let w = |f: fn(&Row) -> usize, min: usize| e.rows.iter().map(f).fold(min, usize::max);
        let ws = w(|r| r.srcline.len(), "Source:Line".len());
        let wy = w(|r| r.symbol.len() + 4, if unresolved { 22 } else { 6 });
        let wd = w(|r| r.dso.len(), if unresolved { 16 } else { 13 });
        let heads = ["Source:Line", "Symbol", "Shared Object"];
        let (head, dots) = match self.children {
            true => ("# Children      Self  ", "# ........  ........  "),
            false => ("# Overhead  ", "# ........  "),
        };
        write!(out, "{head}")?;
        for (h, w) in heads.iter().zip([ws, wy, wd]) {
            write!(out, "{h:w$}  ")?;
        }
        writeln!(out, "IPC   [IPC Coverage]")?;
        write!(out, "{dots}")?;
        for w in [ws, wy, wd] {
            write!(out, "{}  ", ".".repeat(w))?;
        }
        writeln!(out, "{}\n#", ".".repeat(20))?;
        let limit = self.report.options.percent_limit;
        for r in &e.rows {
            let share = pmx_profile::report::pct(r.period, e.period);
            let children = pmx_profile::report::pct(r.children, e.period);
            if limit > 0.0 && (if self.children { children } else { share }) < limit {
                continue;
            }
            let w = match self.children {
                true => {
                    write!(out, "{children:>9.2}%  ")?;
                    7
                }
                false => 9,
            };
            let ipc = "-      -";
            writeln!(
                out,
                "{share:>w$.2}%  {:ws$}  {:wy$}  {:wd$}  {ipc:20}",
                r.srcline,
                r.symbol_cell(),
                r.dso
            )?;
            let chains: Vec<(Vec<Link>, Vec<Note>, u64)> = (r.chains.iter())
                .map(|&(i, k)| (&e.chains[i as usize], k as usize))
                .filter(|(c, k)| c.1.len() > *k)
                .map(|((p, c, n), k)| {
                    let links = (c[k..].iter())
                        .map(|&s| (self.texts[s as usize].as_str(), self.ranks[s as usize]))
                        .collect();
                    (links, n[k..].to_vec(), *p)
                })
                .collect();
            if !chains.is_empty() {
                let parent = if self.children { r.children } else { r.period };
                graph::print_noted(out, &chains, parent, e.period, g)?;
            }
        }
        Ok(())
    }
}
