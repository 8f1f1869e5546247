//! `pmx stat`'s output for both backends (perf and msr), put together from
//! the writers of [`crate::stat`]: the interval rows as they are measured
//! ([`IntervalWriter`]: table, `-x` CSV or `--json` per row, plus the CSV
//! copy `--plot` draws), the `-M` metric lines ([`StatMetrics`]), the
//! report of the totals ([`compose`], [`totals`]), the chart ([`chart`])
//! and the `--regions` rows ([`regions`]).
//!
//! The front end parses the flags into a [`StatStyle`] and
//! [`IntervalOptions`], opens the output, makes the library's calls and
//! hands their values here; nothing here reads a flag or opens a file.

use crate::stat::{
    interval_csv_header, interval_table, IntervalCsv, IntervalJson, IntervalRows, MetricLine,
    StatReport,
};
use pmx::metrics::MetricSet;
use pmx::results::RegionResults;
use pmx::stat::{Aggregation, Aggregator, EventStatus, Row, StatPlan, Summary, Tick};
use pmx_formats::perf::{PerfForm, PerfIntervals, PerfOptions};
use pmx_formats::RunMetric;
use pmx_io::job::JobContext;
use pmx_model::topology::Topology;
use std::io::Write;
use std::time::Duration;

/// How totals and intervals are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatFormat {
    /// The table (default).
    Table,
    /// `-x SEP`: CSV with this separator.
    Csv(String),
    /// `--json`.
    Json,
    /// `--format perf`: perf's own layout of the table, `-x` or `-j`
    /// (`pmx_formats::perf`).
    Perf(PerfForm),
}

impl StatFormat {
    /// The format the flags name: `--json`, `-x SEP` or the table; perf's
    /// form of it with `--format perf` (`perf`).
    pub fn from_flags(json: bool, separator: Option<&str>, perf: bool) -> StatFormat {
        let format = match (json, separator) {
            (true, _) => StatFormat::Json,
            (false, Some(sep)) => StatFormat::Csv(sep.to_string()),
            (false, None) => StatFormat::Table,
        };
        match perf {
            true => format.into_perf(),
            false => format,
        }
    }

    /// pmx's form of the same kind (for output perf has no form of, such
    /// as `--regions`).
    pub fn pmx(&self) -> StatFormat {
        match self {
            StatFormat::Perf(PerfForm::Text) => StatFormat::Table,
            StatFormat::Perf(PerfForm::Csv(sep)) => StatFormat::Csv(sep.clone()),
            StatFormat::Perf(PerfForm::Json) => StatFormat::Json,
            other => other.clone(),
        }
    }

    /// perf's form of the same kind (`--format perf`).
    pub fn into_perf(self) -> StatFormat {
        StatFormat::Perf(match self {
            StatFormat::Csv(sep) => PerfForm::Csv(sep),
            StatFormat::Json => PerfForm::Json,
            StatFormat::Perf(f) => f,
            StatFormat::Table => PerfForm::Text,
        })
    }
}

/// The thousands separator perf's `-B` (its default) uses in the locale
/// that `var` tells (`LC_ALL`, else `LC_NUMERIC`, else `LANG`, the first
/// one set and not empty): `,` in the English ones, none in C/POSIX (as
/// perf prints there). `var` reads a variable of the environment; the
/// CLI passes `|k| std::env::var(k).ok()`.
pub fn perf_thousands(var: impl Fn(&str) -> Option<String>) -> Option<char> {
    let locale = ["LC_ALL", "LC_NUMERIC", "LANG"]
        .iter()
        .find_map(|k| var(k).filter(|v| !v.is_empty()))?;
    locale.starts_with("en_").then_some(',')
}

/// How the report is written, as the flags asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatStyle {
    /// Table, CSV or JSON.
    pub format: StatFormat,
    /// `-I`: interval rows come before the totals.
    pub intervals: bool,
    /// `--csv-header`.
    pub csv_header: bool,
    /// `--metric-only`: the metric lines alone.
    pub metric_only: bool,
    /// `--no-big-num`: counts without thousands' separators.
    pub plain_numbers: bool,
}

