//! Driving `pmx stat`'s renderers (`pmx_output::stat_render`) for both
//! backends: the interval header and writer before the run, the totals
//! and the `--plot` chart after it, each where the flags send it.
//!
//! What the flags mean for them is derived once, at `pmx stat`'s entry,
//! into a [`StatView`] that is passed down; nothing below asks the flags
//! again.

use crate::perf_cli::PerfView;
use crate::stat_args::{usage, StatArgs};
use pmx::stat::Aggregation;
use pmx_io::job::JobContext;
use pmx_model::topology::Topology;
use pmx_output::plot::Format;
use pmx_output::stat::StatReport;
use pmx_output::stat_render::StatStyle;
use pmx_output::stat_render::{self, IntervalOptions, IntervalWriter, StatFormat, StatMetrics};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// How rows are folded: -A, --per-core/-die/-cache/-socket/-node/-thread
/// (read before the rest of the view: `stat report`'s words need it).
pub fn aggregation(args: &StatArgs) -> Aggregation {
    pmx_args::stat_flags::aggregation(pmx_args::stat_flags::AggregationFlags {
        no_aggr: args.no_aggr,
        core: args.per_core,
        die: args.perf.per_die,
        cache: args.perf.per_cache.as_deref(),
        socket: args.per_socket,
        node: args.perf.per_node,
        thread: args.per_thread,
    })
}

/// A session ready to count (over either backend) and what its report
/// needs besides.
pub struct Prepared {
    /// The session.
    pub session: pmx::stat::Session,
    /// The `-M` metrics.
    pub metrics: Option<StatMetrics>,
    /// perf's backend: `--append`, `stat record`'s file, the runs' wall
    /// times and the job in the totals.
    pub perf: bool,
}

/// What `pmx stat`'s flags mean for counting and rendering, derived once.
pub struct StatView {
    /// How rows are folded.
    pub how: Aggregation,
    /// `--json`, `-x SEP` or the table; with `-I` or not; `--csv-header`.
    pub style: StatStyle,
    /// How the interval rows are written (kept for `--plot` with it).
    pub intervals: IntervalOptions,
    /// `--plot FILE` and its format (from the extension).
    pub plot: Option<(PathBuf, Format)>,
    /// What perf's layout needs from the flags.
    pub perf: PerfView,
}

impl StatView {
    /// The view of `args` (normalized), folding rows as `how`.
    pub fn of(args: &StatArgs, how: Aggregation) -> anyhow::Result<StatView> {
        let perf = args.format == "perf";
        let format = StatFormat::from_flags(args.json, args.separator.as_deref(), perf);
        let format_of = |p: &PathBuf| pmx_output::plot::output::stat_plot(p).map_err(usage);
        let plot = (args.plot.as_ref())
            .map(|p| Ok::<_, anyhow::Error>((p.clone(), format_of(p)?)))
            .transpose()?;
        let perf = PerfView::of(args);
        let intervals = IntervalOptions {
            format: format.clone(),
            absolute_time: args.timestamps == "absolute",
            measured_span: args.backend == "msr",
            aggregation: how,
            plot: plot.is_some(),
            clear: args.perf.interval_clear,
            system_wide: perf.system_wide,
            metric_only: args.perf.metric_only,
        };
        let style = StatStyle {
            format,
            intervals: args.interval.is_some(),
            csv_header: args.csv_header,
            metric_only: args.perf.metric_only,
            plain_numbers: args.perf.no_big_num,
        };
        Ok(StatView {
            how,
            style,
            intervals,
            plot,
            perf,
        })
    }
}

/// The interval CSV header (`-I -x SEP --csv-header`), then the writer of
/// the interval rows to `out` (kept for `--plot` with it).
pub fn intervals<'a>(
    out: &'a mut dyn Write,
    view: &StatView,
    topo: Option<&'a Topology>,
    metrics: Option<&'a StatMetrics>,
) -> anyhow::Result<IntervalWriter<'a>> {
    if let Some(header) = view.style.interval_header() {
        out.write_all(header.as_bytes())?;
    }
    let options = view.intervals.clone();
    Ok(IntervalWriter::new(out, options, topo, metrics))
}

/// The totals; when they or the interval rows (`error`) cannot be
/// written, on standard error instead, then the error. `job`: JSON
/// records where it ran; `walls`: each run's wall-clock time (perf's
/// footer).
pub fn totals(
    out: &mut dyn Write,
    view: &StatView,
    report: &StatReport,
    error: Option<std::io::Error>,
    (job, walls): (bool, &[Duration]),
) -> anyhow::Result<()> {
    let style = &view.style;
    let text = match &style.format {
        StatFormat::Perf(form) => {
            let o = crate::perf_cli::options(&view.perf, form.clone(), report, walls);
            stat_render::perf_totals(report, style, &o)
        }
        _ => {
            let job = job.then(JobContext::current).and_then(Result::ok);
            stat_render::totals(report, style, job.as_ref())
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
pub fn draw(view: &StatView, rows: Option<String>) -> anyhow::Result<()> {
    let (Some((path, format)), Some(rows)) = (&view.plot, rows) else {
        return Ok(());
    };
    stat_render::draw_plot(path, *format, &rows).map_err(|e| anyhow::anyhow!(e))
}
