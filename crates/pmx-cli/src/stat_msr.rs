//! `pmx stat --backend msr`: counting by programming the PMU through the
//! msr devices (`/dev/cpu/N/msr`) instead of `perf_event_open`.
//!
//! The register work is pmx-msr's ([`pmx_msr::plan()`], [`Session`],
//! [`EnergyMeter`]). This module selects the CPUs, resolves the events to
//! register encodings ([`msr_event`]), checks that nobody else is using the
//! counters, runs the command pinned to the measured CPUs, reads deltas
//! and hands them to the perf backend's renderers as a [`StatRun`]: one
//! [`Instance`] per counter per CPU (per package for package-scope events),
//! each a `Count { value: delta, enabled: ns, running: ns }`. The msr
//! backend never multiplexes, so running always equals enabled, and
//! [`pmx::stat::aggregate`] and the table/CSV/JSON and interval renderers
//! work unchanged.
//!
//! ## Counters in use
//!
//! Unless `--force`, pmx refuses to program the PMU when:
//!
//! - a register it will write says one of its counters is already enabled
//!   (the counter's bit in the global control register, EN in an event
//!   select, a fixed counter's ring bits): [`Session::start`] checks the
//!   values it saves;
//! - the NMI watchdog is on (`/proc/sys/kernel/nmi_watchdog` is not 0): the
//!   hard-lockup detector keeps a perf cycles event on every CPU, and the
//!   kernel rewrites PMU registers whenever it schedules perf events;
//! - a process holds a perf event open (an entry of `/proc/PID/fd` linking
//!   to `anon_inode:[perf_event]`; as root, which the msr device needs,
//!   every process is visible). Software-only perf events look the same
//!   and are refused too.
//!
//! perf events opened after pmx has started are not noticed. With
//! `--force` the other user loses the counters until pmx ends; every
//! register pmx wrote is put back then.
//!
//! ## Ending
//!
//! The session restores every register it touched on a normal end, when
//! the process unwinds from a panic (`Drop`), and on SIGINT/SIGTERM/SIGHUP:
//! under [`Signals::Defer`] the first signal is only recorded, pmx forwards
//! it to the command, waits for the command to end, reads the counters a
//! last time, prints what it has and restores; a second signal restores
//! at once and ends pmx by that signal.
//!
//! ## Energy
//!
//! `energy-pkg` (also `power/energy-pkg/` and `rapl/energy-pkg/`) is the
//! package energy counter (Intel `MSR_PKG_ENERGY_STATUS`, AMD
//! `PKG_ENERGY_STAT`) in joules, read once per package through
//! [`EnergyMeter`], with the 32-bit wrap handled. Its raw count is in the
//! package's energy units and its scale converts them to joules; the
//! report's notes add the average power per package.

use crate::exit::UsageError;
use crate::msr::{msr_event, pmu_counters};
use crate::stat::{build_report, draw, StatArgs};
use pmx::launch::{fork_held, Exit, Launched, StartError};
use pmx::schedule::Need;
use pmx::stat::{Aggregation, EventStatus, Instance, PlanGroup, Scope, StatPlan, StatRun};
use pmx_model::count::Count;
use pmx_model::spec::{Body, EventSpec};
use pmx_model::topology::{format_cpu_list, parse_cpu_list, Topology};
use pmx_msr::{
    CounterReading, EnergyMeter, Mode, MsrDevice, MsrError, MsrEvent, MsrRoot, Plan, Session,
    SessionOptions, Signals,
};
use pmx_output::stat::{IntervalRows, StatReport};
use pmx_sys::SysRoot;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The events counted when `-e` is not given: the hardware part of perf's
/// default set (the software events are the kernel's, not the PMU's).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,branches,branch-misses";

/// Read the counters at least this often, intervals or not, so a counter
/// cannot wrap twice between two reads.
const READ_EVERY: Duration = Duration::from_secs(1);

/// How long the command gets to end after pmx signals it, before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// What a perf event's descriptor links to in `/proc/PID/fd`.
const PERF_EVENT_LINK: &str = "anon_inode:[perf_event]";

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// How rows are written.
enum Format {
    Table,
    Csv(String),
    Json,
}

/// The flags, checked.
struct Options {
    duration: Option<Duration>,
    interval: Option<Duration>,
    how: Aggregation,
    format: Format,
    plot: Option<(PathBuf, pmx_output::plot::Format)>,
}

