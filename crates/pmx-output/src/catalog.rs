//! The event catalogue as text and JSON: `pmx list`'s sections
//! ([`list_text`], [`list_json`]) and `pmx explain`'s account of one
//! resolved event ([`explanation_text`], [`explanation_json`]).

use crate::registers::{field_json, field_table, hex};
use pmx::catalog::{Counters, Explanation, Listing, Precise, SourceKind};
use pmx_model::cpu::CpuId;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The listing as text: a heading naming the CPU, then per source its
/// events by PMU, each with the first line of its description.
pub fn list_text(listing: &Listing) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "events for {}{}",
        listing.target.cpu,
        if listing.target.host {
            " (this machine)"
        } else {
            ""
        }
    );
    for section in &listing.sections {
        let events = &section.events;
        let _ = writeln!(
            out,
            "\n{} — {}",
            section.kind.cli_name(),
            section.description
        );
        let width = events
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(10)
            .min(48);
        let mut pmu = "";
        for e in events {
            if e.pmu != pmu {
                let _ = writeln!(out, "  [{}]", e.pmu);
                pmu = &e.pmu;
            }
            let desc = e.description.lines().next().unwrap_or("");
            let desc: String = desc.chars().take(100).collect();
            let dep = if e.deprecated { " (deprecated)" } else { "" };
            let terms = e
                .terms
                .as_deref()
                .map(|t| format!("{t}  "))
                .unwrap_or_default();
            let also = if e.also.is_empty() {
                String::new()
            } else {
                format!(" [same as {}]", e.also.join(", "))
            };
            let _ = writeln!(out, "    {:<width$}  {terms}{desc}{dep}{also}", e.name);
        }
    }
    out
}

/// The listing as JSON lines: one object per event.
pub fn list_json(listing: &Listing) -> String {
    let mut out = String::new();
    for e in listing.sections.iter().flat_map(|s| &s.events) {
        let line = json!({
            "name": e.name,
            "pmu": e.pmu,
            "source": e.source,
            "type": e.perf_type,
            "config": format!("{:#x}", e.config),
            "config1": format!("{:#x}", e.config1),
            "description": e.description,
            "deprecated": e.deprecated,
            "terms": e.terms,
            "also": e.also,
        });
        let _ = writeln!(out, "{line}");
    }
    out
}

fn precise_text(p: Precise) -> String {
    match p {
        Precise::No => "no precise form".to_string(),
        Precise::Pebs(n) => format!("yes: PEBS (Intel's PEBS column = {n}); use :p/:pp"),
        Precise::Ibs => "yes: through AMD IBS".to_string(),
        Precise::Unknown => "not stated by the source".to_string(),
    }
}

fn type_text(t: Option<u32>, pmu: &str) -> String {
    match t {
        Some(0) => "0 (PERF_TYPE_HARDWARE)".to_string(),
        Some(1) => "1 (PERF_TYPE_SOFTWARE)".to_string(),
        Some(2) => "2 (PERF_TYPE_TRACEPOINT)".to_string(),
        Some(3) => "3 (PERF_TYPE_HW_CACHE)".to_string(),
        Some(4) => "4 (PERF_TYPE_RAW)".to_string(),
        Some(n) => format!("{n} (PMU {pmu})"),
        None => format!("from /sys/bus/event_source/devices/{pmu}/type"),
    }
}

