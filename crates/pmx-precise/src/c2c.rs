//! `pmx c2c report --stats` (and `perf c2c` under perf's name): the
//! memory samples of a file counted as perf 6.1's `c2c_decode_stats`
//! counts them (loads by level, local and remote HITMs, peers, DRAM,
//! stores, locked and blocked accesses, samples whose data or code
//! address is in no mapping), the same counts over the shared cache lines
//! (lines with a HITM or a peer hit; a line is a 64-byte line of its
//! mapping), and perf's `--stats` text; then the cache lines themselves
//! ([`lines`]: per line and, inside it, per offset and coalescing keys)
//! in perf's two `--stdio` tables ([`table`]): the Shared Data Cache Line
//! Table and the Shared Cache Line Distribution Pareto.

pub mod lines;
pub mod table;

pub use lines::{parse_coalesce, Coalesce, Display};

use crate::mem::report::MemError;
use crate::mem::Resolver;
use lines::{Entry, EntryKey, Line, LineKey, Sampled};
use pmx_perfdata::mem::{blk, lock, lvl, op, snoop, snoopx, DataSrc};
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::{Symbolizer, UNKNOWN_DSO};
use pmx_symbols::SymbolOptions;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct C2cOptions {
    /// The perf.data file.
    pub input: PathBuf,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
    /// `-d`: what the lines are sorted and filtered on.
    pub display: Display,
    /// `-c`: the keys of a line's entries after the offset (perf's
    /// default: `iaddr`).
    pub coalesce: Vec<Coalesce>,
    /// `--no-source`: no source line column.
    pub no_source: bool,
}

/// perf's `struct c2c_stats`: counts of memory samples by what their
/// data source says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct C2cStats {
    pub nr_entries: u64,
    pub locks: u64,
    pub load: u64,
    pub ld_uncache: u64,
    pub ld_io: u64,
    pub ld_miss: u64,
    pub ld_noadrs: u64,
    pub ld_fbhit: u64,
    pub ld_l1hit: u64,
    pub ld_l2hit: u64,
    pub ld_llchit: u64,
    pub lcl_hitm: u64,
    pub rmt_hitm: u64,
    pub tot_hitm: u64,
    pub rmt_hit: u64,
    pub lcl_dram: u64,
    pub rmt_dram: u64,
    pub ld_excl: u64,
    pub ld_shared: u64,
    pub blk_data: u64,
    pub blk_addr: u64,
    pub lcl_peer: u64,
    pub rmt_peer: u64,
    pub tot_peer: u64,
    pub store: u64,
    pub st_uncache: u64,
    pub st_noadrs: u64,
    pub st_l1hit: u64,
    pub st_l1miss: u64,
    pub st_na: u64,
    pub nomap: u64,
    pub noparse: u64,
}

impl C2cStats {
    /// Count one sample: its data source, whether it has a data address,
    /// and whether its data and code addresses are in a mapping.
    pub fn add(&mut self, d: &DataSrc, daddr: u64, mapped: bool) {
        let (l, s, sx) = (d.lvl, d.snoop, d.snoopx);
        // Skylake reports an unknown remote level by the remote bit
        // (POWER uses it with hops for another core of the node).
        let mrem = d.remote != 0 && d.hops == 0;
        self.nr_entries += 1;
        self.locks += u64::from(d.lock & lock::LOCKED != 0);
        self.blk_data += u64::from(d.blk & blk::DATA != 0);
        self.blk_addr += u64::from(d.blk & blk::ADDR != 0);
        if d.op & op::LOAD != 0 {
            self.load += 1;
            if daddr == 0 {
                self.ld_noadrs += 1;
                return;
            }
            if l & lvl::HIT != 0 {
                self.load_hit(d);
            }
            if l & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0 || mrem {
                if s & snoop::HIT != 0 {
                    self.rmt_hit += 1;
                } else if s & snoop::HITM != 0 {
                    (self.rmt_hitm, self.tot_hitm) = (self.rmt_hitm + 1, self.tot_hitm + 1);
                } else if sx & snoopx::PEER != 0 {
                    self.rmt_hit += 1;
                    (self.rmt_peer, self.tot_peer) = (self.rmt_peer + 1, self.tot_peer + 1);
                }
            }
            self.ld_miss += u64::from(l & lvl::MISS != 0);
        } else if d.op & op::STORE != 0 {
            self.store += 1;
            if daddr == 0 {
                self.st_noadrs += 1;
                return;
            }
            if l & lvl::HIT != 0 {
                self.st_uncache += u64::from(l & lvl::UNC != 0);
                self.st_l1hit += u64::from(l & lvl::L1 != 0);
            }
            self.st_l1miss += u64::from(l & lvl::MISS != 0 && l & lvl::L1 != 0);
            self.st_na += u64::from(l & lvl::NA != 0);
        } else {
            self.noparse += 1;
            return;
        }
        self.nomap += u64::from(!mapped);
    }

