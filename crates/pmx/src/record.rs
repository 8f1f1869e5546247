//! Sampling: `pmx record`'s engine, from events to a perf.data file.
//!
//! The model, as the kernel sees it:
//!
//! - Each event is opened **sampling**: the counter overflows every N
//!   events (a period, the sample-after value) or at a rate the kernel
//!   steers toward by re-computing the period every tick (a frequency),
//!   and on each overflow the kernel writes a PERF_RECORD_SAMPLE with the
//!   instruction pointer, pid/tid, time, CPU, period and, with call
//!   chains, the return addresses found by walking frame pointers.
//! - Records go into **one ring buffer per CPU**. For a launched command
//!   every event is opened once per CPU on the command's pid with
//!   `inherit` (the kernel refuses a ring for an inherited event on cpu
//!   -1), so each CPU's ring collects that CPU's samples of the command
//!   and all its descendants; for `-a`/`-C` on pid -1 per CPU; for
//!   `-p`/`-t` once per thread and CPU. The first event opened on a CPU
//!   owns the ring and every other event there is redirected into it
//!   (`PERF_EVENT_IOC_SET_OUTPUT`).
//! - The first event also asks for the **side-band** records a reader needs
//!   to turn addresses into symbols: MMAP2 (every executable mapping), COMM
//!   (names; `comm_exec` marks the one at `exec`), FORK and EXIT. Side-band
//!   records carry the sample's TID/TIME/CPU fields too (`sample_id_all`),
//!   and with several events every record carries the event's id
//!   (`PERF_SAMPLE_IDENTIFIER`) so a reader can tell them apart.
//! - What existed before recording started is **synthesized** from `/proc`
//!   the way perf does: the kernel's map (`[kernel.kallsyms]_text` at the
//!   address of `_text`, so kernel addresses resolve against
//!   `/proc/kallsyms`), and for `-p`/`-t`/`-a` a COMM per thread and an
//!   MMAP2 per executable mapping of every process concerned. A launched
//!   command needs none of that: its events start at `exec`
//!   (`enable_on_exec`), so the kernel reports its COMM and mappings itself.
//! - The loop drains every ring in turn, writes the records to the file
//!   and then a PERF_RECORD_FINISHED_ROUND: rings are drained at different
//!   moments, so records are only time-ordered within a ring; the marker
//!   tells a reader that everything before it may be sorted by time. The
//!   kernel drops records it has no room for and says so in a
//!   PERF_RECORD_LOST; it stops a counter that interrupts too often for
//!   the rest of the tick (`kernel.perf_event_max_sample_rate`) and writes
//!   PERF_RECORD_THROTTLE/UNTHROTTLE. Both are counted in the
//!   [`RecordSummary`].
//! - The file ([`pmx_perfdata`]'s writer) gets the attrs exactly as given
//!   to the kernel with the ids of every fd, and the feature sections perf
//!   reads: build ids of every mapped binary and of the kernel, hostname,
//!   OS release, arch, CPU counts and description, `cpuid` in perf's form
//!   (`AuthenticAMD,25,17,1`), total memory, the command line, the event
//!   names and the time of the first and last sample.
//!
//! Recording ends when the command exits, every `-p`/`-t` task is gone,
//! the duration passes or SIGINT/SIGTERM arrives (forwarded to the
//! command); what is left in the rings is drained and the file is complete
//! in every case.

mod buildid;

use crate::launch::{self, Exit, StartError};
use crate::stat::Scope;
use pmx_perf::mmap::{Mmap, RecordHeader};
use pmx_perf::{read_format, record_misc, sample_type, Attr, Counter, OpenCause};
use pmx_perfdata::write::{BuildIdEntry, Features, Writer};
use pmx_perfdata::FileAttr;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use buildid::{of_elf_file as build_id_of_file, of_running_kernel as kernel_build_id};
pub use pmx_perf::SampleRate;

/// perf's default sampling rate (`-F 4000`).
pub const DEFAULT_FREQUENCY: u64 = 4000;
/// perf's default ring size in data pages per CPU (512 KiB with 4 KiB
/// pages: what `kernel.perf_event_mlock_kb`'s default of 516 allows).
pub const DEFAULT_MMAP_PAGES: usize = 128;

/// `PERF_RECORD_FINISHED_ROUND` (perf.data only).
const FINISHED_ROUND: u32 = 68;
/// `PERF_RECORD_MMAP`, `_LOST`, `_COMM`, `_THROTTLE`, `_UNTHROTTLE`,
/// `_SAMPLE`, `_MMAP2`, `_LOST_SAMPLES`.
use pmx_perf::mmap::record as rt;

/// One event to sample: its name (as given, for the file's event
/// description) and its attr as resolved (PMU, config, modifiers,
/// `precise_ip`, and a period or frequency when the spec gave one). The
/// sampling fields are filled by [`record`].
#[derive(Debug, Clone)]
pub struct RecordEvent {
    /// The name written to the file.
    pub name: String,
    /// The resolved attr.
    pub attr: Attr,
}

