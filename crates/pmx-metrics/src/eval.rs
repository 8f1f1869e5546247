//! Evaluation: readings and machine facts in, a value or a reason out.
//!
//! ## Inputs
//!
//! [`Inputs`] holds one [`Reading`] per event (a raw [`Count`] with its
//! enabled/running times, an already-scaled value with its running share,
//! or the fact that the event was not counted or is not supported), the
//! measurement's duration, and optionally per-instance values, source counts
//! and which events exist. [`Machine`] holds the facts formulas ask about the
//! machine (`#smt_on`, `#num_cpus`, TSC frequency…).
//!
//! ## Values and missing values
//!
//! A metric evaluates to an [`Outcome`]: a number, or [`Missing`] — which
//! input could not be had and why ([`Reason`]: not supported, not counted,
//! not requested, divided by zero, unknown or unset constant, …). Missing
//! propagates through every operator and through every metric that uses the
//! metric, and each metric it passes through is added to the chain, so the
//! answer reads `l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK: not
//! counted`.
//!
//! Rules, chosen so a number is never shown for something that was not
//! measured, and nothing is marked missing for an input it did not need:
//! - `x / y` with `y` = 0 is missing (divided by zero), naming `y`.
//!   `d_ratio(x, y)` is 0 when `y` is 0, as perf defines it.
//! - `X if C else Y` (and `if(C, X, Y)`) evaluates `C`, then only the branch
//!   taken: an input of the untaken branch is not needed, so its absence
//!   does not make the metric missing and its running share does not count
//!   (perf evaluates both branches).
//! - `and`/`or` are decided by any side that decides them: `false and ?` is
//!   false, `true or ?` is true, even when `?` is missing. Comparisons,
//!   `and`, `or`, `not` give 1 or 0; any non-zero value is true.
//! - `min`/`max` and every arithmetic operator need all their operands.
//! - A result that is not a finite number is missing (not a number).
//! - When several inputs are missing, the first in reading order is named
//!   ([`crate::Library::absent_inputs`] lists them all).
//! - A retire-latency input (`EVENT:retire_latency`, perf's `:R`) without a
//!   reading takes Intel's published mean when the library has one, and the
//!   result lists it in [`Evaluated::assumptions`].
//!
//! ## Reliability
//!
//! Each metric's reliability is the smallest running/enabled share among the
//! counted inputs it actually used (through other metrics too). Below
//! [`ESTIMATE_BELOW`] (0.7) the value is flagged as an estimate. A metric
//! built only from numbers and constants, or from readings without timing,
//! has no share and is exact.

use crate::compile::{Compiled, Node};
use crate::event::EventRef;
use crate::formula::{BinOp, Constant, Expr, ExprKind, Func, Special};
use crate::library::{Library, MetricId};
// The input maps are hashed once per reading and per event of every
// interval, and their keys are short.
use pmx_model::hash::FnvMap;
use pmx_model::Count;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Below this running/enabled share a metric is flagged as an estimate.
pub const ESTIMATE_BELOW: f64 = 0.7;

/// What is known about one event of a measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Reading {
    /// A counter reading with enabled/running times; the value used is
    /// scaled (`value × enabled / running`), the share is `running /
    /// enabled`. Software clock events (`task-clock`) count nanoseconds.
    Counted {
        /// The reading.
        count: Count,
    },
    /// A value already scaled for multiplexing (e.g. read from `perf stat`
    /// output), with the share of the time it was running when known.
    Scaled {
        /// The scaled value.
        value: f64,
        /// `running / enabled` in `[0, 1]`, when known.
        running_share: Option<f64>,
    },
    /// Requested but never counted (multiplexed out, or `<not counted>`).
    NotCounted {
        /// Why, when known.
        why: Option<String>,
    },
    /// The event cannot be counted here (`<not supported>`, unknown name,
    /// the PMU refused it).
    NotSupported {
        /// Why.
        why: String,
    },
}

impl Reading {
    /// A raw count.
    pub fn count(value: u64, enabled: u64, running: u64) -> Reading {
        Reading::Counted {
            count: Count {
                value,
                enabled,
                running,
            },
        }
    }

    /// An exact value (no multiplexing).
    pub fn exact(value: f64) -> Reading {
        Reading::Scaled {
            value,
            running_share: None,
        }
    }

