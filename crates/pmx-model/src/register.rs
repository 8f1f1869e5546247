//! Counter control registers, bit by bit.
//!
//! Each register pmx knows is a [`Layout`]: a list of [`FieldDef`]s that
//! tiles all 64 bits, reserved ranges included. Because the tiling is exact,
//! [`Layout::decode`] turns any value into a field table and
//! [`Layout::encode`] turns any field table back into exactly one value; a
//! value with reserved bits set decodes to non-zero `Reserved` fields, which
//! is how pmx warns about them.
//!
//! Sources: Intel SDM vol. 3B, "Performance Monitoring" (architectural
//! performance monitoring versions 1–6, the uncore PMU of client parts) and
//! AMD's PPRs/BKDGs (`PERF_CTL`). Where Linux `perf` takes an event from a
//! raw `config`, [`FieldDef::perf`] says whether the field passes through
//! (`Passed`), is set by the kernel from the attr (`Kernel`), or is dropped
//! (`Ignored`).

use serde::Serialize;

/// What a field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// A one-bit switch.
    Flag,
    /// A multi-bit number.
    Value,
    /// Bits the architecture reserves: they must be written as zero.
    Reserved,
}

/// How Linux `perf` treats a field when it appears in a raw `config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PerfUse {
    /// Copied from `attr.config` into the register.
    Passed,
    /// Set by the kernel itself (from `exclude_*`, sampling, enabling);
    /// a value given in `config` is ignored.
    Kernel,
    /// Dropped: perf has no way to set it from `config`.
    Ignored,
    /// The register is not one perf programs from a raw config.
    NotApplicable,
}

/// One field of a register: bits `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldDef {
    /// Name as the vendor's manual spells it (e.g. `UMASK`, `CMASK`).
    pub name: &'static str,
    /// Lowest bit.
    pub lo: u8,
    /// Highest bit (inclusive).
    pub hi: u8,
    /// Flag, value or reserved.
    pub kind: FieldKind,
    /// How perf's raw config treats it.
    pub perf: PerfUse,
    /// One line on what it does.
    pub doc: &'static str,
}

impl FieldDef {
    /// Width in bits.
    pub const fn width(&self) -> u32 {
        (self.hi - self.lo) as u32 + 1
    }

    /// The bits this field occupies, in place.
    pub const fn mask(&self) -> u64 {
        let w = self.width();
        let m = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        m << self.lo
    }

    /// The largest value the field can hold.
    pub const fn max_value(&self) -> u64 {
        self.mask() >> self.lo
    }

    /// Extract this field from a register value.
    pub const fn get(&self, register: u64) -> u64 {
        (register & self.mask()) >> self.lo
    }

    /// `hi:lo` or `lo` for one bit, as manuals print bit ranges.
    pub fn bits(&self) -> String {
        if self.hi == self.lo {
            format!("{}", self.lo)
        } else {
            format!("{}:{}", self.hi, self.lo)
        }
    }
}

/// A field and the value it holds in some register value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldValue {
    /// The field.
    #[serde(flatten)]
    pub field: FieldDef,
    /// Its value (shifted down to bit 0).
    pub value: u64,
}

/// The registers pmx has a layout for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegisterKind {
    /// Intel `IA32_PERFEVTSELx` (`0x186 + x`).
    IntelEvtSel,
    /// Intel `IA32_FIXED_CTR_CTRL` (`0x38D`).
    IntelFixedCtrCtrl,
    /// Intel `IA32_PERF_GLOBAL_CTRL` (`0x38F`).
    IntelGlobalCtrl,
    /// Intel `IA32_PERF_GLOBAL_STATUS` (`0x38E`); `IA32_PERF_GLOBAL_OVF_CTRL`
    /// (`0x390`) clears the same bits.
    IntelGlobalStatus,
    /// Intel client uncore event select (C-Box, ARB).
    IntelUncoreEvtSel,
    /// AMD `PERF_CTLx` (`0xC001_0000 + x`, or `0xC001_0200 + 2x` with the
    /// core counter extension).
    AmdPerfCtl,
}

impl RegisterKind {
    /// Every register kind, in a stable order.
    pub const ALL: [RegisterKind; 6] = [
        RegisterKind::IntelEvtSel,
        RegisterKind::IntelFixedCtrCtrl,
        RegisterKind::IntelGlobalCtrl,
        RegisterKind::IntelGlobalStatus,
        RegisterKind::IntelUncoreEvtSel,
        RegisterKind::AmdPerfCtl,
    ];

