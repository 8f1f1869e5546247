//! Renderers of `pmx msr`'s answers ([`pmx::msr`]): the lines and JSON
//! objects of `read` (with `--decode`, the field tables of
//! [`crate::registers`]), the lines of `write`, and the plan of `plan` as
//! text or JSON.

use crate::registers::{field_json, field_table};
use pmx::msr::{
    arch_name, domain_label, extract, DomainRead, DomainWrite, PlanReport, Reading, Writing,
};
use pmx_model::register::{FieldKind, FieldValue};
use pmx_model::topology::format_cpu_list;
use serde_json::json;
use std::fmt::Write as _;

/// One domain's read as `pmx msr read` prints it: a JSON object on one
/// line, or the text line followed, with `decode`, by the field table.
pub fn read_domain(r: &Reading, d: &DomainRead, decode: bool, as_json: bool) -> String {
    if as_json {
        let fields = d.fields.as_deref().filter(|_| decode);
        return format!("{}\n", read_json(r, d, fields.map(field_json)));
    }
    let mut s = read_line(r, d);
    s.push('\n');
    if decode {
        match &d.fields {
            Some(fields) => s.push_str(&field_table(fields, "    ")),
            None => {
                let _ = writeln!(
                    s,
                    "    (pmx has no field layout for {})",
                    r.register.label()
                );
            }
        }
    }
    s
}

/// The text line of one domain's read: `cpu 0  IA32_PMC0 = 0x…`, the
/// field when one was asked for, joules for an energy register.
pub fn read_line(r: &Reading, d: &DomainRead) -> String {
    let shown = match r.field {
        Some(f) => format!("{:#x} (bits {}:{})", extract(d.value, f), f.0, f.1),
        None => format!("{:#018x}", d.value),
    };
    let mut line = format!(
        "{:<width$}  {} = {shown}",
        domain_label(&d.domain),
        r.register.label(),
        width = r.label_width
    );
    if let Some(j) = d.joules {
        line.push_str(&format!("  ({j:.6} J)"));
    }
    line
}

/// The JSON object of one domain's read (`fields` is the caller's, with
/// `--decode`).
pub fn read_json(
    r: &Reading,
    d: &DomainRead,
    fields: Option<serde_json::Value>,
) -> serde_json::Value {
    let value = d.value;
    let mut obj = json!({
        "domain": d.domain.id,
        "cpu": d.domain.cpu,
        "cpus": d.domain.cpus,
        "register": r.register.msr.map(|m| m.name()),
        "address": format!("{:#x}", r.register.address),
        "scope": r.register.scope().name(),
        "value": value,
        "hex": format!("{value:#x}"),
    });
    if let Some(f) = r.field {
        obj["field"] = json!({"bits": format!("{}:{}", f.0, f.1), "value": extract(value, f)});
    }
    if let Some(fields) = fields {
        obj["fields"] = fields;
    }
    if let Some(j) = d.joules {
        obj["joules"] = json!(j);
    }
    obj
}

/// The line of one domain's write: `cpu 0  IA32_PMC0: 0x0 → 0x5`.
pub fn write_line(w: &Writing, d: &DomainWrite) -> String {
    let old = d.old.map_or_else(|| "?".to_string(), |v| format!("{v:#x}"));
    format!(
        "{:<width$}  {}: {old} → {:#x}",
        domain_label(&d.domain),
        w.register.label(),
        w.value,
        width = w.label_width
    )
}

/// The plan as JSON (pretty, with a final newline).
pub fn plan_json(r: &PlanReport) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(&json!({
        "cpu": r.cpu,
        "plan": r.plan,
        "old_values_unknown": r.old_values_unknown,
        "encoded_notes": r.events.iter().map(|e| &e.encoded.notes).collect::<Vec<_>>(),
    }))?;
    text.push('\n');
    Ok(text)
}

/// The plan as text: the CPU and counters, then each event's counter and
/// control, then per CPU the numbered writes with old and new values.
pub fn plan_text(r: &PlanReport) -> String {
    let mut s = String::new();
    plan_header(&mut s, r);
    plan_events(&mut s, r);
    plan_writes(&mut s, r);
    s
}