    /// A load that hit a level.
    fn load_hit(&mut self, d: &DataSrc) {
        let (l, s, sx) = (d.lvl, d.snoop, d.snoopx);
        let mrem = d.remote != 0 && d.hops == 0;
        self.ld_uncache += u64::from(l & lvl::UNC != 0);
        self.ld_io += u64::from(l & lvl::IO != 0);
        self.ld_fbhit += u64::from(l & lvl::LFB != 0);
        self.ld_l1hit += u64::from(l & lvl::L1 != 0);
        let peer = u64::from(sx & snoopx::PEER != 0);
        if l & lvl::L2 != 0 {
            self.ld_l2hit += 1;
            (self.lcl_peer, self.tot_peer) = (self.lcl_peer + peer, self.tot_peer + peer);
        }
        if l & lvl::L3 != 0 {
            if s & snoop::HITM != 0 {
                (self.lcl_hitm, self.tot_hitm) = (self.lcl_hitm + 1, self.tot_hitm + 1);
            } else {
                self.ld_llchit += 1;
            }
            (self.lcl_peer, self.tot_peer) = (self.lcl_peer + peer, self.tot_peer + peer);
        }
        let shared = u64::from(s & snoop::HIT != 0);
        if l & lvl::LOC_RAM != 0 {
            self.lcl_dram += 1;
            (self.ld_shared, self.ld_excl) = (self.ld_shared + shared, self.ld_excl + 1 - shared);
        }
        if l & (lvl::REM_RAM1 | lvl::REM_RAM2) != 0 || mrem {
            self.rmt_dram += 1;
            (self.ld_shared, self.ld_excl) = (self.ld_shared + shared, self.ld_excl + 1 - shared);
        }
    }

    pub(crate) fn merge(&mut self, o: &C2cStats) {
        let a: [&mut u64; 32] = self.fields_mut();
        let b = o.fields();
        for (x, y) in a.into_iter().zip(b) {
            *x += y;
        }
    }

    fn fields(&self) -> [u64; 32] {
        let mut c = *self;
        c.fields_mut().map(|v| *v)
    }

    fn fields_mut(&mut self) -> [&mut u64; 32] {
        [
            &mut self.nr_entries,
            &mut self.locks,
            &mut self.load,
            &mut self.ld_uncache,
            &mut self.ld_io,
            &mut self.ld_miss,
            &mut self.ld_noadrs,
            &mut self.ld_fbhit,
            &mut self.ld_l1hit,
            &mut self.ld_l2hit,
            &mut self.ld_llchit,
            &mut self.lcl_hitm,
            &mut self.rmt_hitm,
            &mut self.tot_hitm,
            &mut self.rmt_hit,
            &mut self.lcl_dram,
            &mut self.rmt_dram,
            &mut self.ld_excl,
            &mut self.ld_shared,
            &mut self.blk_data,
            &mut self.blk_addr,
            &mut self.lcl_peer,
            &mut self.rmt_peer,
            &mut self.tot_peer,
            &mut self.store,
            &mut self.st_uncache,
            &mut self.st_noadrs,
            &mut self.st_l1hit,
            &mut self.st_l1miss,
            &mut self.st_na,
            &mut self.nomap,
            &mut self.noparse,
        ]
    }

