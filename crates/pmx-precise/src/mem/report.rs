//! `report --mem-mode` (and `perf mem report`): the memory samples of a
//! file grouped by memory keys, each row's cost its samples' weight
//! (a sample of weight 0 costs 1), as perf's memory mode counts it.

use super::export::{Collected, MemExports};
use super::keys::MemKey;
use super::replay::{self, MemSample, Resolver};
use pmx_perfdata::mem::DataSrc;
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::{FrameName, Symbolizer, UNKNOWN_DSO};
use pmx_symbols::SymbolOptions;
use std::fmt::Write as _;
use std::path::PathBuf;

/// What to report.
#[derive(Debug, Clone, Default)]
pub struct MemOptions {
    /// The perf.data file.
    pub input: PathBuf,
    /// The row keys, in order.
    pub sort: Vec<MemKey>,
    /// The sort order as the header line shows it (`--sort` as given, or
    /// perf's default).
    pub sort_order: String,
    /// Only this event.
    pub event: Option<String>,
    /// Look binaries up under this directory (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
    /// pmx's own `symbol_daddr`: a data address named by its object (a
    /// binary's data symbol, `[heap]`, `[stack]`, `[anon]`), one row per
    /// object; else perf 6.1's (the address).
    pub data_objects: bool,
    /// The exports to collect (pprof's, the flame graph of data objects).
    pub exports: MemExports,
}

impl MemOptions {
    /// Options for `input` with these keys and sort order's text.
    pub fn new(input: PathBuf, sort: Vec<MemKey>, sort_order: String) -> MemOptions {
        MemOptions {
            input,
            sort,
            sort_order,
            ..MemOptions::default()
        }
    }
}

/// Why a memory report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file as shown.
        file: String,
        /// Why.
        source: pmx_perfdata::Error,
    },
    /// No event of the file samples data sources (perf's words).
    #[error("Selected --mem-mode but no mem data. Did you call perf record without -d?")]
    NoMemData,
    /// A flag the file cannot take (perf's words).
    #[error("{0}")]
    Refused(String),
    /// The output could not be written.
    #[error("writing the dump: {0}")]
    Write(std::io::Error),
    /// `--event` names no event of the file.
    #[error("--event {0}: no such event in the file")]
    UnknownEvent(String),
}

/// One row: its totals, and its first sample, which names it
/// ([`MemReport::cell`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemRow {
    /// Samples.
    pub samples: u64,
    /// The rows' cost: the sum of the samples' weights (1 for weight 0).
    pub period: u64,
    /// The sum of the samples' weights.
    pub weight: u64,
    /// The sum of the samples' instruction latencies.
    pub ins_lat: u64,
    pub(crate) first: MemSample,
}

/// One event's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemEvent {
    /// The event's name.
    pub name: String,
    /// Its memory samples.
    pub samples: u64,
    /// The sum of the rows' periods (perf's "Total weight").
    pub total: u64,
    /// The rows, in perf's order.
    pub rows: Vec<MemRow>,
}

/// A memory report: the rows of each event, and what names their cells
/// ([`MemReport::cell`]).
pub struct MemReport {
    /// The keys.
    pub sort: Vec<MemKey>,
    /// The sort order's text.
    pub sort_order: String,
    /// Events with memory samples.
    pub events: Vec<MemEvent>,
    /// LOST_SAMPLES' total.
    pub lost_samples: u64,
    /// Warnings of the symbolizer.
    pub warnings: Vec<String>,
    pub(crate) names: Resolver,
    /// What the exports are made of, when asked for.
    pub(crate) collected: Option<Collected>,
}

impl std::fmt::Debug for MemReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemReport")
            .field("sort", &self.sort)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// The grouping value of a sample for `k` (perf's `cmp`: `mem` groups
