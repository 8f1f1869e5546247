//! Derived metrics for the library: a list like `IPC,TopdownL1` chosen
//! from the CPU's metric library (`pmx-metrics`), the events they need as
//! `-e` specs, and their values from counts read by `pmx::Counters` or
//! accumulated by `pmx::region`.
//!
//! A metric whose input was not counted has no value: [`MetricValue`]
//! says which input and why (`IPC ← cycles: not supported: …`), exactly
//! as `pmx stat -M` does; below a 70% running share it is an estimate.

use crate::eventlist::EventGroup;
use crate::stat::{Domain, EventStatus, Row, StatPlan};
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
    /// The inputs whose spec parses but names no event of the database
    /// (the spec, why): counted as not supported.
    unresolved: Vec<(String, String)>,
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
    /// The value in `unit`: the formula's result times the metric's scale
    /// (perf's `ScaleUnit`: `100%` × 100, `6.1e-5MiB` × 6.1e-5), as perf
    /// prints it; `None` when an input is missing.
    pub value: Option<f64>,
    /// Unit (`%`, `GHz`, `MiB`, …), may be empty.
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
#[error("unknown metric '{name}' for {cpu}{}{}", suggest(.suggestions), note(.why))]
pub struct UnknownMetric {
    /// The name as given.
    pub name: String,
    /// The CPU.
    pub cpu: String,
    /// Close names.
    pub suggestions: Vec<String>,
    /// Why the CPU has no such metric, where its generation says it (a
    /// top-down group asked of an AMD Zen 1–3).
    pub why: Option<String>,
}

fn note(why: &Option<String>) -> String {
    why.as_ref().map_or(String::new(), |w| format!(": {w}"))
}

/// Why a top-down group (`TopdownL1`, `PipelineL2`, `tma_…`) is unknown on
/// `cpu`, when the CPU's generation is the reason: AMD publishes its
/// pipeline-utilization (top-down) tree from Zen 4 on, and its earlier
/// cores have none (nor has Linux perf for them).
fn topdown_absent(name: &str, cpu: &pmx_model::cpu::CpuId) -> Option<String> {
    use pmx_events::amd_builtin::{generation_for, Zen};
    let n = name.to_ascii_lowercase();
    let topdown = ["topdown", "pipeline", "tma_"]
        .iter()
        .any(|p| n.starts_with(p));
    let zen = generation_for(cpu)?;
    (topdown && matches!(zen, Zen::Zen1 | Zen::Zen2 | Zen::Zen3)).then(|| {
        format!(
            "AMD defines its top-down (pipeline utilization) metrics from Zen 4 on, \
             and this CPU is {} (Linux perf has none for it either)",
            zen.code().replace("zen", "Zen ")
        )
    })
}

