//! The values of a profile: what to build ([`Options`], [`SortKey`],
//! [`KernelSymbols`], [`MachineId`]) and what was built ([`Profile`],
//! [`EventProfile`], [`Row`]).

use pmx_perfdata::read::{FileFeatures, Stats, Truncation};
use pmx_symbols::kernel::Kallsyms;
use pmx_symbols::SymbolOptions;
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
    /// The thread, shown with its last command (perf report's `pid` key,
    /// `Pid:Command`: one row per thread).
    Tid,
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
            "tid" => SortKey::Tid,
            _ => return None,
        })
    }
}

/// How to build a profile.
#[derive(Debug, Clone)]
pub struct Options {
    /// Row keys, in order (perf's default: comm, dso, symbol).
    pub sort: Vec<SortKey>,
    /// Also collect the named call stacks ([`EventProfile::stacks`], for
    /// folded output and flame graphs); [`Options::binary_stacks`] does
    /// not need them (without this, only the binary stacks are named).
    pub stacks: bool,
    /// Also keep the stacks with each frame's binary
    /// ([`EventProfile::binary_stacks`]), which perf's call-graph text
    /// is built from (two functions of one name in two binaries, the
    /// program's `_start` and the dynamic loader's, stay apart there).
    pub binary_stacks: bool,
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
    /// Expand every user address of a call chain into the functions
    /// inlined there (DWARF), innermost first, as perf's `--inline`.
    pub inline: bool,
    /// Only the samples of these threads make rows, children and stacks
    /// (perf report's `--tid`); the others still count in the event's
    /// totals, as perf's absolute shares.
    pub tids: Option<Vec<u32>>,
    /// How names are demangled, where binaries and caches are read (the
    /// kernel symbols' index, perf's build-id cache), the binary cache.
    pub symbols: SymbolOptions,
    /// Threads counting a mapped file's plain samples (the report is the
    /// same with any number): 0 is what [`set_jobs`](super::set_jobs)
    /// said (one job unless told otherwise).
    pub jobs: usize,
    /// Stitch LBR call stacks across a thread's samples (perf's
    /// `--stitch-lbr`).
    pub stitch_lbr: bool,
}

/// Where kernel symbols come from.
#[derive(Debug, Clone, Default)]
pub enum KernelSymbols {
    /// Kernel addresses stay unresolved.
    #[default]
    Off,
    /// These symbols.
    Given(Kallsyms),
    /// This machine's, loaded at the end and only when the file has
    /// kernel addresses: from the on-disk cache ([`pmx_symbols::kcache`]) when it
    /// is valid for the running system, else from `/proc/kallsyms`.
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
            kernel_build_id: pmx_symbols::kernel::running_kernel_build_id(),
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
            binary_stacks: false,
            children: false,
            kallsyms: KernelSymbols::Off,
            this_machine: MachineId::default(),
            root: None,
            lines: false,
            inline: false,
            tids: None,
            symbols: SymbolOptions::default(),
            jobs: 0,
            stitch_lbr: false,
        }
    }
}

/// The bit of [`Row::binary`] (and a [`BinaryStack`] frame's binary)
/// that marks an inlined function: the rest is the frame it is inlined
/// into, not a binary.
pub const INLINED: u32 = 1 << 31;

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
    /// The binary of the row's function, or of a row of a binary and no
    /// function (`--sort dso`): an id of the profile's, the same as in
    /// [`EventProfile::binary_stacks`] (`None` for a row of neither, or
    /// one joined from functions of several binaries). An inlined
    /// function's is [`INLINED`] with the id of the frame it is inlined
    /// into (one row, and one set of chains, per outer function, as perf).
    pub binary: Option<u32>,
    /// Whether the symbol is kernel code (`[k]`) rather than user (`[.]`).
    pub kernel: bool,
    /// CPU.
    pub cpu: Option<u32>,
    /// The thread and its last command: with [`SortKey::Tid`] the row's
    /// (perf's `Pid:Command`), else, with [`SortKey::Comm`], the thread of
    /// the row's first sample (perf sizes its Command column by that
    /// thread's last command).
    pub thread: Option<(u32, String)>,
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
    /// with sample counts and periods (with [`Options::stacks`]; else empty).
    pub stacks: Vec<(Vec<String>, u64, u64)>,
    /// With [`Options::binary_stacks`]: the call stacks with each frame's
    /// binary, so that same-named functions of two binaries stay two
    /// (perf's call-graph text); empty otherwise.
    pub binary_stacks: Vec<BinaryStack>,
    /// The frames of [`EventProfile::binary_stacks`], each distinct name
    /// and binary (as [`Row::binary`]) once, in the order of (name,
    /// binary): a stack's frames are indices into it.
    pub links: Vec<(String, u32)>,
    /// The leader of a sample-read group (`{…}:S`): every member's count
    /// per row.
    pub group: Option<GroupTable>,
}

