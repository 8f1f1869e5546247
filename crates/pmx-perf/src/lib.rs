//! # pmx-perf — `perf_event_open(2)` for pmx
//!
//! The kernel's counters, one file descriptor per event. The model:
//!
//! - [`Attr`] is what pmx asks of one event: the PMU (`type_`), the event
//!   (`config`, `config1`, `config2`, or a breakpoint's address, length and
//!   kind), the privilege filters (`exclude_*`), scheduling (`pinned`,
//!   `exclusive`), and the `read_format` that decides what a read returns.
//!   At open time it becomes the kernel's `struct perf_event_attr`
//!   ([`Attr::to_kernel`]: a [`PerfEventAttr`], declared once in
//!   `pmx-perfdata` for the syscall, perf.data and libpfm alike;
//!   `PERF_ATTR_SIZE_VER8`, 136 bytes; older kernels accept it because
//!   every field they do not know is zero). `Attr` is the one builder
//!   form of the attr: typed sample rate and wakeup, one `bool` per flag.
//! - **Sampling.** The same [`Attr`] samples when [`Attr::sample`] is set:
//!   [`SampleRate::Period`] takes a sample every N events (the
//!   sample-after value), [`SampleRate::Frequency`] lets the kernel adjust
//!   the period to reach N samples a second. [`Attr::sample_type`] (bits in
//!   [`sample_type`]) says what a sample holds; `mmap2`, `comm`,
//!   `comm_exec` and `task` ask for the side-band records a reader needs
//!   to turn addresses into symbols, and `sample_id_all` stamps those with
//!   the sample's TID/TIME/CPU/ID too. The records go into the event's ring
//!   buffer ([`mmap`]); [`mmap::record`] and [`record_misc`] name their
//!   header fields. [`Attr::to_kernel_bytes`] is the exact struct the
//!   kernel was given and [`Attr::to_perf_data_bytes`] the form a
//!   perf.data file stores. `Attr::default()` counts and never samples.
//! - [`Target`] is where it counts: `pid` 0 is the calling *thread*, a tid
//!   another thread (add `inherit` for the threads it creates later), -1
//!   every task; `cpu` -1 follows the task wherever it runs, a CPU number
//!   counts only while on that CPU. `pid -1, cpu -1` is not allowed.
//! - [`Counter`] owns one open event's fd (close-on-exec, closed on drop),
//!   knows its kernel id and its `read_format`. [`Counter::enable`],
//!   [`Counter::disable`] and [`Counter::reset`] act on the event or, with
//!   `group = true`, on its whole group at once. [`Counter::read`] returns a
//!   [`Count`]: the raw value and how long the event was enabled and
//!   actually running on the PMU (the times are 0 when `read_format` does
//!   not ask for them).
//! - A **group** is a leader opened with `group: None` and members opened
//!   with `group: Some(&leader)`. The kernel schedules a group all or
//!   nothing, so its members' ratios are exact. Create the leader
//!   `disabled` and the members enabled (`disabled: false`, which makes
//!   them follow the leader; see [`Counter::open`] for why not disabled),
//!   then start and stop everything with one `leader.enable(true)` /
//!   `leader.disable(true)`. Open the leader with `read_format::GROUP |
//!   read_format::ID` and [`Counter::read_group`] reads every member in one
//!   system call; the times in it are the leader's, shared by all.
//! - **Times.** `running < enabled` means the event was multiplexed or,
//!   for a per-task event bound to one CPU, that the task also ran
//!   elsewhere; [`Count::scaled`] extrapolates. For per-task events both
//!   times advance only while the task is on a CPU. `reset` zeroes the
//!   value but not the times.
//! - [`OpenError`] turns the errno into what it means for *this* event and
//!   what to do: the `perf_event_paranoid` level and the `sysctl` or
//!   capability that lifts it, "this machine's PMU does not count it", "no
//!   free debug register", and so on: an [`OpenCause`] with the facts that
//!   decided it (the paranoid level, the capabilities, the open-file
//!   limit, …), for callers to match on.
//!
//! Reading and ioctl errors are plain [`std::io::Error`]s; nothing here
//! panics on what the kernel returns.
//!
//! [`workload`] is work with an exactly known count (touching fresh pages:
//! one `page-faults` each), shared by pmx's tests and the `pmx-workload`
//! program.
//!
//! ```no_run
//! use pmx_perf::{event_type, read_format, software, Attr, Counter, Target};
//!
//! let this_thread = Target { pid: 0, cpu: -1 };
//! let leader = Counter::open(
//!     &Attr {
//!         type_: event_type::SOFTWARE,
//!         config: software::TASK_CLOCK,
//!         disabled: true,
//!         read_format: read_format::GROUP | read_format::ID
//!             | read_format::TOTAL_TIME_ENABLED | read_format::TOTAL_TIME_RUNNING,
//!         ..Attr::default()
//!     },
//!     this_thread,
//!     None,
//! )?;
//! let faults = Counter::open(
//!     &Attr { type_: event_type::SOFTWARE, config: software::PAGE_FAULTS, ..Attr::default() },
//!     this_thread,
//!     Some(&leader),
//! )?;
//! leader.enable(true)?;
//! // ... the work ...
//! leader.disable(true)?;
//! for (id, count) in leader.read_group()? {
//!     let which = if id == faults.id() { "page-faults" } else { "task-clock" };
//!     println!("{which}: {} ({:?} of the time)", count.value, count.running_share());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod abi;
mod error;
pub mod mmap;
pub mod rdpmc;
mod read;
#[cfg(test)]
mod sampling_tests;
pub mod workload;

