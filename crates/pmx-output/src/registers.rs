//! Register values as text and JSON: the field tables `pmx encode`,
//! `pmx decode`, `pmx explain` and `pmx msr` share, an encoded spec
//! ([`encoded_text`], [`encoded_json`]) and a decoded value
//! ([`decoded_text`], [`decoded_json`]).

use pmx::registers::Decoded;
use pmx_model::encoding::Encoded;
use pmx_model::register::{FieldKind, FieldValue, Layout};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Hex string as the JSON keys use it.
pub fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// A text table of fields: bits, name, value, meaning. Reserved ranges are
/// shown only when something is set in them.
pub fn field_table(fields: &[FieldValue], indent: &str) -> String {
    let rows: Vec<&FieldValue> = fields
        .iter()
        .filter(|f| f.field.kind != FieldKind::Reserved || f.value != 0)
        .collect();
    let name_w = rows
        .iter()
        .map(|f| f.field.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{indent}{:<6} {:<name_w$} {:>10}  meaning",
        "bits", "field", "value"
    );
    for f in rows {
        let value = match f.field.kind {
            FieldKind::Flag => format!("{}", f.value),
            _ => hex(f.value),
        };
        let doc = if f.field.kind == FieldKind::Reserved {
            "RESERVED BITS SET: must be zero".to_string()
        } else {
            f.field.doc.to_string()
        };
        let _ = writeln!(
            out,
            "{indent}{:<6} {:<name_w$} {:>10}  {doc}",
            f.field.bits(),
            f.field.name,
            value
        );
    }
    out
}

/// The JSON array of fields (every field, reserved ranges included).
pub fn field_json(fields: &[FieldValue]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let name = if f.field.kind == FieldKind::Reserved {
                    Layout::reserved_label(&f.field)
                } else {
                    f.field.name.to_string()
                };
                json!({
                    "name": name,
                    "bits": f.field.bits(),
                    "lo": f.field.lo,
                    "hi": f.field.hi,
                    "kind": f.field.kind,
                    "value": f.value,
                    "hex": hex(f.value),
                    "perf": f.field.perf,
                    "doc": f.field.doc,
                })
            })
            .collect(),
    )
}

/// An encoded spec as text: the register value, the perf attr, the
/// fields and the notes. `arch_src` says where the layout came from.
pub fn encoded_text(text: &str, e: &Encoded, arch_src: &str) -> String {
    let layout = e.register_kind.layout();
    let a = &e.attr;
    let yn = |b: bool| u8::from(b);
    let ty = match a.type_ {
        Some(t) => format!("{t} (PERF_TYPE_RAW)"),
        None => format!("from /sys/bus/event_source/devices/{}/type", a.pmu),
    };
    let mut s = format!(
        "{text}\n  register   {} = {:#x}   ({:?} layout, {arch_src})\n  perf attr  pmu={} type={ty}\n             config={:#x} config1={:#x} config2={:#x}\n             exclude_user={} exclude_kernel={} exclude_hv={} exclude_guest={} exclude_host={} precise_ip={}\n",
        layout.name,
        e.register,
        e.arch,
        a.pmu,
        a.config,
        a.config1,
        a.config2,
        yn(a.exclude_user),
        yn(a.exclude_kernel),
        yn(a.exclude_hv),
        yn(a.exclude_guest),
        yn(a.exclude_host),
        a.precise_ip,
    );
    if let Some(p) = a.sample_period {
        let _ = writeln!(s, "             sample_period={p}");
    }
    if let Some(f) = a.sample_freq {
        let _ = writeln!(s, "             sample_freq={f} (freq=1)");
    }
    s.push_str(&field_table(&e.fields, "  "));
    for w in &e.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    for n in &e.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// An encoded spec as one JSON object.
pub fn encoded_json(text: &str, e: &Encoded) -> Value {
    let layout = e.register_kind.layout();
    json!({
        "spec": text,
        "arch": e.arch,
        "register_name": layout.name,
        "register_kind": e.register_kind,
        "register": hex(e.register),
        "config": hex(e.attr.config),
        "config1": hex(e.attr.config1),
        "config2": hex(e.attr.config2),
        "attr": e.attr,
        "fields": field_json(&e.fields),
        "notes": e.notes,
        "warnings": e.warnings,
    })
}

/// A decoded value as text: the register, its fields, the perf config,
/// warnings and notes. `src` says how the register was chosen.
pub fn decoded_text(d: &Decoded, src: &str) -> String {
    let layout = d.kind.layout();
    let mut s = format!(
        "{:#x} as {} ({}; {src})\n",
        d.value, layout.name, layout.location
    );
    s.push_str(&field_table(&d.fields, "  "));
    if let Some(c) = d.config {
        let _ = writeln!(
            s,
            "  perf config: {c:#x} (the bits perf takes from a raw config)"
        );
    }
    for w in &d.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    for n in &d.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// A decoded value as one JSON object.
pub fn decoded_json(d: &Decoded) -> Value {
    let layout = d.kind.layout();
    json!({
        "value": d.value,
        "register": hex(d.value),
        "register_name": layout.name,
        "register_kind": d.kind,
        "location": layout.location,
        "config": d.config.map(hex),
        "fields": field_json(&d.fields),
        "reserved_set": hex(d.reserved),
        "warnings": d.warnings,
        "notes": d.notes,
    })
}
