//! One event, two views: the control-register value and the perf attr.
//!
//! pmx can program a counter itself (writing `IA32_PERFEVTSELx` or AMD's
//! `PERF_CTLx` through the msr driver) or ask the kernel to (handing
//! `perf_event_open(2)` a `perf_event_attr`). The two carry the same event
//! differently: the register holds the privilege bits (USR/OS), the enable
//! bit and the interrupt bit, where the attr says `exclude_user`,
//! `exclude_kernel` and leaves enabling and interrupts to the kernel, which
//! also ignores some register bits entirely. [`Encoded`] holds both views
//! and every note about what differs between them.
//!
//! perf's placement of the core-PMU terms (`/sys/bus/event_source/devices/
//! cpu/format/*` on x86): `event` config:0-7 (AMD also 32-35), `umask`
//! config:8-15, `edge` 18, `pc` 19, `any` 21, `inv` 23, `cmask` 24-31,
//! `in_tx` 32, `in_tx_cp` 33, `eq` 36, `umask2` 40-47; `ldlat`, `frontend`
//! and `offcore_rsp` go to config1.

use crate::register::{
    amd_with_event_select, FieldValue, Layout, PerfUse, RegisterKind, AMD_PERF_CTL, INTEL_EVTSEL,
    INTEL_UNCORE_EVTSEL,
};
use crate::spec::{
    closest, is_setting_term, Body, EventSpec, Modifiers, Settings, Span, SpecError, Term,
    TermValue, SETTING_TERMS,
};

fn is_zero(v: &u64) -> bool {
    *v == 0
}
use serde::Serialize;

/// `PERF_TYPE_RAW`: the core PMU's type on x86.
pub const PERF_TYPE_RAW: u32 = perf_type::RAW;

/// `attr.type` values the kernel fixes (`PERF_TYPE_*`). Other PMUs get a
/// dynamic type, found in `/sys/bus/event_source/devices/<pmu>/type`.
pub mod perf_type {
    /// `PERF_TYPE_HARDWARE`: the generic hardware events (`config` 0 is
    /// cycles, 1 instructions, ...).
    pub const HARDWARE: u32 = 0;
    /// `PERF_TYPE_SOFTWARE`: events the kernel counts itself.
    pub const SOFTWARE: u32 = 1;
    /// `PERF_TYPE_TRACEPOINT`: `config` is a tracepoint id.
    pub const TRACEPOINT: u32 = 2;
    /// `PERF_TYPE_HW_CACHE`: `config` = cache | op << 8 | result << 16.
    pub const HW_CACHE: u32 = 3;
    /// `PERF_TYPE_RAW`: `config` is the core PMU's own encoding (x86).
    pub const RAW: u32 = 4;
    /// `PERF_TYPE_BREAKPOINT`: a hardware breakpoint.
    pub const BREAKPOINT: u32 = 5;
}

/// Which vendor's register layout applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// Intel: `IA32_PERFEVTSELx`, 8-bit event select.
    Intel,
    /// AMD: `PERF_CTLx`, 12-bit event select split over bits 0–7 and 32–35.
    Amd,
}

impl Arch {
    /// Parse `intel` or `amd`.
    pub fn from_name(s: &str) -> Option<Arch> {
        match s.to_ascii_lowercase().as_str() {
            "intel" | "genuineintel" => Some(Arch::Intel),
            "amd" | "authenticamd" | "hygon" | "hygongenuine" => Some(Arch::Amd),
            _ => None,
        }
    }

    /// The core event-select layout.
    pub fn core_layout(self) -> &'static Layout {
        match self {
            Arch::Intel => &INTEL_EVTSEL,
            Arch::Amd => &AMD_PERF_CTL,
        }
    }
}

/// How to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Register layout to use.
    pub arch: Arch,
    /// The event will sample (sets INT in the register).
    pub sampling: bool,
}

