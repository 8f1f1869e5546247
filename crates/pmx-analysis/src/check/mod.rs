//! `pmx check`: can these counters be trusted here? Kernels with known
//! answers (`pmx-kernels`) run as commands under `pmx stat`'s session,
//! and each row compares what a counter measured with what the kernel is
//! known to do.
//!
//! Each row runs its kernel at two sizes and takes the difference, so
//! the start-up of the kernel's process cancels; each size is run up to
//! [`ROUNDS`] times and the smallest count kept, because load only ever
//! adds (faults, switches, instructions of interrupted work), until the
//! row passes — but at least [`MIN_ROUNDS`] times, so that one run's
//! extra count cannot pass a wrong answer. The kernels' processes start without address-space
//! randomization ([`Unrandomized`]), so their start-up touches the same
//! pages at both sizes and an exact count stays exact. A row that cannot run says why in one sentence
//! ([`why::Machine`]: no PMU exposed, multiplexed, the NMI watchdog,
//! `perf_event_paranoid`, no such event in the tables, no such vector
//! unit), decided from what the kernel and CPUID say at run time.
//!
//! With [`Backend::Msr`] the hardware rows count through the msr devices
//! (`msr.rs`: `MsrBackend` on one CPU, the kernel pinned there) and are
//! judged alike; the kernel's own counts say they are not the PMU's.
//!
//! The report ([`CheckReport`]) serializes as `pmx check --json`'s
//! schema: `{ "backend", "rows": [ { "id", "event", "pmu", "kernel",
//! "unit", "expected", "measured", "low", "high", "tolerance", "status"
//! ("pass" | "fail" | "skipped"), "reason", "tries" } ], "notes" }`; [`render`] prints it.

pub(crate) mod count;
pub(crate) mod msr;
pub mod probes;
pub mod render;
pub mod why;

use count::Where;
use pmx_count::database::{self, DatabaseOptions};
use probes::{Measure, Probe};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Runs of each size at most, until the row passes.
pub const ROUNDS: u32 = 4;

/// Runs of each size at least, for a row that takes a difference: one
/// extra count in a single run of the small size (a fault or a switch of
/// a start-up that a loaded machine delayed) would otherwise make the
/// difference one short — and pass a kernel that is one unit too large.
pub const MIN_ROUNDS: u32 = 2;

/// Which counter backend counts the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// `perf_event_open`.
    #[default]
    Perf,
    /// The msr devices.
    Msr,
}

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The command that runs a kernel: its arguments follow
    /// (`pmx check --run-kernel`).
    pub runner: Vec<String>,
    /// The backend.
    pub backend: Backend,
    /// Only rows whose name or event is one of these (`-e`).
    pub events: Vec<String>,
    /// Only rows checking one of these metrics (`-M`).
    pub metrics: Vec<String>,
    /// The event tables.
    pub database: DatabaseOptions,
    /// Where `/sys` and `/proc` are (`/` on a live system).
    pub root: PathBuf,
    /// A test hook: (row, n) runs the row's kernel n units larger than its
    /// expectation says, so the row must fail.
    pub skew: Option<(String, i64)>,
}

/// A row's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Within its tolerance.
    Pass,
    /// Outside it.
    Fail,
    /// Could not run here (the reason says why).
    Skipped,
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    /// The row's name.
    pub id: String,
    /// The event counted.
    pub event: String,
    /// The core type's PMU on a hybrid CPU.
    pub pmu: Option<String>,
    /// What the kernel did, in words.
    pub kernel: String,
    /// Unit of the values.
    pub unit: String,
    /// The known answer.
    pub expected: Option<f64>,
    /// What the counter gave.
    pub measured: Option<f64>,
    /// Lowest value accepted.
    pub low: f64,
    /// Highest value accepted.
    pub high: f64,
    /// The tolerance in words.
    pub tolerance: String,
    /// Pass, fail or skipped.
    pub status: Status,
    /// Why skipped (or what a failure may mean).
    pub reason: Option<String>,
    /// Rounds run.
    pub tries: u32,
}

/// Every row.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The backend that counted.
    pub backend: Backend,
    /// The rows, software first.
    pub rows: Vec<CheckRow>,
    /// Notes on the run.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// 0 when every row that ran passed, 1 when one failed.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.rows.iter().any(|r| r.status == Status::Fail))
    }
}

/// Why `check` could not start.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The event tables.
    #[error(transparent)]
    Database(#[from] database::DatabaseError),
    /// `-e`/`-M` matched no row.
    #[error("{0}")]
    NoRows(String),
}