    /// perf's LLC misses: local and remote DRAM, remote HITs and HITMs.
    pub fn llc_misses(&self) -> u64 {
        self.lcl_dram + self.rmt_dram + self.rmt_hitm + self.rmt_hit
    }
}

/// A c2c report's numbers.
#[derive(Debug, Clone, Default)]
pub struct C2cReport {
    /// Every memory sample's counts.
    pub stats: C2cStats,
    /// The shared cache lines' (those with a HITM or a peer hit) counts.
    pub shared: C2cStats,
    /// How many cache lines are shared.
    pub shared_lines: u64,
    /// The file's events.
    pub events: Vec<String>,
    /// Warnings of the symbolizer.
    pub warnings: Vec<String>,
    /// Every cache line, in perf's tree order.
    pub lines: Vec<lines::Line>,
    /// The NUMA node of each CPU (from the file's topology).
    pub cpu_node: Vec<Option<u32>>,
    /// `-c`'s keys as perf names them (`iaddr`).
    pub grouping: String,
}

/// Count the memory samples of `opts.input` as perf c2c does.
pub fn c2c_report(opts: &C2cOptions) -> Result<C2cReport, MemError> {
    let file = opts.input.display().to_string();
    let read_err = |source| MemError::Read {
        file: file.clone(),
        source,
    };
    let mut reader = Reader::open(&opts.input).map_err(read_err)?;
    let st = pmx_perfdata::format::sample_type::DATA_SRC;
    if !reader.is_pipe() && !reader.events().iter().any(|e| e.attr.sample_type & st != 0) {
        return Err(MemError::NoMemData);
    }
    let events = reader.events().iter().map(|e| e.name.clone()).collect();
    let here =
        pmx_profile::profile::kernel_is_here(reader.features(), &pmx_profile::MachineId::current());
    let mut sym = Symbolizer::new(Default::default(), Default::default(), None, &opts.symbols);
    sym.allow_running_vdso(here);
    let mut resolver = Resolver::new(sym, here, opts.symbols.dirs.cache.clone());
    let has_cpu: Vec<bool> = (reader.events().iter())
        .map(|e| e.attr.sample_type & pmx_perfdata::format::sample_type::CPU != 0)
        .collect();
    let cpu_node = numa_of(reader.features());
    let mut stats = C2cStats::default();
    let mut shared: HashMap<(Option<u32>, u64), C2cStats> = HashMap::default();
    let mut by_line: BTreeMap<LineKey, Line> = BTreeMap::new();
    let mut add = |s: &crate::mem::MemSample, r: &mut Resolver| {
        let d = DataSrc::from_raw(s.data_src);
        let mapped = s.object.is_some() && r.sym.frame(s.frame).dso != UNKNOWN_DSO;
        let mut one = C2cStats::default();
        one.add(&d, s.addr, mapped);
        stats.merge(&one);
        (shared.entry((s.object, s.data_rel & !63)).or_default()).merge(&one);
        let cpu = has_cpu
            .get(s.event)
            .copied()
            .unwrap_or(false)
            .then_some(s.cpu);
        let key = line_key(s);
        let line = by_line.entry(key).or_insert_with(|| Line::new(s.addr));
        line.add(Sampled {
            stats: &one,
            key: entry_key(s, &opts.coalesce, r),
            addr: s.addr,
            data_rel: s.data_rel,
            weight: s.weight,
            cpu,
            make: &mut || entry_of(s, opts, r),
        });
    };
    crate::mem::replay_run(&mut reader, &mut resolver, &mut add).map_err(read_err)?;
    let mut report = C2cReport {
        stats,
        events,
        warnings: resolver.sym.warnings().to_vec(),
        lines: by_line.into_values().collect(),
        cpu_node,
        grouping: lines::coalesce_words(&opts.coalesce),
        ..C2cReport::default()
    };
    for l in shared.values().filter(|l| l.tot_hitm + l.tot_peer > 0) {
        report.shared_lines += 1;
        report.shared.merge(l);
    }
    Ok(report)
}