/// One event as text: source, perf attr, register and fields, then what
/// the definition says (counters, precise form, description, notes).
pub fn explanation_text(cpu: &CpuId, x: &Explanation) -> String {
    let r = &x.resolved;
    let a = &r.attr;
    let mut s = format!("{}\n", r.spec);
    let origin = r
        .def
        .as_ref()
        .map(|d| d.origin.as_str())
        .unwrap_or("the spec itself");
    let _ = writeln!(s, "  source       {} ({origin})", r.source.cli_name());
    if let Some(p) = &x.provenance {
        let _ = writeln!(s, "  from         {p}");
    }
    if let Some(d) = &r.def {
        let _ = writeln!(s, "  event        {} on PMU {}", d.name, d.pmu);
        if let Some(t) = &d.terms {
            let _ = writeln!(s, "  encoding     {t}");
        }
        if !d.also.is_empty() {
            let _ = writeln!(s, "  same as      {}", d.also.join(", "));
        }
    }
    let _ = writeln!(s, "  cpu          {cpu}");
    let _ = writeln!(
        s,
        "  perf attr    type={} config={:#x} config1={:#x} config2={:#x}",
        type_text(a.type_, &a.pmu),
        a.config,
        a.config1,
        a.config2
    );
    let _ = writeln!(
        s,
        "               exclude_user={} exclude_kernel={} exclude_hv={} exclude_guest={} exclude_host={} precise_ip={}",
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv),
        u8::from(a.exclude_guest),
        u8::from(a.exclude_host),
        a.precise_ip
    );
    // The rest only when the spec set them (`:D`, `:e`, `:I`, `period=`).
    let mut more: Vec<String> = Vec::new();
    for (name, on) in [
        ("pinned", a.pinned),
        ("exclusive", a.exclusive),
        ("exclude_idle", a.exclude_idle),
    ] {
        if on {
            more.push(format!("{name}=1"));
        }
    }
    if a.config3 != 0 {
        more.push(format!("config3={:#x}", a.config3));
    }
    if let Some(p) = a.sample_period {
        more.push(format!("sample_period={p}"));
    }
    if let Some(f) = a.sample_freq {
        more.push(format!("sample_freq={f} freq=1"));
    }
    if !more.is_empty() {
        let _ = writeln!(s, "               {}", more.join(" "));
    }
    if let Some(enc) = &r.register {
        let _ = writeln!(
            s,
            "  register     {} = {:#x}",
            enc.register_kind.layout().name,
            enc.register
        );
        s.push_str(&field_table(&enc.fields, "    "));
    } else if r
        .def
        .as_ref()
        .is_some_and(|d| d.source == SourceKind::Kernel && d.perf_type != Some(1))
    {
        s.push_str("  register     chosen by the kernel (generic event)\n");
    }
    definition_text(&mut s, x);
    s
}

/// What the definition says, and the notes.
fn definition_text(s: &mut String, x: &Explanation) {
    let r = &x.resolved;
    if let Some(d) = &r.def {
        let _ = writeln!(s, "  counters     {}", d.counters.describe());
        let _ = writeln!(s, "  precise      {}", precise_text(d.precise));
        if d.deprecated {
            s.push_str("  deprecated   yes\n");
        }
        if let Some(sav) = d.sample_after {
            let _ = writeln!(s, "  sample-after {sav}");
        }
        if !d.description.is_empty() {
            let _ = writeln!(s, "  description  {}", d.description.trim());
        } else if d.source == SourceKind::Builtin {
            s.push_str(
                "  description  not built in: 'pmx events fetch' (or --events-dir) brings the vendor's text\n",
            );
        }
        for n in &d.notes {
            let _ = writeln!(s, "  note: {n}");
        }
    }
    if let Some(m) = &x.kernel_mapping {
        let _ = writeln!(s, "  note: {m}");
    }
    if let Some(enc) = &r.register {
        for w in &enc.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
        for n in &enc.notes {
            let _ = writeln!(s, "  note: {n}");
        }
    }
}

/// One event as one JSON object.
pub fn explanation_json(cpu: &CpuId, x: &Explanation) -> Value {
    let r = &x.resolved;
    let d = r.def.as_ref();
    json!({
        "spec": r.spec,
        "cpu": cpu.to_string(),
        "source": r.source,
        "origin": d.map(|d| d.origin.clone()),
        "from": x.provenance,
        "name": d.map(|d| d.name.clone()),
        "pmu": r.attr.pmu,
        "type": r.attr.type_,
        "config": hex(r.attr.config),
        "config1": hex(r.attr.config1),
        "config2": hex(r.attr.config2),
        "attr": r.attr,
        "register": r.register.as_ref().map(|e| hex(e.register)),
        "register_name": r.register.as_ref().map(|e| e.register_kind.layout().name),
        "fields": r.register.as_ref().map(|e| field_json(&e.fields)),
        "counters": d.map(|d| d.counters.clone()).unwrap_or(Counters::Unknown),
        "counters_text": d.map(|d| d.counters.describe()),
        "precise": d.map(|d| d.precise),
        "deprecated": d.map(|d| d.deprecated),
        "description": d.map(|d| d.description.clone()),
        "notes": d.map(|d| d.notes.clone()).unwrap_or_default(),
        "terms": d.and_then(|d| d.terms.clone()),
        "also": d.map(|d| d.also.clone()).unwrap_or_default(),
        "kernel_mapping": x.kernel_mapping,
        "register_notes": r.register.as_ref().map(|e| e.notes.clone()).unwrap_or_default(),
        "register_warnings": r.register.as_ref().map(|e| e.warnings.clone()).unwrap_or_default(),
    })
}
