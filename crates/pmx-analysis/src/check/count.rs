//! One kernel run counted through `pmx stat`'s session: the events
//! planned against the database, the kernel started as a command (or
//! counted on CPUs for the system-wide boxes), each event's value or why
//! it has none.

use pmx_count::database::Database;
use pmx_count::stat::{self, Aggregation, EventStatus, RunOptions, Scope, Session, SessionOptions};
use std::time::Duration;

/// One event of a counted run.
#[derive(Debug, Clone)]
pub struct Value {
    /// Scaled value in the event's unit; `Err`: why there is none.
    pub value: Result<f64, String>,
    /// running / enabled, when it ran.
    pub share: Option<f64>,
}

/// A counted run: per event asked for, in order; the wall time.
#[derive(Debug, Clone)]
pub struct Run {
    /// Per event.
    pub values: Vec<Value>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// The command's exit status (0 when it did not run).
    pub exit_code: i32,
}

/// Where a run counts.
#[derive(Debug, Clone)]
pub struct Where {
    /// Pin the kernel to these CPUs.
    pub pin: Option<Vec<u32>>,
    /// Count these CPUs instead of the command (system-wide boxes).
    pub cpus: Option<Vec<u32>>,
}

/// Count `events` (one spec each) while `argv` runs.
pub fn run(events: &[String], argv: &[String], at: &Where, db: &Database) -> Result<Run, String> {
    let mut groups = Vec::new();
    for e in events {
        groups.extend(pmx_count::parse_event_list(e).map_err(|err| err.to_string())?);
    }
    let mut plan = stat::plan(&groups, db).map_err(|err| err.to_string())?;
    if plan.events.len() != events.len() {
        return Err(format!(
            "'{}' does not name one event each",
            events.join(",")
        ));
    }
    plan.group_software();
    let mut run = RunOptions::for_command(argv.to_vec());
    run.pin = at.pin.clone();
    if let Some(cpus) = &at.cpus {
        run.scope = Scope::Cpus(cpus.clone());
    }
    let opts = SessionOptions {
        run,
        aggregation: Aggregation::Total,
        repeat: 1,
        no_multiplex: false,
        budget: None,
        topology: None,
        signals: true,
    };
    let session = Session::new(plan, opts).map_err(|e| e.to_string())?;
    counted(session, events.len())
}

/// Count `session`'s command: per event of the `n` asked for, its value
/// or why it has none. A counter that cannot be opened is every event's
/// reason, not an error.
pub fn counted(mut session: Session, n: usize) -> Result<Run, String> {
    let counted = match session.count(&mut ()) {
        Ok(c) => c,
        Err(stat::RunError::Open(failed)) => {
            let why = failed.as_reason().to_string();
            return Ok(none(n, &why));
        }
        Err(stat::RunError::Backend { message, .. }) => return Ok(none(n, &message)),
        Err(e) => return Err(e.to_string()),
    };
    if let Some(e) = counted.late_error {
        return Ok(none(n, &e));
    }
    let s = counted.summary;
    let values = (0..n)
        .map(|i| {
            let row = s.rows.iter().find(|r| r.event == i);
            let value = match (&s.status[i], row.and_then(|r| r.value)) {
                (EventStatus::Counted, Some(v)) => Ok(v),
                (EventStatus::Counted, None) => Err("never scheduled on a counter".to_string()),
                (EventStatus::NotSupported(w) | EventStatus::NotCounted(w), _) => {
                    Err(w.to_string())
                }
            };
            Value {
                value,
                share: row.and_then(|r| r.running_share),
            }
        })
        .collect();
    Ok(Run {
        values,
        elapsed: s.elapsed,
        exit_code: counted.exit_code,
    })
}

/// A run in which none of `n` events could count, each for `why`.
pub fn none(n: usize, why: &str) -> Run {
    let values = (0..n).map(|_| Value {
        value: Err(why.to_string()),
        share: None,
    });
    Run {
        values: values.collect(),
        elapsed: Duration::ZERO,
        exit_code: 0,
    }
}
