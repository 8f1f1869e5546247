//! `pmx report -b/--branch-stack`: the branches of a file's branch
//! stacks counted by perf's branch keys (`pmx_precise::branch`), printed
//! in perf's layout or as JSON.

use pmx_output::progress::Progress;
use pmx_precise::branch::{self, BranchError};
use pmx_profile::ReportOptions;
use std::io::Write;
use std::path::PathBuf;

/// Count the branches of `options.input` by `keys` (perf's, comma-separated;
/// empty: perf's default) and print them (perf's table, or JSON).
pub fn run(
    options: &ReportOptions,
    keys: &str,
    json: bool,
    quiet: bool,
) -> Result<i32, BranchError> {
    let mut progress = Progress::new(quiet);
    let r = branch::report(options, keys, &mut |d, t| progress.update(d, t));
    progress.finish();
    let r = r?;
    for w in &r.report.profile.warnings {
        eprintln!("pmx: warning: {w}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = match json {
        true => writeln!(out, "{:#}", branch::table::json(&r)),
        false => branch::table::print(&mut out, &r),
    };
    written
        .and_then(|_| out.flush())
        .map_err(BranchError::Output)?;
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
    let mut step = |d, t| progress.update(d, t);
    let (r, out) = match to {
        (Some(out), _) => (branch::bolt::fdata(options, bolt, &mut step), out),
        (None, Some(out)) => {
            let binary = bolt.binary.as_deref();
            (branch::autofdo::profile(options, binary, &mut step), out)
        }
        (None, None) => return Ok(crate::exit::OK),
    };
    progress.finish();
    let r = r?;
    pmx_io::write(out, r.text.as_bytes()).map_err(BranchError::Output)?;
    if !quiet {
        let what = (r.binary.display(), out.display(), r.records);
        eprintln!("pmx: {}: {} written ({} records)", what.0, what.1, what.2);
    }
    Ok(crate::exit::OK)
}