impl StatStyle {
    /// What perf 6.1 refuses of `--metric-only` in its layout (its
    /// `builtin-stat.c`): with `--per-thread`, and with `-r` above 1.
    pub fn perf_refusal(&self, per_thread: bool, repeat: u32) -> Option<&'static str> {
        if !(self.metric_only && matches!(self.format, StatFormat::Perf(_))) {
            return None;
        }
        if per_thread {
            return Some("--metric-only is not supported with --per-thread");
        }
        (repeat > 1).then_some("--metric-only is not supported with -r")
    }

    /// The header line of interval CSV (`-I -x SEP --csv-header`), written
    /// before the first interval; `None` for every other output.
    pub fn interval_header(&self) -> Option<String> {
        match &self.format {
            StatFormat::Csv(sep) if self.intervals && self.csv_header => {
                Some(interval_csv_header(sep))
            }
            _ => None,
        }
    }
}

/// The metrics of `-M` ([`pmx::metrics`]), evaluated into the renderers'
/// metric lines.
pub struct StatMetrics {
    set: MetricSet,
    /// Notes for the report (metrics that cannot be computed here, …).
    pub notes: Vec<String>,
}

impl StatMetrics {
    /// The metrics of `set`, with its notes.
    pub fn new(set: MetricSet) -> StatMetrics {
        let notes = set.notes();
        StatMetrics { set, notes }
    }

    /// The metrics for every domain of `rows`, counted over `elapsed`.
    pub fn evaluate(
        &self,
        plan: &StatPlan,
        status: &[EventStatus],
        rows: &[Row],
        elapsed: Duration,
    ) -> Vec<MetricLine> {
        self.set
            .evaluate_rows(plan, status, rows, elapsed.as_secs_f64(), "never ran")
            .into_iter()
            .map(|(d, v)| MetricLine {
                name: v.name,
                domain: d.label(),
                value: v.value,
                unit: v.unit,
                reliability: v.reliability,
                estimate: v.estimate,
                missing: v.missing,
            })
            .collect()
    }
}

/// How interval rows are written.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalOptions {
    /// Table, CSV or JSON lines.
    pub format: StatFormat,
    /// Time stamps in seconds since the epoch (`--timestamps absolute`)
    /// instead of since the start.
    pub absolute_time: bool,
    /// An interval lasts its counters' enabled time (the msr backend), not
    /// the time since the previous one.
    pub measured_span: bool,
    /// How rows are folded (`-A`, `--per-core`, …).
    pub aggregation: Aggregation,
    /// Keep the rows as interval CSV for `--plot`.
    pub plot: bool,
    /// `--interval-clear`: clear the terminal before each interval.
    pub clear: bool,
    /// Counting system-wide (`-a`, or no target): perf's `--per-thread`
    /// rows leave out the threads that counted nothing.
    pub system_wide: bool,
    /// `--metric-only` (perf's layout: its metric-only lines).
    pub metric_only: bool,
}

/// What an [`IntervalWriter`] leaves when the run is over.
#[derive(Debug, Default)]
pub struct IntervalEnd {
    /// The rows as interval CSV, for `--plot`.
    pub plot: Option<String>,
    /// The first write error; nothing more was written after it.
    pub error: Option<std::io::Error>,
}

/// Writes interval rows as they are measured: rows refilled in place and
/// formatted into reused buffers, one write (and flush) per interval.
/// Without `-M` and in CSV or JSON, a warm writer allocates nothing.
pub struct IntervalWriter<'a> {
    out: &'a mut dyn Write,
    topo: Option<&'a Topology>,
    metrics: Option<&'a StatMetrics>,
    format: StatFormat,
    /// Seconds added to the time stamps (the epoch with absolute ones).
    epoch0: f64,
    measured_span: bool,
    clear: bool,
    /// The end of the previous interval, since the start.
    last_at: Duration,
    aggregator: Aggregator,
    csv: Option<IntervalCsv>,
    json: IntervalJson,
    perf: Option<PerfIntervals>,
    plot_csv: IntervalCsv,
    end: IntervalEnd,
}

