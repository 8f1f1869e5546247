//! The on-disk layout of perf.data: headers, record and feature numbers,
//! `perf_event_attr` decoding. Everything here is little-endian values and
//! byte offsets; nothing does I/O. The attr itself is [`crate::attr`].

use crate::Error;

/// `PERFILE2` read as a little-endian u64: the first 8 bytes of every
/// perf.data file and pipe stream written on a little-endian machine.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");
/// The same magic written by a big-endian machine.
pub const MAGIC_SWAPPED: u64 = u64::from_be_bytes(*b"PERFILE2");
/// Size of the file-mode header: magic, size, attr_size, three sections,
/// the 256-bit feature bitmap.
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of the pipe-mode header: magic and size.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// Size of `struct perf_event_header` (type u32, misc u16, size u16).
pub const EVENT_HEADER_SIZE: usize = 8;
/// Alignment of the strings in feature sections and BUILD_ID filenames.
pub const NAME_ALIGN: usize = 64;

/// `perf_event_attr` sizes by ABI version (`PERF_ATTR_SIZE_VER0`…`VER8`).
pub mod attr_size {
    /// The first published layout (up to `config1`).
    pub const VER0: u32 = 64;
    /// Adds `config2`.
    pub const VER1: u32 = 72;
    /// Adds `branch_sample_type`.
    pub const VER2: u32 = 80;
    /// Adds `sample_regs_user`, `sample_stack_user`, `clockid`.
    pub const VER3: u32 = 96;
    /// Adds `sample_regs_intr`.
    pub const VER4: u32 = 104;
    /// Adds `aux_watermark`, `sample_max_stack`.
    pub const VER5: u32 = 112;
    /// Adds `aux_sample_size`.
    pub const VER6: u32 = 120;
    /// Adds `sig_data`; the largest layout perf 6.1 accepts in a file.
    pub const VER7: u32 = 128;
    /// Adds `config3` (Linux 6.3).
    pub const VER8: u32 = 136;
}

/// Record types (`perf_event_header.type`): the kernel's (1–21) and the
/// ones perf synthesizes in files and pipes (64 and up).
pub mod record_type {
    /// A mapping of a file (or anonymous memory) into a process.
    pub const MMAP: u32 = 1;
    /// The kernel dropped records: `id`, `lost`.
    pub const LOST: u32 = 2;
    /// A process's command name changed (or it exec'ed).
    pub const COMM: u32 = 3;
    /// A task exited.
    pub const EXIT: u32 = 4;
    /// The kernel throttled the event (too many interrupts).
    pub const THROTTLE: u32 = 5;
    /// The kernel stopped throttling the event.
    pub const UNTHROTTLE: u32 = 6;
    /// A task was created.
    pub const FORK: u32 = 7;
    /// Counter values (inherit_stat).
    pub const READ: u32 = 8;
    /// A sample; layout given by the attr's sample_type.
    pub const SAMPLE: u32 = 9;
    /// MMAP with device, inode, protection and flags, or a build-id.
    pub const MMAP2: u32 = 10;
    /// New data in the AUX area.
    pub const AUX: u32 = 11;
    /// Instruction tracing started for a task.
    pub const ITRACE_START: u32 = 12;
    /// Samples dropped by the hardware or the kernel.
    pub const LOST_SAMPLES: u32 = 13;
    /// A context switch of the task.
    pub const SWITCH: u32 = 14;
    /// A context switch seen system-wide (with next/prev pid/tid).
    pub const SWITCH_CPU_WIDE: u32 = 15;
    /// Namespaces of a task.
    pub const NAMESPACES: u32 = 16;
    /// A kernel symbol was registered or unregistered (JIT, BPF).
    pub const KSYMBOL: u32 = 17;
    /// A BPF program was loaded or unloaded.
    pub const BPF_EVENT: u32 = 18;
    /// A cgroup was created.
    pub const CGROUP: u32 = 19;
    /// Kernel text was modified.
    pub const TEXT_POKE: u32 = 20;
    /// The hardware id of an AUX output.
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    /// Pipe mode: an attr and its ids.
    pub const HEADER_ATTR: u32 = 64;
    /// Pipe mode (obsolete): an event type name.
    pub const HEADER_EVENT_TYPE: u32 = 65;
    /// Pipe mode: tracing data; the payload follows the record.
    pub const HEADER_TRACING_DATA: u32 = 66;
    /// Pipe mode: a build-id entry.
    pub const HEADER_BUILD_ID: u32 = 67;
    /// All records before this one may be sorted and processed.
    pub const FINISHED_ROUND: u32 = 68;
    /// Which CPU and thread each sample id belongs to.
    pub const ID_INDEX: u32 = 69;
    /// AUX tracing configuration.
    pub const AUXTRACE_INFO: u32 = 70;
    /// AUX trace data; the payload follows the record.
    pub const AUXTRACE: u32 = 71;
    /// An AUX tracing decoder error.
    pub const AUXTRACE_ERROR: u32 = 72;
    /// perf stat: the thread map.
    pub const THREAD_MAP: u32 = 73;
    /// perf stat: the CPU map.
    pub const CPU_MAP: u32 = 74;
    /// perf stat: its configuration.
    pub const STAT_CONFIG: u32 = 75;
    /// perf stat: one counter value.
    pub const STAT: u32 = 76;
    /// perf stat: end of an interval.
    pub const STAT_ROUND: u32 = 77;
    /// An event's name, unit, scale or CPUs (pipe mode).
    pub const EVENT_UPDATE: u32 = 78;
    /// Time conversion parameters (TSC to perf time).
    pub const TIME_CONV: u32 = 79;
    /// Pipe mode: one feature section.
    pub const HEADER_FEATURE: u32 = 80;
    /// zstd-compressed records.
    pub const COMPRESSED: u32 = 81;
    /// The synthesized records that describe the initial state end here.
    pub const FINISHED_INIT: u32 = 82;
    /// zstd-compressed records with an explicit data size (perf 6.15+).
    pub const COMPRESSED2: u32 = 83;

