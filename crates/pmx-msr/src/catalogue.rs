//! The MSRs pmx knows: names, addresses, vendor, scope, and writable bits.
//!
//! Each entry is an [`MsrDef`]: one register, or a family of numbered
//! registers (`IA32_PERFEVTSELx` at `0x186 + x`) whose name template holds a
//! lowercase `x` where the index goes. [`lookup_name`] matches names without
//! regard to case (`ia32_perfevtsel0`); [`lookup_address`] finds the entry an
//! address belongs to; [`resolve`] takes either, as `pmx msr read` does.
//!
//! Layouts come from `pmx-model` ([`RegisterKind`]) where it has one; a few
//! registers it has no layout for (RAPL units, uncore global control) carry
//! their own field list here, built from the same [`FieldDef`] type.
//!
//! Sources: Intel SDM vol. 3B ("Performance Monitoring", "Power and Thermal
//! Management") and vol. 4 (MSRs of 6th-generation Core for the client
//! uncore); AMD PPRs for families 17h/19h (PERF_CTL/PERF_CTR, PerfMonV2,
//! RAPL).

use pmx_model::encoding::Arch;
use pmx_model::register::{FieldDef, FieldKind, FieldValue, Layout, PerfUse, RegisterKind};
use serde::Serialize;

/// How widely a register is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One per logical CPU (hardware thread).
    Thread,
    /// One per physical core, shared by its SMT siblings.
    Core,
    /// One per package (socket): uncore, RAPL.
    Package,
}

impl Scope {
    /// `thread`, `core`, `package`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Thread => "thread",
            Scope::Core => "core",
            Scope::Package => "package",
        }
    }
}

/// What a register is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A counter (counts events; writable to preset it).
    Counter,
    /// Programs counters (event select, fixed or global control).
    Control,
    /// Reports state (overflow status); read-only.
    Status,
    /// Clears status bits when written.
    StatusClear,
    /// Describes the hardware (capabilities, units); read-only.
    Info,
    /// An energy counter (RAPL); read-only.
    Energy,
    /// A time-stamp or clock counter; read-only here.
    Clock,
}

/// Which counter a counter register is, for its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterClass {
    /// A general-purpose core counter (Intel PMC, AMD PERF_CTR).
    General,
    /// An Intel fixed-function counter.
    Fixed,
    /// An Intel client uncore C-Box or ARB counter (44 bits).
    UncoreBox,
    /// The Intel client uncore fixed counter (48 bits).
    UncoreFixed,
}

/// Width of the client uncore C-Box and ARB counters.
pub const UNCORE_BOX_WIDTH: u32 = 44;
/// Width of the client uncore fixed counter.
pub const UNCORE_FIXED_WIDTH: u32 = 48;
/// Counter width when CPUID does not say.
pub const DEFAULT_COUNTER_WIDTH: u32 = 48;

/// Which bits of a register may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Writable {
    /// None: the register is read-only, or pmx does not write it.
    No,
    /// Exactly these bits.
    Mask(u64),
    /// Every non-reserved field of the register's layout.
    LayoutFields,
    /// The counter's width (from CPUID for core counters).
    Counter(CounterClass),
}

/// One register or a numbered family of registers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MsrDef {
    /// Name; a lowercase `x` stands for the index in a family
    /// (`IA32_PERFEVTSELx`, `MSR_UNC_CBO_x_PERFCTR0`).
    pub template: &'static str,
    /// Other spellings (Linux's names, the PPR's), same `x` convention.
    pub aliases: &'static [&'static str],
    /// Address of index 0.
    pub base: u32,
    /// Address step between indices.
    pub stride: u32,
    /// How many indices the architecture defines (1: a single register).
    /// The CPU may have fewer (CPUID says how many counters exist).
    pub count: u32,
    /// `None`: both vendors (architectural x86).
    pub vendor: Option<Arch>,
    /// Scope.
    pub scope: Scope,
    /// What it is for.
    pub role: Role,
    /// `pmx-model`'s layout, when it has one.
    pub layout: Option<RegisterKind>,
    /// Fields when `pmx-model` has no layout (empty otherwise).
    #[serde(skip)]
    pub fields: &'static [FieldDef],
    /// Which bits pmx lets a user write.
    pub writable: Writable,
    /// One line on what it is.
    pub doc: &'static str,
}

impl MsrDef {
    /// Whether the name is a family (has an index).
    pub fn is_family(&self) -> bool {
        self.template.contains('x')
    }

    /// The address of index `i`.
    pub fn address(&self, i: u32) -> u32 {
        self.base.wrapping_add(self.stride.wrapping_mul(i))
    }

    /// The name of index `i` (the template itself for a single register).
    pub fn name(&self, i: u32) -> String {
        if self.is_family() {
            self.template.replacen('x', &i.to_string(), 1)
        } else {
            self.template.to_string()
        }
    }

    /// The index `address` has in this family, if it belongs to it.
    pub fn index_of(&self, address: u32) -> Option<u32> {
        let off = address.checked_sub(self.base)?;
        if self.count <= 1 || self.stride == 0 {
            return (off == 0).then_some(0);
        }
        (off % self.stride == 0 && off / self.stride < self.count).then_some(off / self.stride)
    }

    /// A readable range of addresses: `0x186` or `0x186..0x18d`.
    pub fn address_range(&self) -> String {
        if self.count <= 1 {
            format!("{:#x}", self.base)
        } else {
            format!(
                "{:#x}..{:#x} (step {:#x})",
                self.base,
                self.address(self.count - 1),
                self.stride
            )
        }
    }
}

/// One register: a catalogue entry and its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msr {
    /// The entry.
    pub def: &'static MsrDef,
    /// The index within the family (0 for a single register).
    pub index: u32,
}