impl<'a> IntervalWriter<'a> {
    /// A writer to `out`; `topo` places CPUs in cores and sockets,
    /// `metrics` adds `-M`'s lines to every interval.
    pub fn new(
        out: &'a mut dyn Write,
        options: IntervalOptions,
        topo: Option<&'a Topology>,
        metrics: Option<&'a StatMetrics>,
    ) -> IntervalWriter<'a> {
        let epoch0 = match options.absolute_time {
            true => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            false => 0.0,
        };
        let csv = match &options.format {
            StatFormat::Csv(sep) => Some(IntervalCsv::new(sep)),
            _ => None,
        };
        let perf = match &options.format {
            StatFormat::Perf(form) => {
                let mut o = PerfOptions::new(form.clone());
                o.system_wide = options.system_wide;
                o.metric_only = options.metric_only;
                Some(PerfIntervals::new(o))
            }
            _ => None,
        };
        IntervalWriter {
            perf,
            out,
            topo,
            metrics,
            format: options.format,
            epoch0,
            measured_span: options.measured_span,
            clear: options.clear,
            last_at: Duration::ZERO,
            aggregator: Aggregator::new(options.aggregation),
            csv,
            json: IntervalJson::new(),
            plot_csv: IntervalCsv::new(","),
            end: IntervalEnd {
                plot: options.plot.then(String::new),
                error: None,
            },
        }
    }

    /// Write one interval of `plan`.
    pub fn write(&mut self, plan: &StatPlan, t: &Tick) {
        if self.end.error.is_some() {
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
        // pmx's forms stamp an interval with its boundary on the grid (the
        // counts are those of the boundary); perf's with the time it read.
        let at = match self.format {
            StatFormat::Perf(_) => t.read_at,
            _ => t.at,
        };
        let iv = IntervalRows {
            time: self.epoch0 + at.as_secs_f64(),
            plan,
            status: t.status,
            rows,
            metrics: &metric_lines,
        };
        let owned;
        let text: &str = match (&self.format, self.csv.as_mut()) {
            (StatFormat::Perf(_), _) => {
                let report = iv.to_report();
                owned = match self.perf.as_mut() {
                    Some(p) => {
                        p.options_mut().comms = pmx::stat::thread_comms(rows);
                        p.format(&report, span.as_secs_f64())
                    }
                    None => String::new(),
                };
                &owned
            }
            (StatFormat::Json, _) => self.json.format(&iv),
            (StatFormat::Csv(_), Some(csv)) => csv.format(&iv),
            _ => {
                owned = interval_table(&iv);
                &owned
            }
        };
        if let Some(p) = self.end.plot.as_mut() {
            p.push_str(self.plot_csv.format(&iv));
        }
        // One write per interval, flushed before the next starts.
        let clear: &[u8] = if self.clear { b"\x1b[H\x1b[2J" } else { b"" };
        if let Err(e) = self
            .out
            .write_all(clear)
            .and_then(|_| self.out.write_all(text.as_bytes()))
            .and_then(|_| self.out.flush())
        {
            self.end.error = Some(e);
        }
    }

    /// The rows kept for `--plot` and the first write error.
    pub fn finish(self) -> IntervalEnd {
        self.end
    }
}

/// The report of `summary` about `target`: rows, `-M` metrics (and their
/// notes after the summary's), and `notes` first.
pub fn compose<'a>(
    target: String,
    plan: &'a StatPlan,
    summary: Summary,
    metrics: Option<&StatMetrics>,
    notes: Vec<String>,
) -> StatReport<'a> {
    let mut report = StatReport {
        target,
        plan,
        status: summary.status,
        rows: summary.rows,
        spreads: summary.spreads,
        repeats: summary.repeats,
        runs: summary.runs,
        elapsed: summary.elapsed,
        exit: summary.exit,
        interrupted: summary.interrupted,
        notes: summary.notes,
        metrics: Vec::new(),
        metric_repeats: Vec::new(),
    };
    if let Some(m) = metrics {
        report.metrics = m.evaluate(plan, &report.status, &report.rows, report.elapsed);
        report.metric_repeats = metric_repeats(m, plan, &report, &summary.per_run);
        report.notes.extend(m.notes.iter().cloned());
    }
    report.notes.splice(0..0, notes);
    report
}

/// Each metric of `report` in every run of `per_run` (empty with one
/// run): the metrics evaluated over that run's rows, matched by name and
/// domain.
fn metric_repeats(
    m: &StatMetrics,
    plan: &StatPlan,
    report: &StatReport,
    per_run: &[(Vec<Row>, Duration)],
) -> Vec<Vec<RunMetric>> {
    let mut out = vec![Vec::new(); report.metrics.len()];
    for (rows, elapsed) in per_run {
        let lines = m.evaluate(plan, &report.status, rows, *elapsed);
        for (i, want) in report.metrics.iter().enumerate() {
            if let Some(l) = lines
                .iter()
                .find(|l| l.name == want.name && l.domain == want.domain)
            {
                out[i].push(RunMetric {
                    value: l.value,
                    reliability: l.reliability,
                });
            }
        }
    }
    out
}