pub use error::{perf_event_paranoid, OpenCause, OpenError};
/// `struct perf_event_attr` itself, as the kernel and perf.data lay it out.
pub use pmx_perfdata::PerfEventAttr;

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use pmx_model::count::Count;
use pmx_model::encoding::PerfAttr;

/// `read_format` bits (`PERF_FORMAT_*`). `LOST` (Linux 6.0) is skipped by
/// reads; it is there so a `read_format` that sets it is still decoded.
pub use pmx_perfdata::format::read_format;

/// `attr.type` values the kernel fixes (`PERF_TYPE_*`), from the model.
pub use pmx_model::encoding::perf_type as event_type;

/// `config` values of [`event_type::SOFTWARE`] (`PERF_COUNT_SW_*`).
pub mod software {
    /// Wall-clock time on the CPU (ns), from a high-resolution timer.
    pub const CPU_CLOCK: u64 = 0;
    /// Time the task ran (ns).
    pub const TASK_CLOCK: u64 = 1;
    /// Page faults, every kind.
    pub const PAGE_FAULTS: u64 = 2;
    /// Context switches.
    pub const CONTEXT_SWITCHES: u64 = 3;
    /// Migrations of the task to another CPU.
    pub const CPU_MIGRATIONS: u64 = 4;
    /// Page faults served without I/O.
    pub const PAGE_FAULTS_MIN: u64 = 5;
    /// Page faults that needed I/O.
    pub const PAGE_FAULTS_MAJ: u64 = 6;
    /// Unaligned accesses the kernel fixed up.
    pub const ALIGNMENT_FAULTS: u64 = 7;
    /// Instructions the kernel emulated.
    pub const EMULATION_FAULTS: u64 = 8;
    /// Counts nothing; a placeholder (for side-band records).
    pub const DUMMY: u64 = 9;
}

/// Breakpoint kinds (`bp_type`).
pub mod bp {
    /// `HW_BREAKPOINT_R`.
    pub const R: u32 = 1;
    /// `HW_BREAKPOINT_W`.
    pub const W: u32 = 2;
    /// `HW_BREAKPOINT_RW`.
    pub const RW: u32 = 3;
    /// `HW_BREAKPOINT_X`.
    pub const X: u32 = 4;
}