impl PartialEq for MsrDef {
    fn eq(&self, other: &MsrDef) -> bool {
        self.template == other.template && self.base == other.base
    }
}
impl Eq for MsrDef {}

impl Msr {
    /// The register's address.
    pub fn address(&self) -> u32 {
        self.def.address(self.index)
    }

    /// The register's name (`IA32_PERFEVTSEL0`).
    pub fn name(&self) -> String {
        self.def.name(self.index)
    }

    /// Its scope.
    pub fn scope(&self) -> Scope {
        self.def.scope
    }

    /// The `pmx-model` layout, if any.
    pub fn layout(&self) -> Option<&'static Layout> {
        self.def.layout.map(RegisterKind::layout)
    }

    /// Every field of `value`, when pmx knows the register's fields.
    pub fn decode(&self, value: u64) -> Option<Vec<FieldValue>> {
        if let Some(l) = self.layout() {
            return Some(l.decode(value));
        }
        if self.def.fields.is_empty() {
            return None;
        }
        Some(
            self.def
                .fields
                .iter()
                .map(|f| FieldValue {
                    field: *f,
                    value: f.get(value),
                })
                .collect(),
        )
    }

    /// The bits a user may write, given the counter widths.
    pub fn writable_mask(&self, widths: &CounterWidths) -> u64 {
        match self.def.writable {
            Writable::No => 0,
            Writable::Mask(m) => m,
            Writable::LayoutFields => match self.layout() {
                Some(l) => !l.reserved_mask(),
                None => {
                    let reserved = self
                        .def
                        .fields
                        .iter()
                        .filter(|f| f.kind == FieldKind::Reserved)
                        .fold(0, |m, f| m | f.mask());
                    !reserved
                }
            },
            Writable::Counter(class) => width_mask(widths.of(class)),
        }
    }

    /// The fields (by name) that `bits` touch, for messages.
    pub fn fields_in(&self, bits: u64) -> Vec<String> {
        let fields: Vec<FieldDef> = match self.layout() {
            Some(l) => l.fields.to_vec(),
            None => self.def.fields.to_vec(),
        };
        fields
            .iter()
            .filter(|f| f.mask() & bits != 0)
            .map(|f| {
                if f.kind == FieldKind::Reserved {
                    format!("reserved bits {}", f.bits())
                } else {
                    format!("{} (bit {})", f.name, f.bits())
                }
            })
            .collect()
    }
}

/// Counter widths in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterWidths {
    /// General-purpose counters.
    pub general: u32,
    /// Fixed counters.
    pub fixed: u32,
}

impl Default for CounterWidths {
    fn default() -> CounterWidths {
        CounterWidths {
            general: DEFAULT_COUNTER_WIDTH,
            fixed: DEFAULT_COUNTER_WIDTH,
        }
    }
}

impl CounterWidths {
    /// The width of a counter class.
    pub fn of(&self, class: CounterClass) -> u32 {
        match class {
            CounterClass::General => self.general,
            CounterClass::Fixed => self.fixed,
            CounterClass::UncoreBox => UNCORE_BOX_WIDTH,
            CounterClass::UncoreFixed => UNCORE_FIXED_WIDTH,
        }
    }
}

/// The low `width` bits (all 64 for 64 and above; none for 0).
pub fn width_mask(width: u32) -> u64 {
    match width {
        0 => 0,
        w if w >= 64 => u64::MAX,
        w => (1u64 << w) - 1,
    }
}

// ---------------------------------------------------------------------------
// Fields of registers pmx-model has no layout for.

const fn bit(name: &'static str, b: u8, doc: &'static str) -> FieldDef {
    FieldDef {
        name,
        lo: b,
        hi: b,
        kind: FieldKind::Flag,
        perf: PerfUse::NotApplicable,
        doc,
    }
}

const fn val(name: &'static str, lo: u8, hi: u8, doc: &'static str) -> FieldDef {
    FieldDef {
        name,
        lo,
        hi,
        kind: FieldKind::Value,
        perf: PerfUse::NotApplicable,
        doc,
    }
}

const fn rsv(lo: u8, hi: u8) -> FieldDef {
    FieldDef {
        name: "reserved",
        lo,
        hi,
        kind: FieldKind::Reserved,
        perf: PerfUse::NotApplicable,
        doc: "reserved",
    }
}

/// `MSR_RAPL_POWER_UNIT` (Intel 0x606) and AMD's `RAPL_PWR_UNIT`
/// (0xC001_0299): the same layout.
pub static RAPL_POWER_UNIT_FIELDS: &[FieldDef] = &[
    val("PU", 0, 3, "power units: 1/2^PU watt"),
    rsv(4, 7),
    val("ESU", 8, 12, "energy status units: 1/2^ESU joule"),
    rsv(13, 15),
    val("TU", 16, 19, "time units: 1/2^TU second"),
    rsv(20, 63),
];

/// A RAPL energy-status register: a 32-bit counter in energy units.
pub static RAPL_ENERGY_FIELDS: &[FieldDef] = &[
    val(
        "ENERGY",
        0,
        31,
        "energy consumed, in energy status units (wraps at 2^32)",
    ),
    rsv(32, 63),
];

/// `MSR_OFFCORE_RSP_0/1` (0x1A6/0x1A7): request types in 15:0, response
/// (supplier and snoop) types in 37:16, bit by bit per model (SDM vol.
/// 3B, "Off-core Response Performance Monitoring", per microarchitecture).
pub static OFFCORE_RSP_FIELDS: &[FieldDef] = &[
    val(
        "REQUEST",
        0,
        15,
        "request types (demand data read bit 0, RFO bit 1, code read bit 2 …; per model)",
    ),
    bit("ANY_RESPONSE", 16, "any response type"),
    val(
        "SUPPLIER",
        17,
        30,
        "supplier (where the data came from; per model)",
    ),
    val("SNOOP", 31, 37, "snoop response (per model)"),
    rsv(38, 63),
];

