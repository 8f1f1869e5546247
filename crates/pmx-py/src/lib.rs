//! # pmx-py — the native module of the Python package
//!
//! `pmx._pmx`, wrapped by the pure-Python package in `python/pmx/` (which
//! adds the context managers, NumPy and pandas conversions and the type
//! stubs). Each function is one call into the Rust library — the same
//! calls the CLI and the C API make — and converts its values:
//!
//! - `stat` → [`pmx::measure::count_command`](pmx_rs::measure::count_command);
//! - `Counters` → [`pmx::Counters`](pmx_rs::Counters);
//! - `region_begin`/`region_end`/`region_results` → [`pmx::region`](mod@pmx_rs::region);
//! - `Recorder` → [`pmx::recorder`](pmx_rs::recorder) (transforms `"raw"`,
//!   `"delta"` or a Python callable);
//! - `analyze` → [`pmx::measure::analyze_file`](pmx_rs::measure::analyze_file),
//!   as `pmx analyze --json` renders it;
//! - `report` → `pmx_profile::report`, as `pmx report --json` renders it.
//!
//! Every error is a `pmx.PmxError` carrying pmx's own message (for a bad
//! event name: the spec, a caret under the error, the close matches).

use pmx_model::count::Count;
use pmx_rs::measure::{analyze_file, count_command, CommandOptions};
use pmx_rs::msr::Scope;
use pmx_rs::recorder::{MsrHandle, PerfHandle, Recorder as RustRecorder, Running, Transform};
use pmx_rs::stat::EventStatus;
use pmx_rs::Counters as RustCounters;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;

pyo3::create_exception!(
    _pmx,
    PmxError,
    PyException,
    "An error from pmx, with pmx's reason."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    PmxError::new_err(e.to_string())
}

fn status_text(s: &EventStatus) -> Option<String> {
    match s {
        EventStatus::Counted => None,
        EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => Some(w.to_string()),
    }
}

/// Count a command: `{"events": [(name, value, enabled, running, scaled,
/// unit, reason)], "metrics": [(name, value, unit, missing)], "elapsed":
/// s, "runs": n, "exit_code": c}`.
#[pyfunction]
#[pyo3(signature = (command, events=None, repeat=1, metrics=None))]
fn stat<'py>(
    py: Python<'py>,
    command: Vec<String>,
    events: Option<Vec<String>>,
    repeat: u32,
    metrics: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = CommandOptions {
        command,
        events: events.unwrap_or_default(),
        repeat,
        metrics,
    };
    let r = py.allow_threads(|| count_command(&opts)).map_err(err)?;
    let d = PyDict::new(py);
    let events: Vec<_> = r
        .events
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                e.count.value,
                e.count.enabled,
                e.count.running,
                e.value,
                e.unit.clone(),
                status_text(&e.status),
            )
        })
        .collect();
    d.set_item("events", events)?;
    let metrics: Vec<_> = r
        .metrics
        .iter()
        .map(|m| (m.name.clone(), m.value, m.unit.clone(), m.missing.clone()))
        .collect();
    d.set_item("metrics", metrics)?;
    d.set_item("elapsed", r.elapsed.as_secs_f64())?;
    d.set_item("runs", r.runs)?;
    d.set_item("exit_code", r.exit_code)?;
    Ok(d)
}

/// Counters on the calling thread (`pmx.Counters`).
#[pyclass(unsendable, module = "pmx._pmx")]
struct Counters {
    inner: RustCounters,
    scratch: Vec<Count>,
}

#[pymethods]
impl Counters {
    #[new]
    #[pyo3(signature = (events, pid=0, cpu=-1))]
    fn new(events: &str, pid: i32, cpu: i32) -> PyResult<Counters> {
        let target = pmx_rs::CountTarget::from_pid_cpu(pid, cpu).map_err(err)?;
        let inner = RustCounters::builder()
            .events(events)
            .target(target)
            .open()
            .map_err(err)?;
        let scratch = vec![Count::default(); inner.events().len()];
        Ok(Counters { inner, scratch })
    }

    /// The event names, in read order.
    fn names(&self) -> Vec<String> {
        self.inner.events().iter().map(|e| e.name.clone()).collect()
    }

    /// Each event's unit and scale (raw × scale = value in the unit:
    /// task-clock in msec).
    fn units(&self) -> Vec<(Option<String>, f64)> {
        self.inner
            .events()
            .iter()
            .map(|e| (e.unit.clone(), e.scale))
            .collect()
    }

    /// Why each event is not counted (None: counted).
    fn reasons(&self) -> Vec<Option<String>> {
        self.inner
            .events()
            .iter()
            .map(|e| status_text(&e.status))
            .collect()
    }

    fn enable(&mut self) -> PyResult<()> {
        self.inner.enable().map_err(err)
    }

    fn disable(&mut self) -> PyResult<()> {
        self.inner.disable().map_err(err)
    }

    fn reset(&mut self) -> PyResult<()> {
        self.inner.reset().map_err(err)
    }

