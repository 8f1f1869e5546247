//! Programming plans: every write that counting a list of events needs.
//!
//! [`plan`] takes events as [`Encoded`] control-register values (what the
//! event database resolves), assigns each to a counter, and lists the
//! writes in the order they must happen:
//!
//! 1. [`Step::ZeroCounter`]: the counters that will count are set to 0;
//! 2. [`Step::OffcoreFilter`]: an Intel `OFFCORE_RESPONSE` event's filter
//!    (perf's `offcore_rsp`, `config1`) goes to its `MSR_OFFCORE_RSP_0/1`
//!    ([`offcore_register`]), before the event select that counts with it;
//! 3. [`Step::EventSelect`]: `IA32_PERFEVTSELx` / AMD `PERF_CTLx` / uncore
//!    event selects get the event (with EN set);
//! 4. [`Step::FixedControl`]: Intel `IA32_FIXED_CTR_CTRL` gets the fields of
//!    the fixed counters used;
//! 5. [`Step::GlobalControl`]: `IA32_PERF_GLOBAL_CTRL` (bit x for PMCx, bit
//!    32 + x for FIXED_CTRx), AMD PerfMonV2 `PerfCntrGlobalCtl`, or the
//!    client uncore's `MSR_UNC_PERF_GLOBAL_CTRL` — last, so every counter
//!    starts at once from a known value.
//!
//! On Intel an event select with event code 0x00 and unit mask *n* + 1 is
//! perf's name for fixed counter *n* (`INST_RETIRED.ANY` is 0x00/0x01);
//! [`generic_hardware_event`] maps the kernel's generic `instructions`,
//! `cycles` and `ref-cycles` to those fixed counters, and the other generic
//! hardware events to the architectural (Intel) or Zen (AMD) encodings;
//! [`crate::generic_cache_event`] maps the generic cache events by CPU
//! model ([`crate::cache_events`]).
//!
//! Each filter register holds one value, so one `OFFCORE_RESPONSE` event
//! per register at a time ([`PlanError::FilterTaken`]). Other `config1`
//! users are refused with the reason: `ldlat` (`MSR_PEBS_LD_LAT_THRESHOLD`,
//! 0x3f6) and `frontend` (`MSR_PEBS_FRONTEND`, 0x3f7) qualify PEBS
//! records, and pmx-msr sets up no PEBS.
//!
//! Thread-scope events are programmed on every selected CPU; client uncore
//! events (PMU `uncore_cbox_N`, `uncore_arb`) once per package, on the
//! package's first selected CPU (see [`crate::scope`]).
//!
//! A plan has no side effects and touches no device; [`Plan::fill_old`]
//! (with the session code, which does the device I/O) reads the current
//! values for display, and [`crate::session::Session`] applies it.

use crate::catalogue::{
    width_mask, CounterClass, CounterWidths, Msr, MsrDef, Scope, CATALOGUE, UNCORE_BOX_WIDTH,
};
use crate::scope::{domains, DomainId};
use pmx_model::cpu::CpuId;
use pmx_model::encoding::{encode_attr, Arch, Encoded, PerfAttr, PERF_TYPE_RAW};
use pmx_model::register::{FieldValue, RegisterKind, INTEL_EVTSEL};
use pmx_model::topology::Topology;
use pmx_sys::PmuCaps;
use serde::Serialize;

/// The counters a plan may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuCounters {
    /// Register layout.
    pub arch: Arch,
    /// General-purpose counters per logical CPU.
    pub general: u32,
    /// Fixed counters (Intel).
    pub fixed: u32,
    /// Counter widths.
    pub widths: CounterWidths,
    /// A global control register exists: Intel architectural PMU version 2
    /// or later, AMD PerfMonV2.
    pub global_control: bool,
    /// AMD: the core counter extension (six counters at `0xC001_0200`);
    /// without it the four legacy `PERF_CTLx` are used.
    pub amd_core_ext: bool,
    /// Where the numbers come from (`CPUID 0xA`, `assumed: …`).
    pub source: String,
}

impl PmuCounters {
    /// From CPUID; `None` when CPUID describes no counters (a VM without a
    /// virtual PMU) or the vendor is neither Intel nor AMD.
    pub fn from_caps(caps: &PmuCaps) -> Option<PmuCounters> {
        let c = caps.counters?;
        let widths = CounterWidths {
            general: nonzero_or_default(c.general_width),
            fixed: nonzero_or_default(c.fixed_width),
        };
        if let Some(intel) = &caps.intel {
            return Some(PmuCounters {
                arch: Arch::Intel,
                general: c.general,
                fixed: c.fixed,
                widths,
                global_control: intel.version >= 2,
                amd_core_ext: false,
                source: c.source.to_string(),
            });
        }
        let amd = caps.amd.as_ref()?;
        Some(PmuCounters {
            arch: Arch::Amd,
            general: c.general,
            fixed: 0,
            widths,
            global_control: amd.perfmon_v2(),
            amd_core_ext: amd.core_ext || c.general > 4,
            source: c.source.to_string(),
        })
    }

    /// What a plan assumes for `cpu` when CPUID cannot say (another CPU
    /// than this one, or a VM): [`PmuCounters::assumed`] by family, plus,
    /// on AMD, PerfMonV2 where every CPU of the microarchitecture has it —
    /// Zen 4 and Zen 5 (AMD's PPRs for family 19h models 10h and later
    /// and family 1Ah: CPUID 0x80000022 EAX bit 0 set, `PerfCntrGlobalCtl`
    /// at 0xC000_0301), not Zen 3 and older.
    pub fn assumed_for(arch: Arch, cpu: &CpuId) -> PmuCounters {
        let mut p = PmuCounters::assumed(arch, Some(cpu.family));
        if arch == Arch::Amd {
            let code = cpu.microarch().map(|m| m.code);
            if matches!(code, Some("zen4" | "zen5")) {
                p.global_control = true;
                p.source = format!(
                    "assumed: {} counters of 48 bits, PerfMonV2 (every {} has it)",
                    p.general,
                    cpu.microarch().map_or("", |m| m.name)
                );
            }
        }
        p
    }