/// `MSR_UNC_PERF_GLOBAL_CTRL` (6th-gen Core, 0xE01).
pub static UNC_GLOBAL_CTRL_FIELDS: &[FieldDef] = &[
    bit("SLICE0_SEL", 0, "core/slice 0 select for the PMI"),
    bit("SLICE1_SEL", 1, "core/slice 1 select for the PMI"),
    bit("SLICE2_SEL", 2, "core/slice 2 select for the PMI"),
    bit("SLICE3_SEL", 3, "core/slice 3 select for the PMI"),
    bit("SLICE4_SEL", 4, "core/slice 4 select for the PMI"),
    rsv(5, 28),
    bit("EN", 29, "enable all uncore counters"),
    bit("WAKE_PMI", 30, "wake cores on an uncore PMI"),
    bit("FREEZE", 31, "freeze the counters on overflow"),
    rsv(32, 63),
];

/// `MSR_UNC_PERF_GLOBAL_STATUS` (6th-gen Core, 0xE02).
pub static UNC_GLOBAL_STATUS_FIELDS: &[FieldDef] = &[
    bit("FIXED_OVF", 0, "uncore fixed counter overflowed"),
    bit("ARB_OVF", 1, "an ARB counter overflowed"),
    rsv(2, 2),
    bit("CBOX_OVF", 3, "a C-Box counter overflowed"),
    rsv(4, 63),
];

/// `MSR_UNC_PERF_FIXED_CTRL` (0x394).
pub static UNC_FIXED_CTRL_FIELDS: &[FieldDef] = &[
    rsv(0, 19),
    bit("OVF_PMI", 20, "PMI on overflow"),
    rsv(21, 21),
    bit("EN", 22, "enable the uncore fixed counter (uncore clocks)"),
    rsv(23, 63),
];

/// AMD PerfMonV2 `PerfCntrGlobalCtl` (0xC000_0301) and the counter bits of
/// `PerfCntrGlobalStatus`.
pub static AMD_GLOBAL_CTL_FIELDS: &[FieldDef] = &[
    bit("PerfCtrEn0", 0, "enable core counter 0"),
    bit("PerfCtrEn1", 1, "enable core counter 1"),
    bit("PerfCtrEn2", 2, "enable core counter 2"),
    bit("PerfCtrEn3", 3, "enable core counter 3"),
    bit("PerfCtrEn4", 4, "enable core counter 4"),
    bit("PerfCtrEn5", 5, "enable core counter 5"),
    rsv(6, 63),
];

/// AMD PerfMonV2 `PerfCntrGlobalStatus` (0xC000_0300).
pub static AMD_GLOBAL_STATUS_FIELDS: &[FieldDef] = &[
    bit("PerfCtrOvfl0", 0, "core counter 0 overflowed"),
    bit("PerfCtrOvfl1", 1, "core counter 1 overflowed"),
    bit("PerfCtrOvfl2", 2, "core counter 2 overflowed"),
    bit("PerfCtrOvfl3", 3, "core counter 3 overflowed"),
    bit("PerfCtrOvfl4", 4, "core counter 4 overflowed"),
    bit("PerfCtrOvfl5", 5, "core counter 5 overflowed"),
    rsv(6, 63),
];

/// AMD data-fabric `DF_PERF_CTLx` (`0xC001_0240 + 2x`; Linux's
/// `MSR_F15H_NB_PERF_CTL`): both generations' fields. With PerfMonV2
/// (Zen 4, 5) the event select's bits 13:8 are at 37:32 and the unit mask
/// has 12 bits (11:8 at 27:24); before it (Zen 1–3) event bits 11:8 are
/// at 35:32 and 13:12 at 60:59.
pub static AMD_DF_CTL_FIELDS: &[FieldDef] = &[
    val("EventSelect[7:0]", 0, 7, "event select, low 8 bits"),
    val("UnitMask[7:0]", 8, 15, "unit mask, low 8 bits"),
    rsv(16, 21),
    bit("En", 22, "enable the counter"),
    rsv(23, 23),
    val(
        "UnitMask[11:8]",
        24,
        27,
        "unit mask, high 4 bits (PerfMonV2)",
    ),
    rsv(28, 31),
    val(
        "EventSelect[13:8]",
        32,
        37,
        "event select, high bits (PerfMonV2; bits 11:8 at 35:32 before it)",
    ),
    rsv(38, 58),
    val(
        "EventSelect[13:12]",
        59,
        60,
        "event select, bits 13:12 (before PerfMonV2)",
    ),
    rsv(61, 63),
];

/// AMD L3 `ChL3PmcCfg` (`0xC001_0230 + 2x`; Linux's `MSR_F16H_L2I_PERF_CTL`):
/// family 19h's fields, which widen family 17h's (SliceMask 51:48,
/// ThreadMask 63:56).
pub static AMD_L3_CTL_FIELDS: &[FieldDef] = &[
    val("EventSelect", 0, 7, "event select"),
    val("UnitMask", 8, 15, "unit mask"),
    rsv(16, 21),
    bit("En", 22, "enable the counter"),
    rsv(23, 41),
    val("CoreId", 42, 44, "core of the CCX to count (family 19h)"),
    rsv(45, 45),
    bit("EnAllSlices", 46, "count every L3 slice (family 19h)"),
    bit("EnAllCores", 47, "count every core of the CCX (family 19h)"),
    val(
        "SliceId",
        48,
        51,
        "slice to count (19h: bits 50:48; 17h: SliceMask 51:48)",
    ),
    rsv(52, 55),
    val(
        "ThreadMask",
        56,
        63,
        "threads to count (19h: bits 57:56; 17h: bits 63:56)",
    ),
];

