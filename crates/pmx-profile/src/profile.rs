//! One pass over a perf.data stream → per-event hotspot tables (and call
//! stacks when asked).
//!
//! Threads get their command names from COMM records (inherited at FORK),
//! processes their maps from MMAP/MMAP2 (inherited at FORK). Each sample
//! is attributed to its leaf frame (perf's "self" overhead, what
//! `perf report --no-children` shows); the weight is the sample's period,
//! as perf's Overhead column.

use crate::kernel::Kallsyms;
use crate::symbolize::{DsoId, FrameId, Symbolizer, KERNEL_DSO};
use pmx_perfdata::format::{callchain, misc};
use pmx_perfdata::read::{FileFeatures, Record, Stats, Truncation};
use pmx_perfdata::Reader;
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

/// A key rows are grouped by (`--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Command name of the thread.
    Comm,
    /// Process id.
    Pid,
    /// The binary (shared object).
    Dso,
    /// The function.
    Symbol,
    /// The CPU.
    Cpu,
}

impl SortKey {
    /// Parse one key name (perf's names: `comm`, `pid`, `dso`, `symbol`/`sym`, `cpu`).
    pub fn parse(s: &str) -> Option<SortKey> {
        Some(match s.trim() {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "dso" => SortKey::Dso,
            "symbol" | "sym" => SortKey::Symbol,
            "cpu" => SortKey::Cpu,
            _ => return None,
        })
    }
}

/// How to build a profile.
#[derive(Debug, Clone)]
pub struct Options {
    /// Row keys, in order (perf's default: comm, dso, symbol).
    pub sort: Vec<SortKey>,
    /// Also collect call stacks (for folded output and flame graphs).
    pub stacks: bool,
    /// Also total each row's inclusive ("children") weight: every sample
    /// counts once for each distinct function on its call chain, as
    /// perf's `--children`.
    pub children: bool,
    /// Kernel symbols; used only when the file was recorded on this
    /// machine (see [`Profile::kernel_symbols_used`]).
    pub kallsyms: KernelSymbols,
    /// This machine's kernel build-id, hostname and release, to decide
    /// whether the kernel addresses of the file are this kernel's.
    pub this_machine: MachineId,
    /// Directory recorded paths are looked up under (perf's `--symfs`).
    pub root: Option<PathBuf>,
    /// Find the source file:line (DWARF) of the first sample of the
    /// heaviest rows ([`SOURCE_LINE_ROWS`] per event).
    pub lines: bool,
}

/// Where kernel symbols come from.
#[derive(Debug, Clone, Default)]
pub enum KernelSymbols {
    /// Kernel addresses stay unresolved.
    #[default]
    Off,
    /// These symbols.
    Given(Kallsyms),
    /// This machine's `/proc/kallsyms`, read on a second thread while the
    /// file is read (kernel addresses are resolved at the end).
    Load,
}

/// How many rows per event get a source line with [`Options::lines`].
pub const SOURCE_LINE_ROWS: usize = 200;

/// What identifies the machine a file was recorded on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineId {
    /// Kernel build-id.
    pub kernel_build_id: Option<Vec<u8>>,
    /// Host name.
    pub hostname: Option<String>,
    /// Kernel release.
    pub osrelease: Option<String>,
}

impl MachineId {
    /// This machine, from `/sys/kernel/notes` and `/proc/sys/kernel`.
    pub fn current() -> MachineId {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        MachineId {
            kernel_build_id: crate::kernel::running_kernel_build_id(),
            hostname: read("/proc/sys/kernel/hostname"),
            osrelease: read("/proc/sys/kernel/osrelease"),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Symbol],
            stacks: false,
            children: false,
            kallsyms: KernelSymbols::Off,
            this_machine: MachineId::default(),
            root: None,
            lines: false,
        }
    }
}

/// One row of a hotspot table: the key's parts (those sorted by) and the totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Command.
    pub comm: Option<String>,
    /// Process id.
    pub pid: Option<u32>,
    /// Shared object (base name).
    pub dso: Option<String>,
    /// Symbol (or hex address).
    pub symbol: Option<String>,
    /// Whether the symbol is kernel code (`[k]`) rather than user (`[.]`).
    pub kernel: bool,
    /// CPU.
    pub cpu: Option<u32>,
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
    /// With [`Options::children`]: samples whose call chain holds this
    /// row's function (each sample once).
    pub children_samples: u64,
    /// With [`Options::children`]: the sum of those samples' periods.
    pub children_period: u64,
    /// A representative address (the first sample's) and its pid.
    pub example: (u32, u64),
    /// Source file:line of that address, with [`Options::lines`].
    pub source: Option<String>,
}

