//! Fitting a plan onto the CPU's counters: packing groups
//! ([`StatPlan::pack`]), one group for the software events
//! ([`StatPlan::group_software`]), and the `--no-multiplex` run sets
//! ([`StatPlan::run_sets`]).

use super::plan::{PlanGroup, PlannedEvent, StatPlan};
use crate::schedule::{self, CounterBudget, Need};

impl StatPlan {
    /// The groups and each event's counter need, as [`schedule`] takes them.
    fn schedule_input(&self) -> (Vec<(Vec<usize>, bool)>, Vec<Need>) {
        let groups = self
            .groups
            .iter()
            .map(|g| (g.members.clone(), g.explicit))
            .collect();
        let needs = self.events.iter().map(|e| e.need.clone()).collect();
        (groups, needs)
    }

    /// Pack the groups onto `budget` (see [`schedule::pack`]); returns the
    /// notes to show.
    pub fn pack(&mut self, budget: &CounterBudget) -> Vec<String> {
        let (groups, needs) = self.schedule_input();
        let names: Vec<String> = self.events.iter().map(|e| e.name.clone()).collect();
        let p = schedule::pack(&groups, &needs, &names, budget);
        self.groups = p
            .groups
            .into_iter()
            .map(|(members, explicit)| PlanGroup { members, explicit })
            .collect();
        for (gi, g) in self.groups.iter().enumerate() {
            for &m in &g.members {
                self.events[m].group = gi;
            }
        }
        p.notes
    }

    /// Does any event need a core counter (so the PMU's size matters)?
    pub fn needs_counters(&self) -> bool {
        self.events.iter().any(|e| e.need != Need::None)
    }

    /// Put every ungrouped software event (task-clock, page-faults, …)
    /// into one group (not those of a cgroup, `-G`). Software events never wait for a counter, so this
    /// changes no count; it lets one read fetch them all, which matters
    /// for `-I` on many CPUs (a read of another CPU's counter costs an
    /// inter-processor call). Returns whether anything was merged.
    pub fn group_software(&mut self) -> bool {
        let is_sw = |e: &PlannedEvent| {
            e.need == Need::None
                && e.cpus.is_none()
                && e.boxes.is_empty()
                && e.cgroup.is_none()
                && e.attr
                    .as_ref()
                    .is_ok_and(|a| a.type_ == pmx_events::perf_type::SOFTWARE)
        };
        let singles: Vec<usize> = self
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                !g.explicit && g.members.len() == 1 && is_sw(&self.events[g.members[0]])
            })
            .map(|(i, _)| i)
            .collect();
        if singles.len() < 2 {
            return false;
        }
        let members: Vec<usize> = singles
            .iter()
            .map(|&gi| self.groups[gi].members[0])
            .collect();
        let first = singles[0];
        self.groups[first].members = members;
        let mut k = 0;
        self.groups.retain(|_| {
            let keep = k == first || !singles.contains(&k);
            k += 1;
            keep
        });
        for (gi, g) in self.groups.iter().enumerate() {
            for &m in &g.members {
                self.events[m].group = gi;
            }
        }
        true
    }

    /// The plan split into sets that each fit on the PMU at once.
    pub fn run_sets(&self, budget: &CounterBudget) -> Vec<StatPlan> {
        let (groups, needs) = self.schedule_input();
        schedule::run_sets(&groups, &needs, budget)
            .into_iter()
            .map(|set| StatPlan {
                events: self.events.clone(),
                groups: set.into_iter().map(|gi| self.groups[gi].clone()).collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perf::{event_type, Attr};

    fn software(name: &str, group: usize) -> PlannedEvent {
        PlannedEvent {
            name: name.to_string(),
            group,
            attr: Ok(Attr {
                type_: event_type::SOFTWARE,
                ..Attr::default()
            }),
            cpus: None,
            unit: None,
            scale: 1.0,
            source: None,
            need: Need::None,
            cgroup: None,
            settings: Default::default(),
            boxes: Vec::new(),
            origin: None,
        }
    }

    /// Lone software events share one group; explicit groups stay.
    #[test]
    fn software_singles_become_one_group() {
        let mut plan = StatPlan {
            events: vec![
                software("a", 0),
                software("b", 1),
                software("c", 2),
                software("d", 3),
            ],
            groups: vec![
                PlanGroup {
                    members: vec![0],
                    explicit: false,
                },
                PlanGroup {
                    members: vec![1],
                    explicit: true,
                },
                PlanGroup {
                    members: vec![2],
                    explicit: false,
                },
                PlanGroup {
                    members: vec![3],
                    explicit: false,
                },
            ],
        };
        assert!(plan.group_software());
        let members: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.members.clone()).collect();
        assert_eq!(members, [vec![0, 2, 3], vec![1]]);
        let groups: Vec<usize> = plan.events.iter().map(|e| e.group).collect();
        assert_eq!(groups, [0, 1, 0, 0]);
        assert!(!plan.group_software(), "nothing left to merge");
    }
}
