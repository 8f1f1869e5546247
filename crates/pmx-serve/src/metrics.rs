//! Derived metrics as gauges: evaluated per domain over a window of counts
//! (the change since the scraper's previous scrape, see the crate page).

use pmx::stat::{Domain, EventStatus, Row, StatPlan};
use pmx_metrics::{Inputs, Library, Machine, MetricId, Reading};

/// One input of the chosen metrics: the library's name for the event and
/// the plan event that counts it, or why nothing does.
#[derive(Debug, Clone)]
pub struct MetricInput {
    /// The event as the formulas name it.
    pub name: String,
    /// Index into the plan's events, or why it is not counted.
    pub event: Result<usize, String>,
}

/// The metrics to export.
pub struct MetricSet {
    lib: Library,
    chosen: Vec<MetricId>,
    inputs: Vec<MetricInput>,
    machine: Machine,
}

/// One metric in one domain over one window.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    /// The metric's name.
    pub name: String,
    /// The domain.
    pub domain: Domain,
    /// The value in the metric's display unit, or `None` when an input is
    /// missing.
    pub value: Option<f64>,
    /// Smallest running share among the inputs used.
    pub reliability: Option<f64>,
    /// Why there is no value.
    pub missing: Option<String>,
}

impl MetricSet {
    /// Metrics `chosen` from `lib`, reading `inputs`, on `machine`.
    pub fn new(
        lib: Library,
        chosen: Vec<MetricId>,
        inputs: Vec<MetricInput>,
        machine: Machine,
    ) -> MetricSet {
        MetricSet {
            lib,
            chosen,
            inputs,
            machine,
        }
    }

    /// The names of the chosen metrics.
    pub fn names(&self) -> Vec<String> {
        self.chosen
            .iter()
            .map(|&id| self.lib.metric(id).name.clone())
            .collect()
    }

    /// Evaluate every metric for every domain of `rows` (the window's
    /// changes), `window_s` seconds long (`duration_time`).
    pub fn evaluate(
        &self,
        plan: &StatPlan,
        status: &[EventStatus],
        rows: &[Row],
        window_s: f64,
    ) -> Vec<MetricValue> {
        let mut domains: Vec<Domain> = rows.iter().map(|r| r.domain.clone()).collect();
        domains.sort();
        domains.dedup();
        let mut out = Vec::new();
        for d in &domains {
            let mut inputs = Inputs::new();
            inputs.duration = Some(window_s);
            for input in &self.inputs {
                let reading = match &input.event {
                    Err(why) => Reading::NotSupported { why: why.clone() },
                    Ok(ei) => match status.get(*ei) {
                        Some(EventStatus::NotSupported(why)) => {
                            Reading::NotSupported { why: why.clone() }
                        }
                        Some(EventStatus::NotCounted(why)) => Reading::NotCounted {
                            why: Some(why.clone()),
                        },
                        Some(EventStatus::Counted) => {
                            match rows.iter().find(|r| r.event == *ei && &r.domain == d) {
                                Some(r) if r.count.running > 0 => {
                                    Reading::count(r.count.value, r.count.enabled, r.count.running)
                                }
                                _ => Reading::NotCounted {
                                    why: Some("did not run in the window".to_string()),
                                },
                            }
                        }
                        None => Reading::NotCounted {
                            why: Some(format!("no event {ei} in the plan ({})", plan.events.len())),
                        },
                    },
                };
                inputs.insert(&input.name, reading);
            }
            let mut ev = self.lib.evaluator(&inputs, &self.machine);
            for &id in &self.chosen {
                let m = self.lib.metric(id);
                let r = ev.metric(id);
                out.push(MetricValue {
                    name: m.name.clone(),
                    domain: d.clone(),
                    value: r.value(),
                    reliability: r.reliability,
                    missing: r.missing().map(|x| x.to_string()),
                });
            }
        }
        out
    }
}