/// One event's results.
#[derive(Debug, Clone, Default)]
pub struct EventProfile {
    /// Event name.
    pub name: String,
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
    /// LOST records' lost counts for this event.
    pub lost: u64,
    /// THROTTLE records.
    pub throttled: u64,
    /// Rows, heaviest first.
    pub rows: Vec<Row>,
    /// Call stacks: comm, then frames root → leaf (kernel after user),
    /// with sample counts and periods.
    pub stacks: Vec<(Vec<String>, u64, u64)>,
}

/// The profile of a file.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Per event, in the file's order.
    pub events: Vec<EventProfile>,
    /// The file's features.
    pub features: FileFeatures,
    /// The reader's counts (records by type, lost, …).
    pub stats: Stats,
    /// Pipe mode.
    pub pipe: bool,
    /// Bytes of records.
    pub data_bytes: u64,
    /// Kernel addresses were resolved with this machine's kallsyms.
    pub kernel_symbols_used: bool,
    /// Warnings (binaries that differ from the recording…).
    pub warnings: Vec<String>,
    /// First and last sample time.
    pub time_range: Option<(u64, u64)>,
    /// The file was truncated or unfinished: what was recovered (its
    /// warning, [`truncation_warning`], is also in [`Profile::warnings`]).
    pub truncated: Option<Truncation>,
}

/// The one-line warning for a truncated or unfinished file, of which
/// `data_bytes` bytes of records were read.
pub fn truncation_warning(t: &Truncation, data_bytes: u64) -> String {
    let what = if t.stream_cut { "stream" } else { "file" };
    let mut w = format!("the {what} is truncated: {data_bytes} bytes of records read");
    if t.stream_cut {
        w.push_str(" (the stream ended inside a record: the recording was not finished)");
    } else if t.unfinished {
        w.push_str(" (its data size is 0: the recording was not finished)");
    } else if let Some(end) = t.declared_data_end {
        w.push_str(&format!(
            " (its data section should end at byte {end}, the file has {} bytes)",
            t.file_len
        ));
    }
    if t.partial_bytes > 0 {
        w.push_str(&format!(
            ", an incomplete last record ({} bytes) dropped",
            t.partial_bytes
        ));
    }
    if !t.missing_features.is_empty() {
        let names: Vec<String> = t
            .missing_features
            .iter()
            .map(|&f| {
                pmx_perfdata::format::feature::name(f)
                    .map_or_else(|| format!("#{f}"), str::to_string)
            })
            .collect();
        let shown = names.len().min(4);
        w.push_str(&format!(
            ", {} feature section{} missing ({}{})",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names[..shown].join(", "),
            if shown < names.len() { ", …" } else { "" }
        ));
    }
    w
}

#[derive(Hash, PartialEq, Eq, Clone, Copy)]
struct RawKey {
    comm: u32,
    pid: u32,
    dso: DsoId,
    frame: FrameId,
    cpu: u32,
}

#[derive(Default)]
struct EventAcc {
    samples: u64,
    period: u64,
    lost: u64,
    throttled: u64,
    rows: HashMap<RawKey, (u64, u64, u32, u64)>,
    children: HashMap<RawKey, (u64, u64, u32, u64)>,
    stacks: HashMap<Box<[u32]>, (u64, u64)>,
}

const NONE: u32 = u32::MAX;

/// Whether the kernel addresses of a file with these features belong to
/// the running kernel.
fn recorded_here(f: &FileFeatures, here: &MachineId) -> bool {
    let kernel_id = f
        .build_ids
        .iter()
        .find(|b| b.filename == "[kernel.kallsyms]")
        .map(|b| &b.build_id);
    if let (Some(a), Some(b)) = (kernel_id, &here.kernel_build_id) {
        return a == b;
    }
    match (&f.hostname, &f.osrelease) {
        (None, None) => true,
        (h, r) => {
            h.as_ref().is_none_or(|h| Some(h) == here.hostname.as_ref())
                && r.as_ref()
                    .is_none_or(|r| Some(r) == here.osrelease.as_ref())
        }
    }
}