/// Why a recording's metrics could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum RecordingMetricsError {
    /// No database loads (not even this machine's).
    #[error(transparent)]
    Database(#[from] crate::database::DatabaseError),
    /// A name the CPU's library does not have.
    #[error(transparent)]
    Unknown(#[from] UnknownMetric),
}

/// perf's x86 `CPUID` header (`GenuineIntel,6,78,3`: family, model and
/// stepping in decimal) as pmx's CPU key (`GenuineIntel-6-4E-3`); `None`
/// for other forms (Arm's MIDR).
pub fn recording_cpu(cpuid: &str) -> Option<String> {
    let mut it = cpuid.trim().split(',');
    let vendor = it
        .next()
        .filter(|v| v.starts_with("Genuine") || v.ends_with("AMD") || *v == "HygonGenuine")?;
    let mut num = || it.next()?.trim().parse::<u32>().ok();
    let (family, model) = (num()?, num()?);
    Some(match num() {
        Some(step) => format!("{vendor}-{family}-{model:X}-{step:X}"),
        None => format!("{vendor}-{family}-{model:X}"),
    })
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
    /// for `db`'s CPU ([`library`]: the tables of every events directory
    /// `db` searched). Where a metric has several definitions, the first
    /// whose events this machine can count is taken.
    pub fn new(list: &str, db: &Database) -> Result<MetricSet, UnknownMetric> {
        match MetricSet::with_definitions(Some(list), &[], db) {
            Ok(m) => Ok(m),
            Err(MetricError::Unknown(u)) => Err(u),
            Err(MetricError::Define { .. }) => unreachable!("no definitions were given"),
        }
    }

    /// [`MetricSet::new`] for an optional `list` plus metrics defined here
    /// (`NAME = FORMULA`, in the library's formula language, over event
    /// names and other metrics); the defined ones follow the listed ones.
    pub fn with_definitions(
        list: Option<&str>,
        defines: &[(String, String)],
        db: &Database,
    ) -> Result<MetricSet, MetricError> {
        MetricSet::build(list, defines, db, None)
    }

    /// [`MetricSet::new`] over counts already taken of `events` (the
    /// members of a sample-read group in a perf.data file): where a
    /// metric has several definitions, the first whose inputs are all
    /// among `events` (names compared without PMU and modifiers).
    pub fn for_events(
        list: &str,
        db: &Database,
        events: &[String],
    ) -> Result<MetricSet, UnknownMetric> {
        let have = |name: &str| events.iter().any(|e| event_base(e) == event_base(name));
        match MetricSet::build(Some(list), &[], db, Some(&have)) {
            Ok(m) => Ok(m),
            Err(MetricError::Unknown(u)) => Err(u),
            Err(MetricError::Define { .. }) => unreachable!("no definitions were given"),
        }
    }

    /// [`MetricSet::for_events`] for a perf.data file: the library of the
    /// CPU its header names (`cpuid`, perf's `CPUID` feature:
    /// `GenuineIntel,6,78,3`), else of this machine, with the tables of
    /// `dirs` (`$PMX_EVENTS_DIR`, else the cache, as the caller read them).
    /// Both errors are the user's to fix (exit 2).
    pub fn for_recording(
        list: &str,
        cpuid: Option<&str>,
        events: &[String],
        dirs: &crate::database::EventsDirDefault,
    ) -> Result<MetricSet, RecordingMetricsError> {
        use crate::database::{load, DatabaseOptions};
        let cpu = cpuid.and_then(recording_cpu);
        let here = DatabaseOptions {
            events_dir_default: dirs.clone(),
            ..Default::default()
        };
        let db = match cpu {
            Some(c) => load(&DatabaseOptions {
                cpu: Some(c),
                ..here.clone()
            })
            .or_else(|_| load(&here))?,
            None => load(&here)?,
        };
        Ok(MetricSet::for_events(list, &db, events)?)
    }

    /// The metrics from exact counts: `get(name)` is the count of the
    /// input the library calls `name` (`instructions`, `cycles`), `None`
    /// when there is none. One value per metric, in order.
    pub fn evaluate_exact(&self, get: &dyn Fn(&str) -> Option<f64>) -> Vec<Option<f64>> {
        let mut inputs = Inputs::new();
        for (name, _) in &self.inputs {
            match get(name) {
                Some(v) => inputs.insert(name, Reading::exact(v)),
                None => inputs.insert(name, Reading::NotCounted { why: None }),
            };
        }
        let mut ev = self.lib.evaluator(&inputs, &self.machine);
        self.chosen
            .iter()
            .map(|&id| ev.metric(id).value())
            .collect()
    }

    fn build(
        list: Option<&str>,
        defines: &[(String, String)],
        db: &Database,
        have: Option<&dyn Fn(&str) -> bool>,
    ) -> Result<MetricSet, MetricError> {
        let mut lib = library(db);
        let mut defined = Vec::new();
        for (name, formula) in defines {
            let id = lib.define(name, formula).map_err(|e| MetricError::Define {
                name: name.clone(),
                message: e.to_string(),
            })?;
            defined.push(id);
        }
        let wanted = match list {
            Some(l) => lib.select(l).map_err(|e| {
                MetricError::Unknown(UnknownMetric {
                    name: e.name.clone(),
                    cpu: db.target.cpu.to_string(),
                    suggestions: e.suggestions.clone(),
                    why: topdown_absent(&e.name, &db.target.cpu)
                        .or_else(|| pmx_metrics::likwid::absent(&e.name, &db.target.cpu)),
                })
            })?,
            None => Vec::new(),
        };
        let machine = this_machine();
        let countable = |e: &pmx_metrics::EventRef| match have {
            Some(have) => have(&e.name),
            None => e
                .spec("cpu")
                .and_then(|s| parse_spec(&s).ok())
                .is_some_and(|spec| db.try_resolve(&spec).is_some()),
        };
        let mut chosen: Vec<MetricId> = wanted
            .iter()
            .filter_map(|alts| {
                lib.choose(alts, Some(&machine), countable)
                    .or(alts.first().copied())
            })
            .collect();
        for id in defined {
            if !chosen.contains(&id) {
                chosen.push(id);
            }
        }
        let req = lib.requirements(&chosen, false, Some(&machine));
        let mut unresolved = Vec::new();
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
                            Err(err) => {
                                let why = format!("{} for {}", err.message, db.target.cpu);
                                unresolved.push((s, why.clone()));
                                Err(why)
                            }
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
            unresolved,
            machine,
        })
    }

    /// What loading the library noticed (files it could not read, …), one
    /// line each.
    pub fn notes(&self) -> Vec<String> {
        self.lib
            .warnings
            .iter()
            .map(|w| format!("metrics: {w}"))
            .collect()
    }

    /// The events to count for the metrics as single-event groups (the
    /// scheduler packs them), skipping those already in `have`.
    pub fn event_groups(&self, have: &[EventGroup]) -> Vec<EventGroup> {
        let mut out: Vec<EventGroup> = Vec::new();
        for text in self.event_specs() {
            let already = have
                .iter()
                .chain(out.iter())
                .any(|g| g.members.iter().any(|m| m.text == text));
            if already {
                continue;
            }
            if let Ok(parsed) = parse_spec(&text) {
                out.push(EventGroup {
                    members: vec![parsed],
                    explicit: false,
                    unsupported: None,
                });
            }
        }
        out
    }

    /// The inputs this machine's database cannot resolve (an Intel
    /// metric's `topdown-retiring` where the kernel shows no core PMU), as
    /// single-event groups planned as not supported
    /// ([`EventGroup::unsupported`]), skipping those already in `have`:
    /// `pmx stat -M` prints them as perf prints inputs it cannot count.
    pub fn unsupported_groups(&self, have: &[EventGroup]) -> Vec<EventGroup> {
        let mut out: Vec<EventGroup> = Vec::new();
        for (text, why) in &self.unresolved {
            let already =
                (have.iter().chain(out.iter())).any(|g| g.members.iter().any(|m| &m.text == text));
            if let (false, Ok(parsed)) = (already, parse_spec(text)) {
                out.push(EventGroup {
                    members: vec![parsed],
                    explicit: false,
                    unsupported: Some(why.clone()),
                });
            }
        }
        out
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
        self.evaluate_inputs(
            &|spec| match lookup(spec) {
                Ok(c) if c.running > 0 || c.enabled == 0 => Input::Count(c),
                Ok(_) => Input::NotCounted("never ran".to_string()),
                Err(why) => Input::NotSupported(why),
            },
            duration,
        )
    }

    /// The metrics from what `lookup(spec)` says of each input.
    pub fn evaluate_inputs(
        &self,
        lookup: &dyn Fn(&str) -> Input,
        duration: Option<f64>,
    ) -> Vec<MetricValue> {
        let mut inputs = Inputs::new();
        inputs.duration = duration;
        for (name, spec) in &self.inputs {
            let reading = match spec {
                Err(why) => Reading::NotSupported { why: why.clone() },
                Ok(text) => match lookup(text) {
                    Input::Count(c) => Reading::count(c.value, c.enabled, c.running),
                    Input::NotSupported(why) => Reading::NotSupported { why },
                    Input::NotCounted(why) => Reading::NotCounted { why: Some(why) },
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
                    value: r.value().map(|v| m.display_value(v)),
                    unit: m.unit.clone(),
                    reliability: r.reliability,
                    estimate: r.is_estimate(),
                    missing: r.missing().map(|x| x.to_string()),
                }
            })
            .collect()
    }

    /// The metrics for every domain of `rows` (from
    /// [`crate::stat::aggregate`] over `plan`), whose counts cover
    /// `duration` seconds. An input is the plan's event of the same name,
    /// in the row's domain or, for events counted once for the whole
    /// machine, the total; a counted event without a running row there has
    /// `idle` as its reason.
    pub fn evaluate_rows(
        &self,
        plan: &StatPlan,
        status: &[EventStatus],
        rows: &[Row],
        duration: f64,
        idle: &str,
    ) -> Vec<(Domain, MetricValue)> {
        let mut domains: Vec<Domain> = rows.iter().map(|r| r.domain.clone()).collect();
        domains.sort();
        domains.dedup();
        let mut out = Vec::new();
        for d in &domains {
            let one = |ei: usize| match status.get(ei) {
                Some(EventStatus::NotSupported(why)) => Input::NotSupported(why.to_string()),
                Some(EventStatus::NotCounted(why)) => Input::NotCounted(why.to_string()),
                Some(EventStatus::Counted) => match rows
                    .iter()
                    .find(|r| r.event == ei && (&r.domain == d || r.domain == Domain::Total))
                {
                    Some(r) if r.count.running > 0 => Input::Count(r.count),
                    _ => Input::NotCounted(idle.to_string()),
                },
                None => Input::NotCounted("not scheduled".to_string()),
            };
            let lookup = |text: &str| match plan.events.iter().position(|e| e.name == text) {
                Some(ei) => one(ei),
                None => boxes_summed(plan, text, &one),
            };
            out.extend(
                self.evaluate_inputs(&lookup, Some(duration))
                    .into_iter()
                    .map(|v| (d.clone(), v)),
            );
        }
        out
    }
}

