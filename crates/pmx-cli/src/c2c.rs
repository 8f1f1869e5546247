//! `pmx c2c` (`perf c2c` under perf's name): `record` (`pmx record -W -d
//! --phys-data` with the memory events) and `report`'s counts
//! (`--stats`) and cache-line tables (`pmx_precise::c2c`); the words are
//! `pmx_args::mem_words`'.

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
    /// Sample loads and stores with data addresses ([--ldlat N] and pmx record's options).
    Record {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// HITMs, loads by level and shared cache lines of a perf.data file (-i, --stats, -d tot|lcl|rmt|peer, -c pid,tid,iaddr,dso, --full-symbols, --no-source, --show-all, --stdio).
    Report {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// Run `pmx c2c`.
pub fn run(a: &C2cArgs) -> anyhow::Result<i32> {
    use pmx_args::mem_words as w;
    let args = match &a.command {
        C2cCommand::Record { args } => {
            let words =
                w::c2c_record_words(args).map_err(|e| UsageError(format!("c2c record: {e}")))?;
            return crate::record::run(&crate::mem::parse(clap::Command::new("record"), words)?);
        }
        C2cCommand::Report { args } => w::c2c::report(args).map_err(UsageError)?,
    };
    let bad = |e: String| UsageError(format!("c2c report: {e}"));
    let display = Display::parse(&args.display).ok_or_else(|| {
        bad(format!(
            "unknown display type '{}' (tot, lcl, rmt or peer)",
            args.display
        ))
    })?;
    let coalesce = c2c::parse_coalesce(&args.coalesce)
        .map_err(|k| bad(format!("unrecognized -c key '{k}' (pid, tid, iaddr, dso)")))?;
    let (input, symbols) = (
        args.input.clone(),
        crate::symbols::options(Default::default()),
    );
    let no_source = args.no_source;
    let opts = c2c::C2cOptions {
        input,
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
    if !args.stats {
        let (full_symbols, show_all) = (args.full_symbols, args.show_all);
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
