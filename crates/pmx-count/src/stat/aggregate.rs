//! Aggregate: a run's instances folded into rows per total, CPU, core,
//! die, cache, socket, NUMA node or thread ([`aggregate`]); the same refilled in place interval
//! after interval ([`Aggregator`]).

use super::outcome::Instance;
use super::plan::StatPlan;
use pmx_formats::{Domain, Row};
use pmx_model::count::Count;
use pmx_model::topology::Topology;
use serde::Serialize;

/// How to fold instances into rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// One row per event.
    Total,
    /// Per CPU (`-A`).
    PerCpu,
    /// Per physical core.
    PerCore,
    /// Per die (`--per-die`).
    PerDie,
    /// Per instance of the cache of this level (`--per-cache`).
    PerCache(u8),
    /// Per package.
    PerSocket,
    /// Per NUMA node (`--per-node`).
    PerNode,
    /// Per thread (`-p`/`-t`).
    PerThread,
}

/// Fold a run's instances into rows, events in plan order.
pub fn aggregate(
    plan: &StatPlan,
    instances: &[Instance],
    how: Aggregation,
    topo: Option<&Topology>,
) -> Vec<Row> {
    Aggregator::new(how).rows(plan, instances, topo).to_vec()
}

/// [`aggregate`] for a stream of readings of the same counters, such as
/// one per interval: which row each instance adds to is worked out once,
/// and the rows are refilled in place, allocating nothing, for as long as
/// the instances keep their layout (event, CPU and thread of each).
#[derive(Debug, Clone)]
pub struct Aggregator {
    how: Aggregation,
    /// The number of planned events the rows were built for (`None`:
    /// not built yet).
    events: Option<usize>,
    /// (event, cpu, tid) of each instance the layout was built for.
    layout: Vec<(usize, i32, i32)>,
    /// Per instance: its row.
    slot: Vec<usize>,
    rows: Vec<Row>,
}

impl Aggregator {
    /// An aggregator folding by `how`.
    pub fn new(how: Aggregation) -> Aggregator {
        Aggregator {
            how,
            events: None,
            layout: Vec::new(),
            slot: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The rows of `instances`: events in plan order, each event's domains
    /// in order, one `Total` row without a value for an event with no
    /// instance.
    pub fn rows(
        &mut self,
        plan: &StatPlan,
        instances: &[Instance],
        topo: Option<&Topology>,
    ) -> &[Row] {
        let same = self.events == Some(plan.events.len())
            && self.layout.len() == instances.len()
            && self
                .layout
                .iter()
                .zip(instances)
                .all(|(&(e, c, t), i)| e == i.event && c == i.cpu && t == i.tid);
        if !same {
            self.build(plan, instances, topo);
        }
        for r in &mut self.rows {
            r.count = Count::default();
            r.value = None;
            r.running_share = None;
            r.instances = 0;
        }
        for (inst, &k) in instances.iter().zip(&self.slot) {
            // An instance of no planned event has no row.
            let Some(r) = self.rows.get_mut(k) else {
                continue;
            };
            r.count.value = r.count.value.wrapping_add(inst.count.value);
            r.count.enabled += inst.count.enabled;
            r.count.running += inst.count.running;
            r.instances += 1;
            if let Some(s) = inst.count.scaled() {
                let scale = plan.events[inst.event].scale;
                r.value = Some(r.value.unwrap_or(0.0) + s * scale);
            }
        }
        for r in &mut self.rows {
            r.running_share = r.count.running_share();
            if r.count.running == 0 {
                r.value = None;
            }
        }
        &self.rows
    }

    /// Work out the rows and which row each instance adds to.
    fn build(&mut self, plan: &StatPlan, instances: &[Instance], topo: Option<&Topology>) {
        self.events = Some(plan.events.len());
        self.layout = instances.iter().map(|i| (i.event, i.cpu, i.tid)).collect();
        self.slot = vec![usize::MAX; instances.len()];
        self.rows.clear();
        for ei in 0..plan.events.len() {
            // This event's domains in order, each with its instances.
            let mut per: Vec<(Domain, Vec<usize>)> = Vec::new();
            for (k, inst) in instances.iter().enumerate().filter(|(_, i)| i.event == ei) {
                let d = domain_of(inst, self.how, topo);
                match per.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, ks)) => ks.push(k),
                    None => per.push((d, vec![k])),
                }
            }
            if per.is_empty() {
                per.push((Domain::Total, Vec::new()));
            }
            per.sort_by(|a, b| a.0.cmp(&b.0));
            for (domain, ks) in per {
                for k in ks {
                    self.slot[k] = self.rows.len();
                }
                self.rows.push(Row {
                    event: ei,
                    domain,
                    count: Count::default(),
                    value: None,
                    running_share: None,
                    instances: 0,
                });
            }
        }
    }
}