/// What pmx asks of one event. Defaults: counting, not sampling; every
/// `exclude_*` false; `read_format` = enabled | running | id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    /// `type`.
    pub type_: u32,
    /// `config`.
    pub config: u64,
    /// `config1` (also `bp_addr` for breakpoints).
    pub config1: u64,
    /// `config2` (also `bp_len` for breakpoints).
    pub config2: u64,
    /// `config3` (Linux 6.3).
    pub config3: u64,
    /// `bp_type` (breakpoints only).
    pub bp_type: u32,
    /// `read_format`.
    pub read_format: u64,
    /// Created disabled: counts nothing until enabled.
    pub disabled: bool,
    /// Children inherit the counter.
    pub inherit: bool,
    /// Enabled when the task calls exec.
    pub enable_on_exec: bool,
    /// `pinned`: always on the PMU; if it cannot be, the event goes into
    /// error state and reads fail. Group leaders only.
    pub pinned: bool,
    /// `exclusive`: alone on the PMU while it counts. Group leaders only.
    pub exclusive: bool,
    /// `exclude_user`.
    pub exclude_user: bool,
    /// `exclude_kernel`.
    pub exclude_kernel: bool,
    /// `exclude_hv`.
    pub exclude_hv: bool,
    /// `exclude_idle`.
    pub exclude_idle: bool,
    /// `exclude_guest`.
    pub exclude_guest: bool,
    /// `exclude_host`.
    pub exclude_host: bool,
    /// `precise_ip`: how hard the PMU must try to record the exact
    /// instruction (0 any skid, 1 constant skid, 2 asked for zero skid, 3
    /// must have zero skid; Intel PEBS, AMD IBS).
    pub precise_ip: u8,

    // ---- sampling ----
    /// Take a sample every N events or at a target rate; `None` counts
    /// only (`sample_period` 0).
    pub sample: Option<SampleRate>,
    /// What each sample holds: bits of [`sample_type`].
    pub sample_type: u64,
    /// When a reader sleeping in `poll` on the ring buffer is woken.
    pub wakeup: Wakeup,
    /// `sample_id_all`: the side-band records (MMAP, COMM, LOST …) carry
    /// the sample's TID, TIME, ID, CPU, IDENTIFIER fields at their end, so
    /// a reader can order and attribute them.
    pub sample_id_all: bool,
    /// `mmap`: a PERF_RECORD_MMAP for every executable mapping.
    pub mmap: bool,
    /// `mmap2`: the MMAP2 form (device, inode, protection, flags) instead.
    pub mmap2: bool,
    /// `mmap_data`: also non-executable mappings.
    pub mmap_data: bool,
    /// `comm`: a PERF_RECORD_COMM when a task changes its name.
    pub comm: bool,
    /// `comm_exec`: mark the COMM of an `exec` with `PERF_RECORD_MISC_COMM_EXEC`.
    pub comm_exec: bool,
    /// `task`: PERF_RECORD_FORK and PERF_RECORD_EXIT.
    pub task: bool,
    /// `context_switch`: PERF_RECORD_SWITCH at every context switch.
    pub context_switch: bool,
    /// `namespaces`: PERF_RECORD_NAMESPACES when a task is created or
    /// changes namespaces.
    pub namespaces: bool,
    /// `exclude_callchain_kernel`: call chains without the kernel part.
    pub exclude_callchain_kernel: bool,
    /// `exclude_callchain_user`: call chains without the user part.
    pub exclude_callchain_user: bool,
    /// `branch_sample_type` (with `PERF_SAMPLE_BRANCH_STACK`): which
    /// branches and what of them ([`pmx_perfdata::format::branch_sample_type`]).
    pub branch_sample_type: u64,
    /// `sample_regs_user` (with `PERF_SAMPLE_REGS_USER`): the user
    /// registers each sample holds, one bit per register
    /// ([`pmx_perfdata::format::regs_x86_64`]).
    pub sample_regs_user: u64,
    /// `sample_stack_user` (with `PERF_SAMPLE_STACK_USER`): bytes of user
    /// stack each sample copies, from the stack pointer up (a multiple of 8).
    pub sample_stack_user: u32,
    /// `sample_max_stack`: the deepest call chain (0: the kernel's
    /// `kernel.perf_event_max_stack`).
    pub sample_max_stack: u16,
    /// `use_clockid` + `clockid`: time stamps from this clock
    /// (`CLOCK_MONOTONIC` …) instead of the kernel's perf clock.
    pub clockid: Option<i32>,
}