/// Run every row asked for.
pub fn run(opts: &CheckOptions) -> Result<CheckReport, CheckError> {
    let machine = why::Machine::read(&opts.root);
    let db = database::load(&opts.database)?;
    let caches = pmx_kernels::cache::CacheInfo::read(&opts.root);
    let tsc_hz = pmx_kernels::ops::tsc_hz(Duration::from_millis(50));
    let all = probes::all(&machine, &db, &caches, tsc_hz);
    let chosen = select(all, opts)?;
    let mut notes = Vec::new();
    if !machine.core_types.is_empty() {
        let types: Vec<&str> = machine.core_types.iter().map(|(p, _)| p.as_str()).collect();
        notes.push(format!(
            "hybrid CPU: hardware rows once per core type ({})",
            types.join(", ")
        ));
    }
    let _layout = Unrandomized::new();
    let msr_missing = msr::missing(&opts.root);
    let rows = chosen
        .iter()
        .map(|p| match opts.backend {
            Backend::Msr if !p.hardware || msr_missing => msr_row(p),
            _ => check_row(p, opts, &machine, &db),
        })
        .collect();
    Ok(CheckReport {
        backend: opts.backend,
        rows,
        notes,
    })
}

/// While it lives, the processes this one starts run without
/// address-space randomization (`personality(ADDR_NO_RANDOMIZE)`, which
/// children inherit); the old personality comes back when it drops.
pub struct Unrandomized(Option<libc::c_int>);

impl Unrandomized {
    /// Set it (nothing when the kernel refuses).
    pub fn new() -> Unrandomized {
        // SAFETY: 0xffffffff only queries the current personality.
        let old = unsafe { libc::personality(0xffff_ffff) };
        if old < 0 {
            return Unrandomized(None);
        }
        let new = (old as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong;
        // SAFETY: setting a flag of our own personality.
        let set = unsafe { libc::personality(new) } >= 0;
        Unrandomized(set.then_some(old))
    }
}

impl Default for Unrandomized {
    fn default() -> Unrandomized {
        Unrandomized::new()
    }
}

impl Drop for Unrandomized {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: restoring the personality read in `new`.
            unsafe { libc::personality(old as libc::c_ulong) };
        }
    }
}

/// While it lives, this thread runs in the real-time class
/// (`SCHED_FIFO`, the lowest priority), so the processes it starts are
/// born in it and other tasks on a loaded CPU do not preempt them; the
/// old policy comes back when it drops. Nothing when the kernel refuses
/// (no privilege): the normal class then, as before.
pub(crate) struct Realtime(Option<(libc::c_int, libc::sched_param)>);

impl Realtime {
    /// Take the real-time class, keeping the policy to restore.
    pub(crate) fn new() -> Realtime {
        // SAFETY: querying this thread's own policy and parameter.
        let (policy, mut old) = (unsafe { libc::sched_getscheduler(0) }, unsafe {
            std::mem::zeroed::<libc::sched_param>()
        });
        // SAFETY: `old` is a valid sched_param to fill.
        if policy < 0 || unsafe { libc::sched_getparam(0, &mut old) } != 0 {
            return Realtime(None);
        }
        let rt = libc::sched_param { sched_priority: 1 };
        // SAFETY: a valid sched_param for this thread.
        let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &rt) } == 0;
        Realtime(set.then_some((policy, old)))
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        if let Some((policy, old)) = self.0 {
            // SAFETY: restoring the policy read in `new`.
            unsafe { libc::sched_setscheduler(0, policy, &old) };
        }
    }
}

/// The CPU this thread runs on, to pin a real-time row's kernel there.
fn this_cpu() -> Option<Vec<u32>> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok().map(|c| vec![c])
}

fn select(all: Vec<Probe>, opts: &CheckOptions) -> Result<Vec<Probe>, CheckError> {
    let wanted: Vec<String> = opts
        .events
        .iter()
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let metrics: Vec<String> = opts
        .metrics
        .iter()
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_string())
        .collect();
    if wanted.is_empty() && metrics.is_empty() {
        return Ok(all);
    }
    let names = |p: &Probe| {
        [
            p.id.clone(),
            p.id.split(':').next().unwrap_or("").to_string(),
            p.events[0].clone(),
        ]
    };
    for w in &wanted {
        if !all.iter().any(|p| names(p).contains(w)) {
            let ids: Vec<&str> = all.iter().map(|p| p.id.as_str()).collect();
            return Err(CheckError::NoRows(format!(
                "-e {w}: no check row counts it (rows: {})",
                ids.join(", ")
            )));
        }
    }
    for m in &metrics {
        if !all
            .iter()
            .any(|p| p.metric.is_some_and(|pm| pm.eq_ignore_ascii_case(m)))
        {
            return Err(CheckError::NoRows(format!(
                "-M {m}: no check row checks it (metrics checked: FLOPs, MEM)"
            )));
        }
    }
    Ok(all
        .into_iter()
        .filter(|p| {
            names(p).iter().any(|n| wanted.contains(n))
                || p.metric
                    .is_some_and(|pm| metrics.iter().any(|m| pm.eq_ignore_ascii_case(m)))
        })
        .collect())
}