/// by `mem_lvl` alone, `snoop` by `mem_snoop`, …).
pub(crate) fn group_value(k: MemKey, s: &MemSample, sym: &Symbolizer) -> u64 {
    let d = || DataSrc::from_raw(s.data_src);
    match k {
        MemKey::LocalWeight | MemKey::Weight => s.weight,
        MemKey::Mem => d().lvl.into(),
        MemKey::Snoop => d().snoop.into(),
        MemKey::Tlb => d().dtlb.into(),
        MemKey::Locked => d().lock.into(),
        MemKey::Blocked => d().blk.into(),
        MemKey::Sym => s.frame.into(),
        MemKey::Dso => sym.frame(s.frame).dso.into(),
        MemKey::SymbolDaddr if s.dobj != u32::MAX => s.dobj.into(),
        MemKey::SymbolDaddr => s.addr,
        MemKey::DsoDaddr => s.object.map_or(u64::MAX, u64::from),
        MemKey::Dcacheline => s.data_rel & !63,
        MemKey::LocalInsLat | MemKey::InsLat => s.ins_lat.into(),
        MemKey::LocalPStageCyc | MemKey::PStageCyc => 0,
        MemKey::DataPageSize => s.data_page_size,
        MemKey::PhysDaddr => s.phys_addr,
        MemKey::Comm => s.comm.into(),
        MemKey::IpcNull => 0,
        MemKey::Type => s.dtype.0.into(),
        MemKey::TypeOff => s.dtype.1.into(),
    }
}

/// The rows of one event being grouped, found by the hash of their keys'
/// values (a row's values are its first sample's, compared on a match),
/// each row's hash kept (a growth of the table moves rows by it, without
/// hashing their keys again).
#[derive(Default)]
struct Groups {
    index: hashbrown::HashTable<u32>,
    rows: Vec<MemRow>,
    hashes: Vec<u64>,
}

/// The hash of a sample's values of `keys` (and of its data mapping: a
/// cache line is of its mapping).
fn key_hash(keys: &[MemKey], s: &MemSample, sym: &Symbolizer) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    keys.iter()
        .for_each(|&k| group_value(k, s, sym).hash(&mut h));
    if keys.contains(&MemKey::Dcacheline) {
        line_group(s).hash(&mut h);
    }
    h.finish()
}

/// Whether two samples have the same values of `keys`.
fn same(keys: &[MemKey], a: &MemSample, b: &MemSample, sym: &Symbolizer) -> bool {
    keys.iter()
        .all(|&k| group_value(k, a, sym) == group_value(k, b, sym))
        && (line_group(a) == line_group(b) || !keys.contains(&MemKey::Dcacheline))
}

/// What a cache line is of besides its address, as perf's `dcacheline`
/// groups lines: the sample's mode, its data mapping, and for anonymous
/// user memory, its process.
fn line_group(s: &MemSample) -> (bool, Option<u32>, u32) {
    let pid = if s.anon && !s.kernel { s.pid } else { 0 };
    (s.kernel, s.object, pid)
}

impl Groups {
    /// Count `s` in its row (a new row when it is the first of its values).
    fn add(&mut self, keys: &[MemKey], s: &MemSample, sym: &Symbolizer) {
        let hash = key_hash(keys, s, sym);
        let rows = &mut self.rows;
        let found = (self.index).find(hash, |&i| same(keys, &rows[i as usize].first, s, sym));
        let i = match found {
            Some(&i) => i as usize,
            None => {
                rows.push(MemRow {
                    samples: 0,
                    period: 0,
                    weight: 0,
                    ins_lat: 0,
                    first: *s,
                });
                self.hashes.push(hash);
                let hashes = &self.hashes;
                self.index
                    .insert_unique(hash, rows.len() as u32 - 1, |&j| hashes[j as usize]);
                rows.len() - 1
            }
        };
        let a = &mut rows[i];
        a.samples += 1;
        a.period = a.period.saturating_add(s.weight.max(1));
        a.weight = a.weight.saturating_add(s.weight);
        a.ins_lat += u64::from(s.ins_lat);
    }
}

/// The replay's resolver, asked for what `opts`' keys name.
fn resolver(opts: &MemOptions, reader: &Reader) -> Resolver {
    let mut resolver = Resolver::for_reader(reader, opts.symfs.clone(), &opts.symbols);
    let has = |k| opts.sort.contains(&k);
    if opts.data_objects && has(MemKey::SymbolDaddr) {
        resolver.name_data_objects();
    }
    // perf's data symbols: the column's text, and the width of it and of
    // the cache line's column.
    if !opts.data_objects && (has(MemKey::SymbolDaddr) || has(MemKey::Dcacheline)) {
        resolver.name_perf_symbols();
    }
    if has(MemKey::Type) || has(MemKey::TypeOff) {
        resolver.name_data_types();
    }
    resolver
}