    /// What a plan assumes when CPUID cannot say (another CPU than this
    /// one, or a VM): Intel 4 general-purpose and 3 fixed counters of 48
    /// bits with global control; AMD the six-counter extension (family 15h
    /// and later, `family` in display form) without PerfMonV2.
    pub fn assumed(arch: Arch, family: Option<u32>) -> PmuCounters {
        match arch {
            Arch::Intel => PmuCounters {
                arch,
                general: 4,
                fixed: 3,
                widths: CounterWidths::default(),
                global_control: true,
                amd_core_ext: false,
                source: "assumed: 4 general-purpose and 3 fixed counters, 48 bits".to_string(),
            },
            Arch::Amd => {
                let ext = family.is_none_or(|f| f >= 0x15);
                PmuCounters {
                    arch,
                    general: if ext { 6 } else { 4 },
                    fixed: 0,
                    widths: CounterWidths::default(),
                    global_control: false,
                    amd_core_ext: ext,
                    source: format!(
                        "assumed: {} counters of 48 bits, no PerfMonV2",
                        if ext { 6 } else { 4 }
                    ),
                }
            }
        }
    }
}

fn nonzero_or_default(w: u32) -> u32 {
    if w == 0 {
        crate::catalogue::DEFAULT_COUNTER_WIDTH
    } else {
        w
    }
}

/// One event to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsrEvent {
    /// The name to report it under (the spec as typed).
    pub name: String,
    /// Its control-register encoding.
    pub encoded: Encoded,
    /// General-purpose counters it may use (an event constraint); `None`:
    /// any.
    pub allowed: Option<Vec<u32>>,
}

impl MsrEvent {
    /// An event that may use any counter.
    pub fn new(name: impl Into<String>, encoded: Encoded) -> MsrEvent {
        MsrEvent {
            name: name.into(),
            encoded,
            allowed: None,
        }
    }
}

/// A counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CounterId {
    /// General-purpose counter (Intel `IA32_PMCx`, AMD `PERF_CTRx`).
    General {
        /// Index.
        index: u32,
    },
    /// Intel fixed counter.
    Fixed {
        /// Index.
        index: u32,
    },
    /// Intel client uncore C-Box counter.
    CBox {
        /// The C-Box (LLC slice).
        cbox: u32,
        /// Counter 0 or 1.
        index: u32,
    },
    /// Intel client uncore ARB counter.
    Arb {
        /// Counter 0 or 1.
        index: u32,
    },
}

/// The order of writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Set a counter to zero.
    ZeroCounter,
    /// Set an `OFFCORE_RESPONSE` event's filter register.
    OffcoreFilter,
    /// Program an event select.
    EventSelect,
    /// Program the fixed-counter control.
    FixedControl,
    /// Enable the counters globally (last).
    GlobalControl,
}

impl Step {
    /// Short words for the plan listing.
    pub fn describe(self) -> &'static str {
        match self {
            Step::ZeroCounter => "zero the counter",
            Step::OffcoreFilter => "set the offcore-response filter",
            Step::EventSelect => "select the event",
            Step::FixedControl => "enable fixed counters",
            Step::GlobalControl => "enable globally",
        }
    }
}

/// An event and where it counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedEvent {
    /// The name it was given.
    pub name: String,
    /// The counter.
    pub counter: CounterId,
    /// The counter register's name (`IA32_PMC0`).
    pub counter_name: String,
    /// Its address (read for the count).
    pub counter_address: u32,
    /// The control register's name (`IA32_PERFEVTSEL0`; the fixed-counter
    /// control for a fixed counter).
    pub control_name: String,
    /// The value for the control register (for a fixed counter: its
    /// four-bit field, unshifted).
    pub control_value: u64,
    /// Thread (core counters) or package (uncore).
    pub scope: Scope,
    /// Counter width in bits: deltas wrap at 2^width.
    pub width: u32,
    /// What pmx changed or wants said (INT cleared, …).
    pub notes: Vec<String>,
}

/// One write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedWrite {
    /// When.
    pub step: Step,
    /// On which CPU.
    pub cpu: u32,
    /// The MSR address.
    pub address: u32,
    /// Its name.
    pub name: String,
    /// Its scope.
    pub scope: Scope,
    /// The value before, when read ([`Plan::fill_old`]).
    pub old: Option<u64>,
    /// The value written.
    pub new: u64,
    /// `new` decoded, when pmx knows the register's fields.
    pub fields: Vec<FieldValue>,
}

/// One counter to read: an event on one domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterSlot {
    /// Index into [`Plan::events`].
    pub event: usize,
    /// The domain the count belongs to.
    pub domain: DomainId,
    /// The CPU to read it on.
    pub cpu: u32,
    /// The counter's address.
    pub address: u32,
    /// Its width.
    pub width: u32,
}

/// Every write, in order, and every counter to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The counters planned with.
    pub pmu: PmuCounters,
    /// The selected CPUs.
    pub cpus: Vec<u32>,
    /// The events, in the order given.
    pub events: Vec<PlannedEvent>,
    /// The writes, in the order they are applied: by step, then CPU.
    pub writes: Vec<PlannedWrite>,
    /// The counters to read, grouped by CPU.
    pub slots: Vec<CounterSlot>,
}

/// What a register is set to when a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreValue {
    /// Zero: a global control is cleared first, so that no counter runs
    /// while the others are put back.
    Zero,
    /// The value it held before the session.
    Saved,
}

/// One write of the sequence that puts the registers back
/// ([`Plan::restore_order`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreWrite {
    /// On which CPU.
    pub cpu: u32,
    /// The MSR address.
    pub address: u32,
    /// Its name.
    pub name: String,
    /// What is written.
    pub value: RestoreValue,
}

impl Plan {
    /// The writes that undo the plan, in order: every global control
    /// (Intel `IA32_PERF_GLOBAL_CTRL`, AMD PerfMonV2 `PerfCntrGlobalCtl`,
    /// the client uncore's) to 0 first, then every register written, once
    /// each, in reverse plan order to its saved value, and the global
    /// controls' saved values last. [`crate::Session`] restores in exactly
    /// this order.
    pub fn restore_order(&self) -> Vec<RestoreWrite> {
        let mut firsts: Vec<&PlannedWrite> = Vec::new();
        for w in &self.writes {
            if !firsts
                .iter()
                .any(|f| f.cpu == w.cpu && f.address == w.address)
            {
                firsts.push(w);
            }
        }
        let global = |w: &&&PlannedWrite| w.step == Step::GlobalControl;
        let write = |w: &PlannedWrite, value| RestoreWrite {
            cpu: w.cpu,
            address: w.address,
            name: w.name.clone(),
            value,
        };
        let mut out = Vec::with_capacity(firsts.len() + 2);
        out.extend(
            firsts
                .iter()
                .filter(global)
                .map(|w| write(w, RestoreValue::Zero)),
        );
        out.extend(
            firsts
                .iter()
                .rev()
                .filter(|w| !global(w))
                .map(|w| write(w, RestoreValue::Saved)),
        );
        out.extend(
            firsts
                .iter()
                .filter(global)
                .map(|w| write(w, RestoreValue::Saved)),
        );
        out
    }