/// An input split into its boxes (`--no-merge`: the plan's events whose
/// origin is `text`) is their sum, as perf 6.1 computes a metric over
/// box events: one value, every box's count added. The first box that
/// is not counted decides, named in the reason.
fn boxes_summed(plan: &StatPlan, text: &str, one: &dyn Fn(usize) -> Input) -> Input {
    let mut sum: Option<Count> = None;
    for (ei, _) in plan
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.origin.as_ref().is_some_and(|(o, _)| o == text))
    {
        match one(ei) {
            Input::Count(c) => {
                let s = sum.get_or_insert(Count::default());
                s.value += c.value;
                s.enabled += c.enabled;
                s.running += c.running;
            }
            Input::NotSupported(why) => {
                return Input::NotSupported(format!("{}: {why}", plan.events[ei].name))
            }
            Input::NotCounted(why) => {
                return Input::NotCounted(format!("{}: {why}", plan.events[ei].name))
            }
        }
    }
    sum.map_or_else(
        || Input::NotCounted("not scheduled".to_string()),
        Input::Count,
    )
}

/// An event's name without its PMU (`cpu/cycles/` → `cycles`) and
/// modifiers (`cycles:u` → `cycles`), lower-case.
pub fn event_base(name: &str) -> String {
    let n = name.trim();
    let n = n
        .strip_prefix("cpu/")
        .or_else(|| n.strip_prefix("cpu_core/"))
        .map_or(n, |x| {
            x.trim_end_matches(['/', ':'])
                .split('/')
                .next()
                .unwrap_or(x)
        });
    n.split(':').next().unwrap_or(n).to_ascii_lowercase()
}