/// Build the memory report of `opts.input`.
pub fn mem_report(opts: &MemOptions) -> Result<MemReport, MemError> {
    let file = opts.input.display().to_string();
    let read_err = |source| MemError::Read {
        file: file.clone(),
        source,
    };
    let mut reader = Reader::open(&opts.input).map_err(read_err)?;
    let mem_events: Vec<bool> = (reader.events().iter())
        .map(|e| e.attr.sample_type & pmx_perfdata::format::sample_type::DATA_SRC != 0)
        .collect();
    if !reader.is_pipe() && !mem_events.iter().any(|&m| m) {
        return Err(MemError::NoMemData);
    }
    let names: Vec<String> = reader.events().iter().map(|e| e.name.clone()).collect();
    if let Some(e) = &opts.event {
        if !names.contains(e) {
            return Err(MemError::UnknownEvent(e.clone()));
        }
    }
    let mut resolver = resolver(opts, &reader);
    let mut per_event: Vec<Groups> = Vec::new();
    let mut collected = opts.exports.any().then(Collected::default);
    let mut add = |s: &MemSample, r: &mut Resolver| {
        if per_event.len() <= s.event {
            per_event.resize_with(s.event + 1, Default::default);
        }
        per_event[s.event].add(&opts.sort, s, &r.sym);
        if let Some(c) = &mut collected {
            c.add(s, r, names.get(s.event).map_or("", |n| n.as_str()));
        }
    };
    replay::run(&mut reader, &mut resolver, &mut add).map_err(read_err)?;
    let mut events = Vec::new();
    for (i, g) in per_event.into_iter().enumerate() {
        let name = names.get(i).cloned().unwrap_or_default();
        if g.rows.is_empty() || opts.event.as_ref().is_some_and(|e| *e != name) {
            continue;
        }
        drop((g.index, g.hashes));
        let mut rows = g.rows;
        sort(&mut rows, &opts.sort, &resolver);
        events.push(MemEvent {
            name,
            samples: rows.iter().map(|r| r.samples).sum(),
            total: rows.iter().map(|r| r.period).sum(),
            rows,
        });
    }
    if let Some(c) = &mut collected {
        c.finish(&names, &file);
    }
    let mut warnings = resolver.sym.warnings().to_vec();
    if let Some(t) = reader.truncation() {
        warnings.insert(0, pmx_profile::truncation_warning(t, reader.bytes_read()));
    }
    Ok(MemReport {
        sort: opts.sort.clone(),
        sort_order: opts.sort_order.clone(),
        events,
        lost_samples: reader.stats().lost_samples,
        warnings,
        names: resolver,
        collected,
    })
}

// The rows put in perf's order and named: rows of equal cost ordered
// key by key as perf's compare functions order them, names compared
// through their ranks (each distinct name ranked once), each row's cells
// written from its first sample when the table is printed, never kept.

/// No name: after every name in a rank's ascending order.
const NONE: u32 = u32::MAX;

/// Each id's rank among `names` (by name, ascending; equal names equal
/// ranks; [`NONE`] where an id has no name).
fn ranks<'a>(names: impl Iterator<Item = Option<&'a str>>) -> Vec<u32> {
    let names: Vec<Option<&str>> = names.collect();
    let mut ids: Vec<u32> = (0..names.len() as u32)
        .filter(|&i| names[i as usize].is_some())
        .collect();
    ids.sort_by_key(|&i| names[i as usize]);
    let mut out = vec![NONE; names.len()];
    let mut rank = 0u32;
    for (n, &i) in ids.iter().enumerate() {
        if n > 0 && names[ids[n - 1] as usize] != names[i as usize] {
            rank += 1;
        }
        out[i as usize] = rank;
    }
    out
}

/// The ranks of the names a memory report orders by.
struct Ranks {
    frames: Vec<u32>,
    dsos: Vec<u32>,
    objects: Vec<u32>,
    comms: Vec<u32>,
    data: Vec<u32>,
    types: Vec<u32>,
    /// Data objects by their files' ids (perf's `dso__cmp_id`).
    inodes: Vec<u32>,
}

