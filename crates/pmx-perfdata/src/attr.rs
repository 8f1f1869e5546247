//! `struct perf_event_attr`: the one declaration of its fields in pmx.
//!
//! [`PerfEventAttr`] is the kernel's struct, field for field and byte for
//! byte (`include/uapi/linux/perf_event.h`, `PERF_ATTR_SIZE_VER8`: 136
//! bytes, `repr(C)`, no padding; the layout is asserted at compile time).
//! Every user of the attr's bytes goes through it:
//!
//! - **perf.data**: the attrs section, `HEADER_ATTR` records and the
//!   EVENT_DESC feature decode into it ([`PerfEventAttr::parse`], which
//!   takes any of the sizes perf ever wrote); writers store
//!   [`PerfEventAttr::to_bytes`] (cut to the attr's own `size`).
//! - **`perf_event_open(2)`**: `pmx-perf` builds it from its `Attr` (the
//!   one builder form: typed sample rate, wakeup and flags) and passes a
//!   pointer to it to the kernel.
//! - **libpfm** (`pmx-events`): `pfm_get_os_event_encoding` fills one in.
//!
//! It lives here, in the lowest crate that needs it (this crate depends on
//! no other pmx crate; `pmx-perf` and `pmx-events` point down to it), so
//! that the file format, the syscall and libpfm's FFI share one layout.
//! `pmx-archcheck` refuses any other struct that declares the attr's
//! distinctive fields (`sample_type`, `read_format`, `wakeup_events`, …)
//! outside this struct and `pmx_perf::Attr`.
//!
//! Unions are represented by one member, named for the kernel's first one
//! (`sample_period` also holds `sample_freq` when [`flag::FREQ`] is set;
//! `wakeup_events` also `wakeup_watermark`; `config1`/`config2` also
//! `bp_addr`/`bp_len`); the bitfield word is [`PerfEventAttr::flags`],
//! its bits in [`flag`] and read by the accessors.
//!
//! [`FileAttr`] is one entry of a file's attrs: the attr's bytes as
//! written (kept raw, so that a newer perf's larger attr survives a copy),
//! its sample ids and its name; [`FileAttr::decode`] gives the struct.

use crate::format::{attr_size, le_u32, le_u64, HARDWARE_EVENT_NAMES, SOFTWARE_EVENT_NAMES};
use crate::Error;
use std::mem::{offset_of, size_of};