    /// The writes on one CPU, in order.
    pub fn writes_on(&self, cpu: u32) -> impl Iterator<Item = &PlannedWrite> {
        self.writes.iter().filter(move |w| w.cpu == cpu)
    }

    /// The CPUs that get writes or are read, ascending.
    pub fn cpus_touched(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .writes
            .iter()
            .map(|w| w.cpu)
            .chain(self.slots.iter().map(|s| s.cpu))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// No CPU selected.
    #[error("no CPU to program")]
    NoCpus,
    /// The event is for the other vendor's layout.
    #[error("{event}: encoded for {} event selects, but the counters are {}", crate::catalogue::arch_name(*.event_arch), crate::catalogue::arch_name(*.cpu_arch))]
    WrongVendor {
        /// The event.
        event: String,
        /// Its layout.
        event_arch: Arch,
        /// The counters'.
        cpu_arch: Arch,
    },
    /// The event has no register pmx can program.
    #[error("{event}: {why}")]
    NotProgrammable {
        /// The event.
        event: String,
        /// Why.
        why: String,
    },
    /// More events than counters (the msr backend does not multiplex).
    #[error("{needed} events need {what} counters, and there are {available}; the msr backend does not multiplex: count fewer events at once")]
    TooMany {
        /// Which counters.
        what: String,
        /// How many events.
        needed: usize,
        /// How many counters.
        available: u32,
    },
    /// No free counter among the event's allowed ones.
    #[error("{event}: counts only on general-purpose counter(s) {allowed:?}, and those are taken or absent")]
    Constraint {
        /// The event.
        event: String,
        /// Its allowed counters.
        allowed: Vec<u32>,
    },
    /// Two `OFFCORE_RESPONSE` events want the same filter register.
    #[error("{event}: {register} already holds the filter of {other}; one OFFCORE_RESPONSE event per filter register at a time: count this one with the other register's event ({alternative}) or in another run")]
    FilterTaken {
        /// The event.
        event: String,
        /// The register (`MSR_OFFCORE_RSP_0`).
        register: String,
        /// The event that has it.
        other: String,
        /// The event select that uses the other register.
        alternative: String,
    },
    /// A fixed counter the CPU does not have.
    #[error("{event}: fixed counter {index} does not exist here ({available} fixed counters)")]
    FixedAbsent {
        /// The event.
        event: String,
        /// The counter.
        index: u32,
        /// How many exist.
        available: u32,
    },
    /// Two events want the same fixed counter.
    #[error("{event}: fixed counter {index} already counts {other}")]
    FixedTaken {
        /// The event.
        event: String,
        /// The counter.
        index: u32,
        /// The event that has it.
        other: String,
    },
    /// Fields a fixed counter cannot apply.
    #[error("{event}: a fixed counter cannot apply {}", fields.join(", "))]
    FixedFields {
        /// The event.
        event: String,
        /// The fields.
        fields: Vec<String>,
    },
}

/// Fixed-counter control bits of one counter (shifted down): ring 0,
/// ring > 0, AnyThread.
const FIXED_OS: u64 = 1;
const FIXED_USR: u64 = 2;
const FIXED_ANY: u64 = 4;

/// `MSR_UNC_PERF_GLOBAL_CTRL`: EN (bit 29) and the five slice selects, as
/// the kernel's client-uncore driver writes it.
pub const UNC_GLOBAL_ENABLE: u64 = (1 << 29) | 0x1f;

/// The kernel's generic hardware event `config` (`PERF_COUNT_HW_*`) as a
/// register encoding: on Intel `instructions`, `cycles` and `ref-cycles`
/// go to fixed counters 0, 1 and 2, the others to architectural events; on
/// AMD the Zen encodings the kernel uses. Privilege comes from `attr`.
/// `None` when the kernel has no mapping for the vendor.
pub fn generic_hardware_event(arch: Arch, config: u64, attr: &PerfAttr) -> Option<Encoded> {
    let raw = match arch {
        Arch::Intel => match config {
            0 => 0x0200, // cycles → fixed counter 1
            1 => 0x0100, // instructions → fixed counter 0
            2 => 0x4f2e,
            3 => 0x412e,
            4 => 0x00c4,
            5 => 0x00c5,
            6 => 0x013c,
            9 => 0x0300, // ref-cycles → fixed counter 2
            _ => return None,
        },
        Arch::Amd => match config {
            0 => 0x0076,
            1 => 0x00c0,
            2 => 0xff60,
            3 => 0x0964,
            4 => 0x00c2,
            5 => 0x00c3,
            7 => 0x00a9,
            _ => return None,
        },
    };
    Some(raw_event(arch, raw, attr))
}

/// A core-PMU event select `raw` as a register encoding, privilege and
/// the other bits from `attr` (as the kernel adds them to a table's
/// value).
pub(crate) fn raw_event(arch: Arch, raw: u64, attr: &PerfAttr) -> Encoded {
    let a = PerfAttr {
        pmu: "cpu".to_string(),
        type_: Some(PERF_TYPE_RAW),
        config: raw,
        config1: 0,
        config2: 0,
        ..attr.clone()
    };
    encode_attr(a, arch.core_layout(), arch, false, &mut Vec::new())
}

/// The Intel fixed counter an event select stands for (event 0x00, unit
/// mask n + 1), if it is one.
pub fn intel_fixed_index(register: u64) -> Option<u32> {
    let event = register & 0xff;
    let umask = (register >> 8) & 0xff;
    (event == 0 && (1..=8).contains(&umask)).then(|| umask as u32 - 1)
}

/// `MSR_OFFCORE_RSP_0`; `MSR_OFFCORE_RSP_1` follows it (0x1a7).
pub const OFFCORE_RSP_BASE: u32 = 0x1A6;

/// The bits of `MSR_OFFCORE_RSP_x` any Intel core defines (37:0; each
/// model reserves some of them, and the kernel's per-model masks are
/// narrower): request types 15:0, response types 37:16.
pub const OFFCORE_RSP_VALID: u64 = (1 << 38) - 1;

/// The `MSR_OFFCORE_RSP_x` (0 or 1) whose filter an Intel event select
/// counts with, by event and unit mask as the kernel pairs them (its
/// `extra_regs` tables, Linux 6.1): `OFFCORE_RESPONSE_0` 0x01b7 and
/// `OFFCORE_RESPONSE_1` 0x01bb (Nehalem to Tiger Lake, Ice Lake-SP),
/// `OCR` 0x012a/0x012b (Sapphire Rapids, Granite Rapids, the Golden Cove
/// cores of Alder Lake and later), 0x01b7/0x02b7 (the Atom cores:
/// Silvermont to Gracemont). `None`: not an offcore-response event.
pub fn offcore_register(select: u64) -> Option<u32> {
    match select & 0xffff {
        0x01b7 | 0x012a => Some(0),
        0x01bb | 0x02b7 | 0x012b => Some(1),
        _ => None,
    }
}

/// The event select of the same kind that counts with the other filter
/// register, for [`PlanError::FilterTaken`]'s advice.
fn offcore_alternative(select: u64) -> &'static str {
    match select & 0xffff {
        0x01b7 => "event=0xbb,umask=0x1 on the big cores, event=0xb7,umask=0x2 on Atom cores",
        0x012a => "event=0x2b,umask=0x1",
        0x012b => "event=0x2a,umask=0x1",
        _ => "event=0xb7,umask=0x1",
    }
}

