//! `pmx stat --backend msr`: counting by programming the PMU through the
//! msr devices (`/dev/cpu/N/msr`) instead of `perf_event_open`.
//!
//! The session is the library's ([`pmx::stat_msr`]: resolving the events
//! to register encodings, the "counters in use" checks, `--force`, the
//! held command, the read loop, energy, restoring every register). This
//! module checks the flags, selects the CPUs, turns the flags into
//! [`MsrRunOptions`], and renders what the session gives back with the
//! perf backend's renderers (table, CSV, JSON, intervals, `--plot`, `-M`):
//! the session's [`pmx::stat::StatRun`] has the same shape, one
//! `Count { value: delta, enabled: ns, running: ns }` per counter per CPU.

use crate::exit::UsageError;
use crate::msr::msr_cpus;
use crate::stat::{build_report, draw, StatArgs};
use pmx::stat::{Aggregation, Scope, StatPlan, Tick};
use pmx::stat_msr::{pmu_counters, Error, MsrEvents, MsrRunOptions};
use pmx_model::topology::{parse_cpu_list, Topology};
use pmx_msr::{MsrError, MsrRoot};
use pmx_output::stat::{IntervalRows, StatReport};
use pmx_sys::SysRoot;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The events counted when `-e` is not given: the hardware part of perf's
/// default set (the software events are the kernel's, not the PMU's).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,branches,branch-misses";

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// How rows are written.
enum Format {
    Table,
    Csv(String),
    Json,
}

/// The flags, checked.
struct Options {
    duration: Option<Duration>,
    interval: Option<Duration>,
    how: Aggregation,
    format: Format,
    plot: Option<(PathBuf, pmx_output::plot::Format)>,
}

fn options(args: &StatArgs) -> anyhow::Result<Options> {
    if args.pid.is_some() || args.tid.is_some() {
        return Err(usage(
            "--backend msr counts CPUs, not tasks: it programs each CPU's counters and cannot follow a process from CPU to CPU; use -a or -C LIST (with the command after --), or --backend perf for -p/-t",
        ));
    }
    if args.per_thread {
        return Err(usage(
            "--per-thread needs per-thread counters, and --backend msr counts CPUs; use --backend perf",
        ));
    }
    if args.repeat != 1 {
        return Err(usage(
            "-r: --backend msr counts one run; repeat the command yourself or use --backend perf",
        ));
    }
    if !args.all_cpus && args.cpus.is_none() {
        return Err(usage(
            "--backend msr counts CPUs: give -a or -C LIST (a command after -- runs pinned to them)",
        ));
    }
    let duration = crate::target::duration(args.duration)?;
    let interval = match args.interval {
        Some(0) => return Err(usage("-I 0: the interval must be at least 1 ms")),
        Some(ms) => {
            if ms < 10 {
                eprintln!("pmx stat: warning: -I {ms}: intervals under 10 ms cost noticeable CPU time and perturb what is measured");
            }
            Some(Duration::from_millis(ms))
        }
        None => None,
    };
    let how = args.aggregation();
    let format = if args.json {
        Format::Json
    } else if let Some(sep) = &args.separator {
        Format::Csv(sep.clone())
    } else {
        Format::Table
    };
    let plot = match &args.plot {
        Some(path) => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let f = pmx_output::plot::Format::from_extension(ext).ok_or_else(|| {
                usage(format!(
                    "--plot {}: give a .svg or .png file name",
                    path.display()
                ))
            })?;
            Some((path.clone(), f))
        }
        None => None,
    };
    Ok(Options {
        duration,
        interval,
        how,
        format,
        plot,
    })
}

// ---------------------------------------------------------------------------
// Devices and errors.

fn msr_root(args: &StatArgs) -> MsrRoot {
    let root = match &args.msr_root {
        Some(dir) if dir != Path::new(MsrRoot::DEFAULT_DIR) => MsrRoot::new(dir),
        _ => MsrRoot::host(),
    };
    match &args.db.sysfs_root {
        Some(r) => root.with_sysfs(r.join("sys")),
        None => root,
    }
}

/// A device error in one sentence; without the driver, point at perf.
fn device_error(e: MsrError) -> anyhow::Error {
    match e {
        MsrError::DriverNotLoaded { path } => anyhow::anyhow!(
            "{}: not found — load the msr driver (modprobe msr) or use --backend perf",
            path.display()
        ),
        other => other.into(),
    }
}

/// The session's error as the CLI reports it: events and plans are bad
/// input; device errors in one sentence.
fn session_error(e: Error) -> anyhow::Error {
    match e {
        Error::Event(_) | Error::Plan(_) => usage(e.to_string()),
        Error::Device(e) => device_error(e),
        Error::Read(e) => device_error(e).context("reading the counters"),
        other => anyhow::anyhow!("{other}"),
    }
}

// ---------------------------------------------------------------------------
// Rendering.

/// Writes interval rows as they are measured.
struct IntervalWriter<'a> {
    out: &'a mut dyn Write,
    plan: &'a StatPlan,
    how: Aggregation,
    topo: &'a Topology,
    format: &'a Format,
    /// Seconds added to the time stamps (the epoch with absolute ones).
    epoch0: f64,
    /// The rows as interval CSV, for `--plot`.
    plot: Option<String>,
    error: Option<std::io::Error>,
    /// `-M`: metrics computed for every interval.
    metrics: Option<&'a crate::stat_metrics::MetricSetup>,
    /// The end of the previous interval, since the start.
    last_at: Duration,
}