// ---------------------------------------------------------------------------
// The catalogue.

const INTEL: Option<Arch> = Some(Arch::Intel);
const AMD: Option<Arch> = Some(Arch::Amd);

#[allow(clippy::too_many_arguments)]
const fn def(
    template: &'static str,
    aliases: &'static [&'static str],
    base: u32,
    stride: u32,
    count: u32,
    vendor: Option<Arch>,
    scope: Scope,
    role: Role,
    layout: Option<RegisterKind>,
    fields: &'static [FieldDef],
    writable: Writable,
    doc: &'static str,
) -> MsrDef {
    MsrDef {
        template,
        aliases,
        base,
        stride,
        count,
        vendor,
        scope,
        role,
        layout,
        fields,
        writable,
        doc,
    }
}

use CounterClass as C;
use RegisterKind as K;
use Role as R;
use Scope as S;
use Writable as W;

/// Every MSR pmx knows.
#[rustfmt::skip]
pub static CATALOGUE: &[MsrDef] = &[
    // Both vendors.
    def("IA32_TIME_STAMP_COUNTER", &["TSC", "MSR_IA32_TSC"], 0x10, 0, 1, None, S::Thread, R::Clock, None, &[], W::No,
        "time-stamp counter (constant rate on current CPUs)"),
    def("IA32_MPERF", &["MPERF", "MSR_IA32_MPERF"], 0xE7, 0, 1, None, S::Thread, R::Clock, None, &[], W::No,
        "maximum-performance (TSC-rate) clock while C0"),
    def("IA32_APERF", &["APERF", "MSR_IA32_APERF"], 0xE8, 0, 1, None, S::Thread, R::Clock, None, &[], W::No,
        "actual-performance clock while C0 (APERF/MPERF = effective frequency ratio)"),
    // Intel core PMU.
    def("IA32_PMCx", &["MSR_IA32_PMCx", "PMCx"], 0xC1, 1, 8, INTEL, S::Thread, R::Counter, None, &[], W::Counter(C::General),
        "general-purpose counter x (writes set bits 31:0, sign-extended, unless through IA32_A_PMCx)"),
    def("IA32_PERFEVTSELx", &["MSR_P6_EVNTSELx", "PERFEVTSELx"], 0x186, 1, 8, INTEL, S::Thread, R::Control, Some(K::IntelEvtSel), &[], W::LayoutFields,
        "event select for IA32_PMCx"),
    def("IA32_PERF_CAPABILITIES", &["MSR_IA32_PERF_CAPABILITIES"], 0x345, 0, 1, INTEL, S::Thread, R::Info, None, &[], W::No,
        "PMU capabilities (bit 13: full-width counter writes through IA32_A_PMCx)"),
    def("IA32_FIXED_CTRx", &["MSR_CORE_PERF_FIXED_CTRx", "FIXED_CTRx"], 0x309, 1, 4, INTEL, S::Thread, R::Counter, None, &[], W::Counter(C::Fixed),
        "fixed counter x (0 instructions, 1 core cycles, 2 reference cycles, 3 topdown slots)"),
    def("IA32_FIXED_CTR_CTRL", &["MSR_CORE_PERF_FIXED_CTR_CTRL"], 0x38D, 0, 1, INTEL, S::Thread, R::Control, Some(K::IntelFixedCtrCtrl), &[], W::LayoutFields,
        "fixed-counter control, four bits per counter"),
    def("IA32_PERF_GLOBAL_STATUS", &["MSR_CORE_PERF_GLOBAL_STATUS"], 0x38E, 0, 1, INTEL, S::Thread, R::Status, Some(K::IntelGlobalStatus), &[], W::No,
        "overflow status"),
    def("IA32_PERF_GLOBAL_CTRL", &["MSR_CORE_PERF_GLOBAL_CTRL"], 0x38F, 0, 1, INTEL, S::Thread, R::Control, Some(K::IntelGlobalCtrl), &[], W::LayoutFields,
        "global enable: bit x PMCx, bit 32+x FIXED_CTRx"),
    def("IA32_PERF_GLOBAL_OVF_CTRL", &["MSR_CORE_PERF_GLOBAL_OVF_CTRL", "IA32_PERF_GLOBAL_STATUS_RESET"], 0x390, 0, 1, INTEL, S::Thread, R::StatusClear, Some(K::IntelGlobalStatus), &[], W::LayoutFields,
        "write 1s to clear IA32_PERF_GLOBAL_STATUS bits"),
    def("IA32_PEBS_ENABLE", &["MSR_IA32_PEBS_ENABLE"], 0x3F1, 0, 1, INTEL, S::Thread, R::Control, None, &[], W::No,
        "PEBS enables; not written by pmx: PEBS needs a DS save area the kernel sets up"),
    def("MSR_OFFCORE_RSP_x", &["MSR_OFFCORE_RESPONSE_x", "OFFCORE_RSP_x"], 0x1A6, 1, 2, INTEL, S::Thread, R::Control, None, OFFCORE_RSP_FIELDS, W::LayoutFields,
        "offcore-response filter x: what OFFCORE_RESPONSE_x (0x01b7/0x01bb; OCR 0x012a/0x012b from Sapphire Rapids on) counts (perf's offcore_rsp)"),
    def("MSR_PEBS_LD_LAT_THRESHOLD", &["MSR_PEBS_LD_LAT", "PEBS_LD_LAT"], 0x3F6, 0, 1, INTEL, S::Thread, R::Control, None, &[], W::No,
        "load-latency threshold of PEBS records (perf's ldlat); not written by pmx: it qualifies only PEBS, which needs the kernel's DS area"),
    def("MSR_PEBS_FRONTEND", &["PEBS_FRONTEND"], 0x3F7, 0, 1, INTEL, S::Thread, R::Control, None, &[], W::No,
        "front-end event qualifier of FRONTEND_RETIRED's PEBS records (perf's frontend); not written by pmx: it sets up no PEBS"),
    def("IA32_A_PMCx", &["MSR_IA32_PMCx_FULL", "A_PMCx"], 0x4C1, 1, 8, INTEL, S::Thread, R::Counter, None, &[], W::Counter(C::General),
        "full-width write alias of IA32_PMCx"),
    // Intel RAPL (package).
    def("MSR_RAPL_POWER_UNIT", &["RAPL_POWER_UNIT"], 0x606, 0, 1, INTEL, S::Package, R::Info, None, RAPL_POWER_UNIT_FIELDS, W::No,
        "RAPL units: power, energy (bits 12:8), time"),
    def("MSR_PKG_ENERGY_STATUS", &["PKG_ENERGY_STATUS"], 0x611, 0, 1, INTEL, S::Package, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "package energy consumed (32-bit, in energy units)"),
    def("MSR_DRAM_ENERGY_STATUS", &["DRAM_ENERGY_STATUS"], 0x619, 0, 1, INTEL, S::Package, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "DRAM energy consumed (server parts)"),
    def("MSR_PP0_ENERGY_STATUS", &["PP0_ENERGY_STATUS"], 0x639, 0, 1, INTEL, S::Package, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "power plane 0 (all cores) energy consumed"),
    def("MSR_PP1_ENERGY_STATUS", &["PP1_ENERGY_STATUS"], 0x641, 0, 1, INTEL, S::Package, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "power plane 1 (graphics, client parts) energy consumed"),
    // Intel client uncore, 6th-generation Core (package).
    def("MSR_UNC_PERF_FIXED_CTRL", &[], 0x394, 0, 1, INTEL, S::Package, R::Control, None, UNC_FIXED_CTRL_FIELDS, W::LayoutFields,
        "uncore fixed counter control"),
    def("MSR_UNC_PERF_FIXED_CTR", &[], 0x395, 0, 1, INTEL, S::Package, R::Counter, None, &[], W::Counter(C::UncoreFixed),
        "uncore fixed counter (uncore clocks)"),
    def("MSR_UNC_CBO_CONFIG", &[], 0x396, 0, 1, INTEL, S::Package, R::Info, None, &[], W::No,
        "number of C-Box units (bits 3:0)"),
    def("MSR_UNC_ARB_PERFCTRx", &[], 0x3B0, 1, 2, INTEL, S::Package, R::Counter, None, &[], W::Counter(C::UncoreBox),
        "ARB (system agent arbiter) counter x"),
    def("MSR_UNC_ARB_PERFEVTSELx", &[], 0x3B2, 1, 2, INTEL, S::Package, R::Control, Some(K::IntelUncoreEvtSel), &[], W::LayoutFields,
        "ARB event select x"),
    def("MSR_UNC_CBO_x_PERFEVTSEL0", &[], 0x700, 0x10, 4, INTEL, S::Package, R::Control, Some(K::IntelUncoreEvtSel), &[], W::LayoutFields,
        "C-Box x (LLC slice) event select 0"),
    def("MSR_UNC_CBO_x_PERFEVTSEL1", &[], 0x701, 0x10, 4, INTEL, S::Package, R::Control, Some(K::IntelUncoreEvtSel), &[], W::LayoutFields,
        "C-Box x (LLC slice) event select 1"),
    def("MSR_UNC_CBO_x_PERFCTR0", &[], 0x706, 0x10, 4, INTEL, S::Package, R::Counter, None, &[], W::Counter(C::UncoreBox),
        "C-Box x (LLC slice) counter 0"),
    def("MSR_UNC_CBO_x_PERFCTR1", &[], 0x707, 0x10, 4, INTEL, S::Package, R::Counter, None, &[], W::Counter(C::UncoreBox),
        "C-Box x (LLC slice) counter 1"),
    def("MSR_UNC_PERF_GLOBAL_CTRL", &[], 0xE01, 0, 1, INTEL, S::Package, R::Control, None, UNC_GLOBAL_CTRL_FIELDS, W::LayoutFields,
        "uncore global control (bit 29 enables all uncore counters)"),
    def("MSR_UNC_PERF_GLOBAL_STATUS", &[], 0xE02, 0, 1, INTEL, S::Package, R::Status, None, UNC_GLOBAL_STATUS_FIELDS, W::No,
        "uncore overflow status"),
    // AMD core PMU.
    def("PERF_CTLx", &["PERF_LEGACY_CTLx", "MSR_K7_EVNTSELx"], 0xC001_0000, 1, 4, AMD, S::Thread, R::Control, Some(K::AmdPerfCtl), &[], W::LayoutFields,
        "legacy event select x (aliases the first four extension pairs on family 15h and later)"),
    def("PERF_CTRx", &["PERF_LEGACY_CTRx", "MSR_K7_PERFCTRx"], 0xC001_0004, 1, 4, AMD, S::Thread, R::Counter, None, &[], W::Counter(C::General),
        "legacy counter x"),
    def("PERF_CTL_EXTx", &["MSR_F15H_PERF_CTLx"], 0xC001_0200, 2, 6, AMD, S::Thread, R::Control, Some(K::AmdPerfCtl), &[], W::LayoutFields,
        "core-counter-extension event select x (the PPR's PERF_CTLx)"),
    def("PERF_CTR_EXTx", &["MSR_F15H_PERF_CTRx"], 0xC001_0201, 2, 6, AMD, S::Thread, R::Counter, None, &[], W::Counter(C::General),
        "core-counter-extension counter x (the PPR's PERF_CTRx)"),
    def("PERF_CNTR_GLOBAL_STATUS", &["PerfCntrGlobalStatus", "MSR_AMD64_PERF_CNTR_GLOBAL_STATUS"], 0xC000_0300, 0, 1, AMD, S::Thread, R::Status, None, AMD_GLOBAL_STATUS_FIELDS, W::No,
        "PerfMonV2 overflow status"),
    def("PERF_CNTR_GLOBAL_CTL", &["PerfCntrGlobalCtl", "MSR_AMD64_PERF_CNTR_GLOBAL_CTL"], 0xC000_0301, 0, 1, AMD, S::Thread, R::Control, None, AMD_GLOBAL_CTL_FIELDS, W::LayoutFields,
        "PerfMonV2 global enable: bit x enables core counter x"),
    def("PERF_CNTR_GLOBAL_STATUS_CLR", &["PerfCntrGlobalStatusClr", "MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR"], 0xC000_0302, 0, 1, AMD, S::Thread, R::StatusClear, None, AMD_GLOBAL_STATUS_FIELDS, W::LayoutFields,
        "PerfMonV2: write 1s to clear overflow status bits"),
    // AMD L3 (one set per core complex, CCX) and data fabric (package).
    def("L3_PERF_CTLx", &["ChL3PmcCfgx", "MSR_F16H_L2I_PERF_CTLx"], 0xC001_0230, 2, 6, AMD, S::Package, R::Control, None, AMD_L3_CTL_FIELDS, W::LayoutFields,
        "L3 counter control x; shared by the cores of one CCX: pmx models it as package scope, so on parts with several CCXs per package read it on a CPU of each CCX"),
    def("L3_PERF_CTRx", &["ChL3Pmcx", "MSR_F16H_L2I_PERF_CTRx"], 0xC001_0231, 2, 6, AMD, S::Package, R::Counter, None, &[], W::Mask(0xFFFF_FFFF_FFFF),
        "L3 counter x (48 bits); per CCX, modelled as package scope (see L3_PERF_CTLx)"),
    def("DF_PERF_CTLx", &["DF_PerfCtlx", "MSR_F15H_NB_PERF_CTLx"], 0xC001_0240, 2, 16, AMD, S::Package, R::Control, None, AMD_DF_CTL_FIELDS, W::LayoutFields,
        "data-fabric counter control x, one set per package (4 counters before PerfMonV2; CPUID 0x80000022 EBX[15:10] with it)"),
    def("DF_PERF_CTRx", &["DF_PerfCtrx", "MSR_F15H_NB_PERF_CTRx"], 0xC001_0241, 2, 16, AMD, S::Package, R::Counter, None, &[], W::Mask(0xFFFF_FFFF_FFFF),
        "data-fabric counter x (48 bits), one set per package"),
    // AMD RAPL.
    def("RAPL_PWR_UNIT", &["MSR_AMD_RAPL_POWER_UNIT"], 0xC001_0299, 0, 1, AMD, S::Package, R::Info, None, RAPL_POWER_UNIT_FIELDS, W::No,
        "RAPL units: power, energy (bits 12:8), time"),
    def("CORE_ENERGY_STAT", &["MSR_AMD_CORE_ENERGY_STATUS"], 0xC001_029A, 0, 1, AMD, S::Core, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "core energy consumed (32-bit, in energy units)"),
    def("PKG_ENERGY_STAT", &["MSR_AMD_PKG_ENERGY_STATUS"], 0xC001_029B, 0, 1, AMD, S::Package, R::Energy, None, RAPL_ENERGY_FIELDS, W::No,
        "package energy consumed (32-bit, in energy units)"),
];