enum Kind {
    /// An event select, and the `MSR_OFFCORE_RSP_x` index and value of an
    /// `OFFCORE_RESPONSE` event.
    General(u64, Option<(u32, u64)>),
    Fixed(u32, u64),
    Uncore(Unit, u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    CBox(u32),
    Arb,
}

fn entry(template: &str) -> &'static MsrDef {
    CATALOGUE
        .iter()
        .find(|d| d.template == template)
        .unwrap_or_else(|| panic!("catalogue has no {template}"))
}

fn msr(template: &str, index: u32) -> Msr {
    Msr {
        def: entry(template),
        index,
    }
}

/// Assign `events` to counters and list the writes for `cpus`.
pub fn plan(
    events: &[MsrEvent],
    cpus: &[u32],
    pmu: &PmuCounters,
    topology: &Topology,
) -> Result<Plan, PlanError> {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err(PlanError::NoCpus);
    }
    let mut notes: Vec<Vec<String>> = vec![Vec::new(); events.len()];
    let kinds: Vec<Kind> = events
        .iter()
        .zip(notes.iter_mut())
        .map(|(e, n)| classify(e, pmu, n))
        .collect::<Result<_, _>>()?;
    filters_once(events, &kinds)?;

    let counters = assign(events, &kinds, pmu)?;
    let mut planned = Vec::with_capacity(events.len());
    for (i, (e, kind)) in events.iter().zip(&kinds).enumerate() {
        let counter = counters[i];
        let (counter_msr, control_name, value, scope, width) = match (kind, counter) {
            (Kind::General(v, _), CounterId::General { index }) => {
                let (ctr, ctl) = general_msrs(pmu, index);
                (ctr, ctl.name(), *v, Scope::Thread, pmu.widths.general)
            }
            (Kind::Fixed(_, nibble), CounterId::Fixed { index }) => (
                msr("IA32_FIXED_CTRx", index),
                "IA32_FIXED_CTR_CTRL".to_string(),
                *nibble,
                Scope::Thread,
                pmu.widths.fixed,
            ),
            (Kind::Uncore(_, v), CounterId::CBox { cbox, index }) => (
                msr(uncore_ctr_template(index), cbox),
                msr(uncore_sel_template(index), cbox).name(),
                *v,
                Scope::Package,
                UNCORE_BOX_WIDTH,
            ),
            (Kind::Uncore(_, v), CounterId::Arb { index }) => (
                msr("MSR_UNC_ARB_PERFCTRx", index),
                msr("MSR_UNC_ARB_PERFEVTSELx", index).name(),
                *v,
                Scope::Package,
                UNCORE_BOX_WIDTH,
            ),
            _ => unreachable!("assign keeps kinds and counters in step"),
        };
        planned.push(PlannedEvent {
            name: e.name.clone(),
            counter,
            counter_name: counter_msr.name(),
            counter_address: counter_msr.address(),
            control_name,
            control_value: value,
            scope,
            width,
            notes: std::mem::take(&mut notes[i]),
        });
    }

    let mut writes = Vec::new();
    let mut slots = Vec::new();
    let mut push = |step: Step, cpu: u32, m: Msr, new: u64| {
        writes.push(PlannedWrite {
            step,
            cpu,
            address: m.address(),
            name: m.name(),
            scope: m.scope(),
            old: None,
            new,
            fields: m.decode(new).unwrap_or_default(),
        });
    };

    // Core counters: on every CPU.
    let core: Vec<usize> = (0..planned.len())
        .filter(|&i| planned[i].scope == Scope::Thread)
        .collect();
    if !core.is_empty() {
        for &cpu in &cpus {
            let mut fixed_ctrl = 0u64;
            let mut global = 0u64;
            for &i in &core {
                let p = &planned[i];
                match p.counter {
                    CounterId::General { index } => {
                        let (ctr, ctl) = general_msrs(pmu, index);
                        push(Step::ZeroCounter, cpu, ctr, 0);
                        if let Kind::General(_, Some((rsp, filter))) = kinds[i] {
                            push(
                                Step::OffcoreFilter,
                                cpu,
                                msr("MSR_OFFCORE_RSP_x", rsp),
                                filter,
                            );
                        }
                        push(Step::EventSelect, cpu, ctl, p.control_value);
                        global |= 1 << index;
                    }
                    CounterId::Fixed { index } => {
                        push(Step::ZeroCounter, cpu, msr("IA32_FIXED_CTRx", index), 0);
                        fixed_ctrl |= p.control_value << (4 * index);
                        global |= 1 << (32 + index);
                    }
                    _ => {}
                }
                slots.push(CounterSlot {
                    event: i,
                    domain: DomainId::Cpu { cpu },
                    cpu,
                    address: p.counter_address,
                    width: p.width,
                });
            }
            if fixed_ctrl != 0 {
                push(
                    Step::FixedControl,
                    cpu,
                    msr("IA32_FIXED_CTR_CTRL", 0),
                    fixed_ctrl,
                );
            }
            if pmu.global_control {
                let g = match pmu.arch {
                    Arch::Intel => msr("IA32_PERF_GLOBAL_CTRL", 0),
                    Arch::Amd => msr("PERF_CNTR_GLOBAL_CTL", 0),
                };
                push(Step::GlobalControl, cpu, g, global);
            }
        }
    }

    // Client uncore: once per package.
    let uncore: Vec<usize> = (0..planned.len())
        .filter(|&i| planned[i].scope == Scope::Package)
        .collect();
    if !uncore.is_empty() {
        for d in domains(Scope::Package, &cpus, topology) {
            for &i in &uncore {
                let p = &planned[i];
                let (ctr, sel) = match p.counter {
                    CounterId::CBox { cbox, index } => (
                        msr(uncore_ctr_template(index), cbox),
                        msr(uncore_sel_template(index), cbox),
                    ),
                    CounterId::Arb { index } => (
                        msr("MSR_UNC_ARB_PERFCTRx", index),
                        msr("MSR_UNC_ARB_PERFEVTSELx", index),
                    ),
                    _ => continue,
                };
                push(Step::ZeroCounter, d.cpu, ctr, 0);
                push(Step::EventSelect, d.cpu, sel, p.control_value);
                slots.push(CounterSlot {
                    event: i,
                    domain: d.id,
                    cpu: d.cpu,
                    address: p.counter_address,
                    width: p.width,
                });
            }
            push(
                Step::GlobalControl,
                d.cpu,
                msr("MSR_UNC_PERF_GLOBAL_CTRL", 0),
                UNC_GLOBAL_ENABLE,
            );
        }
    }

    // Apply order: by step, then CPU; stable, so per-CPU order is kept.
    writes.sort_by_key(|w| (w.step, w.cpu));
    slots.sort_by_key(|s| (s.cpu, s.event));
    Ok(Plan {
        pmu: pmu.clone(),
        cpus,
        events: planned,
        writes,
        slots,
    })
}