    /// The value and the running share, or why there is no value.
    fn resolve(&self) -> Result<(f64, Option<f64>), Reason> {
        match self {
            Reading::Counted { count } => match count.scaled() {
                Some(v) => Ok((v, count.running_share())),
                None => Err(Reason::NotCounted(Some(if count.enabled == 0 {
                    "never enabled".to_string()
                } else {
                    "never scheduled on a counter (multiplexed out)".to_string()
                }))),
            },
            Reading::Scaled {
                value,
                running_share,
            } => {
                if value.is_finite() {
                    Ok((*value, running_share.map(|s| s.clamp(0.0, 1.0))))
                } else {
                    Err(Reason::NotANumber)
                }
            }
            Reading::NotCounted { why } => Err(Reason::NotCounted(why.clone())),
            Reading::NotSupported { why } => Err(Reason::NotSupported(why.clone())),
        }
    }
}

/// A function from an event name to the key readings are matched by.
pub type KeyFn = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The readings of one measurement (one run, or one interval).
#[derive(Clone, Default)]
pub struct Inputs {
    readings: FnvMap<String, Reading>,
    instances: FnvMap<(String, u32), Reading>,
    sources: FnvMap<String, u32>,
    exists: FnvMap<String, bool>,
    /// Wall-clock seconds of the measurement (`duration_time`).
    pub duration: Option<f64>,
    /// User CPU seconds of the command (`user_time`).
    pub user_time: Option<f64>,
    /// System CPU seconds of the command (`system_time`).
    pub system_time: Option<f64>,
    key_fn: Option<KeyFn>,
    core_pmu: Option<String>,
}

impl fmt::Debug for Inputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inputs")
            .field("readings", &self.readings)
            .field("duration", &self.duration)
            .field("custom_keys", &self.key_fn.is_some())
            .finish_non_exhaustive()
    }
}

impl Inputs {
    /// No readings; events are matched by [`crate::event_key`].
    pub fn new() -> Inputs {
        Inputs::default()
    }

    /// No readings; events are matched by `key`. Use a key that resolves
    /// names to encodings to make `r3c`, `cpu/event=0x3c/` and
    /// `CPU_CLK_UNHALTED.THREAD_P` the same input.
    pub fn with_key_fn(key: KeyFn) -> Inputs {
        Inputs {
            key_fn: Some(key),
            ..Inputs::default()
        }
    }

    /// No readings; events are matched by [`crate::event::event_key_in`]
    /// with `pmu` as the core PMU, so that `cpu_core/X/` readings of a
    /// hybrid part meet the P-core table's `X`.
    pub fn with_core_pmu(pmu: &str) -> Inputs {
        Inputs {
            core_pmu: Some(pmu.to_string()),
            ..Inputs::default()
        }
    }

    /// Make room for `n` more readings.
    pub fn reserve(&mut self, n: usize) {
        self.readings.reserve(n);
    }

    /// The key of an event name.
    pub fn key(&self, event: &str) -> String {
        match (&self.key_fn, &self.core_pmu) {
            (Some(f), _) => f(event),
            (None, Some(pmu)) => crate::event::event_key_in(event, pmu),
            (None, None) => crate::event::event_key(event),
        }
    }

    /// Set the reading of `event` (replacing an earlier one).
    pub fn insert(&mut self, event: &str, reading: Reading) -> &mut Inputs {
        self.readings.insert(self.key(event), reading);
        self
    }

    /// Set the reading for a key computed earlier with [`Inputs::key`]
    /// (callers reading many intervals of the same events compute each
    /// event's key once).
    pub fn insert_keyed(&mut self, key: String, reading: Reading) -> &mut Inputs {
        self.readings.insert(key, reading);
        self
    }

    /// Set a raw count of `event`.
    pub fn insert_count(&mut self, event: &str, count: Count) -> &mut Inputs {
        self.insert(event, Reading::Counted { count })
    }

    /// The reading of `event`, if any.
    pub fn get(&self, event: &str) -> Option<&Reading> {
        self.readings.get(&self.key(event))
    }

    fn get_key(&self, key: &str) -> Option<&Reading> {
        self.readings.get(key)
    }

    /// How many readings there are.
    pub fn len(&self) -> usize {
        self.readings.len()
    }

    /// True when there are no readings.
    pub fn is_empty(&self) -> bool {
        self.readings.is_empty()
    }

    /// Set the reading of instance `index` of `event` (`x[0]` in formulas).
    pub fn insert_instance(&mut self, event: &str, index: u32, reading: Reading) -> &mut Inputs {
        self.instances.insert((self.key(event), index), reading);
        self
    }

    /// Set how many PMU instances were summed into `event`'s reading
    /// (`source_count(x)` in formulas).
    pub fn set_source_count(&mut self, event: &str, n: u32) -> &mut Inputs {
        self.sources.insert(self.key(event), n);
        self
    }

    /// Say whether `event` exists on the CPU (`has_event(x)` in formulas).
    /// Without this, an event with a reading exists unless the reading is
    /// [`Reading::NotSupported`].
    pub fn set_exists(&mut self, event: &str, exists: bool) -> &mut Inputs {
        self.exists.insert(self.key(event), exists);
        self
    }
}