/// `struct perf_event_attr`, field for field. Decoded from a shorter
/// (older) attr, the fields past its end are zero; bytes past the end of
/// this layout (a newer perf) are ignored.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `type`: the PMU (0 hardware, 1 software, 2 tracepoint, 3 cache,
    /// 4 raw, 5 breakpoint, or a dynamic PMU's number).
    pub type_: u32,
    /// The size of the struct the writer knew (`PERF_ATTR_SIZE_VER*`).
    pub size: u32,
    /// Event selection.
    pub config: u64,
    /// `sample_period`, or `sample_freq` when [`flag::FREQ`] is set (a
    /// union in the kernel's struct; see [`PerfEventAttr::period`] and
    /// [`PerfEventAttr::sample_freq`]).
    pub sample_period: u64,
    /// Which fields samples carry ([`crate::format::sample_type`]).
    pub sample_type: u64,
    /// Layout of counter values ([`crate::format::read_format`]).
    pub read_format: u64,
    /// The bitfield word (disabled, inherit, …): bits in [`flag`], read by
    /// the accessors.
    pub flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` when [`flag::WATERMARK`] is
    /// set (a union).
    pub wakeup_events: u32,
    /// Breakpoint type (`HW_BREAKPOINT_*`).
    pub bp_type: u32,
    /// `config1`, also `bp_addr`, `kprobe_func`, `uprobe_path`.
    pub config1: u64,
    /// `config2`, also `bp_len`, `kprobe_addr`, `probe_offset`.
    pub config2: u64,
    /// Branch sampling filter and format.
    pub branch_sample_type: u64,
    /// Mask of the user registers sampled.
    pub sample_regs_user: u64,
    /// Bytes of user stack sampled.
    pub sample_stack_user: u32,
    /// The clock of the timestamps with `use_clockid`.
    pub clockid: i32,
    /// Mask of the registers sampled at the interrupt.
    pub sample_regs_intr: u64,
    /// AUX watermark.
    pub aux_watermark: u32,
    /// Maximum call chain depth.
    pub sample_max_stack: u16,
    /// Reserved (`__reserved_2`).
    pub reserved_2: u16,
    /// AUX sample size.
    pub aux_sample_size: u32,
    /// Reserved (`__reserved_3`).
    pub reserved_3: u32,
    /// Signal data (sigtrap).
    pub sig_data: u64,
    /// `config3` (Linux 6.3).
    pub config3: u64,
}

// The layout is the ABI: any drift is a compile error, not a kernel EINVAL.
const _: () = {
    assert!(size_of::<PerfEventAttr>() == attr_size::VER8 as usize);
    assert!(offset_of!(PerfEventAttr, config) == 8);
    assert!(offset_of!(PerfEventAttr, read_format) == 32);
    assert!(offset_of!(PerfEventAttr, flags) == 40);
    assert!(offset_of!(PerfEventAttr, bp_type) == 52);
    assert!(offset_of!(PerfEventAttr, config1) == 56);
    assert!(offset_of!(PerfEventAttr, config2) == 64);
    assert!(offset_of!(PerfEventAttr, branch_sample_type) == 72);
    assert!(offset_of!(PerfEventAttr, sample_regs_intr) == 96);
    assert!(offset_of!(PerfEventAttr, aux_watermark) == 104);
    assert!(offset_of!(PerfEventAttr, sig_data) == 120);
    assert!(offset_of!(PerfEventAttr, config3) == 128);
};

/// Bits of [`PerfEventAttr::flags`] (the kernel's bitfield, in order).
pub mod flag {
    /// `disabled`.
    pub const DISABLED: u64 = 1 << 0;
    /// `inherit`.
    pub const INHERIT: u64 = 1 << 1;
    /// `pinned`.
    pub const PINNED: u64 = 1 << 2;
    /// `exclusive`.
    pub const EXCLUSIVE: u64 = 1 << 3;
    /// `exclude_user`.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// `exclude_kernel`.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// `exclude_hv`.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// `exclude_idle`.
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    /// `mmap`.
    pub const MMAP: u64 = 1 << 8;
    /// `comm`.
    pub const COMM: u64 = 1 << 9;
    /// `freq`: [`super::PerfEventAttr::sample_period`] is a frequency.
    pub const FREQ: u64 = 1 << 10;
    /// `enable_on_exec`.
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// `task`.
    pub const TASK: u64 = 1 << 13;
    /// `watermark`: [`super::PerfEventAttr::wakeup_events`] counts bytes.
    pub const WATERMARK: u64 = 1 << 14;
    /// `precise_ip` occupies bits 15–16.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    /// `mmap_data`.
    pub const MMAP_DATA: u64 = 1 << 17;
    /// `sample_id_all`.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// `exclude_host`.
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    /// `exclude_guest`.
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    /// `exclude_callchain_kernel`.
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    /// `exclude_callchain_user`.
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    /// `mmap2`.
    pub const MMAP2: u64 = 1 << 23;
    /// `comm_exec`.
    pub const COMM_EXEC: u64 = 1 << 24;
    /// `use_clockid`.
    pub const USE_CLOCKID: u64 = 1 << 25;
    /// `context_switch`.
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    /// `namespaces`.
    pub const NAMESPACES: u64 = 1 << 28;
}

macro_rules! flag {
    ($name:ident, $bit:expr, $doc:expr) => {
        #[doc = $doc]
        pub fn $name(&self) -> bool {
            self.flags & (1 << $bit) != 0
        }
    };
}

impl PerfEventAttr {
    /// Decode an attr from `b` (at least 8 bytes: type and size; the
    /// rest is taken up to the attr's own size or the end of `b`), as
    /// perf.data stores it (little-endian). `offset` is where `b` starts
    /// in the file, for error messages.
    pub fn parse(b: &[u8], offset: u64) -> Result<PerfEventAttr, Error> {
        if b.len() < 8 {
            return Err(Error::format(
                offset,
                "perf_event_attr shorter than 8 bytes",
            ));
        }
        let size = le_u32(b, 4);
        let claimed = if size == 0 { attr_size::VER0 } else { size } as usize;
        let n = claimed.min(b.len());
        let mut buf = [0u8; attr_size::VER8 as usize];
        let take = n.min(buf.len());
        buf[..take].copy_from_slice(&b[..take]);
        let b = &buf;
        Ok(PerfEventAttr {
            type_: le_u32(b, 0),
            size,
            config: le_u64(b, 8),
            sample_period: le_u64(b, 16),
            sample_type: le_u64(b, 24),
            read_format: le_u64(b, 32),
            flags: le_u64(b, 40),
            wakeup_events: le_u32(b, 48),
            bp_type: le_u32(b, 52),
            config1: le_u64(b, 56),
            config2: le_u64(b, 64),
            branch_sample_type: le_u64(b, 72),
            sample_regs_user: le_u64(b, 80),
            sample_stack_user: le_u32(b, 88),
            clockid: le_u32(b, 92) as i32,
            sample_regs_intr: le_u64(b, 96),
            aux_watermark: le_u32(b, 104),
            sample_max_stack: u16::from_le_bytes([b[108], b[109]]),
            reserved_2: u16::from_le_bytes([b[110], b[111]]),
            aux_sample_size: le_u32(b, 112),
            reserved_3: le_u32(b, 116),
            sig_data: le_u64(b, 120),
            config3: le_u64(b, 128),
        })
    }

    /// The struct as the kernel reads it: every field native-endian at its
    /// ABI offset, all 136 bytes (whatever `size` says; a perf.data
    /// writer cuts them to `size`).
    pub fn to_bytes(&self) -> [u8; attr_size::VER8 as usize] {
        let mut b = [0u8; attr_size::VER8 as usize];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&self.type_.to_ne_bytes());
        put(&self.size.to_ne_bytes());
        put(&self.config.to_ne_bytes());
        put(&self.sample_period.to_ne_bytes());
        put(&self.sample_type.to_ne_bytes());
        put(&self.read_format.to_ne_bytes());
        put(&self.flags.to_ne_bytes());
        put(&self.wakeup_events.to_ne_bytes());
        put(&self.bp_type.to_ne_bytes());
        put(&self.config1.to_ne_bytes());
        put(&self.config2.to_ne_bytes());
        put(&self.branch_sample_type.to_ne_bytes());
        put(&self.sample_regs_user.to_ne_bytes());
        put(&self.sample_stack_user.to_ne_bytes());
        put(&self.clockid.to_ne_bytes());
        put(&self.sample_regs_intr.to_ne_bytes());
        put(&self.aux_watermark.to_ne_bytes());
        put(&self.sample_max_stack.to_ne_bytes());
        put(&self.reserved_2.to_ne_bytes());
        put(&self.aux_sample_size.to_ne_bytes());
        put(&self.reserved_3.to_ne_bytes());
        put(&self.sig_data.to_ne_bytes());
        put(&self.config3.to_ne_bytes());
        debug_assert_eq!(at, attr_size::VER8 as usize);
        b
    }

    flag!(disabled, 0, "Created disabled.");
    flag!(inherit, 1, "Children inherit the event.");
    flag!(pinned, 2, "Must always be on the PMU.");
    flag!(exclusive, 3, "Only group on the PMU.");
    flag!(exclude_user, 4, "Don't count user space.");
    flag!(exclude_kernel, 5, "Don't count the kernel.");
    flag!(exclude_hv, 6, "Don't count the hypervisor.");
    flag!(exclude_idle, 7, "Don't count when idle.");
    flag!(mmap, 8, "Emit MMAP records for executable mappings.");
    flag!(comm, 9, "Emit COMM records.");
    flag!(freq, 10, "sample_freq instead of sample_period.");
    flag!(inherit_stat, 11, "Per-task counts on exit.");
    flag!(enable_on_exec, 12, "Enable on the next exec.");
    flag!(task, 13, "Emit FORK/EXIT records.");
    flag!(watermark, 14, "Wake up on a watermark, not a count.");
    flag!(mmap_data, 17, "Emit MMAP records for data mappings.");
    flag!(
        sample_id_all,
        18,
        "Side-band records carry a sample_id trailer."
    );
    flag!(exclude_host, 19, "Don't count in the host.");
    flag!(exclude_guest, 20, "Don't count in guests.");
    flag!(exclude_callchain_kernel, 21, "No kernel call chains.");
    flag!(exclude_callchain_user, 22, "No user call chains.");
    flag!(mmap2, 23, "Emit MMAP2 instead of MMAP.");
    flag!(comm_exec, 24, "Flag COMM records caused by exec.");
    flag!(use_clockid, 25, "Timestamps use clockid.");
    flag!(context_switch, 26, "Emit SWITCH records.");
    flag!(write_backward, 27, "Ring buffer written backwards.");
    flag!(namespaces, 28, "Emit NAMESPACES records.");
    flag!(ksymbol, 29, "Emit KSYMBOL records.");
    flag!(bpf_event, 30, "Emit BPF_EVENT records.");
    flag!(aux_output, 31, "Generate AUX records instead of events.");
    flag!(cgroup, 32, "Emit CGROUP records.");
    flag!(text_poke, 33, "Emit TEXT_POKE records.");
    flag!(build_id, 34, "MMAP2 records carry build-ids.");
    flag!(inherit_thread, 35, "Inherit only to threads.");
    flag!(remove_on_exec, 36, "Removed on exec.");
    flag!(sigtrap, 37, "Send SIGTRAP on overflow.");

    /// precise_ip (0–3: skid constraint).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> 15) & 3) as u8
    }

    /// The sample period, or `None` in frequency mode.
    pub fn period(&self) -> Option<u64> {
        (!self.freq()).then_some(self.sample_period)
    }

    /// The sample frequency in Hz, or `None` in period mode.
    pub fn sample_freq(&self) -> Option<u64> {
        self.freq().then_some(self.sample_period)
    }

    /// The name perf would give this event when the file has none: the
    /// generic hardware and software names, `rXXX` for raw, else
    /// `type:config`; with perf's modifier suffix (`:u`, `:k`, `:pp`…).
    pub fn default_name(&self) -> String {
        let base = match (self.type_, self.config) {
            (0, c) if (c & 0xffff_ffff) < HARDWARE_EVENT_NAMES.len() as u64 => {
                HARDWARE_EVENT_NAMES[(c & 0xffff_ffff) as usize].to_string()
            }
            (1, c) if c < SOFTWARE_EVENT_NAMES.len() as u64 => {
                SOFTWARE_EVENT_NAMES[c as usize].to_string()
            }
            (4, c) => format!("r{c:x}"),
            (t, c) => format!("{t}:{c:#x}"),
        };
        let mut m = String::new();
        let (u, k, h) = (
            self.exclude_user(),
            self.exclude_kernel(),
            self.exclude_hv(),
        );
        if u || k || h {
            if !u {
                m.push('u');
            }
            if !k {
                m.push('k');
            }
            if !h {
                m.push('h');
            }
        }
        for _ in 0..self.precise_ip() {
            m.push('p');
        }
        if m.is_empty() {
            base
        } else {
            format!("{base}:{m}")
        }
    }
}

/// One event of a file: the raw `perf_event_attr` bytes, the sample ids
/// the kernel gave its file descriptors, and its name. The writer takes
/// these; the reader returns them (with [`PerfEventAttr`] decoded beside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAttr {
    /// The raw perf_event_attr bytes as given to the kernel (its `size`
    /// field at byte 4 says how many are meaningful).
    pub attr: Vec<u8>,
    /// The ids of the event's file descriptors (`PERF_EVENT_IOC_ID`), as
    /// they appear in samples.
    pub ids: Vec<u64>,
    /// The event's name for EVENT_DESC, e.g. `"cpu-clock"`.
    pub name: String,
}

impl FileAttr {
    /// Decode the attr bytes.
    pub fn decode(&self) -> Result<PerfEventAttr, Error> {
        PerfEventAttr::parse(&self.attr, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The safe serialisation and the in-memory struct the kernel reads
    /// are the same bytes, and `parse` reads them back.
    #[test]
    fn to_bytes_is_the_memory_layout() {
        let k = PerfEventAttr {
            type_: 1,
            size: 136,
            config: 2,
            sample_period: 3,
            sample_type: 4,
            read_format: 5,
            flags: 6,
            wakeup_events: 7,
            bp_type: 8,
            config1: 9,
            config2: 10,
            branch_sample_type: 11,
            sample_regs_user: 12,
            sample_stack_user: 13,
            clockid: 14,
            sample_regs_intr: 15,
            aux_watermark: 16,
            sample_max_stack: 17,
            reserved_2: 18,
            aux_sample_size: 19,
            reserved_3: 20,
            sig_data: 21,
            config3: 22,
        };
        // SAFETY: plain old data without padding (see the size assertion).
        let mem: &[u8] = unsafe {
            std::slice::from_raw_parts(
                (&k as *const PerfEventAttr).cast::<u8>(),
                size_of::<PerfEventAttr>(),
            )
        };
        assert_eq!(&k.to_bytes()[..], mem);
        #[cfg(target_endian = "little")]
        assert_eq!(PerfEventAttr::parse(mem, 0).unwrap(), k);
    }

    #[test]
    fn attr_decoding_tolerates_sizes() {
        let mut b = vec![0u8; 136];
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
        b[4..8].copy_from_slice(&136u32.to_le_bytes());
        b[16..24].copy_from_slice(&4000u64.to_le_bytes());
        b[24..32].copy_from_slice(&0x1a7u64.to_le_bytes());
        let flags: u64 = (1 << 10) | (1 << 18) | (1 << 5) | (2 << 15) | (1 << 23);
        b[40..48].copy_from_slice(&flags.to_le_bytes());
        b[128..136].copy_from_slice(&7u64.to_le_bytes());
        let a = PerfEventAttr::parse(&b, 0).unwrap();
        assert_eq!(a.type_, 1);
        assert_eq!(a.sample_freq(), Some(4000));
        assert_eq!(a.period(), None);
        assert!(a.sample_id_all() && a.mmap2() && a.exclude_kernel() && !a.exclude_user());
        assert_eq!(a.precise_ip(), 2);
        assert_eq!(a.config3, 7);
        assert_eq!(a.default_name(), "cpu-clock:uhpp");
        // An old 64-byte attr: later fields zero, even if more bytes follow.
        let mut old = b.clone();
        old[4..8].copy_from_slice(&64u32.to_le_bytes());
        let a = PerfEventAttr::parse(&old, 0).unwrap();
        assert_eq!(a.config3, 0);
        // A newer, larger attr: extra bytes ignored.
        let mut new = b.clone();
        new[4..8].copy_from_slice(&200u32.to_le_bytes());
        new.resize(200, 0xff);
        assert_eq!(PerfEventAttr::parse(&new, 0).unwrap().config3, 7);
        assert!(PerfEventAttr::parse(&b[..4], 0).is_err());
    }

    #[test]
    fn default_names() {
        let mut a = PerfEventAttr {
            type_: 0,
            config: 0,
            ..Default::default()
        };
        assert_eq!(a.default_name(), "cycles");
        a.flags = 1 << 5 | 1 << 6; // exclude kernel, hv
        assert_eq!(a.default_name(), "cycles:u");
        let r = PerfEventAttr {
            type_: 4,
            config: 0x1cd,
            ..Default::default()
        };
        assert_eq!(r.default_name(), "r1cd");
    }
}