/// What is known of one metric input.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Counted.
    Count(Count),
    /// This machine cannot count it: why.
    NotSupported(String),
    /// It could be counted but was not (never scheduled, never ran): why.
    NotCounted(String),
}

/// Why a metric set cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    /// A listed name is neither a metric nor a group.
    #[error("{0}")]
    Unknown(UnknownMetric),
    /// A definition does not parse or names what does not exist.
    #[error("define {name}: {message}")]
    Define {
        /// The metric being defined.
        name: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The metric library for `db`'s CPU: the metric tables of every events
/// directory `db` searched ([`Database::events_dirs`]: each `--events-dir`
/// in order, else `$PMX_EVENTS_DIR`, else the cache) — Intel's and Linux
/// perf's layouts alike, each directory for whichever CPU it has tables —
/// then pmx's built-in metrics. `stat -M`, `analyze`, `tma`, `serve -M` and
/// the library API all load metrics here, so they see the same list.
pub fn library(db: &Database) -> Library {
    let dirs: Vec<&std::path::Path> = db
        .events_dirs()
        .iter()
        .map(|d| d.as_path())
        .filter(|d| d.is_dir())
        .collect();
    Library::for_cpu_dirs(Some(&db.target.cpu), &dirs)
}

/// The facts about this machine that metric formulas use (SMT, CPU, core
/// and package counts), from sysfs.
pub fn this_machine() -> Machine {
    let topo = pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut Vec::new());
    Machine {
        smt_on: Some(topo.smt_active()),
        num_cpus: Some(topo.cpu_count() as u32),
        num_cpus_online: Some(topo.online_count() as u32),
        num_cores: Some(topo.core_count() as u32),
        num_packages: Some(topo.package_count() as u32),
        ..Machine::default()
    }
}