/// One `OFFCORE_RESPONSE` event per filter register.
fn filters_once(events: &[MsrEvent], kinds: &[Kind]) -> Result<(), PlanError> {
    let mut owner: [Option<usize>; 2] = [None; 2];
    for (i, k) in kinds.iter().enumerate() {
        let Kind::General(select, Some((rsp, _))) = *k else {
            continue;
        };
        if let Some(other) = owner[rsp as usize] {
            return Err(PlanError::FilterTaken {
                event: events[i].name.clone(),
                register: format!("MSR_OFFCORE_RSP_{rsp}"),
                other: events[other].name.clone(),
                alternative: offcore_alternative(select).to_string(),
            });
        }
        owner[rsp as usize] = Some(i);
    }
    Ok(())
}

fn uncore_ctr_template(index: u32) -> &'static str {
    if index == 0 {
        "MSR_UNC_CBO_x_PERFCTR0"
    } else {
        "MSR_UNC_CBO_x_PERFCTR1"
    }
}

fn uncore_sel_template(index: u32) -> &'static str {
    if index == 0 {
        "MSR_UNC_CBO_x_PERFEVTSEL0"
    } else {
        "MSR_UNC_CBO_x_PERFEVTSEL1"
    }
}

/// Counter and control MSR of general-purpose counter `index`.
fn general_msrs(pmu: &PmuCounters, index: u32) -> (Msr, Msr) {
    match pmu.arch {
        Arch::Intel => (msr("IA32_PMCx", index), msr("IA32_PERFEVTSELx", index)),
        Arch::Amd if pmu.amd_core_ext => (msr("PERF_CTR_EXTx", index), msr("PERF_CTL_EXTx", index)),
        Arch::Amd => (msr("PERF_CTRx", index), msr("PERF_CTLx", index)),
    }
}

