//! `pmx stat --regions -- ./app`: the instrumented program's regions
//! (pmx's Rust API or C ABI) count the events given here and report back.
//!
//! pmx puts the event list in `PMX_EVENTS` (from `-e`; without `-e`
//! the library's own default), the metrics in `PMX_METRICS` (from `-M`)
//! and a fresh file name in `PMX_REGIONS_OUT` ([`Handoff`]); the command
//! inherits them,
//! its library counts each region per thread and writes the results file
//! at exit (or `pmx_finalize`). After the normal `pmx stat` report, pmx
//! reads the file and prints one row per region and thread — as a table,
//! `-x` CSV or `--json` — so changing the events needs no rebuild.

use crate::exit::UsageError;
use crate::stat_args::StatArgs;
use crate::stat_render::StatView;
use pmx::region::Handoff;
use pmx::results::RegionResults;
use std::io::Write;

/// Run `pmx stat` (`count`) with the regions environment set, then report
/// the regions.
pub fn run(
    args: &StatArgs,
    view: &StatView,
    count: fn(&StatArgs, &StatView) -> anyhow::Result<i32>,
) -> anyhow::Result<i32> {
    let tasks = args.pid.is_some() || args.tid.is_some();
    pmx::region::check_flags(&args.command, tasks, args.repeat, &args.events)
        .map_err(UsageError)?;
    let events = (!args.events.is_empty()).then(|| args.events.join(","));
    let handoff = Handoff::export(events.as_deref(), args.metrics.as_deref());
    let code = count(args, view)?;
    // The same %h %p %r %j expansion stat used: %p is this process.
    let mut out = args.output(true)?;
    let text = match handoff.text() {
        Some(t) => t,
        None => {
            eprintln!(
                "pmx stat: --regions: '{}' wrote no region results (is it built with pmx's \
                 library — pmx::region or pmx.h — and did it enter a region?)",
                args.command.join(" ")
            );
            return Ok(code);
        }
    };
    let results = RegionResults::from_json(&text)
        .map_err(|e| anyhow::anyhow!("--regions: the results of the command: {e}"))?;
    let rendered = pmx_output::stat_render::regions(&results, &view.style.format, args.csv_header)?;
    out.write_all(rendered.as_bytes())?;
    out.flush()?;
    Ok(code)
}