/// Facts about the machine that formulas may use. `None` means unknown: a
/// formula that needs it is missing ("constant not set").
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Machine {
    /// SMT (Hyper-Threading) is on (`#smt_on`, `HYPERTHREADING_ON`).
    pub smt_on: Option<bool>,
    /// Hardware threads per core (`THREADS_PER_CORE`).
    pub threads_per_core: Option<u32>,
    /// Logical CPUs (`#num_cpus`).
    pub num_cpus: Option<u32>,
    /// Online logical CPUs (`#num_cpus_online`).
    pub num_cpus_online: Option<u32>,
    /// Physical cores (`#num_cores`).
    pub num_cores: Option<u32>,
    /// Packages (sockets) (`#num_packages`, `SOCKET_COUNT`).
    pub num_packages: Option<u32>,
    /// Dies (`#num_dies`).
    pub num_dies: Option<u32>,
    /// Pipeline width, issue slots per cycle (`#slots`).
    pub pipeline_width: Option<u32>,
    /// TSC frequency in Hz (`#system_tsc_freq`, `SYSTEM_TSC_FREQ`).
    pub tsc_frequency_hz: Option<f64>,
    /// Nominal (base) frequency in Hz (`#base_frequency`).
    pub base_frequency_hz: Option<f64>,
    /// Counts cover every SMT sibling of each core (`#core_wide`).
    pub core_wide: Option<bool>,
    /// CHA (LLC slice) boxes per socket (`CHAS_PER_SOCKET`).
    pub chas_per_socket: Option<u32>,
    /// Cores per socket (`CORES_PER_SOCKET`).
    pub cores_per_socket: Option<u32>,
    /// The CPU key (`GenuineIntel-6-55-4`), for `strcmp_cpuid_str()`.
    pub cpuid: Option<String>,
    /// Any other `#name`, by lower-case name without the `#`.
    pub extra: BTreeMap<String, f64>,
}

impl Machine {
    fn constant(&self, c: &Constant) -> Option<f64> {
        let b = |x: Option<bool>| x.map(|v| if v { 1.0 } else { 0.0 });
        let n = |x: Option<u32>| x.map(f64::from);
        match c {
            Constant::SmtOn => b(self.smt_on),
            Constant::ThreadsPerCore => n(self.threads_per_core)
                .or_else(|| self.smt_on.map(|on| if on { 2.0 } else { 1.0 })),
            Constant::NumCpus => n(self.num_cpus),
            Constant::NumCpusOnline => n(self.num_cpus_online).or(n(self.num_cpus)),
            Constant::NumCores => n(self.num_cores),
            Constant::NumPackages => n(self.num_packages),
            Constant::NumDies => n(self.num_dies),
            Constant::Slots => n(self.pipeline_width),
            Constant::TscFrequency => self.tsc_frequency_hz,
            Constant::BaseFrequency => self.base_frequency_hz,
            Constant::CoreWide => b(self.core_wide),
            Constant::ChasPerSocket => n(self.chas_per_socket),
            Constant::CoresPerSocket => n(self.cores_per_socket),
            Constant::Other(name) => self.extra.get(&name.to_ascii_lowercase()).copied(),
            Constant::DurationMs | Constant::DurationS | Constant::NotAvailable => None,
        }
    }
}

/// Why a value is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum Reason {
    /// The event cannot be counted on this CPU or by this kernel.
    NotSupported(String),
    /// The event was requested but never counted.
    NotCounted(Option<String>),
    /// No reading was given for the input.
    NotRequested,
    /// The input is the divisor of a division, and it is 0.
    DividedByZero,
    /// A `#name` pmx does not know.
    UnknownConstant,
    /// A known machine fact whose value was not given.
    ConstantNotSet,
    /// A name that must be a metric but no metric has it.
    UnknownMetric,
    /// The metric depends on itself.
    Cycle,
    /// The value exists in principle but not here (Intel's `#NA`, a
    /// per-instance value, a source count).
    NotAvailable(String),
    /// The computation did not give a finite number.
    NotANumber,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotSupported(why) if why.is_empty() => write!(f, "not supported"),
            Reason::NotSupported(why) => write!(f, "not supported ({why})"),
            Reason::NotCounted(None) => write!(f, "not counted"),
            Reason::NotCounted(Some(why)) => write!(f, "not counted ({why})"),
            Reason::NotRequested => write!(f, "not requested"),
            Reason::DividedByZero => write!(f, "divided by zero"),
            Reason::UnknownConstant => write!(f, "unknown constant"),
            Reason::ConstantNotSet => write!(f, "constant not set"),
            Reason::UnknownMetric => write!(f, "no such metric"),
            Reason::Cycle => write!(f, "the metric depends on itself"),
            Reason::NotAvailable(why) => write!(f, "not available ({why})"),
            Reason::NotANumber => write!(f, "not a number"),
        }
    }
}

