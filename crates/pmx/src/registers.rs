//! Event specs to control-register values (`pmx encode`) and register
//! values back to their fields (`pmx decode`), with what perf would make
//! of them.
//!
//! The layouts and the encoder are `pmx-model`'s; this module adds the
//! reading of a value as typed ([`parse_value`], with a caret under the
//! first bad character), the choice of register for a vendor
//! ([`choose_register`]), and the warnings and notes of a decoded value
//! ([`decode`]).

use pmx_model::encoding::{encode_spec, Arch, EncodeOptions, Encoded};
use pmx_model::register::{FieldKind, FieldValue, Layout, PerfUse, RegisterKind};
use pmx_model::spec::{parse_spec, SpecError};

/// Parse and encode one spec.
pub fn encode(text: &str, opts: EncodeOptions) -> Result<Encoded, SpecError> {
    parse_spec(text).and_then(|spec| encode_spec(&spec, opts))
}

/// `--arch`'s value: `intel` or `amd`.
pub fn parse_arch(s: &str) -> Result<Arch, String> {
    Arch::from_name(s).ok_or_else(|| format!("unknown architecture '{s}' (intel or amd)"))
}

/// `--register`'s value: a layout's name (`evtsel`, `perf-ctl`, …).
pub fn parse_register(s: &str) -> Result<RegisterKind, String> {
    RegisterKind::from_cli_name(s).ok_or_else(|| {
        let names: Vec<&str> = RegisterKind::ALL.iter().map(|k| k.cli_name()).collect();
        format!("unknown register '{s}' (one of: {})", names.join(", "))
    })
}

/// The layout to use: `flag` when given, else this CPU's vendor, else
/// Intel; with where the choice came from, for the output.
pub fn resolve_arch(flag: Option<Arch>) -> (Arch, &'static str) {
    if let Some(a) = flag {
        return (a, "from --arch");
    }
    let host = crate::database::host_cpu_id();
    match host.and_then(|c| Arch::from_name(c.vendor.cpuid_str())) {
        Some(a) => (a, "this CPU's vendor"),
        None => (Arch::Intel, "default; this CPU is neither Intel nor AMD"),
    }
}

/// A value that is not a number; the message points at the column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

/// Parse a value in hex (`0x…`) or decimal, `_` separators allowed,
/// pointing at the first bad character.
pub fn parse_value(text: &str) -> Result<u64, ValueError> {
    let caret = |pos: usize, msg: &str| {
        ValueError(format!(
            "{msg} at column {}\n  {text}\n  {}^",
            pos + 1,
            " ".repeat(pos)
        ))
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(ValueError("empty value".to_string()));
    }
    let lead = text.len() - text.trim_start().len();
    let (digits, radix, off) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16, 2),
        None => (t, 10, 0),
    };
    let mut v: u64 = 0;
    let mut any = false;
    for (i, c) in digits.char_indices() {
        if c == '_' {
            continue;
        }
        let Some(d) = c.to_digit(radix) else {
            let msg = if radix == 10 && c.is_ascii_hexdigit() {
                format!("'{c}' is not a decimal digit (write hex as 0x…)")
            } else {
                format!(
                    "'{c}' is not a {} digit",
                    if radix == 16 { "hex" } else { "decimal" }
                )
            };
            return Err(caret(lead + off + i, &msg));
        };
        v = v
            .checked_mul(radix as u64)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or_else(|| caret(lead + off + i, "value does not fit in 64 bits"))?;
        any = true;
    }
    if !any {
        return Err(caret(lead + off, "missing digits"));
    }
    Ok(v)
}

/// `--register` names a register of the other vendor than `--arch`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("--register {} is an {vendor:?} register, but --arch says {arch:?}", .register.cli_name())]
pub struct RegisterMismatch {
    /// The register asked for.
    pub register: RegisterKind,
    /// Its vendor.
    pub vendor: Arch,
    /// The vendor asked for.
    pub arch: Arch,
}

/// The register to decode as: `register` when given (it must be of the
/// vendor `arch_flag` names, if any), else the event select of `arch`.
pub fn choose_register(
    register: Option<RegisterKind>,
    arch_flag: Option<Arch>,
    arch: Arch,
) -> Result<RegisterKind, RegisterMismatch> {
    let Some(k) = register else {
        return Ok(match arch {
            Arch::Intel => RegisterKind::IntelEvtSel,
            Arch::Amd => RegisterKind::AmdPerfCtl,
        });
    };
    let vendor = match k {
        RegisterKind::AmdPerfCtl => Arch::Amd,
        _ => Arch::Intel,
    };
    if arch_flag.is_some_and(|a| a != vendor) {
        return Err(RegisterMismatch {
            register: k,
            vendor,
            arch,
        });
    }
    Ok(k)
}