/// The subset of `perf_event_attr` that says which event is counted and
/// how; `pmx-perf` turns it into the kernel's struct.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PerfAttr {
    /// The PMU's name (`cpu`, `msr`, `uncore_cbox_0`…).
    pub pmu: String,
    /// `attr.type`, when known without asking sysfs.
    #[serde(rename = "type")]
    pub type_: Option<u32>,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1` (`ldlat`, `frontend`, `offcore_rsp`).
    pub config1: u64,
    /// `attr.config2`.
    pub config2: u64,
    /// `attr.config3` (Linux 6.3).
    #[serde(skip_serializing_if = "is_zero")]
    pub config3: u64,
    /// `attr.exclude_user`.
    pub exclude_user: bool,
    /// `attr.exclude_kernel`.
    pub exclude_kernel: bool,
    /// `attr.exclude_hv`.
    pub exclude_hv: bool,
    /// `attr.exclude_guest`.
    pub exclude_guest: bool,
    /// `attr.exclude_host`.
    pub exclude_host: bool,
    /// `attr.exclude_idle`.
    pub exclude_idle: bool,
    /// `attr.pinned`.
    pub pinned: bool,
    /// `attr.exclusive` (perf's `:e`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
    /// `G` or `H` was typed: the register view carries GuestOnly/HostOnly
    /// only then (perf's default `exclude_guest` is the kernel's business).
    #[serde(skip)]
    pub guest_host_given: bool,
    /// `attr.precise_ip` (0–3).
    pub precise_ip: u8,
    /// `attr.sample_period` when given (`period=`).
    pub sample_period: Option<u64>,
    /// `attr.sample_freq` when given (`freq=`).
    pub sample_freq: Option<u64>,
}

impl PerfAttr {
    /// Apply the privilege and scheduling modifiers as perf does
    /// (`get_event_modifier`, `event_attr_init`): `exclude_guest` is 1
    /// unless `G`, or own modifiers without `u`/`p`, clear it; `P` is
    /// the maximal precision a sampling session asks for, not a
    /// counting attr's `precise_ip`.
    pub fn apply_modifiers(&mut self, m: &Modifiers) {
        self.exclude_user = m.exclude_user();
        self.exclude_kernel = m.exclude_kernel();
        self.exclude_hv = m.exclude_hv();
        self.exclude_host = m.exclude_host();
        self.exclude_guest = m.exclude_guest();
        self.guest_host_given = m.guest_only || m.host_only;
        self.exclude_idle = m.exclude_idle;
        self.pinned = m.pinned;
        self.exclusive = m.exclusive;
        self.precise_ip = m.precise;
    }

    /// Apply the setting terms that are attr fields: `period=`, `freq=`.
    pub fn apply_settings(&mut self, s: &Settings) {
        if s.period.is_some() {
            self.sample_period = s.period;
        }
        if s.freq.is_some() {
            self.sample_freq = s.freq;
        }
    }
}

/// An event encoded both ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Encoded {
    /// Layout used.
    pub arch: Arch,
    /// Which control register the value is for.
    pub register_kind: RegisterKind,
    /// The control-register value pmx would write (EN and privilege bits
    /// set; INT only when sampling).
    pub register: u64,
    /// The attr for `perf_event_open(2)`.
    pub attr: PerfAttr,
    /// Every field of `register`.
    pub fields: Vec<FieldValue>,
    /// What differs between the views.
    pub notes: Vec<String>,
    /// Bits of the config the kernel sets itself or ignores (the attr
    /// keeps them, as perf does).
    pub warnings: Vec<String>,
}

/// Encoding failures, pointing into the spec where they can.
pub type EncodeError = SpecError;

struct TermDef {
    key: &'static str,
    /// Where it goes: config bits (lo, width) or config1/config2.
    place: Place,
    intel: bool,
    amd: bool,
}

#[derive(Clone, Copy)]
enum Place {
    Config(u8, u8),
    Config1(u8, u8),
    WholeConfig,
    WholeConfig1,
    WholeConfig2,
    WholeConfig3,
    Event,
}

const TERMS: &[TermDef] = &[
    TermDef {
        key: "event",
        place: Place::Event,
        intel: true,
        amd: true,
    },
    TermDef {
        key: "umask",
        place: Place::Config(8, 8),
        intel: true,
        amd: true,
    },
    TermDef {
        key: "edge",
        place: Place::Config(18, 1),
        intel: true,
        amd: true,
    },
    TermDef {
        key: "pc",
        place: Place::Config(19, 1),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "any",
        place: Place::Config(21, 1),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "inv",
        place: Place::Config(23, 1),
        intel: true,
        amd: true,
    },
    TermDef {
        key: "cmask",
        place: Place::Config(24, 8),
        intel: true,
        amd: true,
    },
    TermDef {
        key: "in_tx",
        place: Place::Config(32, 1),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "in_tx_cp",
        place: Place::Config(33, 1),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "eq",
        place: Place::Config(36, 1),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "umask2",
        place: Place::Config(40, 8),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "ldlat",
        place: Place::Config1(0, 16),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "frontend",
        place: Place::Config1(0, 24),
        intel: true,
        amd: false,
    },
    TermDef {
        key: "offcore_rsp",
        place: Place::WholeConfig1,
        intel: true,
        amd: false,
    },
    TermDef {
        key: "config",
        place: Place::WholeConfig,
        intel: true,
        amd: true,
    },
    TermDef {
        key: "config1",
        place: Place::WholeConfig1,
        intel: true,
        amd: true,
    },
    TermDef {
        key: "config2",
        place: Place::WholeConfig2,
        intel: true,
        amd: true,
    },
    TermDef {
        key: "config3",
        place: Place::WholeConfig3,
        intel: true,
        amd: true,
    },
];

/// Aliases perf and libpfm users type.
fn canonical_term(key: &str) -> &str {
    match key {
        "e" => "edge",
        "i" => "inv",
        "c" | "cmask" | "counter_mask" => "cmask",
        "t" | "anythread" | "any_thread" => "any",
        "intx" => "in_tx",
        "intxcp" | "in_txcp" => "in_tx_cp",
        "offcore_response" | "offcore" => "offcore_rsp",
        "fe_thres" => "frontend",
        other => other,
    }
}

/// Is this PMU name the core PMU?
pub fn is_core_pmu(name: &str) -> bool {
    matches!(name, "cpu" | "cpu_core" | "cpu_atom" | "cpu_lowpower")
}

/// Encode a parsed spec whose event is given by terms or a raw config.
/// Symbolic names need the event database; they are refused here with a
/// pointer at the name.
pub fn encode_spec(spec: &EventSpec, opts: EncodeOptions) -> Result<Encoded, EncodeError> {
    let pmu = spec.pmu.clone().unwrap_or_else(|| "cpu".to_string());
    let err = |span: Span, msg: String| SpecError::new(&spec.text, span, msg);
    let uncore = pmu.starts_with("uncore_") || pmu.starts_with("uncore/");
    let encodable = is_core_pmu(&pmu) || (uncore && opts.arch == Arch::Intel);
    if !encodable {
        let end = pmu.len().max(1);
        return Err(err(
            Span::new(0, end),
            format!(
                "PMU '{pmu}' is not the core PMU: its field placement comes from sysfs, which 'pmx encode' does not read (use 'cpu/…/')"
            ),
        ));
    }
    match &spec.body {
        Body::Named { parts, spans } => {
            let span = Span::new(spans[0].start, spans.last().map(|s| s.end).unwrap_or(1));
            return Err(err(
                span,
                format!(
                    "'{}' is a symbolic event name; encode takes terms (cpu/event=0x2e,umask=0x41/) or a raw config (r412e)",
                    parts.join(":")
                ),
            ));
        }
        Body::Breakpoint { .. } => {
            return Err(err(
                Span::new(0, 3),
                "a breakpoint (mem:) has no counter-register encoding".to_string(),
            ))
        }
        Body::Numeric { type_, .. } if *type_ != PERF_TYPE_RAW => {
            return Err(err(
                Span::new(0, spec.text.find(':').unwrap_or(1)),
                format!("type {type_} is not the core PMU's (PERF_TYPE_RAW, 4): it has no counter-register encoding"),
            ))
        }
        Body::Terms | Body::Raw { .. } | Body::Numeric { .. } => {}
    }

    let mut attr = PerfAttr {
        pmu: pmu.clone(),
        // cpu and cpu_core are PERF_TYPE_RAW; the other core PMUs of hybrid
        // parts get a type only sysfs knows.
        type_: if pmu == "cpu" || pmu == "cpu_core" {
            Some(PERF_TYPE_RAW)
        } else {
            None
        },
        ..PerfAttr::default()
    };
    let mut notes = Vec::new();
    if let Body::Raw { config, .. } | Body::Numeric { config, .. } = &spec.body {
        attr.config = *config;
    }
    let mut saw_event = matches!(spec.body, Body::Raw { .. } | Body::Numeric { .. });

    saw_event |= apply_terms(&spec.text, &spec.terms, opts.arch, &mut attr)?;
    if !saw_event {
        let span = spec
            .terms
            .first()
            .map(|t| t.span)
            .unwrap_or(Span::new(0, spec.text.len()));
        return Err(err(
            span,
            "no event code: give event=0xNN (or config=, or a raw rNNN)".to_string(),
        ));
    }
    attr.apply_settings(&spec.settings()?);
    attr.apply_modifiers(&spec.modifiers);
    let layout = if uncore {
        &INTEL_UNCORE_EVTSEL
    } else {
        opts.arch.core_layout()
    };
    let sampling = opts.sampling || attr.sample_period.is_some() || attr.sample_freq.is_some();
    let mut enc = encode_attr(attr, layout, opts.arch, sampling, &mut notes);
    if uncore && spec.modifiers.privilege_given {
        enc.notes.push(
            "uncore counters count for the whole package: u/k modifiers do not apply".to_string(),
        );
    }
    Ok(enc)
}

/// Apply `terms` (`event=`, `umask=`, `cmask=`, `inv`, `ldlat=`, …) to the
/// config words of `attr`, as perf places them for the core PMU of `arch`.
/// `config=` is applied first so named fields override its bits. Returns
/// whether a term gave the event code. Errors point into `text`.
pub fn apply_terms(
    text: &str,
    terms: &[Term],
    arch: Arch,
    attr: &mut PerfAttr,
) -> Result<bool, SpecError> {
    let err = |span: Span, msg: String| SpecError::new(text, span, msg);
    let mut saw_event = false;
    // `config=` first, so named fields override its bits.
    let mut ordered: Vec<&Term> = terms.iter().filter(|t| t.key == "config").collect();
    ordered.extend(terms.iter().filter(|t| t.key != "config"));
    for term in ordered {
        let key = canonical_term(&term.key);
        if is_setting_term(key) {
            continue;
        }
        let Some(def) = TERMS.iter().find(|d| d.key == key) else {
            let names = TERMS
                .iter()
                .map(|d| d.key)
                .chain(SETTING_TERMS.iter().copied());
            let sugg = closest(&term.key, names, 3);
            return Err(
                err(term.key_span, format!("unknown term '{}'", term.key)).with_suggestions(sugg)
            );
        };
        let supported = match arch {
            Arch::Intel => def.intel,
            Arch::Amd => def.amd,
        };
        if !supported {
            return Err(err(
                term.key_span,
                format!(
                    "'{}' is not a field of {} event selects",
                    def.key,
                    arch_name(arch)
                ),
            ));
        }
        let Some(v) = term.number() else {
            let TermValue::Text(t) = &term.value else {
                unreachable!()
            };
            return Err(err(
                term.span,
                format!("'{}' takes a number, not '{t}'", def.key),
            ));
        };
        let fit = |lo: u8, width: u8, target: &mut u64| -> Result<(), SpecError> {
            let max = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            if v > max {
                return Err(err(
                    term.span,
                    format!(
                        "{} = {v:#x} does not fit in {width} bit{} (max {max:#x})",
                        def.key,
                        if width == 1 { "" } else { "s" }
                    ),
                ));
            }
            *target = (*target & !(max << lo)) | (v << lo);
            Ok(())
        };
        match def.place {
            Place::Event => {
                saw_event = true;
                match arch {
                    Arch::Intel => {
                        if v > 0xff {
                            return Err(err(
                                term.span,
                                format!("event = {v:#x} is wider than Intel's 8-bit event select (12-bit event codes are AMD's: use --arch amd)"),
                            ));
                        }
                        attr.config = (attr.config & !0xff) | v;
                    }
                    Arch::Amd => {
                        if v > 0xfff {
                            return Err(err(
                                term.span,
                                format!("event = {v:#x} is wider than AMD's 12-bit event select"),
                            ));
                        }
                        attr.config = amd_with_event_select(attr.config, v as u16);
                    }
                }
            }
            Place::Config(lo, w) => fit(lo, w, &mut attr.config)?,
            Place::Config1(lo, w) => fit(lo, w, &mut attr.config1)?,
            Place::WholeConfig => {
                saw_event = true;
                attr.config = v;
            }
            Place::WholeConfig1 => attr.config1 = v,
            Place::WholeConfig2 => attr.config2 = v,
            Place::WholeConfig3 => attr.config3 = v,
        }
    }
    Ok(saw_event)
}

fn arch_name(a: Arch) -> &'static str {
    match a {
        Arch::Intel => "Intel",
        Arch::Amd => "AMD",
    }
}

/// Build both views from a perf attr (config bits already placed): the
/// register gets the bits perf passes, plus EN, USR/OS from the exclude
/// flags, INT when sampling, and on AMD Guest/HostOnly. The attr keeps
/// its config as given, bit for bit, as perf passes it to the kernel;
/// bits the kernel sets itself or ignores get a warning naming them.
pub fn encode_attr(
    attr: PerfAttr,
    layout: &'static Layout,
    arch: Arch,
    sampling: bool,
    notes: &mut Vec<String>,
) -> Encoded {
    let passed = layout.perf_passed_mask();
    let mut warnings = Vec::new();
    if attr.config & !passed != 0 {
        warnings.push(unused_config_bits(&attr, layout));
    }
    let mut reg = attr.config & passed;
    let set = |reg: &mut u64, name: &str, on: bool| {
        if let Some(f) = layout.field(name) {
            if on {
                *reg |= f.mask();
            } else {
                *reg &= !f.mask();
            }
        }
    };
    let is_uncore = layout.kind == RegisterKind::IntelUncoreEvtSel;
    if !is_uncore {
        set(&mut reg, "USR", !attr.exclude_user);
        set(&mut reg, "OS", !attr.exclude_kernel);
        if attr.exclude_user && attr.exclude_kernel {
            notes.push(
                "neither user nor kernel mode selected: the counter would count nothing"
                    .to_string(),
            );
        }
    }
    set(&mut reg, "EN", true);
    set(&mut reg, "En", true);
    if sampling {
        set(&mut reg, "INT", true);
        set(&mut reg, "OVF_PMI", true);
    }
    match arch {
        Arch::Amd => {
            let gh = attr.guest_host_given;
            set(&mut reg, "GuestOnly", gh && attr.exclude_host);
            set(&mut reg, "HostOnly", gh && attr.exclude_guest);
            if attr.precise_ip > 0 {
                notes.push("AMD has no PEBS: precise sampling goes through IBS (the ibs_op PMU); the kernel maps cycles:p there".to_string());
            }
        }
        Arch::Intel => {
            if attr.guest_host_given && (attr.exclude_host || attr.exclude_guest) {
                notes.push("Intel event selects have no guest/host bits: the kernel applies G/H through VM-entry/exit controls".to_string());
            }
            if attr.precise_ip > 0 {
                notes.push(format!(
                    "precise_ip={} uses PEBS: the kernel also sets this counter's bit in IA32_PEBS_ENABLE (0x3F1)",
                    attr.precise_ip
                ));
            }
        }
    }
    if !attr.exclude_hv && !is_uncore && attr.exclude_user && attr.exclude_kernel {
        notes.push(
            "x86 counters have no hypervisor-mode bit: 'h' alone counts nothing on the register"
                .to_string(),
        );
    }
    if attr.config1 != 0 {
        notes.push(format!(
            "config1 {:#x} goes to an auxiliary MSR (load-latency threshold, frontend or offcore-response filter), not the event select",
            attr.config1
        ));
    }
    Encoded {
        arch,
        register_kind: layout.kind,
        register: reg,
        fields: layout.decode(reg),
        attr,
        notes: std::mem::take(notes),
        warnings,
    }
}

/// The warning for a config with bits outside the event fields of
/// `layout`: which fields they are and who decides them instead.
fn unused_config_bits(attr: &PerfAttr, layout: &Layout) -> String {
    let passed = layout.perf_passed_mask();
    let names = |kernel: bool| -> Vec<String> {
        (layout.fields_set_in(attr.config, !passed).iter())
            .filter(|f| (f.perf == PerfUse::Kernel) == kernel)
            .map(|f| match f.kind {
                crate::register::FieldKind::Reserved => format!("reserved bits {}", f.bits()),
                _ => format!("{} (bit {})", f.name, f.bits()),
            })
            .collect()
    };
    let mut why = Vec::new();
    let kernel = names(true);
    if !kernel.is_empty() {
        why.push(format!(
            "{} the kernel sets from the attr (exclude_user/exclude_kernel, enabling, sampling)",
            kernel.join(", ")
        ));
    }
    let ignored = names(false);
    if !ignored.is_empty() {
        why.push(format!("{} the kernel ignores", ignored.join(", ")));
    }
    format!(
        "config {:#x} passed to the kernel as given, but bits {:#x} are not event bits of {}: {}; the event bits it uses are {:#x}",
        attr.config,
        attr.config & !passed,
        layout.name,
        why.join("; "),
        attr.config & passed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    fn enc(s: &str, arch: Arch) -> Encoded {
        encode_spec(
            &parse_spec(s).unwrap(),
            EncodeOptions {
                arch,
                sampling: false,
            },
        )
        .unwrap()
    }

    #[test]
    fn intel_privilege_variants() {
        let u = enc("cpu/event=0x2e,umask=0x41/u", Arch::Intel);
        assert_eq!(u.register, 0x41412e);
        assert_eq!(u.attr.config, 0x412e);
        assert!(u.attr.exclude_kernel && !u.attr.exclude_user && u.attr.exclude_hv);
        let k = enc("cpu/event=0x2e,umask=0x41/k", Arch::Intel);
        assert_eq!(k.register, 0x42412e);
        assert_eq!(k.attr.config, 0x412e);
        let both = enc("cpu/event=0x2e,umask=0x41/", Arch::Intel);
        assert_eq!(both.register, 0x43412e);
        assert_eq!(both.attr.config, 0x412e);
        assert_eq!(both.attr.type_, Some(PERF_TYPE_RAW));
        assert_eq!(
            enc("event=0x2e,umask=0x41:u", Arch::Intel).register,
            0x41412e
        );
        assert_eq!(enc("r412e:k", Arch::Intel).register, 0x42412e);
    }

    #[test]
    fn amd_wide_event() {
        let a = enc("cpu/event=0x4e1,umask=0xf7/", Arch::Amd);
        // Event bits 11:8 go to 35:32 (DESIGN.md: 0x4_0000_F7E1).
        assert_eq!(a.attr.config, 0x4_0000_f7e1);
        assert_eq!(a.register, 0x4_0043_f7e1);
        let g = enc("cpu/event=0xc0/G", Arch::Amd);
        assert_eq!(g.register, 0x0100_0043_00c0);
        assert!(g.attr.exclude_host);
    }

    #[test]
    fn all_the_intel_fields() {
        let e = enc(
            "cpu/event=0xa3,umask=0x14,cmask=20,inv,edge,any,in_tx,in_tx_cp,eq,umask2=0x3/",
            Arch::Intel,
        );
        assert_eq!(
            e.attr.config,
            0xa3 | 0x14 << 8
                | 1 << 18
                | 1 << 21
                | 1 << 23
                | 20 << 24
                | 1 << 32
                | 1 << 33
                | 1 << 36
                | 3 << 40
        );
        let l = enc("cpu/event=0xcd,umask=0x1,ldlat=3/pp", Arch::Intel);
        assert_eq!(l.attr.config1, 3);
        assert_eq!(l.attr.precise_ip, 2);
        let s = encode_spec(
            &parse_spec("cpu/event=0xc0,period=100003/").unwrap(),
            EncodeOptions {
                arch: Arch::Intel,
                sampling: false,
            },
        )
        .unwrap();
        assert_eq!(s.register & (1 << 20), 1 << 20);
    }

    #[test]
    fn raw_configs_are_passed_bit_exact_with_a_warning() {
        let e = enc("r53412e", Arch::Intel);
        assert_eq!(e.attr.config, 0x53412e);
        assert_eq!(e.register, 0x43412e);
        assert_eq!(
            e.warnings,
            ["config 0x53412e passed to the kernel as given, but bits 0x530000 are not event bits of IA32_PERFEVTSELx: USR (bit 16), OS (bit 17), INT (bit 20), EN (bit 22) the kernel sets from the attr (exclude_user/exclude_kernel, enabling, sampling); the event bits it uses are 0x412e"]
        );
        // The numeric form and `config=` alike; pin control is ignored.
        for spec in ["4:0x6530160", "cpu/config=0x6530160/"] {
            let e = enc(spec, Arch::Intel);
            assert_eq!(e.attr.config, 0x6530160, "{spec}");
            assert_eq!(e.register, 0x6430160, "{spec}");
            assert!(e.warnings[0].contains("bits 0x530000"), "{spec}");
        }
        let e = enc("r8412e", Arch::Intel);
        assert_eq!(e.attr.config, 0x8412e);
        assert!(
            e.warnings[0].contains("PC (bit 19) the kernel ignores"),
            "{:?}",
            e.warnings
        );
        assert!(enc("r412e", Arch::Intel).warnings.is_empty());
    }

    #[test]
    fn errors_point_at_terms() {
        let o = EncodeOptions {
            arch: Arch::Intel,
            sampling: false,
        };
        let e = encode_spec(&parse_spec("cpu/event=0x2e,umsk=0x41/").unwrap(), o).unwrap_err();
        assert_eq!(e.span.start, 15);
        assert_eq!(e.suggestions[0], "umask");
        let e = encode_spec(&parse_spec("cpu/event=0x4e1/").unwrap(), o).unwrap_err();
        assert_eq!(e.span.start, 4);
        let e = encode_spec(&parse_spec("cpu/umask=0x300/").unwrap(), o).unwrap_err();
        assert!(e.message.contains("8 bits"));
        let e = encode_spec(&parse_spec("cpu/umask=0x3/").unwrap(), o).unwrap_err();
        assert!(e.message.contains("no event"));
        let e = encode_spec(
            &parse_spec("cpu/event=0x3c,any/").unwrap(),
            EncodeOptions {
                arch: Arch::Amd,
                sampling: false,
            },
        )
        .unwrap_err();
        assert!(e.message.contains("AMD"));
    }
}