    /// The short name used on the command line (`--register evtsel`).
    pub const fn cli_name(self) -> &'static str {
        match self {
            RegisterKind::IntelEvtSel => "evtsel",
            RegisterKind::IntelFixedCtrCtrl => "fixed-ctrl",
            RegisterKind::IntelGlobalCtrl => "global-ctrl",
            RegisterKind::IntelGlobalStatus => "global-status",
            RegisterKind::IntelUncoreEvtSel => "uncore-evtsel",
            RegisterKind::AmdPerfCtl => "perf-ctl",
        }
    }

    /// Parse a command-line name (also accepts the manual's MSR names).
    pub fn from_cli_name(name: &str) -> Option<RegisterKind> {
        let n = name.to_ascii_lowercase().replace('_', "-");
        Some(match n.as_str() {
            "evtsel" | "perfevtsel" | "ia32-perfevtsel" | "ia32-perfevtselx" => {
                RegisterKind::IntelEvtSel
            }
            "fixed-ctrl" | "fixed-ctr-ctrl" | "ia32-fixed-ctr-ctrl" => {
                RegisterKind::IntelFixedCtrCtrl
            }
            "global-ctrl" | "ia32-perf-global-ctrl" => RegisterKind::IntelGlobalCtrl,
            "global-status"
            | "ia32-perf-global-status"
            | "global-ovf-ctrl"
            | "ia32-perf-global-ovf-ctrl" => RegisterKind::IntelGlobalStatus,
            "uncore-evtsel" | "unc-evtsel" => RegisterKind::IntelUncoreEvtSel,
            "perf-ctl" | "perfctl" | "amd-perf-ctl" => RegisterKind::AmdPerfCtl,
            _ => return None,
        })
    }

    /// The layout of this register.
    pub fn layout(self) -> &'static Layout {
        match self {
            RegisterKind::IntelEvtSel => &INTEL_EVTSEL,
            RegisterKind::IntelFixedCtrCtrl => &INTEL_FIXED_CTR_CTRL,
            RegisterKind::IntelGlobalCtrl => &INTEL_GLOBAL_CTRL,
            RegisterKind::IntelGlobalStatus => &INTEL_GLOBAL_STATUS,
            RegisterKind::IntelUncoreEvtSel => &INTEL_UNCORE_EVTSEL,
            RegisterKind::AmdPerfCtl => &AMD_PERF_CTL,
        }
    }
}

/// Errors from building a register value out of fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// No field of that name in this layout.
    #[error("{register} has no field '{field}'")]
    UnknownField {
        /// Register name.
        register: &'static str,
        /// The name asked for.
        field: String,
    },
    /// The value does not fit the field.
    #[error("{value:#x} does not fit {register}.{field} (bits {bits}, at most {max:#x})")]
    TooWide {
        /// Register name.
        register: &'static str,
        /// Field name.
        field: &'static str,
        /// Its bit range.
        bits: String,
        /// The value given.
        value: u64,
        /// The largest value it holds.
        max: u64,
    },
}

/// A register: its name, where it lives, and the fields that tile its 64
/// bits.
#[derive(Debug, Clone, Serialize)]
pub struct Layout {
    /// Which register this is.
    pub kind: RegisterKind,
    /// The manual's name, e.g. `IA32_PERFEVTSELx`.
    pub name: &'static str,
    /// Where it lives, e.g. `MSR 0x186 + x`.
    pub location: &'static str,
    /// Fields from bit 0 upwards, covering every bit exactly once.
    pub fields: &'static [FieldDef],
}