#[cfg(test)]
mod tests {
    use super::{recording_cpu, Input, MetricSet};
    use crate::database::{load, DatabaseOptions};
    use pmx_model::count::Count;

    /// A metric's value is its formula times its table's `ScaleUnit`
    /// number, in the unit after it, as perf prints it: Zen 3's
    /// `branch_misprediction_ratio` (`100%`) and Zen 5's
    /// `all_data_cache_accesses_pti` (`1e3per_1k_instr`) from perf's
    /// tables; 25 of 100 branches mispredicted, 400 of 1,000 instructions
    /// dispatched loads.
    #[test]
    fn values_carry_the_tables_scale_unit() {
        let Some(dir) = pmx_testkit::shared::shared_data("linux-perf-events") else {
            return;
        };
        let count = |spec: &str| {
            let value = match spec {
                s if s.contains("brn_misp") => 25,
                s if s.contains("brn") => 100,
                s if s.contains("ls_dispatch") => 400,
                _ => 1_000,
            };
            Input::Count(Count {
                value,
                enabled: 1,
                running: 1,
            })
        };
        for (cpu, metric, value, unit) in [
            (
                "AuthenticAMD-25-1-1",
                "branch_misprediction_ratio",
                25.0,
                "%",
            ),
            (
                "AuthenticAMD-26-2-1",
                "all_data_cache_accesses_pti",
                400.0,
                "per_1k_instr",
            ),
        ] {
            let opts = DatabaseOptions {
                cpu: Some(cpu.to_string()),
                events_dir: Some(dir.clone()),
                no_libpfm: true,
                ..DatabaseOptions::default()
            };
            let db = load(&opts).unwrap();
            let set = MetricSet::new(metric, &db).unwrap();
            let v = set.evaluate_inputs(&|spec| count(spec), Some(1.0));
            assert_eq!(v.len(), 1, "{v:?}");
            let got = v[0].value.unwrap_or_else(|| panic!("{v:?}"));
            assert!((got - value).abs() < 1e-9, "{metric}: {v:?}");
            assert_eq!(v[0].unit, unit, "{metric}");
        }
    }

    #[test]
    fn perf_cpuid_headers_become_cpu_keys() {
        // perf writes family, model and stepping in decimal (its x86
        // get_cpuid: "%s,%u,%u,%u"); pmx's keys carry model and stepping
        // in hex, as perf's mapfile.csv does.
        assert_eq!(
            recording_cpu("GenuineIntel,6,78,3").as_deref(),
            Some("GenuineIntel-6-4E-3")
        );
        assert_eq!(
            recording_cpu("AuthenticAMD,25,17,1").as_deref(),
            Some("AuthenticAMD-25-11-1")
        );
        assert_eq!(recording_cpu("0x00000000410fd0c0"), None);
        assert_eq!(recording_cpu("GenuineIntel,x,78"), None);
    }
}
