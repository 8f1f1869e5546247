//! Reading perf.data, file mode and pipe mode, in one streaming pass.
//!
//! [`Reader::new`] takes any `Read + Seek` (a file, standard input, a
//! cursor over bytes). It reads the first 16 bytes: a header size of 16
//! means a pipe stream (only records follow; the source is never seeked),
//! otherwise a file-mode header, whose attrs, ids and feature sections are
//! read with seeks before the data section is streamed.
//!
//! [`Reader::next_record`] returns one decoded record at a time, borrowing
//! the reader's buffer (a fixed window: memory does not grow with the
//! file). The records that describe the file itself (`HEADER_ATTR`,
//! `HEADER_FEATURE`, `EVENT_UPDATE`, `ID_INDEX`, `COMPRESSED`…) are
//! consumed by the reader and update [`Reader::events`] and
//! [`Reader::features`]; compressed records are decompressed transparently.
//!
//! Truncated files: when the header's data size is 0 (the writer never
//! finished) or the data section runs past the end of the file, the
//! records are read from the data offset to the end of the file and end
//! cleanly before an incomplete last record; feature sections the file
//! ends before are skipped. [`Reader::truncation`] describes the recovery.
//! A complete file without records (data size 0, followed by a sound
//! feature index) is told apart by its feature index. Anything else that
//! does not parse remains an error with its offset.

use crate::attr::PerfEventAttr;
use crate::format::{
    check_magic, feature, le_u32, le_u64, misc, read_format, record_type, sample_type, EventHeader,
    FileHeader, Section, EVENT_HEADER_SIZE, FILE_HEADER_SIZE, PIPE_HEADER_SIZE,
};
use crate::plain::Layout;
use crate::write::BuildIdEntry;
use crate::Error;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Size of the read window; records are at most 64 KiB.
const WINDOW: usize = 1 << 20;
/// The largest feature section or attrs section this reader accepts.
const MAX_SECTION: u64 = 1 << 30;

/// One event of the file: its attr decoded, its raw bytes, ids and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The decoded `perf_event_attr`.
    pub attr: PerfEventAttr,
    /// The raw attr bytes as stored.
    pub raw: Vec<u8>,
    /// Sample ids of the event's file descriptors.
    pub ids: Vec<u64>,
    /// The event's name: from EVENT_DESC or EVENT_UPDATE, else perf's
    /// default name for the attr.
    pub name: String,
}

/// The COMPRESSED feature: how the records were compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionInfo {
    /// Format version.
    pub version: u32,
    /// Compressor: 1 = zstd.
    pub kind: u32,
    /// Compression level.
    pub level: u32,
    /// Compression ratio perf measured.
    pub ratio: u32,
    /// Size of the mmap buffers.
    pub mmap_len: u32,
}

/// The feature sections of a file (or the HEADER_FEATURE records of a pipe).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileFeatures {
    /// Features present, by number.
    pub present: Vec<u32>,
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE.
    pub osrelease: Option<String>,
    /// VERSION of the tool that wrote the file.
    pub version: Option<String>,
    /// ARCH.
    pub arch: Option<String>,
    /// NRCPUS: (online, available).
    pub nrcpus: Option<(u32, u32)>,
    /// CPUDESC.
    pub cpudesc: Option<String>,
    /// CPUID.
    pub cpuid: Option<String>,
    /// TOTAL_MEM in KiB.
    pub total_mem_kib: Option<u64>,
    /// CMDLINE.
    pub cmdline: Option<Vec<String>>,
    /// BUILD_ID entries.
    pub build_ids: Vec<BuildIdEntry>,
    /// EVENT_DESC: name, attr and ids per event.
    pub event_desc: Vec<(String, PerfEventAttr, Vec<u64>)>,
    /// SAMPLE_TIME: first and last sample time.
    pub sample_time: Option<(u64, u64)>,
    /// COMPRESSED.
    pub compressed: Option<CompressionInfo>,
    /// GROUP_DESC: per group of several events, its name (perf's
    /// `{anon_group}` for an unnamed one), its leader's index among the
    /// file's attrs and its number of members (the leader and those
    /// after it), as the writer's `Features::group_desc`.
    pub group_desc: Vec<(String, u32, u32)>,
    /// TRACING_DATA of a file: its section's (offset, size), read on
    /// demand by [`crate::tracing::read_file`] (it can be large).
    pub tracing_section: Option<(u64, u64)>,
    /// TRACING_DATA of a pipe stream: the payload (at most 64 MiB kept).
    pub tracing_bytes: Option<Vec<u8>>,
    /// Every other feature's raw bytes.
    pub raw: BTreeMap<u32, Vec<u8>>,
}

/// The `sample_id` fields of a side-band record (its trailer when the
/// attr has `sample_id_all`) or of a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// Timestamp.
    pub time: Option<u64>,
    /// Sample id.
    pub id: Option<u64>,
    /// Stream id.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
}

/// A decoded SAMPLE record. Fields the event's sample_type lacks are 0
/// (`period` is the attr's period then, as perf does).
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// Index into [`Reader::events`].
    pub event: usize,
    /// The header's misc (CPU mode in the low 3 bits).
    pub misc: u16,
    /// Instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp.
    pub time: u64,
    /// Data address.
    pub addr: u64,
    /// Sample id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
    /// CPU.
    pub cpu: u32,
    /// Period (weight of the sample).
    pub period: u64,
    /// The call chain, raw (u64 little-endian each; markers included).
    pub callchain_bytes: &'a [u8],
    /// Raw data (tracepoint fields).
    pub raw: &'a [u8],
    /// Weight: WEIGHT's u64, or WEIGHT_STRUCT's `var1_dw` (the access
    /// latency of a PEBS load), as perf 6.x on x86 splits it.
    pub weight: u64,
    /// WEIGHT_STRUCT's `var2_w` (perf's `ins_lat`: the instruction
    /// latency); 0 without WEIGHT_STRUCT.
    pub ins_lat: u16,
    /// WEIGHT_STRUCT's `var3_w` (perf's `p_stage_cyc` on POWER; perf on
    /// x86 ignores it); 0 without WEIGHT_STRUCT.
    pub weight_var3: u16,
    /// Data source (`union perf_mem_data_src`, see [`crate::mem::DataSrc`]).
    pub data_src: u64,
    /// Physical address.
    pub phys_addr: u64,
    /// Page size of the data address (DATA_PAGE_SIZE), in bytes; 0 without.
    pub data_page_size: u64,
    /// Page size of the code address (CODE_PAGE_SIZE), in bytes; 0 without.
    pub code_page_size: u64,
    /// The `PERF_SAMPLE_READ` field, raw (see [`Sample::read_values`]).
    pub read: &'a [u8],
    /// The event's `read_format`, which lays out [`Sample::read`].
    pub read_format: u64,
    /// User registers (REGS_USER); empty when the sample has none.
    pub user_regs: UserRegs<'a>,
    /// The copy of the user stack (STACK_USER) from the user stack pointer
    /// up, cut to its dynamic size (the bytes the kernel could copy);
    /// empty when the sample has none.
    pub user_stack: &'a [u8],
    /// The branch stack (`PERF_SAMPLE_BRANCH_STACK`); empty when the
    /// sample has none.
    pub branches: crate::branch::BranchStack<'a>,
}

/// One counter value of a sample's `PERF_SAMPLE_READ` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadValue {
    /// The counter's id (`PERF_FORMAT_ID`), else the sample's own id.
    pub id: u64,
    /// The counter's value: a running total since it was enabled.
    pub value: u64,
    /// Samples of that counter lost (`PERF_FORMAT_LOST`, Linux 6.0+), else 0.
    pub lost: u64,
}

/// A sample's `PERF_SAMPLE_READ` field decoded: the time totals and the
/// values (every member of the group with `PERF_FORMAT_GROUP`, leader
/// first; the sampling event's own value without it).
#[derive(Debug, Clone, Copy)]
pub struct ReadValues<'a> {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub time_running: Option<u64>,
    words: &'a [u8],
    stride: usize,
    single: bool,
    lost: bool,
    id: bool,
    own_id: u64,
}

impl<'a> ReadValues<'a> {
    /// Decode `bytes` (a sample's read field, checked by [`parse_sample`])
    /// laid out by `read_format`; `own_id` is the sample's id, the value's
    /// id when the format has none.
    pub fn new(bytes: &'a [u8], read_format: u64, own_id: u64) -> ReadValues<'a> {
        let rf = read_format;
        let word = |i: usize| {
            bytes
                .get(i * 8..i * 8 + 8)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let (id, lost) = (rf & read_format::ID != 0, rf & read_format::LOST != 0);
        let stride = 8 * (1 + usize::from(id) + usize::from(lost));
        let group = rf & read_format::GROUP != 0;
        // GROUP: nr, [enabled], [running], values…; else value, [enabled], [running], [id], [lost].
        let mut at = usize::from(group);
        let mut take = |on: bool| {
            on.then(|| {
                at += 1;
                if group {
                    word(at - 1)
                } else {
                    word(at)
                }
            })
        };
        let time_enabled = take(rf & read_format::TOTAL_TIME_ENABLED != 0);
        let time_running = take(rf & read_format::TOTAL_TIME_RUNNING != 0);
        let words = if bytes.is_empty() {
            &[][..]
        } else if group {
            let nr = usize::try_from(word(0)).unwrap_or(0);
            let start = (at * 8).min(bytes.len());
            let end = start
                .saturating_add(nr.saturating_mul(stride))
                .min(bytes.len());
            &bytes[start..end]
        } else {
            bytes
        };
        ReadValues {
            time_enabled,
            time_running,
            words,
            stride: if group { stride } else { bytes.len().max(8) },
            single: !group,
            lost,
            id,
            own_id,
        }
    }

    /// The values, leader first.
    pub fn iter(&self) -> impl Iterator<Item = ReadValue> + 'a {
        let word = |b: &[u8], i: usize| {
            b.get(i * 8..i * 8 + 8)
                .map_or(0, |x| u64::from_le_bytes(x.try_into().expect("8 bytes")))
        };
        let (id, lost, own, single) = (self.id, self.lost, self.own_id, self.single);
        // A single value has the times between the value and its id.
        let after = if single {
            1 + usize::from(self.time_enabled.is_some()) + usize::from(self.time_running.is_some())
        } else {
            1
        };
        self.words
            .chunks_exact(self.stride)
            .map(move |c| ReadValue {
                value: word(c, 0),
                id: if id { word(c, after) } else { own },
                lost: if lost {
                    word(c, after + usize::from(id))
                } else {
                    0
                },
            })
    }
}

/// A READ record: the total of an inherited counter for one thread, which
/// the kernel writes when the thread exits if the attr has `inherit_stat`
/// (`perf record -s`): pid, tid, then the values laid out by the event's
/// `read_format` (perf_event_open(2)), then the `sample_id` trailer.
#[derive(Debug, Clone, Copy)]
pub struct ReadRecord<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The counter's event (index into [`Reader::events`]): the one the
    /// trailer's id names, else the value's id, else the only event.
    pub event: Option<usize>,
    /// The values (one without `PERF_FORMAT_GROUP`, every member with
    /// it), each with its id (the trailer's when the format has none).
    pub values: ReadValues<'a>,
    /// Time, from the `sample_id` trailer.
    pub time: Option<u64>,
}