impl Layout {
    /// Find a field by name (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&'static FieldDef> {
        self.fields
            .iter()
            .find(|f| f.kind != FieldKind::Reserved && f.name.eq_ignore_ascii_case(name))
    }

    /// Every field with its value in `register`, reserved ranges included.
    pub fn decode(&self, register: u64) -> Vec<FieldValue> {
        self.fields
            .iter()
            .map(|f| FieldValue {
                field: *f,
                value: f.get(register),
            })
            .collect()
    }

    /// Build a value from `(field name, value)` pairs; fields not named are
    /// zero. Reserved ranges may be named by their `reserved_HI_LO` label
    /// (see [`Layout::reserved_label`]) so a decoded table re-encodes exactly.
    pub fn encode<'a, I>(&self, fields: I) -> Result<u64, RegisterError>
    where
        I: IntoIterator<Item = (&'a str, u64)>,
    {
        let mut v = 0;
        for (name, value) in fields {
            v = self.set(v, name, value)?;
        }
        Ok(v)
    }

    /// Rebuild a value from a decoded field table.
    pub fn encode_values(&self, values: &[FieldValue]) -> Result<u64, RegisterError> {
        let mut v = 0u64;
        for fv in values {
            v = self.set_field(v, &fv.field, fv.value)?;
        }
        Ok(v)
    }

    /// Set one field (by name) in `register`.
    pub fn set(&self, register: u64, name: &str, value: u64) -> Result<u64, RegisterError> {
        let def = self
            .field(name)
            .or_else(|| self.fields.iter().find(|f| Self::reserved_label(f) == name))
            .ok_or_else(|| RegisterError::UnknownField {
                register: self.name,
                field: name.to_string(),
            })?;
        self.set_field(register, def, value)
    }

    /// Set one field in `register`.
    pub fn set_field(
        &self,
        register: u64,
        def: &FieldDef,
        value: u64,
    ) -> Result<u64, RegisterError> {
        if value > def.max_value() {
            return Err(RegisterError::TooWide {
                register: self.name,
                field: def.name,
                bits: def.bits(),
                value,
                max: def.max_value(),
            });
        }
        Ok((register & !def.mask()) | (value << def.lo))
    }

    /// Read one field (by name); `None` if the layout has no such field.
    pub fn get(&self, register: u64, name: &str) -> Option<u64> {
        self.field(name).map(|f| f.get(register))
    }

    /// The label of a reserved range, `reserved_HI_LO`.
    pub fn reserved_label(def: &FieldDef) -> String {
        format!("reserved_{}_{}", def.hi, def.lo)
    }

    /// All reserved bits.
    pub fn reserved_mask(&self) -> u64 {
        self.mask_where(|f| f.kind == FieldKind::Reserved)
    }

    /// The bits perf copies from a raw `config` into this register.
    pub fn perf_passed_mask(&self) -> u64 {
        self.mask_where(|f| f.perf == PerfUse::Passed)
    }

    /// OR of the masks of the fields matching `pred`.
    pub fn mask_where(&self, pred: impl Fn(&FieldDef) -> bool) -> u64 {
        self.fields
            .iter()
            .filter(|f| pred(f))
            .fold(0, |m, f| m | f.mask())
    }

    /// Fields with a non-zero value in the given bits of `register`, for
    /// messages like "reserved bits 63:48 set".
    pub fn fields_set_in(&self, register: u64, mask: u64) -> Vec<&'static FieldDef> {
        self.fields
            .iter()
            .filter(|f| register & mask & f.mask() != 0)
            .collect()
    }
}

const fn flag(name: &'static str, bit: u8, perf: PerfUse, doc: &'static str) -> FieldDef {
    FieldDef {
        name,
        lo: bit,
        hi: bit,
        kind: FieldKind::Flag,
        perf,
        doc,
    }
}

const fn value(name: &'static str, lo: u8, hi: u8, perf: PerfUse, doc: &'static str) -> FieldDef {
    FieldDef {
        name,
        lo,
        hi,
        kind: FieldKind::Value,
        perf,
        doc,
    }
}

const fn reserved(lo: u8, hi: u8, perf: PerfUse) -> FieldDef {
    FieldDef {
        name: "reserved",
        lo,
        hi,
        kind: FieldKind::Reserved,
        perf,
        doc: "reserved, must be zero",
    }
}

use PerfUse::{Ignored, Kernel, NotApplicable as NA, Passed};

