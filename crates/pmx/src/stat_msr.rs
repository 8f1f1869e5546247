//! Counting by programming the PMU through the msr devices
//! (`/dev/cpu/N/msr`) instead of `perf_event_open`: the session behind
//! `pmx stat --backend msr`.
//!
//! The register work is pmx-msr's ([`pmx_msr::plan()`], [`Session`],
//! [`EnergyMeter`]). This module resolves the events to register
//! encodings ([`msr_event`]), plans them onto the CPU's counters
//! ([`MsrStat::new`]), checks that nobody else is using the counters, runs
//! the command pinned to the measured CPUs ([`MsrStat::start`]), reads
//! deltas ([`MsrRunning::run`]) and gives them back as a [`StatRun`] of the
//! perf backend's shape: one [`Instance`] per counter per CPU (per package
//! for package-scope events), each a `Count { value: delta, enabled: ns,
//! running: ns }`. The msr backend never multiplexes, so running always
//! equals enabled (the measured length of the run, or of the interval for
//! a [`Tick`]), and [`crate::stat::aggregate`] and `pmx-output`'s
//! table/CSV/JSON and interval renderers work unchanged. [`run_with`]
//! does both steps, like [`crate::stat::run_with`].
//!
//! ## Counters in use
//!
//! Unless [`MsrRunOptions::force`], the session refuses to program the PMU
//! when:
//!
//! - a register it will write says one of its counters is already enabled
//!   (the counter's bit in the global control register, EN in an event
//!   select, a fixed counter's ring bits): [`Session::start`] checks the
//!   values it saves ([`Error::Busy`]);
//! - the NMI watchdog is on (`/proc/sys/kernel/nmi_watchdog` is not 0): the
//!   hard-lockup detector keeps a perf cycles event on every CPU, and the
//!   kernel rewrites PMU registers whenever it schedules perf events
//!   ([`Error::InUse`]);
//! - a process holds a perf event open (an entry of `/proc/PID/fd` linking
//!   to `anon_inode:[perf_event]`; as root, which the msr device needs,
//!   every process is visible). Software-only perf events look the same
//!   and are refused too ([`Error::InUse`]).
//!
//! perf events opened after the session has started are not noticed. With
//! `force` the other user loses the counters until the session ends; every
//! register it wrote is put back then, and the [`MsrOutcome::notes`] say
//! what was taken over.
//!
//! ## Ending
//!
//! The session restores every register it touched on a normal end, when
//! the process unwinds from a panic or returns early (`Drop`), and on
//! SIGINT/SIGTERM/SIGHUP: under [`Signals::Defer`] the first signal is
//! only recorded, the session forwards it to the command, waits for the
//! command to end, reads the counters a last time, returns what it has
//! and restores; a second signal restores at once and ends the process by
//! that signal. The command is held before exec until the counters run,
//! and is always reaped (signalled, then killed after a grace period, if
//! the session ends first).
//!
//! ## Energy
//!
//! `energy-pkg` (also `power/energy-pkg/` and `rapl/energy-pkg/`) is the
//! package energy counter (Intel `MSR_PKG_ENERGY_STATUS`, AMD
//! `PKG_ENERGY_STAT`) in joules, read once per package through
//! [`EnergyMeter`], with the 32-bit wrap handled. Its raw count is in the
//! package's energy units and its scale converts them to joules (set by
//! [`MsrStat::start`], nanojoules when packages disagree on the unit); it
//! brings a `power-pkg` event in watts (each interval's energy over its
//! length). The notes add the energy and average power per package.

use crate::eventlist::EventGroup;
use crate::launch::{fork_held, Exit, Launched, StartError};
use crate::schedule::Need;
use crate::stat::{EventStatus, Instance, PlanGroup, PlannedEvent, StatPlan, StatRun, Tick};
use pmx_events::{Counters, Database, SourceKind};
use pmx_model::count::Count;
use pmx_model::encoding::{encode_spec, Arch, EncodeOptions, Encoded};
use pmx_model::spec::{Body, EventSpec, SpecError};
use pmx_model::topology::{format_cpu_list, Topology};
use pmx_msr::{
    generic_hardware_event, CounterReading, EnergyMeter, Mode, MsrDevice, MsrError, MsrEvent,
    MsrRoot, Plan, PlanError, PmuCounters, Session, SessionOptions, Signals,
};
use pmx_sys::{NativeCpuid, PmuCaps, SysRoot};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// Read the counters at least this often, intervals or not, so a counter
/// cannot wrap twice between two reads.
const READ_EVERY: Duration = Duration::from_secs(1);

/// How long the command gets to end after the session signals it, before
/// SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// What a perf event's descriptor links to in `/proc/PID/fd`.
const PERF_EVENT_LINK: &str = "anon_inode:[perf_event]";

/// How to take the counters over, in the refusals.
const FORCE_HINT: &str =
    "stop what uses them, or pass --force to take them over (pmx puts every register back when it ends)";

// ---------------------------------------------------------------------------
// Events.