fn options(args: &StatArgs) -> anyhow::Result<Options> {
    if args.pid.is_some() || args.tid.is_some() {
        return Err(usage(
            "--backend msr counts CPUs, not tasks: it programs each CPU's counters and cannot follow a process from CPU to CPU; use -a or -C LIST (with the command after --), or --backend perf for -p/-t",
        ));
    }
    if args.per_thread {
        return Err(usage(
            "--per-thread needs per-thread counters, and --backend msr counts CPUs; use --backend perf",
        ));
    }
    if args.repeat != 1 {
        return Err(usage(
            "-r: --backend msr counts one run; repeat the command yourself or use --backend perf",
        ));
    }
    if !args.all_cpus && args.cpus.is_none() {
        return Err(usage(
            "--backend msr counts CPUs: give -a or -C LIST (a command after -- runs pinned to them)",
        ));
    }
    let duration = match args.duration {
        Some(d) if !(d > 0.0 && d.is_finite()) => {
            return Err(usage(format!(
                "--duration {d}: give a positive number of seconds"
            )))
        }
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    let interval = match args.interval {
        Some(0) => return Err(usage("-I 0: the interval must be at least 1 ms")),
        Some(ms) => {
            if ms < 10 {
                eprintln!("pmx stat: warning: -I {ms}: intervals under 10 ms cost noticeable CPU time and perturb what is measured");
            }
            Some(Duration::from_millis(ms))
        }
        None => None,
    };
    let how = args.aggregation();
    let format = if args.json {
        Format::Json
    } else if let Some(sep) = &args.separator {
        Format::Csv(sep.clone())
    } else {
        Format::Table
    };
    let plot = match &args.plot {
        Some(path) => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let f = pmx_output::plot::Format::from_extension(ext).ok_or_else(|| {
                usage(format!(
                    "--plot {}: give a .svg or .png file name",
                    path.display()
                ))
            })?;
            Some((path.clone(), f))
        }
        None => None,
    };
    Ok(Options {
        duration,
        interval,
        how,
        format,
        plot,
    })
}

// ---------------------------------------------------------------------------
// Events.

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

/// The events: for the renderers, for the plan, and how they relate.
struct Events {
    stat: StatPlan,
    sources: Vec<Source>,
    msr: Vec<MsrEvent>,
}

/// `energy-pkg`, `power/energy-pkg/` or `rapl/energy-pkg/`.
fn is_energy_pkg(spec: &EventSpec) -> bool {
    let named = matches!(&spec.body, Body::Named { parts, .. }
        if parts.len() == 1 && parts[0].eq_ignore_ascii_case("energy-pkg"));
    named && matches!(spec.pmu.as_deref(), None | Some("power") | Some("rapl"))
}