/// The user registers of a sample (`PERF_SAMPLE_REGS_USER`): the ABI and
/// the values of the registers of the attr's `sample_regs_user` mask, in
/// the order of its bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserRegs<'a> {
    /// [`crate::format::regs_abi`]: 0 when there are no values (a kernel
    /// thread), 2 for a 64-bit task.
    pub abi: u64,
    /// The attr's `sample_regs_user`.
    pub mask: u64,
    /// The values, u64 little-endian each.
    pub values: &'a [u8],
}

impl UserRegs<'_> {
    /// The value of register `reg` (a bit number of the mask, e.g.
    /// [`crate::format::regs_x86_64::SP`]), when the sample has it.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1 << reg) == 0 || self.abi == crate::format::regs_abi::NONE {
            return None;
        }
        let i = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize * 8;
        self.values.get(i..i + 8).map(|b| le_u64(b, 0))
    }
}

impl<'a> Sample<'a> {
    /// The `PERF_SAMPLE_READ` values (none when the sample has no read field).
    pub fn read_values(&self) -> ReadValues<'a> {
        ReadValues::new(self.read, self.read_format, self.id)
    }

    /// The call chain entries, leaf first, `PERF_CONTEXT_*` markers included.
    pub fn callchain(&self) -> impl Iterator<Item = u64> + 'a {
        self.callchain_bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
    }

    /// The CPU mode (`misc & 7`).
    pub fn cpumode(&self) -> u16 {
        self.misc & misc::CPUMODE_MASK
    }
}

/// An MMAP or MMAP2 record.
#[derive(Debug, Clone, Copy)]
pub struct Mmap<'a> {
    /// Header misc (CPU mode: kernel or user mapping).
    pub misc: u16,
    /// Process id (-1 as u32 for kernel maps).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// File offset of the start.
    pub pgoff: u64,
    /// MMAP2: protection bits.
    pub prot: Option<u32>,
    /// MMAP2: mmap flags.
    pub flags: Option<u32>,
    /// MMAP2 with a build-id instead of the inode.
    pub build_id: Option<&'a [u8]>,
    /// MMAP2 with the inode: which file was mapped (device and inode).
    pub inode: Option<MappedInode>,
    /// File name.
    pub filename: &'a [u8],
    /// Trailer.
    pub id: SampleId,
}

/// The file an MMAP2 record names by device and inode (the record's
/// `maj`, `min`, `ino`, `ino_generation`), as the kernel saw it when the
/// mapping was made: a file replaced at the same path since then has
/// another inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MappedInode {
    /// Device major number.
    pub maj: u32,
    /// Device minor number.
    pub min: u32,
    /// Inode number.
    pub ino: u64,
    /// Inode generation (0 in records made from `/proc/PID/maps`).
    pub generation: u64,
}

/// A COMM record.
#[derive(Debug, Clone, Copy)]
pub struct Comm<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The name changed because of exec.
    pub exec: bool,
    /// The new name.
    pub comm: &'a [u8],
    /// Trailer.
    pub id: SampleId,
}

/// A FORK or EXIT record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// Time.
    pub time: u64,
    /// Trailer.
    pub id: SampleId,
}

/// What [`Reader::next_in_place`] gives.
// A decoded record is the large variant: it is returned by value and
// matched at once, and boxing it would allocate for every record.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum Next<'a> {
    /// A plain sample left in the mapped data section.
    InPlace {
        /// Index into [`Reader::events`].
        event: usize,
        /// Where its record starts in [`Reader::mapped`].
        offset: usize,
        /// Its timestamp (0 without `TIME`).
        time: u64,
    },
    /// Any other record, decoded.
    Record(Record<'a>),
}

/// A decoded record.
#[derive(Debug, Clone, Copy)]
pub enum Record<'a> {
    /// A sample.
    Sample(Sample<'a>),
    /// MMAP or MMAP2.
    Mmap(Mmap<'a>),
    /// COMM.
    Comm(Comm<'a>),
    /// FORK.
    Fork(Task),
    /// EXIT.
    Exit(Task),
    /// LOST: the kernel dropped `lost` records of event `id`.
    Lost {
        /// Event id.
        id: u64,
        /// Records lost.
        lost: u64,
        /// Time, from the `sample_id` trailer (with `sample_id_all`).
        time: Option<u64>,
    },
    /// THROTTLE (`throttled` true) or UNTHROTTLE.
    Throttle {
        /// Throttle (true) or unthrottle.
        throttled: bool,
        /// Time.
        time: u64,
        /// Event id.
        id: u64,
    },
    /// LOST_SAMPLES.
    LostSamples {
        /// Samples lost.
        lost: u64,
        /// Time, from the `sample_id` trailer (with `sample_id_all`).
        time: Option<u64>,
    },
    /// FINISHED_ROUND: records before it may be sorted by time.
    FinishedRound,
    /// READ: a counter's total for one thread.
    Read(ReadRecord<'a>),
    /// Any other record: its type, misc and bytes after the header.
    Other {
        /// Record type.
        kind: u32,
        /// Header misc.
        misc: u16,
        /// The body (after the 8-byte header).
        data: &'a [u8],
    },
}

/// Counts the reader keeps while reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records seen per type (decompressed ones included; COMPRESSED
    /// records themselves counted too).
    pub records: BTreeMap<u32, u64>,
    /// Sum of LOST records' counts.
    pub lost: u64,
    /// Sum of LOST_SAMPLES records' counts.
    pub lost_samples: u64,
    /// Samples whose id matched no event (skipped, as perf does).
    pub unknown_id_samples: u64,
}

/// How the reader recovered a truncated or unfinished file, or a pipe
/// stream that ended inside a record.
///
/// A `perf record` that was killed leaves the header's data size at 0
/// (it is written when recording ends) and no feature sections; a file
/// cut short (a full disk, `head -c`, an interrupted copy) has a data
/// section or feature index that runs past the end. Either way the
/// records run from the data offset to the end of the file: the reader
/// returns every complete record and stops cleanly before an incomplete
/// last one; the feature sections that are not there are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Truncation {
    /// The header's data size is 0: the writer never finished the file.
    pub unfinished: bool,
    /// A pipe-mode stream ended inside a record (the writer was stopped).
    pub stream_cut: bool,
    /// The end of the data section the header declares, when it lies
    /// past the end of the file.
    pub declared_data_end: Option<u64>,
    /// Size of the file.
    pub file_len: u64,
    /// Bytes of an incomplete last record that were dropped (known once
    /// the records are read).
    pub partial_bytes: u64,
    /// The feature sections (ids, see [`feature`]) that could not be
    /// read because the file ends before them.
    pub missing_features: Vec<u32>,
}

/// Where the next record's bytes are.
#[derive(Clone, Copy)]
enum Loc {
    Main(usize, usize),
    Decomp(usize, usize),
}

/// Where records are read from: a window filled by `read(2)` (pipes,
/// any `Read`), or the data section of a regular file mapped in memory
/// (no copy; pages already read are dropped from the mapping as the
/// reader moves on, so the resident size does not grow with the file).
enum Window {
    Owned(Vec<u8>),
    Mapped {
        /// Shared with the [`MappedData`] handles given out.
        map: std::sync::Arc<memmap2::Mmap>,
        /// The data section in the map.
        start: usize,
        end: usize,
        /// Offset in the section up to which pages were dropped.
        released: usize,
    },
}

/// The data section of a file read through a memory map, as a handle
/// of its own ([`Reader::mapped_data`]): it derefs to the bytes that
/// [`Reader::mapped`] gives, stays valid when the reader moves on or is
/// dropped, and can be sent to other threads (which read plain samples
/// in place there, [`Next::InPlace`] offsets). Pages the reader drops
/// behind its position (not held: [`Reader::hold`]) are read back from
/// the file when touched.
#[derive(Clone)]
pub struct MappedData {
    map: std::sync::Arc<memmap2::Mmap>,
    start: usize,
    end: usize,
}

impl std::ops::Deref for MappedData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.start..self.end]
    }
}

impl MappedData {
    /// Map the pages of bytes `from..to` of the data section now (from
    /// the page cache, or read from the file), so that reading them
    /// later does not fault: what a thread running ahead of the reader
    /// does (`MADV_POPULATE_READ`, Linux 5.14; nothing before it, or off
    /// Linux). Pages the reader passes are dropped as before.
    pub fn populate(&self, from: usize, to: usize) {
        let to = to.min(self.end - self.start);
        if from >= to {
            return;
        }
        #[cfg(target_os = "linux")]
        let _ = self
            .map
            .advise_range(memmap2::Advice::PopulateRead, self.start + from, to - from);
    }
}

impl std::fmt::Debug for MappedData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedData({} bytes)", self.end - self.start)
    }
}

/// Bytes read between two drops of a mapped file's pages.
const RELEASE_STEP: usize = 2 << 20;

impl std::ops::Deref for Window {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Window::Owned(v) => v,
            Window::Mapped {
                map, start, end, ..
            } => &map[*start..*end],
        }
    }
}

/// The perf.data reader. See the module documentation.
pub struct Reader {
    src: Box<dyn Read + Send>,
    pipe: bool,
    header: Option<FileHeader>,
    events: Vec<Event>,
    /// (sample id, event index), sorted by id: looked up by a binary
    /// search, not hashed.
    id_to_event: Vec<(u64, usize)>,
    /// Each event's [`Layout`] when its samples are plain.
    layouts: Vec<Option<Layout>>,
    /// Offset in a mapped data section from which pages are kept (the
    /// caller still reads records there: [`Reader::hold`]).
    hold: Option<usize>,
    features: FileFeatures,
    buf: Window,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    /// File mode: bytes of the data section not yet read into `buf`.
    remaining: Option<u64>,
    total: Option<u64>,
    decomp: Option<zstd::stream::raw::Decoder<'static>>,
    dbuf: Vec<u8>,
    dpos: usize,
    /// Offset of the COMPRESSED record that produced the pending bytes.
    doffset: u64,
    stats: Stats,
    /// Records seen per type below 128 (the kernel's and perf's): counted
    /// here per record, put into [`Stats::records`] by [`Reader::stats`].
    kinds: Box<[u64; 128]>,
    names_from_update: HashMap<u64, String>,
    /// Units and scales from EVENT_UPDATE (`perf stat record`), by id.
    units_from_update: HashMap<u64, String>,
    scales_from_update: HashMap<u64, f64>,
    /// Set for a truncated or unfinished file: records stop cleanly at
    /// the last complete one.
    truncation: Option<Truncation>,
    /// An incomplete record was met in a truncated file: no more records.
    stopped: bool,
}

fn fmt_err(offset: u64, msg: impl Into<String>) -> Error {
    Error::format(offset, msg)
}

/// Read exactly `n` bytes at `offset`, or a format error naming `what`.
fn read_at<R: Read + Seek>(
    r: &mut R,
    offset: u64,
    n: u64,
    what: &str,
    file_len: u64,
) -> Result<Vec<u8>, Error> {
    if n > MAX_SECTION {
        return Err(fmt_err(
            offset,
            format!("{what}: implausible size {n} bytes"),
        ));
    }
    match offset.checked_add(n) {
        Some(end) if end <= file_len => {}
        _ => {
            return Err(fmt_err(
                offset,
                format!("{what} ({n} bytes) runs past the end of the file ({file_len} bytes): truncated file?"),
            ))
        }
    }
    r.seek(SeekFrom::Start(offset))?;
    let mut v = vec![0u8; n as usize];
    r.read_exact(&mut v)?;
    Ok(v)
}