/// How often a sampling event records a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRate {
    /// `sample_period`: one sample every N events (the sample-after value).
    Period(u64),
    /// `sample_freq` with `freq`: about N samples a second; the kernel
    /// re-computes the period at every tick to reach it, capped by
    /// `kernel.perf_event_max_sample_rate`.
    Frequency(u64),
}

/// When the kernel wakes a reader polling the ring buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// `wakeup_events`: after this many samples (0: when the buffer is
    /// half full).
    Events(u32),
    /// `wakeup_watermark` with `watermark`: when this many bytes wait.
    Watermark(u32),
}

impl Default for Wakeup {
    fn default() -> Wakeup {
        Wakeup::Events(0)
    }
}

/// `sample_type` bits (`PERF_SAMPLE_*`): which fields a PERF_RECORD_SAMPLE
/// holds, in the order of the bits (IDENTIFIER first). The kernel's
/// numbers, shared with the perf.data format.
pub use pmx_perfdata::format::sample_type;

/// `misc` bits of a record header (`PERF_RECORD_MISC_*`).
pub use pmx_perfdata::format::misc as record_misc;

impl Default for Attr {
    fn default() -> Attr {
        Attr {
            type_: 0,
            config: 0,
            config1: 0,
            config2: 0,
            config3: 0,
            bp_type: 0,
            read_format: read_format::TOTAL_TIME_ENABLED
                | read_format::TOTAL_TIME_RUNNING
                | read_format::ID,
            disabled: false,
            inherit: false,
            enable_on_exec: false,
            pinned: false,
            exclusive: false,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_idle: false,
            exclude_guest: false,
            exclude_host: false,
            precise_ip: 0,
            sample: None,
            sample_type: 0,
            wakeup: Wakeup::Events(0),
            sample_id_all: false,
            mmap: false,
            mmap2: false,
            mmap_data: false,
            comm: false,
            comm_exec: false,
            task: false,
            context_switch: false,
            namespaces: false,
            exclude_callchain_kernel: false,
            exclude_callchain_user: false,
            branch_sample_type: 0,
            sample_regs_user: 0,
            sample_stack_user: 0,
            sample_max_stack: 0,
            clockid: None,
        }
    }
}

impl Attr {
    /// From the model's attr. `type_` must be known (`PerfAttr::type_`);
    /// `None` is an error the caller resolves through sysfs first.
    pub fn from_perf_attr(a: &PerfAttr) -> Option<Attr> {
        Some(Attr {
            type_: a.type_?,
            config: a.config,
            config1: a.config1,
            config2: a.config2,
            config3: a.config3,
            exclude_user: a.exclude_user,
            exclude_kernel: a.exclude_kernel,
            exclude_hv: a.exclude_hv,
            exclude_idle: a.exclude_idle,
            exclude_guest: a.exclude_guest,
            exclude_host: a.exclude_host,
            pinned: a.pinned,
            exclusive: a.exclusive,
            precise_ip: a.precise_ip,
            sample: match (a.sample_period, a.sample_freq) {
                (Some(p), _) => Some(SampleRate::Period(p)),
                (None, Some(f)) => Some(SampleRate::Frequency(f)),
                (None, None) => None,
            },
            ..Attr::default()
        })
    }

    /// The kernel's `struct perf_event_attr` ([`PerfEventAttr`], the one
    /// declaration of its fields) that [`Counter::open`] passes to
    /// `perf_event_open(2)`.
    pub fn to_kernel(&self) -> PerfEventAttr {
        abi::from_attr(self)
    }

    /// The exact `struct perf_event_attr` bytes [`Counter::open`] gives the
    /// kernel (`PERF_ATTR_SIZE_VER8`, 136 bytes, native-endian), e.g. for
    /// a perf.data file's attrs section.
    pub fn to_kernel_bytes(&self) -> Vec<u8> {
        self.to_kernel().to_bytes().to_vec()
    }

