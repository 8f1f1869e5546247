//! # pmx-sys — what this machine is
//!
//! pmx-sys answers the discovery questions: which CPU is this, what PMU does
//! it have, which PMUs did the kernel register, how are the CPUs arranged,
//! and what may this user measure. It only *reads*; it never programs a
//! counter.
//!
//! Its model is two sources of facts and one report:
//!
//! - **CPUID**, through the [`CpuidSource`] trait: [`NativeCpuid`] executes
//!   the instruction, [`RecordedCpuid`] replays a text dump (fixtures, or a
//!   dump taken on another machine). [`PmuCaps::decode`] turns the leaves into
//!   vendor, [`CpuId`](pmx_model::cpu::CpuId), brand, hypervisor, and the
//!   counters CPUID describes (Intel leaf 0xA, AMD's extension bits, leaf
//!   0x8000_0022 and the IBS flags of leaf 0x8000_001B).
//! - **The kernel's files**, relative to a [`SysRoot`] (`/` by default, a
//!   fixture directory in tests): PMUs under `sys/bus/event_source/devices`
//!   ([`pmu`]), topology under `sys/devices/system/cpu` ([`topology`]),
//!   access rights from `proc/`, `dev/cpu/*/msr` and `sys/kernel/security`
//!   ([`access`]). A missing file is an unknown fact, never an error; a file
//!   that cannot be read or parsed becomes a [`Problem`] in the report.
//! - **[`MachineReport`]** gathers all of it (it is `Serialize`, for
//!   `pmx info --json`) and derives a [`Verdict`]: one line saying whether
//!   hardware counters are usable and, if not, why and what works instead —
//!   from the data, never from a guess about the machine — and, on AMD,
//!   what CPUID or the kernel hides of what the microarchitecture has
//!   ([`hidden`]).
//!
//! Where tracefs is ([`tracefs`], mounted as perf mounts it when it is
//! mounted nowhere) is read here too, for the tracepoints' ids and formats.
//!
//! One process-wide facility lives here too, because every session crate
//! already depends on this one: [`signal`], the one place a signal's
//! disposition is set, and [`start`], pmx's entry without std's runtime
//! start ([`entry!`]).
//!
//! The pure vocabulary (CPU identity, topology, CPU lists) lives in
//! `pmx-model`; this crate adds the reading.

#![warn(missing_docs)]

pub mod access;
pub mod caps;
pub mod cpuid;
pub mod hidden;
pub mod pmu;
pub mod report;
pub mod root;
pub mod signal;
pub mod start;
pub mod topology;
pub mod tracefs;

pub use access::Access;
pub use caps::{
    AmdPerfmon, ArchEvent, CoreCounters, Hypervisor, IbsFeatures, IntelArchPerfmon, PmuCaps,
};
pub use cpuid::{CpuidFileError, CpuidSource, NativeCpuid, RecordedCpuid};
pub use hidden::HiddenFeature;
pub use pmu::{ConfigWord, EventAlias, FieldPlacement, FormatField, KernelPmu};
pub use report::{MachineReport, TopologyReport, Verdict};
pub use root::{Problem, SysRoot};