    /// `[(value, enabled, running)]` in [`Counters::names`] order.
    fn read_raw(&mut self) -> PyResult<Vec<(u64, u64, u64)>> {
        self.inner.read_into(&mut self.scratch).map_err(err)?;
        Ok(self
            .scratch
            .iter()
            .map(|c| (c.value, c.enabled, c.running))
            .collect())
    }

    /// One event's raw value (the cheapest read, for benchmarks).
    fn read_value(&mut self, i: usize) -> PyResult<u64> {
        self.inner.read_into(&mut self.scratch).map_err(err)?;
        self.scratch
            .get(i)
            .map(|c| c.value)
            .ok_or_else(|| err(format!("no event {i}")))
    }
}

/// Enter region `name` on the calling thread.
#[pyfunction]
fn region_begin(name: &str) -> PyResult<()> {
    pmx_rs::region::begin(name).map_err(err)
}

/// Leave region `name` on the calling thread.
#[pyfunction]
fn region_end(name: &str) -> PyResult<()> {
    pmx_rs::region::end(name).map_err(err)
}

/// Every thread's region results as the `pmx-regions/1` JSON text.
#[pyfunction]
fn region_results() -> String {
    pmx_rs::region::results().to_json()
}

enum State {
    Idle(RustRecorder),
    Running(Running),
    Failed(String),
}

/// The periodic recorder (`pmx.Recorder`).
#[pyclass(unsendable, module = "pmx._pmx")]
struct Recorder {
    state: State,
}

impl Recorder {
    fn idle(&mut self) -> PyResult<&mut RustRecorder> {
        match &mut self.state {
            State::Idle(r) => Ok(r),
            State::Running(_) => Err(err("the recorder is running (stop() or wait() first)")),
            State::Failed(why) => Err(err(format!("the recorder failed earlier: {why}"))),
        }
    }

    fn add_handle(
        &mut self,
        h: impl pmx_rs::recorder::Handle + 'static,
        t: Transform,
    ) -> PyResult<usize> {
        let rec = self.idle()?;
        if rec.is_started() {
            return Err(err(
                "the recorder has started; add every handle before the first sample",
            ));
        }
        rec.add(h, t);
        Ok(rec.handles().len() - 1)
    }

    fn finish(&mut self, py: Python<'_>, stop: bool) -> PyResult<()> {
        if !matches!(self.state, State::Running(_)) {
            return self.idle().map(|_| ());
        }
        let State::Running(run) = std::mem::replace(&mut self.state, State::Failed(String::new()))
        else {
            unreachable!("checked running");
        };
        // The recorder's thread may call a Python transform: let it.
        match py.allow_threads(|| if stop { run.stop() } else { run.wait() }) {
            Ok(rec) => {
                self.state = State::Idle(rec);
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed(e.to_string());
                Err(err(e))
            }
        }
    }
}

/// `None` or `"delta"`: deltas; `"raw"`; or a callable.
fn transform(t: Option<&Bound<'_, PyAny>>) -> PyResult<Transform> {
    let Some(t) = t else {
        return Ok(Transform::Delta);
    };
    if let Ok(s) = t.extract::<String>() {
        return match s.as_str() {
            "raw" | "none" => Ok(Transform::None),
            "delta" => Ok(Transform::Delta),
            _ => Err(err(format!(
                "transform '{s}': \"raw\", \"delta\" or a callable f(now, prev) -> values"
            ))),
        };
    }
    if !t.is_callable() {
        return Err(err(
            "transform: \"raw\", \"delta\" or a callable f(now, prev) -> values",
        ));
    }
    let f: Py<PyAny> = t.clone().unbind();
    Ok(Transform::Custom(Box::new(move |now, prev, out| {
        Python::with_gil(|py| {
            let r = f
                .call1(py, (now.to_vec(), prev.to_vec()))
                .and_then(|v| v.extract::<Vec<u64>>(py));
            match r {
                Ok(v) if v.len() == out.len() => out.copy_from_slice(&v),
                Ok(v) => {
                    PmxError::new_err(format!(
                        "a recorder transform returned {} values for {} CPUs",
                        v.len(),
                        out.len()
                    ))
                    .print(py);
                    out.copy_from_slice(now);
                }
                Err(e) => {
                    e.print(py);
                    out.copy_from_slice(now);
                }
            }
        })
    })))
}

#[pymethods]
impl Recorder {
    #[new]
    fn new(interval_ms: u64, capacity: usize) -> PyResult<Recorder> {
        if capacity == 0 {
            return Err(err("capacity: at least one sample"));
        }
        Ok(Recorder {
            state: State::Idle(RustRecorder::new(
                Duration::from_millis(interval_ms),
                capacity,
            )),
        })
    }

    /// Add a perf event on `cpus` (None: every online CPU); the handle's
    /// index.
    #[pyo3(signature = (event, cpus=None, transform=None))]
    fn add_event(
        &mut self,
        event: &str,
        cpus: Option<Vec<u32>>,
        transform: Option<Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let t = self::transform(transform.as_ref())?;
        let cpus = cpus.unwrap_or_else(pmx_rs::stat::online_cpus);
        let h = PerfHandle::open(event, &cpus).map_err(err)?;
        self.add_handle(h, t)
    }