/// The node of each CPU, from the file's NUMA topology.
fn numa_of(f: &pmx_perfdata::read::FileFeatures) -> Vec<Option<u32>> {
    let raw = f.raw.get(&pmx_perfdata::format::feature::NUMA_TOPOLOGY);
    let nodes = raw.and_then(|b| pmx_perfdata::topology::parse_numa_topology(b));
    let mut out = Vec::new();
    for n in nodes.unwrap_or_default() {
        for &c in &n.cpus {
            let c = c as usize;
            if out.len() <= c {
                out.resize(c + 1, None);
            }
            out[c] = Some(n.node);
        }
    }
    out
}

/// perf's `dcacheline` key of a sample: its mode, its mapping (files by
/// their object; anonymous memory as one space per process), the line.
fn line_key(s: &crate::mem::MemSample) -> LineKey {
    let anon = !s.kernel && s.anon;
    LineKey {
        mode: if s.kernel { 1 } else { 2 },
        unmapped: s.object.is_none(),
        object: match s.object {
            Some(o) if !anon => o + 1,
            _ => 0,
        },
        pid: if anon { s.pid } else { 0 },
        line: s.data_rel & !63,
    }
}

fn entry_key(s: &crate::mem::MemSample, keys: &[Coalesce], r: &Resolver) -> EntryKey {
    use lines::Part;
    let parts = keys.iter().map(|k| match k {
        Coalesce::Pid => Part::Pid(s.pid),
        Coalesce::Tid => Part::Tid(s.tid),
        Coalesce::Iaddr => Part::Iaddr(s.ip),
        Coalesce::Dso => Part::Dso(dso_of(s, r)),
    });
    EntryKey {
        offset: s.addr & 63,
        parts: parts.collect(),
    }
}

fn dso_of(s: &crate::mem::MemSample, r: &Resolver) -> Option<String> {
    let d = r.sym.frame(s.frame).dso;
    (d != UNKNOWN_DSO).then(|| r.sym.dso(d).short.clone())
}

/// The columns of a new entry: symbol, object, command, source line.
fn entry_of(s: &crate::mem::MemSample, opts: &C2cOptions, r: &mut Resolver) -> Entry {
    let mut e = Entry::new(s.ip, s.pid, s.tid);
    let level = if s.kernel { 'k' } else { '.' };
    e.symbol = format!("[{level}] {}", r.sym.frame(s.frame).label());
    e.dso = dso_of(s, r);
    e.comm = r.comms[s.comm as usize].clone();
    if opts.coalesce.contains(&Coalesce::Iaddr) && !opts.no_source {
        e.srcline = srcline(s, r, e.dso.as_deref());
    }
    e
}

/// perf's source line of a code address: `file:line` from DWARF, else
/// the object and the address in it (`prog[1139]`), else `??:0`.
fn srcline(s: &crate::mem::MemSample, r: &mut Resolver, dso: Option<&str>) -> String {
    if !s.kernel {
        if let Some((file, line)) = r.sym.source_line(s.pid, s.ip) {
            let base = file.rsplit('/').next().unwrap_or(&file).to_string();
            return format!("{base}:{line}");
        }
    }
    let Some(dso) = dso else {
        return "??:0".into();
    };
    let rel = match r.sym.user_vaddr(s.pid, s.ip) {
        Some((_, v)) if !s.kernel => v,
        _ => match r.sym.mapping(s.pid, s.ip) {
            Some((start, _, pgoff, _)) if !s.kernel => s.ip - start + pgoff,
            _ => s.ip,
        },
    };
    format!("{dso}[{rel:x}]")
}

