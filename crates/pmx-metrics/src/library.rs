//! Metric definitions and the library that holds and binds them.
//!
//! A [`Library`] is a set of [`Metric`]s from several sources (pmx's
//! built-in definitions, Intel's tables in Intel's format and in perf's
//! format, the user's own). Adding a source *binds* every formula: each name
//! becomes a reference to a metric (same source first, then any source by
//! priority), to one of perf's tool values (`duration_time`), or to an event
//! of the library's event table, where spellings with the same
//! [`crate::event_key`] share one entry.
//!
//! Several sources may define a metric of the same name (Intel's `cpi` in
//! both formats, the built-in `tma_frontend_bound` and Intel's
//! `Frontend_Bound`, which answers to `tma_frontend_bound` too). Lookups
//! return all of them, best first: the user's, then Intel's format, then
//! perf's format, then the built-in ones. [`crate::Evaluator::first_with_value`]
//! takes the first that can be computed from the inputs at hand.

use crate::compile::{compile, Compiled};
use crate::event::{strip_retire_latency, EventRef};
use crate::formula::{
    Constant, Dialect, Expr, ExprKind, Formula, FormulaError, Func, RefHint, Special, Target,
};
use serde::Serialize;
use std::collections::HashMap;

/// Where metric definitions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// Defined by the user (`-M 'name=formula'`).
    User,
    /// Intel's metric table in Intel's format (`*_metrics.json`).
    IntelFormat,
    /// A metric table in perf's format (`*_metrics_perf.json`, perf's
    /// `pmu-events` JSON).
    PerfFormat,
    /// pmx's built-in definitions.
    Builtin,
    /// pmx's definitions of LIKWID's performance groups ([`crate::likwid`]):
    /// computed when asked for by name or group (`-M MEM`), never in an
    /// "every metric" listing.
    Groups,
}

impl SourceKind {
    /// Lower is preferred when several sources define a name.
    pub fn priority(self) -> u8 {
        match self {
            SourceKind::User => 0,
            SourceKind::IntelFormat => 10,
            SourceKind::PerfFormat => 20,
            SourceKind::Builtin => 30,
            SourceKind::Groups => 40,
        }
    }
}

/// One source of metric definitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricSource {
    /// Which kind.
    pub kind: SourceKind,
    /// Where: a file relative to the events directory, or `built-in (Zen 4)`.
    pub origin: String,
    /// The table's version, when it says.
    pub version: Option<String>,
    /// The core PMU the table is for on hybrid parts (`cpu_core`).
    pub pmu: Option<String>,
}

/// A metric's threshold: a condition over it (and usually its TMA parents)
/// that flags it as a problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The condition (non-zero = over the threshold).
    pub formula: Formula,
    /// Intel's `ThresholdIssues` tags (`$issueBM`), which link related
    /// metrics.
    pub issues: Vec<String>,
    /// Who wrote the condition when the metric's source publishes none
    /// (pmx's defaults for AMD's pipeline tree); `None`: the source's own.
    pub supplied_by: Option<String>,
}

/// One metric definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The name (`IPC`, `Frontend_Bound`, `tma_fetch_latency`, `l2_miss_ratio`).
    pub name: String,
    /// Other names it answers to (Intel's `LegacyName`; `tma_frontend_bound`
    /// for Intel's `Frontend_Bound`).
    pub aliases: Vec<String>,
    /// What it measures.
    pub description: String,
    /// How it is computed.
    pub formula: Formula,
    /// When it is flagged.
    pub threshold: Option<Threshold>,
    /// The unit of the displayed value (`%`, `GHz`, `per instruction`).
    pub unit: String,
    /// Displayed value = value × scale (perf's `ScaleUnit` `100%`: 100).
    pub scale: f64,
    /// Groups it belongs to (`TopdownL1`, `TmaL2`, `Summary`…).
    pub groups: Vec<String>,
    /// The level its source gives it (TMA level for Intel's tables).
    pub level: Option<u32>,
    /// The TMA parent's name, when it is a TMA node below level 1.
    pub parent: Option<String>,
    /// Intel's `Category` (`TMA`, `Freq`…).
    pub category: Option<String>,
    pub(crate) source: usize,
}

