//! `pmx script`: every sample of a perf.data file as one line, the way
//! `perf script` prints it (its default fields and columns, `-F` to choose
//! them, the call chain under the line when the file has one), or as JSON
//! lines. Streaming: records are replayed in time order per round (as
//! perf does, so a sample sees the maps and command names of its time)
//! and each round's samples are written as they are applied; nothing
//! grows with the number of samples.
//!
//! A text line's call chain is formatted once per distinct chain
//! (`stacks`: keyed by event, pid, CPU mode, ip and the raw chain, valid
//! until a map or fork changes what the addresses mean); a sample that
//! repeats a chain is one hash of its words and one copy of its lines.
//!
//! On several threads ([`ScriptOptions::jobs`]): the replay's thread
//! still reads, orders and applies every record and resolves each
//! sample's command and sites (the symbolizer's caches and lazily read
//! binaries stay on one thread). Text lines with their call chain under
//! them go to a pipeline (`pipe`): the replay's thread finds the chain's
//! lines in the cache above (formatting them when new), batches the
//! samples with their command and lines, and threads started once
//! format the batches while it reads on; it writes the finished buffers
//! in the batches' order. Other lines that depend on the sample alone
//! (JSON, lines without chains) gather resolved in a batch (16,384 at
//! most), which the jobs format in contiguous parts, each into a buffer
//! of its own, written in the parts' order. Either way the output is
//! the one thread's, byte for byte: a batch is written before any other
//! line (a side-band record, a sample whose line needs tracepoint
//! formats, branch fields or `data_src`'s running width, which are
//! formatted in order as before); maps, commands and forks do not end
//! it, as its samples are already resolved (a map or fork sends the
//! pipeline's batch, whose lines are in the cache it empties). One
//! thread is the default, as for reports (`--jobs 0`: the machine's
//! cores).
//!
//! `-F brstack`/`brstacksym` print each sample's branch stack as perf
//! script does (the ends of `brstacksym` looked up in the sample's mode
//! first, then the other, as perf's fallback).
//!
//! Tracepoint samples print their fields (`trace`) from the recording's
//! own format files, as perf does (`trace`); `--show-switch-events` and
//! `--show-namespace-events` print those side-band records in time order
//! among the samples (`side_band`).
//!
//! Symbols come from the [`Symbolizer`] (ELF symbol tables loaded per
//! binary on first use, JIT maps, the vDSO) and kernel symbols from the
//! cache of [`pmx_symbols::kcache`], loaded at the first kernel address of a
//! file recorded on this machine.

mod branches;
mod fields;
mod insn;
mod mem;
mod pipe;
mod side_band;
mod stacks;
mod trace;
mod write;

pub use fields::{Field, Fields, ALL as FIELD_NAMES};

use crate::profile::MachineId;
use pmx_perfdata::format::{callchain, misc, sample_type};
use pmx_perfdata::read::Record;
use pmx_perfdata::Reader;
use pmx_symbols::symbolize::Symbolizer;
use pmx_symbols::SymbolOptions;
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use write::{Site, Writer};

/// What to print, from which file.
#[derive(Debug, Clone, Default)]
pub struct ScriptOptions {
    /// The perf.data file; `-` reads a pipe-mode stream from standard input.
    pub input: PathBuf,
    /// `-F` specs in order (`comm,tid`, `sw:+period`, `-cpu` …).
    pub fields: Vec<String>,
    /// JSON lines instead of perf's text.
    pub json: bool,
    /// Print call chains of events that have them (perf's default).
    pub callchains: bool,
    /// Look binaries up under this directory (perf's `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Demangling, directories and binary cache of the symbolizer.
    pub symbols: SymbolOptions,
    /// Print context-switch records (perf's `--show-switch-events`).
    pub show_switch_events: bool,
    /// Print namespace records (perf's `--show-namespace-events`).
    pub show_namespace_events: bool,
    /// Threads formatting the lines (1, the default: the replay's thread
    /// alone, as more threads cost CPU time, see the module's
    /// documentation; 0: the machine's cores, as `pmx report --jobs 0`);
    /// the output is the same with any number.
    pub jobs: usize,
    /// Stitch LBR call stacks across a thread's samples (perf's
    /// `--stitch-lbr`).
    pub stitch_lbr: bool,
}

