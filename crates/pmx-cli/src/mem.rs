//! `pmx mem` (`perf mem` under perf's name): `record` and `report` as
//! `pmx record -d -W -e …` and `pmx report --mem-mode -n`
//! (`pmx_args::mem_words`); `report --mem-mode` and the memory keys of
//! `pmx report` (the engine is `pmx_precise::mem`).

use crate::exit::UsageError;
use crate::report::ReportArgs;
use pmx_precise::mem::{self, MemError, MemOptions};
use std::ffi::OsString;

/// Arguments of `pmx mem` (perf mem's, `pmx_args::mem_words::parse`).
#[derive(Debug, clap::Args)]
pub struct MemArgs {
    /// record [--ldlat N] [-K|--all-user] ARGS | report ARGS; anywhere: -t load|store|load,store, -D (dump), -x SEP, -C CPUS, -U (hide unresolved), -p (physical), --data-page-size, -i FILE.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<OsString>,
}

/// Run `pmx mem`: its command's words as `pmx record`'s or `pmx report`'s.
pub fn run(a: &MemArgs) -> anyhow::Result<i32> {
    use pmx_args::mem_words::{parse as line, MemCommand};
    let l = line(&a.words).map_err(|e| UsageError(format!("mem: {e}")))?;
    match l.command {
        MemCommand::Record => {
            let w = l
                .record_words()
                .map_err(|e| UsageError(format!("mem record: {e}")))?;
            crate::record::run(&parse(clap::Command::new("record"), w)?)
        }
        MemCommand::Report if l.dump_raw => {
            let input = l.input.map_or_else(|| "perf.data".into(), Into::into);
            let o = mem::RawOptions {
                input,
                separator: l.separator,
                phys: l.phys,
                data_page_size: l.data_page_size,
                hide_unresolved: l.hide_unresolved,
                cpus: l.cpus,
                symbols: crate::symbols::options(Default::default()),
            };
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            match mem::dump(&o, &mut out) {
                Err(e @ MemError::Refused(_)) => Err(UsageError(e.to_string()))?,
                r => r?,
            }
            Ok(std::io::Write::flush(&mut out).map(|_| crate::exit::OK)?)
        }
        MemCommand::Report => report(&parse(
            clap::Command::new("report"),
            l.report_words().map_err(UsageError)?,
        )?),
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

/// `pmx report --mem-mode` (or a memory key): perf's table, or `--pprof`/`--flamegraph`/`--folded`.
pub fn report(a: &ReportArgs) -> anyhow::Result<i32> {
    let p = &a.perf;
    let l = mem::layout(a.sort.as_deref(), p.fields.as_deref(), p.nr_samples);
    let l = l.map_err(UsageError)?;
    let mut opts = MemOptions::new(a.input.clone(), l.keys, l.sort_order);
    (opts.event, opts.symfs) = (a.event.clone(), a.symfs.clone());
    (opts.symbols, opts.data_objects) = (crate::symbols::options(a.demangle), !p.layout());
    opts.exports = mem::MemExports::new(a.folded, &a.flamegraph, &a.pprof);
    let r = match mem::mem_report(&opts) {
        Err(e @ MemError::NoMemData) => Err(UsageError(e.to_string()))?,
        r => r?,
    };
    r.warnings
        .iter()
        .for_each(|w| eprintln!("pmx: warning: {w}"));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    mem::table::print_exports(&mut out, &r, l.columns, &opts.exports)?;
    std::io::Write::flush(&mut out)?;
    Ok(crate::exit::OK)
}