impl Metric {
    /// A metric computed by `formula` (pmx dialect), shown with `unit` after
    /// multiplying by `scale`.
    pub fn new(name: &str, formula: &str, unit: &str, scale: f64) -> Result<Metric, FormulaError> {
        Ok(Metric::from_formula(
            name,
            Formula::parse(formula, Dialect::Pmx)?,
            unit,
            scale,
        ))
    }

    /// A metric from a parsed formula.
    pub fn from_formula(name: &str, formula: Formula, unit: &str, scale: f64) -> Metric {
        Metric {
            name: name.to_string(),
            aliases: Vec::new(),
            description: String::new(),
            formula,
            threshold: None,
            unit: unit.to_string(),
            scale,
            groups: Vec::new(),
            level: None,
            parent: None,
            category: None,
            source: 0,
        }
    }

    /// The value as displayed (× scale).
    pub fn display_value(&self, value: f64) -> f64 {
        value * self.scale
    }

    /// Does the metric answer to `name` (case-insensitive, aliases too)?
    pub fn answers_to(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Is it in `group` (case-insensitive)?
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g.eq_ignore_ascii_case(group))
    }
}

/// A set of metrics from one source, before it joins a library.
#[derive(Debug, Clone)]
pub struct MetricTable {
    /// Where they come from.
    pub source: MetricSource,
    /// The definitions, in the source's order.
    pub metrics: Vec<Metric>,
    /// Entries skipped or repaired, and why.
    pub warnings: Vec<String>,
    /// Default retire latencies (event name → Intel's published mean
    /// cycles), for `EVENT:retire_latency` inputs that were not sampled.
    pub retire_latency: Vec<(String, f64)>,
}

impl MetricTable {
    /// An empty table.
    pub fn new(source: MetricSource) -> MetricTable {
        MetricTable {
            source,
            metrics: Vec::new(),
            warnings: Vec::new(),
            retire_latency: Vec::new(),
        }
    }
}

/// A metric's index in its library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MetricId(pub(crate) u32);

impl MetricId {
    /// The index into [`Library::metrics`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A name `-M` did not find.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric or metric group '{name}'{}", suggest(.suggestions))]
pub struct UnknownName {
    /// The name as given.
    pub name: String,
    /// Close names, best first.
    pub suggestions: Vec<String>,
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        let l: Vec<String> = s.iter().map(|x| format!("'{x}'")).collect();
        format!(" (did you mean {}?)", l.join(", "))
    }
}

/// A set of metrics from several sources, bound and ready to evaluate.
#[derive(Debug, Clone, Default)]
pub struct Library {
    sources: Vec<MetricSource>,
    metrics: Vec<Metric>,
    by_name: HashMap<String, Vec<u32>>,
    by_group: HashMap<String, Vec<u32>>,
    events: Vec<EventRef>,
    event_ids: HashMap<String, u32>,
    metric_sources: Vec<usize>,
    compiled: Vec<(Compiled, Option<Compiled>)>,
    consts: Vec<Constant>,
    retire_latency: HashMap<String, (f64, String)>,
    /// Entries of the added tables that were skipped or repaired.
    pub warnings: Vec<String>,
}

impl Library {
    /// An empty library.
    pub fn new() -> Library {
        Library::default()
    }

