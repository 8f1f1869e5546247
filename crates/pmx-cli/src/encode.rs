//! `pmx encode`: event specs → control-register value + perf attr.

use crate::exit::UsageError;
use crate::fields;
use pmx_model::encoding::{encode_spec, Arch, EncodeOptions, Encoded};
use pmx_model::spec::parse_spec;
use serde_json::json;
use std::io::Write;

/// Arguments of `pmx encode`.
#[derive(Debug, clap::Args)]
pub struct EncodeArgs {
    /// Register layout: intel or amd (default: this CPU's vendor).
    #[arg(long, value_parser = crate::parse_arch)]
    pub arch: Option<Arch>,
    /// Encode for sampling (sets the INT bit).
    #[arg(long)]
    pub sampling: bool,
    /// One JSON object per spec, one per line.
    #[arg(long)]
    pub json: bool,
    /// Event specs, e.g. cpu/event=0x2e,umask=0x41/u, r412e:k, event=0xc0:u.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<String>,
}

pub fn run(args: &EncodeArgs) -> anyhow::Result<i32> {
    let (arch, arch_src) = crate::resolve_arch(args.arch);
    let opts = EncodeOptions {
        arch,
        sampling: args.sampling,
    };
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for (i, text) in args.specs.iter().enumerate() {
        let result = parse_spec(text).and_then(|spec| encode_spec(&spec, opts));
        match result {
            Ok(enc) => {
                if args.json {
                    writeln!(out, "{}", to_json(text, &enc))?;
                } else {
                    if i > 0 {
                        writeln!(out)?;
                    }
                    write!(out, "{}", to_text(text, &enc, arch_src))?;
                }
            }
            Err(e) => {
                failed += 1;
                out.flush()?;
                eprintln!("pmx encode: {e}");
            }
        }
    }
    if failed > 0 {
        return Err(UsageError(format!(
            "{failed} of {} specs could not be encoded",
            args.specs.len()
        ))
        .into());
    }
    Ok(crate::exit::OK)
}

fn to_text(text: &str, e: &Encoded, arch_src: &str) -> String {
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
        s.push_str(&format!("             sample_period={p}\n"));
    }
    if let Some(f) = a.sample_freq {
        s.push_str(&format!("             sample_freq={f} (freq=1)\n"));
    }
    s.push_str(&fields::table(&e.fields, "  "));
    for n in &e.notes {
        s.push_str(&format!("  note: {n}\n"));
    }
    s
}

fn to_json(text: &str, e: &Encoded) -> serde_json::Value {
    let layout = e.register_kind.layout();
    json!({
        "spec": text,
        "arch": e.arch,
        "register_name": layout.name,
        "register_kind": e.register_kind,
        "register": fields::hex(e.register),
        "config": fields::hex(e.attr.config),
        "config1": fields::hex(e.attr.config1),
        "config2": fields::hex(e.attr.config2),
        "attr": e.attr,
        "fields": fields::json(&e.fields),
        "notes": e.notes,
    })
}
