//! `pmx stat`: count events for a command, processes, threads or CPUs.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::stat::{
    self, Aggregation, EventStatus, Row, RunOptions, Scope, Spread, StatPlan, StatRun,
};
use pmx_output::stat::StatReport;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `pmx stat`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when counting failed."
)]
pub struct StatArgs {
    /// Events: names, pmu/…/ forms, raw rNNN, {a,b} groups; repeatable.
    /// Default: perf's set (task-clock, context-switches, cpu-migrations,
    /// page-faults, cycles, instructions, branches, branch-misses).
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Count these processes (every thread), comma-separated pids.
    #[arg(short = 'p', long = "pid", value_name = "PID,…", conflicts_with_all = ["tid", "all_cpus", "cpus"])]
    pub pid: Option<String>,
    /// Count these threads, comma-separated tids.
    #[arg(short = 't', long = "tid", value_name = "TID,…", conflicts_with_all = ["all_cpus", "cpus"])]
    pub tid: Option<String>,
    /// Count every task on every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Count every task on these CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SEC")]
    pub duration: Option<f64>,
    /// Pin the launched command to these CPUs.
    #[arg(long, value_name = "LIST")]
    pub pin: Option<String>,
    /// Do not count the command's children.
    #[arg(long = "no-inherit")]
    pub no_inherit: bool,
    /// One row per CPU.
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// One row per physical core.
    #[arg(long = "per-core", conflicts_with_all = ["no_aggr", "per_socket", "per_thread"])]
    pub per_core: bool,
    /// One row per package.
    #[arg(long = "per-socket", conflicts_with_all = ["no_aggr", "per_thread"])]
    pub per_socket: bool,
    /// One row per thread (-p/-t).
    #[arg(long = "per-thread", conflicts_with = "no_aggr")]
    pub per_thread: bool,
    /// Run the command N times: mean, standard deviation, spread.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// CSV with this separator (columns: see the README).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
    /// Print a header line in CSV output.
    #[arg(long = "csv-header")]
    pub csv_header: bool,
    /// JSON output.
    #[arg(long, conflicts_with = "separator")]
    pub json: bool,
    /// Print the counts every MS milliseconds (at least 1): one row per
    /// interval (per CPU with -A), written as it is measured.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval: Option<u64>,
    /// Stop after N intervals.
    #[arg(long = "interval-count", value_name = "N", requires = "interval")]
    pub interval_count: Option<u64>,
    /// Interval time stamps: relative (seconds since the start) or absolute
    /// (seconds since the epoch).
    #[arg(long, value_name = "KIND", default_value = "relative", value_parser = ["relative", "absolute"])]
    pub timestamps: String,
    /// With -I: also draw the intervals as a chart (.svg or .png).
    #[arg(long, value_name = "OUT", requires = "interval")]
    pub plot: Option<PathBuf>,
    /// Derived metrics to compute beside the counts: names or groups
    /// (IPC, CPI, TopdownL1, …), comma-separated. Without -e, only their
    /// inputs are counted.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// How to reach the counters: perf (perf_event_open, default) or msr
    /// (program the PMU directly through /dev/cpu/N/msr; needs -a or -C).
    #[arg(long, value_name = "KIND", default_value = "perf", value_parser = ["perf", "msr"])]
    pub backend: String,
    /// With --backend msr: program the counters even if something else has
    /// them enabled.
    #[arg(long)]
    pub force: bool,
    /// With --backend msr: where the msr devices are (default /dev/cpu).
    #[arg(long, value_name = "DIR", hide = true)]
    pub msr_root: Option<PathBuf>,
    /// Never multiplex: when the events do not fit the counters at once, run
    /// the command once per set that fits and merge the results.
    #[arg(long = "no-multiplex")]
    pub no_multiplex: bool,
    /// Write the report to FILE instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also report the command's regions (pmx::region, pmx.h) per region
    /// and thread, counting the -e events and -M metrics.
    #[arg(long)]
    pub regions: bool,
    #[command(flatten)]
    pub db: DbArgs,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl StatArgs {
    /// How rows are folded: -A, --per-core, --per-socket, --per-thread.
    pub(crate) fn aggregation(&self) -> Aggregation {
        if self.no_aggr {
            Aggregation::PerCpu
        } else if self.per_core {
            Aggregation::PerCore
        } else if self.per_socket {
            Aggregation::PerSocket
        } else if self.per_thread {
            Aggregation::PerThread
        } else {
            Aggregation::Total
        }
    }
}

pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    if args.regions && !crate::regions::active() {
        return crate::regions::run(args);
    }
    if args.backend == "msr" {
        return crate::stat_msr::run(args);
    }
    if args.repeat == 0 {
        return Err(UsageError("-r 0: give at least one run".to_string()).into());
    }
    let (groups, metrics, db) = crate::stat_metrics::event_groups(args, stat::DEFAULT_EVENTS)?;
    let scope = crate::target::scope(
        &crate::target::TargetFlags {
            pid: args.pid.as_deref(),
            tid: args.tid.as_deref(),
            cpus: args.cpus.as_deref(),
            all_cpus: args.all_cpus,
            command: &args.command,
        },
        "count",
    )?;
    let trace_tasks = args.per_thread && scope == Scope::Command;
    if args.per_thread && matches!(scope, Scope::Cpus(_)) {
        return Err(UsageError(
            "--per-thread needs -p, -t or a command (-a/-C count CPUs, not threads)".to_string(),
        )
        .into());
    }
    if trace_tasks && (args.interval.is_some() || args.duration.is_some()) {
        return Err(UsageError(
            "--per-thread with a command counts until the command ends: drop -I/--duration"
                .to_string(),
        )
        .into());
    }
    if trace_tasks && args.no_inherit {
        return Err(UsageError(
            "--per-thread with a command follows every thread and child; --no-inherit contradicts it".to_string(),
        )
        .into());
    }
    if args.repeat > 1 && args.command.is_empty() && args.duration.is_none() {
        return Err(UsageError("-r needs a command or --duration".to_string()).into());
    }
    let duration = crate::target::duration(args.duration)?;
    let pin = match &args.pin {
        Some(p) => Some(crate::target::cpu_list("--pin", p)?),
        None => None,
    };
    let how = args.aggregation();
    if matches!(
        how,
        Aggregation::PerCpu | Aggregation::PerCore | Aggregation::PerSocket
    ) && !matches!(scope, Scope::Cpus(_))
    {
        return Err(UsageError("-A/--per-core/--per-socket need -a or -C".to_string()).into());
    }
    let mut plan = args.db.plan(&groups, db.as_ref())?;
    let budget = pmx::schedule::CounterBudget::this_cpu();
    let mut notes = Vec::new();
    if let Some(b) = &budget {
        notes.extend(plan.pack(b));
    }
    plan.group_software();
    let topo = if matches!(how, Aggregation::PerCore | Aggregation::PerSocket) {
        let mut problems = Vec::new();
        Some(pmx_sys::topology::read_topology(
            &pmx_sys::SysRoot::host(),
            &mut problems,
        ))
    } else {
        None
    };
    let interval = match args.interval {
        Some(0) => {
            return Err(UsageError("-I 0: the interval must be at least 1 ms".to_string()).into())
        }
        Some(ms) => {
            if ms < 10 {
                eprintln!("pmx stat: warning: -I {ms}: intervals under 10 ms cost noticeable CPU time and perturb what is measured");
            }
            if args.repeat > 1 {
                return Err(UsageError("-I and -r cannot be combined".to_string()).into());
            }
            Some(Duration::from_millis(ms))
        }
        None => None,
    };
    let opts = RunOptions {
        scope: scope.clone(),
        command: args.command.clone(),
        inherit: !args.no_inherit,
        pin,
        duration,
        interval,
        interval_count: args.interval_count,
        trace_tasks,
    };
    let sets = match (&budget, args.no_multiplex) {
        (Some(b), true) => plan.run_sets(b),
        _ => vec![plan.clone()],
    };
    if args.no_multiplex {
        match (&budget, sets.len()) {
            (None, _) => notes.push(
                "--no-multiplex: this CPU's counters are unknown (no PMU described by CPUID), so everything ran at once".to_string(),
            ),
            (Some(_), 1) => notes.push("--no-multiplex: every event fit the counters at once: 1 run".to_string()),
            (Some(_), n) => notes.push(format!(
                "--no-multiplex: the events need {n} counter sets, so the command ran {n} times{} and the results were merged",
                if args.repeat > 1 { " per repeat" } else { "" }
            )),
        }
        if sets.len() > 1 && interval.is_some() {
            return Err(UsageError(
                "--no-multiplex with several counter sets cannot print intervals".to_string(),
            )
            .into());
        }
        if sets.len() > 1 && args.command.is_empty() {
            return Err(UsageError(
                "--no-multiplex with several counter sets needs a command to run once per set"
                    .to_string(),
            )
            .into());
        }
    }
    let mut out: Box<dyn Write> = match &args.output {
        Some(pattern) => {
            // %h %p %r %j: one file per host, process, rank, job.
            let path = crate::outpath::expand_path(pattern)?;
            Box::new(
                std::fs::File::create(&path)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            )
        }
        None => Box::new(std::io::stderr()),
    };
    let sep = args.separator.clone();
    let absolute = args.timestamps == "absolute";
    let epoch0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut write_err: Option<std::io::Error> = None;
    let plot_format = match &args.plot {
        Some(path) => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            Some(
                pmx_output::plot::Format::from_extension(ext).ok_or_else(|| {
                    UsageError(format!(
                        "--plot {}: give a .svg or .png file name",
                        path.display()
                    ))
                })?,
            )
        }
        None => None,
    };
    // The rows for --plot, kept as interval CSV.
    let mut plot_rows = String::new();
    if interval.is_some() && args.csv_header {
        if let Some(sep) = &sep {
            out.write_all(pmx_output::stat::interval_csv_header(sep).as_bytes())?;
        }
    }
    stat::install_signal_handlers();
    let mut runs: Vec<StatRun> = Vec::new();
    for _ in 0..args.repeat {
        let mut set_runs = Vec::new();
        let mut failed = None;
        for set in &sets {
            let mut last_at = Duration::ZERO;
            // Built once per run: every interval refills them in place.
            let mut aggregator = stat::Aggregator::new(how);
            let mut csv = sep.as_deref().map(pmx_output::stat::IntervalCsv::new);
            let mut plot_csv = pmx_output::stat::IntervalCsv::new(",");
            let mut json = pmx_output::stat::IntervalJson::new();
            let mut on_tick = |t: &stat::Tick| {
                if write_err.is_some() {
                    return;
                }
                let rows = aggregator.rows(set, t.instances, topo.as_ref());
                let time = if absolute {
                    epoch0 + t.at.as_secs_f64()
                } else {
                    t.at.as_secs_f64()
                };
                let interval = t.at.saturating_sub(last_at);
                last_at = t.at;
                let metric_lines = match &metrics {
                    Some(m) => m.evaluate(set, t.status, rows, interval),
                    None => Vec::new(),
                };
                let iv = pmx_output::stat::IntervalRows {
                    time,
                    plan: set,
                    status: t.status,
                    rows,
                    metrics: &metric_lines,
                };
                let owned;
                let text: &str = if args.json {
                    json.format(&iv)
                } else if let Some(csv) = csv.as_mut() {
                    csv.format(&iv)
                } else {
                    owned = pmx_output::stat::interval_table(&iv);
                    &owned
                };
                if plot_format.is_some() {
                    plot_rows.push_str(plot_csv.format(&iv));
                }
                // One write per interval, flushed before the next starts.
                if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                    write_err = Some(e);
                }
            };
            match stat::run_with(set, &opts, &mut on_tick) {
                Ok(r) => {
                    let stop = r.interrupted;
                    set_runs.push(r);
                    if stop || stat::stop_requested() {
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let result = match failed {
            Some(e) => Err(e),
            None => Ok(stat::merge_runs(&sets[..set_runs.len()], set_runs)),
        };
        match result {
            Ok(r) => {
                let stop = r.interrupted;
                runs.push(r);
                if stop || stat::stop_requested() {
                    break;
                }
            }
            Err(stat::RunError::Exec { cmd, reason }) => {
                eprintln!("pmx stat: cannot run '{cmd}': {reason}");
                return Ok(127);
            }
            Err(stat::RunError::Open(msg)) => anyhow::bail!("{msg}"),
            Err(stat::RunError::Io(e)) => return Err(e.into()),
        }
    }
    let mut report = build_report(args, &plan, &runs, how, topo.as_ref(), &scope);
    if let Some(m) = &metrics {
        report.metrics = m.evaluate(&plan, &report.status, &report.rows, report.elapsed);
        report.notes.extend(m.notes.iter().cloned());
    }
    report.notes.splice(0..0, notes);
    if let Some(e) = write_err {
        return Err(anyhow::anyhow!("writing the interval rows: {e}"));
    }
    let text = if args.json {
        let mut doc = pmx_output::stat::json(&report);
        crate::outpath::add_job_fields(&mut doc);
        format!("{doc}\n")
    } else if let Some(sep) = &args.separator {
        let body = pmx_output::stat::csv(&report, sep, args.csv_header && interval.is_none());
        if interval.is_some() {
            // Totals after interval rows are comments, so every data line
            // of the file has the interval columns.
            let mut t = format!("# totals over {:.6} s\n", report.elapsed.as_secs_f64());
            for l in body.lines() {
                t.push_str("# ");
                t.push_str(l);
                t.push('\n');
            }
            t
        } else {
            body
        }
    } else {
        pmx_output::stat::table(&report)
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if let (Some(path), Some(format)) = (&args.plot, plot_format) {
        draw(&plot_rows, path, format)?;
    }
    let code = runs
        .last()
        .and_then(|r| r.exit)
        .map(|e| e.shell_code())
        .unwrap_or(0);
    Ok(code)
}

/// Draw the interval rows collected for `--plot`.
pub(crate) fn draw(
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

pub(crate) fn build_report<'a>(
    args: &StatArgs,
    plan: &'a StatPlan,
    runs: &[StatRun],
    how: Aggregation,
    topo: Option<&pmx_model::topology::Topology>,
    scope: &Scope,
) -> StatReport<'a> {
    let per_run: Vec<Vec<Row>> = runs
        .iter()
        .map(|r| stat::aggregate(plan, &r.instances, how, topo))
        .collect();
    let last = runs.last().expect("at least one run");
    let mut rows = per_run.last().cloned().unwrap_or_default();
    let mut spreads = vec![None; rows.len()];
    if runs.len() > 1 {
        for (j, row) in rows.iter_mut().enumerate() {
            let values: Vec<f64> = per_run
                .iter()
                .filter_map(|rs| {
                    rs.iter()
                        .find(|r| r.event == row.event && r.domain == row.domain)
                })
                .filter_map(|r| r.value)
                .collect();
            if let Some(sp) = Spread::of(&values) {
                row.value = Some(sp.mean);
                spreads[j] = Some(sp);
            }
        }
    }
    // The status of an event: counted if it counted in any run.
    let mut status = last.status.clone();
    for r in runs {
        for (i, s) in r.status.iter().enumerate() {
            if *s == EventStatus::Counted {
                status[i] = EventStatus::Counted;
            }
        }
    }
    let elapsed = runs.iter().map(|r| r.elapsed).sum::<Duration>() / runs.len() as u32;
    let target = match scope {
        Scope::Command => format!("'{}'", args.command.join(" ")),
        Scope::Pids(p) => format!(
            "process id {}",
            p.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        Scope::Tids(t) => format!(
            "thread id {}",
            t.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        Scope::Cpus(c) => {
            let list = pmx_model::topology::format_cpu_list(c);
            if args.command.is_empty() {
                format!("CPUs {list}")
            } else {
                format!("CPUs {list} while running '{}'", args.command.join(" "))
            }
        }
    };
    let mut notes = Vec::new();
    if runs.len() < args.repeat as usize {
        notes.push(format!(
            "stopped after {} of {} runs",
            runs.len(),
            args.repeat
        ));
    }
    StatReport {
        target,
        plan,
        status,
        rows,
        spreads,
        runs: runs.len(),
        elapsed,
        exit: last.exit,
        interrupted: runs.iter().any(|r| r.interrupted),
        notes,
        metrics: Vec::new(),
    }
}
