//! Regions: count only the parts of a program that matter.
//!
//! ```
//! {
//!     let _r = pmx::region("solve");
//!     // … the work; counted until `_r` drops
//! }
//! let sum = pmx::region::scope("sum", || (0..1000u64).sum::<u64>());
//! let results = pmx::region::results();
//! let solve = results.get("solve", 0).expect("thread 0 entered it");
//! assert_eq!(solve.calls, 1);
//! # assert_eq!(sum, 499500);
//! ```
//!
//! ## The model
//!
//! - One process-wide configuration, made on first use (or by [`init`]):
//!   the events from `PMX_EVENTS` (an `-e` list; default `task-clock,
//!   page-faults,context-switches`, plus `cycles,instructions` when CPUID
//!   describes a PMU), the metrics from `PMX_METRICS`, and the results
//!   file from `PMX_REGIONS_OUT`. `pmx stat --regions -e … -M … -- ./app`
//!   sets these, so the events change without rebuilding the program.
//! - Per thread, on its first region (or [`thread_init`]), the events are
//!   opened as a perf group on that thread alone ([`crate::Counters`] with
//!   [`crate::CountTarget::ThisThread`]). Threads are numbered in the
//!   order they first use pmx; each record also carries the kernel tid.
//! - [`begin`] reads the group and pushes the reading on the thread's
//!   stack; [`end`] reads it again and adds the difference to (region
//!   name, thread). Regions nest: each gets its own inclusive counts. The
//!   begin read is the last thing begin does and the end read the first
//!   thing end does; after a name's first use neither allocates (names
//!   are interned per thread, the stack's buffers reused).
//! - The cost of an empty begin/end pair, and what it counts, is measured
//!   once at start ([`crate::results::Calibration`]) and reported beside
//!   the results: each call of a region includes it once. It is not
//!   subtracted, because a read's cost varies and a subtraction would
//!   make small counts lie.
//! - [`results()`] gathers every thread's records (threads that ended
//!   included); [`finalize`] also writes the results file when
//!   `PMX_REGIONS_OUT` names one (and is run at exit when it does).
//!
//! Errors (an event list that does not parse, a region ended that is not
//! the innermost open one) are returned by [`begin`]/[`end`]; the guard
//! form keeps the latest in [`last_error`] and in the results' notes.

use crate::counters::{self, CountTarget, Counters, EventInfo};
use crate::eventlist::parse_event_list;
use crate::metrics::MetricSet;
use crate::results::{self, Calibration, RegionRecord, RegionResults, ResultEvent};
use crate::stat::{EventStatus, StatPlan};
use pmx_model::count::Count;
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Environment variable: the events to count (an `-e` list).
pub const ENV_EVENTS: &str = "PMX_EVENTS";
/// Environment variable: metrics to compute per region (`IPC,…`).
pub const ENV_METRICS: &str = "PMX_METRICS";
/// Environment variable: where [`finalize`] writes the results (JSON).
pub const ENV_OUT: &str = "PMX_REGIONS_OUT";
/// The events counted when `PMX_EVENTS` is not set.
pub const DEFAULT_EVENTS: &str = "task-clock,page-faults,context-switches";

