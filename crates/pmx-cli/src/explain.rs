//! `pmx explain`: how an event resolves, and everything pmx knows of it.

use crate::db::DbArgs;
use crate::exit::UsageError;
use crate::fields;
use pmx_events::{Counters, Database, Precise, Resolved, SourceKind};
use pmx_model::spec::parse_spec;
use serde_json::json;
use std::io::Write;

/// Arguments of `pmx explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// One JSON object per event, one per line.
    #[arg(long)]
    pub json: bool,
    /// Events: names (LONGEST_LAT_CACHE.MISS:u), kernel names (cycles),
    /// pmu/alias/, or encodings (cpu/event=0x2e,umask=0x41/).
    #[arg(required = true, value_name = "EVENT")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: &ExplainArgs) -> anyhow::Result<i32> {
    let db = args.db.load()?;
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for (i, text) in args.events.iter().enumerate() {
        match parse_spec(text).and_then(|s| db.resolve(&s)) {
            Ok(r) => {
                if args.json {
                    writeln!(out, "{}", to_json(&db, &r))?;
                } else {
                    if i > 0 {
                        writeln!(out)?;
                    }
                    write!(out, "{}", to_text(&db, &r))?;
                }
            }
            Err(e) => {
                failed += 1;
                out.flush()?;
                eprintln!("pmx explain: {e}");
            }
        }
    }
    if failed > 0 {
        return Err(UsageError(format!(
            "{failed} of {} events could not be resolved",
            args.events.len()
        ))
        .into());
    }
    Ok(crate::exit::OK)
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

/// For a kernel generic event, what sysfs says the core PMU maps it to.
fn sysfs_mapping(db: &Database, r: &Resolved) -> Option<String> {
    let def = r.def.as_ref()?;
    if def.source != SourceKind::Kernel {
        return None;
    }
    let sys = db.sysfs()?;
    ["cpu", "cpu_core", "cpu_atom"].iter().find_map(|pmu| {
        let p = sys.pmu(pmu)?;
        let alias = p.event(&def.name)?;
        Some(format!(
            "this machine's kernel says {pmu}/{}/ = {}",
            def.name, alias.value
        ))
    })
}

fn to_text(db: &Database, r: &Resolved) -> String {
    let a = &r.attr;
    let mut s = format!("{}\n", r.spec);
    let origin = r
        .def
        .as_ref()
        .map(|d| d.origin.as_str())
        .unwrap_or("the spec itself");
    s.push_str(&format!(
        "  source       {} ({origin})\n",
        r.source.cli_name()
    ));
    if let Some(d) = &r.def {
        s.push_str(&format!("  event        {} on PMU {}\n", d.name, d.pmu));
    }
    s.push_str(&format!("  cpu          {}\n", db.target.cpu));
    s.push_str(&format!(
        "  perf attr    type={} config={:#x} config1={:#x} config2={:#x}\n",
        type_text(a.type_, &a.pmu),
        a.config,
        a.config1,
        a.config2
    ));
    s.push_str(&format!(
        "               exclude_user={} exclude_kernel={} exclude_hv={} exclude_guest={} exclude_host={} precise_ip={}\n",
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv),
        u8::from(a.exclude_guest),
        u8::from(a.exclude_host),
        a.precise_ip
    ));
    if let Some(enc) = &r.register {
        s.push_str(&format!(
            "  register     {} = {:#x}\n",
            enc.register_kind.layout().name,
            enc.register
        ));
        s.push_str(&fields::table(&enc.fields, "    "));
    } else if r
        .def
        .as_ref()
        .is_some_and(|d| d.source == SourceKind::Kernel && d.perf_type != Some(1))
    {
        s.push_str("  register     chosen by the kernel (generic event)\n");
    }
    if let Some(d) = &r.def {
        s.push_str(&format!("  counters     {}\n", d.counters.describe()));
        s.push_str(&format!("  precise      {}\n", precise_text(d.precise)));
        if d.deprecated {
            s.push_str("  deprecated   yes\n");
        }
        if let Some(sav) = d.sample_after {
            s.push_str(&format!("  sample-after {sav}\n"));
        }
        if !d.description.is_empty() {
            s.push_str(&format!("  description  {}\n", d.description.trim()));
        }
        for n in &d.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
    }
    if let Some(m) = sysfs_mapping(db, r) {
        s.push_str(&format!("  note: {m}\n"));
    }
    if let Some(enc) = &r.register {
        for n in &enc.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
    }
    s
}

fn to_json(db: &Database, r: &Resolved) -> serde_json::Value {
    let d = r.def.as_ref();
    json!({
        "spec": r.spec,
        "cpu": db.target.cpu.to_string(),
        "source": r.source,
        "origin": d.map(|d| d.origin.clone()),
        "name": d.map(|d| d.name.clone()),
        "pmu": r.attr.pmu,
        "type": r.attr.type_,
        "config": fields::hex(r.attr.config),
        "config1": fields::hex(r.attr.config1),
        "config2": fields::hex(r.attr.config2),
        "attr": r.attr,
        "register": r.register.as_ref().map(|e| fields::hex(e.register)),
        "register_name": r.register.as_ref().map(|e| e.register_kind.layout().name),
        "fields": r.register.as_ref().map(|e| fields::json(&e.fields)),
        "counters": d.map(|d| d.counters.clone()).unwrap_or(Counters::Unknown),
        "counters_text": d.map(|d| d.counters.describe()),
        "precise": d.map(|d| d.precise),
        "deprecated": d.map(|d| d.deprecated),
        "description": d.map(|d| d.description.clone()),
        "notes": d.map(|d| d.notes.clone()).unwrap_or_default(),
        "kernel_mapping": sysfs_mapping(db, r),
        "register_notes": r.register.as_ref().map(|e| e.notes.clone()).unwrap_or_default(),
    })
}