/// Intel `IA32_PERFEVTSELx`, architectural performance monitoring v1–v6.
pub static INTEL_EVTSEL: Layout = Layout {
    kind: RegisterKind::IntelEvtSel,
    name: "IA32_PERFEVTSELx",
    location: "MSR 0x186 + x (programs IA32_PMCx at 0xC1 + x)",
    fields: &[
        value("EventSelect", 0, 7, Passed, "event code"),
        value(
            "UMASK",
            8,
            15,
            Passed,
            "unit mask: which sub-events of the event count",
        ),
        flag(
            "USR",
            16,
            Kernel,
            "count while the CPL is 1, 2 or 3 (user mode)",
        ),
        flag("OS", 17, Kernel, "count while the CPL is 0 (kernel mode)"),
        flag(
            "E",
            18,
            Passed,
            "edge detect: count deasserted-to-asserted transitions",
        ),
        flag(
            "PC",
            19,
            Ignored,
            "pin control: toggle the PMi pin on increments",
        ),
        flag(
            "INT",
            20,
            Kernel,
            "raise a PMI through the local APIC on overflow",
        ),
        flag(
            "ANY",
            21,
            Passed,
            "AnyThread: count for all SMT threads of the core (PMU v3–v4; reserved later)",
        ),
        flag("EN", 22, Kernel, "enable the counter"),
        flag(
            "INV",
            23,
            Passed,
            "invert the counter-mask comparison (count cycles below CMASK)",
        ),
        value(
            "CMASK",
            24,
            31,
            Passed,
            "counter mask: when non-zero, count cycles with at least CMASK events",
        ),
        flag(
            "IN_TX",
            32,
            Passed,
            "count only inside a TSX transaction (Haswell and later)",
        ),
        flag(
            "IN_TXCP",
            33,
            Passed,
            "checkpointed: exclude aborted transactions (Haswell and later)",
        ),
        flag(
            "ADAPTIVE",
            34,
            Kernel,
            "adaptive PEBS record for this counter (Ice Lake and later)",
        ),
        flag(
            "BR_CNTR",
            35,
            Ignored,
            "log this counter's events in LBR records (PMU v6)",
        ),
        flag(
            "EQ",
            36,
            Passed,
            "count cycles with exactly CMASK events (PMU v6)",
        ),
        reserved(37, 39, Ignored),
        value("UMASK2", 40, 47, Passed, "second unit mask (PMU v6)"),
        reserved(48, 63, Ignored),
    ],
};

/// Intel `IA32_FIXED_CTR_CTRL`: four bits per fixed counter, plus the
/// adaptive-PEBS bits of Ice Lake and later.
pub static INTEL_FIXED_CTR_CTRL: Layout = Layout {
    kind: RegisterKind::IntelFixedCtrCtrl,
    name: "IA32_FIXED_CTR_CTRL",
    location: "MSR 0x38D (controls IA32_FIXED_CTRx at 0x309 + x)",
    fields: &[
        flag(
            "FC0_OS",
            0,
            NA,
            "fixed counter 0 (instructions retired): count in ring 0",
        ),
        flag("FC0_USR", 1, NA, "fixed counter 0: count in ring > 0"),
        flag("FC0_ANY", 2, NA, "fixed counter 0: AnyThread"),
        flag("FC0_PMI", 3, NA, "fixed counter 0: PMI on overflow"),
        flag(
            "FC1_OS",
            4,
            NA,
            "fixed counter 1 (unhalted core cycles): count in ring 0",
        ),
        flag("FC1_USR", 5, NA, "fixed counter 1: count in ring > 0"),
        flag("FC1_ANY", 6, NA, "fixed counter 1: AnyThread"),
        flag("FC1_PMI", 7, NA, "fixed counter 1: PMI on overflow"),
        flag(
            "FC2_OS",
            8,
            NA,
            "fixed counter 2 (unhalted reference cycles): count in ring 0",
        ),
        flag("FC2_USR", 9, NA, "fixed counter 2: count in ring > 0"),
        flag("FC2_ANY", 10, NA, "fixed counter 2: AnyThread"),
        flag("FC2_PMI", 11, NA, "fixed counter 2: PMI on overflow"),
        flag(
            "FC3_OS",
            12,
            NA,
            "fixed counter 3 (topdown slots): count in ring 0",
        ),
        flag("FC3_USR", 13, NA, "fixed counter 3: count in ring > 0"),
        flag("FC3_ANY", 14, NA, "fixed counter 3: AnyThread"),
        flag("FC3_PMI", 15, NA, "fixed counter 3: PMI on overflow"),
        flag("FC4_OS", 16, NA, "fixed counter 4: count in ring 0"),
        flag("FC4_USR", 17, NA, "fixed counter 4: count in ring > 0"),
        flag("FC4_ANY", 18, NA, "fixed counter 4: AnyThread"),
        flag("FC4_PMI", 19, NA, "fixed counter 4: PMI on overflow"),
        flag("FC5_OS", 20, NA, "fixed counter 5: count in ring 0"),
        flag("FC5_USR", 21, NA, "fixed counter 5: count in ring > 0"),
        flag("FC5_ANY", 22, NA, "fixed counter 5: AnyThread"),
        flag("FC5_PMI", 23, NA, "fixed counter 5: PMI on overflow"),
        flag("FC6_OS", 24, NA, "fixed counter 6: count in ring 0"),
        flag("FC6_USR", 25, NA, "fixed counter 6: count in ring > 0"),
        flag("FC6_ANY", 26, NA, "fixed counter 6: AnyThread"),
        flag("FC6_PMI", 27, NA, "fixed counter 6: PMI on overflow"),
        flag("FC7_OS", 28, NA, "fixed counter 7: count in ring 0"),
        flag("FC7_USR", 29, NA, "fixed counter 7: count in ring > 0"),
        flag("FC7_ANY", 30, NA, "fixed counter 7: AnyThread"),
        flag("FC7_PMI", 31, NA, "fixed counter 7: PMI on overflow"),
        flag(
            "FC0_ADAPTIVE",
            32,
            NA,
            "fixed counter 0: adaptive PEBS record",
        ),
        reserved(33, 35, NA),
        flag(
            "FC1_ADAPTIVE",
            36,
            NA,
            "fixed counter 1: adaptive PEBS record",
        ),
        reserved(37, 39, NA),
        flag(
            "FC2_ADAPTIVE",
            40,
            NA,
            "fixed counter 2: adaptive PEBS record",
        ),
        reserved(41, 43, NA),
        flag(
            "FC3_ADAPTIVE",
            44,
            NA,
            "fixed counter 3: adaptive PEBS record",
        ),
        reserved(45, 63, NA),
    ],
};