/// Why an event of an `-e` list cannot be programmed through the msr
/// devices. [`Display`](std::fmt::Display) names the event (one message
/// for the user); [`MsrEventError::reason`] is the same without the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MsrEventError {
    /// The database could not resolve the event, or the model could not
    /// encode its terms (the spec error, with its caret).
    Spec(SpecError),
    /// A client-uncore PMU given by an alias, not by terms.
    UncoreAlias {
        /// The spec as typed.
        event: String,
        /// The uncore PMU.
        pmu: String,
    },
    /// A generic hardware event the kernel has no encoding of for `arch`.
    NoGenericEncoding {
        /// The spec as typed.
        event: String,
        /// The event's name in the database.
        name: String,
        /// The register set.
        arch: Arch,
    },
    /// An event the kernel counts by itself (software, tracepoint…).
    KernelCounted {
        /// The spec as typed.
        event: String,
        /// The event's name in the database.
        name: String,
        /// The PMU that counts it.
        pmu: String,
    },
    /// Resolved, but to nothing with a control-register encoding.
    NoEncoding {
        /// The spec as typed.
        event: String,
    },
}

impl MsrEventError {
    /// Why, without naming the event (for a per-event status).
    pub fn reason(&self) -> String {
        match self {
            MsrEventError::Spec(e) => e.message.clone(),
            MsrEventError::UncoreAlias { pmu, .. } => format!(
                "the msr backend programs the client uncore by terms (uncore_cbox_0/event=0x22,umask=0x41/), not {pmu} aliases"
            ),
            MsrEventError::NoGenericEncoding { name, arch, .. } => format!(
                "the kernel has no {} encoding for '{name}', so neither has the msr backend",
                pmx_msr::catalogue::arch_name(*arch)
            ),
            MsrEventError::KernelCounted { name, pmu, .. } => format!(
                "'{name}' is counted by the kernel ({pmu} PMU), not by a PMU counter the msr backend can program"
            ),
            MsrEventError::NoEncoding { .. } => {
                "no control-register encoding the msr backend can program".to_string()
            }
        }
    }
}

impl std::fmt::Display for MsrEventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsrEventError::Spec(e) => write!(f, "{e}"),
            MsrEventError::NoEncoding { event } => write!(
                f,
                "{event}: has no control-register encoding the msr backend can program"
            ),
            MsrEventError::UncoreAlias { event, .. }
            | MsrEventError::NoGenericEncoding { event, .. }
            | MsrEventError::KernelCounted { event, .. } => {
                write!(f, "{event}: {}", self.reason())
            }
        }
    }
}

impl std::error::Error for MsrEventError {}

/// An event of an `-e` list as a register encoding the msr backend can
/// program: core-PMU encodings from the database, the kernel's generic
/// hardware events through [`generic_hardware_event`] (fixed counters on
/// Intel), client-uncore terms through the register model, the counter
/// constraint from the event's definition. Anything the kernel counts
/// (software events, tracepoints) is an error. The one resolver of
/// `pmx stat --backend msr`, `pmx msr plan` and [`crate::Backend::Msr`].
pub fn msr_event(db: &Database, spec: &EventSpec, arch: Arch) -> Result<MsrEvent, MsrEventError> {
    let text = spec.text.clone();
    // Client uncore PMUs: the model encodes them (the database places
    // non-core PMUs through sysfs, which has no register view).
    if let Some(pmu) = spec.pmu.as_deref().filter(|p| p.starts_with("uncore_")) {
        if arch == Arch::Intel && !matches!(spec.body, Body::Named { .. }) {
            let enc = encode_spec(
                spec,
                EncodeOptions {
                    arch,
                    sampling: false,
                },
            )
            .map_err(MsrEventError::Spec)?;
            return Ok(MsrEvent::new(text, enc));
        }
        return Err(MsrEventError::UncoreAlias {
            event: text,
            pmu: pmu.to_string(),
        });
    }
    let r = db.resolve(spec).map_err(MsrEventError::Spec)?;
    let encoded: Encoded = match (&r.register, &r.def) {
        (Some(enc), _) => enc.clone(),
        (None, Some(def))
            if def.source == SourceKind::Kernel
                && def.perf_type == Some(pmx_events::perf_type::HARDWARE) =>
        {
            generic_hardware_event(arch, def.config, &r.attr).ok_or_else(|| {
                MsrEventError::NoGenericEncoding {
                    event: text.clone(),
                    name: def.name.clone(),
                    arch,
                }
            })?
        }
        (None, Some(def)) => {
            return Err(MsrEventError::KernelCounted {
                event: text,
                name: def.name.clone(),
                pmu: def.pmu.clone(),
            })
        }
        (None, None) => return Err(MsrEventError::NoEncoding { event: text }),
    };
    let allowed = r.def.as_ref().and_then(|d| match &d.counters {
        Counters::Gp { list } => Some(list.iter().map(|&c| u32::from(c)).collect()),
        _ => None,
    });
    Ok(MsrEvent {
        name: text,
        encoded,
        allowed,
    })
}

