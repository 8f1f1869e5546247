//! Resolving and planning ([`MsrEvents`], [`MsrStat`]) and starting a
//! session ([`MsrStat::start`]): devices opened, other users checked, the
//! command launched held, the counters programmed.

use super::child::Child;
use super::counting::{Counting, MsrOutcome, MsrRunning};
use super::error::Error;
use super::events::{is_energy_pkg, msr_event, stat_event, Source};
use super::users::{start_session, users_outside};
use crate::eventlist::EventGroup;
use crate::launch::{fork_held, Spawn};
use crate::stat::{EventStatus, PlanGroup, StatPlan, Tick};
use pmx_events::Database;
use pmx_model::encoding::Arch;
use pmx_model::topology::Topology;
use pmx_msr::{EnergyMeter, Mode, MsrDevice, MsrEvent, MsrRoot, Plan, PmuCounters, Session};
use pmx_sys::SysRoot;
use std::time::Duration;

/// The events of an `-e` list resolved to register encodings, before they
/// are planned onto CPUs ([`MsrEvents::plan`]).
#[derive(Debug, Clone)]
pub struct MsrEvents {
    /// The reported events and their groups (see [`MsrStat::plan`]).
    pub plan: StatPlan,
    sources: Vec<Source>,
    events: Vec<MsrEvent>,
    arch: Arch,
}

impl MsrEvents {
    /// Resolve `groups` through `db` (needed unless [`needs_database`](super::events::needs_database) is
    /// false) to `arch`'s register encodings; the first event that cannot
    /// be programmed is the error.
    pub fn resolve(
        groups: &[EventGroup],
        db: Option<&Database>,
        arch: Arch,
    ) -> Result<MsrEvents, Error> {
        let mut plan = StatPlan {
            events: Vec::new(),
            groups: Vec::new(),
        };
        let mut sources = Vec::new();
        let mut events = Vec::new();
        // A metric's input no table names has no register encoding: left
        // out, as before (its metric has no value).
        for (gi, g) in groups
            .iter()
            .filter(|g| g.unsupported.is_none())
            .enumerate()
        {
            let mut members = Vec::new();
            for spec in &g.members {
                members.push(plan.events.len());
                if is_energy_pkg(spec) {
                    plan.events.push(stat_event(&spec.text, gi, Some("J")));
                    sources.push(Source::Energy);
                    // And the power it means: joules per second of each
                    // interval (of the whole run for the totals).
                    members.push(plan.events.len());
                    let mut power = stat_event("power-pkg", gi, Some("W"));
                    power.scale = 1e-6;
                    plan.events.push(power);
                    sources.push(Source::Power);
                    continue;
                }
                let Some(db) = db else {
                    return Err(Error::NoDatabase(spec.text.clone()));
                };
                events.push(msr_event(db, spec, arch)?);
                plan.events.push(stat_event(&spec.text, gi, None));
                sources.push(Source::Counter(events.len() - 1));
            }
            plan.groups.push(PlanGroup {
                members,
                explicit: g.explicit,
            });
        }
        Ok(MsrEvents {
            plan,
            sources,
            events,
            arch,
        })
    }

    /// The events as the msr backend programs them (the PMU counters only,
    /// not energy).
    pub fn msr_events(&self) -> &[MsrEvent] {
        &self.events
    }

    /// Plan the events onto `pmu`'s counters on `cpus`.
    pub fn plan(
        self,
        cpus: &[u32],
        pmu: &PmuCounters,
        topology: &Topology,
    ) -> Result<MsrStat, Error> {
        let msr_plan = pmx_msr::plan(&self.events, cpus, pmu, topology)?;
        Ok(MsrStat {
            plan: self.plan,
            sources: self.sources,
            events: self.events,
            msr_plan,
            arch: self.arch,
            cpus: cpus.to_vec(),
            topology: topology.clone(),
        })
    }
}

/// The events of an `-e` list, planned onto the counters of some CPUs: what
/// the renderers need ([`MsrStat::plan`]) and what the session programs.
#[derive(Debug)]
pub struct MsrStat {
    /// The reported events and their groups. An event's `attr` is always an
    /// `Err` (it is not counted through perf); `energy-pkg` brings a
    /// `power-pkg` event after it. [`MsrStat::start`] sets the energy
    /// events' scale.
    pub plan: StatPlan,
    sources: Vec<Source>,
    events: Vec<MsrEvent>,
    msr_plan: Plan,
    arch: Arch,
    cpus: Vec<u32>,
    topology: Topology,
}

impl MsrStat {
    /// Resolve `groups` ([`MsrEvents::resolve`]) and plan them onto `pmu`'s
    /// counters on `cpus` ([`MsrEvents::plan`]).
    pub fn new(
        groups: &[EventGroup],
        db: Option<&Database>,
        arch: Arch,
        cpus: &[u32],
        pmu: &PmuCounters,
        topology: &Topology,
    ) -> Result<MsrStat, Error> {
        MsrEvents::resolve(groups, db, arch)?.plan(cpus, pmu, topology)
    }

    /// The register plan: every write the session makes, per CPU.
    pub fn msr_plan(&self) -> &Plan {
        &self.msr_plan
    }

    /// The events as the msr backend programs them (the PMU counters only,
    /// not energy).
    pub fn msr_events(&self) -> &[MsrEvent] {
        &self.events
    }

