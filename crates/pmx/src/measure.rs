//! Count a command in one call: `pmx stat`'s session (plan, then
//! [`Session`]: fit → run → summarize) with its defaults, for programs and bindings (the Python
//! package's `pmx.stat`) that want the totals as values, not a rendered
//! report.
//!
//! ```
//! use pmx::measure::{count_command, CommandOptions};
//! let r = count_command(&CommandOptions {
//!     command: vec!["true".into()],
//!     events: vec!["task-clock,page-faults".into()],
//!     ..Default::default()
//! })?;
//! assert_eq!(r.events[0].name, "task-clock");
//! assert!(r.events[1].count.value > 0, "exec faults pages in");
//! assert_eq!(r.exit_code, Some(0));
//! # Ok::<(), pmx::measure::MeasureError>(())
//! ```

use crate::counters::{full_database, plan_groups, Error};
use crate::metrics::{MetricSet, MetricValue};
use crate::stat::{self, Aggregation, EventStatus, RunError, RunOptions, Session, SessionOptions};
use pmx_model::count::Count;
use std::time::Duration;

/// What to count.
#[derive(Debug, Clone)]
pub struct CommandOptions {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// `-e` lists; empty: `pmx stat`'s default events.
    pub events: Vec<String>,
    /// Runs (at least 1); with more, values are the means.
    pub repeat: u32,
    /// Metrics to compute (`-M`), their inputs added to the events.
    pub metrics: Option<String>,
}

impl Default for CommandOptions {
    fn default() -> CommandOptions {
        CommandOptions {
            command: Vec::new(),
            events: Vec::new(),
            repeat: 1,
            metrics: None,
        }
    }
}

/// One event's total.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTotal {
    /// The event as given.
    pub name: String,
    /// Raw value, enabled and running times (of the last run).
    pub count: Count,
    /// Scaled for multiplexing, in the event's unit (the mean over
    /// runs); `None` when not counted.
    pub value: Option<f64>,
    /// Unit of `value` (`msec` for the clocks).
    pub unit: Option<String>,
    /// Counted, or why not.
    pub status: EventStatus,
}

/// The totals of [`count_command`].
#[derive(Debug, Clone)]
pub struct CommandCounts {
    /// Per event, in the order given (metric inputs last).
    pub events: Vec<EventTotal>,
    /// The metrics asked for.
    pub metrics: Vec<MetricValue>,
    /// The mean wall-clock time of a run.
    pub elapsed: Duration,
    /// How many runs there were.
    pub runs: usize,
    /// The last run's exit code (`None`: killed by a signal).
    pub exit_code: Option<i32>,
}

/// Why a command could not be counted.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// Bad events or metrics, or nothing could be opened.
    #[error(transparent)]
    Counters(#[from] Error),
    /// The command could not run, or a read failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// No command, or no run.
    #[error("{0}")]
    Usage(String),
}

