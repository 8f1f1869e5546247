//! Derived metrics for the library: a list like `IPC,TopdownL1` chosen
//! from the CPU's metric library (`pmx-metrics`), the events they need as
//! `-e` specs, and their values from counts read by [`crate::Counters`] or
//! accumulated by [`crate::region`](mod@crate::region).
//!
//! A metric whose input was not counted has no value: [`MetricValue`]
//! says which input and why (`IPC ← cycles: not supported: …`), exactly
//! as `pmx stat -M` does; below a 70% running share it is an estimate.

use pmx_events::Database;
use pmx_metrics::{Inputs, Library, Machine, MetricId, Reading};
use pmx_model::count::Count;
use pmx_model::spec::parse_spec;
use serde::{Deserialize, Serialize};

/// The chosen metrics and the events they need.
pub struct MetricSet {
    lib: Library,
    chosen: Vec<MetricId>,
    /// (the library's event name, the spec pmx counts or why it cannot).
    inputs: Vec<(String, Result<String, String>)>,
    machine: Machine,
}

impl std::fmt::Debug for MetricSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricSet")
            .field("metrics", &self.names())
            .field("inputs", &self.inputs)
            .finish()
    }
}

/// A metric's value for one set of counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// The metric's name (`IPC`, `tma_frontend_bound`).
    pub name: String,
    /// The value; `None` when an input is missing.
    pub value: Option<f64>,
    /// Unit (`%`, `GHz`, …), may be empty.
    pub unit: String,
    /// Smallest running share among the inputs used.
    pub reliability: Option<f64>,
    /// Reliability below 0.7.
    pub estimate: bool,
    /// Why there is no value: the chain down to the missing input.
    pub missing: Option<String>,
}

/// A metric name or group the CPU's library does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no metric or metric group '{name}' for {cpu}{}", suggest(.suggestions))]
pub struct UnknownMetric {
    /// The name as given.
    pub name: String,
    /// The CPU.
    pub cpu: String,
    /// Close names.
    pub suggestions: Vec<String>,
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}

impl MetricSet {
    /// Choose `list` (names or groups, comma-separated) from the library
    /// for `db`'s CPU, with Intel's tables from `events_dir` when given.
    /// Where a metric has several definitions, the first whose events
    /// this machine can count is taken.
    pub fn new(
        list: &str,
        db: &Database,
        events_dir: Option<&std::path::Path>,
    ) -> Result<MetricSet, UnknownMetric> {
        let lib = Library::for_cpu(Some(&db.target.cpu), events_dir.filter(|d| d.is_dir()));
        let wanted = lib.select(list).map_err(|e| UnknownMetric {
            name: e.name.clone(),
            cpu: db.target.cpu.to_string(),
            suggestions: e.suggestions.clone(),
        })?;
        let topo = pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut Vec::new());
        let machine = Machine {
            smt_on: Some(topo.smt_active()),
            num_cpus: Some(topo.online_count() as u32),
            ..Machine::default()
        };
        let countable = |e: &pmx_metrics::EventRef| {
            e.spec("cpu")
                .and_then(|s| parse_spec(&s).ok())
                .is_some_and(|spec| db.resolve(&spec).is_ok())
        };
        let chosen: Vec<MetricId> = wanted
            .iter()
            .filter_map(|alts| {
                lib.choose(alts, Some(&machine), countable)
                    .or(alts.first().copied())
            })
            .collect();
        let req = lib.requirements(&chosen, false, Some(&machine));
        let inputs = req
            .events
            .iter()
            .map(|e| {
                let spec = match e.spec("cpu") {
                    None => Err(format!("{} is not a count pmx can take", e.name)),
                    Some(s) => match parse_spec(&s) {
                        Err(err) => Err(err.message),
                        Ok(p) => match db.resolve(&p) {
                            Ok(_) => Ok(s),
                            Err(err) => Err(format!("{} for {}", err.message, db.target.cpu)),
                        },
                    },
                };
                (e.name.clone(), spec)
            })
            .collect();
        Ok(MetricSet {
            lib,
            chosen,
            inputs,
            machine,
        })
    }

    /// The chosen metrics' names, in the order asked.
    pub fn names(&self) -> Vec<String> {
        self.chosen
            .iter()
            .map(|&id| self.lib.metric(id).name.clone())
            .collect()
    }

    /// The specs to count for the metrics (those this machine can count),
    /// each once.
    pub fn event_specs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, s) in &self.inputs {
            if let Ok(s) = s {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// The metrics from counts: `lookup(spec)` gives the count of an
    /// event counted under that spec, or why there is none (`Err`);
    /// `duration` is the wall-clock seconds the counts cover.
    pub fn evaluate(
        &self,
        lookup: &dyn Fn(&str) -> Result<Count, String>,
        duration: Option<f64>,
    ) -> Vec<MetricValue> {
        let mut inputs = Inputs::new();
        inputs.duration = duration;
        for (name, spec) in &self.inputs {
            let reading = match spec {
                Err(why) => Reading::NotSupported { why: why.clone() },
                Ok(text) => match lookup(text) {
                    Ok(c) if c.running > 0 || c.enabled == 0 => {
                        Reading::count(c.value, c.enabled, c.running)
                    }
                    Ok(_) => Reading::NotCounted {
                        why: Some("never ran".to_string()),
                    },
                    Err(why) => Reading::NotSupported { why },
                },
            };
            inputs.insert(name, reading);
        }
        let mut ev = self.lib.evaluator(&inputs, &self.machine);
        self.chosen
            .iter()
            .map(|&id| {
                let m = self.lib.metric(id);
                let r = ev.metric(id);
                MetricValue {
                    name: m.name.clone(),
                    value: r.value(),
                    unit: m.unit.clone(),
                    reliability: r.reliability,
                    estimate: r.is_estimate(),
                    missing: r.missing().map(|x| x.to_string()),
                }
            })
            .collect()
    }
}