    /// The attr as a perf.data file stores it: [`Attr::to_kernel_bytes`],
    /// cut to `PERF_ATTR_SIZE_VER7` (128 bytes, `size` set to match) when
    /// `config3` — the only field past it — is zero, which it always is
    /// for attrs built from this type. perf before 6.3 refuses a file whose
    /// attrs are larger than its own struct, and every reader zero-fills a
    /// shorter one.
    pub fn to_perf_data_bytes(&self) -> Vec<u8> {
        let mut k = self.to_kernel();
        if k.config3 == 0 {
            k.size = abi::PERF_ATTR_SIZE_VER7;
        }
        let mut b = k.to_bytes().to_vec();
        b.truncate(k.size as usize);
        b
    }

    /// Does this attr sample (a period or a frequency)?
    pub fn is_sampling(&self) -> bool {
        match self.sample {
            Some(SampleRate::Period(p)) => p > 0,
            Some(SampleRate::Frequency(f)) => f > 0,
            None => false,
        }
    }

    /// A hardware breakpoint (`PERF_TYPE_BREAKPOINT`) at `addr`: `len` 1,
    /// 2, 4 or 8 bytes, `addr` aligned to it (an execute breakpoint is
    /// `size_of::<usize>()` long), `bp_type` from [`bp`]. It counts every
    /// matching access; x86 has four debug registers per thread.
    pub fn breakpoint(addr: u64, len: u64, bp_type: u32) -> Attr {
        Attr {
            type_: event_type::BREAKPOINT,
            config1: addr,
            config2: len,
            bp_type,
            ..Attr::default()
        }
    }
}

/// Where an event counts.
///
/// `pid` 0 is the calling *thread* (not its process), a positive number a
/// thread or process id; `cpu` -1 follows the task to any CPU. `pid -1`
/// needs a CPU and counts every task there (`perf_event_paranoid` 0 or
/// CAP_PERFMON). `pid` and `cpu` both set count the task only while it runs
/// on that CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// `pid` argument: a tid/pid, or -1 for every task on `cpu`.
    pub pid: i32,
    /// `cpu` argument: a CPU, or -1 for any CPU the task runs on.
    pub cpu: i32,
}

/// One open event.
///
/// Owns the fd (close-on-exec, closed on drop; closing a group leader
/// turns its members into lone events). Knows the kernel's id for the event
/// and the `read_format` it was opened with, which decides how reads are
/// decoded.
#[derive(Debug)]
pub struct Counter {
    fd: OwnedFd,
    id: u64,
    read_format: u64,
}

/// The largest group read pmx accepts, in `u64` words (16 MiB): far beyond
/// any real group, a bound so a confused kernel answer cannot exhaust memory.
const MAX_READ_WORDS: usize = 1 << 21;

/// The first group read buffer: room for 16 members with every field.
const FIRST_GROUP_WORDS: usize = 3 + 16 * 3;

impl Counter {
    /// Open `attr` on `target`, as a member of `group` (or a leader).
    ///
    /// A leader is usually opened `disabled`, with `read_format` `GROUP |
    /// ID` (plus the times) so [`Counter::read_group`] can read the group.
    /// Open members with `disabled: false`, as perf does: they then start
    /// and stop exactly with the leader. A member opened disabled and
    /// enabled later (even by `leader.enable(true)`) is, on current kernels,
    /// not put on the PMU until the task next switches in when its PMU
    /// differs from the leader's (task-clock and cpu-clock are PMUs of their
    /// own), so it misses the start.
    ///
    /// A PMU that refuses `exclude_guest`/`exclude_host` (EINVAL: msr,
    /// uncore) is asked again without them, as perf does.
    ///
    /// On failure the [`OpenError`] says what the errno means for this
    /// event and target and what to do; `precise_ip` above 3 is refused
    /// before the kernel is asked.
    pub fn open(
        attr: &Attr,
        target: Target,
        group: Option<&Counter>,
    ) -> Result<Counter, OpenError> {
        Counter::open_flags(attr, target, group, None)
    }

