//! # pmx-msr — programming the PMU through `/dev/cpu/N/msr`
//!
//! When perf is not there or not enough (no PMU driver, uncore or package
//! registers perf does not expose, or the need to control every bit), pmx
//! programs the counters itself through the msr driver. Done by hand this
//! is error-prone: registers have a scope, counters wrap, and a crash
//! leaves the PMU programmed. This crate makes it safe.
//!
//! The model, from the bottom up:
//!
//! - [`device`]: `pread`/`pwrite` of 8 bytes at offset = MSR address on
//!   `ROOT/N/msr` ([`MsrRoot`], `/dev/cpu` by default; in tests a directory
//!   of sparse `cpuN/msr` files, register N at byte 8·N). Errors say what is missing: the driver
//!   (`modprobe msr`), root or CAP_SYS_RAWIO, the register itself (`EIO`),
//!   or the permission to write (kernel lockdown, `msr.allow_writes`).
//! - [`catalogue`]: the PMU registers pmx knows — Intel `IA32_PMCx`,
//!   `IA32_PERFEVTSELx`, fixed counters and their control, global
//!   control/status, the offcore-response filters `MSR_OFFCORE_RSP_0/1`,
//!   RAPL, the 6th-gen Core client uncore; AMD `PERF_CTLx`/
//!   `PERF_CTRx`, the core-counter extension, PerfMonV2, RAPL — with names
//!   (case-insensitive, `IA32_PERFEVTSEL0`), addresses, vendor, [`Scope`]
//!   and writable bits; fields through `pmx-model`'s register layouts.
//! - [`cache_events`]: the kernel's generic cache events (`L1-dcache-loads`
//!   …) as event selects, from its per-model tables (on Intel `LLC-*` and
//!   `node-*` with their `OFFCORE_RESPONSE` filters).
//! - [`scope`]: core- and package-scope registers are read once per domain,
//!   from one CPU of it, and reported per domain.
//! - [`allow`]: writes go only to the vendor's PMU control and counter
//!   registers, and only to their writable bits.
//! - [`mod@plan`]: a list of events (as `pmx-model` [`Encoded`] values) becomes
//!   an ordered list of writes per CPU — counters zeroed, offcore-response
//!   filters, event selects, fixed control, global control last — with no
//!   side effects.
//! - [`session`]: checks nobody else uses the counters, saves every register
//!   it will touch, applies a plan, reads deltas with wrap-around at the
//!   counter width, and restores everything on drop, on panic, and (through
//!   [`signal`], without allocating) on SIGINT/SIGTERM/SIGHUP.
//! - [`rapl`]: package energy in joules with the 32-bit wrap handled.
//!
//! ## Counting with the library (what `pmx stat --backend msr` does)
//!
//! ```no_run
//! use pmx_msr::{plan, MsrDevice, MsrEvent, MsrRoot, Mode, PmuCounters, Session, SessionOptions, Signals};
//! # fn events() -> Vec<MsrEvent> { Vec::new() }
//! # fn main() -> Result<(), pmx_msr::MsrError> {
//! let caps = pmx_sys::PmuCaps::decode(&pmx_sys::NativeCpuid).expect("x86");
//! let pmu = PmuCounters::from_caps(&caps).expect("CPUID describes counters");
//! let topology = pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut Vec::new());
//! let plan = plan::plan(&events(), &[0, 1], &pmu, &topology)?;
//! let device = MsrDevice::open(&MsrRoot::host(), &plan.cpus_touched(), Mode::ReadWrite)?;
//! let options = SessionOptions { force: false, signals: Signals::Defer };
//! let mut session = Session::start(device, plan, &options)?;
//! while session.interrupted().is_none() {
//!     std::thread::sleep(std::time::Duration::from_millis(100));
//!     for r in session.read()? {
//!         println!("{} on {}: +{}", session.plan().events[r.slot.event].name, r.slot.domain, r.delta);
//!     }
//!     # break;
//! }
//! session.restore()?; // also done on drop
//! # Ok(()) }
//! ```
//!
//! [`Encoded`]: pmx_model::encoding::Encoded

#![warn(missing_docs)]

pub mod allow;
pub mod cache_events;
pub mod catalogue;
pub mod device;
pub mod error;
pub mod plan;
pub mod rapl;
pub mod scope;
pub mod session;
pub mod signal;

pub use allow::{check as check_write, Refusal, WritePolicy};
pub use cache_events::{generic_cache_event, CacheGap};
pub use catalogue::{lookup_address, lookup_name, resolve, Msr, MsrDef, Register, Scope};
pub use device::{Mode, MsrDevice, MsrRoot};
pub use error::MsrError;
pub use plan::{
    generic_hardware_event, plan, CounterId, MsrEvent, Plan, PlanError, PlannedEvent, PlannedWrite,
    PmuCounters, RestoreValue, RestoreWrite, Step,
};
pub use rapl::{EnergyMeter, EnergySample, RaplUnits};
pub use scope::{domains, Domain, DomainId};
pub use session::{CounterReading, SavedRegister, Session, SessionOptions};
pub use signal::Signals;