fn classify(e: &MsrEvent, pmu: &PmuCounters, notes: &mut Vec<String>) -> Result<Kind, PlanError> {
    let enc = &e.encoded;
    if enc.arch != pmu.arch {
        return Err(PlanError::WrongVendor {
            event: e.name.clone(),
            event_arch: enc.arch,
            cpu_arch: pmu.arch,
        });
    }
    let layout = enc.register_kind.layout();
    let mut v = enc.register;
    // pmx takes no overflow interrupts: an INT bit would send PMIs to a
    // kernel that did not ask for them.
    for name in ["INT", "OVF_PMI"] {
        if let Some(f) = layout.field(name) {
            if v & f.mask() != 0 {
                v &= !f.mask();
                notes.push(format!(
                    "{name} cleared: pmx reads counters and takes no overflow interrupts"
                ));
            }
        }
    }
    for name in ["EN", "En"] {
        if let Some(f) = layout.field(name) {
            v |= f.mask();
        }
    }
    match enc.register_kind {
        // perf's `config1` is the value of a register beside the event
        // select: an OFFCORE_RESPONSE event's filter is programmed with
        // it (also 0, as the kernel writes it: never whatever the register
        // held); `ldlat` and `frontend` qualify PEBS records only, so an
        // event with them is refused rather than counted wrong.
        RegisterKind::IntelEvtSel if offcore_register(v).is_some() => {
            let filter = enc.attr.config1;
            let index = offcore_register(v).unwrap_or(0);
            if filter & !OFFCORE_RSP_VALID != 0 {
                return Err(PlanError::NotProgrammable {
                    event: e.name.clone(),
                    why: format!(
                        "its offcore_rsp {filter:#x} sets bits {:#x}, above bit 37 of MSR_OFFCORE_RSP_{index}, which no Intel core defines",
                        filter & !OFFCORE_RSP_VALID
                    ),
                });
            }
            notes.push(format!(
                "filter: MSR_OFFCORE_RSP_{index} ({:#x}) = {filter:#x}",
                OFFCORE_RSP_BASE + index
            ));
            Ok(Kind::General(v, Some((index, filter))))
        }
        RegisterKind::IntelEvtSel if enc.attr.config1 != 0 => Err(PlanError::NotProgrammable {
            event: e.name.clone(),
            why: format!(
                "its config1 {:#x} (ldlat or frontend) goes to MSR_PEBS_LD_LAT_THRESHOLD (0x3f6) or MSR_PEBS_FRONTEND (0x3f7), which qualify PEBS records, and pmx-msr sets up no PEBS; counted without it the number would be wrong: count it with --backend perf",
                enc.attr.config1
            ),
        }),
        RegisterKind::IntelEvtSel => {
            if let Some(index) = intel_fixed_index(v) {
                let allowed = ["EventSelect", "UMASK", "USR", "OS", "ANY", "EN"];
                let extra: Vec<String> = INTEL_EVTSEL
                    .fields
                    .iter()
                    .filter(|f| v & f.mask() != 0 && !allowed.contains(&f.name))
                    .map(|f| format!("{} (bit {})", f.name, f.bits()))
                    .collect();
                if !extra.is_empty() {
                    return Err(PlanError::FixedFields {
                        event: e.name.clone(),
                        fields: extra,
                    });
                }
                if index >= pmu.fixed {
                    return Err(PlanError::FixedAbsent {
                        event: e.name.clone(),
                        index,
                        available: pmu.fixed,
                    });
                }
                let bit = |name: &str| layout.get(v, name).unwrap_or(0) != 0;
                let mut nibble = 0;
                if bit("OS") {
                    nibble |= FIXED_OS;
                }
                if bit("USR") {
                    nibble |= FIXED_USR;
                }
                if bit("ANY") {
                    nibble |= FIXED_ANY;
                }
                return Ok(Kind::Fixed(index, nibble));
            }
            Ok(Kind::General(v, None))
        }
        RegisterKind::AmdPerfCtl => Ok(Kind::General(v, None)),
        RegisterKind::IntelUncoreEvtSel => {
            let pmu_name = enc.attr.pmu.as_str();
            let unit = if let Some(n) = pmu_name.strip_prefix("uncore_cbox_") {
                match n.parse::<u32>() {
                    Ok(n) if n < entry("MSR_UNC_CBO_x_PERFCTR0").count => Unit::CBox(n),
                    _ => {
                        return Err(PlanError::NotProgrammable {
                            event: e.name.clone(),
                            why: format!(
                                "pmx knows C-Boxes 0 to 3 of client parts, not {pmu_name}"
                            ),
                        })
                    }
                }
            } else if pmu_name == "uncore_arb" {
                Unit::Arb
            } else {
                return Err(PlanError::NotProgrammable {
                    event: e.name.clone(),
                    why: format!(
                        "uncore PMU {pmu_name}: pmx programs the client uncore C-Boxes (uncore_cbox_N) and ARB (uncore_arb) only"
                    ),
                });
            };
            Ok(Kind::Uncore(unit, v))
        }
        other => Err(PlanError::NotProgrammable {
            event: e.name.clone(),
            why: format!("{} is not an event select", other.layout().name),
        }),
    }
}

/// Give every event a counter: fixed counters by index, general-purpose
/// ones most-constrained first (lowest free allowed index), uncore per unit
/// in order.
fn assign(
    events: &[MsrEvent],
    kinds: &[Kind],
    pmu: &PmuCounters,
) -> Result<Vec<CounterId>, PlanError> {
    let mut out: Vec<Option<CounterId>> = vec![None; events.len()];
    let mut fixed_owner: Vec<Option<usize>> = vec![None; pmu.fixed as usize];
    for (i, k) in kinds.iter().enumerate() {
        if let Kind::Fixed(index, _) = k {
            let slot = &mut fixed_owner[*index as usize];
            if let Some(other) = *slot {
                return Err(PlanError::FixedTaken {
                    event: events[i].name.clone(),
                    index: *index,
                    other: events[other].name.clone(),
                });
            }
            *slot = Some(i);
            out[i] = Some(CounterId::Fixed { index: *index });
        }
    }
    let general: Vec<usize> = (0..kinds.len())
        .filter(|&i| matches!(kinds[i], Kind::General(..)))
        .collect();
    if general.len() > pmu.general as usize {
        return Err(PlanError::TooMany {
            what: "general-purpose".to_string(),
            needed: general.len(),
            available: pmu.general,
        });
    }
    let all: Vec<u32> = (0..pmu.general).collect();
    let mut order = general.clone();
    order.sort_by_key(|&i| events[i].allowed.as_ref().map_or(usize::MAX, Vec::len));
    let mut taken = vec![false; pmu.general as usize];
    for i in order {
        let allowed = events[i].allowed.as_deref().unwrap_or(&all);
        let Some(&index) = allowed
            .iter()
            .find(|&&c| c < pmu.general && !taken[c as usize])
        else {
            return Err(PlanError::Constraint {
                event: events[i].name.clone(),
                allowed: allowed.to_vec(),
            });
        };
        taken[index as usize] = true;
        out[i] = Some(CounterId::General { index });
    }
    let mut used: Vec<(Unit, u32)> = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        if let Kind::Uncore(unit, _) = k {
            let n = used.iter().filter(|(u, _)| u == unit).count() as u32;
            if n >= 2 {
                return Err(PlanError::TooMany {
                    what: match unit {
                        Unit::CBox(c) => format!("C-Box {c}"),
                        Unit::Arb => "ARB".to_string(),
                    },
                    needed: n as usize + 1,
                    available: 2,
                });
            }
            used.push((*unit, n));
            out[i] = Some(match unit {
                Unit::CBox(cbox) => CounterId::CBox {
                    cbox: *cbox,
                    index: n,
                },
                Unit::Arb => CounterId::Arb { index: n },
            });
        }
    }
    Ok(out
        .into_iter()
        .map(|c| c.unwrap_or(CounterId::General { index: 0 }))
        .collect())
}

/// The counter's value mask for deltas.
pub fn counter_mask(width: u32) -> u64 {
    width_mask(width)
}

