//! Field tables: the text and JSON shapes shared by `encode` and `decode`.

use pmx_model::register::{FieldKind, FieldValue, Layout, PerfUse};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Hex string as the JSON keys use it.
pub fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// A text table of fields: bits, name, value, meaning. Reserved ranges are
/// shown only when something is set in them.
pub fn table(fields: &[FieldValue], indent: &str) -> String {
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
pub fn json(fields: &[FieldValue]) -> Value {
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

/// "USR (16), OS (17)" for the fields of `layout` set in `value & mask`.
pub fn names_in(layout: &Layout, value: u64, mask: u64) -> String {
    layout
        .fields_set_in(value, mask)
        .iter()
        .map(|f| format!("{} ({})", f.name, f.bits()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fields perf would not take from a raw config, split by why.
pub fn perf_ignored(layout: &Layout, value: u64) -> (u64, u64) {
    let kernel = value & layout.mask_where(|f| f.perf == PerfUse::Kernel);
    let ignored =
        value & layout.mask_where(|f| f.perf == PerfUse::Ignored && f.kind != FieldKind::Reserved);
    (kernel, ignored)
}
