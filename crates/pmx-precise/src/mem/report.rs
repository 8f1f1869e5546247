//! `report --mem-mode` (and `perf mem report`): the memory samples of a
//! file grouped by memory keys, each row's cost its samples' weight
//! (a sample of weight 0 costs 1), as perf's memory mode counts it.

use super::keys::{desc, wrapping_asc, MemKey};
use super::replay::{self, MemSample, Resolver};
use pmx_perfdata::mem::DataSrc;
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::{FrameName, Symbolizer, UNKNOWN_DSO};
use pmx_symbols::SymbolOptions;
use rustc_hash::FxHashMap as HashMap;
use std::cmp::Ordering;
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

/// One row: its cells (per key, unpadded) and totals.
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
    /// The text of each key's cell, in the keys' order.
    pub cells: Vec<String>,
    order: Vec<OrderVal>,
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

/// A memory report.
#[derive(Debug, Clone)]
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
}

/// How a key orders two rows of equal cost, per perf's comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OrderVal {
    /// The smaller first (perf's `r - l`), modulo 2⁶⁴.
    Asc(u64),
    /// The larger first (perf's `l - r`).
    Desc(u64),
    /// By name, ascending; no name after any name (perf's symbol sort).
    NameAsc(Option<String>),
    /// By name, descending; no name before any (perf's `strcmp(l, r)`).
    NameDesc(Option<String>),
    /// A data cache line: (no mapping, line), the mapped first, then the
    /// smaller line.
    Line(bool, u64),
}

