//! What metrics need: the events to count, the machine facts, the tool
//! values and the events probed by `has_event()`, through every metric they
//! use ([`Library::requirements`]), and which of a metric's alternatives this
//! machine can count ([`Library::choose`]).
//!
//! A condition made only of machine facts (`… if #smt_on else …`) is decided
//! here, with the machine at hand, by evaluating it: so this module sits
//! above both [`crate::library`] and [`crate::eval`].

use crate::eval::{Inputs, Machine};
use crate::event::EventRef;
use crate::formula::{Constant, Expr, ExprKind, Formula, Func, Special, Target};
use crate::library::{Library, Metric, MetricId, MetricSource, MetricTable, SourceKind};
use serde::Serialize;
use std::collections::HashMap;

/// What a set of metrics needs to be computed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Requirements {
    /// Events to count, in order of first use, one per key.
    pub events: Vec<EventRef>,
    /// Retire latencies to sample (or take from Intel's means).
    pub retire_latencies: Vec<EventRef>,
    /// Events whose existence `has_event()` asks about (not counted).
    pub probes: Vec<EventRef>,
    /// Machine facts used.
    pub constants: Vec<Constant>,
    /// Tool values used (`duration_time`).
    pub specials: Vec<Special>,
    /// For each metric asked for, the indexes into `events` it needs
    /// (through other metrics too): counting these together in one group
    /// gives the metric consistent inputs.
    pub per_metric: Vec<(MetricId, Vec<usize>)>,
}

impl Library {
    /// The first of `alternatives` whose counted inputs are all `countable`
    /// (e.g. resolve to an encoding on this machine): the definition
    /// `pmx stat -M` should schedule.
    pub fn choose(
        &self,
        alternatives: &[MetricId],
        machine: Option<&Machine>,
        countable: impl Fn(&EventRef) -> bool,
    ) -> Option<MetricId> {
        alternatives.iter().copied().find(|&id| {
            self.requirements(&[id], true, machine)
                .events
                .iter()
                .all(&countable)
        })
    }

    /// The counted inputs of `ids` that `inputs` has no reading for (what
    /// `pmx analyze` lists for the metrics it could not compute).
    pub fn absent_inputs(
        &self,
        ids: &[MetricId],
        inputs: &Inputs,
        machine: Option<&Machine>,
    ) -> Vec<EventRef> {
        self.requirements(ids, false, machine)
            .events
            .into_iter()
            .filter(|e| inputs.get(&e.name).is_none())
            .collect()
    }

