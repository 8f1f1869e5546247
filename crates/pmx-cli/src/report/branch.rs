//! `pmx report -b/--branch-stack`: the branches of a file's branch
//! stacks counted by perf's branch keys (`pmx_precise::branch`), printed
//! in perf's layout or as JSON.

use crate::exit::UsageError;
use pmx_output::progress::Progress;
use pmx_precise::branch::{self, BranchError};
use pmx_profile::ReportOptions;
use std::path::PathBuf;

/// `pmx report`'s flags for the optimizers' inputs.
#[derive(Debug, clap::Args)]
pub struct OptimizerArgs {
    /// Write BOLT's profile (perf2bolt's fdata) of the branch stacks.
    #[arg(long, value_name = "OUT.fdata")]
    pub bolt: Option<PathBuf>,
    /// Write AutoFDO's range and branch counts (llvm-profgen's unsymbolized profile).
    #[arg(long, value_name = "OUT.txt", conflicts_with = "bolt")]
    pub autofdo: Option<PathBuf>,
    /// The binary --bolt/--autofdo profile (default: the one most branches touch).
    #[arg(long, value_name = "BINARY")]
    pub binary: Option<PathBuf>,
    /// --bolt from the samples' addresses, not their branches (perf2bolt -nl).
    #[arg(long, requires = "bolt")]
    pub bolt_no_lbr: bool,
}

/// `report -b`, `--bolt` or `--autofdo` as `args` ask; `None` for any
/// other report.
pub fn dispatch(
    args: &super::ReportArgs,
    symbols: pmx_symbols::SymbolOptions,
) -> Option<anyhow::Result<i32>> {
    let o = &args.optimizers;
    let optimize = o.bolt.is_some() || o.autofdo.is_some();
    let (a, p) = (args, &args.perf);
    let other = a.folded || a.json || a.group || a.threads || a.wall_clock || a.csv || p.stats;
    let out = a.flamegraph.is_some() || a.firefox.is_some() || a.pprof.is_some() || p.header_only;
    let auto = !(other || out || a.diff.is_some() || a.metrics.is_some() || p.no_branch_stack);
    let asked = p.branch_stack || p.branch_history || optimize;
    if !(asked || (auto && branch::by_default(&a.input, a.sort.as_deref()))) {
        return None;
    }
    let g = p.fields(None, a.percent_limit).map(|f| f.1.graph);
    let g = p.branch_history.then_some(g).transpose().ok()?; // a bad -g: said below
    let table = branch::Table::of(p.total_cycles, g, !p.no_children);
    let keys = a.sort.as_deref().unwrap_or("");
    let options = ReportOptions {
        event: args.event.clone(),
        symfs: args.symfs.clone(),
        percent_limit: args.percent_limit,
        symbols,
        ..ReportOptions::for_input(&args.input)
    };
    let done = match optimize {
        true => {
            let (binary, no_lbr) = (o.binary.clone(), o.bolt_no_lbr);
            let bolt = branch::bolt::BoltOptions { binary, no_lbr };
            optimizer(&options, &bolt, (&o.bolt, &o.autofdo), args.quiet)
        }
        false => run(&options, keys, (a.json, a.quiet, table)),
    };
    Some(done.map_err(|e| match e {
        BranchError::Report(e) => super::failure(e),
        BranchError::Key(k) => UsageError(format!("--sort {k}")).into(),
        BranchError::Output(io) => io.into(),
        e => e.into(),
    }))
}

/// Count the branches of `options.input` by `keys` (perf's, comma-separated;
/// empty: perf's default), or its blocks (`--total-cycles`), and print them.
pub fn run(
    options: &ReportOptions,
    keys: &str,
    how: (bool, bool, branch::Table),
) -> Result<i32, BranchError> {
    let (json, quiet, table) = how;
    let mut progress = Progress::new(quiet);
    let r = branch::tables(options, keys, table, &mut |d, t| progress.update(d, t));
    progress.finish();
    let r = r?;
    for w in r.warnings() {
        eprintln!("pmx: warning: {w}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    r.write(&mut out, json).map_err(BranchError::Output)?;
    std::mem::forget(r); // the process ends: freeing its rows one by one is wasted time
    Ok(crate::exit::OK)
}

/// `pmx report --bolt OUT` (BOLT's fdata) or `--autofdo OUT` (AutoFDO's
/// range and branch counts) of `options.input`.
pub fn optimizer(
    options: &ReportOptions,
    bolt: &branch::bolt::BoltOptions,
    to: (&Option<PathBuf>, &Option<PathBuf>),
    quiet: bool,
) -> Result<i32, BranchError> {
    let mut progress = Progress::new(quiet);
    let to = (to.0.as_deref(), to.1.as_deref());
    let note = branch::optimize(options, bolt, to, &mut |d, t| progress.update(d, t));
    progress.finish();
    (note?.filter(|_| !quiet)).inspect(|n| eprintln!("pmx: {n}"));
    Ok(crate::exit::OK)
}