impl IntervalWriter<'_> {
    fn write(&mut self, t: &Tick) {
        // The interval's measured length: every msr instance's enabled
        // time.
        let span = t.instances.first().map_or_else(
            || t.at.saturating_sub(self.last_at),
            |i| Duration::from_nanos(i.count.enabled),
        );
        self.last_at = t.at;
        if self.error.is_some() {
            return;
        }
        let rows = pmx::stat::aggregate(self.plan, t.instances, self.how, Some(self.topo));
        let metric_lines = match self.metrics {
            Some(m) => m.evaluate(self.plan, t.status, &rows, span),
            None => Vec::new(),
        };
        let iv = IntervalRows {
            time: self.epoch0 + t.at.as_secs_f64(),
            plan: self.plan,
            status: t.status,
            rows: &rows,
            metrics: &metric_lines,
        };
        let text = match self.format {
            Format::Json => pmx_output::stat::interval_json(&iv),
            Format::Csv(sep) => pmx_output::stat::interval_csv(&iv, sep),
            Format::Table => pmx_output::stat::interval_table(&iv),
        };
        if let Some(p) = self.plot.as_mut() {
            p.push_str(&pmx_output::stat::interval_csv(&iv, ","));
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

/// Run `pmx stat --backend msr`.
pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let o = options(args)?;
    let (groups, metrics, db) = crate::stat_metrics::event_groups(args, DEFAULT_EVENTS)?;
    let target = args.db.target()?;
    let Some(arch) = target.arch() else {
        return Err(usage(format!(
            "{} is not an x86 CPU: the msr backend programs Intel and AMD PMUs",
            target.cpu
        )));
    };
    let db = match db {
        Some(db) => Some(db),
        None if pmx::stat_msr::needs_database(&groups) => Some(args.db.load()?),
        None => None,
    };
    let events = MsrEvents::resolve(&groups, db.as_ref(), arch).map_err(session_error)?;
    let sys = args
        .db
        .sysfs_root
        .as_ref()
        .map(SysRoot::new)
        .unwrap_or_default();
    let topo = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
    let root = msr_root(args);
    let cpus = msr_cpus(args.cpus.as_deref(), "-C", &topo, &root)?;
    let pmu = pmu_counters(&target, arch);
    let mut stat = events.plan(&cpus, &pmu, &topo).map_err(session_error)?;
    let pin = match &args.pin {
        Some(p) => parse_cpu_list(p).map_err(|e| usage(format!("--pin {p}: {e}")))?,
        None => cpus.clone(),
    };

    // The output first: a bad -o path fails before any register changes.
    let mut out: Box<dyn Write> = match &args.output {
        Some(pattern) => {
            let path = crate::outpath::expand_path(pattern)?;
            Box::new(
                std::fs::File::create(&path)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            )
        }
        None => Box::new(std::io::stderr()),
    };

    let running = stat
        .start(&MsrRunOptions {
            root,
            sys,
            force: args.force,
            command: args.command.clone(),
            pin: Some(pin),
            duration: o.duration,
            interval: o.interval,
            interval_count: args.interval_count,
        })
        .map_err(session_error)?;
    let stat_plan = &stat.plan;

    if o.interval.is_some() && args.csv_header {
        if let Format::Csv(sep) = &o.format {
            out.write_all(pmx_output::stat::interval_csv_header(sep).as_bytes())?;
        }
    }
    let epoch0 = if args.timestamps == "absolute" {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    } else {
        0.0
    };
    let mut intervals = IntervalWriter {
        out: &mut *out,
        plan: stat_plan,
        how: o.how,
        topo: &topo,
        format: &o.format,
        epoch0,
        plot: o.plot.as_ref().map(|_| String::new()),
        error: None,
        metrics: metrics.as_ref(),
        last_at: Duration::ZERO,
    };
    let result = running.run(&mut |t| intervals.write(t));
    let plot_rows = intervals.plot.take();
    let write_err = intervals.error.take();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(Error::Exec { cmd, reason }) => {
            eprintln!("pmx stat: cannot run '{cmd}': {reason}");
            return Ok(127);
        }
        Err(e) => return Err(session_error(e)),
    };

    let exit = outcome.run.exit;
    let scope = Scope::Cpus(cpus.clone());
    let runs = [outcome.run];
    let mut report: StatReport = build_report(args, stat_plan, &runs, o.how, Some(&topo), &scope);
    if let Some(m) = &metrics {
        report.metrics = m.evaluate(stat_plan, &report.status, &report.rows, report.elapsed);
        report.notes.extend(m.notes.iter().cloned());
    }
    report.notes.splice(0..0, outcome.notes);
    if let Some(e) = write_err {
        return Err(anyhow::anyhow!("writing the interval rows: {e}"));
    }
    let text = match &o.format {
        Format::Json => format!("{}\n", pmx_output::stat::json(&report)),
        Format::Csv(sep) => {
            let body = pmx_output::stat::csv(&report, sep, args.csv_header && o.interval.is_none());
            if o.interval.is_some() {
                // Totals after interval rows are comments, so every data
                // line has the interval columns.
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
        }
        Format::Table => pmx_output::stat::table(&report),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if let Some(e) = outcome.restore_error {
        return Err(device_error(e).context("putting the PMU registers back"));
    }
    if let (Some((path, format)), Some(rows)) = (&o.plot, plot_rows) {
        draw(&rows, path, *format)?;
    }
    Ok(exit.map(|e| e.shell_code()).unwrap_or(0))
}