fn order(a: &OrderVal, b: &OrderVal) -> Ordering {
    use OrderVal::*;
    match (a, b) {
        (Asc(x), Asc(y)) => wrapping_asc(*x, *y),
        (Desc(x), Desc(y)) => desc(*x, *y),
        (NameAsc(x), NameAsc(y)) => match (x, y) {
            (Some(x), Some(y)) => x.cmp(y),
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (None, None) => Ordering::Equal,
        },
        (Line(x, l), Line(y, m)) => x.cmp(y).then(l.cmp(m)),
        (NameDesc(x), NameDesc(y)) => match (x, y) {
            (Some(x), Some(y)) => y.cmp(x),
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
        _ => Ordering::Equal,
    }
}

/// A row being built: its first sample names it.
struct Acc {
    first: MemSample,
    samples: u64,
    period: u64,
    weight: u64,
    ins_lat: u64,
}

/// The grouping value of a sample for `k` (perf's `cmp`: `mem` groups
/// by `mem_lvl` alone, `snoop` by `mem_snoop`, …).
fn group_value(k: MemKey, s: &MemSample, sym: &Symbolizer) -> u64 {
    let d = DataSrc::from_raw(s.data_src);
    match k {
        MemKey::LocalWeight | MemKey::Weight => s.weight,
        MemKey::Mem => d.lvl.into(),
        MemKey::Snoop => d.snoop.into(),
        MemKey::Tlb => d.dtlb.into(),
        MemKey::Locked => d.lock.into(),
        MemKey::Blocked => d.blk.into(),
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
    let here =
        pmx_profile::profile::kernel_is_here(reader.features(), &pmx_profile::MachineId::current());
    let build_ids = (reader.features().build_ids.iter())
        .map(|b| (b.filename.clone(), b.build_id.clone()))
        .collect();
    let mut sym = Symbolizer::new(
        Default::default(),
        build_ids,
        opts.symfs.clone(),
        &opts.symbols,
    );
    sym.allow_running_vdso(here);
    let mut resolver = Resolver::new(sym, here, opts.symbols.dirs.cache.clone());
    if opts.data_objects && opts.sort.contains(&MemKey::SymbolDaddr) {
        resolver.name_data_objects();
    }
    if opts
        .sort
        .iter()
        .any(|k| matches!(k, MemKey::Type | MemKey::TypeOff))
    {
        resolver.name_data_types();
    }
    type Groups = (HashMap<Vec<u64>, usize>, Vec<Acc>);
    let mut per_event: Vec<Groups> = Vec::new();
    let mut key = Vec::new();
    let mut add = |s: &MemSample, r: &mut Resolver| {
        if per_event.len() <= s.event {
            per_event.resize_with(s.event + 1, Default::default);
        }
        key.clear();
        key.extend(opts.sort.iter().map(|&k| group_value(k, s, &r.sym)));
        if opts.sort.contains(&MemKey::Dcacheline) {
            // A line is of its mapping.
            key.push(s.object.map_or(u64::MAX, u64::from));
        }
        let (index, accs) = &mut per_event[s.event];
        let i = *index.entry(key.clone()).or_insert_with(|| {
            accs.push(Acc {
                first: *s,
                samples: 0,
                period: 0,
                weight: 0,
                ins_lat: 0,
            });
            accs.len() - 1
        });
        let a = &mut accs[i];
        a.samples += 1;
        a.period = a.period.saturating_add(s.weight.max(1));
        a.weight = a.weight.saturating_add(s.weight);
        a.ins_lat += u64::from(s.ins_lat);
    };
    replay::run(&mut reader, &mut resolver, &mut add).map_err(read_err)?;
    let mut events = Vec::new();
    for (i, (_, accs)) in per_event.into_iter().enumerate() {
        let name = names.get(i).cloned().unwrap_or_default();
        if accs.is_empty() || opts.event.as_ref().is_some_and(|e| *e != name) {
            continue;
        }
        events.push(event(name, accs, &opts.sort, &resolver));
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
    })
}

/// One event's rows named and in perf's order: the cost, then each key's
/// order, then the samples.
fn event(name: String, accs: Vec<Acc>, sort: &[MemKey], r: &Resolver) -> MemEvent {
    let mut rows: Vec<MemRow> = accs
        .into_iter()
        .map(|a| {
            let cells = sort.iter().map(|&k| cell(k, &a, r)).collect();
            let order = sort.iter().map(|&k| order_value(k, &a, r)).collect();
            MemRow {
                samples: a.samples,
                period: a.period,
                weight: a.weight,
                ins_lat: a.ins_lat,
                cells,
                order,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.period.cmp(&a.period))
            .then_with(|| {
                (a.order.iter().zip(&b.order))
                    .map(|(x, y)| order(x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
            .then(b.samples.cmp(&a.samples))
    });
    MemEvent {
        name,
        samples: rows.iter().map(|r| r.samples).sum(),
        total: rows.iter().map(|r| r.period).sum(),
        rows,
    }
}

/// The symbol's name of the row's instruction (`None`: an address).
fn symbol_name(a: &Acc, r: &Resolver) -> Option<String> {
    match &r.sym.frame(a.first.frame).name {
        FrameName::Symbol(s) => Some(s.clone()),
        FrameName::Address(_) => None,
    }
}

/// The binary of the row's instruction (`None`: no mapping).
fn dso_name(a: &Acc, r: &Resolver) -> Option<String> {
    let d = r.sym.frame(a.first.frame).dso;
    (d != UNKNOWN_DSO).then(|| r.sym.dso(d).short.clone())
}

fn order_value(k: MemKey, a: &Acc, r: &Resolver) -> OrderVal {
    let s = &a.first;
    match k {
        MemKey::LocalWeight => OrderVal::Desc(a.weight / a.samples.max(1)),
        MemKey::Weight => OrderVal::Desc(a.weight),
        MemKey::LocalInsLat => OrderVal::Desc(a.ins_lat / a.samples.max(1)),
        MemKey::InsLat => OrderVal::Desc(a.ins_lat),
        MemKey::LocalPStageCyc | MemKey::PStageCyc | MemKey::IpcNull => OrderVal::Desc(0),
        MemKey::Sym => OrderVal::NameAsc(symbol_name(a, r)),
        // perf's `sort__dso_cmp` swaps its sides: names ascending, no
        // binary last.
        MemKey::Dso => OrderVal::NameAsc(dso_name(a, r)),
        // By the line's address in its mapping, the smaller first, no
        // mapping last.
        MemKey::Dcacheline => OrderVal::Line(s.object.is_none(), s.data_rel & !63),
        MemKey::DsoDaddr => OrderVal::NameDesc(s.object.map(|o| r.objects[o as usize].clone())),
        MemKey::Comm => OrderVal::NameAsc(Some(r.comms[s.comm as usize].clone())),
        MemKey::SymbolDaddr if s.dobj != u32::MAX => {
            OrderVal::NameAsc(Some(r.data_names[s.dobj as usize].clone()))
        }
        MemKey::Type => OrderVal::NameAsc(r.type_names.get(s.dtype.0 as usize).cloned()),
        MemKey::TypeOff => OrderVal::NameAsc(r.type_names.get(s.dtype.1 as usize).cloned()),
        _ => OrderVal::Asc(group_value(k, s, &r.sym)),
    }
}

/// The cell of key `k` for a row, as perf prints it (unpadded).
fn cell(k: MemKey, a: &Acc, r: &Resolver) -> String {
    use pmx_profile::data_src as w;
    let s = &a.first;
    let d = DataSrc::from_raw(s.data_src);
    let level = if s.kernel { 'k' } else { '.' };
    match k {
        MemKey::LocalWeight => (a.weight / a.samples.max(1)).to_string(),
        MemKey::Weight => a.weight.to_string(),
        MemKey::Mem => w::lvl_text(&d),
        MemKey::Snoop => w::snoop_text(&d),
        MemKey::Tlb => w::tlb_text(&d),
        MemKey::Locked => w::lock_text(&d).to_string(),
        MemKey::Blocked => w::blk_text(&d),
        MemKey::Sym => format!("[{level}] {}", r.sym.frame(s.frame).label()),
        MemKey::Dso => dso_name(a, r).unwrap_or_else(|| "[unknown]".into()),
        MemKey::SymbolDaddr if s.dobj != u32::MAX => {
            format!("[{level}] {}", r.data_names[s.dobj as usize])
        }
        MemKey::SymbolDaddr => format!("[{level}] {}", w::address(s.addr)),
        MemKey::DsoDaddr => match s.object {
            Some(o) => r.objects[o as usize].clone(),
            None => "[unknown]".into(),
        },
        MemKey::Dcacheline => {
            let level = if s.object.is_none() { 'X' } else { level };
            format!("[{level}] {}", w::address(s.data_rel & !63))
        }
        MemKey::LocalInsLat => (a.ins_lat / a.samples.max(1)).to_string(),
        MemKey::InsLat => a.ins_lat.to_string(),
        MemKey::LocalPStageCyc | MemKey::PStageCyc => "0".into(),
        MemKey::DataPageSize => w::page_size_name(s.data_page_size),
        MemKey::PhysDaddr => format!("[{level}] {}", w::address(s.phys_addr)),
        MemKey::Comm => r.comms[s.comm as usize].clone(),
        MemKey::IpcNull => "-      -".into(),
        MemKey::Type => r
            .type_names
            .get(s.dtype.0 as usize)
            .cloned()
            .unwrap_or_default(),
        MemKey::TypeOff => r
            .type_names
            .get(s.dtype.1 as usize)
            .cloned()
            .unwrap_or_default(),
    }
}