/// The counters to plan with for `target`: CPUID's when it is this machine
/// and CPUID describes them, else [`PmuCounters::assumed`] (with a note in
/// `source`).
pub fn pmu_counters(target: &pmx_events::Target, arch: Arch) -> PmuCounters {
    let caps = if target.host {
        PmuCaps::decode(&NativeCpuid)
    } else {
        None
    };
    caps.as_ref()
        .and_then(PmuCounters::from_caps)
        .filter(|p| p.arch == arch)
        .unwrap_or_else(|| {
            let mut p = PmuCounters::assumed(arch, Some(target.cpu.family));
            if target.host {
                p.source.push_str(" (CPUID describes no counters here)");
            }
            p
        })
}

/// The CPUs to count when none are named: the online CPUs, else those
/// with an msr device under `root`, else CPU 0.
pub fn default_cpus(topology: &Topology, root: &MsrRoot) -> Vec<u32> {
    let online = topology.online_cpus();
    if !online.is_empty() {
        return online;
    }
    let with_devices = root.cpus_with_devices();
    if !with_devices.is_empty() {
        return with_devices;
    }
    vec![0]
}

/// `energy-pkg`, `power/energy-pkg/` or `rapl/energy-pkg/`.
pub fn is_energy_pkg(spec: &EventSpec) -> bool {
    let named = matches!(&spec.body, Body::Named { parts, .. }
        if parts.len() == 1 && parts[0].eq_ignore_ascii_case("energy-pkg"));
    named && matches!(spec.pmu.as_deref(), None | Some("power") | Some("rapl"))
}

/// Whether resolving `groups` needs the event database (every event but
/// the package energy counter does).
pub fn needs_database(groups: &[EventGroup]) -> bool {
    groups
        .iter()
        .flat_map(|g| &g.members)
        .any(|s| !is_energy_pkg(s))
}

/// Where a reported event's counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A PMU counter: index into the msr events (and the plan's events).
    Counter(usize),
    /// The package energy counter.
    Energy,
    /// Package power: the energy counter over each interval's length.
    Power,
}

fn stat_event(name: &str, group: usize, unit: Option<&str>) -> PlannedEvent {
    PlannedEvent {
        name: name.to_string(),
        group,
        attr: Err("counted through the msr device, not perf".to_string()),
        cpus: None,
        unit: unit.map(str::to_string),
        scale: 1.0,
        source: None,
        need: Need::None,
    }
}

// ---------------------------------------------------------------------------
// Errors.

/// Why an msr counting session could not be planned, started or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An event cannot be programmed (bad input).
    #[error("{0}")]
    Event(#[from] MsrEventError),
    /// An event needs the database and none was given.
    #[error("{0}: no event database loaded")]
    NoDatabase(String),
    /// The events do not fit the counters, or the CPUs are wrong (bad
    /// input).
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The msr devices: opening, a register that refused, or a session
    /// error other than [`Error::Busy`].
    #[error("{0}")]
    Device(#[from] MsrError),
    /// Registers the session would write show the counters enabled.
    #[error("the counters are in use ({}): something else is counting with them; {FORCE_HINT}", .0.join("; "))]
    Busy(Vec<String>),
    /// The NMI watchdog or other processes' perf events use the counters.
    #[error("the counters are in use: {}; {FORCE_HINT}", .0.join("; "))]
    InUse(Vec<String>),
    /// The command could not be forked.
    #[error("cannot start '{cmd}': {error}")]
    Start {
        /// The command's name.
        cmd: String,
        /// Why.
        error: std::io::Error,
    },
    /// The command could not run (exec or pinning failed); the registers
    /// are back and nothing was counted. The shell's code is 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command's name.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// Reading the counters failed while counting; the registers were put
    /// back (as far as possible) and nothing is reported.
    #[error("reading the counters: {0}")]
    Read(MsrError),
}

impl Error {
    /// The error is the caller's input (an event, the CPUs), not the
    /// machine: the CLI's exit code 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::Event(_) | Error::Plan(_))
    }
}

// ---------------------------------------------------------------------------
// Resolving and planning.

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
    /// Resolve `groups` through `db` (needed unless [`needs_database`] is
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
        for (gi, g) in groups.iter().enumerate() {
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
        Ok(MsrRunning {
            counting: Counting {
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
            },
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
        }
    }
}

impl Default for MsrRunOptions {
    fn default() -> Self {
        MsrRunOptions::new()
    }
}

/// What a finished msr run gives back besides the counts.
#[derive(Debug)]
pub struct MsrOutcome {
    /// The totals, in the perf backend's shape.
    pub run: StatRun,
    /// For the report, in order: what `force` took over, how many
    /// registers were programmed and put back on which CPUs, the session's
    /// notes, and each package's energy and average power.
    pub notes: Vec<String>,
    /// Putting the registers back failed (the counts are still valid).
    pub restore_error: Option<MsrError>,
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

// ---------------------------------------------------------------------------
// Devices and who else uses the counters.

/// What outside the session's registers says the counters are in use (see
/// the module documentation): the NMI watchdog and open perf events.
fn users_outside(sys: &SysRoot) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string(sys.path("proc/sys/kernel/nmi_watchdog")) {
        let v = text.trim();
        if !v.is_empty() && v != "0" {
            out.push(format!(
                "the NMI watchdog is on (kernel.nmi_watchdog = {v}: it keeps a perf cycles counter on every CPU; sysctl kernel.nmi_watchdog=0 turns it off)"
            ));
        }
    }
    let holders = perf_event_holders(&sys.path("proc"));
    if !holders.is_empty() {
        let shown: Vec<String> = holders
            .iter()
            .take(3)
            .map(|(pid, comm)| format!("{pid} ({comm})"))
            .collect();
        let more = if holders.len() > 3 {
            format!(" and {} more", holders.len() - 3)
        } else {
            String::new()
        };
        out.push(format!(
            "perf events are open in process{} {}{more}",
            if holders.len() == 1 { "" } else { "es" },
            shown.join(", ")
        ));
    }
    out
}

