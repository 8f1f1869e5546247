//! `pmx info`: what this machine is — CPU, PMU, kernel PMUs, topology,
//! access — and a one-line verdict on what can be measured.
//!
//! The facts come from [`pmx::info::collect`]; [`pmx_output::info`]
//! renders them as sections of text, or (`--json`) the report itself.

use pmx::info::InfoOptions;
use std::io::Write as _;
use std::path::PathBuf;

/// Arguments of `pmx info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Read sys/, proc/ and dev/ under DIR instead of / (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysfs_root: Option<PathBuf>,
    /// Take CPUID from a recorded dump instead of the CPU (for tests).
    #[arg(long, value_name = "FILE", hide = true)]
    pub cpuid_file: Option<PathBuf>,
    /// Print this CPU's CPUID leaves in the recorded-dump format and exit.
    #[arg(long, hide = true)]
    pub dump_cpuid: bool,
}

/// Run `pmx info`.
pub fn run(args: &InfoArgs) -> anyhow::Result<i32> {
    let opts = InfoOptions {
        sysfs_root: args.sysfs_root.clone(),
        cpuid_file: args.cpuid_file.clone(),
    };
    let text = if args.dump_cpuid {
        pmx::info::cpuid_dump(&opts)?
    } else {
        let report = pmx::info::collect(&opts)?;
        if args.json {
            // Serialized first, so a closed pipe surfaces as the plain I/O
            // error the exit code logic recognizes.
            pmx_output::info::json(&report)?
        } else {
            pmx_output::info::text_with_tables(&report, &pmx::info::builtin_tables())
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(crate::exit::OK)
}