/// This CPU's register set (Intel or AMD), from CPUID.
pub fn host_arch() -> Option<Arch> {
    crate::database::host_cpu_id().and_then(|c| Arch::from_name(c.vendor.cpuid_str()))
}

/// The register set `name` says (`intel`, `amd`; `None`: this CPU's,
/// Intel on a CPU that is neither), as `pmx encode --arch` takes it.
///
/// ```
/// use pmx::registers::{arch_named, encode};
/// use pmx_model::encoding::{Arch, EncodeOptions};
/// let arch = arch_named(Some("intel"))?;
/// let e = encode("event=0x2e,umask=0x41", EncodeOptions { arch, sampling: false })?;
/// assert_eq!((e.register, e.attr.config), (0x43_412e, 0x412e));
/// assert!(arch_named(Some("arm")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn arch_named(name: Option<&str>) -> Result<Arch, String> {
    match name {
        None => Ok(host_arch().unwrap_or(Arch::Intel)),
        Some(n) => {
            Arch::from_name(n).ok_or_else(|| format!("unknown register set '{n}' (intel or amd)"))
        }
    }
}

/// The register layout `name` says: a vendor (`intel`: the event select,
/// `amd`: `PERF_CTL`; `None`: this CPU's) or a layout of `pmx decode
/// --register` (`evtsel`, `fixed-ctrl`, `global-ctrl`, `global-status`,
/// `uncore-evtsel`, `perf-ctl`).
///
/// ```
/// use pmx::registers::{decode, register_named};
/// let d = decode(register_named(Some("intel"))?, 0x53_412e);
/// assert_eq!(d.field("EventSelect"), Some(0x2e));
/// assert_eq!(d.field("umask"), Some(0x41));
/// assert_eq!(d.field("nope"), None);
/// # Ok::<(), String>(())
/// ```
pub fn register_named(name: Option<&str>) -> Result<RegisterKind, String> {
    if let Some(k) = name.and_then(RegisterKind::from_cli_name) {
        return Ok(k);
    }
    let arch = arch_named(name).map_err(|_| {
        let names: Vec<&str> = RegisterKind::ALL.iter().map(|k| k.cli_name()).collect();
        format!(
            "unknown register '{}' (intel, amd, or one of: {})",
            name.unwrap_or_default(),
            names.join(", ")
        )
    })?;
    choose_register(None, None, arch).map_err(|e| e.to_string())
}

/// A register value read field by field.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The register layout.
    pub kind: RegisterKind,
    /// The value.
    pub value: u64,
    /// Every field, reserved ranges included.
    pub fields: Vec<FieldValue>,
    /// The reserved bits that are set.
    pub reserved: u64,
    /// For event selects: the bits perf takes from a raw config.
    pub config: Option<u64>,
    /// Things that would go wrong (reserved bits, fields perf drops).
    pub warnings: Vec<String>,
    /// Things worth knowing (disabled counter, what the kernel sets).
    pub notes: Vec<String>,
}

impl Decoded {
    /// The value of field `name` (case-insensitive: `EventSelect`,
    /// `UMASK`, `usr`), shifted down to bit 0; `None` when the layout has
    /// no such field.
    pub fn field(&self, name: &str) -> Option<u64> {
        self.fields
            .iter()
            .find(|f| f.field.name.eq_ignore_ascii_case(name))
            .map(|f| f.value)
    }
}