/// What `pmx stat --regions` refuses before anything runs: no command
/// (or `-p`/`-t` tasks, `tasks`), more than one run, a malformed `-e`
/// list (a typo is pmx's usage error, not a failure inside the program).
pub fn check_flags(
    command: &[String],
    tasks: bool,
    repeat: u32,
    events: &[String],
) -> Result<(), String> {
    if command.is_empty() || tasks {
        return Err("--regions needs a command after -- (the program whose regions report)".into());
    }
    if repeat > 1 {
        return Err(
            "--regions reports one run: drop -r (or run pmx stat --regions once per run)".into(),
        );
    }
    for l in events {
        crate::parse_event_list(l).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The hand-off of `pmx stat --regions`: the events, the metrics and a
/// fresh results file name put in the environment a command inherits;
/// its regions count those events and write the file at exit. The file
/// is removed when this is dropped.
#[derive(Debug)]
pub struct Handoff {
    path: PathBuf,
}

impl Handoff {
    /// Set [`ENV_EVENTS`] (when `events` is given), [`ENV_METRICS`] (when
    /// `metrics` is) and [`ENV_OUT`] to a fresh file in the temp directory.
    pub fn export(events: Option<&str>, metrics: Option<&str>) -> Handoff {
        if let Some(e) = events {
            std::env::set_var(ENV_EVENTS, e);
        }
        if let Some(m) = metrics {
            std::env::set_var(ENV_METRICS, m);
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "pmx-regions-{}-{nanos:08x}.json",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        std::env::set_var(ENV_OUT, &path);
        Handoff { path }
    }

    /// The results file's text, `None` when the command wrote none.
    pub fn text(&self) -> Option<String> {
        std::fs::read_to_string(&self.path).ok()
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How regions count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// An `-e` list; `None`: [`DEFAULT_EVENTS`] (+ cycles, instructions
    /// with a PMU).
    pub events: Option<String>,
    /// Metrics to compute per region.
    pub metrics: Option<String>,
    /// Results file written by [`finalize`].
    pub out: Option<PathBuf>,
    /// Measure the cost of an empty region at start (default on).
    pub skip_calibration: bool,
}

impl Config {
    /// From `PMX_EVENTS`, `PMX_METRICS`, `PMX_REGIONS_OUT` (empty = unset).
    /// These variables are the region API's interface (an instrumented
    /// program is configured by its environment), so they are read here,
    /// at that entry point, and nowhere below it.
    pub fn from_env() -> Config {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Config {
            events: var(ENV_EVENTS),
            metrics: var(ENV_METRICS),
            out: var(ENV_OUT).map(PathBuf::from),
            skip_calibration: false,
        }
    }
}

/// Why a region call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The configuration could not be used (bad event list, nothing
    /// countable on this thread).
    #[error("pmx regions: {0}")]
    Setup(String),
    /// `end` of a region that is not the innermost open one.
    #[error("pmx regions: end of '{name}', but {open}")]
    Nesting {
        /// The region ended.
        name: String,
        /// What is open instead.
        open: String,
    },
    /// `init` after regions were already configured.
    #[error("pmx regions: already configured (init must come before the first region)")]
    AlreadyConfigured,
    /// A read failed.
    #[error("pmx regions: reading the counters: {0}")]
    Read(String),
}

struct Registry {
    plan: StatPlan,
    config: Config,
    metrics: Option<MetricSet>,
    threads: Mutex<Vec<Arc<Mutex<ThreadData>>>>,
    calibration: Mutex<Option<Calibration>>,
    notes: Mutex<Vec<String>>,
    finalized: AtomicBool,
}

/// One region's sums on one thread.
struct Acc {
    name: String,
    calls: u64,
    wall_ns: u64,
    counts: Vec<Count>,
}

struct ThreadData {
    index: usize,
    tid: i32,
    events: Vec<EventInfo>,
    regions: Vec<Acc>,
}

/// An open region on the thread's stack.
struct Open {
    id: usize,
    t0: Instant,
    start: Vec<Count>,
}

/// Region names by id: short, trusted, looked up on every begin.
type Names = pmx_model::hash::FnvMap<Box<str>, usize>;

struct Local {
    counters: Counters,
    ids: Names,
    /// Interned names by id.
    names: Vec<Box<str>>,
    stack: Vec<Open>,
    depth: usize,
    now: Vec<Count>,
    data: Arc<Mutex<ThreadData>>,
}

static REGISTRY: OnceLock<Result<Registry, String>> = OnceLock::new();

thread_local! {
    static LOCAL: RefCell<Option<Result<Local, String>>> = const { RefCell::new(None) };
}

static LAST_ERROR: Mutex<Option<String>> = Mutex::new(None);

fn default_events() -> String {
    if crate::schedule::CounterBudget::this_cpu().is_some() {
        format!("{DEFAULT_EVENTS},cycles,instructions")
    } else {
        DEFAULT_EVENTS.to_string()
    }
}

fn build_registry(config: Config) -> Result<Registry, String> {
    let events = config.events.clone().unwrap_or_else(default_events);
    let mut groups = parse_event_list(&events).map_err(|e| format!("{ENV_EVENTS}: {e}"))?;
    let defaults = crate::events_dirs::from_env();
    let events_dir = defaults.resolve(None);
    let (metrics, db) = match &config.metrics {
        Some(list) => {
            let db = counters::full_database(events_dir.clone(), &defaults)
                .map_err(|e| e.to_string())?;
            let set = MetricSet::new(list, &db).map_err(|e| format!("{ENV_METRICS}: {e}"))?;
            for spec in set.event_specs() {
                if !groups
                    .iter()
                    .any(|g| g.members.iter().any(|m| m.text == spec))
                {
                    groups.extend(parse_event_list(&spec).map_err(|e| e.to_string())?);
                }
            }
            (Some(set), Some(db))
        }
        None => (None, None),
    };
    let plan =
        counters::plan_groups(&groups, db, events_dir, &defaults).map_err(|e| e.to_string())?;
    if config.out.is_some() {
        extern "C" fn at_exit() {
            let _ = finalize();
        }
        // SAFETY: registering a plain extern "C" function with no
        // arguments; it runs once at exit.
        unsafe { libc::atexit(at_exit) };
    }
    Ok(Registry {
        plan,
        config,
        metrics,
        threads: Mutex::new(Vec::new()),
        calibration: Mutex::new(None),
        notes: Mutex::new(Vec::new()),
        finalized: AtomicBool::new(false),
    })
}

fn registry() -> Result<&'static Registry, Error> {
    REGISTRY
        .get_or_init(|| build_registry(Config::from_env()))
        .as_ref()
        .map_err(|e| Error::Setup(e.clone()))
}

/// Configure regions explicitly (instead of from the environment). Must
/// come before the first region of any thread.
pub fn init(config: Config) -> Result<(), Error> {
    let mut fresh = false;
    let r = REGISTRY.get_or_init(|| {
        fresh = true;
        build_registry(config)
    });
    if !fresh {
        return Err(Error::AlreadyConfigured);
    }
    r.as_ref().map(|_| ()).map_err(|e| Error::Setup(e.clone()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn new_local(reg: &Registry) -> Result<Local, String> {
    let counters =
        Counters::open_plan(&reg.plan, &CountTarget::ThisThread).map_err(|e| e.to_string())?;
    let n = counters.events().len();
    let data = {
        let mut threads = lock(&reg.threads);
        let d = Arc::new(Mutex::new(ThreadData {
            index: threads.len(),
            tid: gettid(),
            events: counters.events().to_vec(),
            regions: Vec::new(),
        }));
        threads.push(d.clone());
        d
    };
    let mut counters = counters;
    counters.enable().map_err(|e| e.to_string())?;
    // The read buffers of the first levels of nesting are made and
    // written now, outside every region: a buffer allocated on entering a
    // region could come from fresh zeroed pages that only the kernel's
    // copy into it touches, after it took the counts, so the region would
    // be charged a page fault that is not its own.
    let stack = (0..PREALLOCATED_DEPTH)
        .map(|_| Open {
            id: 0,
            t0: Instant::now(),
            start: crate::counters::written(n),
        })
        .collect();
    Ok(Local {
        counters,
        ids: Names::default(),
        names: Vec::new(),
        stack,
        depth: 0,
        now: crate::counters::written(n),
        data,
    })
}

/// Levels of nesting whose buffers exist before the first region opens.
const PREALLOCATED_DEPTH: usize = 8;

/// Run `f` with this thread's state, creating it (and, on the first
/// thread, measuring the calibration) on first use.
#[inline]
fn with_local<R>(f: impl FnOnce(&mut Local) -> Result<R, Error>) -> Result<R, Error> {
    let mut f = Some(f);
    // The hot path: one thread-local borrow.
    let fast = LOCAL.with(|l| match l.borrow_mut().as_mut() {
        Some(Ok(local)) => Some(f.take().map(|f| f(local))),
        _ => None,
    });
    if let Some(Some(r)) = fast {
        return r;
    }
    let reg = registry()?;
    let created = LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.is_none() {
            *l = Some(new_local(reg));
            return true;
        }
        false
    });
    if created && !reg.config.skip_calibration {
        let mut cal = lock(&reg.calibration);
        if cal.is_none() {
            *cal = calibrate();
        }
    }
    LOCAL.with(|l| match l.borrow_mut().as_mut() {
        Some(Ok(local)) => match f.take() {
            Some(f) => f(local),
            None => Err(Error::Setup("thread state in use".to_string())),
        },
        Some(Err(e)) => Err(Error::Setup(e.clone())),
        None => Err(Error::Setup("thread state missing".to_string())),
    })
}

/// The calling thread's CPU time (ns): the calibration's clock, which does
/// not count the time the thread waits for a CPU.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The reserved name of the calibration region (no C string can hold it).
const CALIBRATION: &str = "\0calibration";

fn calibrate() -> Option<Calibration> {
    const BATCH: u64 = 50;
    const BATCHES: usize = 5;
    // A first pair interns the name and grows the per-thread buffers
    // (which can fault a fresh heap page): not part of the measurement.
    begin(CALIBRATION).ok()?;
    end(CALIBRATION).ok()?;
    take_calibration_counts()?;
    let mut per_pair = Vec::new();
    for _ in 0..BATCHES {
        let t = thread_cpu_ns();
        for _ in 0..BATCH {
            begin(CALIBRATION).ok()?;
            end(CALIBRATION).ok()?;
        }
        per_pair.push(thread_cpu_ns().saturating_sub(t) as f64 / BATCH as f64);
    }
    per_pair.sort_by(f64::total_cmp);
    let pairs = BATCH * BATCHES as u64;
    let counts = take_calibration_counts()?;
    Some(Calibration {
        pairs,
        pair_ns: per_pair[BATCHES / 2],
        counts: counts
            .iter()
            .map(|c| c.value as f64 / pairs as f64)
            .collect(),
    })
}

/// Take the calibration region's sums out of this thread's records
/// (leaving zeros and no calls).
fn take_calibration_counts() -> Option<Vec<Count>> {
    with_local(|l| {
        let mut d = lock(&l.data);
        let at = d.regions.iter().position(|a| a.name == CALIBRATION);
        let acc = at.map(|i| {
            let zero = vec![Count::default(); d.regions[i].counts.len()];
            std::mem::replace(&mut d.regions[i].counts, zero)
        });
        if let Some(i) = at {
            d.regions[i].calls = 0;
        }
        Ok(acc)
    })
    .ok()?
}

/// Open this thread's counters now (otherwise done by its first region),
/// so the first region does not pay for it.
pub fn thread_init() -> Result<(), Error> {
    with_local(|_| Ok(()))
}

/// Enter region `name` on this thread.
#[inline]
pub fn begin(name: &str) -> Result<(), Error> {
    with_local(|l| {
        let id = match l.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = {
                    let mut d = lock(&l.data);
                    d.regions.push(Acc {
                        name: name.to_string(),
                        calls: 0,
                        wall_ns: 0,
                        counts: vec![Count::default(); l.now.len()],
                    });
                    d.regions.len() - 1
                };
                l.ids.insert(name.into(), id);
                l.names.push(name.into());
                id
            }
        };
        if l.depth == l.stack.len() {
            l.stack.push(Open {
                id,
                t0: Instant::now(),
                start: crate::counters::written(l.now.len()),
            });
        }
        let top = &mut l.stack[l.depth];
        top.id = id;
        l.depth += 1;
        top.t0 = Instant::now();
        // Last: the read.
        l.counters
            .read_into(&mut top.start)
            .map_err(|e| Error::Read(e.to_string()))
    })
}

/// Leave region `name` on this thread: it must be the innermost open one.
#[inline]
pub fn end(name: &str) -> Result<(), Error> {
    with_local(|l| {
        // First: the read.
        let read = l.counters.read_into(&mut l.now);
        let t1 = Instant::now();
        read.map_err(|e| Error::Read(e.to_string()))?;
        if l.depth == 0 {
            return Err(Error::Nesting {
                name: name.to_string(),
                open: "no region is open on this thread".to_string(),
            });
        }
        let top = &l.stack[l.depth - 1];
        if *l.names[top.id] != *name {
            return Err(Error::Nesting {
                name: name.to_string(),
                open: format!("the innermost open region is '{}'", l.names[top.id]),
            });
        }
        {
            let mut d = lock(&l.data);
            let acc = &mut d.regions[top.id];
            acc.calls += 1;
            acc.wall_ns += (t1 - top.t0).as_nanos() as u64;
            for ((a, now), start) in acc.counts.iter_mut().zip(&l.now).zip(&top.start) {
                a.value = a.value.wrapping_add(now.value.wrapping_sub(start.value));
                a.enabled += now.enabled.saturating_sub(start.enabled);
                a.running += now.running.saturating_sub(start.running);
            }
        }
        l.depth -= 1;
        Ok(())
    })
}

fn note_error(e: &Error) {
    *lock(&LAST_ERROR) = Some(e.to_string());
    if let Ok(reg) = registry() {
        let mut n = lock(&reg.notes);
        let s = e.to_string();
        if n.len() < 100 && !n.contains(&s) {
            n.push(s);
        }
    }
}

/// The latest error of a guard or closure region (their begin/end cannot
/// return one), cleared by reading it.
pub fn last_error() -> Option<String> {
    lock(&LAST_ERROR).take()
}

/// A region open until the guard drops. Made by [`region`](fn@region).
#[derive(Debug)]
#[must_use = "the region ends when this guard drops: bind it (let _r = …)"]
pub struct Region {
    name: Option<&'static str>,
    owned: Option<String>,
}

impl Drop for Region {
    fn drop(&mut self) {
        let name = self.name.or(self.owned.as_deref());
        if let Some(n) = name {
            if let Err(e) = end(n) {
                note_error(&e);
            }
        }
    }
}

/// Enter region `name` until the returned guard drops. An error (see
/// [`begin`]) leaves the guard inert and is kept in [`last_error`].
pub fn region(name: &'static str) -> Region {
    match begin(name) {
        Ok(()) => Region {
            name: Some(name),
            owned: None,
        },
        Err(e) => {
            note_error(&e);
            Region {
                name: None,
                owned: None,
            }
        }
    }
}

/// [`region`](fn@region) for a name made at run time.
pub fn region_named(name: &str) -> Region {
    match begin(name) {
        Ok(()) => Region {
            name: None,
            owned: Some(name.to_string()),
        },
        Err(e) => {
            note_error(&e);
            Region {
                name: None,
                owned: None,
            }
        }
    }
}

/// Run `f` inside region `name` and return its result.
pub fn scope<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    let _r = region(name);
    f()
}