    /// What `ids` need (with their thresholds when `thresholds`), through
    /// the metrics they use. With `machine`, a condition that depends on
    /// machine facts only (`… if #smt_on else …`) keeps just the branch it
    /// takes.
    pub fn requirements(
        &self,
        ids: &[MetricId],
        thresholds: bool,
        machine: Option<&Machine>,
    ) -> Requirements {
        let mut req = Requirements::default();
        let mut event_pos: HashMap<u32, usize> = HashMap::new();
        for &id in ids {
            let mut mine: Vec<usize> = Vec::new();
            let mut seen = vec![false; self.len()];
            self.collect(
                id,
                thresholds,
                machine,
                &mut req,
                &mut event_pos,
                &mut mine,
                &mut seen,
            );
            mine.sort_unstable();
            mine.dedup();
            req.per_metric.push((id, mine));
        }
        req
    }

    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        id: MetricId,
        thresholds: bool,
        machine: Option<&Machine>,
        req: &mut Requirements,
        event_pos: &mut HashMap<u32, usize>,
        mine: &mut Vec<usize>,
        seen: &mut [bool],
    ) {
        if seen.get(id.index()).copied().unwrap_or(true) {
            return;
        }
        seen[id.index()] = true;
        let m = self.metric(id);
        let mut exprs: Vec<&Expr> = vec![m.formula.root()];
        if thresholds {
            if let Some(t) = &m.threshold {
                exprs.push(t.formula.root());
            }
        }
        let mut nested: Vec<MetricId> = Vec::new();
        for e in exprs {
            self.collect_expr(e, machine, req, event_pos, mine, &mut nested);
        }
        for n in nested {
            // Thresholds of the metrics a metric uses are not needed.
            self.collect(n, false, machine, req, event_pos, mine, seen);
        }
    }

    fn collect_expr(
        &self,
        e: &Expr,
        machine: Option<&Machine>,
        req: &mut Requirements,
        event_pos: &mut HashMap<u32, usize>,
        mine: &mut Vec<usize>,
        nested: &mut Vec<MetricId>,
    ) {
        match &e.kind {
            ExprKind::Number(_) => {}
            ExprKind::Constant(c) => {
                if !req.constants.contains(c) {
                    req.constants.push(c.clone());
                }
            }
            ExprKind::Ref(r) => match r.target {
                Target::Event(i) => {
                    let ev = &self.events()[i as usize];
                    if ev.retire_latency {
                        if !req.retire_latencies.iter().any(|x| x.key == ev.key) {
                            req.retire_latencies.push(ev.clone());
                        }
                        return;
                    }
                    let pos = *event_pos.entry(i).or_insert_with(|| {
                        req.events.push(ev.clone());
                        req.events.len() - 1
                    });
                    mine.push(pos);
                }
                Target::Metric(m) => nested.push(MetricId(m)),
                Target::Special(s) => {
                    if !req.specials.contains(&s) {
                        req.specials.push(s);
                    }
                }
                Target::UnknownMetric | Target::Unbound => {}
            },
            ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Index(x, _) => {
                self.collect_expr(x, machine, req, event_pos, mine, nested)
            }
            ExprKind::Binary(_, a, b) => {
                self.collect_expr(a, machine, req, event_pos, mine, nested);
                self.collect_expr(b, machine, req, event_pos, mine, nested);
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => match machine.and_then(|m| static_value(cond, m)) {
                Some(c) if c != 0.0 => {
                    self.collect_expr(then, machine, req, event_pos, mine, nested)
                }
                Some(_) => self.collect_expr(otherwise, machine, req, event_pos, mine, nested),
                None => {
                    self.collect_expr(cond, machine, req, event_pos, mine, nested);
                    self.collect_expr(then, machine, req, event_pos, mine, nested);
                    self.collect_expr(otherwise, machine, req, event_pos, mine, nested);
                }
            },
            ExprKind::Call(Func::HasEvent, args) => {
                if let Some(ExprKind::Ref(r)) = args.first().map(|a| &a.kind) {
                    let ev = EventRef::new(&r.name);
                    if !req.probes.iter().any(|p| p.key == ev.key) {
                        req.probes.push(ev);
                    }
                }
            }
            ExprKind::Call(Func::StrcmpCpuidStr, _) => {}
            ExprKind::Call(_, args) => {
                for a in args {
                    self.collect_expr(a, machine, req, event_pos, mine, nested);
                }
            }
        }
    }
}

fn static_value(e: &Expr, machine: &Machine) -> Option<f64> {
    let inputs = Inputs::new();
    let lib = Library::new();
    let mut only_static = true;
    e.walk(&mut |n| {
        if matches!(
            n.kind,
            ExprKind::Ref(_) | ExprKind::Call(..) | ExprKind::Index(..)
        ) {
            only_static = false;
        }
        if matches!(
            n.kind,
            ExprKind::Constant(Constant::DurationMs | Constant::DurationS)
        ) {
            only_static = false;
        }
    });
    if !only_static {
        return None;
    }
    let f = Formula::from_expr(e.clone());
    let mut t = MetricTable::new(MetricSource {
        kind: SourceKind::User,
        origin: String::new(),
        version: None,
        pmu: None,
    });
    t.metrics.push(Metric::from_formula("static", f, "", 1.0));
    let mut lib = lib;
    lib.add_table(t);
    lib.evaluator(&inputs, machine).metric(MetricId(0)).value()
}
