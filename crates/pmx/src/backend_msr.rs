//! The MSR backend of [`crate::Counters`]: the same events, programmed
//! straight into the PMU through `/dev/cpu/N/msr` by `pmx-msr`.
//!
//! Each event is resolved to its control-register encoding by
//! [`crate::stat_msr::msr_event`], the resolver `pmx stat --backend msr`
//! uses (from the database; the kernel's generic hardware events through
//! [`pmx_msr::generic_hardware_event`], fixed counters on Intel; client
//! uncore terms through the register model); what the
//! kernel counts by itself (software events, tracepoints) cannot be
//! programmed and is kept as not supported with that reason. The events
//! are planned onto the CPU's counters ([`pmx_msr::plan()`]) and a
//! [`pmx_msr::Session`] checks nobody else uses them, saves every register
//! it touches, programs them and restores them when the counters drop.
//!
//! The counters run from the moment they are built; `enable`/`disable`
//! decide which deltas are kept, so the API behaves as with perf: nothing
//! counts before `enable`, nothing after `disable`, `reset` zeroes. MSR
//! counters are not multiplexed: enabled and running times are both the
//! wall-clock time spent enabled.

use crate::backend::{nothing_opened, Error, EventInfo};
use crate::stat::EventStatus;
use crate::stat_msr::{msr_event, pmu_counters};
use pmx_events::Database;
use pmx_model::count::Count;
use pmx_model::spec::{Body, EventSpec};
use pmx_msr::{CounterReading, Mode, MsrDevice, MsrRoot, Session, SessionOptions, Signals};
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where and how the MSR backend programs the PMU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MsrOptions {
    /// The msr devices (default `/dev/cpu`; tests: a directory of
    /// `cpuN/msr` fixture files).
    pub root: Option<PathBuf>,
    /// The sysfs the topology is read from (default `/sys`).
    pub sysfs: Option<PathBuf>,
    /// Program the counters even when something else has them enabled
    /// (their registers are restored when the counters drop).
    pub force: bool,
}

/// Counters programmed through the msr devices.
pub(crate) struct MsrCounters {
    session: Session,
    /// Plan event index → index into the caller's events.
    event_of: Vec<usize>,
    totals: Vec<u64>,
    readings: Vec<CounterReading>,
    enabled_at: Option<Instant>,
    enabled_for: Duration,
}

impl MsrCounters {
    /// Plan and program `specs` on `cpus`; `events` (parallel to `specs`)
    /// get the reason of every event that cannot be programmed.
    pub(crate) fn open(
        specs: &[EventSpec],
        events: &mut [EventInfo],
        db: &Database,
        cpus: &[u32],
        opts: &MsrOptions,
    ) -> Result<MsrCounters, Error> {
        let arch = db.target.arch().ok_or_else(|| {
            Error::Open(format!(
                "{}: the msr backend programs x86 PMUs only",
                db.target.cpu
            ))
        })?;
        let mut planned = Vec::new();
        let mut event_of = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            if matches!(spec.body, Body::Breakpoint { .. }) {
                events[i].status = EventStatus::NotSupported(
                    "a breakpoint is the kernel's, not a PMU counter".into(),
                );
                continue;
            }
            match msr_event(db, spec, arch) {
                Ok(e) => {
                    planned.push(e);
                    event_of.push(i);
                }
                Err(why) => events[i].status = EventStatus::NotSupported(why.reason().into()),
            }
        }
        if planned.is_empty() {
            return Err(nothing_opened(events));
        }
        let pmu = pmu_counters(&db.target, arch);
        let sys = opts
            .sysfs
            .as_ref()
            .map_or_else(pmx_sys::SysRoot::host, pmx_sys::SysRoot::new);
        let topology = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
        let plan = pmx_msr::plan(&planned, cpus, &pmu, &topology)
            .map_err(|e| Error::Open(e.to_string()))?;
        let root = opts.root.as_ref().map_or_else(MsrRoot::host, MsrRoot::new);
        let device = MsrDevice::open(&root, &plan.cpus_touched(), Mode::ReadWrite)
            .map_err(|e| Error::Open(e.to_string()))?;
        let session = Session::start(
            device,
            plan,
            &SessionOptions {
                force: opts.force,
                signals: Signals::Defer,
            },
        )
        .map_err(|e| Error::Open(e.to_string()))?;
        let n = session.plan().slots.len();
        Ok(MsrCounters {
            session,
            event_of,
            totals: vec![0; specs.len()],
            readings: Vec::with_capacity(n),
            enabled_at: None,
            enabled_for: Duration::ZERO,
        })
    }

    /// Read every counter; keep the deltas when enabled.
    fn update(&mut self) -> io::Result<()> {
        self.session
            .read_into(&mut self.readings)
            .map_err(|e| io::Error::other(e.to_string()))?;
        if self.enabled_at.is_some() {
            for r in &self.readings {
                let e = self.event_of[r.slot.event];
                self.totals[e] = self.totals[e].wrapping_add(r.delta);
            }
        }
        Ok(())
    }

    pub(crate) fn enable(&mut self) -> io::Result<()> {
        if self.enabled_at.is_none() {
            // Drop what the counters did while disabled.
            self.update()?;
            self.enabled_at = Some(Instant::now());
        }
        Ok(())
    }

    pub(crate) fn disable(&mut self) -> io::Result<()> {
        if let Some(t) = self.enabled_at {
            self.update()?;
            self.enabled_for += t.elapsed();
            self.enabled_at = None;
        }
        Ok(())
    }

    pub(crate) fn reset(&mut self) -> io::Result<()> {
        self.update()?;
        self.totals.iter_mut().for_each(|t| *t = 0);
        Ok(())
    }

    /// The totals into `out` (indexed like the caller's events).
    pub(crate) fn read_into(&mut self, out: &mut [Count]) -> io::Result<()> {
        self.update()?;
        let ns = (self.enabled_for + self.enabled_at.map_or(Duration::ZERO, |t| t.elapsed()))
            .as_nanos() as u64;
        for (i, &v) in self.totals.iter().enumerate() {
            if let Some(o) = out.get_mut(i) {
                *o = Count {
                    value: v,
                    enabled: ns,
                    running: ns,
                };
            }
        }
        Ok(())
    }
}