impl ScriptOptions {
    /// Options for `input` with these `-F` specs, JSON or text, call
    /// chains shown or not (no `--symfs`).
    pub fn new(input: PathBuf, fields: Vec<String>, json: bool, callchains: bool) -> Self {
        ScriptOptions {
            input,
            fields,
            json,
            callchains,
            symfs: None,
            symbols: SymbolOptions::default(),
            show_switch_events: false,
            show_namespace_events: false,
            jobs: 1,
            stitch_lbr: false,
        }
    }
}

/// Why `pmx script` stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file does not exist.
    #[error("{0}: no such file (record one with `pmx record` or `perf record`, or give -i FILE)")]
    NotFound(String),
    /// The file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file as shown.
        file: String,
        /// Why.
        source: pmx_perfdata::Error,
    },
    /// The recording's TRACING_DATA cannot be read.
    #[error("{0}: its TRACING_DATA (the tracepoints' formats) is damaged ({1}); `-F -trace` prints the samples without their fields")]
    Tracing(String, String),
    /// A `-F` spec that cannot be honoured.
    #[error("-F: {0}")]
    Fields(String),
    /// Writing the output failed (a closed pipe is `BrokenPipe`).
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

/// What was printed.
#[derive(Debug, Clone, Default)]
pub struct ScriptSummary {
    /// Samples written.
    pub samples: u64,
    /// Warnings (binaries that differ from the recording…).
    pub warnings: Vec<String>,
}

/// A user mapping: pid, start, length, file offset, path, build-id, inode.
type MapRec = (
    u32,
    u64,
    u64,
    u64,
    Vec<u8>,
    Option<Vec<u8>>,
    Option<pmx_perfdata::MappedInode>,
);

/// A record waiting for its round.
enum Item {
    Sample(write::SampleRec),
    Comm {
        tid: u32,
        comm: u32,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
    Mmap(Box<MapRec>),
    /// A side-band record to print: its line's sample fields, the thread
    /// whose command it shows, and its text.
    Side(Box<(write::SampleRec, u32, String)>),
}

/// The replay: symbolizer, command names, the round's queue, the writer.
struct Run<'w> {
    sym: Symbolizer,
    comm_names: Vec<String>,
    comm_ids: HashMap<Vec<u8>, u32>,
    thread_comm: HashMap<u32, u32>,
    items: Vec<(u64, Item)>,
    /// The items' order for [`Run::flush`]: (time, position).
    order: Vec<(u64, u32)>,
    arena: Vec<u64>,
    sites: Vec<Site>,
    /// User sites by (pid, address), valid until the next map or fork (at
    /// most 65,536 kept).
    site_cache: HashMap<(u32, u64), Site>,
    /// Call chains' lines already formatted, valid as `site_cache`.
    stacks: stacks::StackTexts,
    /// A chain's lines being formatted (reused).
    chain_text: Vec<u8>,
    here: bool,
    kernel_loaded: bool,
    /// pmx's cache directory (the kernel symbols' index).
    cache_dir: Option<PathBuf>,
    writer: Writer<'w>,
    /// Per event: its chains are LBR call stacks (`crate::lbr`).
    lbr: Vec<bool>,
    /// `--stitch-lbr`'s state, when asked.
    stitch: Option<crate::lbr::Stitch>,
    /// The branch fields read from the binaries (`brstackoff`, `brstackinsn`).
    code: branches::Code,
    /// Threads formatting lines, and the lines and output of each but
    /// the first (the writer's own).
    jobs: usize,
    workers: Vec<(write::Lines, Vec<u8>)>,
    /// Samples of a round resolved, waiting to be formatted.
    batch: Batch,
    /// With several jobs: the pipeline of the lines with their chain
    /// (`pipe`), the events' formats and command names its batches
    /// share (made again when they change).
    pipe: Option<pipe::Pipe>,
    lines_shared: Option<Arc<write::Lines>>,
    comms_shared: Arc<Vec<String>>,
}

/// Samples resolved in order (command, leaf, call chain's sites), to be
/// formatted by the jobs: each sample, its command, its leaf and its
/// chain in `sites`. Written before anything else is (a side-band line,
/// a sample formatted alone) and at the end.
#[derive(Default)]
struct Batch {
    samples: Vec<BatchSample>,
    sites: Vec<Site>,
}

/// One sample of a [`Batch`].
type BatchSample = (write::SampleRec, u32, Site, std::ops::Range<usize>);

/// Samples a batch holds before its lines are formatted.
const BATCH: usize = 1 << 14;
/// Below this many samples per job a batch is formatted on one thread.
const PER_JOB: usize = 1 << 11;