    /// The measured CPUs.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Open the devices, check nobody else uses the counters (see the
    /// module documentation), launch the command held before exec, program
    /// the counters and start the energy meter; set the energy events'
    /// scale in [`MsrStat::plan`]. Counting starts with [`MsrRunning::run`].
    /// Dropping the result restores every register and reaps the command.
    pub fn start(&mut self, opts: &MsrRunOptions) -> Result<MsrRunning, Error> {
        // Every selected CPU: the plan's, and the packages' readers for
        // energy.
        let device = MsrDevice::open(&opts.root, &self.cpus, Mode::ReadWrite)?;
        let mut notes = Vec::new();
        let outside = users_outside(&opts.sys);
        if !outside.is_empty() {
            if !opts.force {
                return Err(Error::InUse(outside));
            }
            notes.push(format!(
                "--force: {}; pmx programmed the counters anyway",
                outside.join("; ")
            ));
        }
        // Held before exec until the counters run. Dropped after the
        // session (see `MsrRunning`), so on an early return the session
        // restores first.
        let child = match opts.command.first() {
            None => None,
            Some(cmd) => Some(Child {
                launched: fork_held(
                    &opts.command,
                    Some(opts.pin.as_deref().unwrap_or(&self.cpus)),
                    opts.spawn,
                )
                .map_err(|error| Error::Start {
                    cmd: cmd.clone(),
                    error,
                })?,
                released: false,
                done: false,
                exit: None,
            }),
        };
        let session = start_session(
            device,
            &opts.root,
            &self.cpus,
            &self.msr_plan,
            opts.force,
            &mut notes,
        )?;
        let counting = self.counting(session)?;
        Ok(MsrRunning {
            counting,
            child,
            status: vec![EventStatus::Counted; self.plan.events.len()],
            notes,
            cpus: self.cpus.clone(),
            command: opts.command.first().cloned().unwrap_or_default(),
            duration: opts.duration,
            interval: opts.interval,
            interval_count: opts.interval_count,
        })
    }

    /// The started session's reading state: the energy meter (when an
    /// energy or power event is planned, with the energy events' scale
    /// set in the plan), each counter's event, empty totals.
    fn counting(&mut self, session: Session) -> Result<Counting, Error> {
        let energy_events: Vec<usize> = (0..self.sources.len())
            .filter(|&i| self.sources[i] == Source::Energy)
            .collect();
        let power_events: Vec<usize> = (0..self.sources.len())
            .filter(|&i| self.sources[i] == Source::Power)
            .collect();
        let meter = if energy_events.is_empty() {
            None
        } else {
            Some(EnergyMeter::start(
                session.device(),
                self.arch,
                &self.cpus,
                &self.topology,
            )?)
        };
        let mut nanojoules = false;
        let mut energy_scale = 1.0;
        if let Some(m) = &meter {
            let units: Vec<f64> = m.units().iter().map(|u| u.energy_joules).collect();
            nanojoules = units.windows(2).any(|w| w[0] != w[1]);
            energy_scale = if nanojoules {
                1e-9
            } else {
                units.first().copied().unwrap_or(1.0)
            };
            for &e in &energy_events {
                self.plan.events[e].scale = energy_scale;
            }
        }
        let mut event_of = vec![0; self.events.len()];
        for (i, s) in self.sources.iter().enumerate() {
            if let Source::Counter(k) = *s {
                event_of[k] = i;
            }
        }
        let slots = session.plan().slots.len();
        let packages = meter.as_ref().map_or(0, |m| m.domains().len());
        Ok(Counting {
            session,
            meter,
            event_of,
            energy_events,
            power_events,
            nanojoules,
            energy_scale,
            buf: Vec::with_capacity(slots),
            pending: vec![0; slots],
            total: vec![0; slots],
            e_pending: vec![0; packages],
            e_total: vec![0; packages],
        })
    }
}

/// Options of one msr counting run.
#[derive(Debug, Clone)]
pub struct MsrRunOptions {
    /// The msr devices (and the sysfs they are checked against).
    pub root: MsrRoot,
    /// Where `/proc` is read from, for the NMI watchdog and other
    /// processes' perf events.
    pub sys: SysRoot,
    /// Program the counters even when something else uses them (every
    /// register is put back at the end).
    pub force: bool,
    /// The command to run, held until the counters run (empty: none).
    pub command: Vec<String>,
    /// Pin the command to these CPUs (default: the measured CPUs).
    pub pin: Option<Vec<u32>>,
    /// Stop after this long (without a command, or to cut it short).
    pub duration: Option<Duration>,
    /// Report the deltas every this often.
    pub interval: Option<Duration>,
    /// Stop after this many intervals.
    pub interval_count: Option<u64>,
    /// How the command is started (see [`RunOptions::spawn`](crate::stat::RunOptions::spawn)).
    pub spawn: Spawn,
}

impl MsrRunOptions {
    /// The host's devices and `/proc`, no command, no limits.
    pub fn new() -> MsrRunOptions {
        MsrRunOptions {
            root: MsrRoot::host(),
            sys: SysRoot::default(),
            force: false,
            command: Vec::new(),
            pin: None,
            duration: None,
            interval: None,
            interval_count: None,
            spawn: Spawn::Clone,
        }
    }
}

impl Default for MsrRunOptions {
    fn default() -> Self {
        MsrRunOptions::new()
    }
}

/// Count `stat` once with `opts`: [`MsrStat::start`], then
/// [`MsrRunning::run`], calling `on_tick` after every interval.
pub fn run_with(
    stat: &mut MsrStat,
    opts: &MsrRunOptions,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<MsrOutcome, Error> {
    stat.start(opts)?.run(on_tick)
}
