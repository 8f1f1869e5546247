//! What a counting run gives back: one [`Instance`] per opened counter,
//! the [`StatRun`] of a whole run, the [`Tick`] of one interval, and the
//! [`RunError`]s that stop a run before it counts.

use super::plan::StatPlan;
use crate::launch::Exit;
use pmx_formats::{EventStatus, Reason};
use pmx_model::count::Count;
use pmx_perf::OpenError;
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

/// `pmx stat`'s exit status after `runs` of `repeat`: the last command's
/// own (128+N when killed by signal N); `-r` cut short by SIGINT/SIGTERM
/// is 128+N even when the last command run exited 0 (perf dies of the
/// signal).
pub fn exit_code(runs: &[StatRun], repeat: u32) -> i32 {
    let code = runs
        .last()
        .and_then(|r| r.exit)
        .map_or(0, |e| e.shell_code());
    match (crate::signals::stop_signal(), code) {
        (Some(sig), 0) if runs.len() < repeat as usize => 128 + sig,
        _ => code,
    }
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
    /// No event could be opened at all, for a reason the user must fix:
    /// the first such failure (match on its `cause`).
    #[error("{0}")]
    Open(Box<EventOpenError>),
    /// Some other I/O failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Another backend could not start or read its counters (the msr
    /// devices, their plan, other users of the counters): the reason in
    /// one sentence.
    #[error("{message}")]
    Backend {
        /// The reason.
        message: String,
        /// The caller's input is wrong (an event, the CPUs), not the
        /// machine: a usage error.
        bad_input: bool,
    },
}

/// An event of a plan that could not be opened: its name and the open
/// error, whose `cause` a caller matches on (`e.cause` reaches it through
/// `Deref`). `Display`: `name: cannot open … (ERRNO: text)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event}: {error}")]
pub struct EventOpenError {
    /// The event as the user named it.
    pub event: String,
    /// Why the kernel refused it.
    pub error: OpenError,
}

impl std::ops::Deref for EventOpenError {
    type Target = OpenError;
    fn deref(&self) -> &OpenError {
        &self.error
    }
}

impl EventOpenError {
    /// The failure as the reason of an input left without a count: this
    /// event, and the whole open error as the shared cause.
    pub fn as_reason(&self) -> Reason {
        Reason::with_detail(&self.event, &self.error)
    }
}

/// The reason of an event whose open failed for `e`, as a report shows it
/// next to the event: the first clause of [`OpenError::reason`] (up to its
/// first `": "`) is kept as the event's detail, the rest as the cause
/// shared by the events that fail alike.
///
/// This is the one place where a reason's text is cut, where the
/// [`OpenError`] is known; everything downstream reads the two parts.
pub fn open_reason(e: &OpenError) -> Reason {
    headed(e.reason())
}

/// A message of another crate's error (`headline: explanation`) as a
/// reason: the headline is the detail, the explanation the cause. Only a
/// `": "` outside parentheses ends the headline: `not counted (no PMU:
/// …)` is one cause, not a detail cut in the middle of its parenthesis.
pub fn headed(text: String) -> Reason {
    let mut depth = 0i32;
    let mut cut = None;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ':' if depth == 0 && text[i + 1..].starts_with(' ') => {
                cut = Some(i);
                break;
            }
            _ => {}
        }
    }
    match cut {
        Some(i) => Reason::with_detail(&text[..i], &text[i + 2..]),
        None => Reason::new(text),
    }
}

/// One interval's readings (`-I`).
#[derive(Debug, Clone)]
pub struct Tick<'a> {
    /// 1-based interval number.
    pub index: u64,
    /// End of the interval, since the start: the boundary on the `-I`
    /// grid (the end of the run for the last, partial one).
    pub at: Duration,
    /// When the counters were read, since the start, as measured (a
    /// little after `at`; perf's `-I` time stamps are this).
    pub read_at: Duration,
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
            *st = EventStatus::NotCounted("not in any run set".into());
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

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perf::OpenCause;

    /// Only a `": "` outside parentheses ends a reason's headline.
    #[test]
    fn a_headline_ends_outside_parentheses() {
        let r = headed("cannot open cycles: no PMU (ENOENT: none)".into());
        assert_eq!(
            (r.detail(), r.cause()),
            (Some("cannot open cycles"), "no PMU (ENOENT: none)")
        );
        let whole = "not counted (no hardware PMU exposed: no `cpu` PMU); software events count";
        let r = headed(whole.into());
        assert_eq!((r.detail(), r.cause()), (None, whole));
    }

    /// A caller tells a run's open failure by its cause, and the message
    /// stays `event: cannot open …`.
    #[test]
    fn callers_match_a_run_open_error_on_its_cause() {
        let error = OpenError {
            errno: libc::EACCES,
            attr: Box::default(),
            target: pmx_perf::Target { pid: 0, cpu: -1 },
            pmu: None,
            cause: OpenCause::Permission {
                paranoid: Some(4),
                capable: Some(false),
                cpu_wide: false,
                kernel: true,
            },
        };
        let err = RunError::Open(Box::new(EventOpenError {
            event: "cycles".into(),
            error: error.clone(),
        }));
        assert_eq!(err.to_string(), format!("cycles: {error}"));
        let paranoid = match &err {
            RunError::Open(e) => match e.cause {
                OpenCause::Permission { paranoid, .. } => paranoid,
                _ => None,
            },
            _ => None,
        };
        assert_eq!(paranoid, Some(4));
        let why = match &err {
            RunError::Open(e) => e.as_reason(),
            _ => unreachable!(),
        };
        assert_eq!(why.detail(), Some("cycles"));
        assert_eq!(why.cause(), error.to_string());
        let cut = open_reason(&error);
        assert_eq!(cut.as_str(), error.reason());
    }
}