/// Find a catalogue entry by name: case-insensitive, with the index in
/// place of the template's `x` (`ia32_perfevtsel3`, `MSR_UNC_CBO_2_PERFCTR1`).
pub fn lookup_name(name: &str) -> Result<Msr, NameError> {
    let want = name.trim().to_ascii_uppercase();
    for def in CATALOGUE {
        for t in std::iter::once(&def.template).chain(def.aliases.iter()) {
            match match_template(t, &want) {
                Match::No => {}
                Match::Single => return Ok(Msr { def, index: 0 }),
                Match::Index(i) if i < def.count => return Ok(Msr { def, index: i }),
                Match::Index(i) => {
                    return Err(NameError::IndexOutOfRange {
                        name: name.trim().to_string(),
                        index: i,
                        template: def.template,
                        count: def.count,
                    })
                }
                Match::NoIndex => {
                    return Err(NameError::NeedsIndex {
                        name: name.trim().to_string(),
                        template: def.template,
                        count: def.count,
                    })
                }
            }
        }
    }
    let names: Vec<String> = CATALOGUE.iter().map(|d| d.name(0)).collect();
    let suggestions = pmx_model::spec::closest(
        &want.to_ascii_lowercase(),
        names.iter().map(|s| s.as_str()),
        3,
    );
    Err(NameError::Unknown {
        name: name.trim().to_string(),
        suggestions,
    })
}