    /// How many metrics it holds.
    pub fn len(&self) -> usize {
        self.metrics.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// Every metric, in the order added.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Every metric with its id.
    pub fn iter(&self) -> impl Iterator<Item = (MetricId, &Metric)> {
        self.metrics
            .iter()
            .enumerate()
            .map(|(i, m)| (MetricId(i as u32), m))
    }

    /// The metric with this id.
    ///
    /// # Panics
    /// When the id is not from this library.
    pub fn metric(&self, id: MetricId) -> &Metric {
        &self.metrics[id.index()]
    }

    /// The sources, in the order added.
    pub fn sources(&self) -> &[MetricSource] {
        &self.sources
    }

    /// The source of a metric.
    pub fn source_of(&self, id: MetricId) -> &MetricSource {
        &self.sources[self.metric(id).source]
    }

    /// Every event the formulas refer to, one per key.
    pub fn events(&self) -> &[EventRef] {
        &self.events
    }

    /// Add a table's metrics and rebind every formula.
    pub fn add_table(&mut self, table: MetricTable) {
        let src = self.sources.len();
        let origin = table.source.origin.clone();
        self.sources.push(table.source);
        for w in table.warnings {
            self.warnings.push(format!("{origin}: {w}"));
        }
        for (name, mean) in table.retire_latency {
            self.retire_latency
                .entry(crate::event::event_key(&name))
                .or_insert((mean, format!("Intel's published mean, {origin}")));
        }
        for mut m in table.metrics {
            m.source = src;
            self.metrics.push(m);
        }
        self.reindex();
        self.rebind();
    }

    /// Define a user metric from a pmx-dialect formula (`-M 'name=formula'`);
    /// it is preferred over every other definition of the name.
    pub fn define(&mut self, name: &str, formula: &str) -> Result<MetricId, FormulaError> {
        let m = Metric::new(name, formula, "", 1.0)?;
        let mut t = MetricTable::new(MetricSource {
            kind: SourceKind::User,
            origin: "user".into(),
            version: None,
            pmu: None,
        });
        t.metrics.push(m);
        self.add_table(t);
        Ok(MetricId(self.metrics.len() as u32 - 1))
    }

    fn reindex(&mut self) {
        self.metric_sources = self.metrics.iter().map(|m| m.source).collect();
        self.by_name.clear();
        self.by_group.clear();
        for (i, m) in self.metrics.iter().enumerate() {
            let mut names: Vec<String> = std::iter::once(&m.name)
                .chain(&m.aliases)
                .map(|n| n.to_ascii_lowercase())
                .collect();
            names.dedup();
            for n in names {
                let v = self.by_name.entry(n).or_default();
                if !v.contains(&(i as u32)) {
                    v.push(i as u32);
                }
            }
            for g in &m.groups {
                let v = self.by_group.entry(g.to_ascii_lowercase()).or_default();
                if !v.contains(&(i as u32)) {
                    v.push(i as u32);
                }
            }
        }
        let prio = |i: &u32| {
            let m = &self.metrics[*i as usize];
            (self.sources[m.source].kind.priority(), m.source, *i)
        };
        for v in self.by_name.values_mut() {
            v.sort_by_key(prio);
        }
    }

    fn rebind(&mut self) {
        let mut metrics = std::mem::take(&mut self.metrics);
        for m in &mut metrics {
            let src = m.source;
            let mut bind = |e: &mut Expr| self.bind_node(e, src);
            m.formula.root_mut().walk_mut(&mut bind);
            if let Some(t) = &mut m.threshold {
                t.formula.root_mut().walk_mut(&mut bind);
            }
        }
        let mut consts = std::mem::take(&mut self.consts);
        self.compiled = metrics
            .iter()
            .map(|m| {
                (
                    compile(m.formula.root(), &mut consts),
                    m.threshold
                        .as_ref()
                        .map(|t| compile(t.formula.root(), &mut consts)),
                )
            })
            .collect();
        self.consts = consts;
        self.metrics = metrics;
    }

    /// The compiled formula (and threshold) of a metric.
    pub(crate) fn compiled(&self, id: MetricId) -> Option<&(Compiled, Option<Compiled>)> {
        self.compiled.get(id.index())
    }

    /// The constant table of the compiled formulas.
    pub(crate) fn constant_at(&self, i: u32) -> Option<&Constant> {
        self.consts.get(i as usize)
    }

    fn resolve_metric(&self, name: &str, src: usize) -> Option<u32> {
        let ids = self.by_name.get(&name.to_ascii_lowercase())?;
        ids.iter()
            .find(|&&i| self.metric_sources.get(i as usize) == Some(&src))
            .or_else(|| ids.first())
            .copied()
    }

    fn intern(&mut self, name: &str) -> u32 {
        let ev = EventRef::new(name);
        if let Some(&i) = self.event_ids.get(&ev.key) {
            return i;
        }
        let i = self.events.len() as u32;
        self.event_ids.insert(ev.key.clone(), i);
        self.events.push(ev);
        i
    }

    fn bind_node(&mut self, e: &mut Expr, src: usize) {
        match &mut e.kind {
            ExprKind::Ref(r) => {
                r.target = match r.hint {
                    RefHint::Pattern => Target::Unbound,
                    RefHint::Event => Target::Event(self.intern(&r.name)),
                    RefHint::Metric => match self.resolve_metric(&r.name, src) {
                        Some(m) => Target::Metric(m),
                        None => Target::UnknownMetric,
                    },
                    RefHint::Any => {
                        if let Some(m) = self.resolve_metric(&r.name, src) {
                            Target::Metric(m)
                        } else if let Some(s) = Special::from_name(&r.name) {
                            Target::Special(s)
                        } else {
                            Target::Event(self.intern(&r.name))
                        }
                    }
                };
            }
            // The argument of strcmp_cpuid_str() is a pattern, not an input;
            // those of source_count()/has_event() are events.
            ExprKind::Call(Func::StrcmpCpuidStr, args) => {
                if let Some(ExprKind::Ref(r)) = args.first_mut().map(|a| &mut a.kind) {
                    r.hint = RefHint::Pattern;
                }
            }
            ExprKind::Call(Func::SourceCount | Func::HasEvent, args) => {
                if let Some(ExprKind::Ref(r)) = args.first_mut().map(|a| &mut a.kind) {
                    r.hint = RefHint::Event;
                }
            }
            _ => {}
        }
    }

    /// Names that should be metrics but are not: references to a metric no
    /// source defines, and names bound as events that look like metric
    /// names (`tma_…`, `metric_…`). Each with the metric that uses it.
    pub fn unknown_references(&self) -> Vec<(MetricId, String)> {
        let mut out = Vec::new();
        for (id, m) in self.iter() {
            let mut check = |e: &Expr| {
                if let ExprKind::Ref(r) = &e.kind {
                    let suspicious = match r.target {
                        Target::UnknownMetric => true,
                        Target::Event(_) => {
                            let l = r.name.to_ascii_lowercase();
                            r.hint == RefHint::Any
                                && (l.starts_with("tma_") || l.starts_with("metric_"))
                        }
                        _ => false,
                    };
                    if suspicious && !out.contains(&(id, r.name.clone())) {
                        out.push((id, r.name.clone()));
                    }
                }
            };
            m.formula.root().walk(&mut check);
            if let Some(t) = &m.threshold {
                t.formula.root().walk(&mut check);
            }
        }
        out
    }

    /// The retire-latency default for an event, with where it comes from.
    pub(crate) fn retire_latency_default(&self, ev: &EventRef) -> Option<(f64, String)> {
        let key = crate::event::event_key(strip_retire_latency(&ev.name));
        self.retire_latency.get(&key).cloned()
    }

    /// Every metric answering to `name` (name or alias, case-insensitive),
    /// best first.
    pub fn lookup(&self, name: &str) -> Vec<MetricId> {
        self.by_name
            .get(&name.trim().to_ascii_lowercase())
            .map(|v| v.iter().map(|&i| MetricId(i)).collect())
            .unwrap_or_default()
    }

    /// The best metric answering to `name`.
    pub fn find(&self, name: &str) -> Option<MetricId> {
        self.lookup(name).into_iter().next()
    }

    /// The metrics of a group, best definition of each name only, in the
    /// order added.
    ///
    /// Group names match in any case, with one exception: LIKWID's groups
    /// ([`SourceKind::Groups`], `MEM`, `FLOPS_DP` …) share names with
    /// other sources' groups in another case (`MEM` and Intel's `Mem`,
    /// `BRANCH` and `branch`). LIKWID's name as LIKWID spells it selects
    /// LIKWID's group; any other spelling selects the other group, or
    /// LIKWID's when there is no other.
    pub fn group(&self, group: &str) -> Vec<MetricId> {
        let Some(all) = self.by_group.get(&group.trim().to_ascii_lowercase()) else {
            return Vec::new();
        };
        let likwid =
            |i: &u32| self.sources[self.metrics[*i as usize].source].kind == SourceKind::Groups;
        let (ours, others): (Vec<u32>, Vec<u32>) = all.iter().partition(|i| likwid(i));
        // Spelled as LIKWID's metrics spell their group.
        let exact = ours.iter().any(|&i| {
            let groups = &self.metrics[i as usize].groups;
            groups.iter().any(|g| g == group.trim())
        });
        let ids = match (exact, ours.is_empty(), others.is_empty()) {
            (true, false, _) | (false, false, true) => ours,
            _ => others,
        };
        let mut out: Vec<MetricId> = Vec::new();
        for &i in &ids {
            let m = &self.metrics[i as usize];
            // Skip a definition when a better one of the same name exists.
            let best = self.find(&m.name).map(|b| b.0);
            if best != Some(i) && best.is_some_and(|b| self.metrics[b as usize].in_group(group)) {
                continue;
            }
            if out.iter().any(|o| {
                let om = self.metric(*o);
                om.answers_to(&m.name) || m.aliases.iter().any(|a| om.answers_to(a))
            }) {
                continue;
            }
            out.push(MetricId(i));
        }
        out
    }

    /// Every group name, sorted.
    pub fn groups(&self) -> Vec<String> {
        // LIKWID's group names are kept apart from other sources' names
        // that differ in case only (`MEM`, Intel's `Mem`): `-M` tells them
        // apart ([`Library::group`]).
        let mut seen: HashMap<(bool, String), String> = HashMap::new();
        for m in &self.metrics {
            let ours = self.sources[m.source].kind == SourceKind::Groups;
            for g in &m.groups {
                seen.entry((ours, g.to_ascii_lowercase()))
                    .or_insert_with(|| g.clone());
            }
        }
        let mut v: Vec<(bool, String)> = seen.into_iter().map(|((o, _), g)| (o, g)).collect();
        v.sort_by_key(|(o, g)| (g.to_ascii_lowercase(), *o));
        v.into_iter().map(|(_, g)| g).collect()
    }

    /// Every definition that answers to any name of `id` (its name or an
    /// alias), best first: Intel's `Frontend_Bound`, then the built-in
    /// `tma_frontend_bound`, which answer to a common name.
    pub fn alternatives(&self, id: MetricId) -> Vec<MetricId> {
        let m = self.metric(id);
        let mut out: Vec<MetricId> = Vec::new();
        for n in std::iter::once(&m.name).chain(&m.aliases) {
            for a in self.lookup(n) {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        let prio = |i: &MetricId| {
            let src = self.metric(*i).source;
            (self.sources[src].kind.priority(), src, i.0)
        };
        out.sort_by_key(prio);
        out
    }

    /// What `-M a,b,GROUP` asks for: for each comma-separated item, the
    /// alternatives of a metric of that name, or one entry per metric of a
    /// group of that name (a metric name wins over a group name). Each inner
    /// list is best first (see [`Library::alternatives`]).
    pub fn select(&self, list: &str) -> Result<Vec<Vec<MetricId>>, UnknownName> {
        let mut out: Vec<Vec<MetricId>> = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(&first) = self.lookup(item).first() {
                out.push(self.alternatives(first));
                continue;
            }
            let g = self.group(item);
            if g.is_empty() {
                let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
                let groups: Vec<String> = self.by_group.keys().cloned().collect();
                names.extend(groups.iter().map(String::as_str));
                return Err(UnknownName {
                    name: item.to_string(),
                    suggestions: pmx_model::spec::closest(item, names, 3),
                });
            }
            for id in g {
                out.push(self.alternatives(id));
            }
        }
        Ok(out)
    }
}