impl Ranks {
    fn of(keys: &[MemKey], r: &Resolver) -> Ranks {
        let has = |k| keys.contains(&k);
        let stats = r.sym.stats();
        let frames = (0..stats.frames as u32).map(|f| match &r.sym.frame(f).name {
            FrameName::Symbol(s) => Some(s.as_str()),
            FrameName::Address(_) => None,
        });
        let dsos =
            (0..stats.dsos as u32).map(|d| (d != UNKNOWN_DSO).then(|| r.sym.dso(d).short.as_str()));
        let all = |v: &[String]| ranks(v.iter().map(|s| Some(s.as_str())));
        Ranks {
            frames: if has(MemKey::Sym) {
                ranks(frames)
            } else {
                Vec::new()
            },
            dsos: if has(MemKey::Dso) {
                ranks(dsos)
            } else {
                Vec::new()
            },
            objects: all(&r.objects),
            comms: all(&r.comms),
            data: all(&r.data_names),
            types: all(&r.type_names),
            inodes: {
                let mut ids: Vec<u32> = (0..r.object_inodes.len() as u32).collect();
                ids.sort_by_key(|&i| r.object_inodes[i as usize]);
                let mut out = vec![0; ids.len()];
                for (n, &i) in ids.iter().enumerate() {
                    let same = n > 0
                        && r.object_inodes[ids[n - 1] as usize] == r.object_inodes[i as usize];
                    out[i as usize] = if same {
                        out[ids[n - 1] as usize]
                    } else {
                        n as u32
                    };
                }
                out
            },
        }
    }
}

fn rank(v: &[u32], id: u32) -> u32 {
    v.get(id as usize).copied().unwrap_or(NONE)
}

/// A value of `x` whose unsigned order is perf's order by `(int64_t)(r -
/// l)` (the smaller first, modulo 2⁶⁴: a kernel address before a user
/// one) for values less than 2⁶³ apart (any two canonical addresses).
fn signed(x: u64) -> u64 {
    x ^ 1 << 63
}

/// The values of row `a` whose ascending order is perf's order of rows
/// of equal cost by key `k`, pushed to `out` (none for a key that orders
/// nothing, two for a cache line).
fn key_values(k: MemKey, a: &MemRow, ranks: &Ranks, r: &Resolver, out: &mut Vec<u64>) {
    let s = &a.first;
    let per = |x: u64, n: u64| x / n.max(1);
    let v = match k {
        // perf's `l - r`: the larger first.
        MemKey::LocalWeight => !per(a.weight, a.samples),
        MemKey::Weight => !a.weight,
        MemKey::LocalInsLat => !per(a.ins_lat, a.samples),
        MemKey::InsLat => !a.ins_lat,
        MemKey::LocalPStageCyc | MemKey::PStageCyc | MemKey::IpcNull => return,
        MemKey::Sym => rank(&ranks.frames, s.frame).into(),
        // perf's `sort__dso_cmp` swaps its sides: names ascending, no
        // binary last.
        MemKey::Dso => rank(&ranks.dsos, r.sym.frame(s.frame).dso).into(),
        // perf's `sort__dcacheline_cmp`: kernel samples first, then
        // mapped lines by their files' ids (anonymous memory first, by
        // process), the addresses in no mapping last; then by the line's
        // address in its mapping, the smaller first.
        MemKey::Dcacheline => {
            let (kernel, object, pid) = line_group(s);
            let file = object.map_or(0, |o| rank(&ranks.inodes, o));
            let group = u64::from(!kernel) << 63
                | u64::from(object.is_none()) << 62
                | u64::from(file) << 32
                | u64::from(pid);
            out.push(group);
            s.data_rel & !63
        }
        // By name, descending; no mapping before any (`strcmp(l, r)`).
        MemKey::DsoDaddr => s
            .object
            .map_or(0, |o| 1 + u64::from(u32::MAX - rank(&ranks.objects, o))),
        MemKey::Comm => rank(&ranks.comms, s.comm).into(),
        MemKey::SymbolDaddr if s.dobj != u32::MAX => rank(&ranks.data, s.dobj).into(),
        MemKey::Type => rank(&ranks.types, s.dtype.0).into(),
        MemKey::TypeOff => rank(&ranks.types, s.dtype.1).into(),
        _ => signed(group_value(k, s, &r.sym)),
    };
    out.push(v);
}

/// How many of a row's first order values its entry in the sort holds
/// (the cost, then the keys': with perf's default order, up to the data
/// address, which parts almost every row); rows equal in these are
/// compared by all their values, computed again.
const HELD: usize = 6;

