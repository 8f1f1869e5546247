//! `pmx mem` (and `perf mem` under perf's name): `report` is `pmx
//! report --mem-mode -n` with perf mem's sort orders (`-t store`: no
//! weight, snoop or blocked columns). Also `report --mem-mode` itself and
//! the memory sort keys of `pmx report` (the engine is
//! `pmx_profile::mem`).

use crate::exit::UsageError;
use crate::report::ReportArgs;
use pmx_profile::mem::{self, MemError, MemOptions};
use std::ffi::OsString;

/// Arguments of `pmx mem`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "perf mem's options come before its command: `pmx mem -t store report`. The report's own options follow `report` (those of pmx report)."
)]
pub struct MemArgs {
    /// The accesses: load, store or load,store (perf mem's -t).
    #[arg(
        short = 't',
        long = "type",
        value_name = "TYPE",
        default_value = "load,store"
    )]
    pub op: String,
    #[command(subcommand)]
    pub command: MemCommand,
}

/// `pmx mem`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum MemCommand {
    /// Sample memory accesses with this machine's precise memory events
    /// (Intel mem-loads/mem-stores, AMD ibs_op) into a perf.data file.
    Record {
        /// The load-latency threshold in cycles (Intel's ldlat).
        #[arg(long, value_name = "CYCLES", default_value_t = pmx::record::DEFAULT_LDLAT)]
        ldlat: u32,
        /// pmx record's options and the command.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<OsString>,
    },
    /// The memory accesses of a perf.data file (report --mem-mode -n).
    Report {
        /// pmx report's options.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<OsString>,
    },
}

/// Run `pmx mem`.
pub fn run(a: &MemArgs) -> anyhow::Result<i32> {
    match &a.command {
        MemCommand::Record { ldlat, args } => {
            let (load, store) = (a.op.contains("load"), a.op.contains("store"));
            mem::perf_mem_sort(&a.op).map_err(UsageError)?; // -t checked
            let root = pmx_sys::SysRoot::host();
            let events = pmx::record::mem_events(&root, load, store, *ldlat);
            let events = events.map_err(|e| UsageError(format!("mem record: {e}")))?;
            let mut words: Vec<OsString> = ["record", "-d", "-W"].map(Into::into).to_vec();
            for e in events {
                words.extend(["-e".into(), e.into()]);
            }
            words.extend(args.iter().cloned());
            let cmd = <crate::record::RecordArgs as clap::Args>::augment_args(
                clap::Command::new("record").bin_name("pmx mem record"),
            );
            let mut m = cmd.try_get_matches_from(words)?;
            crate::record::run(
                &<crate::record::RecordArgs as clap::FromArgMatches>::from_arg_matches_mut(&mut m)?,
            )
        }
        MemCommand::Report { args } => {
            let sort = mem::perf_mem_sort(&a.op).map_err(UsageError)?;
            let mut words: Vec<OsString> = ["report", "--mem-mode", "-n"].map(Into::into).to_vec();
            let sorted = (args.iter().map(|w| w.to_string_lossy()))
                .any(|w| w.starts_with("-s") || w.starts_with("--sort"));
            if !sorted && sort != mem::DEFAULT_SORT {
                words.push(format!("--sort={sort}").into());
            }
            words.extend(args.iter().cloned());
            let cmd = <ReportArgs as clap::Args>::augment_args(
                clap::Command::new("report").bin_name("pmx mem report"),
            );
            let mut m = cmd.try_get_matches_from(words)?;
            report(&<ReportArgs as clap::FromArgMatches>::from_arg_matches_mut(
                &mut m,
            )?)
        }
    }
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
    let opts = MemOptions {
        input: a.input.clone(),
        sort: l.keys,
        sort_order: l.sort_order,
        event: a.event.clone(),
        symfs: a.symfs.clone(),
        symbols: crate::symbols::options(a.demangle),
    };
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