/// What and how to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Where: the launched command, processes, threads or CPUs.
    pub scope: Scope,
    /// The command to launch (required for [`Scope::Command`]; with CPUs,
    /// recording lasts as long as it runs).
    pub command: Vec<String>,
    /// The command's children are sampled too.
    pub inherit: bool,
    /// The rate for events that do not give their own `period=`/`freq=`.
    pub rate: SampleRate,
    /// Record call chains (frame pointers).
    pub callchain: bool,
    /// Data pages per CPU ring (a power of two).
    pub mmap_pages: usize,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// The file to write.
    pub output: PathBuf,
    /// The command line to store in the file (`pmx record …`).
    pub cmdline: Vec<String>,
}

/// Samples of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSamples {
    /// The event's name.
    pub name: String,
    /// How many samples it recorded.
    pub samples: u64,
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordSummary {
    /// Samples per event, in the order given.
    pub events: Vec<EventSamples>,
    /// PERF_RECORD_LOST records: how often a ring overflowed.
    pub lost_events: u64,
    /// Records lost in those overflows, in total.
    pub lost_records: u64,
    /// Samples the PMU itself dropped (PERF_RECORD_LOST_SAMPLES).
    pub lost_samples: u64,
    /// PERF_RECORD_THROTTLE records.
    pub throttled: u64,
    /// PERF_RECORD_UNTHROTTLE records.
    pub unthrottled: u64,
    /// Records written to the data section (FINISHED_ROUND markers
    /// included).
    pub records: u64,
    /// The file written.
    pub output: PathBuf,
    /// The file's size in bytes.
    pub bytes: u64,
    /// Where an earlier file of that name was moved, if there was one.
    pub old_output: Option<PathBuf>,
    /// How the command ended, when there was one.
    pub exit: Option<Exit>,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// Wall-clock time from enabling to the end.
    pub elapsed: Duration,
    /// Things the user should know (no kernel map, unreadable binaries …).
    pub notes: Vec<String>,
}