/// Put `rows` in perf's order: the cost, then each key's order, then the
/// samples; rows equal in all keep their order. Each row's order is its
/// values compared in order ([`key_values`]), the row's index last; the
/// first [`HELD`] are computed once and sorted with the row's index (no
/// look-up elsewhere for most comparisons); the rows are then moved in
/// place.
pub(crate) fn sort(rows: &mut [MemRow], keys: &[MemKey], r: &Resolver) {
    let ranks = Ranks::of(keys, r);
    let values = |row: &MemRow, out: &mut Vec<u64>| {
        out.clear();
        out.push(!row.period);
        for &k in keys {
            key_values(k, row, &ranks, r, out);
        }
        out.push(!row.samples);
    };
    let mut v = Vec::new();
    let mut order: Vec<([u64; HELD], u32)> = (rows.iter().enumerate())
        .map(|(i, row)| {
            values(row, &mut v);
            let mut held = [0; HELD];
            let n = v.len().min(HELD);
            held[..n].copy_from_slice(&v[..n]);
            (held, i as u32)
        })
        .collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    order.sort_unstable_by(|x, y| {
        (x.0.cmp(&y.0))
            .then_with(|| {
                values(&rows[x.1 as usize], &mut a);
                values(&rows[y.1 as usize], &mut b);
                a.cmp(&b)
            })
            .then(x.1.cmp(&y.1))
    });
    let mut order: Vec<u32> = order.into_iter().map(|(_, i)| i).collect();
    // Row `order[k]` goes to place `k`: each cycle of the permutation
    // walked once, its rows swapped along.
    for start in 0..order.len() {
        let mut k = start;
        loop {
            let from = order[k] as usize;
            order[k] = k as u32;
            if from == start || from == k {
                break;
            }
            rows.swap(k, from);
            k = from;
        }
    }
}

/// An address as perf's `%#.*llx` with 16 digits writes it
/// (`pmx_profile::data_src::address`, written in place).
struct Address(u64);

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => f.write_str("0000000000000000"),
            a => write!(f, "{a:#018x}"),
        }
    }
}

/// The length of an address as perf prints it (`%#018llx`: zero as 16
/// zeros).
fn address_len(a: u64) -> usize {
    if a == 0 {
        16
    } else {
        18
    }
}

impl MemReport {
    /// The text of key `sort[i]`'s cell of `row`, as perf prints it
    /// (unpadded).
    pub fn cell(&self, row: &MemRow, i: usize) -> String {
        let mut out = String::new();
        self.write_cell(&mut out, self.sort[i], row);
        out
    }

    /// The length of [`MemReport::cell`] for the keys whose columns are
    /// as wide as their longest cell, without writing it.
    pub(crate) fn cell_len(&self, k: MemKey, row: &MemRow) -> usize {
        let (r, s) = (&self.names, &row.first);
        match k {
            MemKey::Sym => match &r.sym.frame(s.frame).name {
                FrameName::Symbol(n) => 4 + n.len(),
                FrameName::Address(a) => 4 + address_len(*a),
            },
            MemKey::SymbolDaddr if s.dobj != u32::MAX => 4 + r.data_names[s.dobj as usize].len(),
            MemKey::SymbolDaddr => 4 + address_len(s.addr),
            MemKey::Dso => {
                let d = r.sym.frame(s.frame).dso;
                if d == UNKNOWN_DSO {
                    9
                } else {
                    r.sym.dso(d).short.len()
                }
            }
            MemKey::DsoDaddr => s.object.map_or(9, |o| r.objects[o as usize].len()),
            MemKey::Comm => r.comms[s.comm as usize].len(),
            _ => self
                .cell(row, self.sort.iter().position(|&x| x == k).unwrap_or(0))
                .len(),
        }
    }

    /// The text of a binary's cell (`dso`, `dso_daddr`) of `row`, as
    /// [`MemReport::write_cell`] writes it; `None` for another key.
    pub(crate) fn object_name(&self, k: MemKey, row: &MemRow) -> Option<&str> {
        let (r, s) = (&self.names, &row.first);
        match k {
            MemKey::Dso => Some(match r.sym.frame(s.frame).dso {
                UNKNOWN_DSO => "[unknown]",
                d => &r.sym.dso(d).short,
            }),
            MemKey::DsoDaddr => Some(s.object.map_or("[unknown]", |o| &r.objects[o as usize])),
            _ => None,
        }
    }

    /// Whether the symbol of `row`'s instruction is unresolved.
    pub(crate) fn unresolved(&self, row: &MemRow) -> bool {
        let f = self.names.sym.frame(row.first.frame);
        matches!(f.name, FrameName::Address(_))
    }

    /// The length of the name of perf's data symbol of `row`'s address
    /// (`None`: no symbol), which widens perf's data columns.
    pub(crate) fn perf_symbol_len(&self, row: &MemRow) -> Option<usize> {
        let id = row.first.dsym;
        (self.names.perf_symbols.get(id as usize)).map(|(n, _)| n.len())
    }