/// A cursor over feature bytes with bounds checks (the feature parsers
/// here and in [`crate::topology`]).
pub(crate) struct Cur<'a> {
    b: &'a [u8],
    at: usize,
    base: u64,
}

impl<'a> Cur<'a> {
    pub(crate) fn new(b: &'a [u8], base: u64) -> Self {
        Cur { b, at: 0, base }
    }
    fn err(&self, what: &str) -> Error {
        fmt_err(
            self.base + self.at as u64,
            format!("{what} runs past the end of its section"),
        )
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        if self.b.len().saturating_sub(self.at) < n {
            return Err(self.err(what));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(le_u32(self.take(4, what)?, 0))
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(le_u64(self.take(8, what)?, 0))
    }
    /// A perf header string: u32 length then that many bytes, NUL-padded.
    pub(crate) fn string(&mut self, what: &str) -> Result<String, Error> {
        let n = self.u32(what)? as usize;
        let b = self.take(n, what)?;
        Ok(c_str(b))
    }
    pub(crate) fn rest(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }
}

/// The bytes up to the first NUL, as (lossy) UTF-8.
fn c_str(b: &[u8]) -> String {
    String::from_utf8_lossy(until_nul(b)).into_owned()
}

fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// Parse one feature body into `f`.
fn parse_feature(f: &mut FileFeatures, id: u32, body: &[u8], base: u64) -> Result<(), Error> {
    let mut c = Cur::new(body, base);
    if !f.present.contains(&id) {
        f.present.push(id);
    }
    match id {
        feature::HOSTNAME => f.hostname = Some(c.string("hostname")?),
        feature::OSRELEASE => f.osrelease = Some(c.string("osrelease")?),
        feature::VERSION => f.version = Some(c.string("version")?),
        feature::ARCH => f.arch = Some(c.string("arch")?),
        feature::CPUDESC => f.cpudesc = Some(c.string("cpudesc")?),
        feature::CPUID => f.cpuid = Some(c.string("cpuid")?),
        feature::NRCPUS => {
            let avail = c.u32("nrcpus")?;
            let online = c.u32("nrcpus")?;
            f.nrcpus = Some((online, avail));
        }
        feature::TOTAL_MEM => f.total_mem_kib = Some(c.u64("total_mem")?),
        feature::CMDLINE => {
            let n = c.u32("cmdline")?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.push(c.string("cmdline")?);
            }
            f.cmdline = Some(v);
        }
        feature::SAMPLE_TIME => {
            let a = c.u64("sample_time")?;
            let b = c.u64("sample_time")?;
            f.sample_time = Some((a, b));
        }
        feature::COMPRESSED => {
            f.compressed = Some(CompressionInfo {
                version: c.u32("compressed")?,
                kind: c.u32("compressed")?,
                level: c.u32("compressed")?,
                ratio: c.u32("compressed")?,
                mmap_len: c.u32("compressed")?,
            });
        }
        feature::BUILD_ID => {
            while c.rest() >= EVENT_HEADER_SIZE {
                let start = c.at;
                let h = EventHeader::parse(c.take(8, "build_id entry")?);
                let size = h.size as usize;
                if size < 36 {
                    return Err(fmt_err(
                        base + start as u64,
                        format!("build_id entry of {size} bytes"),
                    ));
                }
                let pid = le_u32(c.take(4, "build_id entry")?, 0) as i32;
                let idb = c.take(24, "build_id entry")?;
                let name = c.take(size - 36, "build_id entry")?;
                let len = if h.misc & misc::BUILD_ID_SIZE != 0 {
                    (idb[20] as usize).min(20)
                } else {
                    20
                };
                f.build_ids.push(BuildIdEntry {
                    pid,
                    misc: h.misc & !misc::BUILD_ID_SIZE,
                    build_id: idb[..len].to_vec(),
                    filename: c_str(name),
                });
            }
        }
        feature::EVENT_DESC => {
            let nr = c.u32("event_desc")?;
            let attr_size = c.u32("event_desc")? as usize;
            if attr_size < 8 {
                return Err(c.err("event_desc attr"));
            }
            for _ in 0..nr {
                let ab = c.take(attr_size, "event_desc attr")?;
                let attr = PerfEventAttr::parse(ab, base + c.at as u64)?;
                let nids = c.u32("event_desc")? as usize;
                let name = c.string("event_desc name")?;
                if nids > c.rest() / 8 {
                    return Err(c.err("event_desc ids"));
                }
                let mut ids = Vec::with_capacity(nids);
                for _ in 0..nids {
                    ids.push(c.u64("event_desc ids")?);
                }
                f.event_desc.push((name, attr, ids));
            }
        }
        feature::GROUP_DESC => {
            let nr = c.u32("group_desc")?;
            f.group_desc.clear();
            for _ in 0..nr {
                let name = c.string("group_desc name")?;
                let leader = c.u32("group_desc leader")?;
                let members = c.u32("group_desc members")?;
                f.group_desc.push((name, leader, members));
            }
        }
        _ => {
            f.raw.insert(id, body.to_vec());
        }
    }
    Ok(())
}

impl Reader {
    /// Open a file (or `/dev/stdin`). The records of a regular file in
    /// file mode are read through a memory map.
    pub fn open(path: &Path) -> Result<Reader, Error> {
        let file = std::fs::File::open(path)?;
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        // SAFETY: the map is only read; a file truncated by another process
        // meanwhile would fault, as it would for perf, which maps it too.
        let map = regular.then(|| unsafe { memmap2::Mmap::map(&file) }.ok());
        let mut r = Reader::new(file)?;
        if let Some(map) = map.flatten() {
            r.use_map(map);
        }
        Ok(r)
    }

    /// Read the data section from `map` (the whole file) instead of the
    /// source, when nothing was read from it yet.
    fn use_map(&mut self, map: memmap2::Mmap) {
        let (Some(size), false, 0, 0) = (self.remaining, self.pipe, self.pos, self.end) else {
            return;
        };
        let start = self.buf_offset as usize;
        let Some(end) = start.checked_add(size as usize).filter(|&e| e <= map.len()) else {
            return;
        };
        let _ = map.advise_range(memmap2::Advice::Sequential, start, end - start);
        self.buf = Window::Mapped {
            map: std::sync::Arc::new(map),
            start,
            end,
            released: 0,
        };
        self.end = end - start;
        self.remaining = Some(0);
    }

    /// Drop the pages of a mapped file that the reader has passed.
    #[inline]
    fn release_read_pages(&mut self) {
        self.release_pages(RELEASE_STEP);
    }

