//! `pmx analyze`: metrics and the top-down tree from counts saved earlier.
//!
//! The counts come as a [`StatReport`] read by `pmx-formats` (pmx's stat
//! CSV and JSON, totals or `-I` intervals; perf's `-x,` CSV and `-j`
//! JSON). [`analyze`] runs in stages, each a function below:
//!
//! 0. [`events`]: every event as read — value, unit, running share,
//!    per-interval spread, hybrid PMU — shown before the metrics.
//! 1. `Counts::of`: the rows folded per event and interval (rows
//!    of one event in several domains summed, and perf's per-box lines
//!    of an uncore event, `NAME [uncore_imc_3]`; perf's msec clocks in ns).
//! 2. [`keys`]: every event name of the file and of the metric library
//!    matched by encoding.
//! 3. `select`: the metrics asked for (`-M`), or every metric of the
//!    library but LIKWID's groups (`pmx_metrics::likwid`, computed when
//!    named), one per set of alternatives.
//! 4. `evaluate`: each over the summed totals of all intervals (the
//!    headline values), with the inputs the file lacks when it has none.
//! 5. `spreads`: for interval files, each metric per interval: minimum,
//!    mean and maximum.
//! 6. `tma`: the top-down tree to the level asked for.
//! 7. [`printed`]: each metric perf printed in the file beside pmx's value
//!    of it over the same interval, domain and core type.
//!
//! Events counted with modifiers (`:u`, `:k`, `:ppp`, `/u`) are matched
//! with the modifiers normalized away ([`keys::split_modifiers`]); the
//! report lists them. On a hybrid part (`cpu_core/…/` and `cpu_atom/…/`
//! rows) steps 1–5 run once per core type, each over its own rows and
//! the rows of no core type (software events).

mod counts;
pub mod cpu;
pub mod events;
pub mod keys;
pub mod printed;

use counts::Counts;
use pmx_events::Database;
use pmx_formats::StatReport;
use pmx_metrics::{Evaluated, Inputs, Library, Machine, MetricId, TmaReport};

pub use keys::key_fn;

/// What to compute from a file of counts.
#[derive(Clone, Copy)]
pub struct AnalyzeOptions<'a> {
    /// The counts, as read by `pmx_formats::read_file`.
    pub counts: &'a StatReport,
    /// The event database of the CPU the counts were taken on.
    pub db: &'a Database,
    /// `-M`: metrics or metric groups, comma-separated; `None`: every
    /// metric whose inputs are in the file.
    pub metrics: Option<&'a str>,
    /// Evaluate the top-down tree to this level (1 and up).
    pub tma_level: Option<u32>,
    /// SMT was on where the counts were taken.
    pub smt_on: bool,
}

/// Why the analysis could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalyzeError {
    /// `-M` names no metric or group of the library.
    #[error("-M: no metric or group '{name}' for {cpu}{}{}", did_you_mean(.suggestions), because(.why))]
    UnknownMetric {
        /// The name given.
        name: String,
        /// The CPU.
        cpu: String,
        /// Names close to it.
        suggestions: Vec<String>,
        /// Why the CPU has no such group, when pmx knows (a LIKWID group
        /// its generation cannot count: [`pmx_metrics::likwid::absent`]).
        why: Option<String>,
    },
    /// `--tma` on a CPU without a top-down tree.
    #[error("no top-down metrics are known for {cpu}")]
    NoTmaTree {
        /// The CPU.
        cpu: String,
    },
}

fn because(why: &Option<String>) -> String {
    why.as_ref().map_or(String::new(), |w| format!(": {w}"))
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}

/// min, mean, max of a metric over the intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSpread {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: f64,
    /// Intervals with a value.
    pub n: usize,
}