fn stat_event(name: &str, group: usize, unit: Option<&str>) -> pmx::stat::PlannedEvent {
    pmx::stat::PlannedEvent {
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

fn resolve(
    args: &StatArgs,
    groups: &[pmx::EventGroup],
    arch: pmx_model::encoding::Arch,
    loaded: Option<pmx_events::Database>,
) -> anyhow::Result<Events> {
    let needs_db = groups
        .iter()
        .flat_map(|g| &g.members)
        .any(|s| !is_energy_pkg(s));
    let db = match loaded {
        Some(db) => Some(db),
        None if needs_db => Some(args.db.load()?),
        None => None,
    };
    let mut stat = StatPlan {
        events: Vec::new(),
        groups: Vec::new(),
    };
    let mut sources = Vec::new();
    let mut msr = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let mut members = Vec::new();
        for spec in &g.members {
            members.push(stat.events.len());
            if is_energy_pkg(spec) {
                stat.events.push(stat_event(&spec.text, gi, Some("J")));
                sources.push(Source::Energy);
                // And the power it means: joules per second of each
                // interval (of the whole run for the totals).
                members.push(stat.events.len());
                let mut power = stat_event("power-pkg", gi, Some("W"));
                power.scale = 1e-6;
                stat.events.push(power);
                sources.push(Source::Power);
                continue;
            }
            let Some(db) = db.as_ref() else {
                return Err(anyhow::anyhow!("{}: no event database loaded", spec.text));
            };
            msr.push(msr_event(db, spec, arch)?);
            stat.events.push(stat_event(&spec.text, gi, None));
            sources.push(Source::Counter(msr.len() - 1));
        }
        stat.groups.push(PlanGroup {
            members,
            explicit: g.explicit,
        });
    }
    Ok(Events { stat, sources, msr })
}

// ---------------------------------------------------------------------------
// Devices, CPUs, and who else uses the counters.

fn msr_root(args: &StatArgs) -> MsrRoot {
    let root = match &args.msr_root {
        Some(dir) if dir != Path::new(MsrRoot::DEFAULT_DIR) => MsrRoot::new(dir),
        _ => MsrRoot::host(),
    };
    match &args.db.sysfs_root {
        Some(r) => root.with_sysfs(r.join("sys")),
        None => root,
    }
}

/// `-C LIST`, or for `-a` the online CPUs (the CPUs with a device when
/// sysfs says nothing).
fn select_cpus(args: &StatArgs, topo: &Topology, root: &MsrRoot) -> anyhow::Result<Vec<u32>> {
    crate::msr::msr_cpus(args.cpus.as_deref(), "-C", topo, root)
}

/// A device error in one sentence; without the driver, point at perf.
fn device_error(e: MsrError) -> anyhow::Error {
    match e {
        MsrError::DriverNotLoaded { path } => anyhow::anyhow!(
            "{}: not found — load the msr driver (modprobe msr) or use --backend perf",
            path.display()
        ),
        other => other.into(),
    }
}

fn open_device(root: &MsrRoot, cpus: &[u32]) -> anyhow::Result<MsrDevice> {
    MsrDevice::open(root, cpus, Mode::ReadWrite).map_err(device_error)
}

/// What outside pmx's registers says the counters are in use (see the
/// module documentation): the NMI watchdog and open perf events.
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

/// Refusal for what [`Session::start`] found in the registers.
fn busy_message(what: &[String]) -> String {
    format!(
        "the counters are in use ({}): something else is counting with them; {FORCE_HINT}",
        what.join("; ")
    )
}

/// Refusal for what [`users_outside`] found.
fn outside_message(what: &[String]) -> String {
    format!("the counters are in use: {}; {FORCE_HINT}", what.join("; "))
}

const FORCE_HINT: &str =
    "stop what uses them, or pass --force to take them over (pmx puts every register back when it ends)";

/// Start the session; with `--force`, take over counters the library says
/// are in use (and say so in `notes`).
fn start_session(
    device: MsrDevice,
    root: &MsrRoot,
    cpus: &[u32],
    plan: &Plan,
    force: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<Session> {
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
            let device = open_device(root, cpus)?;
            let options = SessionOptions {
                force: true,
                ..options
            };
            Session::start(device, plan.clone(), &options).map_err(device_error)
        }
        Err(MsrError::Busy(what)) => Err(anyhow::anyhow!("{}", busy_message(&what))),
        Err(e) => Err(device_error(e)),
    }
}

// ---------------------------------------------------------------------------
// The command.

/// The measured command: held before exec until the counters run, reaped
/// (signalled first if need be) whatever happens.
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

/// Writes interval rows as they are measured.
struct IntervalWriter<'a> {
    out: &'a mut dyn Write,
    plan: &'a StatPlan,
    status: &'a [EventStatus],
    how: Aggregation,
    topo: &'a Topology,
    format: &'a Format,
    /// Seconds added to the time stamps (the epoch with absolute ones).
    epoch0: f64,
    /// The rows as interval CSV, for `--plot`.
    plot: Option<String>,
    error: Option<std::io::Error>,
    /// `-M`: metrics computed for every interval.
    metrics: Option<&'a crate::stat_metrics::MetricSetup>,
}