    /// Add an MSR read once per `scope` domain ("thread", "core",
    /// "package") of every online CPU.
    #[pyo3(signature = (register, scope="thread", transform=None))]
    fn add_msr(
        &mut self,
        register: &str,
        scope: &str,
        transform: Option<Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let scope = match scope {
            "thread" => Scope::Thread,
            "core" => Scope::Core,
            "package" => Scope::Package,
            s => return Err(err(format!("scope '{s}': thread, core or package"))),
        };
        let t = self::transform(transform.as_ref())?;
        let h = MsrHandle::open(register, scope).map_err(err)?;
        self.add_handle(h, t)
    }

    fn start(&mut self) -> PyResult<()> {
        self.idle()?;
        let State::Idle(rec) = std::mem::replace(&mut self.state, State::Failed(String::new()))
        else {
            unreachable!("checked idle");
        };
        match rec.start() {
            Ok(run) => {
                self.state = State::Running(run);
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed(e.to_string());
                Err(err(e))
            }
        }
    }

    fn stop(&mut self, py: Python<'_>) -> PyResult<()> {
        self.finish(py, true)
    }

    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        self.finish(py, false)
    }

    /// One sample by hand: True when stored, False when full.
    fn sample(&mut self) -> PyResult<bool> {
        self.idle()?.sample().map_err(err)
    }

    fn __len__(&mut self) -> PyResult<usize> {
        Ok(self.idle()?.len())
    }

    /// `[(name, cpus)]` per handle.
    fn handles(&mut self) -> PyResult<Vec<(String, Vec<u32>)>> {
        Ok(self
            .idle()?
            .handles()
            .into_iter()
            .map(|(n, c)| (n.to_string(), c.to_vec()))
            .collect())
    }

    /// Sample times, ns since the start.
    fn times(&mut self) -> PyResult<Vec<u64>> {
        Ok(self.idle()?.times().to_vec())
    }

    /// Handle `h`'s stored values: one list per sample, one value per CPU.
    fn values(&mut self, h: usize) -> PyResult<Vec<Vec<u64>>> {
        let rec = self.idle()?;
        if h >= rec.handles().len() {
            return Err(err(format!("no handle {h}")));
        }
        Ok((0..rec.len())
            .filter_map(|i| rec.get(i, h).map(|(_, v)| v.to_vec()))
            .collect())
    }

    /// `sample,time_s,cpu,<handle>…`, one row per sample and CPU.
    fn csv(&mut self) -> PyResult<String> {
        Ok(self.idle()?.to_csv())
    }
}

/// `pmx analyze --json` of a stat file, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, cpu=None, metrics=None, tma_level=None))]
fn analyze(
    path: std::path::PathBuf,
    cpu: Option<String>,
    metrics: Option<String>,
    tma_level: Option<u32>,
) -> PyResult<String> {
    let r = analyze_file(&path, cpu.as_deref(), metrics.as_deref(), tma_level).map_err(err)?;
    Ok(pmx_output::analyze::json(&r, &path).to_string())
}

/// The symbolizer's settings of every call of this module, read from the
/// environment at the first (this entry point is the edge): pmx's
/// directories, `PMX_BINARY_CACHE_MB`; one binary cache for the process,
/// so a second report of the same binaries reads nothing again.
fn symbol_options() -> pmx_symbols::SymbolOptions {
    use pmx_symbols::elf::cache::{capacity_from_mb, CAPACITY_VAR};
    static OPTIONS: std::sync::OnceLock<pmx_symbols::SymbolOptions> = std::sync::OnceLock::new();
    OPTIONS
        .get_or_init(|| {
            let capacity = capacity_from_mb(std::env::var(CAPACITY_VAR).ok().as_deref());
            pmx_symbols::SymbolOptions::new(pmx_io::dirs::Dirs::from_env(), capacity)
        })
        .clone()
}

/// `pmx report --json` of a perf.data file, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, sort=None))]
fn report(path: std::path::PathBuf, sort: Option<String>) -> PyResult<String> {
    let mut opts = pmx_profile::ReportOptions::for_input(path.clone());
    opts.symbols = symbol_options();
    if let Some(sort) = sort {
        opts.sort = sort;
    }
    let r = pmx_profile::report(&opts, &mut |_, _| {})
        .map_err(|e| err(format!("{}: {e}", path.display())))?;
    Ok(pmx_profile::render::json(&r).to_string())
}

#[pymodule]
fn _pmx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PmxError", m.py().get_type::<PmxError>())?;
    m.add_function(wrap_pyfunction!(stat, m)?)?;
    m.add_function(wrap_pyfunction!(region_begin, m)?)?;
    m.add_function(wrap_pyfunction!(region_end, m)?)?;
    m.add_function(wrap_pyfunction!(region_results, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_class::<Counters>()?;
    m.add_class::<Recorder>()?;
    Ok(())
}