/// A missing value: which input, why, and through which metrics it came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The event, constant or expression that could not be had (for
    /// division by zero: the divisor as written).
    pub input: String,
    /// Why.
    pub reason: Reason,
    /// The metrics it passed through, outermost first: for
    /// `l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK` it is
    /// `["l2_miss_ratio", "l2_misses"]`.
    pub chain: Vec<String>,
}

impl Missing {
    fn new(input: impl Into<String>, reason: Reason) -> Missing {
        Missing {
            input: input.into(),
            reason,
            chain: Vec::new(),
        }
    }

    /// `a ← b ← input` without the reason.
    pub fn path(&self) -> String {
        let mut parts: Vec<&str> = self.chain.iter().map(String::as_str).collect();
        if self.chain.last().map(String::as_str) != Some(self.input.as_str()) {
            parts.push(&self.input);
        }
        parts.join(" ← ")
    }
}

impl fmt::Display for Missing {
    /// `l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK: not counted`;
    /// for a division: `ipc: divided by zero (cycles = 0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason == Reason::DividedByZero {
            if self.chain.is_empty() {
                return write!(f, "divided by zero ({} = 0)", self.input);
            }
            return write!(
                f,
                "{}: divided by zero ({} = 0)",
                self.chain.join(" ← "),
                self.input
            );
        }
        write!(f, "{}: {}", self.path(), self.reason)
    }
}

/// A value or the reason there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// The value (before the metric's display scale).
    Value {
        /// The number.
        value: f64,
    },
    /// No value.
    Missing(Missing),
}

impl Outcome {
    /// The value, if there is one.
    pub fn value(&self) -> Option<f64> {
        match self {
            Outcome::Value { value } => Some(*value),
            Outcome::Missing(_) => None,
        }
    }

    /// Why there is no value, if there is none.
    pub fn missing(&self) -> Option<&Missing> {
        match self {
            Outcome::Value { .. } => None,
            Outcome::Missing(m) => Some(m),
        }
    }
}

/// A metric's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluated {
    /// The value or why there is none.
    pub outcome: Outcome,
    /// The smallest running/enabled share among the counted inputs used;
    /// `None` when no input had one (exact).
    pub reliability: Option<f64>,
    /// The input with that share.
    pub least_running: Option<String>,
    /// Values the metric used that were not measured (Intel's published
    /// mean retire latencies), as `EVENT = value (where from)`.
    pub assumptions: Vec<String>,
}

impl Evaluated {
    /// The value, if there is one.
    pub fn value(&self) -> Option<f64> {
        self.outcome.value()
    }

    /// Why there is no value, if there is none.
    pub fn missing(&self) -> Option<&Missing> {
        self.outcome.missing()
    }

    /// Is the value an estimate (inputs running less than
    /// [`ESTIMATE_BELOW`] of the time)?
    pub fn is_estimate(&self) -> bool {
        self.reliability.is_some_and(|r| r < ESTIMATE_BELOW)
    }
}

/// An event's value and running share, or why there is none.
type EventValue = Result<(f64, Option<f64>), Reason>;

/// The weakest input so far: (share, library event index).
type Weakest = Option<(f64, u32)>;

fn weaker(a: Weakest, b: Weakest) -> Weakest {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A value during evaluation. (The missing case is boxed: values are moved
/// through every node.)
struct Val {
    v: Result<f64, Box<Missing>>,
    weakest: Weakest,
}

impl Val {
    fn ok(v: f64, weakest: Weakest) -> Val {
        Val { v: Ok(v), weakest }
    }
    fn missing(m: Missing) -> Val {
        Val {
            v: Err(Box::new(m)),
            weakest: None,
        }
    }
    fn boxed(m: Box<Missing>) -> Val {
        Val {
            v: Err(m),
            weakest: None,
        }
    }
}

/// A metric's result as kept by the evaluator.
#[derive(Clone)]
struct Done {
    outcome: Result<f64, Box<Missing>>,
    weakest: Weakest,
    assumptions: Vec<String>,
}

#[derive(Clone)]
enum State {
    Todo,
    Running,
    Done(Done),
}

/// Which formula is being evaluated (for the text of messages).
#[derive(Clone, Copy)]
struct Ctx<'c> {
    code: &'c Compiled,
    metric: MetricId,
    threshold: bool,
}

/// Evaluates a library's metrics for one set of inputs, each metric at most
/// once (results are kept, so metric → metric chains cost nothing extra).
pub struct Evaluator<'a> {
    lib: &'a Library,
    inputs: &'a Inputs,
    machine: &'a Machine,
    events: Vec<Option<EventValue>>,
    metrics: Vec<State>,
    thresholds: Vec<Option<Option<Result<bool, Missing>>>>,
    assumptions: Vec<String>,
}