/// Intel `IA32_PERF_GLOBAL_CTRL` (PMU v2 and later).
pub static INTEL_GLOBAL_CTRL: Layout = Layout {
    kind: RegisterKind::IntelGlobalCtrl,
    name: "IA32_PERF_GLOBAL_CTRL",
    location: "MSR 0x38F",
    fields: &[
        flag("PMC0_EN", 0, NA, "enable IA32_PMC0"),
        flag("PMC1_EN", 1, NA, "enable IA32_PMC1"),
        flag("PMC2_EN", 2, NA, "enable IA32_PMC2"),
        flag("PMC3_EN", 3, NA, "enable IA32_PMC3"),
        flag("PMC4_EN", 4, NA, "enable IA32_PMC4"),
        flag("PMC5_EN", 5, NA, "enable IA32_PMC5"),
        flag("PMC6_EN", 6, NA, "enable IA32_PMC6"),
        flag("PMC7_EN", 7, NA, "enable IA32_PMC7"),
        reserved(8, 31, NA),
        flag(
            "FIXED_CTR0_EN",
            32,
            NA,
            "enable IA32_FIXED_CTR0 (instructions retired)",
        ),
        flag(
            "FIXED_CTR1_EN",
            33,
            NA,
            "enable IA32_FIXED_CTR1 (unhalted core cycles)",
        ),
        flag(
            "FIXED_CTR2_EN",
            34,
            NA,
            "enable IA32_FIXED_CTR2 (unhalted reference cycles)",
        ),
        flag(
            "FIXED_CTR3_EN",
            35,
            NA,
            "enable IA32_FIXED_CTR3 (topdown slots)",
        ),
        flag("FIXED_CTR4_EN", 36, NA, "enable IA32_FIXED_CTR4"),
        flag("FIXED_CTR5_EN", 37, NA, "enable IA32_FIXED_CTR5"),
        flag("FIXED_CTR6_EN", 38, NA, "enable IA32_FIXED_CTR6"),
        flag("FIXED_CTR7_EN", 39, NA, "enable IA32_FIXED_CTR7"),
        reserved(40, 47, NA),
        flag(
            "PERF_METRICS_EN",
            48,
            NA,
            "enable the PERF_METRICS top-down fractions (Ice Lake and later)",
        ),
        reserved(49, 63, NA),
    ],
};