/// This thread's record of region `name` so far (`None` before its first
/// completed call).
pub fn get(name: &str) -> Option<RegionRecord> {
    let (index, tid, acc) = LOCAL.with(|l| {
        let l = l.borrow();
        let Some(Ok(l)) = l.as_ref() else {
            return None;
        };
        let id = *l.ids.get(name)?;
        let d = lock(&l.data);
        let a = &d.regions[id];
        Some((d.index, d.tid, (a.calls, a.wall_ns, a.counts.clone())))
    })?;
    if acc.0 == 0 {
        return None;
    }
    let mut rec = RegionRecord {
        name: name.to_string(),
        thread: index,
        tid,
        calls: acc.0,
        wall_ns: acc.1,
        counts: acc.2,
        metrics: Vec::new(),
    };
    if let Ok(reg) = registry() {
        rec.metrics = metrics_of(reg, &rec);
    }
    Some(rec)
}

/// The names of the events counted (in the order of every record's
/// counts), once configured.
pub fn event_names() -> Result<Vec<String>, Error> {
    Ok(registry()?
        .plan
        .events
        .iter()
        .map(|e| e.name.clone())
        .collect())
}

fn metrics_of(reg: &Registry, rec: &RegionRecord) -> Vec<crate::metrics::MetricValue> {
    let Some(set) = &reg.metrics else {
        return Vec::new();
    };
    let names: Vec<&str> = reg.plan.events.iter().map(|e| e.name.as_str()).collect();
    let lookup = |spec: &str| -> Result<Count, String> {
        names
            .iter()
            .position(|n| *n == spec)
            .map(|i| rec.counts[i])
            .ok_or_else(|| "not counted".to_string())
    };
    set.evaluate(&lookup, Some(rec.wall_ns as f64 / 1e9))
}