/// The totals as text; after interval rows, CSV totals are comments so
/// every data line of the file has the interval columns. `job`: JSON
/// records where it ran (host, pid, rank, job).
pub fn totals(report: &StatReport, style: &StatStyle, job: Option<&JobContext>) -> String {
    // perf's layout has its own `--metric-only` (`perf_default`).
    if style.metric_only && !matches!(style.format, StatFormat::Perf(_)) {
        if style.format == StatFormat::Table {
            return metric_only_table(report);
        }
        let mut metrics_only = report.clone();
        metrics_only.rows.clear();
        let plain = StatStyle {
            metric_only: false,
            ..style.clone()
        };
        return totals(&metrics_only, &plain, job);
    }
    if style.plain_numbers && style.format == StatFormat::Table {
        let plain = StatStyle {
            plain_numbers: false,
            ..style.clone()
        };
        return without_separators(&totals(report, &plain, job));
    }
    match &style.format {
        StatFormat::Perf(form) => perf_default(report, style, form),
        StatFormat::Json => {
            let mut doc = crate::stat::json(report);
            if let (Some(obj), Some(ctx)) = (doc.as_object_mut(), job) {
                obj.extend(ctx.json_fields());
            }
            format!("{doc}\n")
        }
        StatFormat::Csv(sep) => {
            let body = crate::stat::csv(report, sep, style.csv_header && !style.intervals);
            if !style.intervals {
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
        StatFormat::Table => crate::stat::table(report),
    }
}

/// The totals in perf's `form` with what the report knows (its target,
/// runs and elapsed time), `--metric-only` as `style` says.
fn perf_default(report: &StatReport, style: &StatStyle, form: &PerfForm) -> String {
    let mut o = PerfOptions::new(form.clone());
    o.target = report.target.clone();
    o.runs = report.runs;
    o.elapsed.0 = report.elapsed.as_secs_f64();
    o.metric_only = style.metric_only;
    perf_totals(report, style, &o)
}

/// `pmx stat -v`: what each planned event resolved to, one line each.
pub fn plan_lines(sets: &[StatPlan]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for e in sets.iter().flat_map(|p| &p.events) {
        let _ = match &e.attr {
            Ok(a) => writeln!(
                s,
                "{}: type {} config {:#x} config1 {:#x} config2 {:#x}{}{}",
                e.name,
                a.type_,
                a.config,
                a.config1,
                a.config2,
                if a.exclude_user { " exclude_user" } else { "" },
                if a.exclude_kernel {
                    " exclude_kernel"
                } else {
                    ""
                },
            ),
            Err(why) => writeln!(s, "{}: not counted: {why}", e.name),
        };
    }
    s
}

/// `--metric-only` as perf lays it out: one column per metric, its name
/// (and unit) over its value, then the elapsed time.
pub fn metric_only_table(report: &StatReport) -> String {
    use std::fmt::Write as _;
    let mut head = String::new();
    let mut values = String::new();
    for m in &report.metrics {
        let title = if m.unit.is_empty() {
            m.name.clone()
        } else {
            format!("{} {}", m.name, m.unit)
        };
        let w = title.len().max(16);
        let value = m
            .value
            .map_or("<not computed>".to_string(), |v| format!("{v:.2}"));
        let _ = write!(head, " {title:>w$}");
        let _ = write!(values, " {value:>w$}");
    }
    if report.metrics.is_empty() {
        head.push_str(" (no metrics: give -M or --topdown)");
    }
    let mut why = String::new();
    for m in report.metrics.iter().filter(|m| m.value.is_none()) {
        let _ = writeln!(why, "  {}: {}", m.name, m.missing.as_deref().unwrap_or(""));
    }
    format!(
        "\n Performance counter stats for {}:\n\n{head}\n{values}\n\n{why} {:>16.9} seconds time elapsed\n\n",
        report.target,
        report.elapsed.as_secs_f64()
    )
}

/// The table with the thousands' separators of its counts removed
/// (`--no-big-num`): a comma between a digit and three digits.
pub fn without_separators(text: &str) -> String {
    let b = text.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    text.char_indices()
        .filter(|&(i, c)| {
            !(c == ',' && i > 0 && digit(i - 1) && (1..=3).all(|k| digit(i + k)) && !digit(i + 4))
        })
        .map(|(_, c)| c)
        .collect()
}

/// perf's `--table` (with `-r`): each run's elapsed seconds and its
/// distance from the mean, before the result (perf's `print_table`).
pub fn run_table(elapsed: &[f64]) -> String {
    use std::fmt::Write as _;
    let n = elapsed.len().max(1) as f64;
    let avg = elapsed.iter().sum::<f64>() / n;
    let var = elapsed.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let sd = (var / n).sqrt();
    // perf: get_precision(sd) + 2, where get_precision is 0 above 1.
    let p = if sd > 1.0 || sd <= 0.0 {
        0
    } else {
        (-sd.log10()).ceil() as usize
    } + 2;
    let mut s = String::from("           # Table of individual measurements:\n");
    for &run in elapsed {
        let marks = 1 + ((100.0 * (run - avg) / run) as i64 / 5).unsigned_abs() as usize;
        let _ = writeln!(s, " {run:17.p$} ({:+.p$}) {}", run - avg, "#".repeat(marks));
    }
    let _ = writeln!(s, "\n           # Final result:");
    let _ = writeln!(s, " {avg:17.p$} +- {sd:.p$} seconds time elapsed\n");
    s
}

/// The totals in perf's layout (`--format perf`), with what `o` says
/// beyond the rows (perf's header target, the footer's times); after
/// interval rows only with `--summary` (`o.summary`), as perf.
pub fn perf_totals(report: &StatReport, style: &StatStyle, o: &PerfOptions) -> String {
    if style.intervals && !o.summary {
        return String::new();
    }
    let o = PerfOptions {
        intervals: style.intervals,
        ..o.clone()
    };
    pmx_formats::perf::totals(&report.to_report(), &o)
}

/// A `stat record` file's counts (`pmx stat report`, perf's `perf stat
/// report`) in perf's layout of `format`'s kind: perf's header (`'pipe'`
/// or the recording command line), rows and elapsed-time footer; a `-I`
/// file's rounds as perf's intervals, one block (or set of lines) per
/// round, without a header or totals, as `perf stat report` prints them
/// (the clocks' `CPUs utilized` left empty: the file has no wall-clock
/// time for a round, and perf prints none). `thousands`: the separator
/// of [`perf_thousands`].
pub fn stat_file(
    file: &pmx::stat_file::StatFile,
    format: StatFormat,
    thousands: Option<char>,
) -> String {
    let StatFormat::Perf(form) = format.into_perf() else {
        unreachable!("into_perf gives perf's forms")
    };
    let mut o = PerfOptions::new(form);
    o.target = file.target.clone();
    o.elapsed = (file.elapsed_s, 0.0);
    o.comms = file.comms.clone();
    o.thousands = thousands;
    if !file.intervals {
        return pmx_formats::perf::totals(&file.report, &o);
    }
    // The writer repeats perf's header every 25 rounds, as perf 6.1 does.
    let mut writer = PerfIntervals::new(o);
    let rows = &file.report.rows;
    let mut out = String::new();
    let mut start = 0;
    while start < rows.len() {
        let len = rows[start..]
            .iter()
            .take_while(|r| r.time == rows[start].time)
            .count();
        let round = pmx_formats::report::StatReport {
            rows: rows[start..start + len].to_vec(),
            ..Default::default()
        };
        out.push_str(&writer.format(&round, 0.0));
        start += len;
    }
    out
}

/// The chart of interval rows kept for `--plot`, 960 × 540, as the bytes
/// of a `format` file.
pub fn chart(rows: &str, format: crate::plot::Format) -> Result<Vec<u8>, crate::plot::PlotError> {
    use crate::plot::{render, Chart, ChartOptions, Timeline};
    let chart = Timeline::parse(rows).and_then(|t| Chart::build(&t, &ChartOptions::default()))?;
    render(&chart, format, 960, 540)
}

/// The `--regions` results, one row per region and thread, in `format`
/// (`csv_header`: with `-x`, a header line first).
pub fn regions(
    results: &RegionResults,
    format: &StatFormat,
    csv_header: bool,
) -> serde_json::Result<String> {
    Ok(match format.pmx() {
        StatFormat::Json => format!("{}\n", serde_json::to_string(results)?),
        StatFormat::Csv(sep) => results.to_csv(&sep, csv_header),
        _ => results.to_table(),
    })
}

/// `pmx stat --plot`: the interval rows kept for it (`rows`) drawn into
/// `path` as `format`, the file written through `pmx_io::write`.
pub fn draw_plot(
    path: &std::path::Path,
    format: crate::plot::Format,
    rows: &str,
) -> Result<(), String> {
    let bytes = chart(rows, format).map_err(|e| format!("--plot: {e}"))?;
    pmx_io::write(path, &bytes).map_err(|e| format!("--plot {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_formats::model::EventList;

    #[test]
    fn the_format_the_flags_name() {
        assert_eq!(
            StatFormat::from_flags(false, None, false),
            StatFormat::Table
        );
        assert_eq!(
            StatFormat::from_flags(true, Some(";"), false),
            StatFormat::Json
        );
        let csv = StatFormat::from_flags(false, Some(";"), false);
        assert_eq!(csv, StatFormat::Csv(";".into()));
        let perf = StatFormat::from_flags(false, Some(";"), true);
        assert_eq!(perf, StatFormat::Perf(PerfForm::Csv(";".into())));
        assert_eq!(
            StatFormat::from_flags(false, None, true),
            StatFormat::Perf(PerfForm::Text)
        );
    }

    fn style(format: StatFormat, intervals: bool, csv_header: bool) -> StatStyle {
        StatStyle {
            format,
            intervals,
            csv_header,
            metric_only: false,
            plain_numbers: false,
        }
    }

    fn report(plan: &EventList) -> StatReport<'_> {
        StatReport {
            target: "'true'".into(),
            plan,
            status: vec![EventStatus::Counted],
            rows: Vec::new(),
            spreads: Vec::new(),
            repeats: Vec::new(),
            runs: 1,
            elapsed: Duration::from_millis(1500),
            exit: None,
            interrupted: false,
            notes: Vec::new(),
            metrics: Vec::new(),
            metric_repeats: Vec::new(),
        }
    }

    #[test]
    fn the_interval_header_is_only_for_interval_csv_with_header() {
        let csv = StatFormat::Csv(";".into());
        let header = style(csv.clone(), true, true).interval_header().unwrap();
        assert!(header.starts_with("time;domain;value"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(style(csv.clone(), false, true).interval_header(), None);
        assert_eq!(style(csv, true, false).interval_header(), None);
        assert_eq!(style(StatFormat::Json, true, true).interval_header(), None);
        assert_eq!(style(StatFormat::Table, true, true).interval_header(), None);
    }

    #[test]
    fn csv_totals_after_intervals_are_comments() {
        let plan = EventList {
            events: vec![("task-clock".into(), Some("msec".into()), 0)],
        };
        let r = report(&plan);
        let csv = StatFormat::Csv(",".into());
        let plain = totals(&r, &style(csv.clone(), false, true), None);
        assert_eq!(plain, crate::stat::csv(&r, ",", true));
        let after = totals(&r, &style(csv, true, true), None);
        let mut lines = after.lines();
        assert_eq!(lines.next(), Some("# totals over 1.500000 s"));
        let body: Vec<&str> = lines.collect();
        // The header is not repeated after the interval header.
        let expect: Vec<String> = crate::stat::csv(&r, ",", false)
            .lines()
            .map(|l| format!("# {l}"))
            .collect();
        assert_eq!(body, expect);
    }

    #[test]
    fn json_and_table_totals_are_the_writers_own() {
        let plan = EventList::default();
        let r = report(&plan);
        let json = totals(&r, &style(StatFormat::Json, false, false), None);
        assert_eq!(json, format!("{}\n", crate::stat::json(&r)));
        let table = totals(&r, &style(StatFormat::Table, true, false), None);
        assert_eq!(table, crate::stat::table(&r));
    }

    #[test]
    fn json_totals_record_the_job() {
        let plan = EventList::default();
        let r = report(&plan);
        let ctx = JobContext::current().unwrap();
        let json = totals(&r, &style(StatFormat::Json, false, false), Some(&ctx));
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(doc["pid"], serde_json::json!(ctx.pid));
        assert!(doc.get("host").is_some());
    }
}