impl RecordSummary {
    /// Samples of every event.
    pub fn samples(&self) -> u64 {
        self.events.iter().map(|e| e.samples).sum()
    }
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The command could not be started; exit 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// An event could not be opened, with the reason and the fix (match
    /// on its `cause`).
    #[error("{0}")]
    Open(Box<crate::stat::EventOpenError>),
    /// Every task to attach to had exited before its counters opened.
    #[error("none of the tasks exists any more: nothing to record")]
    NoTask,
    /// The options cannot work (no CPU, bad page count …).
    #[error("{0}")]
    Invalid(String),
    /// Reading the rings or writing the file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

pub use crate::signals::{install as install_signal_handlers, stop_requested};

/// `kernel.perf_event_max_sample_rate`: the highest `-F` the kernel
/// accepts, and the rate beyond which it throttles.
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The default event: hardware `cycles` at the most precise level this
/// machine opens (perf's `cycles:P`), or `cpu-clock` when the PMU does not
/// count cycles; user space only (`:u`) when `kernel.perf_event_paranoid`
/// forbids sampling the kernel and nothing lifts it. The notes say what
/// was chosen instead of plain cycles, and why.
pub fn default_event(rate: SampleRate) -> (RecordEvent, Vec<String>) {
    let opens = |a: &Attr| {
        let probe = Attr {
            sample: Some(rate),
            sample_type: sample_type::IP,
            disabled: true,
            ..a.clone()
        };
        Counter::open(&probe, pmx_perf::Target { pid: 0, cpu: -1 }, None).map(drop)
    };
    let user_only = |a: &Attr| Attr {
        exclude_kernel: true,
        exclude_hv: true,
        ..a.clone()
    };
    let name = |base: &str, a: &Attr| {
        let mods = format!(
            "{}{}",
            if a.exclude_kernel { "u" } else { "" },
            "p".repeat(usize::from(a.precise_ip))
        );
        if mods.is_empty() {
            base.to_string()
        } else {
            format!("{base}:{mods}")
        }
    };
    let paranoid_note = || {
        format!(
            "kernel.perf_event_paranoid is {}: sampling user space only (level 1 or \
             CAP_PERFMON would let pmx sample the kernel too)",
            pmx_perf::perf_event_paranoid().map_or("set".to_string(), |l| l.to_string())
        )
    };
    let cycles = Attr {
        type_: pmx_perf::event_type::HARDWARE,
        config: 0,
        ..Attr::default()
    };
    let mut reason = None;
    for precise in (0..=3u8).rev() {
        let a = Attr {
            precise_ip: precise,
            ..cycles.clone()
        };
        match opens(&a) {
            Ok(()) => {
                let ev = RecordEvent {
                    name: name("cycles", &a),
                    attr: a,
                };
                return (ev, Vec::new());
            }
            // Not allowed with the kernel: user space only, or the reason
            // that one gives (the permission check comes before the PMU's).
            Err(e) if matches!(e.cause, OpenCause::Permission { .. }) => {
                match opens(&user_only(&a)) {
                    Ok(()) => {
                        let u = user_only(&a);
                        let ev = RecordEvent {
                            name: name("cycles", &u),
                            attr: u,
                        };
                        return (ev, vec![paranoid_note()]);
                    }
                    Err(e) => reason = Some(e.to_string()),
                }
            }
            // The least precise form's reason is the one that matters.
            Err(e) => reason = Some(e.to_string()),
        }
    }
    let why = reason.unwrap_or_else(|| "it cannot be opened".to_string());
    let mut notes = vec![format!(
        "cycles is not supported here ({}); sampling cpu-clock instead",
        why.trim_end_matches('.')
    )];
    let mut clock = Attr {
        type_: pmx_perf::event_type::SOFTWARE,
        config: pmx_perf::software::CPU_CLOCK,
        ..Attr::default()
    };
    if let Err(e) = opens(&clock) {
        if matches!(e.cause, OpenCause::Permission { .. }) && opens(&user_only(&clock)).is_ok() {
            clock = user_only(&clock);
            notes.push(paranoid_note());
        }
        // Otherwise opening it for real reports the reason.
    }
    let ev = RecordEvent {
        name: name("cpu-clock", &clock),
        attr: clock,
    };
    (ev, notes)
}

/// The sampling attr of event `index` of `n`.
fn sampling_attr(ev: &RecordEvent, index: usize, n: usize, opts: &RecordOptions) -> Attr {
    let mut st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::CPU
        | sample_type::PERIOD;
    if opts.callchain {
        st |= sample_type::CALLCHAIN;
    }
    if n > 1 {
        st |= sample_type::IDENTIFIER;
    }
    let side_band = index == 0;
    let by_exec = opts.scope == Scope::Command;
    Attr {
        sample: Some(
            ev.attr
                .sample
                .filter(|_| ev.attr.is_sampling())
                .unwrap_or(opts.rate),
        ),
        sample_type: st,
        read_format: read_format::ID,
        disabled: true,
        enable_on_exec: by_exec,
        inherit: by_exec && opts.inherit,
        sample_id_all: true,
        mmap: side_band,
        mmap2: side_band,
        comm: side_band,
        comm_exec: side_band,
        task: side_band,
        ..ev.attr.clone()
    }
}

/// One CPU's ring.
struct Ring {
    mmap: Mmap,
    /// The owning event's fd (open for as long as the ring is read).
    fd: i32,
}

/// Counts kept while the records stream past.
#[derive(Default)]
struct Tally {
    samples: Vec<u64>,
    lost_events: u64,
    lost_records: u64,
    lost_samples: u64,
    throttled: u64,
    unthrottled: u64,
    first_time: Option<u64>,
    last_time: Option<u64>,
    /// Mapped files and their cpumode (kernel or user), for build ids.
    mapped: BTreeMap<String, u16>,
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn c_string_at(b: &[u8], at: usize) -> Option<String> {
    let tail = b.get(at..)?;
    let end = tail.iter().position(|&c| c == 0).unwrap_or(tail.len());
    Some(String::from_utf8_lossy(&tail[..end]).into_owned())
}

impl Tally {
    /// Account one record; `st` is the (shared) sample_type, `by_id` maps
    /// ids to events when there are several.
    fn see(&mut self, rec: &[u8], st: u64, by_id: &HashMap<u64, usize>) {
        let Some(h) = RecordHeader::parse(rec) else {
            return;
        };
        match h.type_ {
            rt::SAMPLE => {
                let mut at = 8;
                let mut id = None;
                if st & sample_type::IDENTIFIER != 0 {
                    id = u64_at(rec, at);
                    at += 8;
                }
                for bit in [sample_type::IP, sample_type::TID] {
                    if st & bit != 0 {
                        at += 8;
                    }
                }
                if st & sample_type::TIME != 0 {
                    if let Some(t) = u64_at(rec, at) {
                        self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
                        self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
                    }
                }
                let event = match id {
                    Some(id) => by_id.get(&id).copied(),
                    None => Some(0),
                };
                if let Some(slot) = event.and_then(|e| self.samples.get_mut(e)) {
                    *slot += 1;
                }
            }
            rt::LOST => {
                self.lost_events += 1;
                self.lost_records += u64_at(rec, 16).unwrap_or(0);
            }
            rt::LOST_SAMPLES => self.lost_samples += u64_at(rec, 8).unwrap_or(0),
            rt::THROTTLE => self.throttled += 1,
            rt::UNTHROTTLE => self.unthrottled += 1,
            rt::MMAP | rt::MMAP2 => {
                let at = if h.type_ == rt::MMAP { 40 } else { 72 };
                if let Some(name) = c_string_at(rec, at) {
                    let mode = h.misc & record_misc::CPUMODE_MASK;
                    self.mapped.entry(name).or_insert(mode);
                }
            }
            _ => {}
        }
    }
}

/// The `sample_id_all` trailer of a synthesized record: the fields the
/// kernel would append, in its order (TID, TIME, ID, STREAM_ID, CPU,
/// IDENTIFIER). Time 0 sorts synthesized records before every sample.
fn id_trailer(st: u64, pid: i32, tid: i32, id: u64) -> Vec<u8> {
    let mut v = Vec::new();
    if st & sample_type::TID != 0 {
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(&tid.to_ne_bytes());
    }
    if st & sample_type::TIME != 0 {
        v.extend_from_slice(&0u64.to_ne_bytes());
    }
    if st & sample_type::ID != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    if st & sample_type::STREAM_ID != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    if st & sample_type::CPU != 0 {
        v.extend_from_slice(&0u64.to_ne_bytes());
    }
    if st & sample_type::IDENTIFIER != 0 {
        v.extend_from_slice(&id.to_ne_bytes());
    }
    v
}

/// A record: header, body, the NUL-terminated string padded to 8 bytes,
/// and the trailer. `None` when it would not fit a record's u16 size.
fn build_record(type_: u32, misc: u16, body: &[u8], name: &str, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut v = Vec::with_capacity(8 + body.len() + name.len() + 8 + trailer.len());
    v.extend_from_slice(&type_.to_ne_bytes());
    v.extend_from_slice(&misc.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(body);
    v.extend_from_slice(name.as_bytes());
    v.push(0);
    while v.len() % 8 != 0 {
        v.push(0);
    }
    v.extend_from_slice(trailer);
    let size = u16::try_from(v.len()).ok()?;
    v[6..8].copy_from_slice(&size.to_ne_bytes());
    Some(v)
}

/// A PERF_RECORD_COMM for `tid` of process `pid`.
fn comm_record(pid: i32, tid: i32, comm: &str, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes());
    build_record(rt::COMM, 0, &body, comm, trailer)
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MapLine {
    start: u64,
    end: u64,
    prot: u32,
    shared: bool,
    pgoff: u64,
    maj: u32,
    min: u32,
    ino: u64,
    name: String,
}

/// Parse one `/proc/PID/maps` line: `start-end perms offset maj:min inode
/// [path]`.
fn parse_map_line(line: &str) -> Option<MapLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.as_bytes();
    let pgoff = u64::from_str_radix(it.next()?, 16).ok()?;
    let dev = it.next()?;
    let ino = it.next()?.parse().ok()?;
    let name = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    if perms.len() < 4 {
        return None;
    }
    let mut prot = 0;
    for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
        .iter()
        .enumerate()
    {
        if perms[i] != b'-' {
            prot |= *bit as u32;
        }
    }
    Some(MapLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot,
        shared: perms[3] == b's',
        pgoff,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino,
        name,
    })
}

/// A PERF_RECORD_MMAP2 for an executable mapping of process `pid`, as
/// perf synthesizes it (anonymous executable memory is `//anon`).
fn mmap2_record(pid: i32, m: &MapLine, trailer: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&m.start.to_ne_bytes());
    body.extend_from_slice(&(m.end - m.start).to_ne_bytes());
    body.extend_from_slice(&m.pgoff.to_ne_bytes());
    body.extend_from_slice(&m.maj.to_ne_bytes());
    body.extend_from_slice(&m.min.to_ne_bytes());
    body.extend_from_slice(&m.ino.to_ne_bytes());
    body.extend_from_slice(&0u64.to_ne_bytes()); // ino_generation
    body.extend_from_slice(&m.prot.to_ne_bytes());
    let flags = if m.shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    body.extend_from_slice(&flags.to_ne_bytes());
    let name = if m.name.is_empty() {
        "//anon"
    } else {
        m.name.as_str()
    };
    build_record(rt::MMAP2, record_misc::USER, &body, name, trailer)
}