/// Intel `IA32_PERF_GLOBAL_STATUS` (and `IA32_PERF_GLOBAL_OVF_CTRL`, which
/// clears the same bits).
pub static INTEL_GLOBAL_STATUS: Layout = Layout {
    kind: RegisterKind::IntelGlobalStatus,
    name: "IA32_PERF_GLOBAL_STATUS",
    location: "MSR 0x38E (cleared through IA32_PERF_GLOBAL_OVF_CTRL, 0x390)",
    fields: &[
        flag("PMC0_OVF", 0, NA, "IA32_PMC0 overflowed"),
        flag("PMC1_OVF", 1, NA, "IA32_PMC1 overflowed"),
        flag("PMC2_OVF", 2, NA, "IA32_PMC2 overflowed"),
        flag("PMC3_OVF", 3, NA, "IA32_PMC3 overflowed"),
        flag("PMC4_OVF", 4, NA, "IA32_PMC4 overflowed"),
        flag("PMC5_OVF", 5, NA, "IA32_PMC5 overflowed"),
        flag("PMC6_OVF", 6, NA, "IA32_PMC6 overflowed"),
        flag("PMC7_OVF", 7, NA, "IA32_PMC7 overflowed"),
        reserved(8, 31, NA),
        flag("FIXED_CTR0_OVF", 32, NA, "IA32_FIXED_CTR0 overflowed"),
        flag("FIXED_CTR1_OVF", 33, NA, "IA32_FIXED_CTR1 overflowed"),
        flag("FIXED_CTR2_OVF", 34, NA, "IA32_FIXED_CTR2 overflowed"),
        flag("FIXED_CTR3_OVF", 35, NA, "IA32_FIXED_CTR3 overflowed"),
        flag("FIXED_CTR4_OVF", 36, NA, "IA32_FIXED_CTR4 overflowed"),
        flag("FIXED_CTR5_OVF", 37, NA, "IA32_FIXED_CTR5 overflowed"),
        flag("FIXED_CTR6_OVF", 38, NA, "IA32_FIXED_CTR6 overflowed"),
        flag("FIXED_CTR7_OVF", 39, NA, "IA32_FIXED_CTR7 overflowed"),
        reserved(40, 47, NA),
        flag("PERF_METRICS_OVF", 48, NA, "PERF_METRICS overflowed"),
        reserved(49, 54, NA),
        flag("TRACE_TOPA_PMI", 55, NA, "Intel PT ToPA PMI pending"),
        reserved(56, 57, NA),
        flag("LBR_FRZ", 58, NA, "LBR stack frozen"),
        flag("CTR_FRZ", 59, NA, "counters frozen"),
        flag(
            "ASCI",
            60,
            NA,
            "counting affected by SGX/anti-side-channel protection",
        ),
        flag("OVF_UNCORE", 61, NA, "uncore counter overflowed"),
        flag("OVF_BUF", 62, NA, "PEBS/DS buffer reached its threshold"),
        flag(
            "COND_CHGD",
            63,
            NA,
            "PMU configuration changed (e.g. by a VMM)",
        ),
    ],
};

/// Intel client uncore event select (C-Box per LLC slice, ARB), e.g. 6th-gen
/// Core `MSR_UNC_CBO_x_PERFEVTSEL0`.
pub static INTEL_UNCORE_EVTSEL: Layout = Layout {
    kind: RegisterKind::IntelUncoreEvtSel,
    name: "MSR_UNC_*_PERFEVTSELx",
    location: "uncore MSRs, e.g. MSR_UNC_CBO_0_PERFEVTSEL0 0x700 on 6th-gen Core",
    fields: &[
        value("EventSelect", 0, 7, Passed, "event code"),
        value("UMASK", 8, 15, Passed, "unit mask"),
        reserved(16, 16, Ignored),
        flag("OCC_CTR_RST", 17, Ignored, "reset the occupancy counter"),
        flag("E", 18, Passed, "edge detect"),
        reserved(19, 19, Ignored),
        flag("OVF_PMI", 20, Kernel, "PMI on overflow"),
        reserved(21, 21, Ignored),
        flag("EN", 22, Kernel, "enable the counter"),
        flag("INV", 23, Passed, "invert the counter-mask comparison"),
        value("CMASK", 24, 28, Passed, "counter mask"),
        reserved(29, 63, Ignored),
    ],
};