/// "USR (16), OS (17)" for the fields of `layout` set in `value & mask`.
fn names_in(layout: &Layout, value: u64, mask: u64) -> String {
    layout
        .fields_set_in(value, mask)
        .iter()
        .map(|f| format!("{} ({})", f.name, f.bits()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Decode `v` as a `kind` register.
pub fn decode(kind: RegisterKind, v: u64) -> Decoded {
    let layout = kind.layout();
    let mut d = Decoded {
        kind,
        value: v,
        fields: layout.decode(v),
        reserved: v & layout.reserved_mask(),
        config: None,
        warnings: Vec::new(),
        notes: Vec::new(),
    };
    if d.reserved != 0 {
        let ranges: Vec<String> = layout
            .fields_set_in(v, layout.reserved_mask())
            .iter()
            .map(|f| f.bits())
            .collect();
        d.warnings.push(format!(
            "reserved bits set ({:#x}, in bits {}): writing this value to {} raises #GP",
            d.reserved,
            ranges.join(", "),
            layout.name
        ));
    }
    if matches!(
        kind,
        RegisterKind::IntelEvtSel | RegisterKind::AmdPerfCtl | RegisterKind::IntelUncoreEvtSel
    ) {
        event_select_notes(&mut d, layout);
    }
    d
}

/// What perf and the counter would make of an event-select value.
fn event_select_notes(d: &mut Decoded, layout: &Layout) {
    let (kind, v) = (d.kind, d.value);
    d.config = Some(v & layout.perf_passed_mask());
    let kernel = v & layout.mask_where(|f| f.perf == PerfUse::Kernel);
    let ignored =
        v & layout.mask_where(|f| f.perf == PerfUse::Ignored && f.kind != FieldKind::Reserved);
    if kernel != 0 {
        d.notes.push(format!(
            "as a perf raw config, {} would be ignored: the kernel sets them (exclude_user/exclude_kernel, enabling, sampling{})",
            names_in(layout, v, kernel),
            if kind == RegisterKind::AmdPerfCtl { ", exclude_host/exclude_guest" } else { "" }
        ));
    }
    if ignored != 0 {
        d.warnings.push(format!(
            "as a perf raw config, {} would be silently dropped: perf cannot set them",
            names_in(layout, v, ignored)
        ));
    }
    if d.reserved != 0 {
        d.warnings
            .push("as a perf raw config, the reserved bits would be dropped".to_string());
    }
    if kind != RegisterKind::IntelUncoreEvtSel {
        let en = layout.get(v, "EN").unwrap_or(0);
        let usr = layout.get(v, "USR").unwrap_or(0);
        let os = layout.get(v, "OS").unwrap_or(0);
        if en == 0 {
            d.notes
                .push("as a register value, EN is clear: the counter is disabled".to_string());
        } else if usr == 0 && os == 0 {
            d.notes.push(
                "as a register value, neither USR nor OS is set: the counter counts nothing"
                    .to_string(),
            );
        }
    }
    if kind == RegisterKind::AmdPerfCtl {
        let ev = pmx_model::register::amd_event_select(v);
        d.notes.push(format!(
            "12-bit event select = {ev:#x} (EventSelect[11:8] << 8 | EventSelect[7:0])"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_and_register_names() {
        assert_eq!(parse_arch("amd"), Ok(Arch::Amd));
        assert_eq!(
            parse_arch("arm").unwrap_err(),
            "unknown architecture 'arm' (intel or amd)"
        );
        assert_eq!(resolve_arch(Some(Arch::Amd)), (Arch::Amd, "from --arch"));
        let (_, why) = resolve_arch(None);
        assert_ne!(why, "from --arch");
        assert_eq!(parse_register("perf-ctl"), Ok(RegisterKind::AmdPerfCtl));
        let e = parse_register("evsel").unwrap_err();
        assert!(
            e.starts_with("unknown register 'evsel' (one of: evtsel, "),
            "{e}"
        );
    }

    #[test]
    fn values_and_where_they_go_wrong() {
        assert_eq!(parse_value("0x41_2e"), Ok(0x412e));
        assert_eq!(parse_value(" 42"), Ok(42));
        assert_eq!(
            parse_value("12a").unwrap_err().0,
            "'a' is not a decimal digit (write hex as 0x…) at column 3\n  12a\n    ^"
        );
        assert_eq!(
            parse_value("0x").unwrap_err().0,
            "missing digits at column 3\n  0x\n    ^"
        );
        assert_eq!(parse_value("").unwrap_err().0, "empty value");
        assert!(parse_value("0x1_0000_0000_0000_0000")
            .unwrap_err()
            .0
            .starts_with("value does not fit in 64 bits"));
    }

    #[test]
    fn the_register_follows_the_vendor() {
        assert_eq!(
            choose_register(None, None, Arch::Amd).unwrap(),
            RegisterKind::AmdPerfCtl
        );
        assert_eq!(
            choose_register(Some(RegisterKind::IntelFixedCtrCtrl), None, Arch::Amd).unwrap(),
            RegisterKind::IntelFixedCtrCtrl
        );
        let e = choose_register(
            Some(RegisterKind::AmdPerfCtl),
            Some(Arch::Intel),
            Arch::Intel,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--register perf-ctl is an Amd register, but --arch says Intel"
        );
    }

    #[test]
    fn an_event_select_with_usr_os_en() {
        // LONGEST_LAT_CACHE.MISS, USR, OS, INT, EN.
        let d = decode(RegisterKind::IntelEvtSel, 0x53_412e);
        assert_eq!(d.reserved, 0);
        assert_eq!(d.config, Some(0x412e));
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
        assert!(d.notes[0].contains("USR (16), OS (17)"), "{}", d.notes[0]);
        let event = d
            .fields
            .iter()
            .find(|f| f.field.name == "EventSelect")
            .unwrap();
        assert_eq!(event.value, 0x2e);
        let disabled = decode(RegisterKind::IntelEvtSel, 0x412e);
        assert!(disabled.notes.iter().any(|n| n.contains("EN is clear")));
        let global = decode(RegisterKind::IntelGlobalCtrl, 0xf);
        assert_eq!(global.config, None);
    }
}