fn plan_header(s: &mut String, r: &PlanReport) {
    let p = &r.plan;
    let arch = arch_name(p.pmu.arch);
    let _ = writeln!(
        s,
        "plan for {} ({arch}): {} event{} on cpu {}",
        r.cpu,
        p.events.len(),
        if p.events.len() == 1 { "" } else { "s" },
        format_cpu_list(&p.cpus)
    );
    let mut counters = format!(
        "{} general-purpose ({} bits)",
        p.pmu.general, p.pmu.widths.general
    );
    if p.pmu.fixed > 0 {
        counters.push_str(&format!(
            ", {} fixed ({} bits)",
            p.pmu.fixed, p.pmu.widths.fixed
        ));
    }
    if p.pmu.global_control {
        counters.push_str(", global control");
    }
    let _ = writeln!(s, "counters: {counters}; {}", p.pmu.source);
    let _ = writeln!(
        s,
        "nothing is written: this is what `pmx stat --backend msr` would do"
    );
    if let Some(why) = &r.old_values_unknown {
        let _ = writeln!(s, "old values unknown: {why}");
    }
}

fn plan_events(s: &mut String, r: &PlanReport) {
    let p = &r.plan;
    let _ = writeln!(s, "\nevents");
    let name_w = p.events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for (i, e) in p.events.iter().enumerate() {
        let how = if e.control_name == "IA32_FIXED_CTR_CTRL" {
            format!(
                "fixed-counter field {:#x} in {}",
                e.control_value, e.control_name
            )
        } else {
            format!("{} = {:#x}", e.control_name, e.control_value)
        };
        let _ = writeln!(
            s,
            "  {:<name_w$}  {} ({:#x}), {} scope, {how}",
            e.name,
            e.counter_name,
            e.counter_address,
            e.scope.name()
        );
        for n in e.notes.iter().chain(r.events[i].encoded.notes.iter()) {
            let _ = writeln!(s, "  {:<name_w$}  note: {n}", "");
        }
    }
}

fn plan_writes(s: &mut String, r: &PlanReport) {
    let p = &r.plan;
    let name_w = p.writes.iter().map(|w| w.name.len()).max().unwrap_or(8);
    for &cpu in &p.cpus_touched() {
        let _ = writeln!(s, "\ncpu {cpu}");
        let _ = writeln!(
            s,
            "  {:>3}  {:<10}  {:<name_w$}  {:>18}  {:>18}  step",
            "#", "address", "register", "old", "new"
        );
        for (i, w) in p.writes.iter().enumerate().filter(|(_, w)| w.cpu == cpu) {
            let old = w.old.map_or_else(|| "?".to_string(), |v| format!("{v:#x}"));
            let _ = writeln!(
                s,
                "  {:>3}  {:<10}  {:<name_w$}  {:>18}  {:>18}  {}",
                i + 1,
                format!("{:#x}", w.address),
                w.name,
                old,
                format!("{:#x}", w.new),
                w.step.describe()
            );
            let fields = compact_fields(&w.fields);
            if !fields.is_empty() && w.new != 0 {
                let _ = writeln!(s, "  {:>3}  {:<10}  {fields}", "", "");
            }
        }
        plan_restore(s, p, cpu, name_w);
    }
}

/// The writes that put `cpu`'s registers back when the session ends
/// (normally, on a signal or a panic), in the order the session makes them.
fn plan_restore(s: &mut String, p: &pmx::msr::Plan, cpu: u32, name_w: usize) {
    let _ = writeln!(s, "  then, when counting ends, restored in this order:");
    for (i, r) in p
        .restore_order()
        .iter()
        .filter(|r| r.cpu == cpu)
        .enumerate()
    {
        let old = p
            .writes
            .iter()
            .find(|w| w.cpu == cpu && w.address == r.address)
            .and_then(|w| w.old);
        let value = match (r.value, old) {
            (pmx::msr::RestoreValue::Zero, _) => "0x0  (stops every counter first)".to_string(),
            (pmx::msr::RestoreValue::Saved, Some(v)) => format!("{v:#x}  (its old value)"),
            (pmx::msr::RestoreValue::Saved, None) => "its old value".to_string(),
        };
        let _ = writeln!(
            s,
            "  {:>3}  {:<10}  {:<name_w$}  {value}",
            format!("r{}", i + 1),
            format!("{:#x}", r.address),
            r.name
        );
    }
}

/// `EventSelect=0x2e UMASK=0x41 USR=1 EN=1`: the non-zero fields.
fn compact_fields(fields: &[FieldValue]) -> String {
    fields
        .iter()
        .filter(|f| f.value != 0)
        .map(|f| match f.field.kind {
            FieldKind::Flag => format!("{}=1", f.field.name),
            FieldKind::Value => format!("{}={:#x}", f.field.name, f.value),
            FieldKind::Reserved => format!("RESERVED[{}]={:#x}", f.field.bits(), f.value),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
