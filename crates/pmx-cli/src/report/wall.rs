//! `pmx report --wall-clock`: each thread's time on and off the CPU in
//! one unit (`pmx_profile::wallclock`), as tables, JSON, folded stacks,
//! a flame graph or the Firefox and pprof exports.

use pmx_output::progress::Progress;
use pmx_profile::{export, wallclock, ReportError, ReportOptions};
use std::io::Write;

/// Report `options.input`'s wall-clock time as `args` asks; `failure`
/// says a report's error as the CLI does.
pub fn run(
    args: &super::ReportArgs,
    options: &ReportOptions,
    failure: fn(ReportError) -> anyhow::Error,
) -> anyhow::Result<i32> {
    let to = export::targets(&args.firefox, &args.pprof);
    let mut progress = Progress::new(args.quiet);
    let pprof = to.iter().any(|t| t.1 == export::Format::Pprof);
    let result = wallclock::report(options, pprof, &mut |d, t| progress.update(d, t));
    progress.finish();
    let (report, x, w) = result.map_err(failure)?;
    for warning in &report.profile.warnings {
        eprintln!("pmx: warning: {warning}");
    }
    for (p, f) in &to {
        let mut out = pmx_io::OutFile::create(p, Default::default())?;
        x.write(*f, &mut out)?;
        out.commit()?;
    }
    if let Some(svg) = &args.flamegraph {
        pmx_io::write(svg, w.flame_svg().as_bytes())?;
        (!args.quiet)
            .then(|| eprintln!("pmx: wall-clock flame graph written to {}", svg.display()));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.folded {
        out.write_all(w.folded().as_bytes())?;
    } else if args.json {
        writeln!(out, "{:#}", w.json())?;
    } else if (args.flamegraph.is_none() && to.is_empty()) || args.stdio {
        w.table(&mut out, options.percent_limit, options.limit)?;
    }
    out.flush()?;
    Ok(crate::exit::OK)
}