    /// [`Counter::open`] counting only the tasks of one cgroup (v2) while
    /// they run on `cpu` (`PERF_FLAG_PID_CGROUP`): `cgroup` is an open fd
    /// of the cgroup's directory; `cpu` must be a CPU, not -1.
    pub fn open_in_cgroup(
        attr: &Attr,
        cgroup: std::os::fd::BorrowedFd<'_>,
        cpu: i32,
        group: Option<&Counter>,
    ) -> Result<Counter, OpenError> {
        let target = Target {
            pid: cgroup.as_raw_fd(),
            cpu,
        };
        Counter::open_flags(attr, target, group, Some(abi::PERF_FLAG_PID_CGROUP))
    }

    fn open_flags(
        attr: &Attr,
        target: Target,
        group: Option<&Counter>,
        flags: Option<libc::c_ulong>,
    ) -> Result<Counter, OpenError> {
        let fail = |errno: i32| {
            error::explain(
                errno,
                attr,
                target,
                group.is_some(),
                &error::Context::of_this_machine(attr),
            )
        };
        if attr.precise_ip > 3 {
            // Two bits in the kernel's struct: refuse rather than truncate.
            return Err(fail(libc::EINVAL));
        }
        let kattr = abi::from_attr(attr);
        let group_fd = group.map_or(-1, |g| g.fd.as_raw_fd());
        let open = |k: &pmx_perfdata::PerfEventAttr| {
            let flags = flags.unwrap_or(0);
            abi::perf_event_open_flags(k, target.pid, target.cpu, group_fd, flags)
        };
        let raw = match open(&kattr) {
            // perf's fallback (evsel__detect_missing_features): a PMU that
            // cannot tell guest from host (msr, uncore) refuses
            // exclude_guest, which perf sets by default; open it without.
            Err(libc::EINVAL) if attr.exclude_guest || attr.exclude_host => {
                let plain = Attr {
                    exclude_guest: false,
                    exclude_host: false,
                    ..attr.clone()
                };
                open(&abi::from_attr(&plain)).map_err(fail)?
            }
            r => r.map_err(fail)?,
        };
        // SAFETY: perf_event_open just returned this fd; nothing else owns
        // it, so the OwnedFd becomes its only owner and closes it once.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut id: u64 = 0;
        // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer, which
        // points to a live local u64; the fd is open.
        let ret = unsafe {
            libc::ioctl(
                fd.as_raw_fd(),
                abi::IOC_ID as libc::Ioctl,
                &mut id as *mut u64,
            )
        };
        if ret < 0 {
            // Only kernels before 3.12 lack the ioctl; the fd closes here.
            return Err(error::id_unavailable(abi::last_errno(), attr, target));
        }
        Ok(Counter {
            fd,
            id,
            read_format: attr.read_format,
        })
    }

    /// The kernel's id for this event (`PERF_EVENT_IOC_ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The `read_format` this counter was opened with; it decides what
    /// [`Counter::read`] and [`Counter::read_group`] can decode.
    pub fn read_format(&self) -> u64 {
        self.read_format
    }

    fn ioctl(&self, request: u64, group: bool) -> io::Result<()> {
        let arg: libc::c_ulong = if group { abi::PERF_IOC_FLAG_GROUP } else { 0 };
        // SAFETY: ENABLE, DISABLE and RESET take an integer argument and
        // touch no memory of ours; the fd is open for as long as `self`.
        let ret = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as libc::Ioctl, arg) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Enable; with `group`, the whole group at once.
    pub fn enable(&self, group: bool) -> io::Result<()> {
        self.ioctl(abi::IOC_ENABLE, group)
    }

    /// Disable; with `group`, the whole group at once.
    pub fn disable(&self, group: bool) -> io::Result<()> {
        self.ioctl(abi::IOC_DISABLE, group)
    }

    /// Reset to zero; with `group`, the whole group. Only the value: the
    /// enabled and running times keep accumulating from where they were.
    pub fn reset(&self, group: bool) -> io::Result<()> {
        self.ioctl(abi::IOC_RESET, group)
    }