    /// The name perf uses for a record type (`"SAMPLE"`, `"MMAP2"`…), or
    /// `None` for a number this crate does not know.
    pub fn name(t: u32) -> Option<&'static str> {
        Some(match t {
            MMAP => "MMAP",
            LOST => "LOST",
            COMM => "COMM",
            EXIT => "EXIT",
            THROTTLE => "THROTTLE",
            UNTHROTTLE => "UNTHROTTLE",
            FORK => "FORK",
            READ => "READ",
            SAMPLE => "SAMPLE",
            MMAP2 => "MMAP2",
            AUX => "AUX",
            ITRACE_START => "ITRACE_START",
            LOST_SAMPLES => "LOST_SAMPLES",
            SWITCH => "SWITCH",
            SWITCH_CPU_WIDE => "SWITCH_CPU_WIDE",
            NAMESPACES => "NAMESPACES",
            KSYMBOL => "KSYMBOL",
            BPF_EVENT => "BPF_EVENT",
            CGROUP => "CGROUP",
            TEXT_POKE => "TEXT_POKE",
            AUX_OUTPUT_HW_ID => "AUX_OUTPUT_HW_ID",
            HEADER_ATTR => "ATTR",
            HEADER_EVENT_TYPE => "EVENT_TYPE",
            HEADER_TRACING_DATA => "TRACING_DATA",
            HEADER_BUILD_ID => "BUILD_ID",
            FINISHED_ROUND => "FINISHED_ROUND",
            ID_INDEX => "ID_INDEX",
            AUXTRACE_INFO => "AUXTRACE_INFO",
            AUXTRACE => "AUXTRACE",
            AUXTRACE_ERROR => "AUXTRACE_ERROR",
            THREAD_MAP => "THREAD_MAP",
            CPU_MAP => "CPU_MAP",
            STAT_CONFIG => "STAT_CONFIG",
            STAT => "STAT",
            STAT_ROUND => "STAT_ROUND",
            EVENT_UPDATE => "EVENT_UPDATE",
            TIME_CONV => "TIME_CONV",
            HEADER_FEATURE => "FEATURE",
            COMPRESSED => "COMPRESSED",
            FINISHED_INIT => "FINISHED_INIT",
            COMPRESSED2 => "COMPRESSED2",
            _ => return None,
        })
    }
}

