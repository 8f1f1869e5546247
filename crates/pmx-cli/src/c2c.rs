//! `pmx c2c` (`perf c2c` under perf's name): `record` (`pmx record -W -d
//! --phys-data` with the memory events, `pmx_args::mem_words`) and
//! `report`: the counts (`--stats`) and the cache-line tables
//! (`pmx_precise::c2c`).

use crate::exit::UsageError;
use pmx_precise::c2c::{self, table::TableOptions, Display};
use pmx_precise::mem::MemError;
use std::ffi::OsString;

/// Arguments of `pmx c2c`.
#[derive(Debug, clap::Args)]
pub struct C2cArgs {
    #[command(subcommand)]
    pub command: C2cCommand,
}

/// `pmx c2c`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum C2cCommand {
    /// Sample loads and stores with data addresses (perf c2c record's events).
    Record {
        /// The load-latency threshold in cycles (Intel's ldlat).
        #[arg(long, value_name = "CYCLES", default_value_t = pmx_args::mem_words::events::DEFAULT_LDLAT)]
        ldlat: u32,
        /// pmx record's options and the command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Loads and stores by level, HITMs, shared cache lines of a perf.data file.
    Report {
        /// Input file.
        #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
        input: std::path::PathBuf,
        /// Only the counts, not the cache-line tables.
        #[arg(long)]
        stats: bool,
        /// Text on standard output (pmx's only interface).
        #[arg(long)]
        stdio: bool,
        /// What the lines are sorted on: tot, lcl, rmt or peer.
        #[arg(short, long, value_name = "DISPLAY", default_value = "tot")]
        display: String,
        /// A line's entries after the offset: pid, tid, iaddr, dso.
        #[arg(short, long, value_name = "KEYS", default_value = "iaddr")]
        coalesce: String,
        /// Symbols not cut at 30 characters.
        #[arg(long)]
        full_symbols: bool,
        /// No source line column.
        #[arg(long)]
        no_source: bool,
        /// Every line, also those without the display's count.
        #[arg(long)]
        show_all: bool,
    },
}

/// Run `pmx c2c`.
pub fn run(a: &C2cArgs) -> anyhow::Result<i32> {
    let (input, stats, display, coalesce, full_symbols, no_source, show_all) = match &a.command {
        C2cCommand::Record { ldlat, args } => {
            let w = pmx_args::mem_words::c2c_record_words(*ldlat, args)
                .map_err(|e| UsageError(format!("c2c record: {e}")))?;
            return crate::record::run(&crate::mem::parse(clap::Command::new("record"), w)?);
        }
        C2cCommand::Report {
            input,
            stats,
            display,
            coalesce,
            full_symbols,
            no_source,
            show_all,
            ..
        } => (
            input,
            *stats,
            display,
            coalesce,
            *full_symbols,
            *no_source,
            *show_all,
        ),
    };
    let bad = |w: &str| {
        UsageError(format!(
            "c2c report: unknown display type '{w}' (tot, lcl, rmt or peer)"
        ))
    };
    let display = Display::parse(display).ok_or_else(|| bad(display))?;
    let coalesce = c2c::parse_coalesce(coalesce).map_err(|w| {
        UsageError(format!(
            "c2c report: unrecognized -c key '{w}' (pid, tid, iaddr, dso)"
        ))
    })?;
    let symbols = crate::symbols::options(Default::default());
    let opts = c2c::C2cOptions {
        input: input.clone(),
        symbols,
        display,
        coalesce: coalesce.clone(),
        no_source,
    };
    let r = match c2c::c2c_report(&opts) {
        Err(e @ MemError::NoMemData) => Err(UsageError(e.to_string()))?,
        r => r?,
    };
    let out = &mut std::io::stdout().lock();
    c2c::print_stats(out, &r, display)?;
    if !stats {
        let t = TableOptions {
            display,
            coalesce,
            full_symbols,
            no_source,
            show_all,
        };
        c2c::table::print_tables(out, &r, &t)?;
    }
    Ok(crate::exit::OK)
}