/// The kernel's map as perf synthesizes it: a PERF_RECORD_MMAP for pid -1
/// named `[kernel.kallsyms]_text`, from `_text` to the end of the address
/// space, with `pgoff` = the address of `_text` (perf's relocation
/// reference). `None` when `/proc/kallsyms` hides the addresses.
fn kernel_mmap_record(trailer: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string("/proc/kallsyms")
        .map_err(|e| format!("cannot read /proc/kallsyms ({e})"))?;
    let find = |sym: &str| {
        text.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let addr = f.next()?;
            let _kind = f.next()?;
            (f.next()? == sym).then(|| u64::from_str_radix(addr, 16).ok())?
        })
    };
    let (sym, addr) = match find("_text") {
        Some(a) => ("_text", a),
        None => (
            "_stext",
            find("_stext").ok_or("/proc/kallsyms has neither _text nor _stext")?,
        ),
    };
    if addr == 0 {
        return Err("/proc/kallsyms shows every address as 0 (kernel.kptr_restrict; run as root or set it to 0)".to_string());
    }
    let mut body = Vec::new();
    body.extend_from_slice(&(-1i32).to_ne_bytes());
    body.extend_from_slice(&0i32.to_ne_bytes());
    body.extend_from_slice(&addr.to_ne_bytes());
    body.extend_from_slice(&(u64::MAX - addr).to_ne_bytes());
    body.extend_from_slice(&addr.to_ne_bytes());
    build_record(
        rt::MMAP,
        record_misc::KERNEL,
        &body,
        &format!("[kernel.kallsyms]{sym}"),
        trailer,
    )
    .ok_or_else(|| "kernel map record too large".to_string())
}

/// Every process id in `/proc`.
fn all_pids() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The process a thread belongs to (`Tgid:` in its status).
fn tgid_of(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// COMM records for every thread of `pid` (or only `only_tids`) and MMAP2
/// records for its executable mappings.
fn synthesize_process(
    pid: i32,
    only_tids: Option<&[i32]>,
    st: u64,
    id: u64,
    out: &mut Vec<Vec<u8>>,
) {
    let tids = match only_tids {
        Some(t) => t.to_vec(),
        None => crate::stat::threads_of(pid),
    };
    for &tid in &tids {
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) else {
            continue;
        };
        if let Some(r) = comm_record(
            pid,
            tid,
            comm.trim_end_matches('\n'),
            &id_trailer(st, pid, tid, id),
        ) {
            out.push(r);
        }
    }
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return;
    };
    let trailer = id_trailer(st, pid, pid, id);
    for m in maps.lines().filter_map(parse_map_line) {
        if m.prot & libc::PROT_EXEC as u32 == 0 {
            continue;
        }
        if let Some(r) = mmap2_record(pid, &m, &trailer) {
            out.push(r);
        }
    }
}