impl IntervalWriter<'_> {
    fn write(&mut self, at: Duration, instances: Vec<Instance>, elapsed_ns: u64) {
        if self.error.is_some() {
            return;
        }
        let rows = pmx::stat::aggregate(self.plan, &instances, self.how, Some(self.topo));
        let metric_lines = match self.metrics {
            Some(m) => m.evaluate(
                self.plan,
                self.status,
                &rows,
                Duration::from_nanos(elapsed_ns),
            ),
            None => Vec::new(),
        };
        let iv = IntervalRows {
            time: self.epoch0 + at.as_secs_f64(),
            plan: self.plan,
            status: self.status,
            rows: &rows,
            metrics: &metric_lines,
        };
        let text = match self.format {
            Format::Json => pmx_output::stat::interval_json(&iv),
            Format::Csv(sep) => pmx_output::stat::interval_csv(&iv, sep),
            Format::Table => pmx_output::stat::interval_table(&iv),
        };
        if let Some(p) = self.plot.as_mut() {
            p.push_str(&pmx_output::stat::interval_csv(&iv, ","));
        }
        // One write per interval, flushed before the next starts.
        if let Err(e) = self
            .out
            .write_all(text.as_bytes())
            .and_then(|_| self.out.flush())
        {
            self.error = Some(e);
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Run `pmx stat --backend msr`.
pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let o = options(args)?;
    let (groups, metrics, db) = crate::stat_metrics::event_groups(args, DEFAULT_EVENTS)?;
    let target = args.db.target()?;
    let Some(arch) = target.arch() else {
        return Err(usage(format!(
            "{} is not an x86 CPU: the msr backend programs Intel and AMD PMUs",
            target.cpu
        )));
    };
    let mut events = resolve(args, &groups, arch, db)?;
    let sys = args
        .db
        .sysfs_root
        .as_ref()
        .map(SysRoot::new)
        .unwrap_or_default();
    let topo = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
    let root = msr_root(args);
    let cpus = select_cpus(args, &topo, &root)?;
    let pmu = pmu_counters(&target, arch);
    let plan = pmx_msr::plan(&events.msr, &cpus, &pmu, &topo).map_err(|e| usage(e.to_string()))?;
    let pin = match &args.pin {
        Some(p) => parse_cpu_list(p).map_err(|e| usage(format!("--pin {p}: {e}")))?,
        None => cpus.clone(),
    };

    // The output first: a bad -o path fails before any register changes.
    let mut out: Box<dyn Write> = match &args.output {
        Some(pattern) => {
            let path = crate::outpath::expand_path(pattern)?;
            Box::new(
                std::fs::File::create(&path)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            )
        }
        None => Box::new(std::io::stderr()),
    };

    // Every selected CPU: the plan's, and the packages' readers for energy.
    let device = open_device(&root, &cpus)?;
    let mut notes = Vec::new();
    let outside = users_outside(&sys);
    if !outside.is_empty() {
        if !args.force {
            anyhow::bail!("{}", outside_message(&outside));
        }
        notes.push(format!(
            "--force: {}; pmx programmed the counters anyway",
            outside.join("; ")
        ));
    }

    // Held before exec until the counters run. Declared before the
    // session, so on an early return the session restores first.
    let mut child = match args.command.is_empty() {
        true => None,
        false => Some(Child {
            launched: fork_held(&args.command, Some(pin.as_slice()))
                .map_err(|e| anyhow::anyhow!("cannot start '{}': {e}", args.command[0]))?,
            released: false,
            done: false,
            exit: None,
        }),
    };
    let session = start_session(device, &root, &cpus, &plan, args.force, &mut notes)?;
    let energy_events: Vec<usize> = (0..events.sources.len())
        .filter(|&i| events.sources[i] == Source::Energy)
        .collect();
    let power_events: Vec<usize> = (0..events.sources.len())
        .filter(|&i| events.sources[i] == Source::Power)
        .collect();
    let meter = if energy_events.is_empty() {
        None
    } else {
        Some(EnergyMeter::start(session.device(), arch, &cpus, &topo).map_err(device_error)?)
    };
    let mut nanojoules = false;
    if let Some(m) = &meter {
        let units: Vec<f64> = m.units().iter().map(|u| u.energy_joules).collect();
        nanojoules = units.windows(2).any(|w| w[0] != w[1]);
        let scale = if nanojoules {
            1e-9
        } else {
            units.first().copied().unwrap_or(1.0)
        };
        for &e in &energy_events {
            events.stat.events[e].scale = scale;
        }
    }
    let mut event_of = vec![0; events.msr.len()];
    for (i, s) in events.sources.iter().enumerate() {
        if let Source::Counter(k) = *s {
            event_of[k] = i;
        }
    }
    let slots = session.plan().slots.len();
    let packages = meter.as_ref().map_or(0, |m| m.domains().len());
    let mut counting = Counting {
        session,
        meter,
        event_of,
        energy_events,
        power_events,
        nanojoules,
        buf: Vec::with_capacity(slots),
        pending: vec![0; slots],
        total: vec![0; slots],
        e_pending: vec![0; packages],
        e_total: vec![0; packages],
    };
    let stat_plan = &events.stat;
    let status = vec![EventStatus::Counted; stat_plan.events.len()];

    if o.interval.is_some() && args.csv_header {
        if let Format::Csv(sep) = &o.format {
            out.write_all(pmx_output::stat::interval_csv_header(sep).as_bytes())?;
        }
    }
    let epoch0 = if args.timestamps == "absolute" {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    } else {
        0.0
    };
    let mut intervals = IntervalWriter {
        out: &mut *out,
        plan: stat_plan,
        status: &status,
        how: o.how,
        topo: &topo,
        format: &o.format,
        epoch0,
        plot: o.plot.as_ref().map(|_| String::new()),
        error: None,
        metrics: metrics.as_ref(),
    };

    // Counting runs from here.
    let start = Instant::now();
    if let Some(c) = child.as_mut() {
        if let Err(reason) = c.release() {
            counting.session.restore().map_err(device_error)?;
            eprintln!("pmx stat: cannot run '{}': {reason}", args.command[0]);
            return Ok(127);
        }
    }
    let wake_fd = child
        .as_ref()
        .and_then(|c| pmx::launch::pidfd_open(c.pid()));
    let deadline = o.duration.map(|d| start + d);
    let mut next_tick = o.interval.map(|i| start + i);
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
        if let (Some(t), Some(iv)) = (next_tick, o.interval) {
            if now >= t {
                if let Err(e) = counting.read() {
                    failure = Some(e);
                    break;
                }
                let read_at = Instant::now();
                let span = ns(read_at - interval_start);
                interval_start = read_at;
                ticks += 1;
                intervals.write(t - start, counting.take_interval(span), span);
                if args.interval_count.is_some_and(|n| ticks >= n) {
                    ended_by_us = true;
                    break;
                }
                next_tick = Some(pmx::stat::next_tick_after(t, iv, now));
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
        // Without a way to be woken by the command's end, look regularly.
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
    if failure.is_none() && o.interval.is_some() {
        // The partial last interval, unless the last tick just ended the
        // run.
        let count_reached = args.interval_count.is_some_and(|n| ticks >= n);
        if !count_reached {
            let span = ns(end - interval_start);
            intervals.write(elapsed, counting.take_interval(span), span);
        }
    }
    let plot_rows = intervals.plot.take();
    let write_err = intervals.error.take();
    let restored = counting.session.restore();
    if let Some(e) = failure {
        return Err(device_error(e).context("reading the counters"));
    }

    let exit = child.as_ref().and_then(|c| c.exit);
    let run = StatRun {
        instances: counting.totals(ns(elapsed)),
        status,
        elapsed,
        exit,
        interrupted,
    };
    let scope = Scope::Cpus(cpus.clone());
    let runs = [run];
    let mut report: StatReport = build_report(args, stat_plan, &runs, o.how, Some(&topo), &scope);
    if let Some(m) = &metrics {
        report.metrics = m.evaluate(stat_plan, &report.status, &report.rows, report.elapsed);
        report.notes.extend(m.notes.iter().cloned());
    }
    let saved = counting.session.saved().len();
    let on = format!(
        "CPU{} {}",
        if cpus.len() == 1 { "" } else { "s" },
        format_cpu_list(&cpus)
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
        let scale = counting
            .energy_events
            .first()
            .map_or(1.0, |&e| stat_plan.events[e].scale);
        for (d, &t) in m.domains().iter().zip(&counting.e_total) {
            let joules = t as f64 * scale;
            notes.push(format!(
                "energy: {} (cpu {}): {joules:.6} J, {:.3} W on average",
                d.id,
                d.cpu,
                if secs > 0.0 { joules / secs } else { 0.0 }
            ));
        }
    }
    report.notes.splice(0..0, notes);
    if let Some(e) = write_err {
        return Err(anyhow::anyhow!("writing the interval rows: {e}"));
    }
    let text = match &o.format {
        Format::Json => format!("{}\n", pmx_output::stat::json(&report)),
        Format::Csv(sep) => {
            let body = pmx_output::stat::csv(&report, sep, args.csv_header && o.interval.is_none());
            if o.interval.is_some() {
                // Totals after interval rows are comments, so every data
                // line has the interval columns.
                let mut t = format!("# totals over {:.6} s\n", report.elapsed.as_secs_f64());
                for l in body.lines() {
                    t.push_str("# ");
                    t.push_str(l);
                    t.push('\n');
                }
                t
            } else {
                body
            }
        }
        Format::Table => pmx_output::stat::table(&report),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if let Err(e) = restored {
        return Err(device_error(e).context("putting the PMU registers back"));
    }
    if let (Some((path, format)), Some(rows)) = (&o.plot, plot_rows) {
        draw(&rows, path, *format)?;
    }
    Ok(exit.map(|e| e.shell_code()).unwrap_or(0))
}