enum Match {
    No,
    Single,
    Index(u32),
    /// The template with `x` literally (a family named without an index).
    NoIndex,
}

fn match_template(template: &str, want: &str) -> Match {
    let Some(pos) = template.find('x') else {
        return if template.eq_ignore_ascii_case(want) {
            Match::Single
        } else {
            Match::No
        };
    };
    let prefix = template[..pos].to_ascii_uppercase();
    let suffix = template[pos + 1..].to_ascii_uppercase();
    let Some(mid) = want
        .strip_prefix(prefix.as_str())
        .and_then(|r| r.strip_suffix(suffix.as_str()))
    else {
        return Match::No;
    };
    if mid == "X" {
        return Match::NoIndex;
    }
    if mid.is_empty() || mid.len() > 4 || !mid.bytes().all(|b| b.is_ascii_digit()) {
        return Match::No;
    }
    mid.parse().map(Match::Index).unwrap_or(Match::No)
}

/// The catalogue entry an address belongs to, for `vendor` (`None`: any).
pub fn lookup_address(address: u32, vendor: Option<Arch>) -> Option<Msr> {
    CATALOGUE
        .iter()
        .filter(|d| vendor.is_none() || d.vendor.is_none() || d.vendor == vendor)
        .find_map(|def| def.index_of(address).map(|index| Msr { def, index }))
}