fn domain_of(inst: &Instance, how: Aggregation, topo: Option<&Topology>) -> Domain {
    let cpu = u32::try_from(inst.cpu).ok();
    let info = cpu.and_then(|c| topo.and_then(|t| t.cpu(c)));
    match how {
        Aggregation::Total => Domain::Total,
        Aggregation::PerThread => {
            if inst.tid >= 0 {
                Domain::Thread { tid: inst.tid }
            } else {
                Domain::Total
            }
        }
        Aggregation::PerCpu => match cpu {
            Some(c) => Domain::Cpu { cpu: c },
            None => Domain::Total,
        },
        Aggregation::PerCore => match info {
            Some(i) => Domain::Core {
                package: i.package.unwrap_or(0),
                core: i.core.unwrap_or(i.cpu),
            },
            None => Domain::Total,
        },
        Aggregation::PerSocket => match info {
            Some(i) => Domain::Socket {
                package: i.package.unwrap_or(0),
            },
            None => Domain::Total,
        },
        Aggregation::PerDie => match info {
            Some(i) => Domain::Die {
                package: i.package.unwrap_or(0),
                die: i.die.unwrap_or(0),
            },
            None => Domain::Total,
        },
        Aggregation::PerCache(level) => match info {
            Some(i) => Domain::Cache {
                package: i.package.unwrap_or(0),
                die: i.die.unwrap_or(0),
                level,
                // Without the kernel's cache list each CPU is its own.
                id: i.cache_id(level).unwrap_or(i.cpu),
            },
            None => Domain::Total,
        },
        Aggregation::PerNode => match info {
            Some(i) => Domain::Node {
                node: i.node.unwrap_or(0),
            },
            None => Domain::Total,
        },
    }
}

impl Aggregation {
    /// Folds CPUs by where they sit in the topology (needs `-a`/`-C` and
    /// the topology): `-A`, core, die, cache, socket, node.
    pub fn by_cpu(self) -> bool {
        !matches!(self, Aggregation::Total | Aggregation::PerThread)
    }

    /// Needs the machine's topology to fold.
    pub fn needs_topology(self) -> bool {
        self.by_cpu() && self != Aggregation::PerCpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::PlannedEvent;

    fn planned(name: &str, scale: f64) -> PlannedEvent {
        PlannedEvent {
            name: name.to_string(),
            group: 0,
            attr: Err("not opened in this test".to_string()),
            cpus: None,
            unit: None,
            scale,
            source: None,
            need: crate::schedule::Need::None,
            cgroup: None,
            settings: Default::default(),
            boxes: Vec::new(),
            origin: None,
        }
    }

    fn inst(event: usize, cpu: i32, value: u64, enabled: u64, running: u64) -> Instance {
        Instance {
            event,
            cpu,
            tid: -1,
            count: Count {
                value,
                enabled,
                running,
            },
        }
    }

    /// A reused aggregator gives what a fresh `aggregate` gives, interval
    /// after interval, and rebuilds when the instances change layout.
    #[test]
    fn a_reused_aggregator_matches_a_fresh_one() {
        let plan = StatPlan {
            events: vec![planned("a", 1.0), planned("b", 0.5), planned("never", 1.0)],
            groups: Vec::new(),
        };
        let key = |rows: &[Row]| -> Vec<String> { rows.iter().map(|r| format!("{r:?}")).collect() };
        let mut agg = Aggregator::new(Aggregation::PerCpu);
        let layouts = [
            vec![
                inst(1, 1, 10, 100, 50),
                inst(0, 1, 5, 100, 100),
                inst(0, 0, 7, 100, 100),
                inst(1, 0, 3, 100, 100),
            ],
            vec![
                inst(1, 1, 20, 100, 100),
                inst(0, 1, 6, 100, 100),
                inst(0, 0, 8, 100, 0),
                inst(1, 0, 4, 100, 100),
            ],
            // A CPU went away: a new layout.
            vec![inst(0, 0, 9, 100, 100), inst(1, 0, 1, 100, 100)],
        ];
        for instances in &layouts {
            let fresh = aggregate(&plan, instances, Aggregation::PerCpu, None);
            assert_eq!(key(agg.rows(&plan, instances, None)), key(&fresh));
        }
        // Events in plan order, CPUs in order, a value-less total for the
        // event nothing counted; b's multiplexed count scaled and halved.
        let first = aggregate(&plan, &layouts[0], Aggregation::PerCpu, None);
        let order: Vec<(usize, String)> =
            first.iter().map(|r| (r.event, r.domain.label())).collect();
        assert_eq!(
            order,
            [
                (0, "CPU0".to_string()),
                (0, "CPU1".into()),
                (1, "CPU0".into()),
                (1, "CPU1".into()),
                (2, String::new())
            ]
        );
        assert_eq!(first[3].value, Some(10.0));
        assert_eq!(first[4].value, None);
        let second = aggregate(&plan, &layouts[1], Aggregation::PerCpu, None);
        assert_eq!(second[0].value, None, "never ran in this interval");
    }
}