/// Bits of `perf_event_attr.sample_type`: which fields a SAMPLE record has.
/// perf's names of the generic hardware events, by `config`
/// (`PERF_COUNT_HW_*`).
pub const HARDWARE_EVENT_NAMES: &[&str] = &[
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

/// perf's names of the software events, by `config` (`PERF_COUNT_SW_*`).
pub const SOFTWARE_EVENT_NAMES: &[&str] = &[
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
];

pub mod sample_type {
    /// Instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// pid and tid.
    pub const TID: u64 = 1 << 1;
    /// Timestamp.
    pub const TIME: u64 = 1 << 2;
    /// Data address.
    pub const ADDR: u64 = 1 << 3;
    /// Counter values (read_format).
    pub const READ: u64 = 1 << 4;
    /// Call chain.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// Event id (position depends on the other bits).
    pub const ID: u64 = 1 << 6;
    /// CPU number.
    pub const CPU: u64 = 1 << 7;
    /// Sampling period.
    pub const PERIOD: u64 = 1 << 8;
    /// Stream id (the id of the group leader or inherited parent).
    pub const STREAM_ID: u64 = 1 << 9;
    /// Raw tracepoint or PMU data.
    pub const RAW: u64 = 1 << 10;
    /// Last branch records.
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// User registers.
    pub const REGS_USER: u64 = 1 << 12;
    /// A copy of the user stack.
    pub const STACK_USER: u64 = 1 << 13;
    /// Weight (latency), one u64.
    pub const WEIGHT: u64 = 1 << 14;
    /// Data source of a memory access.
    pub const DATA_SRC: u64 = 1 << 15;
    /// Event id at a fixed position: first in a sample, last in a trailer.
    pub const IDENTIFIER: u64 = 1 << 16;
    /// Transaction flags (TSX).
    pub const TRANSACTION: u64 = 1 << 17;
    /// Registers at the interrupt.
    pub const REGS_INTR: u64 = 1 << 18;
    /// Physical data address.
    pub const PHYS_ADDR: u64 = 1 << 19;
    /// AUX area snapshot.
    pub const AUX: u64 = 1 << 20;
    /// cgroup id.
    pub const CGROUP: u64 = 1 << 21;
    /// Page size of the data address.
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    /// Page size of the code address.
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    /// Weight as a struct (var1/var2/var3), same size as WEIGHT.
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// Bits of `perf_event_attr.read_format`.
pub mod read_format {
    /// time_enabled follows the value(s).
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// time_running follows.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// Each value is followed by its id.
    pub const ID: u64 = 1 << 2;
    /// All the group's values.
    pub const GROUP: u64 = 1 << 3;
    /// Each value is followed by a lost count.
    pub const LOST: u64 = 1 << 4;
}

/// Bits of `perf_event_attr.branch_sample_type` (`PERF_SAMPLE_BRANCH_*`).
pub mod branch_sample_type {
    /// Branches taken in user space.
    pub const USER: u64 = 1 << 0;
    /// Branches taken in the kernel.
    pub const KERNEL: u64 = 1 << 1;
    /// Branches taken in the hypervisor.
    pub const HV: u64 = 1 << 2;
    /// Any branch type.
    pub const ANY: u64 = 1 << 3;
    /// Any call (direct, indirect, far jumps).
    pub const ANY_CALL: u64 = 1 << 4;
    /// Any return.
    pub const ANY_RETURN: u64 = 1 << 5;
    /// Indirect calls.
    pub const IND_CALL: u64 = 1 << 6;
    /// Transaction aborts.
    pub const ABORT_TX: u64 = 1 << 7;
    /// Branches in a transaction.
    pub const IN_TX: u64 = 1 << 8;
    /// Branches outside a transaction.
    pub const NO_TX: u64 = 1 << 9;
    /// Conditional branches.
    pub const COND: u64 = 1 << 10;
    /// The call stack (Intel's LBR call-stack mode: the stack of calls
    /// not yet returned from, what `--call-graph lbr` records).
    pub const CALL_STACK: u64 = 1 << 11;
    /// Indirect jumps.
    pub const IND_JUMP: u64 = 1 << 12;
    /// Direct calls.
    pub const CALL: u64 = 1 << 13;
    /// No branch flags (mispredict, in_tx…) in the entries.
    pub const NO_FLAGS: u64 = 1 << 14;
    /// No cycle counts in the entries.
    pub const NO_CYCLES: u64 = 1 << 15;
    /// Save the branch type in the entries (`save_type`).
    pub const TYPE_SAVE: u64 = 1 << 16;
    /// The branch stack starts with a `hw_idx` u64 (changes the layout).
    pub const HW_INDEX: u64 = 1 << 17;
    /// Save the privilege level in the entries.
    pub const PRIV_SAVE: u64 = 1 << 18;
    /// Per-entry counts of the group's events follow the entries (changes
    /// the layout; Linux 6.8).
    pub const COUNTERS: u64 = 1 << 19;
}

/// x86-64 user registers as `PERF_SAMPLE_REGS_USER` numbers them
/// (`arch/x86/include/uapi/asm/perf_regs.h`): bit `n` of
/// `sample_regs_user` asks for register `n`, and a sample holds the
/// asked registers in the order of their bits.
pub mod regs_x86_64 {
    /// `rax`.
    pub const AX: u32 = 0;
    /// `rbx`.
    pub const BX: u32 = 1;
    /// `rcx`.
    pub const CX: u32 = 2;
    /// `rdx`.
    pub const DX: u32 = 3;
    /// `rsi`.
    pub const SI: u32 = 4;
    /// `rdi`.
    pub const DI: u32 = 5;
    /// `rbp`, the frame pointer.
    pub const BP: u32 = 6;
    /// `rsp`, the stack pointer.
    pub const SP: u32 = 7;
    /// `rip`, the instruction pointer.
    pub const IP: u32 = 8;
    /// `rflags`.
    pub const FLAGS: u32 = 9;
    /// `r8` (`r9`…`r15` follow, 17…23).
    pub const R8: u32 = 16;
    /// `r15`.
    pub const R15: u32 = 23;
    /// The registers `perf record --call-graph dwarf` asks for on x86-64
    /// (perf's `PERF_REGS_MASK`): `ax`…`r15` (bits 0–23) without the
    /// segment registers `ds`, `es`, `fs`, `gs` (bits 12–15), which the
    /// kernel refuses for 64-bit tasks.
    pub const DWARF_MASK: u64 = 0xff_0fff;
}

/// `sample_regs_user` ABI values (`PERF_SAMPLE_REGS_ABI_*`): the first
/// u64 of a REGS_USER field.
pub mod regs_abi {
    /// No registers follow (the sample came from a kernel thread).
    pub const NONE: u64 = 0;
    /// A 32-bit task.
    pub const ABI_32: u64 = 1;
    /// A 64-bit task.
    pub const ABI_64: u64 = 2;
}

/// `perf_event_header.misc` values.
pub mod misc {
    /// Mask of the CPU mode field.
    pub const CPUMODE_MASK: u16 = 7;
    /// Unknown mode.
    pub const CPUMODE_UNKNOWN: u16 = 0;
    /// Kernel.
    pub const KERNEL: u16 = 1;
    /// User space.
    pub const USER: u16 = 2;
    /// Hypervisor.
    pub const HYPERVISOR: u16 = 3;
    /// Guest kernel.
    pub const GUEST_KERNEL: u16 = 4;
    /// Guest user space.
    pub const GUEST_USER: u16 = 5;
    /// MMAP/MMAP2: the mapping is data, not executable.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// COMM: the name changed because of exec.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// MMAP2: the record carries a build-id instead of device/inode.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// BUILD_ID entries: the size byte after the 20 id bytes is valid.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
    /// SAMPLE: the ip is exact (precise event).
    pub const EXACT_IP: u16 = 1 << 14;
    /// A synthesized MMAP whose `/proc/PID/maps` read timed out.
    pub const PROC_MAP_PARSE_TIMEOUT: u16 = 1 << 12;
}

/// Call chain context markers: values in a call chain that say which
/// context the following addresses belong to.
pub mod callchain {
    /// Hypervisor frames follow.
    pub const CONTEXT_HV: u64 = (-32i64) as u64;
    /// Kernel frames follow.
    pub const CONTEXT_KERNEL: u64 = (-128i64) as u64;
    /// User frames follow.
    pub const CONTEXT_USER: u64 = (-512i64) as u64;
    /// Guest frames follow.
    pub const CONTEXT_GUEST: u64 = (-2048i64) as u64;
    /// Guest kernel frames follow.
    pub const CONTEXT_GUEST_KERNEL: u64 = (-2176i64) as u64;
    /// Guest user frames follow.
    pub const CONTEXT_GUEST_USER: u64 = (-2560i64) as u64;
    /// Every value at or above this one is a marker, not an address.
    pub const CONTEXT_MAX: u64 = (-4095i64) as u64;

    /// Whether a value at or above [`CONTEXT_MAX`] is one of the markers
    /// the kernel writes. Any other (e.g. `u64::MAX` from a corrupt frame
    /// pointer walk) means the chain is corrupt: perf discards the whole
    /// chain of such a sample, and so do pmx's readers.
    pub fn is_context(v: u64) -> bool {
        matches!(
            v,
            CONTEXT_HV
                | CONTEXT_KERNEL
                | CONTEXT_USER
                | CONTEXT_GUEST
                | CONTEXT_GUEST_KERNEL
                | CONTEXT_GUEST_USER
        )
    }
}

/// Feature section numbers: bit N of the header's feature bitmap says
/// section N is present.
pub mod feature {
    /// Tracepoint formats (for tracepoint events).
    pub const TRACING_DATA: u32 = 1;
    /// Build-ids of the binaries with samples.
    pub const BUILD_ID: u32 = 2;
    /// Host name.
    pub const HOSTNAME: u32 = 3;
    /// Kernel release (`uname -r`).
    pub const OSRELEASE: u32 = 4;
    /// Version of the tool that wrote the file.
    pub const VERSION: u32 = 5;
    /// Machine architecture (`uname -m`).
    pub const ARCH: u32 = 6;
    /// CPUs available and online.
    pub const NRCPUS: u32 = 7;
    /// CPU model name.
    pub const CPUDESC: u32 = 8;
    /// CPU identifier (`GenuineIntel,6,85,4`).
    pub const CPUID: u32 = 9;
    /// Total memory in KiB.
    pub const TOTAL_MEM: u32 = 10;
    /// The command line that made the file.
    pub const CMDLINE: u32 = 11;
    /// Each event's attr, name and ids.
    pub const EVENT_DESC: u32 = 12;
    /// Cores and threads siblings.
    pub const CPU_TOPOLOGY: u32 = 13;
    /// NUMA nodes.
    pub const NUMA_TOPOLOGY: u32 = 14;
    /// The file has branch stacks.
    pub const BRANCH_STACK: u32 = 15;
    /// PMU names and type numbers.
    pub const PMU_MAPPINGS: u32 = 16;
    /// Event groups.
    pub const GROUP_DESC: u32 = 17;
    /// AUX tracing index.
    pub const AUXTRACE: u32 = 18;
    /// perf stat file.
    pub const STAT: u32 = 19;
    /// CPU caches.
    pub const CACHE: u32 = 20;
    /// Times of the first and last sample.
    pub const SAMPLE_TIME: u32 = 21;
    /// Memory topology.
    pub const MEM_TOPOLOGY: u32 = 22;
    /// The clock of the timestamps.
    pub const CLOCKID: u32 = 23;
    /// Directory format.
    pub const DIR_FORMAT: u32 = 24;
    /// BPF programs.
    pub const BPF_PROG_INFO: u32 = 25;
    /// BPF type information.
    pub const BPF_BTF: u32 = 26;
    /// Records are zstd-compressed: version, type, level, ratio, mmap size.
    pub const COMPRESSED: u32 = 27;
    /// PMU capabilities of the CPU PMU.
    pub const CPU_PMU_CAPS: u32 = 28;
    /// Reference clock data.
    pub const CLOCK_DATA: u32 = 29;
    /// Hybrid CPU topology.
    pub const HYBRID_TOPOLOGY: u32 = 30;
    /// PMU capabilities of every PMU.
    pub const PMU_CAPS: u32 = 31;
    /// One past the highest feature number the bitmap can hold.
    pub const MAX_BITS: u32 = 256;

    /// perf's name for a feature (`"hostname"`, `"event_desc"`…).
    pub fn name(f: u32) -> Option<&'static str> {
        Some(match f {
            TRACING_DATA => "tracing_data",
            BUILD_ID => "build_id",
            HOSTNAME => "hostname",
            OSRELEASE => "osrelease",
            VERSION => "version",
            ARCH => "arch",
            NRCPUS => "nrcpus",
            CPUDESC => "cpudesc",
            CPUID => "cpuid",
            TOTAL_MEM => "total_mem",
            CMDLINE => "cmdline",
            EVENT_DESC => "event_desc",
            CPU_TOPOLOGY => "cpu_topology",
            NUMA_TOPOLOGY => "numa_topology",
            BRANCH_STACK => "branch_stack",
            PMU_MAPPINGS => "pmu_mappings",
            GROUP_DESC => "group_desc",
            AUXTRACE => "auxtrace",
            STAT => "stat",
            CACHE => "cache",
            SAMPLE_TIME => "sample_time",
            MEM_TOPOLOGY => "mem_topology",
            CLOCKID => "clockid",
            DIR_FORMAT => "dir_format",
            BPF_PROG_INFO => "bpf_prog_info",
            BPF_BTF => "bpf_btf",
            COMPRESSED => "compressed",
            CPU_PMU_CAPS => "cpu_pmu_caps",
            CLOCK_DATA => "clock_data",
            HYBRID_TOPOLOGY => "hybrid_topology",
            PMU_CAPS => "pmu_caps",
            _ => return None,
        })
    }
}

/// A `perf_file_section`: where something is in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Section {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Section {
    /// Decode from 16 bytes.
    pub fn parse(b: &[u8]) -> Section {
        Section {
            offset: le_u64(b, 0),
            size: le_u64(b, 8),
        }
    }

    /// Encode as 16 bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..].copy_from_slice(&self.size.to_le_bytes());
        out
    }

    /// One past the last byte, or `None` on overflow.
    pub fn end(self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// The file-mode header (`struct perf_file_header`, 104 bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHeader {
    /// Size of this header as written (104).
    pub size: u64,
    /// Size of one entry of the attrs section: the attr plus a 16-byte ids section.
    pub attr_size: u64,
    /// The attrs section.
    pub attrs: Section,
    /// The data section (the records).
    pub data: Section,
    /// The obsolete event_types section (zero in modern files).
    pub event_types: Section,
    /// The 256-bit feature bitmap, bit N in word N/64.
    pub features: [u64; 4],
}

