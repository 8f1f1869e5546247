//! Driving `pmx stat`'s renderers (`pmx_output::stat_render`) for both
//! backends: the interval header and writer before the run, the totals
//! and the `--plot` chart after it, each where the flags send it.

use crate::stat_args::StatArgs;
use pmx_io::job::JobContext;
use pmx_model::topology::Topology;
use pmx_output::stat::StatReport;
use pmx_output::stat_render::{self, IntervalWriter, StatFormat, StatMetrics};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// The interval CSV header (`-I -x SEP --csv-header`), then the writer of
/// the interval rows to `out`; `plot`: keep them for `--plot`.
pub fn intervals<'a>(
    out: &'a mut dyn Write,
    args: &StatArgs,
    topo: Option<&'a Topology>,
    metrics: Option<&'a StatMetrics>,
    plot: bool,
) -> anyhow::Result<IntervalWriter<'a>> {
    if let Some(header) = args.style().interval_header() {
        out.write_all(header.as_bytes())?;
    }
    let options = args.interval_options(plot);
    Ok(IntervalWriter::new(out, options, topo, metrics))
}

/// The totals; when they or the interval rows (`error`) cannot be
/// written, on standard error instead, then the error. `job`: JSON
/// records where it ran; `walls`: each run's wall-clock time (perf's
/// footer).
pub fn totals(
    out: &mut dyn Write,
    args: &StatArgs,
    report: &StatReport,
    error: Option<std::io::Error>,
    (job, walls): (bool, &[Duration]),
) -> anyhow::Result<()> {
    let style = args.style();
    let text = match &style.format {
        StatFormat::Perf(form) => {
            let o = crate::perf_cli::options(args, form.clone(), report, walls);
            stat_render::perf_totals(report, &style, &o)
        }
        _ => {
            let job = job.then(JobContext::current).and_then(Result::ok);
            stat_render::totals(report, &style, job.as_ref())
        }
    };
    let failed = error.map(|e| format!("writing the interval rows: {e}"));
    let failed = failed.or_else(|| {
        out.write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .err()
            .map(|e| e.to_string())
    });
    failed.map_or(Ok(()), |why| {
        eprint!("{text}");
        Err(anyhow::anyhow!("{why}"))
    })
}

/// Draw the interval rows kept for `--plot` into its file.
pub fn draw(
    plot: &Option<(PathBuf, pmx_output::plot::Format)>,
    rows: Option<String>,
) -> anyhow::Result<()> {
    let (Some((path, format)), Some(rows)) = (plot, rows) else {
        return Ok(());
    };
    stat_render::draw_plot(path, *format, &rows).map_err(|e| anyhow::anyhow!(e))
}