/// The width class of a counter.
pub fn counter_class(counter: CounterId) -> CounterClass {
    match counter {
        CounterId::General { .. } => CounterClass::General,
        CounterId::Fixed { .. } => CounterClass::Fixed,
        CounterId::CBox { .. } | CounterId::Arb { .. } => CounterClass::UncoreBox,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_testkit::events::encode as enc;

    /// A plan's writes as (step, register, value), in order.
    fn steps(p: &Plan) -> Vec<(Step, u32, u64)> {
        (p.writes.iter())
            .map(|w| (w.step, w.address, w.new))
            .collect()
    }

    fn instructions(arch: Arch) -> Encoded {
        let attr = PerfAttr {
            type_: Some(0),
            config: 1,
            ..PerfAttr::default()
        };
        generic_hardware_event(arch, 1, &attr).unwrap()
    }

    #[test]
    fn the_worked_example() {
        let events = vec![
            MsrEvent::new(
                "cpu/event=0x2e,umask=0x41/u",
                enc("cpu/event=0x2e,umask=0x41/u", Arch::Intel),
            ),
            MsrEvent::new("instructions", instructions(Arch::Intel)),
        ];
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let p = plan(&events, &[0], &pmu, &Topology::default()).unwrap();
        let w = steps(&p);
        assert_eq!(
            w,
            vec![
                (Step::ZeroCounter, 0xc1, 0),
                (Step::ZeroCounter, 0x309, 0),
                (Step::EventSelect, 0x186, 0x41412e),
                (Step::FixedControl, 0x38d, 0x3),
                (Step::GlobalControl, 0x38f, (1 << 32) | 1),
            ]
        );
        assert_eq!(p.events[1].counter, CounterId::Fixed { index: 0 });
        assert_eq!(p.events[1].counter_name, "IA32_FIXED_CTR0");
        assert_eq!(p.slots.len(), 2);
        let names: Vec<&str> = p.writes.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "IA32_PMC0",
                "IA32_FIXED_CTR0",
                "IA32_PERFEVTSEL0",
                "IA32_FIXED_CTR_CTRL",
                "IA32_PERF_GLOBAL_CTRL"
            ]
        );
    }

    #[test]
    fn amd_uses_the_extension_and_perfmon_v2() {
        let mut pmu = PmuCounters::assumed(Arch::Amd, Some(0x19));
        pmu.global_control = true;
        let events = vec![
            MsrEvent::new("a", enc("cpu/event=0x4e1,umask=0xf7/", Arch::Amd)),
            MsrEvent::new("instructions", instructions(Arch::Amd)),
        ];
        let p = plan(&events, &[0, 1], &pmu, &Topology::default()).unwrap();
        let cpu1: Vec<(u32, u64)> = p.writes_on(1).map(|w| (w.address, w.new)).collect();
        assert_eq!(
            cpu1,
            vec![
                (0xC001_0201, 0),
                (0xC001_0203, 0),
                (0xC001_0200, 0x4_0043_f7e1),
                (0xC001_0202, 0x43_00c0),
                (0xC000_0301, 0b11),
            ]
        );
        // Global control cleared first, registers back in reverse, the
        // global control's old value last.
        let order: Vec<(u32, RestoreValue)> = p
            .restore_order()
            .into_iter()
            .filter(|r| r.cpu == 1)
            .map(|r| (r.address, r.value))
            .collect();
        assert_eq!(
            order,
            vec![
                (0xC000_0301, RestoreValue::Zero),
                (0xC001_0202, RestoreValue::Saved),
                (0xC001_0200, RestoreValue::Saved),
                (0xC001_0203, RestoreValue::Saved),
                (0xC001_0201, RestoreValue::Saved),
                (0xC000_0301, RestoreValue::Saved),
            ]
        );
        // PerfMonV2 assumed by microarchitecture: Zen 4 and 5, not Zen 3.
        for (key, v2) in [
            ("AuthenticAMD-25-1-1", false),
            ("AuthenticAMD-25-11-1", true),
            ("AuthenticAMD-25-61-2", true),
            ("AuthenticAMD-26-2-1", true),
            ("AuthenticAMD-23-31-0", false),
        ] {
            let cpu: CpuId = key.parse().unwrap();
            assert_eq!(
                PmuCounters::assumed_for(Arch::Amd, &cpu).global_control,
                v2,
                "{key}"
            );
        }
        let legacy = PmuCounters::assumed(Arch::Amd, Some(0x10));
        let p = plan(&events, &[0], &legacy, &Topology::default()).unwrap();
        assert_eq!(p.writes[0].address, 0xC001_0004);
        assert!(p.writes.iter().all(|w| w.step != Step::GlobalControl));
    }

    #[test]
    fn too_many_and_conflicts() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let gp: Vec<MsrEvent> = (0..5)
            .map(|i| MsrEvent::new(format!("e{i}"), enc("cpu/event=0xc4/", Arch::Intel)))
            .collect();
        assert!(matches!(
            plan(&gp, &[0], &pmu, &Topology::default()),
            Err(PlanError::TooMany {
                needed: 5,
                available: 4,
                ..
            })
        ));
        let twice = vec![
            MsrEvent::new("a", instructions(Arch::Intel)),
            MsrEvent::new("b", instructions(Arch::Intel)),
        ];
        assert!(matches!(
            plan(&twice, &[0], &pmu, &Topology::default()),
            Err(PlanError::FixedTaken { .. })
        ));
        let amd = vec![MsrEvent::new("x", instructions(Arch::Amd))];
        assert!(matches!(
            plan(&amd, &[0], &pmu, &Topology::default()),
            Err(PlanError::WrongVendor { .. })
        ));
        let slots = vec![MsrEvent::new(
            "s",
            enc("cpu/event=0x0,umask=0x4/", Arch::Intel),
        )];
        assert!(matches!(
            plan(&slots, &[0], &pmu, &Topology::default()),
            Err(PlanError::FixedAbsent { index: 3, .. })
        ));
        let cm = vec![MsrEvent::new(
            "c",
            enc("cpu/event=0x0,umask=0x1,cmask=1/", Arch::Intel),
        )];
        assert!(matches!(
            plan(&cm, &[0], &pmu, &Topology::default()),
            Err(PlanError::FixedFields { .. })
        ));
    }

    /// `OFFCORE_RESPONSE_0/1` with their filters: each filter written to
    /// its register after the counters are zeroed and before the event
    /// selects, decoded, restored with the rest.
    #[test]
    fn offcore_filters_go_to_their_registers() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let events = vec![
            MsrEvent::new(
                "o0",
                enc("cpu/event=0xb7,umask=0x1,offcore_rsp=0x10001/", Arch::Intel),
            ),
            MsrEvent::new(
                "o1",
                enc(
                    "cpu/event=0xbb,umask=0x1,offcore_rsp=0x3fc0010002/",
                    Arch::Intel,
                ),
            ),
        ];
        let p = plan(&events, &[0], &pmu, &Topology::default()).unwrap();
        let w = steps(&p);
        assert_eq!(
            w,
            vec![
                (Step::ZeroCounter, 0xc1, 0),
                (Step::ZeroCounter, 0xc2, 0),
                (Step::OffcoreFilter, 0x1a6, 0x10001),
                (Step::OffcoreFilter, 0x1a7, 0x3fc0010002),
                (Step::EventSelect, 0x186, 0x4301b7),
                (Step::EventSelect, 0x187, 0x4301bb),
                (Step::GlobalControl, 0x38f, 0b11),
            ]
        );
        assert_eq!(p.writes[2].name, "MSR_OFFCORE_RSP_0");
        assert_eq!(p.writes[3].name, "MSR_OFFCORE_RSP_1");
        let fields: Vec<(&str, u64)> = p.writes[3]
            .fields
            .iter()
            .map(|f| (f.field.name, f.value))
            .collect();
        assert_eq!(
            fields,
            [
                ("REQUEST", 2),
                ("ANY_RESPONSE", 1),
                ("SUPPLIER", 1 << 13),
                ("SNOOP", 0x7f),
                ("reserved", 0)
            ]
        );
        assert!(p.events[0]
            .notes
            .iter()
            .any(|n| n.contains("MSR_OFFCORE_RSP_0 (0x1a6) = 0x10001")));
        let restored: Vec<u32> = p.restore_order().iter().map(|r| r.address).collect();
        assert_eq!(
            restored,
            [0x38f, 0x187, 0x186, 0x1a7, 0x1a6, 0xc2, 0xc1, 0x38f]
        );
        // With no filter the kernel writes 0, and so does pmx: never
        // whatever the register held.
        let bare = vec![MsrEvent::new(
            "b",
            enc("cpu/event=0xb7,umask=0x1/", Arch::Intel),
        )];
        let p = plan(&bare, &[0], &pmu, &Topology::default()).unwrap();
        assert!(p.writes.iter().any(|w| w.address == 0x1a6 && w.new == 0));
        // The other pairs: Sapphire Rapids' OCR, the Atom cores' umask 2.
        for (spec, address) in [
            ("cpu/event=0x2a,umask=0x1,offcore_rsp=0x10001/", 0x1a6),
            ("cpu/event=0x2b,umask=0x1,offcore_rsp=0x10001/", 0x1a7),
            ("cpu/event=0xb7,umask=0x2,offcore_rsp=0x10001/", 0x1a7),
        ] {
            let p = plan(
                &[MsrEvent::new("x", enc(spec, Arch::Intel))],
                &[0],
                &pmu,
                &Topology::default(),
            )
            .unwrap();
            let f: Vec<u32> = p
                .writes
                .iter()
                .filter(|w| w.step == Step::OffcoreFilter)
                .map(|w| w.address)
                .collect();
            assert_eq!(f, [address], "{spec}");
        }
    }

    /// One event per filter register: a second on the same register (a
    /// third offcore event always is one) is refused with the advice.
    #[test]
    fn a_filter_register_counts_one_event_at_a_time() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let o = |name: &str, spec: &str| MsrEvent::new(name, enc(spec, Arch::Intel));
        let events = vec![
            o("o0", "cpu/event=0xb7,umask=0x1,offcore_rsp=0x10001/"),
            o("o1", "cpu/event=0xbb,umask=0x1,offcore_rsp=0x10002/"),
            o("o2", "cpu/event=0xb7,umask=0x1,offcore_rsp=0x10004/"),
        ];
        match plan(&events, &[0], &pmu, &Topology::default()) {
            Err(e @ PlanError::FilterTaken { .. }) => {
                let why = e.to_string();
                assert!(
                    why.starts_with("o2: MSR_OFFCORE_RSP_0 already holds the filter of o0"),
                    "{why}"
                );
                assert!(why.contains("event=0xbb,umask=0x1"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(plan(&events[..2], &[0], &pmu, &Topology::default()).is_ok());
        let ocr = vec![
            o("a", "cpu/event=0x2b,umask=0x1,offcore_rsp=0x1/"),
            o("b", "cpu/event=0x2b,umask=0x1,offcore_rsp=0x2/"),
        ];
        let e = plan(&ocr, &[0], &pmu, &Topology::default()).unwrap_err();
        assert!(
            e.to_string().contains("MSR_OFFCORE_RSP_1") && e.to_string().contains("event=0x2a"),
            "{e}"
        );
    }

    /// `ldlat` and `frontend` qualify PEBS records only: refused with the
    /// register and the reason, never counted without their value; a
    /// filter past bit 37 likewise.
    #[test]
    fn pebs_qualifiers_are_refused_not_dropped() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        for (spec, register) in [
            ("cpu/event=0xcd,umask=0x1,ldlat=3/", "0x3f6"),
            ("cpu/event=0xc6,umask=0x1,frontend=0x11/", "0x3f7"),
            (
                "cpu/event=0xb7,umask=0x1,offcore_rsp=0x10000000001/",
                "above bit 37",
            ),
        ] {
            match plan(
                &[MsrEvent::new("q", enc(spec, Arch::Intel))],
                &[0],
                &pmu,
                &Topology::default(),
            ) {
                Err(PlanError::NotProgrammable { why, .. }) => {
                    assert!(why.contains(register), "{spec}: {why}")
                }
                other => panic!("{spec}: {other:?}"),
            }
        }
    }

    #[test]
    fn constraints_are_honoured() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let mut only2 = MsrEvent::new(
            "only2",
            enc("cpu/event=0xa3,umask=0x8,cmask=8/", Arch::Intel),
        );
        only2.allowed = Some(vec![2]);
        let events = vec![
            MsrEvent::new("a", enc("cpu/event=0xc4/", Arch::Intel)),
            MsrEvent::new("b", enc("cpu/event=0xc5/", Arch::Intel)),
            MsrEvent::new("c", enc("cpu/event=0x3c/", Arch::Intel)),
            only2,
        ];
        let p = plan(&events, &[0], &pmu, &Topology::default()).unwrap();
        assert_eq!(p.events[3].counter, CounterId::General { index: 2 });
        assert_eq!(p.events[2].counter, CounterId::General { index: 3 });
    }

    #[test]
    fn sampling_bits_are_cleared() {
        let pmu = PmuCounters::assumed(Arch::Intel, None);
        let mut e = enc("cpu/event=0xc4/", Arch::Intel);
        e.register |= 1 << 20;
        let p = plan(&[MsrEvent::new("s", e)], &[0], &pmu, &Topology::default()).unwrap();
        assert_eq!(p.events[0].control_value & (1 << 20), 0);
        assert!(p.events[0].notes[0].contains("INT cleared"));
    }
}