/// `uname(2)`: nodename, release, machine.
fn uname() -> Option<(String, String, String)> {
    // SAFETY: utsname is plain bytes; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a local struct.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    Some((s(&u.nodename), s(&u.release), s(&u.machine)))
}

/// `field : value` of the first processor in `/proc/cpuinfo`.
fn cpuinfo_field(cpuinfo: &str, field: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim().to_string())
    })
}

/// perf's `cpuid` string for x86: `vendor,family,model,stepping` in
/// decimal (`GenuineIntel,6,85,4`).
fn perf_cpuid() -> Option<String> {
    let id = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid)?;
    Some(format!(
        "{},{},{},{}",
        id.vendor.cpuid_str(),
        id.family,
        id.model,
        id.stepping.unwrap_or(0)
    ))
}

/// The feature sections for the file.
fn features(opts: &RecordOptions, tally: &Tally, notes: &mut Vec<String>) -> Features {
    let (host, release, machine) = uname().unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let present = std::fs::read_to_string("/sys/devices/system/cpu/present")
        .ok()
        .and_then(|s| pmx_model::topology::parse_cpu_list(s.trim()).ok())
        .map(|v| v.iter().max().map_or(0, |m| m + 1));
    let online = crate::stat::online_cpus().len() as u32;
    let mem = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    });
    let mut build_ids = Vec::new();
    let mut unreadable = 0usize;
    for (name, &mode) in &tally.mapped {
        if name.starts_with("[kernel.kallsyms]") {
            if let Some(id) = buildid::of_running_kernel() {
                build_ids.push(BuildIdEntry {
                    pid: -1,
                    misc: record_misc::KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".to_string(),
                });
            }
            continue;
        }
        if !name.starts_with('/') {
            continue; // [vdso], //anon, [heap]: nothing on disk
        }
        match buildid::of_elf_file(Path::new(name)) {
            Some(id) if id.len() <= buildid::MAX_BUILD_ID => build_ids.push(BuildIdEntry {
                pid: -1,
                misc: if mode == record_misc::KERNEL {
                    record_misc::KERNEL
                } else {
                    record_misc::USER
                },
                build_id: id,
                filename: name.clone(),
            }),
            Some(_) => {}
            None => {
                if !Path::new(name).exists() {
                    unreadable += 1;
                }
            }
        }
    }
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} mapped file(s) no longer exist, so their build ids are missing"
        ));
    }
    Features {
        hostname: Some(host),
        osrelease: Some(release),
        version: Some(format!("pmx {}", env!("CARGO_PKG_VERSION"))),
        arch: Some(machine),
        nrcpus: Some((online, present.unwrap_or(online))),
        cpudesc: cpuinfo_field(&cpuinfo, "model name"),
        cpuid: perf_cpuid(),
        total_mem_kib: mem,
        cmdline: Some(opts.cmdline.clone()),
        build_ids,
        sample_time: tally.first_time.zip(tally.last_time),
    }
}

/// Move an existing `path` to `path.old`, as perf does.
fn rotate(path: &Path) -> io::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut old = path.as_os_str().to_owned();
    old.push(".old");
    let old = PathBuf::from(old);
    std::fs::rename(path, &old).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot move {} to {}: {e}", path.display(), old.display()),
        )
    })?;
    Ok(Some(old))
}

fn exec_reason(e: StartError) -> String {
    match e {
        StartError::Exec(libc::ENOENT) => "command not found".to_string(),
        StartError::Exec(libc::EACCES) => "permission denied (not executable?)".to_string(),
        StartError::Exec(errno) => io::Error::from_raw_os_error(errno).to_string(),
        StartError::Pin(errno) => io::Error::from_raw_os_error(errno).to_string(),
    }
}

/// Sleep until one of `fds` is readable, or `timeout_ms`.
fn poll_fds(fds: &[i32], timeout_ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of p.len() pollfds.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
}

/// Record `events` as `opts` says, into `opts.output`.
pub fn record(events: &[RecordEvent], opts: &RecordOptions) -> Result<RecordSummary, RecordError> {
    crate::signals::reset();
    if events.is_empty() {
        return Err(RecordError::Invalid("no event to record".to_string()));
    }
    if opts.mmap_pages == 0 || !opts.mmap_pages.is_power_of_two() {
        return Err(RecordError::Invalid(format!(
            "{} ring pages: give a power of two (1, 2, 4 … 128 …)",
            opts.mmap_pages
        )));
    }
    if opts.scope == Scope::Command && opts.command.is_empty() {
        return Err(RecordError::Invalid("no command to record".to_string()));
    }
    let mut child = if opts.command.is_empty() {
        None
    } else {
        Some(launch::fork_held(&opts.command, None)?)
    };
    let result = record_with(events, opts, &mut child);
    if result.is_err() {
        if let Some(c) = child.as_mut() {
            c.abandon();
        }
    }
    crate::signals::set_child(0);
    result
}