/// A record kept until its round is processed in time order.
enum Item {
    Sample {
        event: usize,
        misc: u16,
        ip: u64,
        pid: u32,
        tid: u32,
        cpu: u32,
        period: u64,
        chain: std::ops::Range<usize>,
    },
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
    Mmap(Box<MmapItem>),
}

/// A user mapping waiting for its round.
struct MmapItem {
    pid: u32,
    start: u64,
    len: u64,
    pgoff: u64,
    path: Vec<u8>,
    build_id: Option<Vec<u8>>,
}

/// What the replay has built so far.
struct State<'o> {
    options: &'o Options,
    keys: [bool; 5],
    sym: Symbolizer,
    comms: Vec<String>,
    comm_ids: HashMap<Vec<u8>, u32>,
    thread_comm: HashMap<u32, u32>,
    accs: Vec<EventAcc>,
    stack_buf: Vec<u32>,
    frames: Vec<u32>,
}

impl State<'_> {
    fn intern_comm(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(String::from_utf8_lossy(name).into_owned());
        self.comm_ids.insert(name.to_vec(), id);
        id
    }

    fn apply(&mut self, item: &Item, arena: &[u64]) {
        match *item {
            Item::Sample {
                event,
                misc: m,
                ip,
                pid,
                tid,
                cpu,
                period,
                ref chain,
            } => self.sample(event, m, ip, pid, tid, cpu, period, &arena[chain.clone()]),
            Item::Comm { tid, comm } => {
                self.thread_comm.insert(tid, comm);
            }
            Item::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if let Some(&c) = self
                    .thread_comm
                    .get(&ptid)
                    .or_else(|| self.thread_comm.get(&ppid))
                {
                    self.thread_comm.insert(tid, c);
                }
                self.sym.fork(ppid, pid);
            }
            Item::Mmap(ref m) => {
                if let Some(b) = &m.build_id {
                    self.sym.set_build_id(&m.path, b);
                }
                self.sym.add_map(m.pid, m.start, m.len, m.pgoff, &m.path);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &mut self,
        event: usize,
        m: u16,
        ip: u64,
        pid: u32,
        tid: u32,
        cpu: u32,
        period: u64,
        chain: &[u64],
    ) {
        let [k_comm, k_pid, k_dso, k_sym, k_cpu] = self.keys;
        let mode = m & misc::CPUMODE_MASK;
        let kernel = mode == misc::KERNEL || (mode != misc::USER && ip >= 0xffff_8000_0000_0000);
        let leaf = if kernel {
            self.sym.kernel_frame(ip)
        } else {
            self.sym.user_frame(pid, ip)
        };
        let comm = match self
            .thread_comm
            .get(&tid)
            .or_else(|| self.thread_comm.get(&pid))
        {
            Some(&c) => c,
            // perf names the idle task swapper and others by pid.
            None if pid == 0 => self.intern_comm(b"swapper"),
            None => self.intern_comm(format!(":{pid}").as_bytes()),
        };
        let dso = self.sym.frame(leaf).dso;
        let key = RawKey {
            comm: if k_comm { comm } else { NONE },
            pid: if k_pid { pid } else { NONE },
            dso: if k_dso || k_sym { dso } else { NONE },
            frame: if k_sym || k_dso { leaf } else { NONE },
            cpu: if k_cpu { cpu } else { NONE },
        };
        if self.accs.len() <= event {
            self.accs.resize_with(event + 1, EventAcc::default);
        }
        let acc = &mut self.accs[event];
        acc.samples += 1;
        acc.period = acc.period.saturating_add(period);
        let e = acc.rows.entry(key).or_insert((0, 0, pid, ip));
        e.0 += 1;
        e.1 = e.1.saturating_add(period);
        if !self.options.stacks && !self.options.children {
            return;
        }
        self.frames.clear();
        let mut ctx_kernel = kernel;
        let mut first = true;
        for &a in chain {
            if a >= callchain::CONTEXT_MAX {
                ctx_kernel = a == callchain::CONTEXT_KERNEL;
                continue;
            }
            // Return addresses point after the call: look up the call itself.
            let addr = if first { a } else { a.saturating_sub(1) };
            first = false;
            let f = if ctx_kernel {
                self.sym.kernel_frame(addr)
            } else {
                self.sym.user_frame(pid, addr)
            };
            self.frames.push(f);
        }
        if self.frames.is_empty() {
            self.frames.push(leaf);
        }
        if self.options.children {
            // Each distinct function of the chain once (recursion counts once).
            let acc = &mut self.accs[event];
            for (i, &f) in self.frames.iter().enumerate() {
                if self.frames[..i].contains(&f) {
                    continue;
                }
                let k = RawKey {
                    dso: if k_dso || k_sym {
                        self.sym.frame(f).dso
                    } else {
                        NONE
                    },
                    frame: if k_sym || k_dso { f } else { NONE },
                    ..key
                };
                let e = acc.children.entry(k).or_insert((0, 0, pid, ip));
                e.0 += 1;
                e.1 = e.1.saturating_add(period);
            }
        }
        if !self.options.stacks {
            return;
        }
        self.stack_buf.clear();
        self.stack_buf.push(comm);
        self.stack_buf.extend(self.frames.iter().rev());
        let acc = &mut self.accs[event];
        if let Some(v) = acc.stacks.get_mut(&self.stack_buf[..]) {
            v.0 += 1;
            v.1 = v.1.saturating_add(period);
        } else {
            acc.stacks
                .insert(self.stack_buf.clone().into_boxed_slice(), (1, period));
        }
    }
}