/// A call stack whose frames keep their binary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinaryStack {
    /// The command.
    pub comm: String,
    /// The frames root → leaf (kernel after user): each frame's name and
    /// its binary's id (as [`Row::binary`]), an index into
    /// [`EventProfile::links`].
    pub frames: Vec<u32>,
    /// The samples' own frame where the chain names its leaf otherwise
    /// (an unnamed address: absolute in perf's chains, the binary's
    /// offset in the sample's row), so that row finds these stacks (an
    /// index into [`EventProfile::links`]).
    pub own: Option<u32>,
    /// Each frame's place in its binary, the order perf gives siblings
    /// of equal weight by: the symbol's start, or the address of an
    /// unnamed frame (`u64::MAX` for an inlined function).
    pub starts: Vec<u64>,
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
}

/// A sample-read group's rows: per row key (the leader's sort keys), the
/// leader's samples and every member's count (the sum of its deltas).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupTable {
    /// The members, leader first (indices into [`Profile::events`]).
    pub members: Vec<usize>,
    /// Rows, heaviest (by the leader's count, then the members') first;
    /// the row's `samples` are the leader's samples there and `period`
    /// the leader's count.
    pub rows: Vec<GroupRow>,
    /// The members' counts are the leader's reads of them (`{…}:S`); false
    /// for a group the file only describes (GROUP_DESC, each member
    /// sampling on its own): its rows' counts are the members' periods,
    /// their moments' `samples` every member's samples, without products
    /// (no interval).
    pub from_reads: bool,
}

/// One row of a [`GroupTable`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow {
    /// The key's names (as in [`EventProfile::rows`]).
    pub row: Row,
    /// The members' deltas summed per sample.
    pub moments: super::groups::Moments,
}

impl GroupRow {
    /// perf's `--group` order: by the leader's count, then the members',
    /// then the samples, then the key (so equal rows keep one order).
    pub(crate) fn perf_order(a: &GroupRow, b: &GroupRow) -> std::cmp::Ordering {
        (b.moments.sums.cmp(&a.moments.sums))
            .then(b.moments.samples.cmp(&a.moments.samples))
            .then_with(|| {
                let (a, b) = (&a.row, &b.row);
                (&a.comm, a.pid, &a.dso, &a.symbol, a.cpu)
                    .cmp(&(&b.comm, b.pid, &b.dso, &b.symbol, b.cpu))
            })
    }
}

impl GroupTable {
    /// Each member's total over all rows.
    pub fn totals(&self) -> Vec<u64> {
        let mut t = vec![0u64; self.members.len()];
        for r in &self.rows {
            for (a, b) in t.iter_mut().zip(&r.moments.sums) {
                *a = a.saturating_add(*b);
            }
        }
        t
    }
}

/// The READ records of a file (`perf record -s`: an inherited counter's
/// total for each thread at its exit), summed per thread and event, as
/// `perf report -T` shows them: events and threads in the order first
/// seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadReads {
    /// READ records.
    pub records: u64,
    /// Values whose event is not known (an id of no event): not shown.
    pub unknown: u64,
    /// The events (indices into [`Profile::events`]), the columns.
    pub events: Vec<usize>,
    /// Per thread: pid, tid and per column the sum of its values.
    pub threads: Vec<(u32, u32, Vec<u64>)>,
    /// (pid, tid) → its index in `threads`.
    at: rustc_hash::FxHashMap<(u32, u32), usize>,
}

impl ThreadReads {
    /// One value of a READ record of thread (`pid`, `tid`) for `event`.
    pub(super) fn add(&mut self, (pid, tid): (u32, u32), event: Option<usize>, value: u64) {
        let Some(e) = event else {
            self.unknown += 1;
            return;
        };
        let c = match self.events.iter().position(|&x| x == e) {
            Some(c) => c,
            None => {
                self.events.push(e);
                self.events.len() - 1
            }
        };
        let t = *self.at.entry((pid, tid)).or_insert_with(|| {
            self.threads.push((pid, tid, Vec::new()));
            self.threads.len() - 1
        });
        let row = &mut self.threads[t].2;
        if row.len() <= c {
            row.resize(c + 1, 0);
        }
        row[c] = row[c].saturating_add(value);
    }
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
    /// The binaries whose symbols could not be read (missing, a different
    /// build than the recording's, unreadable), with the share of the
    /// samples they left as raw addresses; also in `warnings`.
    pub unnamed: Vec<String>,
    /// First and last sample time.
    pub time_range: Option<(u64, u64)>,
    /// The READ records' totals per thread (`report -T`).
    pub thread_reads: ThreadReads,
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