/// Every thread's records so far.
pub fn results() -> RegionResults {
    let pid = std::process::id();
    let Ok(reg) = registry() else {
        return RegionResults {
            format: results::FORMAT.to_string(),
            pid,
            events: Vec::new(),
            calibration: None,
            regions: Vec::new(),
            notes: registry()
                .err()
                .map(|e| vec![e.to_string()])
                .unwrap_or_default(),
        };
    };
    let mut events: Vec<ResultEvent> = reg
        .plan
        .events
        .iter()
        .map(|e| ResultEvent {
            name: e.name.clone(),
            unit: e.unit.clone(),
            scale: e.scale,
            not_counted: e.attr.as_ref().err().cloned(),
        })
        .collect();
    let mut regions = Vec::new();
    let threads: Vec<Arc<Mutex<ThreadData>>> = lock(&reg.threads).clone();
    let mut counted_somewhere = vec![false; events.len()];
    for t in &threads {
        let d = lock(t);
        for (i, e) in d.events.iter().enumerate() {
            match &e.status {
                EventStatus::Counted => counted_somewhere[i] = true,
                EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => {
                    events[i].not_counted.get_or_insert_with(|| w.to_string());
                }
            }
        }
        for a in d.regions.iter().filter(|a| a.calls > 0) {
            let mut rec = RegionRecord {
                name: a.name.clone(),
                thread: d.index,
                tid: d.tid,
                calls: a.calls,
                wall_ns: a.wall_ns,
                counts: a.counts.clone(),
                metrics: Vec::new(),
            };
            rec.metrics = metrics_of(reg, &rec);
            regions.push(rec);
        }
    }
    for (e, counted) in events.iter_mut().zip(counted_somewhere) {
        if counted {
            e.not_counted = None;
        }
    }
    RegionResults {
        format: results::FORMAT.to_string(),
        pid,
        events,
        calibration: lock(&reg.calibration).clone(),
        regions,
        notes: lock(&reg.notes).clone(),
    }
}