/// perf c2c report's `--stats` text.
pub fn print_stats(out: &mut dyn Write, r: &C2cReport, d: Display) -> std::io::Result<()> {
    let s = &r.stats;
    let rule = "=================================================";
    let head = |out: &mut dyn Write, t: &str| writeln!(out, "{rule}\n{t}\n{rule}");
    let n = |out: &mut dyn Write, name: &str, v: u64| writeln!(out, "  {name:<34}: {v:>10}");
    let misses = s.llc_misses();
    let pct = |out: &mut dyn Write, name: &str, v: u64| match misses {
        0 => writeln!(out, "  {name:<34}: {:>10}%", "-nan"),
        m => writeln!(out, "  {name:<34}: {:>10.1}%", v as f64 * 100.0 / m as f64),
    };
    head(out, "            Trace Event Information              ")?;
    for (name, v) in [
        ("Total records", s.nr_entries),
        ("Locked Load/Store Operations", s.locks),
        ("Load Operations", s.load),
        ("Loads - uncacheable", s.ld_uncache),
        ("Loads - IO", s.ld_io),
        ("Loads - Miss", s.ld_miss),
        ("Loads - no mapping", s.ld_noadrs),
        ("Load Fill Buffer Hit", s.ld_fbhit),
        ("Load L1D hit", s.ld_l1hit),
        ("Load L2D hit", s.ld_l2hit),
        ("Load LLC hit", s.ld_llchit + s.lcl_hitm),
        ("Load Local HITM", s.lcl_hitm),
        ("Load Remote HITM", s.rmt_hitm),
        ("Load Remote HIT", s.rmt_hit),
        ("Load Local DRAM", s.lcl_dram),
        ("Load Remote DRAM", s.rmt_dram),
        ("Load MESI State Exclusive", s.ld_excl),
        ("Load MESI State Shared", s.ld_shared),
        ("Load LLC Misses", misses),
        ("Load access blocked by data", s.blk_data),
        ("Load access blocked by address", s.blk_addr),
        ("Load HIT Local Peer", s.lcl_peer),
        ("Load HIT Remote Peer", s.rmt_peer),
    ] {
        n(out, name, v)?;
    }
    pct(out, "LLC Misses to Local DRAM", s.lcl_dram)?;
    pct(out, "LLC Misses to Remote DRAM", s.rmt_dram)?;
    pct(out, "LLC Misses to Remote cache (HIT)", s.rmt_hit)?;
    pct(out, "LLC Misses to Remote cache (HITM)", s.rmt_hitm)?;
    for (name, v) in [
        ("Store Operations", s.store),
        ("Store - uncacheable", s.st_uncache),
        ("Store - no mapping", s.st_noadrs),
        ("Store L1D Hit", s.st_l1hit),
        ("Store L1D Miss", s.st_l1miss),
        ("Store No available memory level", s.st_na),
        ("No Page Map Rejects", s.nomap),
        ("Unable to parse data source", s.noparse),
    ] {
        n(out, name, v)?;
    }
    let h = &r.shared;
    writeln!(out)?;
    head(out, "    Global Shared Cache Line Event Information   ")?;
    for (name, v) in [
        ("Total Shared Cache Lines", r.shared_lines),
        ("Load HITs on shared lines", h.load),
        ("Fill Buffer Hits on shared lines", h.ld_fbhit),
        ("L1D hits on shared lines", h.ld_l1hit),
        ("L2D hits on shared lines", h.ld_l2hit),
        ("LLC hits on shared lines", h.ld_llchit + h.lcl_hitm),
        ("Load hits on peer cache or nodes", h.lcl_peer + h.rmt_peer),
        ("Locked Access on shared lines", h.locks),
        ("Blocked Access on shared lines", h.blk_data + h.blk_addr),
        ("Store HITs on shared lines", h.store),
        ("Store L1D hits on shared lines", h.st_l1hit),
        ("Store No available memory level", h.st_na),
        ("Total Merged records", h.lcl_hitm + h.rmt_hitm + h.store),
    ] {
        n(out, name, v)?;
    }
    writeln!(out)?;
    head(out, "                 c2c details                     ")?;
    for (i, e) in r.events.iter().enumerate() {
        let name = if i == 0 { "Events" } else { "" };
        writeln!(out, "  {name:<34}: {e}")?;
    }
    writeln!(out, "  {:<34}: {}", "Cachelines sort on", d.name())?;
    writeln!(
        out,
        "  {:<34}: offset,{}",
        "Cacheline data grouping", r.grouping
    )
}