/// `0x186 (IA32_PERFEVTSEL0)`, or just `0x1a0` for an unknown address.
pub fn describe_address(address: u32) -> String {
    match lookup_address(address, None) {
        Some(m) => format!("{address:#x} ({})", m.name()),
        None => format!("{address:#x}"),
    }
}

/// A register named on the command line: its address, and the catalogue
/// entry when pmx knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Register {
    /// The address.
    pub address: u32,
    /// The catalogue entry, if any.
    pub msr: Option<Msr>,
}

impl Register {
    /// The register at `address`, looked up for `vendor`.
    pub fn at(address: u32, vendor: Option<Arch>) -> Register {
        Register {
            address,
            msr: lookup_address(address, vendor),
        }
    }

    /// `IA32_PERFEVTSEL0 (0x186)` or `MSR 0x1a0`.
    pub fn label(&self) -> String {
        match &self.msr {
            Some(m) => format!("{} ({:#x})", m.name(), self.address),
            None => format!("MSR {:#x}", self.address),
        }
    }

    /// The scope; unknown registers are treated as per-thread.
    pub fn scope(&self) -> Scope {
        self.msr.map(|m| m.scope()).unwrap_or(Scope::Thread)
    }
}

/// Turn `ADDR|NAME` into a register: `0x186`, `390` (decimal), or a name.
/// A name of the other vendor's register is an error when `vendor` is known.
pub fn resolve(text: &str, vendor: Option<Arch>) -> Result<Register, NameError> {
    let t = text.trim();
    if t.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        let address = parse_u64(t)
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| NameError::BadAddress(t.to_string()))?;
        return Ok(Register::at(address, vendor));
    }
    let msr = lookup_name(t)?;
    if let (Some(v), Some(dv)) = (vendor, msr.def.vendor) {
        if v != dv {
            return Err(NameError::OtherVendor {
                name: msr.name(),
                register_vendor: dv,
                cpu_vendor: v,
            });
        }
    }
    Ok(Register {
        address: msr.address(),
        msr: Some(msr),
    })
}

/// Parse a number: `0x…` hex, `0b…` binary, or decimal; `_` separators allowed.
pub fn parse_u64(text: &str) -> Result<u64, std::num::ParseIntError> {
    let t: String = text.trim().chars().filter(|&c| c != '_').collect();
    let lower = t.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else if let Some(b) = lower.strip_prefix("0b") {
        u64::from_str_radix(b, 2)
    } else {
        lower.parse()
    }
}

/// A name or address that names no register.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not in the catalogue.
    #[error("unknown MSR name '{name}'{}", suggest(.suggestions))]
    Unknown {
        /// As typed.
        name: String,
        /// Closest known names.
        suggestions: Vec<String>,
    },
    /// A family named without an index.
    #[error("'{name}' is a family of registers: give an index, {} to {}", template.replacen('x', "0", 1), template.replacen('x', &(count - 1).to_string(), 1))]
    NeedsIndex {
        /// As typed.
        name: String,
        /// The family.
        template: &'static str,
        /// How many it has.
        count: u32,
    },
    /// An index beyond the family.
    #[error(
        "'{name}': index {index} is past the last {template} (the architecture defines {count})"
    )]
    IndexOutOfRange {
        /// As typed.
        name: String,
        /// The index.
        index: u32,
        /// The family.
        template: &'static str,
        /// How many it has.
        count: u32,
    },
    /// Not a 32-bit number.
    #[error("'{0}' is not an MSR address (a 32-bit number: 0x186, 390)")]
    BadAddress(String),
    /// A register of the other vendor.
    #[error("{name} is an {} register; this CPU is {}", arch_name(*.register_vendor), arch_name(*.cpu_vendor))]
    OtherVendor {
        /// The register.
        name: String,
        /// Its vendor.
        register_vendor: Arch,
        /// The CPU's.
        cpu_vendor: Arch,
    },
}

