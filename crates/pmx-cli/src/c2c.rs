//! `pmx c2c` (`perf c2c` under perf's name): `report --stats`, the memory
//! samples counted as perf c2c counts them (`pmx_precise::c2c`).

use crate::exit::UsageError;
use pmx_precise::{c2c, mem::MemError};

/// Arguments of `pmx c2c`.
#[derive(Debug, clap::Args)]
pub struct C2cArgs {
    #[command(subcommand)]
    pub command: C2cCommand,
}

/// `pmx c2c`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum C2cCommand {
    /// Loads and stores by level, HITMs, shared cache lines of a perf.data file.
    Report {
        /// Input file.
        #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
        input: std::path::PathBuf,
        /// The counts (perf's --stats; the cache-line table is not built yet).
        #[arg(long)]
        stats: bool,
        /// Text on standard output (accepted as perf's).
        #[arg(long)]
        stdio: bool,
    },
}

/// Run `pmx c2c`.
pub fn run(a: &C2cArgs) -> anyhow::Result<i32> {
    let C2cCommand::Report { input, stats, .. } = &a.command;
    if !stats {
        Err(UsageError("c2c report: pmx prints the counts (--stats); the shared cache-line table is not built yet".into()))?;
    }
    let (input, symbols) = (input.clone(), crate::symbols::options(Default::default()));
    let r = match c2c::c2c_report(&c2c::C2cOptions { input, symbols }) {
        Err(e @ MemError::NoMemData) => Err(UsageError(e.to_string()))?,
        r => r?,
    };
    c2c::print_stats(&mut std::io::stdout().lock(), &r)?;
    Ok(crate::exit::OK)
}