/// Count `opts.command` as `pmx stat -e … -r … -M … -- command` does and
/// return the totals.
pub fn count_command(opts: &CommandOptions) -> Result<CommandCounts, MeasureError> {
    if opts.command.is_empty() || opts.repeat == 0 {
        return Err(MeasureError::Usage(
            "give a command and at least one run".into(),
        ));
    }
    let mut groups = Vec::new();
    let default = [stat::host_default_events(false, None)];
    let lists = if opts.events.is_empty() && opts.metrics.is_none() {
        &default[..]
    } else {
        &opts.events[..]
    };
    for l in lists {
        groups.extend(crate::parse_event_list(l).map_err(Error::from)?);
    }
    let defaults = crate::events_dirs::from_env();
    let (set, db) = match &opts.metrics {
        Some(list) => {
            let db = full_database(defaults.resolve(None), &defaults)?;
            let set = MetricSet::new(list, &db).map_err(Error::from)?;
            groups.extend(set.event_groups(&groups));
            (Some(set), Some(db))
        }
        None => (None, None),
    };
    let plan = plan_groups(&groups, db, defaults.resolve(None), &defaults)?;
    let mut session = Session::new(
        plan,
        SessionOptions {
            run: RunOptions::for_command(opts.command.clone()),
            aggregation: Aggregation::Total,
            repeat: opts.repeat,
            no_multiplex: false,
            budget: crate::schedule::CounterBudget::this_cpu(),
            topology: None,
            signals: false,
        },
    )
    .map_err(|e| MeasureError::Usage(e.to_string()))?;
    let counted = session.count(&mut ())?;
    if counted.runs.is_empty() {
        return Err(MeasureError::Usage("no run completed".into()));
    }
    let (plan, summary) = (session.plan(), counted.summary);
    let events: Vec<EventTotal> = plan
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let row = summary.rows.iter().find(|r| r.event == i);
            let status = summary.status[i].clone();
            let counted = status == EventStatus::Counted;
            EventTotal {
                name: e.name.clone(),
                count: row.map(|r| r.count).unwrap_or_default(),
                value: row.and_then(|r| r.value).filter(|_| counted),
                unit: e.unit.clone(),
                status,
            }
        })
        .collect();
    let elapsed = summary.elapsed;
    let metrics = match &set {
        Some(set) => {
            let lookup = |spec: &str| -> Result<Count, String> {
                match events.iter().find(|e| e.name == spec) {
                    None => Err("not counted".to_string()),
                    Some(e) => match &e.status {
                        EventStatus::Counted => Ok(e.count),
                        EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => {
                            Err(w.to_string())
                        }
                    },
                }
            };
            set.evaluate(&lookup, Some(elapsed.as_secs_f64()))
        }
        None => Vec::new(),
    };
    Ok(CommandCounts {
        events,
        metrics,
        elapsed,
        runs: summary.runs,
        exit_code: match summary.exit {
            Some(pmx_formats::Exit::Code { code }) => Some(code),
            _ => None,
        },
    })
}

/// `pmx analyze FILE [--cpu ID] [-M LIST] [--tma -l N]` as one call: the
/// counts read (pmx's or perf stat's files), the CPU chosen as the CLI
/// chooses it when `cpu` is `None` (the file, its hybrid rows, this
/// machine, the event tables), the analysis made; with the note saying
/// how the CPU was chosen.
///
/// ```no_run
/// let r = pmx::measure::analyze_file(
///     std::path::Path::new("perf-stat.txt"),
///     Some("GenuineIntel-6-55-4"),
///     Some("IPC"),
///     None,
/// )?;
/// for m in &r.metrics {
///     println!("{} {:?}", m.name, m.value);
/// }
/// # Ok::<(), pmx::measure::MeasureError>(())
/// ```
pub fn analyze_file(
    path: &std::path::Path,
    cpu: Option<&str>,
    metrics: Option<&str>,
    tma_level: Option<u32>,
) -> Result<crate::analyze::AnalyzeReport, MeasureError> {
    let usage = |e: &dyn std::fmt::Display| MeasureError::Usage(e.to_string());
    let counts = pmx_formats::read_file(path)
        .map_err(|e| MeasureError::Usage(format!("{}: {e}", path.display())))?;
    if tma_level == Some(0) {
        return Err(MeasureError::Usage("tma level 0: levels start at 1".into()));
    }
    let db_opts = crate::database::DatabaseOptions {
        cpu: cpu.map(str::to_string),
        events_dir_default: crate::events_dirs::from_env(),
        ..Default::default()
    };
    let (db, note) =
        crate::analyze::cpu::database(&counts, &db_opts, path).map_err(|e| usage(&e))?;
    let opts = crate::analyze::AnalyzeOptions {
        counts: &counts,
        db: &db,
        metrics,
        tma_level,
        smt_on: false,
    };
    let mut report = crate::analyze::analyze(&opts).map_err(|e| usage(&e))?;
    report.cpu_note = note;
    Ok(report)
}
