//! `pmx mem` (`perf mem` under perf's name): `record` and `report` as
//! `pmx record -d -W -e …` and `pmx report --mem-mode -n`
//! (`pmx_args::mem_words`); `report --mem-mode` and the memory keys of
//! `pmx report` (the engine is `pmx_precise::mem`).

use crate::exit::UsageError;
use crate::report::ReportArgs;
use pmx_precise::mem::{self, MemError, MemOptions};
use std::ffi::OsString;

/// Arguments of `pmx mem`.
#[derive(Debug, clap::Args)]
pub struct MemArgs {
    /// The accesses: load, store or load,store (perf mem's -t).
    #[arg(short = 't', long = "type", default_value = "load,store")]
    pub op: String,
    #[command(subcommand)]
    pub command: MemCommand,
}

/// `pmx mem`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum MemCommand {
    /// Sample memory accesses with this machine's memory events (Intel mem-loads/-stores, AMD ibs_op).
    Record {
        /// The load-latency threshold in cycles (Intel's ldlat).
        #[arg(long, value_name = "CYCLES", default_value_t = pmx_args::mem_words::events::DEFAULT_LDLAT)]
        ldlat: u32,
        /// pmx record's options and the command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// The memory accesses of a perf.data file (report --mem-mode -n).
    Report {
        /// pmx report's options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// Run `pmx mem`: its command's words as `pmx record`'s or `pmx report`'s.
pub fn run(a: &MemArgs) -> anyhow::Result<i32> {
    use pmx_args::mem_words::{record_words, report_words};
    match &a.command {
        MemCommand::Record { ldlat, args } => {
            let w = record_words(&a.op, *ldlat, args)
                .map_err(|e| UsageError(format!("mem record: {e}")))?;
            crate::record::run(&parse(clap::Command::new("record"), w)?)
        }
        MemCommand::Report { args } => {
            let w = report_words(&a.op, args).map_err(UsageError)?;
            report(&parse(clap::Command::new("report"), w)?)
        }
    }
}

/// `words` as a command's flags.
pub(crate) fn parse<A: clap::Args + clap::FromArgMatches>(
    c: clap::Command,
    words: Vec<OsString>,
) -> anyhow::Result<A> {
    let mut m = A::augment_args(c.bin_name("pmx mem")).try_get_matches_from(words)?;
    Ok(A::from_arg_matches_mut(&mut m)?)
}

/// Whether `pmx report` with these flags is a memory report.
pub fn wanted(a: &ReportArgs) -> bool {
    mem::wanted(a.perf.mem_mode, a.sort.as_deref(), a.perf.fields.as_deref())
}

/// `pmx report --mem-mode` (or with a memory key): the table in perf's layout.
pub fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    let p = &a.perf;
    let l = mem::layout(a.sort.as_deref(), p.fields.as_deref(), p.nr_samples);
    let l = l.map_err(UsageError)?;
    let mut opts = MemOptions::new(a.input.clone(), l.keys, l.sort_order);
    (opts.event, opts.symfs) = (a.event.clone(), a.symfs.clone());
    opts.symbols = crate::symbols::options(a.demangle);
    let r = match mem::mem_report(&opts) {
        Err(e @ MemError::NoMemData) => Err(UsageError(e.to_string()))?,
        r => r?,
    };
    r.warnings
        .iter()
        .for_each(|w| eprintln!("pmx: warning: {w}"));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    mem::table::print(&mut out, &r, l.columns)?;
    std::io::Write::flush(&mut out)?;
    Ok(crate::exit::OK)
}
