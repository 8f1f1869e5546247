//! What a counting run gives back: one [`Instance`] per opened counter,
//! the [`StatRun`] of a whole run, the [`Tick`] of one interval, and the
//! [`RunError`]s that stop a run before it counts.

use super::plan::StatPlan;
use crate::launch::Exit;
use pmx_formats::EventStatus;
use pmx_model::count::Count;
use serde::Serialize;
use std::time::Duration;

/// One opened counter and its reading.
#[derive(Debug, Clone, Serialize)]
pub struct Instance {
    /// Index into the plan's events.
    pub event: usize,
    /// CPU it was bound to, or -1.
    pub cpu: i32,
    /// Thread it was bound to, or -1.
    pub tid: i32,
    /// The reading.
    pub count: Count,
}

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
pub struct StatRun {
    /// Every opened counter's reading.
    pub instances: Vec<Instance>,
    /// Per planned event: counted or why not.
    pub status: Vec<EventStatus>,
    /// Wall-clock time from start to stop.
    pub elapsed: Duration,
    /// How the command ended, when there was one.
    pub exit: Option<Exit>,
    /// The run was cut short by Ctrl-C / SIGTERM.
    pub interrupted: bool,
}

/// Errors that stop a run before counting.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The command could not be started; exit 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// No event could be opened at all, for a reason the user must fix.
    #[error("{0}")]
    Open(String),
    /// Some other I/O failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// One interval's readings (`-I`).
#[derive(Debug, Clone)]
pub struct Tick<'a> {
    /// 1-based interval number.
    pub index: u64,
    /// End of the interval, since the start.
    pub at: Duration,
    /// The final, partial interval at the end of the run.
    pub last: bool,
    /// Per counter: the change over the interval.
    pub instances: &'a [Instance],
    /// Per planned event: opened or why not.
    pub status: &'a [EventStatus],
}

/// Merge the runs of `--no-multiplex` sets (each counted a different part
/// of the plan) into one.
pub fn merge_runs(plans: &[StatPlan], runs: Vec<StatRun>) -> StatRun {
    let mut it = runs.into_iter().zip(plans);
    let (mut merged, first_plan) = it.next().expect("at least one run");
    let in_plan = |p: &StatPlan, e: usize| p.groups.iter().any(|g| g.members.contains(&e));
    for (i, st) in merged.status.iter_mut().enumerate() {
        if !in_plan(first_plan, i) && *st == EventStatus::Counted {
            *st = EventStatus::NotCounted("not in any run set".to_string());
        }
    }
    for (r, p) in it {
        for (i, st) in r.status.into_iter().enumerate() {
            if in_plan(p, i) {
                merged.status[i] = st;
            }
        }
        merged.instances.extend(r.instances);
        merged.elapsed += r.elapsed;
        merged.exit = r.exit.or(merged.exit);
        merged.interrupted |= r.interrupted;
    }
    merged
}