/// Records waiting for their round, and the call chains of their samples.
#[derive(Default)]
struct Queue {
    items: Vec<(u64, Item)>,
    arena: Vec<u64>,
}

/// Above this many queued records a round is processed anyway (files
/// without FINISHED_ROUND records).
const MAX_QUEUED: usize = 1 << 20;

impl Queue {
    /// Apply, in time order, the queued records up to time `limit`; keep the rest.
    fn flush(&mut self, limit: u64, state: &mut State<'_>) {
        self.items.sort_by_key(|(t, _)| *t);
        let n = self.items.partition_point(|(t, _)| *t <= limit);
        for (_, item) in &self.items[..n] {
            state.apply(item, &self.arena);
        }
        self.items.drain(..n);
        // Rebuild the arena for the records kept.
        let mut arena = Vec::new();
        for (_, item) in &mut self.items {
            if let Item::Sample { chain, .. } = item {
                let start = arena.len();
                arena.extend_from_slice(&self.arena[chain.clone()]);
                *chain = start..arena.len();
            }
        }
        self.arena = arena;
    }
}

/// Build the profile of everything `reader` holds. `progress` is called
/// now and then with (bytes read, total bytes when known).
///
/// Records are replayed in time order per round, as perf does: the
/// records up to a FINISHED_ROUND are sorted by time and those not later
/// than the previous round's last time are applied (so a sample written
/// before the MMAP it needs, from another CPU's buffer, still finds it).
pub fn build(
    reader: &mut Reader,
    options: &Options,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Profile, pmx_perfdata::Error> {
    let mut here = recorded_here(reader.features(), &options.this_machine);
    let build_ids: HashMap<String, Vec<u8>> = reader
        .features()
        .build_ids
        .iter()
        .map(|b| (b.filename.clone(), b.build_id.clone()))
        .collect();
    let loader = match &options.kallsyms {
        KernelSymbols::Load if here || reader.is_pipe() => Some(std::thread::spawn(Kallsyms::load)),
        _ => None,
    };
    let mut sym = Symbolizer::new(Kallsyms::default(), build_ids, options.root.clone());
    sym.defer_kernel();
    sym.allow_running_vdso(here);
    let want = |k: SortKey| options.sort.contains(&k);
    let mut st = State {
        options,
        keys: [
            want(SortKey::Comm),
            want(SortKey::Pid),
            want(SortKey::Dso),
            want(SortKey::Symbol),
            want(SortKey::Cpu),
        ],
        sym,
        comms: Vec::new(),
        comm_ids: HashMap::default(),
        thread_comm: HashMap::default(),
        accs: Vec::new(),
        stack_buf: Vec::new(),
        frames: Vec::new(),
    };
    let mut queue = Queue::default();
    let mut n = 0u64;
    let mut time_range: Option<(u64, u64)> = None;
    let mut features_seen = reader.features().present.len();
    let mut side: Option<(u64, u64, u64)> = None;
    let mut max_time = 0u64;
    let mut prev_round_max = 0u64;
    let mut round_end = false;
    loop {
        n += 1;
        if n.is_multiple_of(65536) {
            progress(reader.bytes_read(), reader.total_bytes());
        }
        if reader.is_pipe() && reader.features().present.len() != features_seen {
            // Pipe mode: the features (hostname, build-ids) arrive in the stream.
            features_seen = reader.features().present.len();
            let now_here = recorded_here(reader.features(), &options.this_machine);
            if now_here != here {
                here = now_here;
                st.sym.allow_running_vdso(here);
            }
            for b in &reader.features().build_ids {
                st.sym.set_build_id(b.filename.as_bytes(), &b.build_id);
            }
        }
        let Some(rec) = reader.next_record()? else {
            break;
        };
        let mut time = 0u64;
        let item = match rec {
            Record::Sample(s) => {
                time = s.time;
                if s.time != 0 {
                    time_range = Some(
                        time_range
                            .map_or((s.time, s.time), |(a, b)| (a.min(s.time), b.max(s.time))),
                    );
                }
                let start = queue.arena.len();
                if options.stacks || options.children {
                    queue.arena.extend(s.callchain());
                }
                Some(Item::Sample {
                    event: s.event,
                    misc: s.misc,
                    ip: s.ip,
                    pid: s.pid,
                    tid: s.tid,
                    cpu: s.cpu,
                    period: s.period,
                    chain: start..queue.arena.len(),
                })
            }
            Record::Comm(c) => {
                time = c.id.time.unwrap_or(0);
                Some(Item::Comm {
                    tid: c.tid,
                    comm: st.intern_comm(c.comm),
                })
            }
            Record::Fork(t) => {
                time = t.time;
                Some(Item::Fork {
                    pid: t.pid,
                    ppid: t.ppid,
                    tid: t.tid,
                    ptid: t.ptid,
                })
            }
            Record::Mmap(m) => {
                time = m.id.time.unwrap_or(0);
                let kernel_map = m.pid == u32::MAX || m.misc & misc::CPUMODE_MASK == misc::KERNEL;
                (!kernel_map).then(|| {
                    Item::Mmap(Box::new(MmapItem {
                        pid: m.pid,
                        start: m.start,
                        len: m.len,
                        pgoff: m.pgoff,
                        path: m.filename.to_vec(),
                        build_id: m.build_id.map(|b| b.to_vec()),
                    }))
                })
            }
            Record::Lost { id, lost } => {
                side = Some((id, lost, 0));
                None
            }
            Record::Throttle {
                throttled: true,
                id,
                ..
            } => {
                side = Some((id, 0, 1));
                None
            }
            Record::FinishedRound => {
                round_end = true;
                None
            }
            _ => None,
        };
        if let Some(item) = item {
            max_time = max_time.max(time);
            queue.items.push((time, item));
        }
        if let Some((id, lost, throttled)) = side.take() {
            if let Some(e) = reader.event_of_id(id) {
                if st.accs.len() <= e {
                    st.accs.resize_with(e + 1, EventAcc::default);
                }
                st.accs[e].lost = st.accs[e].lost.saturating_add(lost);
                st.accs[e].throttled += throttled;
            }
        }
        if round_end {
            round_end = false;
            queue.flush(prev_round_max, &mut st);
            prev_round_max = max_time;
        } else if queue.items.len() >= MAX_QUEUED {
            queue.flush(u64::MAX, &mut st);
        }
    }
    queue.flush(u64::MAX, &mut st);
    let State {
        mut sym,
        comms,
        mut accs,
        ..
    } = st;
    let (k_dso, k_sym) = (want(SortKey::Dso), want(SortKey::Symbol));
    progress(reader.bytes_read(), reader.total_bytes());
    // Kernel addresses now: with this machine's symbols when it recorded the file.
    let kallsyms = match (&options.kallsyms, loader) {
        (_, Some(handle)) => {
            let k = handle.join().unwrap_or_default();
            if here {
                k
            } else {
                Kallsyms::default()
            }
        }
        (KernelSymbols::Given(k), None) if here => k.clone(),
        _ => Kallsyms::default(),
    };
    let kernel_symbols_used = !kallsyms.is_empty();
    let remap = sym.resolve_deferred(kallsyms);
    let remap_frame = |f: FrameId| remap.get(f as usize).copied().unwrap_or(f);
    let events = reader.events().to_vec();
    accs.resize_with(events.len(), EventAcc::default);
    let mut out = Profile {
        events: Vec::new(),
        features: reader.features().clone(),
        stats: reader.stats().clone(),
        pipe: reader.is_pipe(),
        data_bytes: reader.bytes_read(),
        kernel_symbols_used,
        warnings: sym.warnings().to_vec(),
        time_range,
        truncated: reader.truncation().cloned(),
    };
    if let Some(t) = &out.truncated {
        out.warnings
            .insert(0, truncation_warning(t, reader.bytes_read()));
    }
    for (ev, acc) in events.iter().zip(accs) {
        // Merge the rows whose provisional kernel frames resolved to one
        // symbol: (self samples, self period, children samples, children
        // period, example pid, example ip).
        let mut merged: HashMap<RawKey, (u64, u64, u64, u64, u32, u64)> = HashMap::default();
        let rekey = |mut k: RawKey| {
            if k.frame != NONE {
                let f = remap_frame(k.frame);
                k.dso = if k_dso { sym.frame(f).dso } else { NONE };
                k.frame = if k_sym { f } else { NONE };
            }
            k
        };
        for (k, v) in acc.rows {
            let e = merged.entry(rekey(k)).or_insert((0, 0, 0, 0, v.2, v.3));
            e.0 = e.0.saturating_add(v.0);
            e.1 = e.1.saturating_add(v.1);
        }
        for (k, v) in acc.children {
            let e = merged.entry(rekey(k)).or_insert((0, 0, 0, 0, v.2, v.3));
            e.2 = e.2.saturating_add(v.0);
            e.3 = e.3.saturating_add(v.1);
        }
        let mut rows: Vec<Row> = merged
            .into_iter()
            .map(
                |(k, (samples, period, children_samples, children_period, pid, ip))| {
                    let frame = (k.frame != NONE).then(|| sym.frame(k.frame).clone());
                    Row {
                        comm: (k.comm != NONE).then(|| comms[k.comm as usize].clone()),
                        pid: (k.pid != NONE).then_some(k.pid),
                        dso: (k_dso && k.dso != NONE).then(|| sym.dso(k.dso).short.clone()),
                        symbol: frame.as_ref().map(|f| f.label()),
                        kernel: frame.as_ref().is_some_and(|f| f.kernel)
                            || (k.frame == NONE && k.dso == KERNEL_DSO),
                        cpu: (k.cpu != NONE).then_some(k.cpu),
                        samples,
                        period,
                        children_samples,
                        children_period,
                        example: (pid, ip),
                        source: None,
                    }
                },
            )
            .collect();
        rows.sort_by(|a, b| {
            b.children_period
                .cmp(&a.children_period)
                .then(b.period.cmp(&a.period))
                .then(b.samples.cmp(&a.samples))
                .then_with(|| {
                    (&a.comm, a.pid, &a.dso, &a.symbol, a.cpu)
                        .cmp(&(&b.comm, b.pid, &b.dso, &b.symbol, b.cpu))
                })
        });
        if options.lines {
            for r in rows.iter_mut().take(SOURCE_LINE_ROWS).filter(|r| !r.kernel) {
                r.source = sym
                    .source_line(r.example.0, r.example.1)
                    .map(|(f, l)| format!("{f}:{l}"));
            }
        }
        let mut by_names: std::collections::BTreeMap<Vec<String>, (u64, u64)> = Default::default();
        for (k, (samples, period)) in acc.stacks {
            let mut names = vec![comms[k[0] as usize].clone()];
            names.extend(k[1..].iter().map(|&f| sym.frame(remap_frame(f)).label()));
            let e = by_names.entry(names).or_default();
            e.0 += samples;
            e.1 = e.1.saturating_add(period);
        }
        let stacks: Vec<(Vec<String>, u64, u64)> =
            by_names.into_iter().map(|(n, (a, b))| (n, a, b)).collect();
        out.events.push(EventProfile {
            name: ev.name.clone(),
            samples: acc.samples,
            period: acc.period,
            lost: acc.lost,
            throttled: acc.throttled,
            rows,
            stacks,
        });
    }
    Ok(out)
}
