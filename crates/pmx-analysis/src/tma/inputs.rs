//! The tree's input events as one counting plan, and the counts read back
//! as the evaluator's readings.

use super::{EventRef, Inputs, Reading};
use pmx_count::database::Database;
use pmx_count::stat::{
    self, Aggregation, EventOpenError, EventStatus, PlanGroup, StatPlan, StatRun,
};
use pmx_formats::Reason as Why;

/// The plan that counts the tree's inputs, which input each planned event
/// is for, and the inputs that cannot be counted (with why).
#[derive(Debug, Clone)]
pub struct InputPlan {
    /// Every input that could be planned, in groups.
    pub plan: StatPlan,
    /// Per event of `plan`: the library name of the input it counts.
    pub planned_for: Vec<String>,
    /// Inputs that cannot be counted here: (library name, why).
    pub unavailable: Vec<(String, Why)>,
}

/// Plan each input on its own, so one that cannot be resolved does not
/// stop the others; keep why it cannot be counted.
pub fn plan_inputs(events: &[EventRef], db: &Database) -> InputPlan {
    let mut out = InputPlan {
        plan: StatPlan {
            events: Vec::new(),
            groups: Vec::new(),
        },
        planned_for: Vec::new(),
        unavailable: Vec::new(),
    };
    for e in events {
        let Some(spec) = e.spec("cpu") else {
            out.unavailable.push((
                e.name.clone(),
                Why::new("a retire latency is sampled, not counted"),
            ));
            continue;
        };
        let groups = match pmx_count::parse_event_list(&spec) {
            Ok(g) => g,
            Err(err) => {
                let why = stat::headed(err.to_string());
                out.unavailable.push((e.name.clone(), why));
                continue;
            }
        };
        match stat::plan(&groups, db) {
            Ok(p) => out.append(&e.name, p),
            Err(err) => out
                .unavailable
                .push((e.name.clone(), Why::with_detail(unknown_here(db), err))),
        }
    }
    out
}

/// Why an input does not resolve: not in the tables; on a machine
/// without a core PMU also that the kernel's own aliases (`topdown-*`,
/// which live in the PMU's sysfs directory) are absent with it.
fn unknown_here(db: &Database) -> String {
    let tables = format!("not in the event tables for {}", db.target.cpu);
    if db.target.host && !super::host_has_core_pmu() {
        format!("{tables}; no hardware PMU here, so no kernel alias either")
    } else {
        tables
    }
}

impl InputPlan {
    /// Add the groups of `p`, planned for the input `name`.
    fn append(&mut self, name: &str, p: StatPlan) {
        for g in p.groups {
            let base = self.plan.events.len();
            let members: Vec<usize> = g.members.iter().map(|m| m + base).collect();
            for &m in &g.members {
                let mut ev = p.events[m].clone();
                ev.group = self.plan.groups.len();
                self.plan.events.push(ev);
                self.planned_for.push(name.to_string());
            }
            self.plan.groups.push(PlanGroup {
                members,
                explicit: g.explicit,
            });
        }
    }

    /// Every planned input becomes unavailable because `failed` could not
    /// be opened (so nothing could), unless it already is for another
    /// reason.
    pub fn none_counted(&mut self, failed: &EventOpenError) {
        let why = failed.as_reason();
        for name in &self.planned_for {
            if !self.unavailable.iter().any(|(n, _)| n == name) {
                self.unavailable.push((name.clone(), why.clone()));
            }
        }
    }

    /// The run's totals as readings, by input name; inputs the run could
    /// not open join `unavailable`, and every unavailable input reads as
    /// not supported.
    pub fn readings(&mut self, run: Option<&StatRun>) -> Inputs {
        let mut inputs = Inputs::new();
        if let Some(r) = run {
            inputs.duration = Some(r.elapsed.as_secs_f64());
            let rows = stat::aggregate(&self.plan, &r.instances, Aggregation::Total, None);
            for row in &rows {
                let name = &self.planned_for[row.event];
                let reading = match &r.status[row.event] {
                    EventStatus::Counted if row.value.is_some() => {
                        Reading::Counted { count: row.count }
                    }
                    EventStatus::Counted => Reading::NotCounted {
                        why: Some("never scheduled on a counter (multiplexed out)".into()),
                    },
                    EventStatus::NotCounted(why) => Reading::NotCounted {
                        why: Some(why.to_string()),
                    },
                    EventStatus::NotSupported(why) => {
                        self.unavailable.push((name.clone(), why.clone()));
                        Reading::NotSupported {
                            why: why.to_string(),
                        }
                    }
                };
                inputs.insert(name, reading);
            }
        }
        for (name, why) in &self.unavailable {
            if inputs.get(name).is_none() {
                let why = why.to_string();
                inputs.insert(name, Reading::NotSupported { why });
            }
        }
        inputs
    }
}