    /// Write the cell of key `k` for `row` to `out`, as perf prints it.
    pub(crate) fn write_cell(&self, out: &mut String, k: MemKey, row: &MemRow) {
        use pmx_profile::data_src as w;
        let (r, s) = (&self.names, &row.first);
        let d = DataSrc::from_raw(s.data_src);
        let level = if s.kernel { 'k' } else { '.' };
        let mut put = |args: std::fmt::Arguments<'_>| {
            let _ = out.write_fmt(args);
        };
        let type_name = |id: u32| r.type_names.get(id as usize).map_or("", |t| t.as_str());
        match k {
            MemKey::LocalWeight => put(format_args!("{}", row.weight / row.samples.max(1))),
            MemKey::Weight => put(format_args!("{}", row.weight)),
            MemKey::Mem => put(format_args!("{}", w::lvl_text(&d))),
            MemKey::Snoop => put(format_args!("{}", w::snoop_text(&d))),
            MemKey::Tlb => put(format_args!("{}", w::tlb_text(&d))),
            MemKey::Locked => put(format_args!("{}", w::lock_text(&d))),
            MemKey::Blocked => put(format_args!("{}", w::blk_text(&d))),
            MemKey::Sym => match &r.sym.frame(s.frame).name {
                FrameName::Symbol(n) => put(format_args!("[{level}] {n}")),
                FrameName::Address(_) => {
                    put(format_args!("[{level}] {}", r.sym.frame(s.frame).label()))
                }
            },
            MemKey::Dso | MemKey::DsoDaddr => out.push_str(self.object_name(k, row).unwrap_or("")),
            MemKey::SymbolDaddr if s.dobj != u32::MAX => {
                put(format_args!("[{level}] {}", r.data_names[s.dobj as usize]))
            }
            MemKey::SymbolDaddr => match r.perf_symbols.get(s.dsym as usize) {
                Some((n, Some(start))) => put(format_args!(
                    "[{level}] {n}+{:#x}",
                    s.data_rel.wrapping_sub(*start)
                )),
                Some((n, None)) => put(format_args!("[{level}] {n}")),
                None => put(format_args!("[{level}] {}", Address(s.addr))),
            },
            // perf prints the line's address through the data symbol: an
            // object's offset from the line in the file to the object's
            // start in memory (perf's mix of the two, wrapping).
            MemKey::Dcacheline => {
                let level = if s.object.is_none() { 'X' } else { level };
                let line = s.data_rel & !63;
                match r.perf_symbols.get(s.dsym as usize) {
                    Some((n, Some(start))) => {
                        let bias = s.addr.wrapping_sub(s.data_rel);
                        let off = line.wrapping_sub(start.wrapping_add(bias));
                        put(format_args!("[{level}] {n}+{off:#x}"))
                    }
                    Some((n, None)) => put(format_args!("[{level}] {n}")),
                    None => put(format_args!("[{level}] {}", Address(line))),
                }
            }
            MemKey::LocalInsLat => put(format_args!("{}", row.ins_lat / row.samples.max(1))),
            MemKey::InsLat => put(format_args!("{}", row.ins_lat)),
            MemKey::LocalPStageCyc | MemKey::PStageCyc => put(format_args!("0")),
            MemKey::DataPageSize => put(format_args!("{}", w::page_size_name(s.data_page_size))),
            MemKey::PhysDaddr => put(format_args!("[{level}] {}", Address(s.phys_addr))),
            MemKey::Comm => put(format_args!("{}", r.comms[s.comm as usize])),
            MemKey::IpcNull => put(format_args!("-      -")),
            MemKey::Type => put(format_args!("{}", type_name(s.dtype.0))),
            MemKey::TypeOff => put(format_args!("{}", type_name(s.dtype.1))),
        }
    }
}

#[cfg(test)]
mod tests {
    /// perf's order of two fields: `l` first when `(int64_t)(r - l) > 0`.
    fn perf_first(l: u64, r: u64) -> bool {
        (r.wrapping_sub(l) as i64) > 0
    }

    #[test]
    fn signed_values_order_as_perfs_wrapping_subtraction() {
        let kernel = 0xffff_8000_0000_0000u64;
        for (l, r) in [
            (1, 2),
            (kernel, 0x5555_0000),
            (0x7fff_ffff_f000, kernel + 8),
        ] {
            assert_eq!(super::signed(l) < super::signed(r), perf_first(l, r));
            assert_eq!(super::signed(r) < super::signed(l), perf_first(r, l));
        }
    }
}
