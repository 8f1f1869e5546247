//! Summary: the runs of one `pmx stat` (repeats, or one run) folded into
//! what a report shows — the rows of the last run (the mean over runs,
//! with each row's [`Spread`], when repeated), each event's status, the
//! mean elapsed time, how the command ended — every run's values beside
//! the mean (so that runs can be compared later: `pmx compare`), and the
//! words that name what was counted.

use super::aggregate::{aggregate, Aggregation};
use super::options::Scope;
use super::outcome::StatRun;
use super::plan::StatPlan;
use crate::launch::Exit;
use pmx_formats::{EventStatus, Row, RunCount, Spread};
use pmx_model::topology::Topology;
use std::time::Duration;

/// What the runs of one `pmx stat` add up to.
#[derive(Debug, Clone)]
pub struct Summary {
    /// One row per event and domain.
    pub rows: Vec<Row>,
    /// Per row: the spread over the runs (only with several runs).
    pub spreads: Vec<Option<Spread>>,
    /// Per row: every run's values in run order (only with several runs;
    /// a run where the row is absent gives no entry).
    pub repeats: Vec<Vec<RunCount>>,
    /// With several runs: each run's own rows and elapsed time, for
    /// whatever is computed from a run's rows (the metrics of each run).
    pub per_run: Vec<(Vec<Row>, Duration)>,
    /// Per planned event: counted in any run, or why not.
    pub status: Vec<EventStatus>,
    /// How many runs there were.
    pub runs: usize,
    /// The mean elapsed time of a run.
    pub elapsed: Duration,
    /// How the command of the last run ended.
    pub exit: Option<Exit>,
    /// Some run was cut short.
    pub interrupted: bool,
    /// Notes for the report (a repeat cut short).
    pub notes: Vec<String>,
}

/// Fold `runs` (at least one) of `plan`; `repeat` is how many were asked
/// for.
pub fn summarize(
    plan: &StatPlan,
    runs: &[StatRun],
    how: Aggregation,
    topo: Option<&Topology>,
    repeat: u32,
) -> Summary {
    let per_run: Vec<Vec<Row>> = runs
        .iter()
        .map(|r| aggregate(plan, &r.instances, how, topo))
        .collect();
    let last = runs.last().expect("at least one run");
    let mut rows = per_run.last().cloned().unwrap_or_default();
    let mut spreads = vec![None; rows.len()];
    let mut repeats = vec![Vec::new(); rows.len()];
    if runs.len() > 1 {
        for (j, row) in rows.iter_mut().enumerate() {
            let same: Vec<&Row> = per_run
                .iter()
                .filter_map(|rs| {
                    rs.iter()
                        .find(|r| r.event == row.event && r.domain == row.domain)
                })
                .collect();
            repeats[j] = same.iter().map(|r| RunCount::of(r)).collect();
            let values: Vec<f64> = same.iter().filter_map(|r| r.value).collect();
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
    let mut notes = Vec::new();
    if runs.len() < repeat as usize {
        notes.push(format!("stopped after {} of {} runs", runs.len(), repeat));
    }
    let per_run = match runs.len() {
        1 => Vec::new(),
        _ => per_run
            .into_iter()
            .zip(runs.iter().map(|r| r.elapsed))
            .collect(),
    };
    Summary {
        rows,
        spreads,
        repeats,
        per_run,
        status,
        runs: runs.len(),
        elapsed: runs.iter().map(|r| r.elapsed).sum::<Duration>() / runs.len() as u32,
        exit: last.exit,
        interrupted: runs.iter().any(|r| r.interrupted),
        notes,
    }
}

impl Scope {
    /// What was counted, for a report's title: `'cmd args'`, `process id
    /// 1,2`, `thread id 3`, `CPUs 0-3` (`… while running 'cmd'`).
    pub fn describe(&self, command: &[String]) -> String {
        let ids = |v: &[i32]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Scope::Command => format!("'{}'", command.join(" ")),
            Scope::Pids(p) => format!("process id {}", ids(p)),
            Scope::Tids(t) => format!("thread id {}", ids(t)),
            Scope::Cpus(c) => {
                let list = pmx_model::topology::format_cpu_list(c);
                if command.is_empty() {
                    format!("CPUs {list}")
                } else {
                    format!("CPUs {list} while running '{}'", command.join(" "))
                }
            }
            Scope::AllThreads if command.is_empty() => "every thread".to_string(),
            Scope::AllThreads => format!("every thread while running '{}'", command.join(" ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::{Instance, PlannedEvent};
    use pmx_model::count::Count;

    fn run(value: u64, status: EventStatus, elapsed_ms: u64) -> StatRun {
        StatRun {
            instances: vec![Instance {
                event: 0,
                cpu: -1,
                tid: -1,
                count: Count {
                    value,
                    enabled: 10,
                    running: 10,
                },
            }],
            status: vec![status],
            elapsed: Duration::from_millis(elapsed_ms),
            exit: Some(Exit::Code { code: 0 }),
            interrupted: false,
        }
    }

    #[test]
    fn repeats_give_the_mean_and_the_spread() {
        let plan = StatPlan {
            events: vec![PlannedEvent {
                name: "task-clock".to_string(),
                group: 0,
                attr: Err(String::new()),
                cpus: None,
                unit: None,
                scale: 1.0,
                source: None,
                need: crate::schedule::Need::None,
                cgroup: None,
                settings: Default::default(),
                boxes: Vec::new(),
                origin: None,
            }],
            groups: Vec::new(),
        };
        let runs = [
            run(10, EventStatus::NotCounted("never".into()), 10),
            run(20, EventStatus::Counted, 30),
        ];
        let s = summarize(&plan, &runs, Aggregation::Total, None, 3);
        assert_eq!(s.rows[0].value, Some(15.0));
        assert_eq!(s.spreads[0].map(|sp| sp.runs), Some(2));
        // Every run is kept, in run order, with its times.
        let kept: Vec<_> = s.repeats[0].iter().map(|r| (r.value, r.raw)).collect();
        assert_eq!(kept, [(Some(10.0), 10), (Some(20.0), 20)]);
        assert_eq!(s.repeats[0][1].time_running_ns, 10);
        assert_eq!(s.per_run.len(), 2);
        assert_eq!(s.per_run[0].1, Duration::from_millis(10));
        assert_eq!(s.status, [EventStatus::Counted]);
        assert_eq!(s.elapsed, Duration::from_millis(20));
        assert_eq!(s.notes, ["stopped after 2 of 3 runs"]);
        let one = summarize(&plan, &runs[1..], Aggregation::Total, None, 1);
        assert_eq!(one.spreads, [None]);
        assert!(one.repeats[0].is_empty() && one.per_run.is_empty());
        assert!(one.notes.is_empty());
    }

    #[test]
    fn scopes_are_described() {
        let cmd = ["sleep".to_string(), "1".to_string()];
        assert_eq!(Scope::Command.describe(&cmd), "'sleep 1'");
        assert_eq!(Scope::Pids(vec![1, 2]).describe(&[]), "process id 1,2");
        assert_eq!(Scope::Tids(vec![3]).describe(&[]), "thread id 3");
        assert_eq!(Scope::Cpus(vec![0, 1, 2]).describe(&[]), "CPUs 0-2");
        assert_eq!(Scope::AllThreads.describe(&[]), "every thread");
        assert_eq!(
            Scope::Cpus(vec![1]).describe(&cmd),
            "CPUs 1 while running 'sleep 1'"
        );
    }
}