/// Write the results as JSON to `path` (by [`pmx_io`]'s rules: put in
/// place when complete, a FIFO or device written in place).
pub fn write_results(path: &std::path::Path) -> std::io::Result<RegionResults> {
    let r = results();
    pmx_io::write(path, r.to_json().as_bytes())?;
    Ok(r)
}

/// The results; written to the configured file (`PMX_REGIONS_OUT`) the
/// first time. Runs by itself at exit when a file is configured.
pub fn finalize() -> std::io::Result<RegionResults> {
    let r = results();
    if let Some(Ok(reg)) = REGISTRY.get() {
        if let Some(path) = &reg.config.out {
            if !reg.finalized.swap(true, Ordering::SeqCst) {
                pmx_io::write(path, r.to_json().as_bytes())?;
            }
        }
    }
    Ok(r)
}

#[cfg(test)]
mod flag_tests {
    use super::check_flags;

    #[test]
    fn regions_need_one_run_of_a_command_and_good_lists() {
        let cmd = vec!["./app".to_string()];
        assert_eq!(check_flags(&cmd, false, 1, &["cpu-clock".into()]), Ok(()));
        assert!(check_flags(&[], false, 1, &[])
            .unwrap_err()
            .contains("needs a command"));
        assert!(check_flags(&cmd, true, 1, &[])
            .unwrap_err()
            .contains("needs a command"));
        assert!(check_flags(&cmd, false, 2, &[])
            .unwrap_err()
            .contains("drop -r"));
        assert!(check_flags(&cmd, false, 1, &["{cpu-clock".into()]).is_err());
    }
}