    /// Drop the pages passed (not held), when `step` bytes or more were
    /// read since the last drop.
    #[inline]
    fn release_pages(&mut self, step: usize) {
        let pos = self.pos.min(self.hold.unwrap_or(usize::MAX));
        if let Window::Mapped {
            map,
            start,
            released,
            ..
        } = &mut self.buf
        {
            if pos.saturating_sub(*released) < step {
                return;
            }
            let from = (*start + *released) & !4095;
            let to = (*start + pos) & !4095;
            // SAFETY: a read-only private file mapping: dropped pages are
            // read again from the file if touched; no record before `pos`
            // is borrowed any more.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
            };
            *released = pos;
        }
    }

    /// Read from any source; pipe streams are read without seeking.
    pub fn new<R: Read + Seek + Send + 'static>(mut src: R) -> Result<Reader, Error> {
        let mut first = [0u8; 16];
        read_full(&mut src, &mut first).map_err(|e| match e {
            Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => fmt_err(
                0,
                "file too short for a perf.data header (empty or truncated)",
            ),
            e => e,
        })?;
        check_magic(le_u64(&first, 0))?;
        let size = le_u64(&first, 8);
        let mut r = Reader {
            src: Box::new(std::io::empty()),
            pipe: false,
            header: None,
            events: Vec::new(),
            id_to_event: Vec::new(),
            layouts: Vec::new(),
            hold: None,
            features: FileFeatures::default(),
            buf: Window::Owned(vec![0u8; WINDOW]),
            pos: 0,
            end: 0,
            buf_offset: 0,
            remaining: None,
            total: None,
            decomp: None,
            dbuf: Vec::new(),
            dpos: 0,
            doffset: 0,
            stats: Stats::default(),
            kinds: Box::new([0; 128]),
            names_from_update: HashMap::new(),
            units_from_update: HashMap::new(),
            scales_from_update: HashMap::new(),
            truncation: None,
            stopped: false,
        };
        if size == PIPE_HEADER_SIZE {
            r.pipe = true;
            r.buf_offset = PIPE_HEADER_SIZE;
            r.src = Box::new(src);
            return Ok(r);
        }
        if size != FILE_HEADER_SIZE {
            return Err(fmt_err(
                8,
                format!("header size {size}: expected 104 (file) or 16 (pipe)"),
            ));
        }
        let file_len = src.seek(SeekFrom::End(0)).map_err(|e| {
            Error::Io(std::io::Error::new(
                e.kind(),
                format!("file-mode perf.data needs a seekable input: {e}"),
            ))
        })?;
        let hb = read_at(&mut src, 0, FILE_HEADER_SIZE, "header", file_len)?;
        let header = FileHeader::parse(&hb)?;
        r.read_attrs(&mut src, &header, file_len)?;
        if header.data.offset < FILE_HEADER_SIZE || header.data.offset > file_len {
            return Err(fmt_err(
                40,
                format!(
                    "data section offset {} is outside the file ({file_len} bytes)",
                    header.data.offset
                ),
            ));
        }
        let declared_end = header.data.end().filter(|&e| e <= file_len);
        let unfinished =
            header.data.size == 0 && !r.empty_data_with_features(&mut src, &header, file_len)?;
        let data_size = match declared_end {
            Some(_) if !unfinished => {
                if let Some(missing) = r.read_features(&mut src, &header, file_len)? {
                    r.truncation = Some(Truncation {
                        file_len,
                        missing_features: missing,
                        ..Truncation::default()
                    });
                }
                header.data.size
            }
            _ => {
                // perf record was killed (data size 0) or the file was cut
                // inside the data section: the records run to the end of
                // the file and the features are not there.
                r.truncation = Some(Truncation {
                    unfinished,
                    declared_data_end: (!unfinished)
                        .then(|| header.data.offset.saturating_add(header.data.size)),
                    file_len,
                    missing_features: header.feature_list(),
                    ..Truncation::default()
                });
                file_len - header.data.offset
            }
        };
        src.seek(SeekFrom::Start(header.data.offset))?;
        r.buf_offset = header.data.offset;
        r.remaining = Some(data_size);
        r.total = Some(data_size);
        r.header = Some(header);
        r.src = Box::new(src);
        r.apply_names();
        Ok(r)
    }

    fn read_attrs<R: Read + Seek>(
        &mut self,
        src: &mut R,
        h: &FileHeader,
        file_len: u64,
    ) -> Result<(), Error> {
        if h.attrs.size == 0 {
            return Ok(());
        }
        if h.attr_size < 16 + 8 {
            return Err(fmt_err(
                16,
                format!("attr_size {} is too small", h.attr_size),
            ));
        }
        let bytes = read_at(src, h.attrs.offset, h.attrs.size, "attrs section", file_len)?;
        let n = (h.attrs.size / h.attr_size) as usize;
        for i in 0..n {
            let at = i * h.attr_size as usize;
            let entry = &bytes[at..at + h.attr_size as usize];
            let alen = entry.len() - 16;
            let off = h.attrs.offset + at as u64;
            let attr = PerfEventAttr::parse(&entry[..alen], off)?;
            let ids_sec = Section::parse(&entry[alen..]);
            let idb = read_at(src, ids_sec.offset, ids_sec.size, "attr ids", file_len)?;
            let ids: Vec<u64> = idb.chunks_exact(8).map(|c| le_u64(c, 0)).collect();
            self.add_event(attr, entry[..alen].to_vec(), ids);
        }
        Ok(())
    }

    /// A data size of 0 is also what a complete recording without records
    /// has: it is one when the feature index that then follows the header
    /// at the data offset points at sections that lie in the file.
    fn empty_data_with_features<R: Read + Seek>(
        &mut self,
        src: &mut R,
        h: &FileHeader,
        file_len: u64,
    ) -> Result<bool, Error> {
        let list = h.feature_list();
        let index_len = 16 * list.len() as u64;
        if list.is_empty() || h.data.offset + index_len > file_len {
            return Ok(list.is_empty() && h.data.offset == file_len);
        }
        let index = read_at(src, h.data.offset, index_len, "feature index", file_len)?;
        let body_start = h.data.offset + index_len;
        Ok(index.chunks_exact(16).all(|c| {
            let sec = Section::parse(c);
            sec.offset >= body_start && sec.end().is_some_and(|e| e <= file_len)
        }))
    }

    /// Read the feature sections; `Some(missing)` when the file ends
    /// before some of them (a truncated file): those are skipped.
    fn read_features<R: Read + Seek>(
        &mut self,
        src: &mut R,
        h: &FileHeader,
        file_len: u64,
    ) -> Result<Option<Vec<u32>>, Error> {
        let list = h.feature_list();
        if list.is_empty() {
            return Ok(None);
        }
        let index_at = h
            .data
            .end()
            .ok_or_else(|| fmt_err(40, "data section overflows"))?;
        let index_len = 16 * list.len() as u64;
        if index_at + index_len > file_len {
            return Ok(Some(list));
        }
        let index = read_at(src, index_at, index_len, "feature index", file_len)?;
        for (i, f) in list.iter().enumerate() {
            let sec = Section::parse(&index[16 * i..16 * i + 16]);
            if *f == feature::TRACING_DATA || *f == feature::BPF_BTF || *f == feature::BPF_PROG_INFO
            {
                // Large and not needed to read samples: recorded as present only.
                self.features.present.push(*f);
                if *f == feature::TRACING_DATA {
                    self.features.tracing_section = Some((sec.offset, sec.size));
                }
                continue;
            }
            if sec.size <= MAX_SECTION && sec.end().is_some_and(|e| e > file_len) {
                // The file was cut here: this section and those after it are gone.
                return Ok(Some(list[i..].to_vec()));
            }
            let body = read_at(
                src,
                sec.offset,
                sec.size,
                feature::name(*f).unwrap_or("feature section"),
                file_len,
            )?;
            parse_feature(&mut self.features, *f, &body, sec.offset)?;
        }
        Ok(None)
    }

    fn add_event(&mut self, attr: PerfEventAttr, raw: Vec<u8>, ids: Vec<u64>) {
        let idx = self.events.len();
        for &id in &ids {
            match self.id_to_event.binary_search_by_key(&id, |e| e.0) {
                Ok(at) => self.id_to_event[at].1 = idx,
                Err(at) => self.id_to_event.insert(at, (id, idx)),
            }
        }
        let name = attr.default_name();
        self.layouts.push(Layout::of(&attr));
        self.events.push(Event {
            attr,
            raw,
            ids,
            name,
        });
    }

    /// Names from EVENT_DESC (matched by id, else by position) and EVENT_UPDATE.
    fn apply_names(&mut self) {
        for (i, (name, _, ids)) in self.features.event_desc.iter().enumerate() {
            let by_id = ids.iter().find_map(|&id| self.id_event(id));
            let idx = by_id
                .or_else(|| (self.features.event_desc.len() == self.events.len()).then_some(i));
            if let Some(idx) = idx {
                if !name.is_empty() {
                    self.events[idx].name = name.clone();
                }
            }
        }
        for (id, name) in &self.names_from_update {
            if let Some(idx) = self.id_event(*id) {
                self.events[idx].name = name.clone();
            }
        }
    }

    /// The unit and scale EVENT_UPDATE records gave event `event` (index
    /// into [`Reader::events`]; `perf stat record` writes them), where
    /// they did.
    pub fn unit_and_scale(&self, event: usize) -> (Option<&str>, Option<f64>) {
        let ids = self.events.get(event).map_or(&[][..], |e| &e.ids[..]);
        let unit = ids.iter().find_map(|id| self.units_from_update.get(id));
        let scale = ids.iter().find_map(|id| self.scales_from_update.get(id));
        (unit.map(String::as_str), scale.copied())
    }

    /// The events (attrs) of the file; in pipe mode this grows as
    /// HEADER_ATTR records are read.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The event (index into [`Reader::events`]) a sample id belongs to:
    /// the only event when there is one.
    pub fn event_of_id(&self, id: u64) -> Option<usize> {
        if self.events.len() == 1 {
            return Some(0);
        }
        self.id_event(id)
    }

    /// The event of sample id `id`, by a binary search.
    fn id_event(&self, id: u64) -> Option<usize> {
        let at = self.id_to_event.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(self.id_to_event[at].1)
    }

    /// The [`Layout`] of event `event`'s samples when they are plain.
    pub fn layout(&self, event: usize) -> Option<Layout> {
        self.layouts.get(event).copied().flatten()
    }

    /// The data section of a file read through a memory map (see
    /// [`Reader::open`]), which [`Next::InPlace`] offsets point into.
    pub fn mapped(&self) -> Option<&[u8]> {
        matches!(self.buf, Window::Mapped { .. }).then_some(&self.buf[..])
    }

    /// [`Reader::mapped`] as a handle that outlives this borrow of the
    /// reader (threads reading plain samples in place hold one).
    pub fn mapped_data(&self) -> Option<MappedData> {
        match &self.buf {
            Window::Mapped {
                map, start, end, ..
            } => Some(MappedData {
                map: map.clone(),
                start: *start,
                end: *end,
            }),
            Window::Owned(_) => None,
        }
    }

    /// Keep the mapped pages from `offset` (in [`Reader::mapped`]) on
    /// while reading further (records the caller will read in place);
    /// `None`: pages already read may be dropped.
    pub fn hold(&mut self, offset: Option<usize>) {
        self.hold = offset;
    }

    /// Drop every page of a mapped file read so far and not held (see
    /// [`Reader::hold`]) now: when the caller is done with them, so that
    /// what it does next (a report's tables) is not on top of them.
    /// Pages touched again are read back from the file.
    pub fn release_read(&mut self) {
        self.release_pages(1);
    }

    /// The feature sections (pipe mode: those seen so far).
    pub fn features(&self) -> &FileFeatures {
        &self.features
    }

    /// The file header (`None` in pipe mode).
    pub fn header(&self) -> Option<&FileHeader> {
        self.header.as_ref()
    }

    /// Whether this is a pipe stream.
    pub fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// Counts so far.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        for (kind, &n) in (0u32..).zip(self.kinds.iter()).filter(|(_, n)| **n > 0) {
            s.records.insert(kind, n);
        }
        s
    }

    /// Bytes of the data section (or stream) consumed so far.
    pub fn bytes_read(&self) -> u64 {
        let start = self
            .header
            .as_ref()
            .map_or(PIPE_HEADER_SIZE, |h| h.data.offset);
        (self.buf_offset + self.pos as u64).saturating_sub(start)
    }

    /// How a truncated or unfinished file was recovered (`None` for a
    /// complete file and in pipe mode). [`Truncation::partial_bytes`] is
    /// known once [`Reader::next_record`] has returned `None`.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    /// A pipe-mode stream that ends inside a record (the writer was
    /// killed, `head -c`): note it as an unfinished recording, so the
    /// records read so far stand and the incomplete one is dropped.
    fn cut_pipe(&mut self) {
        if self.pipe && self.truncation.is_none() {
            self.truncation = Some(Truncation {
                stream_cut: true,
                file_len: self.offset() + (self.end - self.pos) as u64,
                ..Truncation::default()
            });
        }
    }

    /// Whether the records run to the end of a truncated or unfinished
    /// file (so an incomplete last record ends them instead of being an error).
    fn records_cut(&self) -> bool {
        self.truncation
            .as_ref()
            .is_some_and(|t| t.unfinished || t.stream_cut || t.declared_data_end.is_some())
    }

    /// The data ends inside a record of a truncated file: drop the
    /// `n` bytes of it that are there and end the records.
    fn stop_at_partial(&mut self, n: u64) {
        if let Some(t) = &mut self.truncation {
            t.partial_bytes += n;
        }
        self.stopped = true;
    }

    /// Size of the data section (file mode), for progress.
    pub fn total_bytes(&self) -> Option<u64> {
        self.total
    }

    /// Offset in the file of the current position.
    fn offset(&self) -> u64 {
        self.buf_offset + self.pos as u64
    }

    /// Make `n` bytes available at `pos`. `Ok(false)` at a clean end
    /// (no byte left); an error if the stream ends inside the `n` bytes.
    fn fill(&mut self, n: usize) -> Result<bool, Error> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        let Window::Owned(buf) = &mut self.buf else {
            // A mapped data section ends here.
            return self.end_inside(n, self.end - self.pos);
        };
        if self.pos > 0 {
            buf.copy_within(self.pos..self.end, 0);
            self.buf_offset += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if buf.len() < n {
            buf.resize(n, 0);
        }
        while self.end < n {
            let Window::Owned(buf) = &mut self.buf else {
                break;
            };
            let mut want = buf.len() - self.end;
            if let Some(rem) = self.remaining {
                want = want.min(rem as usize);
                if want == 0 {
                    break;
                }
            }
            let got = match self.src.read(&mut buf[self.end..self.end + want]) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            self.end += got;
            if let Some(rem) = &mut self.remaining {
                *rem -= got as u64;
            }
        }
        if self.end < n {
            return self.end_inside(n, self.end);
        }
        Ok(true)
    }

    /// The data ended with `have` of the `n` bytes wanted at `pos`: a clean
    /// end (none), a truncated file's last partial record, or an error.
    fn end_inside(&mut self, n: usize, have: usize) -> Result<bool, Error> {
        if have == 0 {
            return Ok(false);
        }
        self.cut_pipe();
        if self.records_cut() {
            self.end = self.pos;
            self.stop_at_partial(have as u64);
            return Ok(false);
        }
        Err(fmt_err(
            self.offset(),
            format!(
                "the data ends inside a record ({have} of {n} bytes): truncated file{}",
                if self.pipe { " or stream" } else { "" }
            ),
        ))
    }

    /// Skip `n` bytes of payload that follow a record (AUXTRACE data,
    /// pipe-mode tracing data).
    fn skip(&mut self, n: u64) -> Result<(), Error> {
        self.skip_keeping(n, &mut Vec::new(), 0)
    }

    /// [`Reader::skip`], keeping the first `keep` bytes in `kept`.
    fn skip_keeping(&mut self, mut n: u64, kept: &mut Vec<u8>, keep: usize) -> Result<(), Error> {
        while n > 0 {
            if self.pos == self.end && !self.fill(1)? {
                self.cut_pipe();
                if self.records_cut() {
                    self.stop_at_partial(n);
                    return Ok(());
                }
                return Err(fmt_err(
                    self.offset(),
                    "the data ends inside a record's payload: truncated file",
                ));
            }
            let k = ((self.end - self.pos) as u64).min(n) as usize;
            let room = keep.saturating_sub(kept.len()).min(k);
            kept.extend_from_slice(&self.buf[self.pos..self.pos + room]);
            self.pos += k;
            n -= k as u64;
        }
        Ok(())
    }

    /// The next complete raw record from the main stream, or `None` at the end.
    fn next_main(&mut self) -> Result<Option<(usize, usize, u64)>, Error> {
        if self.stopped || !self.fill(EVENT_HEADER_SIZE)? {
            return Ok(None);
        }
        let at = self.offset();
        let h = EventHeader::parse(&self.buf[self.pos..]);
        if (h.size as usize) < EVENT_HEADER_SIZE {
            return Err(fmt_err(
                at,
                format!(
                    "record of type {} claims size {} (less than its header)",
                    h.kind, h.size
                ),
            ));
        }
        if !self.fill(h.size as usize)? {
            return Ok(None);
        }
        self.release_read_pages();
        let start = self.pos;
        self.pos += h.size as usize;
        Ok(Some((start, self.pos, at)))
    }

    /// The next complete record from decompressed data, if one is there.
    fn next_decomp(&mut self) -> Result<Option<(usize, usize)>, Error> {
        let avail = self.dbuf.len() - self.dpos;
        if avail < EVENT_HEADER_SIZE {
            return Ok(None);
        }
        let h = EventHeader::parse(&self.dbuf[self.dpos..]);
        if (h.size as usize) < EVENT_HEADER_SIZE {
            return Err(fmt_err(
                self.doffset,
                format!(
                    "compressed data holds a record of type {} with size {}",
                    h.kind, h.size
                ),
            ));
        }
        if avail < h.size as usize {
            return Ok(None);
        }
        let start = self.dpos;
        self.dpos += h.size as usize;
        Ok(Some((start, self.dpos)))
    }

    fn decompress(&mut self, start: usize, end: usize, at: u64, kind: u32) -> Result<(), Error> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let (body_start, body_end) = if kind == record_type::COMPRESSED2 {
            if end - start < 16 {
                return Err(fmt_err(at, "COMPRESSED2 record shorter than 16 bytes"));
            }
            let n = le_u64(&self.buf[start + 8..], 0) as usize;
            if n > end - start - 16 {
                return Err(fmt_err(
                    at,
                    format!("COMPRESSED2 data_size {n} exceeds the record"),
                ));
            }
            (start + 16, start + 16 + n)
        } else {
            (start + 8, end)
        };
        if self.decomp.is_none() {
            self.decomp = Some(zstd::stream::raw::Decoder::new()?);
        }
        // Drop consumed decompressed bytes before adding more.
        if self.dpos > 0 {
            self.dbuf.drain(..self.dpos);
            self.dpos = 0;
        }
        self.doffset = at;
        let dec = self.decomp.as_mut().expect("decoder");
        let mut input = InBuffer::around(&self.buf[body_start..body_end]);
        let mut chunk = vec![0u8; 256 * 1024];
        loop {
            let before = input.pos();
            let mut out = OutBuffer::around(&mut chunk[..]);
            let hint = dec
                .run(&mut input, &mut out)
                .map_err(|e| fmt_err(at, format!("zstd: corrupt compressed records: {e}")))?;
            let produced = out.pos();
            self.dbuf.extend_from_slice(&chunk[..produced]);
            if self.dbuf.len() > MAX_SECTION as usize {
                return Err(fmt_err(
                    at,
                    "compressed records expand to more than 1 GiB without completing a record: corrupt file",
                ));
            }
            if input.pos() == input.src.len() && (produced < chunk.len() || hint == 0) {
                break;
            }
            if produced == 0 && (input.pos() == input.src.len() || input.pos() == before) {
                // Everything consumed, or no progress possible: the rest
                // (if any) waits for the next compressed record.
                break;
            }
        }
        Ok(())
    }

    /// Handle a record that describes the file; returns true when consumed.
    fn consume_meta(&mut self, loc: Loc, at: u64) -> Result<bool, Error> {
        let (buf, start, end) = match loc {
            Loc::Main(s, e) => (&self.buf[..], s, e),
            Loc::Decomp(s, e) => (&self.dbuf[..], s, e),
        };
        let h = EventHeader::parse(&buf[start..]);
        let body = buf[start + 8..end].to_vec();
        match h.kind {
            record_type::HEADER_ATTR => {
                if body.len() < 8 {
                    return Err(fmt_err(at, "HEADER_ATTR record too short"));
                }
                let size = le_u32(&body, 4) as usize;
                let size = if size == 0 { 64 } else { size };
                if size > body.len() {
                    return Err(fmt_err(
                        at,
                        format!(
                            "HEADER_ATTR attr of {size} bytes in a {}-byte record",
                            body.len()
                        ),
                    ));
                }
                let attr = PerfEventAttr::parse(&body[..size], at + 8)?;
                let ids = body[size..].chunks_exact(8).map(|c| le_u64(c, 0)).collect();
                self.add_event(attr, body[..size].to_vec(), ids);
                self.apply_names();
            }
            record_type::HEADER_FEATURE => {
                if body.len() < 8 {
                    return Err(fmt_err(at, "HEADER_FEATURE record too short"));
                }
                let id = le_u64(&body, 0) as u32;
                parse_feature(&mut self.features, id, &body[8..], at + 16)?;
                self.apply_names();
            }
            record_type::EVENT_UPDATE => {
                // u64 type, u64 id, data; type 0 = unit, 1 = scale, 2 = name.
                if body.len() >= 16 {
                    let id = le_u64(&body, 8);
                    match le_u64(&body, 0) {
                        0 => _ = self.units_from_update.insert(id, c_str(&body[16..])),
                        1 if body.len() >= 24 => {
                            let scale = f64::from_le_bytes(body[16..24].try_into().expect("8"));
                            self.scales_from_update.insert(id, scale);
                        }
                        2 => {
                            self.names_from_update.insert(id, c_str(&body[16..]));
                            self.apply_names();
                        }
                        _ => {}
                    }
                }
            }
            record_type::ID_INDEX => {
                // Entries {id, idx, cpu, tid}: idx is the position of the
                // id among its event's file descriptors, not the event;
                // events are known from their attrs' ids. Checked, not used.
                if body.len() < 8 {
                    return Err(fmt_err(at, "ID_INDEX record too short"));
                }
                let nr = le_u64(&body, 0);
                if nr > (body.len() as u64 - 8) / 32 {
                    return Err(fmt_err(at, format!("ID_INDEX claims {nr} entries")));
                }
            }
            record_type::HEADER_TRACING_DATA => {
                if body.len() < 4 {
                    return Err(fmt_err(at, "TRACING_DATA record too short"));
                }
                let size = le_u32(&body, 0) as u64;
                if matches!(loc, Loc::Main(..)) {
                    let mut kept = Vec::new();
                    self.skip_keeping((size + 7) & !7, &mut kept, 64 << 20)?;
                    kept.truncate(size as usize);
                    self.features.tracing_bytes = Some(kept);
                }
                self.features.present.push(feature::TRACING_DATA);
            }
            record_type::AUXTRACE => {
                if body.len() < 8 {
                    return Err(fmt_err(at, "AUXTRACE record too short"));
                }
                let size = le_u64(&body, 0);
                if matches!(loc, Loc::Main(..)) {
                    self.skip(size)?;
                }
            }
            record_type::HEADER_BUILD_ID => {
                let mut entry = EventHeader {
                    kind: 0,
                    misc: h.misc,
                    size: h.size,
                }
                .to_bytes()
                .to_vec();
                entry.extend_from_slice(&body);
                parse_feature(&mut self.features, feature::BUILD_ID, &entry, at)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The next record, or `None` at the end of the data.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, Error> {
        Ok(self.next_record_bytes()?.map(|(r, _)| r))
    }

    /// The next record with its bytes (header included; a compressed
    /// record's are those decompressed), or `None` at the end of the
    /// data: for copying records (`perf inject`).
    pub fn next_record_bytes(&mut self) -> Result<Option<(Record<'_>, &[u8])>, Error> {
        let Some((loc, at, event)) = self.next_loc()? else {
            return Ok(None);
        };
        let data = self.loc_bytes(loc);
        self.decode(data, at, event).map(|r| Some((r, data)))
    }

    /// The next record, a plain sample of an event `in_place` marks
    /// (index: event) in a mapped file left where it is: its event,
    /// offset in [`Reader::mapped`] and time (its fields are read there
    /// with the event's [`Layout`]), with no [`Sample`] built. Any other
    /// record is decoded as [`Reader::next_record`] does (a sample that
    /// does not fit its layout too, so its error is the same).
    ///
    /// Inlined into the caller's loop: the common case (the next record
    /// a plain sample) is `next_plain`, the rest a call.
    #[inline]
    pub fn next_in_place(&mut self, in_place: &[bool]) -> Result<Option<Next<'_>>, Error> {
        if let Some((event, offset, time)) = self.next_plain(in_place) {
            return Ok(Some(Next::InPlace {
                event,
                offset,
                time,
            }));
        }
        self.next_in_place_long(in_place)
    }

    /// [`Reader::next_in_place`] for any record: read by
    /// [`Reader::next_loc`].
    fn next_in_place_long(&mut self, in_place: &[bool]) -> Result<Option<Next<'_>>, Error> {
        let Some((loc, at, event)) = self.next_loc()? else {
            return Ok(None);
        };
        if let (Loc::Main(s, e), Some(ev), Window::Mapped { .. }) = (loc, event, &self.buf) {
            let layout = self.layouts.get(ev).copied().flatten();
            if let (Some(true), Some(l)) = (in_place.get(ev), layout) {
                if let Some(time) = l.time(&self.buf[s..e]) {
                    return Ok(Some(Next::InPlace {
                        event: ev,
                        offset: s,
                        time,
                    }));
                }
            }
        }
        let data = self.loc_bytes(loc);
        self.decode(data, at, event).map(|r| Some(Next::Record(r)))
    }

    /// The common case of [`Reader::next_in_place`] in one step: a
    /// complete plain SAMPLE record next in a mapped data section, no
    /// decompressed bytes pending. Its event, offset and time, the
    /// record read; `None` (nothing read) for anything else, which
    /// [`Reader::next_loc`] then reads the long way.
    #[inline]
    fn next_plain(&mut self, in_place: &[bool]) -> Option<(usize, usize, u64)> {
        if self.stopped || self.dpos < self.dbuf.len() {
            return None;
        }
        let (pos, end) = (self.pos, self.end);
        let Window::Mapped {
            map,
            start,
            end: data_end,
            ..
        } = &self.buf
        else {
            return None;
        };
        let data = map.get(*start..*data_end)?;
        let head = data.get(pos..pos.checked_add(EVENT_HEADER_SIZE)?.min(end))?;
        if head.len() < EVENT_HEADER_SIZE {
            return None;
        }
        let h = EventHeader::parse(head);
        let size = h.size as usize;
        if h.kind != record_type::SAMPLE || size < EVENT_HEADER_SIZE || end - pos < size {
            return None;
        }
        let rec = &data[pos..pos + size];
        let ev = self.sample_event(rec)?;
        let layout = self.layouts.get(ev).copied().flatten()?;
        if !in_place.get(ev).copied().unwrap_or(false) {
            return None;
        }
        let time = layout.time(rec)?;
        self.kinds[record_type::SAMPLE as usize] += 1;
        self.release_read_pages();
        self.pos = pos + size;
        Some((ev, pos, time))
    }

    fn loc_bytes(&self, loc: Loc) -> &[u8] {
        match loc {
            Loc::Main(s, e) => &self.buf[s..e],
            Loc::Decomp(s, e) => &self.dbuf[s..e],
        }
    }

    /// The next record to give out: where its bytes are, its offset and,
    /// for a sample, its event.
    fn next_loc(&mut self) -> Result<Option<(Loc, u64, Option<usize>)>, Error> {
        let mut event = None;
        let (loc, at) = loop {
            let (loc, at) = if let Some((s, e)) = self.next_decomp()? {
                (Loc::Decomp(s, e), self.doffset)
            } else {
                match self.next_main()? {
                    Some((s, e, at)) => (Loc::Main(s, e), at),
                    None => {
                        if self.dbuf.len() > self.dpos {
                            if self.records_cut() {
                                let n = (self.dbuf.len() - self.dpos) as u64;
                                self.dpos = self.dbuf.len();
                                self.stop_at_partial(n);
                                return Ok(None);
                            }
                            return Err(fmt_err(
                                self.doffset,
                                "compressed records end inside a record: truncated file",
                            ));
                        }
                        return Ok(None);
                    }
                }
            };
            let (s, buf) = match loc {
                Loc::Main(s, _) => (s, &self.buf[..]),
                Loc::Decomp(s, _) => (s, &self.dbuf[..]),
            };
            let h = EventHeader::parse(&buf[s..]);
            match self.kinds.get_mut(h.kind as usize) {
                Some(n) => *n += 1,
                None => *self.stats.records.entry(h.kind).or_insert(0) += 1,
            }
            match h.kind {
                record_type::COMPRESSED | record_type::COMPRESSED2 => {
                    let Loc::Main(s, e) = loc else {
                        return Err(fmt_err(at, "a compressed record inside compressed data"));
                    };
                    self.decompress(s, e, at, h.kind)?;
                    continue;
                }
                record_type::SAMPLE => {
                    let data = match loc {
                        Loc::Main(s, e) => &self.buf[s..e],
                        Loc::Decomp(s, e) => &self.dbuf[s..e],
                    };
                    event = self.sample_event(data);
                    if event.is_none() {
                        self.stats.unknown_id_samples += 1;
                        continue;
                    }
                }
                record_type::LOST if h.size >= 24 => {
                    // Counts from the file: a corrupt one must not overflow.
                    self.stats.lost = self.stats.lost.saturating_add(le_u64(&buf[s + 16..], 0));
                }
                record_type::LOST_SAMPLES if h.size >= 16 => {
                    self.stats.lost_samples = self
                        .stats
                        .lost_samples
                        .saturating_add(le_u64(&buf[s + 8..], 0));
                }
                k if k >= record_type::HEADER_ATTR && self.consume_meta(loc, at)? => continue,
                _ => {}
            }
            break (loc, at);
        };
        Ok(Some((loc, at, event)))
    }

    /// The event a sample belongs to: the only one, or found by its id.
    #[inline]
    fn sample_event(&self, rec: &[u8]) -> Option<usize> {
        if self.events.len() <= 1 {
            return (!self.events.is_empty()).then_some(0);
        }
        let st = self.events[0].attr.sample_type;
        let pos = if st & sample_type::IDENTIFIER != 0 {
            0
        } else if st & sample_type::ID != 0 {
            [
                sample_type::IP,
                sample_type::TID,
                sample_type::TIME,
                sample_type::ADDR,
            ]
            .iter()
            .filter(|&&b| st & b != 0)
            .count()
        } else {
            return Some(0);
        };
        let at = 8 + pos * 8;
        let id = le_u64(rec.get(at..at + 8)?, 0);
        if id == 0 {
            return Some(0);
        }
        self.id_event(id)
    }

    /// A READ record (at least 24 bytes): its event from the trailer's id,
    /// else from the value's id read with the first event's format.
    fn read_record<'a>(&self, rec: &'a [u8]) -> ReadRecord<'a> {
        let (sid, body_end) = self.trailer(rec);
        let body = &rec[16..body_end.max(16)];
        let format = |e: Option<usize>| {
            e.and_then(|e| self.events.get(e))
                .map_or(0, |e| e.attr.read_format)
        };
        let own = sid.id.unwrap_or(0);
        let mut event = sid.id.and_then(|id| self.event_of_id(id));
        if event.is_none() {
            let guess = ReadValues::new(body, format(Some(0)), own);
            event = guess.iter().next().and_then(|v| self.event_of_id(v.id));
        }
        ReadRecord {
            pid: le_u32(rec, 8),
            tid: le_u32(rec, 12),
            event,
            values: ReadValues::new(body, format(event), own),
            time: sid.time,
        }
    }

    /// The `sample_id` trailer of a side-band record and the event it names.
    fn trailer(&self, rec: &[u8]) -> (SampleId, usize) {
        trailer_of(self.events.first().map(|e| &e.attr), rec)
    }

    fn decode<'a>(
        &'a self,
        rec: &'a [u8],
        at: u64,
        event: Option<usize>,
    ) -> Result<Record<'a>, Error> {
        let h = EventHeader::parse(rec);
        let short = |what: &str| {
            fmt_err(
                at,
                format!("{what} record of {} bytes is too short", rec.len()),
            )
        };
        Ok(match h.kind {
            record_type::SAMPLE => {
                let ev = event.or_else(|| self.sample_event(rec)).unwrap_or(0);
                Record::Sample(parse_sample(rec, ev, &self.events[ev].attr, at)?)
            }
            record_type::MMAP | record_type::MMAP2 => {
                let (id, body_end) = self.trailer(rec);
                let two = h.kind == record_type::MMAP2;
                let fixed = if two { 72 } else { 40 };
                if body_end < fixed {
                    return Err(short(if two { "MMAP2" } else { "MMAP" }));
                }
                let b = &rec[..body_end];
                let has_bid = two && h.misc & misc::MMAP_BUILD_ID != 0;
                Record::Mmap(Mmap {
                    misc: h.misc,
                    pid: le_u32(b, 8),
                    tid: le_u32(b, 12),
                    start: le_u64(b, 16),
                    len: le_u64(b, 24),
                    pgoff: le_u64(b, 32),
                    prot: two.then(|| le_u32(b, 64)),
                    flags: two.then(|| le_u32(b, 68)),
                    build_id: has_bid.then(|| &b[44..44 + (b[40] as usize).min(20)]),
                    inode: (two && !has_bid).then(|| MappedInode {
                        maj: le_u32(b, 40),
                        min: le_u32(b, 44),
                        ino: le_u64(b, 48),
                        generation: le_u64(b, 56),
                    }),
                    filename: until_nul(&b[fixed..]),
                    id,
                })
            }
            record_type::COMM => {
                let (id, body_end) = self.trailer(rec);
                if body_end < 16 {
                    return Err(short("COMM"));
                }
                Record::Comm(Comm {
                    pid: le_u32(rec, 8),
                    tid: le_u32(rec, 12),
                    exec: h.misc & misc::COMM_EXEC != 0,
                    comm: until_nul(&rec[16..body_end]),
                    id,
                })
            }
            record_type::FORK | record_type::EXIT => {
                if rec.len() < 32 {
                    return Err(short("FORK/EXIT"));
                }
                let (id, _) = self.trailer(rec);
                let t = Task {
                    pid: le_u32(rec, 8),
                    ppid: le_u32(rec, 12),
                    tid: le_u32(rec, 16),
                    ptid: le_u32(rec, 20),
                    time: le_u64(rec, 24),
                    id,
                };
                if h.kind == record_type::FORK {
                    Record::Fork(t)
                } else {
                    Record::Exit(t)
                }
            }
            record_type::LOST => {
                if rec.len() < 24 {
                    return Err(short("LOST"));
                }
                Record::Lost {
                    id: le_u64(rec, 8),
                    lost: le_u64(rec, 16),
                    time: self.trailer(rec).0.time,
                }
            }
            record_type::THROTTLE | record_type::UNTHROTTLE => {
                if rec.len() < 24 {
                    return Err(short("THROTTLE"));
                }
                Record::Throttle {
                    throttled: h.kind == record_type::THROTTLE,
                    time: le_u64(rec, 8),
                    id: le_u64(rec, 16),
                }
            }
            record_type::LOST_SAMPLES => {
                if rec.len() < 16 {
                    return Err(short("LOST_SAMPLES"));
                }
                Record::LostSamples {
                    lost: le_u64(rec, 8),
                    time: self.trailer(rec).0.time,
                }
            }
            record_type::FINISHED_ROUND => Record::FinishedRound,
            record_type::READ => {
                if rec.len() < 24 {
                    return Err(short("READ"));
                }
                Record::Read(self.read_record(rec))
            }
            kind => Record::Other {
                kind,
                misc: h.misc,
                data: &rec[8..],
            },
        })
    }
}