/// Print every sample of `opts.input` to `out`.
pub fn script(opts: &ScriptOptions, out: &mut dyn Write) -> Result<ScriptSummary, ScriptError> {
    script_with_progress(opts, out, &mut |_, _| {})
}

/// [`script`], calling `progress(bytes read, bytes in all)` now and then
/// (the total is `None` for a pipe).
pub fn script_with_progress(
    opts: &ScriptOptions,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<ScriptSummary, ScriptError> {
    let (mut reader, file, path) = open_input(opts)?;
    let read_err = |source| ScriptError::Read {
        file: file.clone(),
        source,
    };
    let this = MachineId::current();
    let here = crate::profile::kernel_is_here(reader.features(), &this);
    let sym = Symbolizer::for_reader(&reader, here, opts.symfs.clone(), &opts.symbols);
    let (fields, chains) = event_fields(opts, &reader)?;
    let mut writer = Writer::new(out, reader.events(), fields, chains, opts.json);
    let mut wants_trace = (0..reader.events().len()).any(|i| writer.wants_raw(i));
    if wants_trace {
        writer.traces = trace_printer(&path, &reader, &file)?;
    }
    let mut run = Run {
        sym,
        comm_names: Vec::new(),
        comm_ids: HashMap::default(),
        thread_comm: HashMap::default(),
        items: Vec::new(),
        order: Vec::new(),
        arena: Vec::new(),
        sites: Vec::new(),
        site_cache: HashMap::default(),
        stacks: stacks::StackTexts::default(),
        chain_text: Vec::new(),
        here,
        kernel_loaded: false,
        cache_dir: opts.symbols.dirs.cache.clone(),
        writer,
        lbr: crate::lbr::events(reader.events()),
        stitch: crate::lbr::Stitch::new(&reader, opts.stitch_lbr),
        code: branches::Code::new(opts),
        jobs: match opts.jobs {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        },
        workers: Vec::new(),
        batch: Batch::default(),
        pipe: None,
        lines_shared: None,
        comms_shared: Arc::default(),
    };
    run.pipe = (run.jobs > 1).then(|| pipe::Pipe::new(run.jobs - 1));
    let (mut max_time, mut prev_round_max) = (0u64, 0u64);
    let mut features_seen = reader.features().present.len();
    let mut n = 0u64;
    let mut side_events = side_band::Events::default();
    loop {
        n += 1;
        if n.is_multiple_of(65536) {
            progress(reader.bytes_read(), reader.total_bytes());
        }
        if reader.is_pipe() && reader.features().present.len() != features_seen {
            features_seen = reader.features().present.len();
            run.here = crate::profile::kernel_is_here(reader.features(), &this);
            run.sym.allow_running_vdso(run.here);
            run.forget_sites()?;
            for b in &reader.features().build_ids {
                run.sym
                    .set_path_build_id(b.filename.as_bytes(), &b.build_id);
            }
        }
        if opts.show_switch_events || opts.show_namespace_events {
            side_events.update(&reader);
        }
        if reader.events().len() != run.writer.event_count() {
            // A pipe's attrs come as records, before its samples.
            let (fields, chains) = event_fields(opts, &reader)?;
            // The lines before it with the events they were resolved with.
            run.settle()?;
            run.workers.clear();
            run.lines_shared = None;
            run.writer.set_events(reader.events(), fields, chains);
            run.stacks.clear();
            wants_trace = (0..reader.events().len()).any(|i| run.writer.wants_raw(i));
        }
        if wants_trace && run.writer.traces.is_none() && reader.features().tracing_bytes.is_some() {
            run.writer.traces = trace_printer(&path, &reader, &file)?;
        }
        let Some(rec) = reader.next_record().map_err(read_err)? else {
            break;
        };
        if let Record::FinishedRound = rec {
            run.flush(prev_round_max)?;
            prev_round_max = max_time;
            continue;
        }
        if let Record::Other { kind, misc, data } = rec {
            if let Some(side) = side_band::item(&side_events, opts, kind, misc, data) {
                run.items.push((side.0.time, Item::Side(Box::new(side))));
                continue;
            }
        }
        if let Some((time, item)) = run.item(rec) {
            max_time = max_time.max(time);
            run.items.push((time, item));
            if run.items.len() >= 1 << 20 {
                run.flush(u64::MAX)?;
            }
        }
    }
    run.flush(u64::MAX)?;
    run.settle()?;
    run.writer.finish()?;
    let mut warnings = run.sym.warnings().to_vec();
    if let Some(t) = reader.truncation() {
        warnings.insert(0, crate::truncation_warning(t, reader.bytes_read()));
    }
    Ok(ScriptSummary {
        samples: run.writer.samples,
        warnings,
    })
}

/// Each event's fields and whether its call chains are printed.
fn event_fields(
    opts: &ScriptOptions,
    reader: &Reader,
) -> Result<(Vec<fields::Fields>, Vec<bool>), ScriptError> {
    let fields = fields::resolve(&opts.fields, reader.events()).map_err(ScriptError::Fields)?;
    let chains = (reader.events().iter())
        .map(|e| opts.callchains && e.attr.sample_type & sample_type::CALLCHAIN != 0)
        .collect();
    Ok((fields, chains))
}

/// The input's reader, its name as shown and the path it was read from.
fn open_input(opts: &ScriptOptions) -> Result<(Reader, String, PathBuf), ScriptError> {
    let stdin = opts.input.as_os_str() == "-";
    let (file, path) = if stdin {
        ("standard input".to_string(), "/dev/stdin".into())
    } else {
        (opts.input.display().to_string(), opts.input.clone())
    };
    match Reader::open(&path) {
        Ok(r) => Ok((r, file, path)),
        Err(pmx_perfdata::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ScriptError::NotFound(file))
        }
        Err(source) => Err(ScriptError::Read { file, source }),
    }
}

