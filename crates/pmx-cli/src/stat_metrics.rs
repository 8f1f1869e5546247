//! `pmx stat -M`: the metrics to compute, the events they need, and their
//! values from the counted rows.

use crate::exit::UsageError;
use pmx::stat::{Domain, EventStatus, Row, StatPlan};
use pmx::EventGroup;
use pmx_events::Database;
use pmx_metrics::{Inputs, Library, Machine, MetricId, Reading};
use pmx_model::spec::parse_spec;
use pmx_output::stat::MetricLine;
use std::time::Duration;

/// The `-e` groups (or `default_events` when there is no `-e` and no `-M`)
/// plus, with `-M`, the metrics' inputs; the metric setup; and the event
/// database when `-M` had to load it (so it is not loaded twice).
pub fn event_groups(
    args: &crate::stat::StatArgs,
    default_events: &str,
) -> anyhow::Result<(Vec<EventGroup>, Option<MetricSetup>, Option<Database>)> {
    let lists: Vec<String> = if args.events.is_empty() && args.metrics.is_some() {
        Vec::new()
    } else if args.events.is_empty() {
        vec![default_events.to_string()]
    } else {
        args.events.clone()
    };
    let mut groups = Vec::new();
    for l in &lists {
        groups.extend(pmx::parse_event_list(l).map_err(|e| UsageError(e.to_string()))?);
    }
    // -M: the metrics' inputs are counted like the events given with -e.
    let (metrics, db) = match &args.metrics {
        Some(list) => {
            let db = args.db.load()?;
            let dir = pmx_events::default_events_dir(args.db.events_dir.clone());
            let setup = MetricSetup::new(list, &db, dir.as_deref())?;
            let extra = setup.event_groups(&groups);
            groups.extend(extra);
            (Some(setup), Some(db))
        }
        None => (None, None),
    };
    if groups.is_empty() {
        return Err(
            UsageError("-M: the metrics need no event pmx can count here".to_string()).into(),
        );
    }
    Ok((groups, metrics, db))
}

/// The chosen metrics and the events they need.
pub struct MetricSetup {
    lib: Library,
    /// (name as requested, chosen definition).
    chosen: Vec<MetricId>,
    /// Every input: (the library's event name, the spec pmx counts, or
    /// why it cannot be counted here).
    inputs: Vec<(String, Result<String, String>)>,
    machine: Machine,
    /// Notes for the report.
    pub notes: Vec<String>,
}

impl MetricSetup {
    /// Select `list` (names or groups) from the CPU's library.
    pub fn new(
        list: &str,
        db: &Database,
        events_dir: Option<&std::path::Path>,
    ) -> anyhow::Result<MetricSetup> {
        let lib = Library::for_cpu(Some(&db.target.cpu), events_dir.filter(|d| d.is_dir()));
        let wanted = lib.select(list).map_err(|e| {
            let mut m = format!(
                "-M: no metric or metric group '{}' for {}",
                e.name, db.target.cpu
            );
            if !e.suggestions.is_empty() {
                m.push_str(&format!(" (did you mean {}?)", e.suggestions.join(", ")));
            }
            UsageError(m)
        })?;
        let topo = {
            let mut problems = Vec::new();
            pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut problems)
        };
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
        let mut inputs = Vec::new();
        for e in &req.events {
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
            inputs.push((e.name.clone(), spec));
        }
        let mut notes = Vec::new();
        notes.extend(lib.warnings.iter().map(|w| format!("metrics: {w}")));
        Ok(MetricSetup {
            lib,
            chosen,
            inputs,
            machine,
            notes,
        })
    }

    /// The events to count for the metrics, each on its own (the scheduler
    /// packs them), skipping those already in `have`.
    pub fn event_groups(&self, have: &[EventGroup]) -> Vec<EventGroup> {
        let mut out: Vec<EventGroup> = Vec::new();
        for (_, spec) in &self.inputs {
            let Ok(text) = spec else { continue };
            let already = have
                .iter()
                .chain(out.iter())
                .any(|g| g.members.iter().any(|m| &m.text == text));
            if already {
                continue;
            }
            if let Ok(parsed) = parse_spec(text) {
                out.push(EventGroup {
                    members: vec![parsed],
                    explicit: false,
                });
            }
        }
        out
    }

    /// The metrics for every domain of `rows`.
    pub fn evaluate(
        &self,
        plan: &StatPlan,
        status: &[EventStatus],
        rows: &[Row],
        elapsed: Duration,
    ) -> Vec<MetricLine> {
        let mut domains: Vec<Domain> = rows.iter().map(|r| r.domain.clone()).collect();
        domains.sort();
        domains.dedup();
        let mut out = Vec::new();
        for d in &domains {
            let mut inputs = Inputs::new();
            inputs.duration = Some(elapsed.as_secs_f64());
            for (name, spec) in &self.inputs {
                let reading = match spec {
                    Err(why) => Reading::NotSupported { why: why.clone() },
                    Ok(text) => match plan.events.iter().position(|e| &e.name == text) {
                        None => Reading::NotCounted {
                            why: Some("not scheduled".to_string()),
                        },
                        Some(ei) => match &status[ei] {
                            EventStatus::NotSupported(why) => {
                                Reading::NotSupported { why: why.clone() }
                            }
                            EventStatus::NotCounted(why) => Reading::NotCounted {
                                why: Some(why.clone()),
                            },
                            EventStatus::Counted => {
                                match rows.iter().find(|r| {
                                    r.event == ei && (&r.domain == d || r.domain == Domain::Total)
                                }) {
                                    Some(r) if r.count.running > 0 => Reading::count(
                                        r.count.value,
                                        r.count.enabled,
                                        r.count.running,
                                    ),
                                    _ => Reading::NotCounted {
                                        why: Some("never ran".to_string()),
                                    },
                                }
                            }
                        },
                    },
                };
                inputs.insert(name, reading);
            }
            let mut ev = self.lib.evaluator(&inputs, &self.machine);
            for &id in &self.chosen {
                let m = self.lib.metric(id);
                let r = ev.metric(id);
                out.push(MetricLine {
                    name: m.name.clone(),
                    domain: d.label(),
                    value: r.value(),
                    unit: m.unit.clone(),
                    reliability: r.reliability,
                    estimate: r.is_estimate(),
                    missing: r.missing().map(|x| x.to_string()),
                });
            }
        }
        out
    }
}
