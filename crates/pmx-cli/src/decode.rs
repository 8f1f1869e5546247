//! `pmx decode`: register values → every field, with warnings.

use crate::exit::UsageError;
use crate::fields;
use pmx_model::encoding::Arch;
use pmx_model::register::RegisterKind;
use serde_json::json;
use std::io::Write;

/// Arguments of `pmx decode`.
#[derive(Debug, clap::Args)]
pub struct DecodeArgs {
    /// Vendor: intel or amd (default: this CPU's vendor). Picks the default
    /// register: evtsel on Intel, perf-ctl on AMD.
    #[arg(long, value_parser = crate::parse_arch)]
    pub arch: Option<Arch>,
    /// Register layout: evtsel, fixed-ctrl, global-ctrl, global-status,
    /// uncore-evtsel, perf-ctl.
    #[arg(long, value_parser = parse_register)]
    pub register: Option<RegisterKind>,
    /// One JSON object per value, one per line.
    #[arg(long)]
    pub json: bool,
    /// Values in hex (0x…) or decimal; '_' separators allowed.
    #[arg(required = true, value_name = "VALUE")]
    pub values: Vec<String>,
}

fn parse_register(s: &str) -> Result<RegisterKind, String> {
    RegisterKind::from_cli_name(s).ok_or_else(|| {
        let names: Vec<&str> = RegisterKind::ALL.iter().map(|k| k.cli_name()).collect();
        format!("unknown register '{s}' (one of: {})", names.join(", "))
    })
}

/// Parse a value, pointing at the first bad character.
pub fn parse_value(text: &str) -> Result<u64, String> {
    let caret = |pos: usize, msg: &str| {
        format!(
            "{msg} at column {}\n  {text}\n  {}^",
            pos + 1,
            " ".repeat(pos)
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err("empty value".to_string());
    }
    let lead = text.len() - text.trim_start().len();
    let (digits, radix, off) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16, 2),
        None => (t, 10, 0),
    };
    if digits.is_empty() {
        return Err(caret(lead + off, "missing digits"));
    }
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

pub fn run(args: &DecodeArgs) -> anyhow::Result<i32> {
    let (arch, arch_src) = crate::resolve_arch(args.arch);
    let kind = match args.register {
        Some(k) => {
            let vendor_of_k = match k {
                RegisterKind::AmdPerfCtl => Arch::Amd,
                _ => Arch::Intel,
            };
            if args.arch.is_some_and(|a| a != vendor_of_k) {
                return Err(UsageError(format!(
                    "--register {} is an {:?} register, but --arch says {:?}",
                    k.cli_name(),
                    vendor_of_k,
                    arch
                ))
                .into());
            }
            k
        }
        None => match arch {
            Arch::Intel => RegisterKind::IntelEvtSel,
            Arch::Amd => RegisterKind::AmdPerfCtl,
        },
    };
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for (i, text) in args.values.iter().enumerate() {
        match parse_value(text) {
            Ok(v) => {
                let d = decode(kind, v);
                if args.json {
                    writeln!(out, "{}", d.json)?;
                } else {
                    if i > 0 {
                        writeln!(out)?;
                    }
                    let src = if args.register.is_some() {
                        "chosen with --register"
                    } else {
                        arch_src
                    };
                    write!(out, "{}", d.text(src))?;
                }
            }
            Err(msg) => {
                failed += 1;
                out.flush()?;
                eprintln!("pmx decode: {msg}");
            }
        }
    }
    if failed > 0 {
        return Err(UsageError(format!(
            "{failed} of {} values could not be read",
            args.values.len()
        ))
        .into());
    }
    Ok(crate::exit::OK)
}

struct Decoded {
    kind: RegisterKind,
    value: u64,
    config: Option<u64>,
    warnings: Vec<String>,
    notes: Vec<String>,
    json: serde_json::Value,
}

fn decode(kind: RegisterKind, v: u64) -> Decoded {
    let layout = kind.layout();
    let fields_v = layout.decode(v);
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let reserved = v & layout.reserved_mask();
    if reserved != 0 {
        let ranges: Vec<String> = layout
            .fields_set_in(v, layout.reserved_mask())
            .iter()
            .map(|f| f.bits())
            .collect();
        warnings.push(format!(
            "reserved bits set ({reserved:#x}, in bits {}): writing this value to {} raises #GP",
            ranges.join(", "),
            layout.name
        ));
    }
    let is_event_select = matches!(
        kind,
        RegisterKind::IntelEvtSel | RegisterKind::AmdPerfCtl | RegisterKind::IntelUncoreEvtSel
    );
    let config = if is_event_select {
        let config = v & layout.perf_passed_mask();
        let (kernel, ignored) = fields::perf_ignored(layout, v);
        if kernel != 0 {
            notes.push(format!(
                "as a perf raw config, {} would be ignored: the kernel sets them (exclude_user/exclude_kernel, enabling, sampling{})",
                fields::names_in(layout, v, kernel),
                if kind == RegisterKind::AmdPerfCtl { ", exclude_host/exclude_guest" } else { "" }
            ));
        }
        if ignored != 0 {
            warnings.push(format!(
                "as a perf raw config, {} would be silently dropped: perf cannot set them",
                fields::names_in(layout, v, ignored)
            ));
        }
        if reserved != 0 {
            warnings.push("as a perf raw config, the reserved bits would be dropped".to_string());
        }
        if kind != RegisterKind::IntelUncoreEvtSel {
            let en = layout.get(v, "EN").unwrap_or(0);
            let usr = layout.get(v, "USR").unwrap_or(0);
            let os = layout.get(v, "OS").unwrap_or(0);
            if en == 0 {
                notes.push("as a register value, EN is clear: the counter is disabled".to_string());
            } else if usr == 0 && os == 0 {
                notes.push(
                    "as a register value, neither USR nor OS is set: the counter counts nothing"
                        .to_string(),
                );
            }
        }
        if kind == RegisterKind::AmdPerfCtl {
            let ev = pmx_model::register::amd_event_select(v);
            notes.push(format!(
                "12-bit event select = {ev:#x} (EventSelect[11:8] << 8 | EventSelect[7:0])"
            ));
        }
        Some(config)
    } else {
        None
    };
    let json = json!({
        "value": v,
        "register": fields::hex(v),
        "register_name": layout.name,
        "register_kind": kind,
        "location": layout.location,
        "config": config.map(fields::hex),
        "fields": fields::json(&fields_v),
        "reserved_set": fields::hex(reserved),
        "warnings": warnings,
        "notes": notes,
    });
    Decoded {
        kind,
        value: v,
        config,
        warnings,
        notes,
        json,
    }
}

impl Decoded {
    fn text(&self, src: &str) -> String {
        let layout = self.kind.layout();
        let mut s = format!(
            "{:#x} as {} ({}; {src})\n",
            self.value, layout.name, layout.location
        );
        let fields_v = layout.decode(self.value);
        s.push_str(&fields::table(&fields_v, "  "));
        if let Some(c) = self.config {
            s.push_str(&format!(
                "  perf config: {c:#x} (the bits perf takes from a raw config)\n"
            ));
        }
        for w in &self.warnings {
            s.push_str(&format!("  warning: {w}\n"));
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s
    }
}