/// The print formats of the recording's tracepoints, when it has
/// tracepoint events and its tracing data.
fn trace_printer(
    path: &std::path::Path,
    reader: &Reader,
    file: &str,
) -> Result<Option<trace::TracePrinter>, ScriptError> {
    match pmx_perfdata::tracing::read_file(path, reader.features()) {
        Ok(Some(data)) => Ok(Some(trace::TracePrinter::new(&data))),
        Ok(None) => Ok(None),
        Err(e) => Err(ScriptError::Tracing(file.to_string(), e.to_string())),
    }
}

impl Run<'_> {
    fn intern_comm(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comm_names.len() as u32;
        self.comm_names
            .push(String::from_utf8_lossy(name).into_owned());
        self.comm_ids.insert(name.to_vec(), id);
        id
    }

    /// The queued form of a record and its time (`None`: not used).
    fn item(&mut self, rec: Record<'_>) -> Option<(u64, Item)> {
        Some(match rec {
            Record::Sample(s) => {
                let start = self.arena.len();
                if self.writer.chain(s.event) && self.lbr.get(s.event).is_some_and(|&l| l) {
                    let lbr = crate::lbr::extend_chain(&mut self.arena, s.callchain(), &s.branches);
                    if let (true, Some(t)) = (lbr, &mut self.stitch) {
                        t.extend(&mut self.arena, s.tid, &s.branches);
                    }
                } else if self.writer.chain(s.event) {
                    self.arena.extend(s.callchain());
                }
                let (n, counters) = if self.writer.branches(s.event) {
                    let b = s.branches;
                    (self.arena).extend(b.iter().flat_map(|e| [e.from, e.to, e.flags.0]));
                    let c = self.writer.counters(s.event) && b.counters().next().is_some();
                    if c {
                        self.arena
                            .extend(b.counters().chain(std::iter::repeat(0)).take(b.len()));
                    }
                    (b.len() as u32, c)
                } else {
                    (0, false)
                };
                let mut r = write::SampleRec::new(&s, start..self.arena.len(), n);
                r.counters = counters;
                if self.writer.wants_raw(s.event) {
                    r.raw = Some(s.raw.into());
                }
                (s.time, Item::Sample(r))
            }
            Record::Comm(c) => {
                let comm = self.intern_comm(c.comm);
                (c.id.time.unwrap_or(0), Item::Comm { tid: c.tid, comm })
            }
            Record::Fork(t) => (
                t.time,
                Item::Fork {
                    pid: t.pid,
                    ppid: t.ppid,
                    tid: t.tid,
                    ptid: t.ptid,
                },
            ),
            Record::Mmap(m) => {
                if m.pid == u32::MAX || m.misc & misc::CPUMODE_MASK == misc::KERNEL {
                    self.code.kernel_map(m.start, m.len);
                    return None;
                }
                let b = m.build_id.map(<[u8]>::to_vec);
                let map = (
                    m.pid,
                    m.start,
                    m.len,
                    m.pgoff,
                    m.filename.to_vec(),
                    b,
                    m.inode,
                );
                (m.id.time.unwrap_or(0), Item::Mmap(Box::new(map)))
            }
            _ => return None,
        })
    }

    /// Apply and print, in time order, the queued records up to `limit`
    /// (of equal times, the first queued first). The order is found by
    /// sorting (time, position) pairs, which moves 16 bytes per record
    /// where sorting the records would move 80.
    fn flush(&mut self, limit: u64) -> std::io::Result<()> {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend((self.items.iter().enumerate()).map(|(i, (t, _))| (*t, i as u32)));
        // Stable, by time alone: ties keep their positions, and the runs
        // (each CPU's records are in order) are found.
        order.sort_by_key(|&(t, _)| t);
        let n = order.partition_point(|(t, _)| *t <= limit);
        let mut items = std::mem::take(&mut self.items);
        let mut r = Ok(());
        for &(_, i) in &order[..n] {
            let item = &mut items[i as usize].1;
            r = match item {
                // Formatted by the pipeline's jobs, in this order (moved:
                // the records applied are dropped below).
                Item::Sample(s) if self.pipe.is_some() && self.writer.chain_lines_kept(s.event) => {
                    self.kept_into(s)
                }
                // Formatted by the jobs of a batch, in this order.
                Item::Sample(s) if self.jobs > 1 && self.writer.parallel(s.event) => {
                    let s = std::mem::replace(s, write::SampleRec::taken());
                    self.settle_pipe().and_then(|()| self.resolve_into(s))
                }
                // A line: the batches' lines first.
                item @ (Item::Sample(_) | Item::Side(_)) => {
                    self.settle().and_then(|()| self.apply(item))
                }
                // A map, command or fork: the batch's samples are resolved.
                item => self.apply(item),
            };
            if r.is_err() {
                break;
            }
        }
        // Keep the records after `limit`, and only their call chains.
        let mut arena = Vec::new();
        let mut kept = items;
        if n == kept.len() {
            kept.clear();
        } else {
            kept.retain(|(t, _)| *t > limit);
        }
        for (_, item) in &mut kept {
            if let Item::Sample(s) = item {
                let start = arena.len();
                arena.extend_from_slice(&self.arena[s.chain.clone()]);
                s.chain = start..arena.len();
            }
        }
        if self.arena.is_empty() {
            // No call chains queued: keep the arena's allocation.
            arena = std::mem::take(&mut self.arena);
        }
        self.arena = arena;
        self.items = kept;
        self.order = order;
        r
    }

    fn apply(&mut self, item: &Item) -> std::io::Result<()> {
        match item {
            Item::Sample(s) => return self.sample(s),
            Item::Side(side) => {
                let (s, tid, text) = &**side;
                let comm = self.comm_of(*tid);
                return self
                    .writer
                    .side_band(s, &self.comm_names[comm as usize], text);
            }
            &Item::Comm { tid, comm } => {
                self.thread_comm.insert(tid, comm);
            }
            &Item::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                let parent = self
                    .thread_comm
                    .get(&ptid)
                    .or_else(|| self.thread_comm.get(&ppid));
                if let Some(&c) = parent {
                    self.thread_comm.insert(tid, c);
                }
                self.sym.fork(ppid, pid);
                self.forget_sites()?;
            }
            Item::Mmap(m) => {
                let (pid, start, len, pgoff, path, build_id, inode) = &**m;
                if let Some(b) = build_id {
                    self.sym.set_build_id(path, b);
                }
                (self.sym).add_mapping(*pid, *start, *len, *pgoff, path, *inode);
                self.forget_sites()?;
            }
        }
        Ok(())
    }

    /// The kernel symbols, loaded at the first kernel address (when the
    /// file was recorded here).
    fn kernel_site(&mut self, addr: u64) -> Site {
        if !self.kernel_loaded {
            self.kernel_loaded = true;
            if self.here {
                self.sym
                    .resolve_deferred(pmx_symbols::kcache::load(self.cache_dir.as_deref()).0);
            }
        }
        let frame = self.sym.kernel_frame(addr);
        Site {
            shown: addr,
            addr,
            frame,
            space: addr,
        }
    }

    /// A user address resolved: the [`Symbolizer`]'s answer depends only
    /// on the maps (and build-ids, vDSO, JIT maps, fixed by then), so it
    /// is kept per (pid, address) until a map or fork changes them.
    fn user_site(&mut self, pid: u32, addr: u64) -> Site {
        if let Some(&site) = self.site_cache.get(&(pid, addr)) {
            return site;
        }
        let (frame, shown, space) = self.sym.user_site(pid, addr);
        self.code.loaded(&self.sym, frame);
        let site = Site {
            shown,
            addr,
            frame,
            space,
        };
        if self.site_cache.len() >= 1 << 16 {
            self.site_cache.clear(); // bounded: nothing grows with the file
        }
        self.site_cache.insert((pid, addr), site);
        site
    }

    /// A branch end as perf's brstacksym finds it: in the sample's mode
    /// first, then the other (`thread__find_symbol_fb`).
    fn branch_site(&mut self, pid: u32, kernel: bool, a: u64) -> Site {
        let user = self.sym.mapping(pid, a).is_some();
        match (kernel, user, a >= 0xffff_8000_0000_0000) {
            (false, true, _) | (true, true, false) => self.user_site(pid, a),
            (_, _, true) => self.kernel_site(a),
            _ => self.user_site(pid, a),
        }
    }

    /// The command of thread `tid` as perf names it: a thread whose
    /// command is not known is `:TID` (also when its process's is).
    fn comm_of(&mut self, tid: u32) -> u32 {
        if tid == u32::MAX {
            // A task gone before the sample was read (-1), as perf names it.
            return self.intern_comm(b":-1");
        }
        match self.thread_comm.get(&tid) {
            Some(&c) => c,
            None if tid == 0 => self.intern_comm(b"swapper"),
            None => self.intern_comm(format!(":{tid}").as_bytes()),
        }
    }

    /// What a sample's line shows: its command, its leaf's site, its
    /// call chain's sites (appended to `sites`), whether the leaf is the
    /// kernel's.
    fn resolve(&mut self, s: &write::SampleRec, sites: &mut Vec<Site>) -> (u32, Site, bool) {
        let comm = self.comm_of(s.tid);
        let mode = s.misc & misc::CPUMODE_MASK;
        let kernel = mode == misc::KERNEL || (mode != misc::USER && s.ip >= 0xffff_8000_0000_0000);
        if self.writer.chain(s.event) {
            let (mut ctx_kernel, start) = (kernel, sites.len());
            for i in s.chain_only() {
                let a = self.arena[i];
                if a >= callchain::CONTEXT_MAX {
                    if !callchain::is_context(a) {
                        // A corrupt chain: perf prints none of it.
                        sites.truncate(start);
                        break;
                    }
                    ctx_kernel = a == callchain::CONTEXT_KERNEL;
                    continue;
                }
                let site = if ctx_kernel {
                    self.kernel_site(a)
                } else {
                    self.user_site(s.pid, a)
                };
                sites.push(site);
            }
        }
        let mut leaf = if kernel {
            self.kernel_site(s.ip)
        } else {
            self.user_site(s.pid, s.ip)
        };
        leaf.shown = s.ip;
        (comm, leaf, kernel)
    }

    /// Resolve sample `s` into the batch, written when it is full.
    fn resolve_into(&mut self, s: write::SampleRec) -> std::io::Result<()> {
        let mut batch = std::mem::take(&mut self.batch);
        let start = batch.sites.len();
        let (comm, leaf, _) = self.resolve(&s, &mut batch.sites);
        (batch.samples).push((s, comm, leaf, start..batch.sites.len()));
        self.batch = batch;
        if self.batch.samples.len() < BATCH {
            return Ok(());
        }
        self.emit()
    }

    /// Format the batch's samples on the jobs (each a contiguous part,
    /// its lines into a buffer of its own) and write them in order.
    fn emit(&mut self) -> std::io::Result<()> {
        if self.batch.samples.is_empty() {
            return Ok(());
        }
        let batch = &mut self.batch;
        let jobs = self.jobs.min(batch.samples.len() / PER_JOB).max(1);
        while self.workers.len() + 1 < jobs {
            self.workers.push((self.writer.worker(), Vec::new()));
        }
        let per = batch.samples.len().div_ceil(jobs);
        let (sym, names, sites) = (&self.sym, &self.comm_names, &batch.sites[..]);
        let format = |lines: &mut write::Lines, out: &mut Vec<u8>, part: &[BatchSample]| {
            let mut n = 0u64;
            for (s, comm, leaf, chain) in part {
                let parts = (&sites[chain.clone()], &[][..], &[][..], &[][..]);
                n += u64::from(lines.sample(out, s, &names[*comm as usize], *leaf, parts, sym));
            }
            n
        };
        let mut chunks = batch.samples.chunks(per);
        let first = chunks.next().unwrap_or(&[]);
        let writer = &mut self.writer;
        let r = std::thread::scope(|sc| {
            let mut r = Ok(());
            let workers = self.workers.iter_mut();
            let handles: Vec<_> = (chunks.zip(workers))
                .map(|(part, (lines, out))| {
                    out.clear();
                    sc.spawn(move || (format(lines, out, part), out))
                })
                .collect();
            for (s, comm, leaf, chain) in first {
                let parts = (&sites[chain.clone()], &[][..], &[][..], &[][..]);
                r = r.and_then(|()| writer.sample(s, &names[*comm as usize], *leaf, parts, sym));
            }
            for h in handles {
                // A job does not panic on resolved samples; if one did,
                // the output stops with an error, not with lines missing.
                let joined = h
                    .join()
                    .map_err(|_| std::io::Error::other("a script job failed"));
                r = r.and_then(|()| {
                    let (n, out) = joined?;
                    writer.samples += n;
                    writer.write_lines(out)
                });
            }
            r
        });
        batch.samples.clear();
        batch.sites.clear();
        r
    }

    fn sample(&mut self, s: &write::SampleRec) -> std::io::Result<()> {
        if self.writer.chain_lines_kept(s.event) {
            return self.sample_kept(s);
        }
        let mut sites = std::mem::take(&mut self.sites);
        sites.clear();
        let (comm, leaf, kernel) = self.resolve(s, &mut sites);
        let br = s.branch_range();
        let mut ends = Vec::new();
        if self.writer.branch_sites(s.event) {
            for i in br.clone().step_by(3) {
                let (from, to) = (self.arena[i], self.arena[i + 1]);
                for a in [from, to] {
                    let site = self.branch_site(s.pid, kernel, a);
                    ends.push((site.frame, site.space));
                }
            }
        }
        let extra = self.branch_extra(s, kernel, br.clone());
        let r = self.writer.sample(
            s,
            &self.comm_names[comm as usize],
            leaf,
            (&sites, &ends, &self.arena[br], &extra),
            &self.sym,
        );
        self.sites = sites;
        r
    }
}