/// Processes under `proc` (other than this one) with a perf event open:
/// (pid, command name), by pid.
fn perf_event_holders(proc: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            if pid == me {
                return None;
            }
            let fds = std::fs::read_dir(e.path().join("fd")).ok()?;
            let holds = fds.filter_map(|f| f.ok()).any(|f| {
                std::fs::read_link(f.path()).is_ok_and(|t| t.as_os_str() == PERF_EVENT_LINK)
            });
            if !holds {
                return None;
            }
            let comm = std::fs::read_to_string(e.path().join("comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".to_string());
            Some((pid, comm))
        })
        .collect();
    out.sort();
    out
}

/// Start the session; with `force`, take over counters the library says
/// are in use (and say so in `notes`).
fn start_session(
    device: MsrDevice,
    root: &MsrRoot,
    cpus: &[u32],
    plan: &Plan,
    force: bool,
    notes: &mut Vec<String>,
) -> Result<Session, Error> {
    let options = SessionOptions {
        force: false,
        signals: Signals::Defer,
    };
    match Session::start(device, plan.clone(), &options) {
        Ok(s) => Ok(s),
        Err(MsrError::Busy(what)) if force => {
            notes.push(format!(
                "--force: the counters were in use ({}); pmx took them over and put every register back",
                what.join("; ")
            ));
            // The refused start changed nothing and dropped the device.
            let device = MsrDevice::open(root, cpus, Mode::ReadWrite)?;
            let options = SessionOptions {
                force: true,
                ..options
            };
            Ok(Session::start(device, plan.clone(), &options)?)
        }
        Err(MsrError::Busy(what)) => Err(Error::Busy(what)),
        Err(e) => Err(Error::Device(e)),
    }
}

// ---------------------------------------------------------------------------
// The command.

/// The measured command: held before exec until the counters run, reaped
/// (signalled first if need be) whatever happens.
#[derive(Debug)]
struct Child {
    launched: Launched,
    released: bool,
    /// Reaped (or gone).
    done: bool,
    exit: Option<Exit>,
}

impl Child {
    fn pid(&self) -> i32 {
        self.launched.pid
    }

    /// Let it exec; the reason when it cannot run.
    fn release(&mut self) -> Result<(), String> {
        self.released = true;
        match self.launched.release() {
            Ok(()) => Ok(()),
            Err(e) => {
                let reason = match e {
                    StartError::Exec(libc::ENOENT) => "command not found".to_string(),
                    StartError::Exec(libc::EACCES) => {
                        "permission denied (not executable?)".to_string()
                    }
                    StartError::Exec(errno) => std::io::Error::from_raw_os_error(errno).to_string(),
                    StartError::Pin(errno) => format!(
                        "cannot pin it to the measured CPUs: {}",
                        std::io::Error::from_raw_os_error(errno)
                    ),
                };
                self.exit = self.launched.wait().ok();
                self.done = true;
                Err(reason)
            }
        }
    }

    /// Has it ended? Reaps it when it has.
    fn poll(&mut self) -> bool {
        if self.done {
            return true;
        }
        let mut st = 0;
        // SAFETY: a non-blocking wait for our own child.
        let r = unsafe { libc::waitpid(self.pid(), &mut st, libc::WNOHANG) };
        if r == self.pid() {
            self.exit = Some(Exit::from_wait_status(st));
            self.done = true;
        } else if r < 0 {
            self.done = true;
        }
        self.done
    }

    fn signal(&self, sig: i32) {
        if !self.done {
            // SAFETY: kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(self.pid(), sig) };
        }
    }