impl FileHeader {
    /// Decode the 104 header bytes (magic included). The caller has checked
    /// the magic.
    pub fn parse(b: &[u8]) -> Result<FileHeader, Error> {
        if b.len() < FILE_HEADER_SIZE as usize {
            return Err(Error::format(
                0,
                "file too short for a perf.data header (104 bytes)",
            ));
        }
        let magic = le_u64(b, 0);
        check_magic(magic)?;
        let mut features = [0u64; 4];
        for (i, w) in features.iter_mut().enumerate() {
            *w = le_u64(b, 72 + 8 * i);
        }
        Ok(FileHeader {
            size: le_u64(b, 8),
            attr_size: le_u64(b, 16),
            attrs: Section::parse(&b[24..40]),
            data: Section::parse(&b[40..56]),
            event_types: Section::parse(&b[56..72]),
            features,
        })
    }

    /// Encode as 104 bytes, magic included.
    pub fn to_bytes(&self) -> [u8; FILE_HEADER_SIZE as usize] {
        let mut out = [0u8; FILE_HEADER_SIZE as usize];
        out[..8].copy_from_slice(&MAGIC.to_le_bytes());
        out[8..16].copy_from_slice(&self.size.to_le_bytes());
        out[16..24].copy_from_slice(&self.attr_size.to_le_bytes());
        out[24..40].copy_from_slice(&self.attrs.to_bytes());
        out[40..56].copy_from_slice(&self.data.to_bytes());
        out[56..72].copy_from_slice(&self.event_types.to_bytes());
        for (i, w) in self.features.iter().enumerate() {
            out[72 + 8 * i..80 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Whether feature `f` is present.
    pub fn has_feature(&self, f: u32) -> bool {
        f < feature::MAX_BITS && self.features[(f / 64) as usize] & (1 << (f % 64)) != 0
    }

    /// Mark feature `f` present.
    pub fn set_feature(&mut self, f: u32) {
        if f < feature::MAX_BITS {
            self.features[(f / 64) as usize] |= 1 << (f % 64);
        }
    }

    /// The present features, in bit order (the order of their index entries).
    pub fn feature_list(&self) -> Vec<u32> {
        (0..feature::MAX_BITS)
            .filter(|&f| self.has_feature(f))
            .collect()
    }
}

/// Check the magic: `PERFILE2` little-endian. Big-endian files and the
/// pre-2010 `PERFFILE` format get a clear error.
pub fn check_magic(magic: u64) -> Result<(), Error> {
    if magic == MAGIC {
        Ok(())
    } else if magic == MAGIC_SWAPPED {
        Err(Error::format(
            0,
            "big-endian perf.data (written on a big-endian machine): not supported",
        ))
    } else if &magic.to_le_bytes() == b"PERFFILE" {
        Err(Error::format(
            0,
            "perf.data version 1 (PERFFILE, before 2010): not supported",
        ))
    } else {
        Err(Error::format(0, "not a perf.data file (no PERFILE2 magic)"))
    }
}

/// `struct perf_event_header`: the 8 bytes at the start of every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    /// Record type ([`record_type`]).
    pub kind: u32,
    /// Flags ([`misc`]); the low 3 bits are the CPU mode.
    pub misc: u16,
    /// Size of the whole record, header included.
    pub size: u16,
}

impl EventHeader {
    /// Decode from the first 8 bytes of `b` (which must hold 8 bytes).
    #[inline]
    pub fn parse(b: &[u8]) -> EventHeader {
        EventHeader {
            kind: le_u32(b, 0),
            misc: u16::from_le_bytes([b[4], b[5]]),
            size: u16::from_le_bytes([b[6], b[7]]),
        }
    }

    /// Encode as 8 bytes.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&self.kind.to_le_bytes());
        out[4..6].copy_from_slice(&self.misc.to_le_bytes());
        out[6..].copy_from_slice(&self.size.to_le_bytes());
        out
    }
}

/// Little-endian u64 at `at` (the caller guarantees 8 bytes).
#[inline]
pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Little-endian u32 at `at` (the caller guarantees 4 bytes).
#[inline]
pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Round `n` up to a multiple of `align` (a power of two).
pub fn align_up(n: usize, align: usize) -> usize {
    (n + align - 1) & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let mut h = FileHeader {
            size: FILE_HEADER_SIZE,
            attr_size: 144,
            attrs: Section {
                offset: 104,
                size: 144,
            },
            data: Section {
                offset: 248,
                size: 1000,
            },
            event_types: Section::default(),
            features: [0; 4],
        };
        h.set_feature(feature::HOSTNAME);
        h.set_feature(feature::PMU_CAPS);
        h.set_feature(200);
        let b = h.to_bytes();
        assert_eq!(&b[..8], b"PERFILE2");
        let back = FileHeader::parse(&b).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.feature_list(), vec![3, 31, 200]);
        assert!(!back.has_feature(4));
    }

    #[test]
    fn magic_errors() {
        assert!(check_magic(MAGIC).is_ok());
        let e = check_magic(MAGIC_SWAPPED).unwrap_err().to_string();
        assert!(e.contains("big-endian"), "{e}");
        let e = check_magic(u64::from_le_bytes(*b"PERFFILE"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 1"), "{e}");
        let e = check_magic(0).unwrap_err().to_string();
        assert!(e.contains("not a perf.data"), "{e}");
    }
}