fn record_with(
    events: &[RecordEvent],
    opts: &RecordOptions,
    child: &mut Option<launch::Launched>,
) -> Result<RecordSummary, RecordError> {
    let n = events.len();
    let attrs: Vec<Attr> = events
        .iter()
        .enumerate()
        .map(|(i, e)| sampling_attr(e, i, n, opts))
        .collect();
    let st = attrs[0].sample_type;
    let cpus = match &opts.scope {
        Scope::Cpus(c) => c.clone(),
        _ => crate::stat::online_cpus(),
    };
    if cpus.is_empty() {
        return Err(RecordError::Invalid("no CPU to record on".to_string()));
    }
    let tasks: Vec<i32> = match &opts.scope {
        Scope::Command => vec![child.as_ref().map_or(0, |c| c.pid)],
        Scope::Pids(p) => p
            .iter()
            .flat_map(|&pid| {
                let t = crate::stat::threads_of(pid);
                if t.is_empty() {
                    vec![pid]
                } else {
                    t
                }
            })
            .collect(),
        Scope::Tids(t) => t.clone(),
        Scope::Cpus(_) => vec![-1],
    };
    let tolerate_gone = matches!(opts.scope, Scope::Pids(_) | Scope::Tids(_));

    // Open: per CPU, per task, per event; the first fd on a CPU owns the ring.
    let mut counters: Vec<Counter> = Vec::new();
    let mut ids: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut rings: Vec<Ring> = Vec::new();
    for &cpu in &cpus {
        let mut owner: Option<usize> = None;
        for &task in &tasks {
            for (ei, attr) in attrs.iter().enumerate() {
                let c = match Counter::open(
                    attr,
                    pmx_perf::Target {
                        pid: task,
                        cpu: cpu as i32,
                    },
                    None,
                ) {
                    Ok(c) => c,
                    Err(e) if e.cause == OpenCause::NoProcess && tolerate_gone => break,
                    Err(error) => {
                        return Err(RecordError::Open(Box::new(crate::stat::EventOpenError {
                            event: events[ei].name.clone(),
                            error,
                        })))
                    }
                };
                match owner {
                    Some(o) => c.set_output(&counters[o]).map_err(|e| {
                        RecordError::Io(io::Error::new(
                            e.kind(),
                            format!(
                                "cannot send {}'s records to CPU {cpu}'s ring: {e}",
                                events[ei].name
                            ),
                        ))
                    })?,
                    None => {
                        let mmap = Mmap::new(&c, opts.mmap_pages)?;
                        rings.push(Ring {
                            mmap,
                            fd: std::os::fd::AsRawFd::as_raw_fd(&c),
                        });
                        owner = Some(counters.len());
                    }
                }
                ids[ei].push(c.id());
                counters.push(c);
            }
        }
    }
    if counters.is_empty() {
        return Err(RecordError::NoTask);
    }
    let by_id: HashMap<u64, usize> = ids
        .iter()
        .enumerate()
        .flat_map(|(ei, v)| v.iter().map(move |&id| (id, ei)))
        .collect();

    // The file.
    let old_output = rotate(&opts.output)?;
    let file = std::fs::File::create(&opts.output).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", opts.output.display()),
        )
    })?;
    let file_attrs: Vec<FileAttr> = attrs
        .iter()
        .zip(events)
        .zip(&ids)
        .map(|((a, e), ids)| FileAttr {
            attr: a.to_perf_data_bytes(),
            ids: ids.clone(),
            name: e.name.clone(),
        })
        .collect();
    let mut writer = Writer::create(BufWriter::new(file), file_attrs)?;
    let mut tally = Tally {
        samples: vec![0; n],
        ..Tally::default()
    };
    let mut notes = Vec::new();
    let mut records: u64 = 0;

    // Start: the command's events at its exec; the others now, before the
    // synthesis below, so nothing that starts meanwhile falls in a gap (a
    // mapping seen twice is harmless, one seen never is not).
    if opts.scope != Scope::Command {
        for c in &counters {
            c.enable(false)?;
        }
    }

    // What existed before: the kernel map, and the tasks of -p/-t/-a.
    let first_id = ids[0].first().copied().unwrap_or(0);
    let mut synth = Vec::new();
    match kernel_mmap_record(&id_trailer(st, -1, 0, first_id)) {
        Ok(r) => synth.push(r),
        // Nothing to symbolize when no event samples the kernel.
        Err(_) if attrs.iter().all(|a| a.exclude_kernel) => {}
        Err(why) => notes.push(format!(
            "no kernel map: {why}; kernel addresses will not be symbolized"
        )),
    }
    match &opts.scope {
        Scope::Command => {}
        Scope::Pids(p) => {
            for &pid in p {
                synthesize_process(pid, None, st, first_id, &mut synth);
            }
        }
        Scope::Tids(t) => {
            let mut by_process: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for &tid in t {
                by_process
                    .entry(tgid_of(tid).unwrap_or(tid))
                    .or_default()
                    .push(tid);
            }
            for (pid, tids) in by_process {
                synthesize_process(pid, Some(&tids), st, first_id, &mut synth);
            }
        }
        Scope::Cpus(_) => {
            for pid in all_pids() {
                synthesize_process(pid, None, st, first_id, &mut synth);
            }
        }
    }
    for r in &synth {
        tally.see(r, st, &by_id);
        writer.write_record(r)?;
        records += 1;
    }

    let start = Instant::now();
    let mut exit: Option<Exit> = None;
    let pidfd = match child.as_mut() {
        Some(c) => {
            crate::signals::set_child(c.pid);
            if let Err(e) = c.release() {
                let _ = c.wait();
                return Err(RecordError::Exec {
                    cmd: opts.command[0].clone(),
                    reason: exec_reason(e),
                });
            }
            crate::launch::pidfd_open(c.pid)
        }
        None => None,
    };
    // The ring owners' fds poll readable when their ring passes the
    // wake-up mark; the pidfd when the command exits.
    let mut poll_set: Vec<i32> = rings.iter().map(|r| r.fd).collect();
    if let Some(p) = &pidfd {
        use std::os::fd::AsRawFd;
        poll_set.push(p.as_raw_fd());
    }
    let mut write_err: Option<io::Error> = None;
    let mut drain = |rings: &mut [Ring],
                     writer: &mut Writer<BufWriter<std::fs::File>>,
                     tally: &mut Tally,
                     records: &mut u64|
     -> io::Result<()> {
        let mut any = false;
        for ring in rings.iter_mut() {
            ring.mmap.read_records(|rec| {
                if write_err.is_some() {
                    return;
                }
                tally.see(rec, st, &by_id);
                match writer.write_record(rec) {
                    Ok(()) => {
                        *records += 1;
                        any = true;
                    }
                    Err(e) => write_err = Some(e),
                }
            });
        }
        if let Some(e) = write_err.take() {
            return Err(e);
        }
        if any {
            let mut fr = Vec::with_capacity(8);
            fr.extend_from_slice(&FINISHED_ROUND.to_ne_bytes());
            fr.extend_from_slice(&0u16.to_ne_bytes());
            fr.extend_from_slice(&8u16.to_ne_bytes());
            writer.write_record(&fr)?;
            *records += 1;
        }
        Ok(())
    };
    let watched: Vec<i32> = match &opts.scope {
        Scope::Pids(p) => p.clone(),
        Scope::Tids(t) => t.clone(),
        _ => Vec::new(),
    };
    let mut interrupted = false;
    loop {
        drain(&mut rings, &mut writer, &mut tally, &mut records)?;
        if let Some(c) = child.as_ref() {
            let mut status = 0;
            // SAFETY: polling our own child without blocking.
            let r = unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) };
            if r == c.pid {
                exit = Some(if libc::WIFSIGNALED(status) {
                    Exit::Signal {
                        signal: libc::WTERMSIG(status),
                    }
                } else {
                    Exit::Code {
                        code: libc::WEXITSTATUS(status),
                    }
                });
                break;
            }
        }
        if stop_requested() {
            interrupted = true;
            if child.is_none() {
                break;
            }
            // The signal was forwarded; the command's exit ends the loop.
        }
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        if !watched.is_empty() && watched.iter().all(|&t| !crate::stat::task_alive(t)) {
            break;
        }
        let timeout = match opts.duration {
            Some(d) => d.saturating_sub(start.elapsed()).as_millis().clamp(1, 100) as i32,
            None => 100,
        };
        poll_fds(&poll_set, timeout);
    }
    let elapsed = start.elapsed();
    for c in &counters {
        let _ = c.disable(false);
    }
    drain(&mut rings, &mut writer, &mut tally, &mut records)?;
    drop(rings);
    drop(counters);
    if exit.is_none() {
        if let Some(c) = child.as_ref() {
            if opts.duration.is_some() && !interrupted {
                // --duration ended the recording: the command is interrupted, as
                // pmx stat does.
                // SAFETY: signalling our own child.
                unsafe { libc::kill(c.pid, libc::SIGINT) };
            }
            exit = Some(c.wait()?);
        }
    }
    crate::signals::set_child(0);
    let feats = features(opts, &tally, &mut notes);
    let out = writer.finish(&feats)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(RecordSummary {
        events: events
            .iter()
            .zip(&tally.samples)
            .map(|(e, &s)| EventSamples {
                name: e.name.clone(),
                samples: s,
            })
            .collect(),
        lost_events: tally.lost_events,
        lost_records: tally.lost_records,
        lost_samples: tally.lost_samples,
        throttled: tally.throttled,
        unthrottled: tally.unthrottled,
        records,
        output: opts.output.clone(),
        bytes,
        old_output,
        exit,
        interrupted,
        elapsed,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_parse() {
        let m = parse_map_line(
            "7f1c2a000000-7f1c2a1b5000 r-xp 00028000 fd:01 1837278                    /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(m.start, 0x7f1c2a000000);
        assert_eq!(m.end, 0x7f1c2a1b5000);
        assert_eq!(m.prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert!(!m.shared);
        assert_eq!(m.pgoff, 0x28000);
        assert_eq!((m.maj, m.min, m.ino), (0xfd, 1, 1837278));
        assert_eq!(m.name, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let anon = parse_map_line("7ffd1000-7ffd3000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(anon.shared);
        assert_eq!(anon.name, "");
        assert!(parse_map_line("garbage").is_none());
    }

    #[test]
    fn trailer_follows_the_kernel_order() {
        let st = sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::IDENTIFIER;
        let t = id_trailer(st, 7, 8, 99);
        assert_eq!(t.len(), 8 + 8 + 8 + 8);
        assert_eq!(i32::from_ne_bytes(t[0..4].try_into().unwrap()), 7);
        assert_eq!(i32::from_ne_bytes(t[4..8].try_into().unwrap()), 8);
        assert_eq!(u64::from_ne_bytes(t[8..16].try_into().unwrap()), 0);
        assert_eq!(u64::from_ne_bytes(t[24..32].try_into().unwrap()), 99);
        assert!(id_trailer(sample_type::IP, 1, 1, 1).is_empty());
    }

    #[test]
    fn synthesized_records_are_aligned_and_sized() {
        let r = comm_record(5, 6, "worker", &[]).unwrap();
        assert_eq!(r.len() % 8, 0);
        let h = RecordHeader::parse(&r).unwrap();
        assert_eq!((h.type_, h.misc, h.size as usize), (rt::COMM, 0, r.len()));
        assert_eq!(c_string_at(&r, 16).unwrap(), "worker");
        let m = MapLine {
            start: 0x1000,
            end: 0x3000,
            prot: 5,
            shared: false,
            pgoff: 0,
            maj: 1,
            min: 2,
            ino: 3,
            name: String::new(),
        };
        let r = mmap2_record(5, &m, &[0; 16]).unwrap();
        assert_eq!(r.len() % 8, 0);
        assert_eq!(c_string_at(&r, 72).unwrap(), "//anon");
        assert_eq!(u64_at(&r, 24), Some(0x2000), "len");
        assert!(build_record(1, 0, &[], &"x".repeat(70_000), &[]).is_none());
    }

    #[test]
    fn tally_counts_samples_per_event_and_lost() {
        let st = sample_type::IDENTIFIER | sample_type::IP | sample_type::TID | sample_type::TIME;
        let by_id: HashMap<u64, usize> = [(10, 0), (11, 1)].into_iter().collect();
        let mut t = Tally {
            samples: vec![0, 0],
            ..Tally::default()
        };
        let sample = |id: u64, time: u64| {
            let mut v = Vec::new();
            v.extend_from_slice(&rt::SAMPLE.to_ne_bytes());
            v.extend_from_slice(&2u16.to_ne_bytes());
            v.extend_from_slice(&40u16.to_ne_bytes());
            for w in [id, 0x400000, 0, time] {
                v.extend_from_slice(&w.to_ne_bytes());
            }
            v
        };
        t.see(&sample(10, 50), st, &by_id);
        t.see(&sample(11, 20), st, &by_id);
        t.see(&sample(11, 90), st, &by_id);
        t.see(&sample(12, 5), st, &by_id); // unknown id: no event
        let mut lost = Vec::new();
        lost.extend_from_slice(&rt::LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&10u64.to_ne_bytes());
        lost.extend_from_slice(&33u64.to_ne_bytes());
        t.see(&lost, st, &by_id);
        assert_eq!(t.samples, vec![1, 2]);
        assert_eq!((t.first_time, t.last_time), (Some(5), Some(90)));
        assert_eq!((t.lost_events, t.lost_records), (1, 33));
    }

    #[test]
    fn sampling_attrs_put_side_band_on_the_first_event_only() {
        let ev = RecordEvent {
            name: "cpu-clock".into(),
            attr: Attr {
                type_: 1,
                config: 0,
                ..Attr::default()
            },
        };
        let opts = RecordOptions {
            scope: Scope::Command,
            command: vec!["true".into()],
            inherit: true,
            rate: SampleRate::Frequency(4000),
            callchain: true,
            mmap_pages: 8,
            duration: None,
            output: "x".into(),
            cmdline: vec![],
        };
        let a0 = sampling_attr(&ev, 0, 2, &opts);
        let a1 = sampling_attr(&ev, 1, 2, &opts);
        assert!(a0.mmap2 && a0.comm && a0.task && a0.comm_exec);
        assert!(!a1.mmap2 && !a1.comm && !a1.task);
        assert_eq!(a0.sample_type, a1.sample_type);
        assert!(a0.sample_type & sample_type::IDENTIFIER != 0);
        assert!(a0.sample_type & sample_type::CALLCHAIN != 0);
        assert!(a0.inherit && a0.enable_on_exec && a0.disabled && a0.sample_id_all);
        assert_eq!(a0.sample, Some(SampleRate::Frequency(4000)));
        let own = RecordEvent {
            attr: Attr {
                sample: Some(SampleRate::Period(5000)),
                ..ev.attr.clone()
            },
            ..ev
        };
        assert_eq!(
            sampling_attr(&own, 0, 1, &opts).sample,
            Some(SampleRate::Period(5000))
        );
        assert_eq!(
            sampling_attr(&own, 0, 1, &opts).sample_type & sample_type::IDENTIFIER,
            0
        );
    }
}