/// The `sample_id` trailer of side-band record `rec` (its header
/// included) as the first event's `attr` lays it out, and where the
/// record's body ends.
pub(crate) fn trailer_of(attr: Option<&PerfEventAttr>, rec: &[u8]) -> (SampleId, usize) {
    let mut id = SampleId::default();
    let Some(attr) = attr else {
        return (id, 8);
    };
    if !attr.sample_id_all() {
        return (id, rec.len());
    }
    let st = attr.sample_type;
    let bits = [
        sample_type::TID,
        sample_type::TIME,
        sample_type::ID,
        sample_type::STREAM_ID,
        sample_type::CPU,
        sample_type::IDENTIFIER,
    ];
    let n = bits.iter().filter(|&&b| st & b != 0).count() * 8;
    if rec.len() < 8 + n {
        return (id, rec.len());
    }
    let mut at = rec.len() - n;
    let body_end = at;
    for b in bits {
        if st & b == 0 {
            continue;
        }
        let v = le_u64(rec, at);
        match b {
            sample_type::TID => {
                id.pid = Some(v as u32);
                id.tid = Some((v >> 32) as u32);
            }
            sample_type::TIME => id.time = Some(v),
            sample_type::ID | sample_type::IDENTIFIER => id.id = Some(v),
            sample_type::STREAM_ID => id.stream_id = Some(v),
            sample_type::CPU => id.cpu = Some(v as u32),
            _ => {}
        }
        at += 8;
    }
    (id, body_end)
}