/// AMD `PERF_CTLx` (families 10h–1Ah core counters).
pub static AMD_PERF_CTL: Layout = Layout {
    kind: RegisterKind::AmdPerfCtl,
    name: "PERF_CTLx",
    location: "MSR 0xC001_0000 + x, or 0xC001_0200 + 2x with the core counter extension",
    fields: &[
        value("EventSelect[7:0]", 0, 7, Passed, "event select, low 8 bits"),
        value("UnitMask", 8, 15, Passed, "unit mask"),
        flag("USR", 16, Kernel, "count in user mode (CPL > 0)"),
        flag("OS", 17, Kernel, "count in kernel mode (CPL 0)"),
        flag("Edge", 18, Passed, "edge detect"),
        reserved(19, 19, Ignored),
        flag("INT", 20, Kernel, "APIC interrupt on overflow"),
        reserved(21, 21, Ignored),
        flag("En", 22, Kernel, "enable the counter"),
        flag("Inv", 23, Passed, "invert the counter-mask comparison"),
        value("CntMask", 24, 31, Passed, "counter mask"),
        value(
            "EventSelect[11:8]",
            32,
            35,
            Passed,
            "event select, high 4 bits",
        ),
        reserved(36, 39, Ignored),
        flag(
            "GuestOnly",
            40,
            Kernel,
            "count only in guest mode (set from exclude_host)",
        ),
        flag(
            "HostOnly",
            41,
            Kernel,
            "count only in host mode (set from exclude_guest)",
        ),
        reserved(42, 63, Ignored),
    ],
};

/// The 12-bit AMD event select split over `EventSelect[7:0]` and
/// `EventSelect[11:8]`.
pub fn amd_event_select(register: u64) -> u16 {
    ((register & 0xff) | ((register >> 32) & 0xf) << 8) as u16
}

/// Place a 12-bit AMD event select into a `PERF_CTL` value.
pub fn amd_with_event_select(register: u64, event: u16) -> u64 {
    let e = event as u64 & 0xfff;
    (register & !0xf_0000_00ff) | (e & 0xff) | ((e >> 8) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_tiles_64_bits_exactly() {
        for kind in RegisterKind::ALL {
            let layout = kind.layout();
            let mut next = 0u32;
            for f in layout.fields {
                assert_eq!(
                    f.lo as u32, next,
                    "{}: gap or overlap at {}",
                    layout.name, f.name
                );
                assert!(f.hi >= f.lo);
                next = f.hi as u32 + 1;
            }
            assert_eq!(next, 64, "{} does not reach bit 63", layout.name);
            assert_eq!(RegisterKind::from_cli_name(kind.cli_name()), Some(kind));
        }
    }

    #[test]
    fn intel_llc_misses_user() {
        let l = &INTEL_EVTSEL;
        let v = l
            .encode([
                ("EventSelect", 0x2e),
                ("UMASK", 0x41),
                ("USR", 1),
                ("EN", 1),
            ])
            .unwrap();
        assert_eq!(v, 0x41412e);
        assert_eq!(v & l.perf_passed_mask(), 0x412e);
    }

    #[test]
    fn amd_split_event_select() {
        let v = amd_with_event_select(0xf700, 0x4e1);
        assert_eq!(v, 0x4_0000_f7e1);
        assert_eq!(amd_event_select(v), 0x4e1);
        assert_eq!(v & AMD_PERF_CTL.perf_passed_mask(), 0x4_0000_f7e1);
    }

    #[test]
    fn too_wide_and_unknown_fields_are_errors() {
        assert!(matches!(
            INTEL_EVTSEL.set(0, "UMASK", 0x100),
            Err(RegisterError::TooWide { .. })
        ));
        assert!(matches!(
            INTEL_EVTSEL.set(0, "NOPE", 1),
            Err(RegisterError::UnknownField { .. })
        ));
        assert_eq!(INTEL_UNCORE_EVTSEL.set(0, "CMASK", 31).unwrap(), 31 << 24);
        assert!(INTEL_UNCORE_EVTSEL.set(0, "CMASK", 32).is_err());
    }

    #[test]
    fn reserved_bits_are_reported() {
        let l = &INTEL_EVTSEL;
        let v = 0x41412e | (1 << 50);
        let hits = l.fields_set_in(v, l.reserved_mask());
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].lo, hits[0].hi), (48, 63));
    }
}