impl Run<'_> {
    /// The maps changed: the sites and chain lines resolved with them go
    /// (the pipeline's batch sent first: its lines are among them).
    fn forget_sites(&mut self) -> std::io::Result<()> {
        self.send_kept()?;
        self.site_cache.clear();
        self.stacks.clear();
        Ok(())
    }

    /// Every sample before this point written: the batch of resolved
    /// samples, then the pipeline's (only one of them has samples).
    fn settle(&mut self) -> std::io::Result<()> {
        self.emit()?;
        self.settle_pipe()
    }

    /// The pipeline's samples written.
    fn settle_pipe(&mut self) -> std::io::Result<()> {
        self.send_kept()?;
        match &mut self.pipe {
            Some(p) => p.drain(&mut self.writer),
            None => Ok(()),
        }
    }

    /// Send the pipeline's batch to a job, with the lines' segments,
    /// command names and formats it needs.
    fn send_kept(&mut self) -> std::io::Result<()> {
        let Some(p) = &mut self.pipe else {
            return Ok(());
        };
        if p.is_empty() {
            return Ok(());
        }
        if self.comms_shared.len() != self.comm_names.len() {
            self.comms_shared = Arc::new(self.comm_names.clone());
        }
        let writer = &self.writer;
        let lines = self
            .lines_shared
            .get_or_insert_with(|| Arc::new(writer.worker()));
        let shared = pipe::Shared {
            lines: lines.clone(),
            comms: self.comms_shared.clone(),
            texts: self.stacks.freeze(),
        };
        p.send(shared, &mut self.writer)
    }

    /// A text sample with its call chain's lines, into the pipeline's
    /// batch: its command and its chain's lines found (or resolved and
    /// formatted) now, as [`Run::sample_kept`] does; its line formatted
    /// by a job.
    fn kept_into(&mut self, s: &write::SampleRec) -> std::io::Result<()> {
        self.emit()?;
        let mode = s.misc & misc::CPUMODE_MASK;
        (self.stacks).key(s.event, s.pid, mode, s.ip, &self.arena[s.chain_only()]);
        let comm = self.comm_of(s.tid);
        let text = match self.stacks.get_ref() {
            Some(t) => t,
            None => {
                self.format_chain(s);
                if self.stacks.full(self.chain_text.len()) {
                    // Emptied below: the batch's lines go with it first.
                    self.send_kept()?;
                }
                match self.stacks.insert(&self.chain_text) {
                    Some(t) => t,
                    None => {
                        // Too long to keep: written here, in order.
                        self.settle_pipe()?;
                        let name = &self.comm_names[comm as usize];
                        let r =
                            (self.writer).sample_with_lines(s, name, &self.chain_text, &self.sym);
                        return r;
                    }
                }
            }
        };
        let full = self.pipe.as_mut().is_some_and(|p| p.push(s, comm, text));
        if full {
            self.send_kept()?;
        }
        Ok(())
    }

    /// A text sample with its call chain's lines ([`stacks`]): copied
    /// when its chain was seen before in this process since the maps
    /// last changed, else resolved, formatted and kept.
    fn sample_kept(&mut self, s: &write::SampleRec) -> std::io::Result<()> {
        let mode = s.misc & misc::CPUMODE_MASK;
        (self.stacks).key(s.event, s.pid, mode, s.ip, &self.arena[s.chain_only()]);
        let comm = self.comm_of(s.tid) as usize;
        if let Some(lines) = self.stacks.get() {
            let name = &self.comm_names[comm];
            return (self.writer).sample_with_lines(s, name, lines, &self.sym);
        }
        self.format_chain(s);
        self.stacks.insert(&self.chain_text);
        let name = &self.comm_names[comm];
        (self.writer).sample_with_lines(s, name, &self.chain_text, &self.sym)
    }

    /// `s`'s call chain resolved (into `self.sites`) and its lines
    /// formatted into `self.chain_text`, both buffers reused.
    fn format_chain(&mut self, s: &write::SampleRec) {
        let (mut sites, mut text) = (
            std::mem::take(&mut self.sites),
            std::mem::take(&mut self.chain_text),
        );
        sites.clear();
        self.resolve(s, &mut sites);
        text.clear();
        let f = self.writer.fields(s.event);
        self.writer.chain_lines(&mut text, f, &sites, &self.sym);
        (self.sites, self.chain_text) = (sites, text);
    }

    /// The `brstackoff`, `brcntr` and `brstackinsn` text of a sample
    /// (after `brstack`/`brstacksym`, as perf orders them).
    fn branch_extra(
        &mut self,
        s: &write::SampleRec,
        kernel: bool,
        br: std::ops::Range<usize>,
    ) -> Vec<u8> {
        let f = self.writer.fields(s.event);
        let mut out = Vec::new();
        if br.is_empty() || self.writer.json() {
            return out;
        }
        let raw: Vec<u64> = self.arena[br.clone()].to_vec();
        if f.has(Field::Brstackoff) && !f.has(Field::Brstack) && !f.has(Field::Brstacksym) {
            for e in raw.chunks_exact(3) {
                let from = self.code.offset(&self.sym, s.pid, kernel, e[0]);
                let to = self.code.offset(&self.sym, s.pid, kernel, e[1]);
                branches::offsets(&mut out, from, to, e[2]);
            }
        }
        if f.has(Field::Brcntr) {
            let cntr = &self.arena[br.end..s.chain.end];
            branches::counters(&mut out, &raw, cntr);
        }
        if f.has(Field::Brstackinsn) || f.has(Field::Brstackinsnlen) {
            let mut look = InsnLookup {
                run: self,
                pid: s.pid,
            };
            insn::text(
                &mut out,
                &mut look,
                s.ip,
                &raw,
                f.has(Field::Brstackinsnlen),
            );
        }
        out
    }
}

/// The replay as `brstackinsn` sees it: one process's code and symbols.
struct InsnLookup<'r, 'w> {
    run: &'r mut Run<'w>,
    pid: u32,
}

impl insn::Lookup for InsnLookup<'_, '_> {
    fn code(&mut self, addr: u64, len: u64, out: &mut Vec<u8>) {
        let run = &mut *self.run;
        run.code.read(&run.sym, self.pid, addr, len, out);
    }

    fn symbol(&mut self, kernel: bool, addr: u64) -> Option<(u32, String, i64)> {
        let site = if kernel {
            self.run.kernel_site(addr)
        } else {
            self.run.sym.mapping(self.pid, addr)?;
            self.run.user_site(self.pid, addr)
        };
        let sym = &self.run.sym;
        match (&sym.frame(site.frame).name, sym.frame_start(site.frame)) {
            (pmx_symbols::symbolize::FrameName::Symbol(n), Some(start)) => {
                Some((site.frame, n.clone(), site.space.wrapping_sub(start) as i64))
            }
            _ => None,
        }
    }
}
