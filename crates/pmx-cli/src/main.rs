//! # pmx — the command-line tool
//!
//! This crate only turns flags into options and options into calls into the
//! library crates, then renders what they return. Exit codes are decided in
//! one place, [`exit`]:
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success |
//! | 1    | the operation failed (I/O, the kernel refused, …) |
//! | 2    | bad input: a malformed event spec, value or flag |
//!
//! `pmx stat -- cmd` (once it exists) exits with the command's own status.

mod decode;
mod encode;
mod exit;
mod fields;
mod info;

use clap::{Parser, Subcommand};
use pmx_model::encoding::Arch;

/// pmx: CPU hardware performance counters, exactly.
#[derive(Debug, Parser)]
#[command(name = "pmx", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Encode event specs into control-register values and perf attrs.
    Encode(encode::EncodeArgs),
    /// Decode register values into their fields.
    Decode(decode::DecodeArgs),
    /// Describe this machine: CPU, PMU, kernel PMUs, topology, access.
    Info(info::InfoArgs),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match &cli.command {
        Command::Encode(args) => encode::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Info(args) => info::run(args),
    };
    std::process::exit(exit::from_result(result));
}

/// clap value parser for `--arch`.
pub(crate) fn parse_arch(s: &str) -> Result<Arch, String> {
    Arch::from_name(s).ok_or_else(|| format!("unknown architecture '{s}' (intel or amd)"))
}

/// The layout to use: `--arch` when given, else this CPU's vendor, else
/// Intel. Returns where the choice came from, for the output.
pub(crate) fn resolve_arch(flag: Option<Arch>) -> (Arch, &'static str) {
    if let Some(a) = flag {
        return (a, "from --arch");
    }
    match host_arch() {
        Some(a) => (a, "this CPU's vendor"),
        None => (Arch::Intel, "default; this CPU is neither Intel nor AMD"),
    }
}

fn host_arch() -> Option<Arch> {
    host_vendor().and_then(|v| Arch::from_name(&v))
}

/// This CPU's vendor string (temporary: moves to pmx-sys's CPUID source).
fn host_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        let r = std::arch::x86_64::__cpuid(0);
        let mut b = Vec::with_capacity(12);
        for w in [r.ebx, r.edx, r.ecx] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        Some(String::from_utf8_lossy(&b).into_owned())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}