/// `Intel` or `AMD`.
pub fn arch_name(a: Arch) -> &'static str {
    match a {
        Arch::Intel => "Intel",
        Arch::Amd => "AMD",
    }
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_tile_64_bits() {
        for list in [
            RAPL_POWER_UNIT_FIELDS,
            RAPL_ENERGY_FIELDS,
            UNC_GLOBAL_CTRL_FIELDS,
            UNC_GLOBAL_STATUS_FIELDS,
            UNC_FIXED_CTRL_FIELDS,
            AMD_GLOBAL_CTL_FIELDS,
            AMD_GLOBAL_STATUS_FIELDS,
            AMD_DF_CTL_FIELDS,
            AMD_L3_CTL_FIELDS,
            OFFCORE_RSP_FIELDS,
        ] {
            let mut next = 0u32;
            for f in list {
                assert_eq!(u32::from(f.lo), next, "{}", f.name);
                next = u32::from(f.hi) + 1;
            }
            assert_eq!(next, 64);
        }
    }

    #[test]
    fn no_two_entries_share_an_address() {
        let mut seen = std::collections::BTreeMap::new();
        for d in CATALOGUE {
            for i in 0..d.count {
                if let Some(prev) = seen.insert(d.address(i), d.name(i)) {
                    panic!("{:#x}: {prev} and {}", d.address(i), d.name(i));
                }
            }
        }
    }

    #[test]
    fn names_resolve_both_ways() {
        for d in CATALOGUE {
            for i in 0..d.count {
                let m = lookup_name(&d.name(i)).unwrap();
                assert_eq!(m.address(), d.address(i));
                assert_eq!(
                    lookup_address(d.address(i), d.vendor).unwrap().name(),
                    d.name(i)
                );
            }
        }
        assert_eq!(lookup_name("ia32_perfevtsel3").unwrap().address(), 0x189);
        assert_eq!(
            lookup_name("MSR_UNC_CBO_2_PERFCTR1").unwrap().address(),
            0x727
        );
        assert_eq!(lookup_name("perf_ctl_ext5").unwrap().address(), 0xC001_020A);
        assert_eq!(lookup_name("PERF_CTR_EXT5").unwrap().address(), 0xC001_020B);
        assert_eq!(lookup_name("tsc").unwrap().address(), 0x10);
        assert!(matches!(
            lookup_name("IA32_PERFEVTSELx"),
            Err(NameError::NeedsIndex { .. })
        ));
        assert!(matches!(
            lookup_name("IA32_PMC9"),
            Err(NameError::IndexOutOfRange { index: 9, .. })
        ));
        let e = lookup_name("IA32_PERF_GLOBAL_CTLR").unwrap_err();
        assert!(e.to_string().contains("IA32_PERF_GLOBAL_CTRL"), "{e}");
    }

    #[test]
    fn resolve_takes_addresses_and_checks_the_vendor() {
        let r = resolve("0x38f", Some(Arch::Intel)).unwrap();
        assert_eq!(r.msr.unwrap().name(), "IA32_PERF_GLOBAL_CTRL");
        assert_eq!(resolve("911", Some(Arch::Intel)).unwrap().address, 911);
        assert!(resolve("0x38f", Some(Arch::Amd)).unwrap().msr.is_none());
        assert!(matches!(
            resolve("IA32_PMC0", Some(Arch::Amd)),
            Err(NameError::OtherVendor { .. })
        ));
        assert!(resolve("0x1_0000_0000", None).is_err());
        assert_eq!(parse_u64("0b101").unwrap(), 5);
    }

    #[test]
    fn writable_masks() {
        let w = CounterWidths::default();
        let sel = lookup_name("IA32_PERFEVTSEL0").unwrap();
        assert_eq!(sel.writable_mask(&w), 0x0000_FF1F_FFFF_FFFF);
        assert_eq!(
            lookup_name("IA32_PMC0").unwrap().writable_mask(&w),
            (1 << 48) - 1
        );
        let narrow = CounterWidths {
            general: 40,
            fixed: 48,
        };
        assert_eq!(
            lookup_name("IA32_PMC0").unwrap().writable_mask(&narrow),
            (1 << 40) - 1
        );
        assert_eq!(
            lookup_name("MSR_UNC_PERF_GLOBAL_CTRL")
                .unwrap()
                .writable_mask(&w),
            0xE000_001F
        );
        assert_eq!(
            lookup_name("IA32_PERF_GLOBAL_STATUS")
                .unwrap()
                .writable_mask(&w),
            0
        );
    }

    #[test]
    fn amd_extended_core_l3_and_data_fabric_registers() {
        let w = CounterWidths::default();
        // (name, address, scope): AMD PPR, six core pairs at 0xC0010200 + 2i,
        // L3 at 0xC0010230 + 2i, data fabric at 0xC0010240 + 2i.
        for (name, address, scope) in [
            ("PERF_CTL_EXT0", 0xC001_0200, Scope::Thread),
            ("PERF_CTR_EXT5", 0xC001_020B, Scope::Thread),
            ("L3_PERF_CTL0", 0xC001_0230, Scope::Package),
            ("L3_PERF_CTR5", 0xC001_023B, Scope::Package),
            ("DF_PERF_CTL0", 0xC001_0240, Scope::Package),
            ("DF_PERF_CTR3", 0xC001_0247, Scope::Package),
        ] {
            let m = lookup_name(name).unwrap();
            assert_eq!((m.address(), m.scope()), (address, scope), "{name}");
            let back = lookup_address(address, Some(Arch::Amd)).unwrap();
            assert_eq!(back.name(), name);
        }
        assert!(lookup_name("MSR_F15H_NB_PERF_CTL1").is_ok());
        assert!(lookup_address(0xC001_0240, Some(Arch::Intel)).is_none());
        // Writable: the fields, never reserved bits.
        let df = lookup_name("DF_PERF_CTL0").unwrap();
        assert_eq!(df.writable_mask(&w), 0x1800_003F_0F40_FFFF);
        let l3 = lookup_name("L3_PERF_CTL2").unwrap();
        assert_eq!(l3.writable_mask(&w), 0xFF0F_DC00_0040_FFFF);
        assert_eq!(
            lookup_name("DF_PERF_CTR0").unwrap().writable_mask(&w),
            (1 << 48) - 1
        );
        // A data-fabric event with PerfMonV2: event 0x15f, umask 0x7fe, En.
        let fields = df.decode(0x1_0740_FE5F).unwrap();
        let get = |n: &str| fields.iter().find(|f| f.field.name == n).map(|f| f.value);
        assert_eq!(get("EventSelect[7:0]"), Some(0x5f));
        assert_eq!(get("EventSelect[13:8]"), Some(0x1));
        assert_eq!(get("UnitMask[11:8]"), Some(0x7));
        assert_eq!(get("En"), Some(1));
    }
}