impl IntervalSpread {
    fn of(values: &[f64]) -> Option<IntervalSpread> {
        if values.is_empty() {
            return None;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        Some(IntervalSpread {
            min,
            mean,
            max,
            n: values.len(),
        })
    }
}

/// One metric over the file.
#[derive(Debug, Clone)]
pub struct MetricResult {
    /// Its id in [`AnalyzeReport::library`].
    pub id: MetricId,
    /// Its name.
    pub name: String,
    /// The value as shown (percentages scaled), `None` when not computed.
    pub value: Option<f64>,
    /// Its unit.
    pub unit: String,
    /// The evaluation: reliability, the missing input, assumptions.
    pub evaluated: Evaluated,
    /// Per interval (interval files).
    pub spread: Option<IntervalSpread>,
    /// Without a value: the counted inputs the file lacks.
    pub absent: Vec<String>,
    /// Without a value: worth listing (`-M` named it, or the file has one
    /// of its inputs).
    pub listed: bool,
    /// The core type (`cpu_core`, `cpu_atom`) on a hybrid part.
    pub core_type: Option<String>,
}

/// The top-down tree over the file.
#[derive(Debug, Clone)]
pub struct TmaSection {
    /// The tree's values.
    pub report: TmaReport,
    /// The inputs of its metrics the file lacks.
    pub absent: Vec<pmx_metrics::EventRef>,
    /// The level asked for.
    pub level: u32,
}

/// What `pmx analyze` found.
#[derive(Debug, Clone)]
pub struct AnalyzeReport {
    /// The file's form, as messages name it.
    pub format: &'static str,
    /// The CPU of the database.
    pub cpu: String,
    /// How the CPU was chosen when the file and `--cpu` did not say
    /// ([`cpu::CpuChoice::note`]); set by the caller.
    pub cpu_note: Option<String>,
    /// The events of the file, in file order.
    pub events: Vec<String>,
    /// Each event as read: value, unit, running share, spread.
    pub events_read: Vec<events::EventRead>,
    /// Events counted with modifiers: the name in the file, the name
    /// matched to metric inputs, the modifiers.
    pub modified: Vec<(String, String, String)>,
    /// The metrics perf printed in the file, each beside pmx's value.
    pub printed: Vec<printed::PrintedResult>,
    /// Intervals in the file (0 for a totals file).
    pub intervals: usize,
    /// SMT was on.
    pub smt_on: bool,
    /// Metrics were selected (by `-M`, or all of the library without
    /// `--tma`).
    pub selected: bool,
    /// `-M` was not given: every metric of the library was tried.
    pub default_mode: bool,
    /// One per metric tried, in library order.
    pub metrics: Vec<MetricResult>,
    /// With `--tma`.
    pub tma: Option<TmaSection>,
    /// The metric library (for the tree's renderer), with its warnings.
    pub library: Library,
}

/// Compute the metrics (and the tree) from a file's counts.
pub fn analyze(opts: &AnalyzeOptions) -> Result<AnalyzeReport, AnalyzeError> {
    let all = Counts::of(opts.counts);
    let cpu = opts.db.target.cpu.clone();
    let lib = pmx_count::metrics::library(opts.db);
    let machine = machine(opts.db, opts.smt_on);
    let names = lib
        .events()
        .iter()
        .map(|e| e.name.as_str())
        .chain(all.events.iter().map(String::as_str));
    let key = key_fn(opts.db, names);
    let selected = select(&lib, opts, &cpu.to_string())?;
    let mut metrics = Vec::new();
    for (core, part) in partitions(opts.counts) {
        let counts = Counts::of(&part);
        let keys: Vec<String> = counts.events.iter().map(|e| key(e)).collect();
        let totals = counts::inputs_of(&key, &keys, &counts.totals());
        // A table for one core type (Intel's P-core table on a hybrid
        // part) is evaluated on that core type's rows only.
        let own: Vec<Vec<MetricId>> = selected
            .iter()
            .map(|alts| {
                alts.iter()
                    .copied()
                    .filter(|&id| {
                        let pmu = lib.source_of(id).pmu.as_deref();
                        pmu.is_none() || core.is_none() || pmu == core.as_deref()
                    })
                    .collect()
            })
            .collect();
        let mut ms = evaluate(&lib, &own, &totals, &machine, opts.metrics.is_none());
        if counts.is_interval() && counts.intervals.len() > 1 {
            let per_interval: Vec<Inputs> = counts
                .intervals
                .iter()
                .map(|iv| counts::inputs_of(&key, &keys, iv))
                .collect();
            spreads(&lib, &mut ms, &per_interval, &machine);
        }
        for m in &mut ms {
            m.core_type.clone_from(&core);
        }
        metrics.extend(ms);
    }
    let tma = match opts.tma_level {
        Some(level) => {
            let keys: Vec<String> = all.events.iter().map(|e| key(e)).collect();
            let totals = counts::inputs_of(&key, &keys, &all.totals());
            Some(tma(&lib, level, &totals, &machine, &cpu.to_string())?)
        }
        None => None,
    };
    let ctx = printed::Ctx {
        lib: &lib,
        key: &key,
        machine: &machine,
    };
    let printed = printed::compare(opts.counts, &ctx);
    let modified = all
        .events
        .iter()
        .filter_map(|e| {
            let (base, mods) = keys::split_modifiers(e);
            (!mods.is_empty()).then(|| (e.clone(), base, mods))
        })
        .collect();
    Ok(AnalyzeReport {
        format: opts
            .counts
            .provenance
            .format
            .map(|f| f.describe())
            .unwrap_or(""),
        cpu: cpu.to_string(),
        cpu_note: None,
        events: all.events.clone(),
        events_read: events::events_read(opts.counts),
        modified,
        printed,
        intervals: if all.is_interval() {
            all.intervals.len()
        } else {
            0
        },
        smt_on: opts.smt_on,
        selected: !selected.is_empty(),
        default_mode: opts.metrics.is_none(),
        metrics,
        tma,
        library: lib,
    })
}

/// The report whole, or on a hybrid part one report per core type: its
/// rows and the rows of no core type.
fn partitions(report: &StatReport) -> Vec<(Option<String>, StatReport)> {
    let types: Vec<&str> = ["cpu_core", "cpu_atom"]
        .into_iter()
        .filter(|t| {
            report
                .rows
                .iter()
                .any(|r| printed::core_type(&r.event) == Some(*t))
        })
        .collect();
    if types.is_empty() {
        return vec![(None, report.clone())];
    }
    types
        .into_iter()
        .map(|t| {
            let mut part = report.clone();
            part.rows
                .retain(|r| printed::core_type(&r.event).is_none_or(|c| c == t));
            (Some(t.to_string()), part)
        })
        .collect()
}

/// The metrics to compute: each a list of alternatives, the first with a
/// value wins.
fn select(
    lib: &Library,
    opts: &AnalyzeOptions,
    cpu: &str,
) -> Result<Vec<Vec<MetricId>>, AnalyzeError> {
    match opts.metrics {
        Some(list) => lib.select(list).map_err(|u| AnalyzeError::UnknownMetric {
            why: pmx_metrics::likwid::absent(&u.name, &opts.db.target.cpu),
            name: u.name,
            cpu: cpu.to_string(),
            suggestions: u.suggestions,
        }),
        None if opts.tma_level.is_some() => Ok(Vec::new()),
        None => {
            let mut seen: Vec<bool> = vec![false; lib.len()];
            let mut out = Vec::new();
            for (id, _) in lib.iter() {
                // LIKWID's groups answer when asked for by name (`-M MEM`).
                let on_request = lib.source_of(id).kind == pmx_metrics::SourceKind::Groups;
                if seen[id.index()] || on_request {
                    continue;
                }
                let alts = lib.alternatives(id);
                for a in &alts {
                    seen[a.index()] = true;
                }
                out.push(alts);
            }
            Ok(out)
        }
    }
}

/// Each selected metric over the totals.
fn evaluate(
    lib: &Library,
    selected: &[Vec<MetricId>],
    inputs: &Inputs,
    machine: &Machine,
    default_mode: bool,
) -> Vec<MetricResult> {
    let mut ev = lib.evaluator(inputs, machine);
    let mut out = Vec::new();
    for alts in selected.iter().filter(|a| !a.is_empty()) {
        let (id, e) = match ev.first_with_value(alts) {
            Some(x) => x,
            None => (alts[0], ev.metric(alts[0])),
        };
        let m = lib.metric(id);
        let value = e.value().map(|v| m.display_value(v));
        let absent = if value.is_none() {
            lib.absent_inputs(&[id], inputs, Some(machine))
                .into_iter()
                .map(|e| e.name)
                .collect()
        } else {
            Vec::new()
        };
        let listed = value.is_none() && (!default_mode || has_any_input(lib, id, inputs, machine));
        out.push(MetricResult {
            id,
            name: m.name.clone(),
            value,
            unit: m.unit.clone(),
            evaluated: e,
            spread: None,
            absent,
            listed,
            core_type: None,
        });
    }
    out
}

/// Each metric with a value over the totals, per interval.
fn spreads(
    lib: &Library,
    metrics: &mut [MetricResult],
    per_interval: &[Inputs],
    machine: &Machine,
) {
    let mut vals: Vec<Vec<f64>> = vec![Vec::new(); metrics.len()];
    for inputs in per_interval {
        let mut ev = lib.evaluator(inputs, machine);
        for (i, r) in metrics.iter().enumerate() {
            if r.value.is_some() {
                if let Some(v) = ev.metric(r.id).value() {
                    vals[i].push(lib.metric(r.id).display_value(v));
                }
            }
        }
    }
    for (r, v) in metrics.iter_mut().zip(vals) {
        r.spread = IntervalSpread::of(&v);
    }
}

/// The top-down tree over the totals.
fn tma(
    lib: &Library,
    level: u32,
    inputs: &Inputs,
    machine: &Machine,
    cpu: &str,
) -> Result<TmaSection, AnalyzeError> {
    let tree = lib.tma_tree().ok_or_else(|| AnalyzeError::NoTmaTree {
        cpu: cpu.to_string(),
    })?;
    let mut ev = lib.evaluator(inputs, machine);
    let report = tree.evaluate(&mut ev, level);
    let absent = lib.absent_inputs(&tree.metrics_to_level(level), inputs, Some(machine));
    Ok(TmaSection {
        report,
        absent,
        level,
    })
}

/// Does the file have a reading for any counted input of `id`?
fn has_any_input(lib: &Library, id: MetricId, inputs: &Inputs, machine: &Machine) -> bool {
    lib.requirements(&[id], false, Some(machine))
        .events
        .iter()
        .any(|e| inputs.get(&e.name).is_some())
}

/// The machine facts `analyze` assumes for `db`'s CPU: SMT as given, a
/// thread's own counts.
pub fn machine(db: &Database, smt_on: bool) -> Machine {
    Machine {
        smt_on: Some(smt_on),
        threads_per_core: Some(if smt_on { 2 } else { 1 }),
        core_wide: Some(false),
        cpuid: Some(db.target.cpu.to_string()),
        ..Machine::default()
    }
}

/// The top-down tree over the totals of `counts` to `level`, as
/// [`analyze`] computes it, with a library loaded once by the caller
/// (`pmx compare --tma` evaluates one tree per run).
pub fn tma_tree(
    counts: &StatReport,
    db: &Database,
    lib: &Library,
    machine: &Machine,
    level: u32,
) -> Result<TmaReport, AnalyzeError> {
    let counts = Counts::of(counts);
    let names = lib
        .events()
        .iter()
        .map(|e| e.name.as_str())
        .chain(counts.events.iter().map(String::as_str));
    let key = key_fn(db, names);
    let keys: Vec<String> = counts.events.iter().map(|e| key(e)).collect();
    let totals = counts::inputs_of(&key, &keys, &counts.totals());
    Ok(tma(lib, level, &totals, machine, &db.target.cpu.to_string())?.report)
}
