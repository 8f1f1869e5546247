//! `pmx encode`: event specs → control-register value + perf attr
//! ([`pmx::registers::encode`], rendered by [`pmx_output::registers`]).

use crate::exit::UsageError;
use pmx_model::encoding::{Arch, EncodeOptions};
use pmx_output::registers::{encoded_json, encoded_text};
use std::io::Write;

/// Arguments of `pmx encode`.
#[derive(Debug, clap::Args)]
pub struct EncodeArgs {
    /// Register layout: intel or amd (default: this CPU's vendor).
    #[arg(long, value_parser = pmx::registers::parse_arch)]
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
    let (arch, arch_src) = pmx::registers::resolve_arch(args.arch);
    let opts = EncodeOptions {
        arch,
        sampling: args.sampling,
    };
    let mut out = std::io::stdout().lock();
    let mut failed = 0;
    for (i, text) in args.specs.iter().enumerate() {
        match pmx::registers::encode(text, opts) {
            Ok(enc) if args.json => writeln!(out, "{}", encoded_json(text, &enc))?,
            Ok(enc) => {
                if i > 0 {
                    writeln!(out)?;
                }
                write!(out, "{}", encoded_text(text, &enc, arch_src))?;
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
