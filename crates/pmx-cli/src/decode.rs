//! `pmx decode`: register values → every field, with warnings
//! ([`pmx::registers::decode`], rendered by [`pmx_output::registers`]).

use crate::exit::UsageError;
use pmx::registers::{choose_register, decode, parse_value};
use pmx_model::encoding::Arch;
use pmx_model::register::RegisterKind;
use pmx_output::registers::{decoded_json, decoded_text};
use std::io::Write;

/// Arguments of `pmx decode`.
#[derive(Debug, clap::Args)]
pub struct DecodeArgs {
    /// Vendor: intel or amd (default: this CPU's vendor). Picks the default
    /// register: evtsel on Intel, perf-ctl on AMD.
    #[arg(long, value_parser = pmx::registers::parse_arch)]
    pub arch: Option<Arch>,
    /// Register layout: evtsel, fixed-ctrl, global-ctrl, global-status,
    /// uncore-evtsel, perf-ctl.
    #[arg(long, value_parser = pmx::registers::parse_register)]
    pub register: Option<RegisterKind>,
    /// One JSON object per value, one per line.
    #[arg(long)]
    pub json: bool,
    /// Values in hex (0x…) or decimal; '_' separators allowed.
    #[arg(required = true, value_name = "VALUE")]
    pub values: Vec<String>,
}

pub fn run(args: &DecodeArgs) -> anyhow::Result<i32> {
    let (arch, arch_src) = pmx::registers::resolve_arch(args.arch);
    let kind =
        choose_register(args.register, args.arch, arch).map_err(|e| UsageError(e.to_string()))?;
    let src = if args.register.is_some() {
        "chosen with --register"
    } else {
        arch_src
    };
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for (i, text) in args.values.iter().enumerate() {
        match parse_value(text) {
            Ok(v) if args.json => writeln!(out, "{}", decoded_json(&decode(kind, v)))?,
            Ok(v) => {
                if i > 0 {
                    writeln!(out)?;
                }
                write!(out, "{}", decoded_text(&decode(kind, v), src))?;
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