    /// One `read(2)` into `buf`, retried on EINTR and with a larger buffer
    /// when the kernel says it does not fit. Leaves `buf` holding the words
    /// read.
    fn read_words(&self, buf: &mut Vec<u64>) -> io::Result<()> {
        loop {
            let bytes = buf.len() * std::mem::size_of::<u64>();
            // SAFETY: the pointer and length describe `buf`'s initialised
            // memory, which the kernel may overwrite with any bytes (every
            // bit pattern is a valid u64); the fd is open.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::ENOSPC) if buf.len() < MAX_READ_WORDS => {
                        buf.resize((buf.len() * 2).clamp(1, MAX_READ_WORDS), 0);
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            // n >= 0 here.
            let n = n as usize;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the event is in error state and has stopped counting (a pinned event or \
                     group could not get onto the PMU); reopen it",
                ));
            }
            let (words, rest) = (n / 8, n % 8);
            if rest != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("perf read returned {n} bytes, not whole u64 words"),
                ));
            }
            buf.truncate(words);
            return Ok(());
        }
    }

    /// Read one event (opened without `PERF_FORMAT_GROUP`).
    ///
    /// Times the `read_format` does not include are 0. A counter opened
    /// with `PERF_FORMAT_GROUP` is read through its group and its own entry
    /// returned, which needs `PERF_FORMAT_ID` unless the group has only it.
    pub fn read(&self) -> io::Result<Count> {
        if self.read_format & read_format::GROUP != 0 {
            let entries = self.read_entries()?;
            let only = entries.len() == 1;
            return entries
                .into_iter()
                .find(|(id, _)| *id == Some(self.id) || (id.is_none() && only))
                .map(|(_, c)| c)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "this counter has a group read_format without PERF_FORMAT_ID, so its \
                         value cannot be told from its group's: use read_group",
                    )
                });
        }
        let mut words = vec![0; read::single_len(self.read_format)];
        self.read_words(&mut words)?;
        Ok(read::parse_single(&words, self.read_format)?.1)
    }

    fn read_entries(&self) -> io::Result<Vec<read::Entry>> {
        let mut words = vec![0; FIRST_GROUP_WORDS];
        self.read_words(&mut words)?;
        read::parse_group(&words, self.read_format)
    }

    /// Read a group through its leader (opened with `PERF_FORMAT_GROUP`):
    /// `(id, count)` for every member, leader first.
    ///
    /// Needs `PERF_FORMAT_ID` too (the ids name the members); every count
    /// carries the group's one pair of times. Members whose open failed are
    /// simply not there; a group of any size is read in one go.
    pub fn read_group(&self) -> io::Result<Vec<(u64, Count)>> {
        let rf = self.read_format;
        if rf & read_format::GROUP == 0 || rf & read_format::ID == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "read_group needs a counter opened with read_format GROUP | ID; this one \
                     has {rf:#x}{}",
                    if rf & read_format::GROUP == 0 {
                        ": use read"
                    } else {
                        ""
                    }
                ),
            ));
        }
        self.read_entries()?
            .into_iter()
            .map(|(id, c)| {
                id.map(|id| (id, c)).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidData, "group read without ids")
                })
            })
            .collect()
    }

    /// [`read_group`](Self::read_group) without allocating: the words are
    /// read into `buf` (grown as needed, kept for the next call) and `f`
    /// gets every member, leader first. For reads in a loop, such as one
    /// per interval.
    pub fn read_group_with(
        &self,
        buf: &mut Vec<u64>,
        mut f: impl FnMut(u64, Count),
    ) -> io::Result<()> {
        let rf = self.read_format;
        if rf & read_format::GROUP == 0 || rf & read_format::ID == 0 {
            // The same refusal, worded once.
            return self.read_group().map(|_| ());
        }
        if buf.len() < FIRST_GROUP_WORDS {
            buf.resize(FIRST_GROUP_WORDS, 0);
        }
        self.read_words(buf)?;
        let result = read::visit_group(buf, rf, |id, c| f(id.unwrap_or(0), c));
        // Leave the grown size for the next read.
        let cap = buf.capacity();
        buf.resize(cap, 0);
        result
    }
}

impl AsFd for Counter {
    /// The event's fd, e.g. for `poll` or `mmap`; it stays owned by the
    /// counter.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Counter {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