fn truth(x: f64) -> bool {
    x != 0.0
}

fn bool_val(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

impl Library {
    /// An evaluator of this library's metrics over `inputs`.
    pub fn evaluator<'a>(&'a self, inputs: &'a Inputs, machine: &'a Machine) -> Evaluator<'a> {
        Evaluator::new(self, inputs, machine)
    }
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(lib: &'a Library, inputs: &'a Inputs, machine: &'a Machine) -> Evaluator<'a> {
        Evaluator {
            lib,
            inputs,
            machine,
            events: vec![None; lib.events().len()],
            metrics: vec![State::Todo; lib.len()],
            thresholds: vec![None; lib.len()],
            assumptions: Vec::new(),
        }
    }

    /// The library being evaluated.
    pub fn library(&self) -> &'a Library {
        self.lib
    }

    /// The machine facts in use.
    pub fn machine(&self) -> &'a Machine {
        self.machine
    }

    /// The inputs in use.
    pub fn inputs(&self) -> &'a Inputs {
        self.inputs
    }

    /// The result of a metric.
    pub fn metric(&mut self, id: MetricId) -> Evaluated {
        let d = self.done(id);
        Evaluated {
            outcome: match &d.outcome {
                Ok(v) => Outcome::Value { value: *v },
                Err(m) => Outcome::Missing((**m).clone()),
            },
            reliability: d.weakest.map(|w| w.0),
            least_running: d
                .weakest
                .and_then(|w| self.lib.events().get(w.1 as usize))
                .map(|e| e.name.clone()),
            assumptions: d.assumptions.clone(),
        }
    }

    /// The result of the first metric called `name` (see
    /// [`Library::lookup`]); `None` when no metric has the name.
    pub fn metric_named(&mut self, name: &str) -> Option<Evaluated> {
        let id = self.lib.find(name)?;
        Some(self.metric(id))
    }

    /// The first of `alternatives` that has a value, else the first one's
    /// result (with its reason); with the id used.
    pub fn first_with_value(&mut self, alternatives: &[MetricId]) -> Option<(MetricId, Evaluated)> {
        let &first = alternatives.first()?;
        for &id in alternatives {
            if self.done(id).outcome.is_ok() {
                return Some((id, self.metric(id)));
            }
        }
        Some((first, self.metric(first)))
    }

    /// Is the metric over its threshold? `None` when it has no threshold;
    /// `Some(Err(_))` when the threshold's inputs are missing.
    pub fn threshold(&mut self, id: MetricId) -> Option<Result<bool, Missing>> {
        let i = id.index();
        if let Some(done) = self.thresholds.get(i).cloned().flatten() {
            return done;
        }
        let lib = self.lib;
        let code = lib.compiled(id)?.1.as_ref()?;
        let saved = std::mem::take(&mut self.assumptions);
        let ctx = Ctx {
            code,
            metric: id,
            threshold: true,
        };
        let v = self.eval(ctx, 0);
        self.assumptions = saved;
        let out = Some(v.v.map(truth).map_err(|m| *m));
        if let Some(slot) = self.thresholds.get_mut(i) {
            *slot = Some(out.clone());
        }
        out
    }

    /// The result of a metric, computing and keeping it first if needed.
    /// (A copy: cheap for values, which have no heap parts.)
    fn done(&mut self, id: MetricId) -> Done {
        let i = id.index();
        match self.metrics.get(i) {
            Some(State::Done(d)) => d.clone(),
            Some(State::Running) => {
                let name = self.lib.metric(id).name.clone();
                Done {
                    outcome: Err(Box::new(Missing {
                        input: name.clone(),
                        reason: Reason::Cycle,
                        chain: vec![name],
                    })),
                    weakest: None,
                    assumptions: Vec::new(),
                }
            }
            Some(State::Todo) => {
                let d = self.compute(id);
                self.metrics[i] = State::Done(d.clone());
                d
            }
            None => Done {
                outcome: Err(Box::new(Missing::new(
                    format!("metric #{i}"),
                    Reason::UnknownMetric,
                ))),
                weakest: None,
                assumptions: Vec::new(),
            },
        }
    }

    fn compute(&mut self, id: MetricId) -> Done {
        let i = id.index();
        self.metrics[i] = State::Running;
        let lib = self.lib;
        let metric = lib.metric(id);
        let Some((code, _)) = lib.compiled(id) else {
            return Done {
                outcome: Err(Box::new(Missing::new(
                    metric.name.clone(),
                    Reason::UnknownMetric,
                ))),
                weakest: None,
                assumptions: Vec::new(),
            };
        };
        let saved = std::mem::take(&mut self.assumptions);
        let ctx = Ctx {
            code,
            metric: id,
            threshold: false,
        };
        let v = self.eval(ctx, 0);
        let assumptions = std::mem::replace(&mut self.assumptions, saved);
        let outcome = match v.v {
            Ok(x) if x.is_finite() => Ok(x),
            Ok(_) => Err(Box::new(Missing {
                input: metric.name.clone(),
                reason: Reason::NotANumber,
                chain: vec![metric.name.clone()],
            })),
            Err(mut m) => {
                m.chain.insert(0, metric.name.clone());
                Err(m)
            }
        };
        let weakest = if outcome.is_ok() { v.weakest } else { None };
        Done {
            outcome,
            weakest,
            assumptions,
        }
    }

    /// The expression a node came from, for messages.
    fn expr(&self, ctx: Ctx<'_>, pre: u32) -> Option<&'a Expr> {
        let m = self.lib.metric(ctx.metric);
        let root = if ctx.threshold {
            m.threshold.as_ref()?.formula.root()
        } else {
            m.formula.root()
        };
        crate::compile::nth(root, pre)
    }

    fn ref_name(&self, ctx: Ctx<'_>, node: u32) -> String {
        match ctx.code.nodes.get(node as usize) {
            Some(Node::Event(i)) => self
                .lib
                .events()
                .get(*i as usize)
                .map(|e| e.name.clone())
                .unwrap_or_default(),
            Some(Node::Metric(m)) => self.lib.metric(MetricId(*m)).name.clone(),
            Some(Node::Special(s)) => s.name().to_string(),
            Some(Node::Name { pre, .. }) => match self.expr(ctx, *pre).map(|e| &e.kind) {
                Some(ExprKind::Ref(r)) => r.name.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        }
    }

    fn note(&mut self, note: String) {
        if !self.assumptions.contains(&note) {
            self.assumptions.push(note);
        }
    }

    fn event(&mut self, idx: u32) -> Val {
        let lib = self.lib;
        let Some(ev) = lib.events().get(idx as usize) else {
            return Val::missing(Missing::new(format!("event #{idx}"), Reason::NotRequested));
        };
        if self.events[idx as usize].is_none() {
            let r = match self.reading_of(ev) {
                Some(r) => r.resolve(),
                None if ev.retire_latency => match lib.retire_latency_default(ev) {
                    Some((v, _)) => Ok((v, None)),
                    None => Err(Reason::NotCounted(Some(
                        "a retire latency is sampled (perf :R), not counted".into(),
                    ))),
                },
                None => Err(Reason::NotRequested),
            };
            self.events[idx as usize] = Some(r);
        }
        if ev.retire_latency && self.reading_of(ev).is_none() {
            if let Some((v, origin)) = lib.retire_latency_default(ev) {
                self.note(format!("{} = {v} ({origin})", ev.name));
            }
        }
        match &self.events[idx as usize] {
            Some(Ok((v, share))) => Val::ok(*v, share.map(|s| (s, idx))),
            Some(Err(reason)) => Val::missing(Missing::new(ev.name.clone(), reason.clone())),
            None => Val::missing(Missing::new(ev.name.clone(), Reason::NotRequested)),
        }
    }

    /// The reading for a library event, matched by the inputs' key.
    fn reading_of(&self, ev: &EventRef) -> Option<&'a Reading> {
        let inputs: &'a Inputs = self.inputs;
        if inputs.key_fn.is_some() || inputs.core_pmu.is_some() {
            inputs.get_key(&inputs.key(&ev.name))
        } else {
            inputs.get_key(&ev.key)
        }
    }

    fn eval(&mut self, ctx: Ctx<'_>, i: u32) -> Val {
        let Some(&node) = ctx.code.nodes.get(i as usize) else {
            return Val::missing(Missing::new("?", Reason::NotANumber));
        };
        match node {
            Node::Num(n) => Val::ok(n, None),
            Node::Const(c) => match self.lib.constant_at(c) {
                Some(c) => self.constant(c),
                None => Val::missing(Missing::new("?", Reason::UnknownConstant)),
            },
            Node::Event(idx) => self.event(idx),
            Node::Metric(m) => {
                let d = self.done(MetricId(m));
                for a in d.assumptions {
                    self.note(a);
                }
                match d.outcome {
                    Ok(v) => Val::ok(v, d.weakest),
                    Err(m) => Val::boxed(m),
                }
            }
            Node::Special(s) => {
                let v = match s {
                    Special::DurationTime => self.inputs.duration,
                    Special::UserTime => self.inputs.user_time,
                    Special::SystemTime => self.inputs.system_time,
                };
                match v {
                    Some(v) => Val::ok(v, None),
                    None => Val::missing(Missing::new(s.name(), Reason::NotRequested)),
                }
            }
            Node::Name { unknown_metric, .. } => {
                let reason = if unknown_metric {
                    Reason::UnknownMetric
                } else {
                    Reason::NotRequested
                };
                Val::missing(Missing::new(self.ref_name(ctx, i), reason))
            }
            Node::Neg(x) => {
                let v = self.eval(ctx, x);
                Val {
                    v: v.v.map(|x| -x),
                    weakest: v.weakest,
                }
            }
            Node::Not(x) => {
                let v = self.eval(ctx, x);
                Val {
                    v: v.v.map(|x| bool_val(!truth(x))),
                    weakest: v.weakest,
                }
            }
            Node::Bin { op, l, r, pre_r } => self.binary(ctx, op, l, r, pre_r),
            Node::Cond { c, t, e } => self.cond(ctx, c, t, e),
            Node::Call { f, start, len } => self.call(ctx, f, start, len),
            Node::Index { child, n } => self.index(ctx, child, n),
        }
    }

    fn constant(&mut self, c: &Constant) -> Val {
        let v = match c {
            Constant::DurationS => self.inputs.duration,
            Constant::DurationMs => self.inputs.duration.map(|d| d * 1000.0),
            Constant::NotAvailable => {
                return Val::missing(Missing::new(
                    "#NA",
                    Reason::NotAvailable("the metric table marks it not available".into()),
                ))
            }
            other => self.machine.constant(other),
        };
        match v {
            Some(v) => Val::ok(v, None),
            None => {
                let reason = match c {
                    Constant::Other(_) => Reason::UnknownConstant,
                    Constant::DurationMs | Constant::DurationS => Reason::NotRequested,
                    _ => Reason::ConstantNotSet,
                };
                Val::missing(Missing::new(c.name(), reason))
            }
        }
    }

    fn cond(&mut self, ctx: Ctx<'_>, cond: u32, then: u32, otherwise: u32) -> Val {
        let c = self.eval(ctx, cond);
        match c.v {
            Err(m) => Val::boxed(m),
            Ok(x) => {
                let branch = if truth(x) { then } else { otherwise };
                let v = self.eval(ctx, branch);
                Val {
                    v: v.v,
                    weakest: weaker(c.weakest, v.weakest),
                }
            }
        }
    }

    fn binary(&mut self, ctx: Ctx<'_>, op: BinOp, a: u32, b: u32, pre_b: u32) -> Val {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.logic(ctx, op, a, b);
        }
        let l = self.eval(ctx, a);
        let l_v = match l.v {
            Ok(v) => v,
            Err(m) => return Val::boxed(m),
        };
        let r = self.eval(ctx, b);
        let r_v = match r.v {
            Ok(v) => v,
            Err(m) => return Val::boxed(m),
        };
        let w = weaker(l.weakest, r.weakest);
        let v = match op {
            BinOp::Add => l_v + r_v,
            BinOp::Sub => l_v - r_v,
            BinOp::Mul => l_v * r_v,
            BinOp::Div | BinOp::Rem => {
                if r_v == 0.0 {
                    let text = self
                        .expr(ctx, pre_b)
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| "the divisor".to_string());
                    return Val::missing(Missing::new(text, Reason::DividedByZero));
                }
                if op == BinOp::Div {
                    l_v / r_v
                } else {
                    l_v % r_v
                }
            }
            BinOp::Lt => bool_val(l_v < r_v),
            BinOp::Gt => bool_val(l_v > r_v),
            BinOp::Le => bool_val(l_v <= r_v),
            BinOp::Ge => bool_val(l_v >= r_v),
            BinOp::Eq => bool_val(l_v == r_v),
            BinOp::Ne => bool_val(l_v != r_v),
            // Handled by `logic` above.
            BinOp::And | BinOp::Or => f64::NAN,
        };
        Val::ok(v, w)
    }

    /// `and`/`or`: a side that decides the result decides it alone.
    fn logic(&mut self, ctx: Ctx<'_>, op: BinOp, a: u32, b: u32) -> Val {
        let decisive = op == BinOp::Or; // `true` decides `or`, `false` decides `and`
        let mark = self.assumptions.len();
        let l = self.eval(ctx, a);
        if let Ok(x) = l.v {
            if truth(x) == decisive {
                return Val::ok(bool_val(decisive), l.weakest);
            }
        }
        let mid = self.assumptions.len();
        let r = self.eval(ctx, b);
        match (l.v, r.v) {
            (_, Ok(y)) if truth(y) == decisive => {
                // The left side was not needed.
                self.assumptions.drain(mark..mid);
                Val::ok(bool_val(decisive), r.weakest)
            }
            (Ok(_), Ok(_)) => Val::ok(bool_val(!decisive), weaker(l.weakest, r.weakest)),
            (Err(m), _) | (_, Err(m)) => Val::boxed(m),
        }
    }

    fn arg(&self, ctx: Ctx<'_>, start: u32, k: u32) -> Option<u32> {
        ctx.code.args.get((start + k) as usize).copied()
    }

    fn call(&mut self, ctx: Ctx<'_>, f: Func, start: u32, len: u32) -> Val {
        match f {
            Func::Min | Func::Max => {
                let mut acc: Option<f64> = None;
                let mut w = None;
                for k in 0..len {
                    let Some(a) = self.arg(ctx, start, k) else {
                        break;
                    };
                    let v = self.eval(ctx, a);
                    let x = match v.v {
                        Ok(x) => x,
                        Err(m) => return Val::boxed(m),
                    };
                    w = weaker(w, v.weakest);
                    acc = Some(match acc {
                        None => x,
                        Some(y) if f == Func::Min => y.min(x),
                        Some(y) => y.max(x),
                    });
                }
                Val::ok(acc.unwrap_or(0.0), w)
            }
            Func::DRatio => {
                let (Some(a), Some(b)) = (self.arg(ctx, start, 0), self.arg(ctx, start, 1)) else {
                    return Val::missing(Missing::new("d_ratio", Reason::NotANumber));
                };
                let l = self.eval(ctx, a);
                let r = self.eval(ctx, b);
                match (l.v, r.v) {
                    (Ok(x), Ok(y)) => {
                        let v = if y == 0.0 { 0.0 } else { x / y };
                        Val::ok(v, weaker(l.weakest, r.weakest))
                    }
                    (Err(m), _) | (_, Err(m)) => Val::boxed(m),
                }
            }
            Func::If => match (
                self.arg(ctx, start, 0),
                self.arg(ctx, start, 1),
                self.arg(ctx, start, 2),
            ) {
                (Some(c), Some(x), Some(y)) => self.cond(ctx, c, x, y),
                _ => Val::missing(Missing::new("if", Reason::NotANumber)),
            },
            Func::SourceCount | Func::HasEvent | Func::StrcmpCpuidStr => {
                let Some(a) = self.arg(ctx, start, 0) else {
                    return Val::missing(Missing::new(f.name(), Reason::NotANumber));
                };
                let name = self.ref_name(ctx, a);
                match f {
                    Func::StrcmpCpuidStr => {
                        let Some(cpuid) = &self.machine.cpuid else {
                            return Val::missing(Missing::new("cpuid", Reason::ConstantNotSet));
                        };
                        match pmx_events::intel_json::CpuPattern::parse(&name) {
                            Ok(p) => Val::ok(bool_val(p.matches(cpuid)), None),
                            Err(why) => Val::missing(Missing::new(
                                name,
                                Reason::NotAvailable(format!("bad CPU pattern: {why}")),
                            )),
                        }
                    }
                    Func::SourceCount => {
                        let key = self.inputs.key(&name);
                        match self.inputs.sources.get(&key) {
                            Some(&n) => Val::ok(f64::from(n), None),
                            None => Val::missing(Missing::new(
                                format!("source_count({name})"),
                                Reason::NotAvailable(
                                    "how many PMU instances were summed is not known".into(),
                                ),
                            )),
                        }
                    }
                    _ => {
                        let key = self.inputs.key(&name);
                        if let Some(&b) = self.inputs.exists.get(&key) {
                            return Val::ok(bool_val(b), None);
                        }
                        match self.inputs.get_key(&key) {
                            Some(Reading::NotSupported { .. }) => Val::ok(0.0, None),
                            Some(_) => Val::ok(1.0, None),
                            None => Val::missing(Missing::new(
                                format!("has_event({name})"),
                                Reason::NotRequested,
                            )),
                        }
                    }
                }
            }
        }
    }

    fn index(&mut self, ctx: Ctx<'_>, child: u32, n: u32) -> Val {
        let name = self.ref_name(ctx, child);
        let key = self.inputs.key(&name);
        match self.inputs.instances.get(&(key, n)) {
            Some(reading) => match reading.resolve() {
                Ok((v, share)) => {
                    let w = match (share, ctx.code.nodes.get(child as usize)) {
                        (Some(s), Some(Node::Event(idx))) => Some((s, *idx)),
                        _ => None,
                    };
                    Val::ok(v, w)
                }
                Err(reason) => Val::missing(Missing::new(format!("{name}[{n}]"), reason)),
            },
            None => Val::missing(Missing::new(
                format!("{name}[{n}]"),
                Reason::NotAvailable("per-instance values were not given".into()),
            )),
        }
    }
}
