//! Rendering `pmx stat` for both backends: where the report goes (`-o`),
//! the interval rows as they are measured (table, `-x` CSV, `--json`, and
//! the `--plot` copy), the totals, and the chart.

use crate::stat_args::{Format, StatArgs};
use crate::stat_metrics::MetricSetup;
use pmx::stat::{Aggregator, Scope, StatPlan, Summary, Tick};
use pmx_model::topology::Topology;
use pmx_output::stat::{IntervalCsv, IntervalJson, IntervalRows, StatReport};
use std::io::Write;
use std::time::Duration;

/// `-o FILE` (with `%h %p %r %j` expanded; appended to with `append`), or
/// stderr.
pub fn output(args: &StatArgs, append: bool) -> anyhow::Result<Box<dyn Write>> {
    let Some(pattern) = &args.output else {
        return Ok(Box::new(std::io::stderr()));
    };
    let path = crate::outpath::expand_path(pattern)?;
    let file = if append {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
    } else {
        std::fs::File::create(&path)
    };
    Ok(Box::new(
        file.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
    ))
}

/// The interval CSV header, with `-I -x SEP --csv-header`.
pub fn interval_header(out: &mut dyn Write, args: &StatArgs) -> std::io::Result<()> {
    match (&args.separator, args.interval.is_some() && args.csv_header) {
        (Some(sep), true) => out.write_all(pmx_output::stat::interval_csv_header(sep).as_bytes()),
        _ => Ok(()),
    }
}

/// Writes interval rows as they are measured: rows refilled in place and
/// formatted into reused buffers, one write per interval.
pub struct IntervalWriter<'a> {
    out: &'a mut dyn Write,
    topo: Option<&'a Topology>,
    format: Format,
    /// Seconds added to the time stamps (the epoch with absolute ones).
    epoch0: f64,
    metrics: Option<&'a MetricSetup>,
    /// The interval's length is its instances' enabled time (msr), not
    /// the time since the previous one.
    measured_span: bool,
    /// The end of the previous interval, since the start.
    last_at: Duration,
    aggregator: Aggregator,
    csv: Option<IntervalCsv>,
    json: IntervalJson,
    plot_csv: IntervalCsv,
    /// The rows as interval CSV, for `--plot`.
    pub plot: Option<String>,
    /// The first write error; nothing more is written after it.
    pub error: Option<std::io::Error>,
}

impl<'a> IntervalWriter<'a> {
    /// A writer to `out`; `plot`: keep the rows for `--plot`.
    pub fn new(
        out: &'a mut dyn Write,
        args: &StatArgs,
        topo: Option<&'a Topology>,
        metrics: Option<&'a MetricSetup>,
        plot: bool,
    ) -> IntervalWriter<'a> {
        let epoch0 = match args.timestamps.as_str() {
            "absolute" => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            _ => 0.0,
        };
        IntervalWriter {
            out,
            topo,
            format: args.format(),
            epoch0,
            metrics,
            measured_span: args.backend == "msr",
            last_at: Duration::ZERO,
            aggregator: Aggregator::new(args.aggregation()),
            csv: args.separator.as_deref().map(IntervalCsv::new),
            json: IntervalJson::new(),
            plot_csv: IntervalCsv::new(","),
            plot: plot.then(String::new),
            error: None,
        }
    }

    /// Write one interval of `plan`.
    pub fn write(&mut self, plan: &StatPlan, t: &Tick) {
        if self.error.is_some() {
            return;
        }
        let span = match (self.measured_span, t.instances.first()) {
            (true, Some(i)) => Duration::from_nanos(i.count.enabled),
            _ => t.at.saturating_sub(self.last_at),
        };
        self.last_at = t.at;
        let rows = self.aggregator.rows(plan, t.instances, self.topo);
        let metric_lines = match self.metrics {
            Some(m) => m.evaluate(plan, t.status, rows, span),
            None => Vec::new(),
        };
        let iv = IntervalRows {
            time: self.epoch0 + t.at.as_secs_f64(),
            plan,
            status: t.status,
            rows,
            metrics: &metric_lines,
        };
        let owned;
        let text: &str = match (&self.format, self.csv.as_mut()) {
            (Format::Json, _) => self.json.format(&iv),
            (Format::Csv(_), Some(csv)) => csv.format(&iv),
            _ => {
                owned = pmx_output::stat::interval_table(&iv);
                &owned
            }
        };
        if let Some(p) = self.plot.as_mut() {
            p.push_str(self.plot_csv.format(&iv));
        }
        // One write per interval, flushed before the next starts.
        if let Err(e) = self
            .out
            .write_all(text.as_bytes())
            .and_then(|_| self.out.flush())
        {
            self.error = Some(e);
        }
    }
}

/// The report of `summary`: rows, `-M` metrics, and `notes` first.
pub fn report<'a>(
    args: &StatArgs,
    plan: &'a StatPlan,
    summary: Summary,
    scope: &Scope,
    metrics: Option<&MetricSetup>,
    notes: Vec<String>,
) -> StatReport<'a> {
    let mut report = StatReport {
        target: scope.describe(&args.command),
        plan,
        status: summary.status,
        rows: summary.rows,
        spreads: summary.spreads,
        runs: summary.runs,
        elapsed: summary.elapsed,
        exit: summary.exit,
        interrupted: summary.interrupted,
        notes: summary.notes,
        metrics: Vec::new(),
    };
    if let Some(m) = metrics {
        report.metrics = m.evaluate(plan, &report.status, &report.rows, report.elapsed);
        report.notes.extend(m.notes.iter().cloned());
    }
    report.notes.splice(0..0, notes);
    report
}

/// The totals as text; after interval rows, CSV totals are comments so
/// every data line of the file has the interval columns. `job`: JSON
/// records where it ran.
pub fn totals(report: &StatReport, args: &StatArgs, job: bool) -> String {
    let intervals = args.interval.is_some();
    match args.format() {
        Format::Json => {
            let mut doc = pmx_output::stat::json(report);
            if job {
                crate::outpath::add_job_fields(&mut doc);
            }
            format!("{doc}\n")
        }
        Format::Csv(sep) => {
            let body = pmx_output::stat::csv(report, &sep, args.csv_header && !intervals);
            if !intervals {
                return body;
            }
            let mut t = format!("# totals over {:.6} s\n", report.elapsed.as_secs_f64());
            for l in body.lines() {
                t.push_str("# ");
                t.push_str(l);
                t.push('\n');
            }
            t
        }
        Format::Table => pmx_output::stat::table(report),
    }
}

/// Draw the interval rows collected for `--plot`.
pub fn draw(
    rows: &str,
    path: &std::path::Path,
    format: pmx_output::plot::Format,
) -> anyhow::Result<()> {
    use pmx_output::plot::{render, Chart, ChartOptions, Timeline};
    let chart = Timeline::parse(rows)
        .and_then(|t| Chart::build(&t, &ChartOptions::default()))
        .map_err(|e| anyhow::anyhow!("--plot: {e}"))?;
    let bytes = render(&chart, format, 960, 540).map_err(|e| anyhow::anyhow!("--plot: {e}"))?;
    std::fs::write(path, bytes).map_err(|e| anyhow::anyhow!("--plot {}: {e}", path.display()))?;
    Ok(())
}