fn row(p: &Probe) -> CheckRow {
    CheckRow {
        id: p.id.clone(),
        event: p.events[0].clone(),
        pmu: p.pmu.clone(),
        kernel: p.what.clone(),
        unit: p.unit.into(),
        expected: p.expected,
        measured: None,
        low: p.range.0,
        high: p.range.1,
        tolerance: p.tolerance.clone(),
        status: Status::Skipped,
        reason: p.unavailable.clone(),
        tries: 0,
    }
}

/// A row the msr backend cannot count: the software rows are the
/// kernel's own counts, and without the devices no hardware row runs.
fn msr_row(p: &Probe) -> CheckRow {
    let mut r = row(p);
    r.reason = Some(match p.hardware {
        false => "the msr backend counts the PMU's registers; this row is one of the kernel's own counts (use --backend perf)".into(),
        true => "no /dev/cpu/0/msr: load the msr module (modprobe msr) and run as root".into(),
    });
    r
}

fn check_row(
    p: &Probe,
    opts: &CheckOptions,
    machine: &why::Machine,
    db: &database::Database,
) -> CheckRow {
    let mut r = row(p);
    if p.unavailable.is_some() {
        return r;
    }
    let skew = opts
        .skew
        .as_ref()
        .filter(|(id, _)| *id == p.id)
        .map_or(0, |s| s.1);
    let sizes = (p.sizes.0, p.sizes.1.saturating_add_signed(skew));
    let _realtime = p.realtime.then(Realtime::new);
    let at = Where {
        pin: p
            .pin
            .clone()
            .or_else(|| p.realtime.then(this_cpu).flatten()),
        cpus: p.cpus.clone(),
    };
    let (mut small, mut large) = (f64::MAX, f64::MAX);
    for round in 1..=ROUNDS {
        r.tries = round;
        let value = match measure_round(p, sizes, &at, opts, db) {
            Ok(v) => v,
            Err(Failure::Skip(why)) => {
                r.reason = Some(match (opts.backend, p.hardware) {
                    (Backend::Msr, _) => format!("not counted through the msr devices: {why}"),
                    (_, true) => machine.no_value(&why),
                    (_, false) => format!("not counted: {why}"),
                });
                return r;
            }
            Err(Failure::Kernel(why)) => {
                r.reason = Some(format!("the kernel could not run: {why}"));
                return r;
            }
            Err(Failure::Multiplexed(share)) => {
                r.reason = Some(machine.multiplexed(share));
                return r;
            }
        };
        let (measured, settled) = match value {
            Sample::Pair(s, l) => {
                (small, large) = (small.min(s), large.min(l));
                (large - small, round >= MIN_ROUNDS)
            }
            Sample::One(v) => (v, true),
        };
        r.measured = Some(measured);
        let pass = measured >= p.range.0 && measured <= p.range.1;
        r.status = if pass { Status::Pass } else { Status::Fail };
        if pass && settled {
            break;
        }
    }
    r
}

enum Sample {
    Pair(f64, f64),
    One(f64),
}

enum Failure {
    Skip(String),
    Kernel(String),
    Multiplexed(f64),
}

fn measure_round(
    p: &Probe,
    sizes: (u64, u64),
    at: &Where,
    opts: &CheckOptions,
    db: &database::Database,
) -> Result<Sample, Failure> {
    let argv = |size: u64| {
        let mut a = opts.runner.clone();
        a.extend(p.kernel.iter().cloned());
        a.push(size.to_string());
        a
    };
    let once = |size: u64| -> Result<count::Run, Failure> {
        let run = match opts.backend {
            Backend::Perf => count::run(&p.events, &argv(size), at, db),
            Backend::Msr => msr::run(&p.events, &argv(size), at, &opts.root, db),
        };
        let run = run.map_err(Failure::Kernel)?;
        if run.exit_code != 0 {
            let why = format!(
                "its process exited with status {} (its message is above)",
                run.exit_code
            );
            return Err(Failure::Kernel(why));
        }
        for v in &run.values {
            match (&v.value, v.share) {
                (Err(why), _) => return Err(Failure::Skip(why.clone())),
                (Ok(_), Some(s)) if s < 0.999 => return Err(Failure::Multiplexed(s)),
                _ => {}
            }
        }
        Ok(run)
    };
    let value = |run: &count::Run, i: usize| run.values[i].value.clone().unwrap_or(0.0);
    Ok(match p.measure {
        Measure::Difference => Sample::Pair(value(&once(sizes.0)?, 0), value(&once(sizes.1)?, 0)),
        Measure::Wall => {
            let ms = |r: count::Run| r.elapsed.as_secs_f64() * 1e3;
            Sample::Pair(ms(once(sizes.0)?), ms(once(sizes.1)?))
        }
        Measure::PerCpuSecond => {
            let r = once(sizes.1)?;
            Sample::One(value(&r, 0) / (value(&r, 1) / 1e3).max(1e-9))
        }
        Measure::PerSecond => {
            let r = once(sizes.1)?;
            let sum: f64 = (0..r.values.len()).map(|i| value(&r, i)).sum();
            Sample::One(sum / r.elapsed.as_secs_f64().max(1e-9))
        }
    })
}