/// Read exactly `buf.len()` bytes.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<(), Error> {
    r.read_exact(buf)?;
    Ok(())
}

/// Decode a SAMPLE record by its event's sample_type.
pub fn parse_sample<'a>(
    rec: &'a [u8],
    event: usize,
    attr: &PerfEventAttr,
    at: u64,
) -> Result<Sample<'a>, Error> {
    let st = attr.sample_type;
    let h = EventHeader::parse(rec);
    let mut c = Cur::new(rec, at);
    c.at = 8;
    let mut s = Sample {
        event,
        misc: h.misc,
        ip: 0,
        pid: 0,
        tid: 0,
        time: 0,
        addr: 0,
        id: 0,
        stream_id: 0,
        cpu: 0,
        period: attr.sample_period,
        callchain_bytes: &[],
        raw: &[],
        weight: 0,
        ins_lat: 0,
        weight_var3: 0,
        data_src: 0,
        phys_addr: 0,
        data_page_size: 0,
        code_page_size: 0,
        read: &[],
        read_format: attr.read_format,
        user_regs: UserRegs::default(),
        user_stack: &[],
        branches: Default::default(),
    };
    let e = "SAMPLE";
    if st & sample_type::IDENTIFIER != 0 {
        s.id = c.u64(e)?;
    }
    if st & sample_type::IP != 0 {
        s.ip = c.u64(e)?;
    }
    if st & sample_type::TID != 0 {
        s.pid = c.u32(e)?;
        s.tid = c.u32(e)?;
    }
    if st & sample_type::TIME != 0 {
        s.time = c.u64(e)?;
    }
    if st & sample_type::ADDR != 0 {
        s.addr = c.u64(e)?;
    }
    if st & sample_type::ID != 0 {
        s.id = c.u64(e)?;
    }
    if st & sample_type::STREAM_ID != 0 {
        s.stream_id = c.u64(e)?;
    }
    if st & sample_type::CPU != 0 {
        s.cpu = c.u32(e)?;
        c.u32(e)?;
    }
    if st & sample_type::PERIOD != 0 {
        s.period = c.u64(e)?;
    }
    if st & sample_type::READ != 0 {
        let rf = attr.read_format;
        let per_value =
            1 + u64::from(rf & read_format::ID != 0) + u64::from(rf & read_format::LOST != 0);
        let times = u64::from(rf & read_format::TOTAL_TIME_ENABLED != 0)
            + u64::from(rf & read_format::TOTAL_TIME_RUNNING != 0);
        let words = if rf & read_format::GROUP != 0 {
            let nr = c.u64("SAMPLE read group")?;
            nr.checked_mul(per_value)
                .and_then(|x| x.checked_add(times))
                .ok_or_else(|| c.err("SAMPLE read"))?
        } else {
            per_value + times
        };
        let n = usize::try_from(words.saturating_mul(8)).map_err(|_| c.err("SAMPLE read"))?;
        let values = c.take(n, "SAMPLE read values")?;
        // With GROUP the `nr` word was read above: keep it with the values.
        s.read = if rf & read_format::GROUP != 0 {
            &rec[c.at - n - 8..c.at]
        } else {
            values
        };
    }
    if st & sample_type::CALLCHAIN != 0 {
        let nr = c.u64("SAMPLE callchain")?;
        if nr > (c.rest() / 8) as u64 {
            return Err(fmt_err(
                at,
                format!("SAMPLE call chain of {nr} entries does not fit its record"),
            ));
        }
        s.callchain_bytes = c.take(nr as usize * 8, "SAMPLE callchain")?;
    }
    if st & sample_type::RAW != 0 {
        let n = c.u32("SAMPLE raw")? as usize;
        s.raw = c.take(n, "SAMPLE raw data")?;
    }
    // Everything after this is optional to the caller: stop quietly at a
    // layout we cannot follow rather than fail the sample.
    let rest = (|| -> Result<(), Error> {
        if st & sample_type::BRANCH_STACK != 0 {
            let bst = attr.branch_sample_type;
            let (stack, n) =
                crate::branch::parse(rec.get(c.at..).unwrap_or(&[]), bst, at + c.at as u64)?;
            s.branches = stack;
            c.at += n;
        }
        if st & sample_type::REGS_USER != 0 {
            let abi = c.u64(e)?;
            let mask = attr.sample_regs_user;
            if abi != 0 {
                let values = c.take(mask.count_ones() as usize * 8, e)?;
                s.user_regs = UserRegs { abi, mask, values };
            }
        }
        if st & sample_type::STACK_USER != 0 {
            // size, the copied bytes, then the dynamic size (how many of
            // them the kernel could fill); no dynamic size when size is 0.
            let size = c.u64(e)?;
            if size != 0 {
                let n = usize::try_from(size).map_err(|_| c.err(e))?;
                let data = c.take(n, e)?;
                let dyn_size = usize::try_from(c.u64(e)?).unwrap_or(usize::MAX);
                s.user_stack = &data[..dyn_size.min(n)];
            }
        }
        if st & sample_type::WEIGHT != 0 {
            s.weight = c.u64(e)?;
        } else if st & sample_type::WEIGHT_STRUCT != 0 {
            let w = c.u64(e)?;
            s.weight = w & 0xffff_ffff;
            s.ins_lat = (w >> 32) as u16;
            s.weight_var3 = (w >> 48) as u16;
        }
        if st & sample_type::DATA_SRC != 0 {
            s.data_src = c.u64(e)?;
        }
        if st & sample_type::TRANSACTION != 0 {
            c.u64(e)?;
        }
        if st & sample_type::REGS_INTR != 0 {
            let abi = c.u64(e)?;
            if abi != 0 {
                c.take(attr.sample_regs_intr.count_ones() as usize * 8, e)?;
            }
        }
        if st & sample_type::PHYS_ADDR != 0 {
            s.phys_addr = c.u64(e)?;
        }
        if st & sample_type::AUX != 0 {
            let n = usize::try_from(c.u64(e)?).map_err(|_| c.err(e))?;
            c.take(n, e)?;
        }
        if st & sample_type::CGROUP != 0 {
            c.u64(e)?;
        }
        if st & sample_type::DATA_PAGE_SIZE != 0 {
            s.data_page_size = c.u64(e)?;
        }
        if st & sample_type::CODE_PAGE_SIZE != 0 {
            s.code_page_size = c.u64(e)?;
        }
        Ok(())
    })();
    if let Err(err) = rest {
        return Err(fmt_err(
            at,
            format!("SAMPLE record does not fit its sample_type: {err}"),
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::callchain;
    use crate::write::{Features, Writer};
    use crate::FileAttr;
    use std::io::Cursor;

    use pmx_testkit::perfdata::record as rec;

    /// A 128-byte cpu-clock attr sampling every 1000.
    fn attr(sample_type: u64, flags: u64) -> Vec<u8> {
        pmx_testkit::perfdata::attr(128, 1000, sample_type, flags)
    }

    const ST: u64 = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::PERIOD
        | sample_type::CALLCHAIN;

    fn sample(id: u64, ip: u64, chain: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [id, ip, 7 | (8 << 32), 99, 500, chain.len() as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in chain {
            b.extend_from_slice(&v.to_le_bytes());
        }
        rec(record_type::SAMPLE, misc::USER, &b)
    }

    /// A two-event file: samples for both, a COMM with a trailer.
    fn two_event_file() -> Vec<u8> {
        let flags = 1 << 18;
        let attrs = vec![
            FileAttr {
                attr: attr(ST, flags),
                ids: vec![10, 11],
                name: "a".into(),
            },
            FileAttr {
                attr: attr(ST, flags),
                ids: vec![20],
                name: "b".into(),
            },
        ];
        let mut w = Writer::create(Cursor::new(Vec::new()), attrs).unwrap();
        let mut comm = Vec::new();
        comm.extend_from_slice(&7u32.to_le_bytes());
        comm.extend_from_slice(&8u32.to_le_bytes());
        comm.extend_from_slice(b"prog\0\0\0\0");
        for v in [7u64 | (8 << 32), 42, 20] {
            comm.extend_from_slice(&v.to_le_bytes());
        }
        w.write_record(&rec(record_type::COMM, 0, &comm)).unwrap();
        w.write_record(&sample(
            10,
            0x1000,
            &[callchain::CONTEXT_USER, 0x1000, 0x2000],
        ))
        .unwrap();
        w.write_record(&sample(11, 0x1001, &[])).unwrap();
        w.write_record(&sample(20, 0x3000, &[])).unwrap();
        w.write_record(&sample(99, 0x4000, &[])).unwrap(); // unknown id
        w.finish(&Features {
            hostname: Some("h".into()),
            ..Default::default()
        })
        .unwrap()
        .into_inner()
    }

    type Summary = (Vec<(usize, u64, usize)>, Stats, Vec<String>);

    fn read_all(bytes: Vec<u8>) -> Result<Summary, Error> {
        let mut r = Reader::new(Cursor::new(bytes))?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            if let Record::Sample(s) = rec {
                out.push((s.event, s.ip, s.callchain().count()));
            }
        }
        let names = r.events().iter().map(|e| e.name.clone()).collect();
        Ok((out, r.stats().clone(), names))
    }

    #[test]
    fn events_found_by_identifier() {
        let (samples, stats, names) = read_all(two_event_file()).unwrap();
        assert_eq!(
            samples,
            vec![(0, 0x1000, 3), (0, 0x1001, 0), (1, 0x3000, 0)]
        );
        assert_eq!(stats.unknown_id_samples, 1);
        assert_eq!(names, vec!["a", "b"]);
    }

    #[test]
    fn comm_trailer_is_decoded() {
        let mut r = Reader::new(Cursor::new(two_event_file())).unwrap();
        let Some(Record::Comm(c)) = r.next_record().unwrap() else {
            panic!("COMM first")
        };
        assert_eq!(c.comm, b"prog");
        assert_eq!(
            (c.id.pid, c.id.tid, c.id.time, c.id.id),
            (Some(7), Some(8), Some(42), Some(20))
        );
    }

    /// The same records as a pipe stream, with the records zstd-compressed
    /// in two COMPRESSED records split in the middle of a record.
    #[test]
    fn pipe_mode_with_compressed_records() {
        let a = attr(ST, 1 << 18);
        let mut stream = Vec::new();
        stream.extend_from_slice(b"PERFILE2");
        stream.extend_from_slice(&16u64.to_le_bytes());
        let mut body = a.clone();
        body.extend_from_slice(&10u64.to_le_bytes());
        stream.extend_from_slice(&rec(record_type::HEADER_ATTR, 0, &body));
        let mut body = a.clone();
        body.extend_from_slice(&20u64.to_le_bytes());
        stream.extend_from_slice(&rec(record_type::HEADER_ATTR, 0, &body));
        let mut upd = Vec::new();
        upd.extend_from_slice(&2u64.to_le_bytes());
        upd.extend_from_slice(&20u64.to_le_bytes());
        upd.extend_from_slice(b"second\0\0");
        stream.extend_from_slice(&rec(record_type::EVENT_UPDATE, 0, &upd));
        let mut plain = Vec::new();
        for i in 0..50u64 {
            plain.extend_from_slice(&sample(
                if i % 2 == 0 { 10 } else { 20 },
                0x1000 + i,
                &[0x1000 + i, 0x5000],
            ));
        }
        let compressed = zstd::stream::encode_all(&plain[..], 3).unwrap();
        let cut = compressed.len() / 2;
        for part in [&compressed[..cut], &compressed[cut..]] {
            let mut p = part.to_vec();
            let pad = (8 - (p.len() + 16) % 8) % 8;
            let mut body = (p.len() as u64).to_le_bytes().to_vec();
            p.resize(p.len() + pad, 0);
            body.extend_from_slice(&p);
            stream.extend_from_slice(&rec(record_type::COMPRESSED2, 0, &body));
        }
        let (samples, stats, names) = read_all(stream).unwrap();
        assert_eq!(samples.len(), 50);
        assert_eq!(samples.iter().filter(|s| s.0 == 1).count(), 25);
        assert!(samples.iter().all(|s| s.2 == 2));
        assert_eq!(names, vec!["cpu-clock", "second"]);
        assert_eq!(stats.records[&record_type::COMPRESSED2], 2);
    }

    /// Every truncation and many corruptions give errors, never panics.
    #[test]
    fn truncated_and_garbled_input_never_panics() {
        let good = two_event_file();
        for n in 0..good.len() {
            let _ = read_all(good[..n].to_vec());
        }
        let mut seed = 0x1234_5678_9abc_def0u64;
        for _ in 0..3000 {
            let mut bad = good.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % bad.len() as u64) as usize;
                bad[at] = (seed >> 32) as u8;
            }
            let _ = read_all(bad);
        }
    }

    /// A file cut anywhere after its data offset reads every complete
    /// record before the cut and says what is missing; so does a file
    /// whose data size is 0 (perf record killed).
    #[test]
    fn truncated_files_give_the_complete_records() {
        let good = two_event_file();
        let (full, _, _) = read_all(good.clone()).unwrap();
        let h = FileHeader::parse(&good[..104]).unwrap();
        let (start, end) = (h.data.offset as usize, h.data.end().unwrap() as usize);
        // (end of record, whether it is a sample of a known event)
        let mut recs = Vec::new();
        let mut at = start;
        while at < end {
            let eh = EventHeader::parse(&good[at..]);
            let known = eh.kind == record_type::SAMPLE && le_u64(&good, at + 8) != 99;
            at += eh.size as usize;
            recs.push((at, known));
        }
        assert_eq!(recs.iter().filter(|r| r.1).count(), full.len());
        for n in start..good.len() {
            let mut r = Reader::new(Cursor::new(good[..n].to_vec())).unwrap();
            let mut got = Vec::new();
            while let Some(rec) = r.next_record().unwrap() {
                if let Record::Sample(s) = rec {
                    got.push((s.event, s.ip, s.callchain().count()));
                }
            }
            let t = r.truncation().expect("truncation noticed").clone();
            assert_eq!(t.file_len, n as u64);
            let all = h.feature_list();
            assert!(all.ends_with(&t.missing_features) && !t.missing_features.is_empty());
            assert_eq!(
                r.features().hostname.is_none(),
                t.missing_features.contains(&feature::HOSTNAME)
            );
            let complete = recs.iter().take_while(|r| r.0 <= n).count();
            let last_end = if complete == 0 {
                start
            } else {
                recs[complete - 1].0
            };
            let want = recs[..complete].iter().filter(|r| r.1).count();
            assert_eq!(got, full[..want], "cut at {n}");
            if n < end {
                assert_eq!(t.declared_data_end, Some(end as u64));
                assert_eq!(t.partial_bytes, (n - last_end) as u64, "cut at {n}");
                assert_eq!(r.bytes_read(), (last_end - start) as u64);
                assert_eq!(t.missing_features, all);
            } else {
                assert_eq!((t.declared_data_end, t.partial_bytes), (None, 0));
            }
        }
        // Data size 0: the records run to the end of the file.
        let mut killed = good[..end].to_vec();
        killed[48..56].fill(0);
        let mut r = Reader::new(Cursor::new(killed.clone())).unwrap();
        let mut n = 0;
        while let Some(rec) = r.next_record().unwrap() {
            n += matches!(rec, Record::Sample(_)) as usize;
        }
        assert_eq!(n, full.len());
        assert!(r.truncation().unwrap().unfinished);
        // Garbage after the cut is still an error with its offset.
        killed.extend_from_slice(&[1, 0, 0, 0, 0, 0, 4, 0]);
        let e = read_all(killed).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{end:#x}")) && e.contains("less than its header"),
            "{e}"
        );
        // A complete file without records also has data size 0: not truncated.
        let w = Writer::create(
            Cursor::new(Vec::new()),
            vec![FileAttr {
                attr: attr(ST, 0),
                ids: vec![1],
                name: "a".into(),
            }],
        )
        .unwrap();
        let empty = w
            .finish(&Features {
                hostname: Some("h".into()),
                ..Default::default()
            })
            .unwrap()
            .into_inner();
        let r = Reader::new(Cursor::new(empty)).unwrap();
        assert!(r.truncation().is_none());
        assert_eq!(r.features().hostname.as_deref(), Some("h"));
    }

    /// Truncated pipe streams (with compressed records) fail cleanly too.
    #[test]
    fn truncated_pipe_streams_never_panic() {
        let a = attr(ST, 1 << 18);
        let mut stream = b"PERFILE2".to_vec();
        stream.extend_from_slice(&16u64.to_le_bytes());
        let mut body = a.clone();
        body.extend_from_slice(&10u64.to_le_bytes());
        stream.extend_from_slice(&rec(record_type::HEADER_ATTR, 0, &body));
        let mut plain = Vec::new();
        for i in 0..20u64 {
            plain.extend_from_slice(&sample(10, 0x1000 + i, &[0x1000 + i]));
        }
        let z = zstd::stream::encode_all(&plain[..], 1).unwrap();
        let mut body = (z.len() as u64).to_le_bytes().to_vec();
        body.extend_from_slice(&z);
        body.resize(body.len().next_multiple_of(8), 0);
        stream.extend_from_slice(&rec(record_type::COMPRESSED2, 0, &body));
        assert_eq!(read_all(stream.clone()).unwrap().0.len(), 20);
        for n in 0..stream.len() {
            let r = read_all(stream[..n].to_vec());
            if n > 16 && n < stream.len() {
                assert!(r.is_err() || r.unwrap().0.len() < 20);
            }
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let e = read_all(b"hello world, not perf".to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a perf.data"), "{e}");
        let e = read_all(Vec::new()).unwrap_err().to_string();
        assert!(e.contains("too short"), "{e}");
        let good = two_event_file();
        let e = read_all(good[..200].to_vec()).unwrap_err().to_string();
        assert!(e.contains("truncated") || e.contains("past the end"), "{e}");
    }

    /// REGS_USER and STACK_USER as the kernel lays them out
    /// (`perf_output_sample`): abi then one u64 per mask bit; size, the
    /// bytes, dyn_size. Then a field after them (DATA_SRC) still lines up.
    #[test]
    fn user_regs_and_stack_are_decoded() {
        let st = sample_type::IP
            | sample_type::REGS_USER
            | sample_type::STACK_USER
            | sample_type::DATA_SRC;
        let mut a = attr(st, 0);
        // sample_regs_user: ax (bit 0), bp (6), sp (7), ip (8); 16 stack bytes.
        a[80..88].copy_from_slice(&0x1c1u64.to_le_bytes());
        a[88..92].copy_from_slice(&16u32.to_le_bytes());
        let ea = PerfEventAttr::parse(&a, 0).unwrap();
        let mut b = Vec::new();
        for v in [0x401000u64, 2, 11, 66, 77, 88, 16] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[0xaa; 16]);
        b.extend_from_slice(&12u64.to_le_bytes()); // dyn_size
        b.extend_from_slice(&0x5555u64.to_le_bytes()); // data_src
        let r = rec(record_type::SAMPLE, misc::USER, &b);
        let s = parse_sample(&r, 0, &ea, 0).unwrap();
        use crate::format::regs_x86_64 as x;
        assert_eq!(s.user_regs.abi, 2);
        assert_eq!(
            [x::AX, x::BP, x::SP, x::IP].map(|r| s.user_regs.get(r)),
            [Some(11), Some(66), Some(77), Some(88)]
        );
        assert_eq!(s.user_regs.get(x::BX), None);
        assert_eq!(s.user_stack, &[0xaa; 12][..]);
        assert_eq!(s.data_src, 0x5555);
        // A kernel thread: abi 0 and no values; a zero-size stack and no dyn_size.
        let mut b = Vec::new();
        for v in [0xffff_ffff_8100_0000u64, 0, 0, 0x77] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let r = rec(record_type::SAMPLE, misc::KERNEL, &b);
        let s = parse_sample(&r, 0, &ea, 0).unwrap();
        assert_eq!(
            (s.user_regs.get(x::SP), s.user_stack.len(), s.data_src),
            (None, 0, 0x77)
        );
        // A stack that runs past the record is an error, not a panic.
        let r = rec(
            record_type::SAMPLE,
            misc::USER,
            &[
                0x00, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0,
            ],
        );
        assert!(parse_sample(&r, 0, &ea, 0).is_err());
    }
}

#[cfg(test)]
mod plain_tests {
    use crate::attr::PerfEventAttr;
    use crate::format::sample_type;
    use crate::plain::Layout;
    use crate::read::parse_sample;

    fn attr(st: u64) -> PerfEventAttr {
        PerfEventAttr {
            sample_type: st,
            sample_period: 4000,
            ..Default::default()
        }
    }

    /// Every plain field agrees with the full decoder, for each subset of
    /// the plain bits; other bits have no layout.
    #[test]
    fn agrees_with_parse_sample() {
        let bits = [
            sample_type::IDENTIFIER,
            sample_type::IP,
            sample_type::TID,
            sample_type::TIME,
            sample_type::ADDR,
            sample_type::ID,
            sample_type::STREAM_ID,
            sample_type::CPU,
            sample_type::PERIOD,
            sample_type::CALLCHAIN,
        ];
        for mask in 0u32..1 << bits.len() {
            let st = (0..bits.len())
                .filter(|i| mask & (1 << i) != 0)
                .fold(0, |a, i| a | bits[i]);
            let a = attr(st);
            let l = Layout::of(&a).expect("plain");
            let mut rec = vec![9, 0, 0, 0, 2, 0, 0, 0];
            let mut v = 0x1111u64;
            for b in bits {
                if st & b == 0 {
                    continue;
                }
                if b == sample_type::CALLCHAIN {
                    rec.extend(3u64.to_le_bytes());
                    for k in 0..3u64 {
                        rec.extend((0x4000 + k).to_le_bytes());
                    }
                } else {
                    rec.extend(v.to_le_bytes());
                    v = v.wrapping_mul(0x1_0001) + 7;
                }
            }
            let size = rec.len() as u16;
            rec[6..8].copy_from_slice(&size.to_le_bytes());
            let s = parse_sample(&rec, 0, &a, 0).expect("valid");
            let p = l.read(&rec).expect("fits");
            assert_eq!(
                (p.misc, p.ip, p.pid, p.tid, p.time, p.cpu, p.period),
                (s.misc, s.ip, s.pid, s.tid, s.time, s.cpu, s.period),
                "sample_type {st:#x}"
            );
            assert_eq!(p.chain, s.callchain_bytes);
            if st & sample_type::CALLCHAIN != 0 {
                // A chain longer than its record: no fields, and an error
                // from the full decoder.
                let mut bad = rec.clone();
                let at = l.chain as usize;
                bad[at..at + 8].copy_from_slice(&4u64.to_le_bytes());
                assert!(l.read(&bad).is_none());
                assert!(parse_sample(&bad, 0, &a, 0).is_err());
            }
            assert!(l.read(&rec[..l.fixed as usize - 1]).is_none());
        }
        for other in [
            sample_type::READ,
            sample_type::RAW,
            sample_type::BRANCH_STACK,
            sample_type::STACK_USER,
            sample_type::WEIGHT,
        ] {
            assert!(Layout::of(&attr(sample_type::IP | other)).is_none());
        }
    }
}