    /// Signal it, give it [`GRACE`] to end, then SIGKILL; reaped after.
    fn stop(&mut self, sig: i32) {
        if self.poll() {
            return;
        }
        self.signal(sig);
        let until = Instant::now() + GRACE;
        while Instant::now() < until {
            if self.poll() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.signal(libc::SIGKILL);
        self.exit = self.launched.wait().ok();
        self.done = true;
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.released {
            self.launched.abandon();
        } else if !self.done {
            self.stop(libc::SIGTERM);
        }
    }
}

/// Sleep up to `ms`, less when the command ends or a signal arrives (the
/// session's handlers do not restart system calls).
fn nap(fd: Option<&OwnedFd>, ms: i32) {
    let mut p = libc::pollfd {
        fd: fd.map_or(-1, |f| f.as_raw_fd()),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd (a negative fd is ignored by poll).
    unsafe { libc::poll(&mut p, 1, ms) };
}

// ---------------------------------------------------------------------------
// Counting.

/// The session and what has been read from it.
#[derive(Debug)]
struct Counting {
    session: Session,
    meter: Option<EnergyMeter>,
    /// Reported event of each of the plan's events.
    event_of: Vec<usize>,
    /// Reported events that are package energy.
    energy_events: Vec<usize>,
    /// Reported events that are package power (microwatts, scale 1e-6).
    power_events: Vec<usize>,
    /// Energy values are nanojoules (packages with different units), not
    /// energy units.
    nanojoules: bool,
    /// Joules per energy value.
    energy_scale: f64,
    buf: Vec<CounterReading>,
    /// Per plan slot: since the last interval, and since the start.
    pending: Vec<u64>,
    total: Vec<u64>,
    /// Per package: the same for energy.
    e_pending: Vec<u64>,
    e_total: Vec<u64>,
}

impl Counting {
    fn read(&mut self) -> Result<(), MsrError> {
        self.session.read_into(&mut self.buf)?;
        for (i, r) in self.buf.iter().enumerate() {
            self.pending[i] = self.pending[i].wrapping_add(r.delta);
            self.total[i] = self.total[i].wrapping_add(r.delta);
        }
        if let Some(meter) = self.meter.as_mut() {
            let samples = meter.sample(self.session.device())?;
            let units = meter.units();
            for (i, s) in samples.iter().enumerate() {
                let n = if self.nanojoules {
                    (s.joules * 1e9).round() as u64
                } else {
                    let unit = units.get(i).map_or(1.0, |u| u.energy_joules);
                    (s.joules / unit).round() as u64
                };
                self.e_pending[i] = self.e_pending[i].wrapping_add(n);
                self.e_total[i] = self.e_total[i].wrapping_add(n);
            }
        }
        Ok(())
    }

    /// Instances from per-slot and per-package values over `ns`.
    fn instances(&self, counts: &[u64], energy: &[u64], ns: u64) -> Vec<Instance> {
        let count = |value: u64| Count {
            value,
            enabled: ns,
            running: ns,
        };
        let mut out: Vec<Instance> = self
            .session
            .plan()
            .slots
            .iter()
            .zip(counts)
            .map(|(slot, &v)| Instance {
                event: self.event_of[slot.event],
                cpu: slot.cpu as i32,
                tid: -1,
                count: count(v),
            })
            .collect();
        if let Some(meter) = &self.meter {
            for &e in &self.energy_events {
                for (d, &v) in meter.domains().iter().zip(energy) {
                    out.push(Instance {
                        event: e,
                        cpu: d.cpu as i32,
                        tid: -1,
                        count: count(v),
                    });
                }
            }
            let units = meter.units();
            let seconds = ns as f64 * 1e-9;
            for &p in &self.power_events {
                for (i, (d, &v)) in meter.domains().iter().zip(energy).enumerate() {
                    let joules = if self.nanojoules {
                        v as f64 * 1e-9
                    } else {
                        v as f64 * units.get(i).map_or(1.0, |u| u.energy_joules)
                    };
                    let microwatts = if seconds > 0.0 {
                        (joules / seconds * 1e6).round() as u64
                    } else {
                        0
                    };
                    out.push(Instance {
                        event: p,
                        cpu: d.cpu as i32,
                        tid: -1,
                        count: count(microwatts),
                    });
                }
            }
        }
        out
    }

    /// The interval's instances; starts the next interval.
    fn take_interval(&mut self, ns: u64) -> Vec<Instance> {
        let v = self.instances(&self.pending, &self.e_pending, ns);
        self.pending.iter_mut().for_each(|x| *x = 0);
        self.e_pending.iter_mut().for_each(|x| *x = 0);
        v
    }

    fn totals(&self, ns: u64) -> Vec<Instance> {
        self.instances(&self.total, &self.e_total, ns)
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A started msr session: the counters programmed, the command (if any)
/// held before exec. Dropping it restores the registers, then stops and
/// reaps the command.
#[derive(Debug)]
pub struct MsrRunning {
    // Field order is drop order: the session restores before the command
    // is stopped.
    counting: Counting,
    child: Option<Child>,
    status: Vec<EventStatus>,
    notes: Vec<String>,
    cpus: Vec<u32>,
    command: String,
    duration: Option<Duration>,
    interval: Option<Duration>,
    interval_count: Option<u64>,
}

impl MsrRunning {
    /// Release the command and count until it ends, the duration passes,
    /// the interval count is reached or a signal arrives; call `on_tick`
    /// after every interval with its deltas (each instance's `enabled` and
    /// `running` are the interval's measured length in ns), and once more
    /// for the partial last interval unless the interval count ended the
    /// run. Then restore the registers.
    pub fn run(mut self, on_tick: &mut dyn FnMut(&Tick)) -> Result<MsrOutcome, Error> {
        let counting = &mut self.counting;
        let child = &mut self.child;
        let status = &self.status;
        // Counting runs from here.
        let start = Instant::now();
        if let Some(c) = child.as_mut() {
            if let Err(reason) = c.release() {
                counting.session.restore()?;
                return Err(Error::Exec {
                    cmd: self.command.clone(),
                    reason,
                });
            }
        }
        let wake_fd = child
            .as_ref()
            .and_then(|c| crate::launch::pidfd_open(c.pid()));
        let deadline = self.duration.map(|d| start + d);
        let mut next_tick = self.interval.map(|i| start + i);
        let mut next_read = start + READ_EVERY;
        let mut interval_start = start;
        let mut ticks = 0u64;
        let mut interrupted = false;
        let mut forwarded = false;
        let mut ended_by_us = false;
        let mut failure: Option<MsrError> = None;
        loop {
            if child.as_mut().is_some_and(|c| c.poll()) {
                break;
            }
            if let Some(sig) = counting.session.interrupted() {
                interrupted = true;
                match child.as_ref() {
                    // From a terminal the command got it too; from kill(1)
                    // only pmx did.
                    Some(c) if !forwarded => {
                        c.signal(sig);
                        forwarded = true;
                    }
                    Some(_) => {}
                    None => break,
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                interrupted |= child.is_some();
                ended_by_us = true;
                break;
            }
            if let (Some(t), Some(iv)) = (next_tick, self.interval) {
                if now >= t {
                    if let Err(e) = counting.read() {
                        failure = Some(e);
                        break;
                    }
                    let read_at = Instant::now();
                    let span = ns(read_at - interval_start);
                    interval_start = read_at;
                    ticks += 1;
                    let instances = counting.take_interval(span);
                    on_tick(&Tick {
                        index: ticks,
                        at: t - start,
                        last: false,
                        instances: &instances,
                        status,
                    });
                    if self.interval_count.is_some_and(|n| ticks >= n) {
                        ended_by_us = true;
                        break;
                    }
                    next_tick = Some(crate::stat::next_tick_after(t, iv, now));
                    next_read = read_at + READ_EVERY;
                    continue;
                }
            }
            if now >= next_read {
                if let Err(e) = counting.read() {
                    failure = Some(e);
                    break;
                }
                next_read = Instant::now() + READ_EVERY;
                continue;
            }
            let wake = [next_tick, deadline, Some(next_read)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(next_read);
            let mut ms = wake
                .saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000)
                .min(1000) as i32;
            // Without a way to be woken by the command's end, look
            // regularly.
            let cap = if child.is_some() && wake_fd.is_none() {
                5
            } else {
                100
            };
            ms = ms.clamp(1, cap);
            nap(wake_fd.as_ref(), ms);
        }
        if let Some(c) = child.as_mut() {
            if failure.is_some() {
                c.stop(libc::SIGTERM);
            } else if ended_by_us {
                c.stop(libc::SIGINT);
            }
        }
        if failure.is_none() {
            if let Err(e) = counting.read() {
                failure = Some(e);
            }
        }
        let end = Instant::now();
        let elapsed = end - start;
        if failure.is_none() && self.interval.is_some() {
            // The partial last interval, unless the last tick just ended
            // the run.
            let count_reached = self.interval_count.is_some_and(|n| ticks >= n);
            if !count_reached {
                let span = ns(end - interval_start);
                let instances = counting.take_interval(span);
                on_tick(&Tick {
                    index: ticks + 1,
                    at: elapsed,
                    last: true,
                    instances: &instances,
                    status,
                });
            }
        }
        let restored = counting.session.restore();
        if let Some(e) = failure {
            return Err(Error::Read(e));
        }

        let run = StatRun {
            instances: counting.totals(ns(elapsed)),
            status: self.status.clone(),
            elapsed,
            exit: child.as_ref().and_then(|c| c.exit),
            interrupted,
        };
        let mut notes = std::mem::take(&mut self.notes);
        let cpus = &self.cpus;
        let saved = counting.session.saved().len();
        let on = format!(
            "CPU{} {}",
            if cpus.len() == 1 { "" } else { "s" },
            format_cpu_list(cpus)
        );
        notes.push(match (saved, restored.is_ok()) {
            (0, _) => format!("counted through the msr devices (--backend msr) on {on}; no register written"),
            (n, true) => format!(
                "counted through the msr devices (--backend msr): {n} register{} on {on} programmed and put back",
                if n == 1 { "" } else { "s" }
            ),
            (n, false) => format!(
                "counted through the msr devices (--backend msr): {n} register{} on {on} programmed, not all put back (see the error)",
                if n == 1 { "" } else { "s" }
            ),
        });
        notes.extend(counting.session.notes().iter().cloned());
        if let Some(m) = &counting.meter {
            let secs = elapsed.as_secs_f64();
            for (d, &t) in m.domains().iter().zip(&counting.e_total) {
                let joules = t as f64 * counting.energy_scale;
                notes.push(format!(
                    "energy: {} (cpu {}): {joules:.6} J, {:.3} W on average",
                    d.id,
                    d.cpu,
                    if secs > 0.0 { joules / secs } else { 0.0 }
                ));
            }
        }
        Ok(MsrOutcome {
            run,
            notes,
            restore_error: restored.err(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> EventSpec {
        crate::parse_event_list(text).unwrap()[0].members[0].clone()
    }

    #[test]
    fn energy_pkg_spellings() {
        for t in ["energy-pkg", "power/energy-pkg/", "rapl/energy-pkg/"] {
            assert!(is_energy_pkg(&spec(t)), "{t}");
        }
        for t in ["cycles", "cpu/energy-pkg/", "energy-cores"] {
            assert!(!is_energy_pkg(&spec(t)), "{t}");
        }
        let only_energy = crate::parse_event_list("energy-pkg").unwrap();
        assert!(!needs_database(&only_energy));
        let mixed = crate::parse_event_list("energy-pkg,cycles").unwrap();
        assert!(needs_database(&mixed));
    }

    #[test]
    fn users_outside_reads_proc() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        for (pid, comm, link) in [
            ("4242", "perf", PERF_EVENT_LINK),
            ("17", "bash", "/dev/null"),
            ("99", "other", PERF_EVENT_LINK),
        ] {
            let fd = proc.join(pid).join("fd");
            std::fs::create_dir_all(&fd).unwrap();
            std::os::unix::fs::symlink(link, fd.join("3")).unwrap();
            std::fs::write(proc.join(pid).join("comm"), format!("{comm}\n")).unwrap();
        }
        std::fs::create_dir_all(proc.join("self")).unwrap();
        assert_eq!(
            perf_event_holders(&proc),
            vec![(99, "other".to_string()), (4242, "perf".to_string())]
        );
        let kernel = proc.join("sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("nmi_watchdog"), "0\n").unwrap();
        let sys = SysRoot::new(dir.path());
        assert_eq!(
            users_outside(&sys),
            vec!["perf events are open in processes 99 (other), 4242 (perf)".to_string()]
        );
        std::fs::write(kernel.join("nmi_watchdog"), "1\n").unwrap();
        let found = users_outside(&sys);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("kernel.nmi_watchdog = 1"), "{found:?}");
        let e = Error::InUse(found);
        assert!(e
            .to_string()
            .starts_with("the counters are in use: the NMI watchdog is on"));
        assert!(e.to_string().ends_with(FORCE_HINT));
    }

    /// Register `address` of `cpu` in a fixture device (byte 8·N).
    fn reg(root: &Path, cpu: u32, address: u32) -> u64 {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(root.join(format!("dev/cpu{cpu}/msr"))).unwrap();
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, u64::from(address) * 8).unwrap();
        u64::from_le_bytes(b)
    }

    fn set_reg(root: &Path, cpu: u32, address: u32, value: u64) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(root.join(format!("dev/cpu{cpu}/msr")))
            .unwrap();
        f.write_all_at(&value.to_le_bytes(), u64::from(address) * 8)
            .unwrap();
    }

    /// Two CPUs in one package, msr fixture files, `/proc` with the NMI
    /// watchdog off and no other process.
    fn machine() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let cpu_dir = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu_dir).unwrap();
        std::fs::write(cpu_dir.join("online"), "0-1\n").unwrap();
        for cpu in 0..2u32 {
            let topo = cpu_dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topo).unwrap();
            std::fs::write(topo.join("physical_package_id"), "0\n").unwrap();
            std::fs::write(topo.join("die_id"), "0\n").unwrap();
            std::fs::write(topo.join("core_id"), format!("{cpu}\n")).unwrap();
            std::fs::write(topo.join("thread_siblings_list"), format!("{cpu}\n")).unwrap();
            let dev = dir.path().join(format!("dev/cpu{cpu}"));
            std::fs::create_dir_all(&dev).unwrap();
            std::fs::File::create(dev.join("msr"))
                .unwrap()
                .set_len(0x1000 * 8)
                .unwrap();
        }
        let kernel = dir.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("nmi_watchdog"), "0\n").unwrap();
        dir
    }

    const PMC0: u32 = 0xC1;
    const EVTSEL0: u32 = 0x186;
    const GLOBAL_CTRL: u32 = 0x38F;
    const RAPL_UNIT: u32 = 0x606;
    const PKG_ENERGY: u32 = 0x611;
    /// 1/16384 J energy units.
    const JOULE: u64 = 16384;

    /// (event, cpu, value) of an instance.
    type Value = (usize, i32, u64);

    fn skylake_sp(root: &Path, events: &str) -> MsrStat {
        let target = pmx_events::Target {
            cpu: "GenuineIntel-6-55-4".parse().unwrap(),
            host: false,
        };
        let db = Database::load(
            target.clone(),
            &pmx_events::LoadOptions {
                events_dir: None,
                sysfs_root: Some(root.to_path_buf()),
                no_libpfm: true,
                ..Default::default()
            },
        );
        let groups = crate::parse_event_list(events).unwrap();
        let sys = SysRoot::new(root);
        let topology = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
        let pmu = pmu_counters(&target, Arch::Intel);
        MsrStat::new(&groups, Some(&db), Arch::Intel, &[0, 1], &pmu, &topology).unwrap()
    }

    fn options(root: &Path) -> MsrRunOptions {
        MsrRunOptions {
            root: MsrRoot::new(root.join("dev")).with_sysfs(root.join("sys")),
            sys: SysRoot::new(root),
            interval: Some(Duration::from_millis(5)),
            interval_count: Some(3),
            ..MsrRunOptions::new()
        }
    }

    #[test]
    fn a_session_counts_intervals_and_energy_and_restores() {
        let dir = machine();
        let root = dir.path();
        set_reg(root, 0, RAPL_UNIT, 0x000A_0E03);
        set_reg(root, 0, PKG_ENERGY, 0xffff_f000);
        let mut stat = skylake_sp(root, "r00c0,energy-pkg");
        assert_eq!(
            stat.plan
                .events
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>(),
            ["r00c0", "energy-pkg", "power-pkg"]
        );
        // Each tick advances PMC0 on both CPUs by 100·k and the package
        // energy by k joules (wrapping at 32 bits): the next interval must
        // see exactly that.
        let mut seen: Vec<(u64, bool, Vec<Value>)> = Vec::new();
        let outcome = run_with(&mut stat, &options(root), &mut |t| {
            let k = t.index;
            seen.push((
                t.index,
                t.last,
                t.instances
                    .iter()
                    .filter(|i| i.event != 2)
                    .map(|i| (i.event, i.cpu, i.count.value))
                    .collect(),
            ));
            assert!(t.instances.iter().all(|i| i.count.enabled > 0
                && i.count.enabled == t.instances[0].count.enabled
                && i.count.running == i.count.enabled));
            assert!(t.status.iter().all(|s| *s == EventStatus::Counted));
            for cpu in 0..2 {
                set_reg(root, cpu, PMC0, reg(root, cpu, PMC0) + 100 * k);
            }
            let e = reg(root, 0, PKG_ENERGY);
            set_reg(root, 0, PKG_ENERGY, (e + k * JOULE) & 0xffff_ffff);
        })
        .unwrap();
        let want = |k: u64| vec![(0, 0, 100 * k), (0, 1, 100 * k), (1, 0, k * JOULE)];
        assert_eq!(
            seen,
            vec![
                (1, false, want(0)),
                (2, false, want(1)),
                (3, false, want(2)),
            ]
        );
        // The third tick's advance falls after the last interval and is
        // in the totals (the final read).
        let totals: Vec<Value> = outcome
            .run
            .instances
            .iter()
            .filter(|i| i.event != 2)
            .map(|i| (i.event, i.cpu, i.count.value))
            .collect();
        assert_eq!(totals, want(6));
        assert_eq!(stat.plan.events[1].scale, 1.0 / JOULE as f64);
        assert!(outcome.restore_error.is_none());
        assert!(!outcome.run.interrupted && outcome.run.exit.is_none());
        assert!(
            outcome.notes[0].contains("programmed and put back"),
            "{:?}",
            outcome.notes
        );
        assert!(
            outcome
                .notes
                .iter()
                .any(|n| n.starts_with("energy: package 0 (cpu 0): 6.000000 J")),
            "{:?}",
            outcome.notes
        );
        for cpu in 0..2 {
            assert_eq!(reg(root, cpu, EVTSEL0), 0, "cpu {cpu}");
            assert_eq!(reg(root, cpu, GLOBAL_CTRL), 0, "cpu {cpu}");
        }
    }

    #[test]
    fn a_command_runs_pinned_and_its_exit_is_kept() {
        let dir = machine();
        let root = dir.path();
        let mut stat = skylake_sp(root, "instructions");
        let opts = MsrRunOptions {
            command: vec!["sh".into(), "-c".into(), "exit 3".into()],
            pin: Some(vec![1]),
            interval: None,
            interval_count: None,
            ..options(root)
        };
        let outcome = run_with(&mut stat, &opts, &mut |_| panic!("no intervals")).unwrap();
        assert_eq!(outcome.run.exit.map(|e| e.shell_code()), Some(3));
        let missing = MsrRunOptions {
            command: vec!["/nonexistent/pmx-test-command".into()],
            ..opts
        };
        match run_with(&mut stat, &missing, &mut |_| {}) {
            Err(Error::Exec { cmd, reason }) => {
                assert_eq!(cmd, "/nonexistent/pmx-test-command");
                assert_eq!(reason, "command not found");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(reg(root, 1, GLOBAL_CTRL), 0);
    }

    #[test]
    fn counters_in_use_are_refused_before_anything_is_written() {
        let dir = machine();
        let root = dir.path();
        std::fs::write(root.join("proc/sys/kernel/nmi_watchdog"), "1\n").unwrap();
        let mut stat = skylake_sp(root, "r00c0");
        let opts = MsrRunOptions {
            interval: None,
            interval_count: None,
            duration: Some(Duration::from_millis(1)),
            ..options(root)
        };
        match stat.start(&opts) {
            Err(e @ Error::InUse(_)) => assert!(e.to_string().contains("nmi_watchdog = 1")),
            other => panic!("{other:?}"),
        }
        assert_eq!(reg(root, 0, EVTSEL0), 0);
        let forced = MsrRunOptions {
            force: true,
            ..opts
        };
        let outcome = run_with(&mut stat, &forced, &mut |_| {}).unwrap();
        assert!(
            outcome.notes[0].starts_with("--force: the NMI watchdog is on"),
            "{:?}",
            outcome.notes
        );
        assert_eq!(reg(root, 0, EVTSEL0), 0);
    }
}
