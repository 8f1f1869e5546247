//! Counting: `pmx stat`'s engine.
//!
//! A [`StatPlan`] is the list of events, resolved to perf attrs (or to the
//! reason they cannot be counted), in groups. [`run`] opens every event on
//! every place it must count (the command's pid, each thread of `-p`/`-t`,
//! each CPU of `-a`/`-C`, or the CPUs an uncore PMU names), starts them
//! together, waits for the command, the duration or Ctrl-C, and reads them
//! into a [`StatRun`]: one [`Instance`] per opened counter, which
//! [`aggregate`] folds into rows per total, CPU, core, socket or thread.

use crate::eventlist::EventGroup;
use crate::launch::{self, Exit, StartError};
use crate::schedule::{self, CounterBudget, Need};
use crate::ticker::{self, Ticker};
use pmx_events::{Database, Resolved, SourceKind};
use pmx_model::count::Count;
use pmx_model::spec::{Body, EventSpec};
use pmx_model::topology::Topology;
use pmx_perf::{Attr, Counter, OpenCause};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// The result values, defined in `pmx-formats` (whose readers and writers
/// take them) and used here under their old paths.
pub use pmx_formats::{Domain, EventStatus, Row, Spread, ESTIMATE_BELOW};

/// perf's default events.
pub const DEFAULT_EVENTS: &str =
    "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

/// One event of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedEvent {
    /// The spec as typed.
    pub name: String,
    /// Group index in the plan.
    pub group: usize,
    /// The attr to open, or why the event cannot be counted here.
    #[serde(skip)]
    pub attr: Result<Attr, String>,
    /// Open only on these CPUs, system-wide (uncore and other PMUs with a
    /// cpumask).
    pub cpus: Option<Vec<u32>>,
    /// Unit of the value (`msec` for clocks, from sysfs `.unit`).
    pub unit: Option<String>,
    /// Multiply the raw value by this (clock ns → ms, sysfs `.scale`).
    pub scale: f64,
    /// Where the encoding came from.
    pub source: Option<SourceKind>,
    /// Which core counter it needs, for scheduling.
    #[serde(skip)]
    pub need: Need,
}

/// The events, resolved, in groups.
#[derive(Debug, Clone, Serialize)]
pub struct StatPlan {
    /// Every event, in the order given.
    pub events: Vec<PlannedEvent>,
    /// Groups: indices into `events`; `explicit` ones came from `{…}`.
    pub groups: Vec<PlanGroup>,
}

/// A group of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanGroup {
    /// Indices into `StatPlan::events`, leader first.
    pub members: Vec<usize>,
    /// Written as `{…}` by the user.
    pub explicit: bool,
}

/// Resolve the `-e` groups against the database. Nothing here fails: an
/// event that cannot be resolved or has no attr is planned as "not
/// supported" with the reason, so the run goes on.
pub fn plan(groups: &[EventGroup], db: &Database) -> Result<StatPlan, pmx_model::spec::SpecError> {
    let mut events = Vec::new();
    let mut out_groups = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let mut members = Vec::new();
        for spec in &g.members {
            let ev = plan_one(spec, db, gi)?;
            members.push(events.len());
            events.push(ev);
        }
        out_groups.push(PlanGroup {
            members,
            explicit: g.explicit,
        });
    }
    Ok(StatPlan {
        events,
        groups: out_groups,
    })
}

fn plan_one(
    spec: &EventSpec,
    db: &Database,
    group: usize,
) -> Result<PlannedEvent, pmx_model::spec::SpecError> {
    let mut ev = PlannedEvent {
        name: spec.text.clone(),
        group,
        attr: Err(String::new()),
        cpus: None,
        unit: None,
        scale: 1.0,
        source: None,
        need: Need::None,
    };
    if let Body::Breakpoint { addr, len, access } = &spec.body {
        let bp = match access.as_str() {
            "r" => pmx_perf::bp::R,
            "w" => pmx_perf::bp::W,
            "x" => pmx_perf::bp::X,
            _ => pmx_perf::bp::RW,
        };
        let len = len.unwrap_or(if bp == pmx_perf::bp::X { 8 } else { 4 });
        let mut a = Attr::breakpoint(*addr, len, bp);
        let m = &spec.modifiers;
        a.exclude_user = m.exclude_user();
        a.exclude_kernel = m.exclude_kernel();
        a.exclude_hv = m.exclude_hv();
        ev.attr = Ok(a);
        return Ok(ev);
    }
    let resolved = match db.resolve(spec) {
        Ok(r) => r,
        Err(e) => {
            // A two-part name may be a tracepoint (sched:sched_switch).
            if let Body::Named { parts, .. } = &spec.body {
                if parts.len() == 2 {
                    if let Some(id) = tracepoint_id(&parts[0], &parts[1]) {
                        let mut a = Attr {
                            type_: 2,
                            config: id,
                            ..Attr::default()
                        };
                        let m = &spec.modifiers;
                        a.exclude_user = m.exclude_user();
                        a.exclude_kernel = m.exclude_kernel();
                        ev.attr = Ok(a);
                        return Ok(ev);
                    }
                }
            }
            return Err(e);
        }
    };
    ev.source = Some(resolved.source);
    apply_resolved(&mut ev, &resolved, db);
    ev.need = need_of(&resolved, db);
    Ok(ev)
}

/// Which core counter an event needs.
fn need_of(r: &Resolved, db: &Database) -> Need {
    use pmx_events::{perf_type, Counters};
    let intel = db.target.cpu.vendor == pmx_model::cpu::Vendor::Intel;
    match r.attr.type_ {
        Some(perf_type::HARDWARE) => {
            let all_gp: Vec<u8> = (0..8).collect();
            Need::Counter(match (intel, r.attr.config) {
                (true, 0) => Counters::Fixed {
                    index: 1,
                    gp: all_gp,
                },
                (true, 1) => Counters::Fixed {
                    index: 0,
                    gp: all_gp,
                },
                (true, 9) => Counters::Fixed {
                    index: 2,
                    gp: vec![],
                },
                _ => Counters::AnyGp,
            })
        }
        Some(perf_type::HW_CACHE) => Need::Counter(Counters::AnyGp),
        _ if r.register.is_some() => Need::Counter(
            r.def
                .as_ref()
                .map(|d| d.counters.clone())
                .unwrap_or(Counters::AnyGp),
        ),
        _ => Need::None,
    }
}

impl StatPlan {
    /// The groups and each event's counter need, as [`schedule`] takes them.
    fn schedule_input(&self) -> (Vec<(Vec<usize>, bool)>, Vec<Need>) {
        let groups = self
            .groups
            .iter()
            .map(|g| (g.members.clone(), g.explicit))
            .collect();
        let needs = self.events.iter().map(|e| e.need.clone()).collect();
        (groups, needs)
    }

    /// Pack the groups onto `budget` (see [`schedule::pack`]); returns the
    /// notes to show.
    pub fn pack(&mut self, budget: &CounterBudget) -> Vec<String> {
        let (groups, needs) = self.schedule_input();
        let names: Vec<String> = self.events.iter().map(|e| e.name.clone()).collect();
        let p = schedule::pack(&groups, &needs, &names, budget);
        self.groups = p
            .groups
            .into_iter()
            .map(|(members, explicit)| PlanGroup { members, explicit })
            .collect();
        for (gi, g) in self.groups.iter().enumerate() {
            for &m in &g.members {
                self.events[m].group = gi;
            }
        }
        p.notes
    }

    /// Put every ungrouped software event (task-clock, page-faults, …)
    /// into one group. Software events never wait for a counter, so this
    /// changes no count; it lets one read fetch them all, which matters
    /// for `-I` on many CPUs (a read of another CPU's counter costs an
    /// inter-processor call). Returns whether anything was merged.
    pub fn group_software(&mut self) -> bool {
        let is_sw = |e: &PlannedEvent| {
            e.need == Need::None
                && e.cpus.is_none()
                && e.attr
                    .as_ref()
                    .is_ok_and(|a| a.type_ == pmx_events::perf_type::SOFTWARE)
        };
        let singles: Vec<usize> = self
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                !g.explicit && g.members.len() == 1 && is_sw(&self.events[g.members[0]])
            })
            .map(|(i, _)| i)
            .collect();
        if singles.len() < 2 {
            return false;
        }
        let members: Vec<usize> = singles
            .iter()
            .map(|&gi| self.groups[gi].members[0])
            .collect();
        let first = singles[0];
        self.groups[first].members = members;
        let mut k = 0;
        self.groups.retain(|_| {
            let keep = k == first || !singles.contains(&k);
            k += 1;
            keep
        });
        for (gi, g) in self.groups.iter().enumerate() {
            for &m in &g.members {
                self.events[m].group = gi;
            }
        }
        true
    }

    /// The plan split into sets that each fit on the PMU at once.
    pub fn run_sets(&self, budget: &CounterBudget) -> Vec<StatPlan> {
        let (groups, needs) = self.schedule_input();
        schedule::run_sets(&groups, &needs, budget)
            .into_iter()
            .map(|set| StatPlan {
                events: self.events.clone(),
                groups: set.into_iter().map(|gi| self.groups[gi].clone()).collect(),
            })
            .collect()
    }
}

/// Merge the runs of `--no-multiplex` sets (each counted a different part
/// of the plan) into one.
pub fn merge_runs(plans: &[StatPlan], runs: Vec<StatRun>) -> StatRun {
    let mut it = runs.into_iter().zip(plans);
    let (mut merged, first_plan) = it.next().expect("at least one run");
    let in_plan = |p: &StatPlan, e: usize| p.groups.iter().any(|g| g.members.contains(&e));
    for (i, st) in merged.status.iter_mut().enumerate() {
        if !in_plan(first_plan, i) && *st == EventStatus::Counted {
            *st = EventStatus::NotCounted("not in any run set".to_string());
        }
    }
    for (r, p) in it {
        for (i, st) in r.status.into_iter().enumerate() {
            if in_plan(p, i) {
                merged.status[i] = st;
            }
        }
        merged.instances.extend(r.instances);
        merged.elapsed += r.elapsed;
        merged.exit = r.exit.or(merged.exit);
        merged.interrupted |= r.interrupted;
    }
    merged
}

fn apply_resolved(ev: &mut PlannedEvent, r: &Resolved, db: &Database) {
    let a = &r.attr;
    if a.type_ == Some(pmx_events::perf_type::SOFTWARE) && (a.config == 0 || a.config == 1) {
        ev.unit = Some("msec".to_string());
        ev.scale = 1e-6;
    }
    let mut attr = a.clone();
    if let Some(sys) = db.sysfs() {
        if let Some(pmu) = sys.pmu(&a.pmu) {
            if attr.type_.is_none() {
                attr.type_ = pmu.type_id;
            }
            if let Some(mask) = &pmu.cpumask {
                if !pmu.is_core() {
                    ev.cpus = Some(mask.clone());
                }
            }
        }
    }
    if let Some(def) = &r.def {
        for n in &def.notes {
            if let Some(u) = n.strip_prefix("unit ") {
                ev.unit = Some(u.to_string());
            }
            if let Some(s) = n.strip_prefix("scale ") {
                if let Ok(v) = s.parse::<f64>() {
                    ev.scale = v;
                }
            }
        }
    }
    ev.attr = match Attr::from_perf_attr(&attr) {
        Some(x) => Ok(x),
        None => Err(format!(
            "PMU '{}' is not on this machine (its type comes from /sys/bus/event_source/devices/{}/type)",
            attr.pmu, attr.pmu
        )),
    };
}

/// The tracepoint id from tracefs, if the tracepoint exists.
pub fn tracepoint_id(system: &str, name: &str) -> Option<u64> {
    if system.contains('/') || name.contains('/') || system.contains("..") || name.contains("..") {
        return None;
    }
    for base in [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ] {
        let p = Path::new(base).join(system).join(name).join("id");
        if let Ok(s) = std::fs::read_to_string(&p) {
            if let Ok(id) = s.trim().parse() {
                return Some(id);
            }
        }
    }
    None
}

/// What to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The launched command (and its children when `inherit`).
    Command,
    /// These processes: every thread of each.
    Pids(Vec<i32>),
    /// These threads.
    Tids(Vec<i32>),
    /// Every task on these CPUs.
    Cpus(Vec<u32>),
}

/// Options of one counting run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// What to count.
    pub scope: Scope,
    /// Command to run (required for `Scope::Command`; optional otherwise).
    pub command: Vec<String>,
    /// Children inherit the counters.
    pub inherit: bool,
    /// Pin the command to these CPUs.
    pub pin: Option<Vec<u32>>,
    /// Stop after this long (without a command, or to cut it short).
    pub duration: Option<Duration>,
    /// Read every this often (`-I`).
    pub interval: Option<Duration>,
    /// Stop after this many intervals.
    pub interval_count: Option<u64>,
    /// Count each thread and process of the command on its own
    /// (`--per-thread` with a command): pmx follows the command with
    /// ptrace, and opens counters on every new task before it first runs.
    pub trace_tasks: bool,
}

/// One opened counter and its reading.
#[derive(Debug, Clone, Serialize)]
pub struct Instance {
    /// Index into the plan's events.
    pub event: usize,
    /// CPU it was bound to, or -1.
    pub cpu: i32,
    /// Thread it was bound to, or -1.
    pub tid: i32,
    /// The reading.
    pub count: Count,
}

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
pub struct StatRun {
    /// Every opened counter's reading.
    pub instances: Vec<Instance>,
    /// Per planned event: counted or why not.
    pub status: Vec<EventStatus>,
    /// Wall-clock time from start to stop.
    pub elapsed: Duration,
    /// How the command ended, when there was one.
    pub exit: Option<Exit>,
    /// The run was cut short by Ctrl-C / SIGTERM.
    pub interrupted: bool,
}

/// Errors that stop a run before counting.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The command could not be started; exit 127.
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// No event could be opened at all, for a reason the user must fix.
    #[error("{0}")]
    Open(String),
    /// Some other I/O failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

pub use crate::signals::{install as install_signal_handlers, stop_requested};

/// Where each group is opened: (pid, cpu) slots.
fn slots(opts: &RunOptions, child: Option<i32>) -> Vec<(i32, i32)> {
    match &opts.scope {
        Scope::Command => vec![(child.unwrap_or(0), -1)],
        Scope::Pids(pids) => {
            let mut v = Vec::new();
            for &p in pids {
                let tids = threads_of(p);
                if tids.is_empty() {
                    v.push((p, -1));
                }
                v.extend(tids.into_iter().map(|t| (t, -1)));
            }
            v
        }
        Scope::Tids(t) => t.iter().map(|&t| (t, -1)).collect(),
        Scope::Cpus(c) => c.iter().map(|&c| (-1, c as i32)).collect(),
    }
}

/// The threads of a process, from `/proc/PID/task`.
pub fn threads_of(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

struct Opened {
    counter: Counter,
    event: usize,
    cpu: i32,
    tid: i32,
}

/// How long after an interval boundary pmx reads when tickers are in use:
/// their samples are taken on the boundary by the kernel's timer, and
/// waking slightly later finds them in the rings instead of racing them.
/// On a busy CPU here those samples come within 13 µs of the grid (p99
/// 11 µs, `perf record -e cpu-clock -c 10000000`); 200 µs leaves room for
/// a VM's timer and keeps short the delay of a group that must be read
/// directly (its readings are taken this much after the boundary).
fn tick_lag(iv: Duration) -> Duration {
    (iv / 8).min(Duration::from_micros(200))
}

/// Whether system-wide interval reads may use tickers (`PMX_NO_TICKER`
/// set to anything turns them off, to compare).
fn tickers_allowed() -> bool {
    std::env::var_os("PMX_NO_TICKER").is_none()
}

/// The first interval boundary after `now`, on the grid `t + k·iv`: a
/// late wake-up skips the boundaries it missed instead of drifting.
pub fn next_tick_after(t: Instant, iv: Duration, now: Instant) -> Instant {
    let mut nt = t + iv;
    while nt <= now {
        nt += iv;
    }
    nt
}

/// One interval's readings (`-I`).
#[derive(Debug, Clone)]
pub struct Tick<'a> {
    /// 1-based interval number.
    pub index: u64,
    /// End of the interval, since the start.
    pub at: Duration,
    /// The final, partial interval at the end of the run.
    pub last: bool,
    /// Per counter: the change over the interval.
    pub instances: &'a [Instance],
    /// Per planned event: opened or why not.
    pub status: &'a [EventStatus],
}

/// Count `plan` once.
pub fn run(plan: &StatPlan, opts: &RunOptions) -> Result<StatRun, RunError> {
    run_with(plan, opts, &mut |_| {})
}

/// Sleep until `fd` is readable or `timeout` passes (`None`: no timeout);
/// a signal ends the sleep early. Microsecond resolution, so interval
/// boundaries are met to the timer's precision.
fn poll_fd(fd: Option<&std::os::fd::OwnedFd>, timeout: Option<Duration>) {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.map_or(-1, |f| f.as_raw_fd()),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one pollfd (a negative fd is ignored), a timespec we own or
    // null, no signal mask.
    unsafe { libc::ppoll(&mut p, 1, tp, std::ptr::null()) };
}

/// Count `plan` once, calling `on_tick` after every interval (`-I`) with
/// the deltas, and once more for the partial last interval.
pub fn run_with(
    plan: &StatPlan,
    opts: &RunOptions,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<StatRun, RunError> {
    crate::signals::reset();
    let mut child = if opts.command.is_empty() {
        None
    } else {
        Some(launch::fork_held(&opts.command, opts.pin.as_deref())?)
    };
    let by_exec = opts.scope == Scope::Command;
    let child_pid = child.as_ref().map(|c| c.pid);
    let trace = opts.trace_tasks && by_exec && child_pid.is_some();
    if let (true, Some(pid)) = (trace, child_pid) {
        let options =
            libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_TRACEFORK | libc::PTRACE_O_TRACEVFORK;
        // SAFETY: seizing our own held child; no memory is passed.
        let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0usize, options as usize) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if let Some(c) = child.as_mut() {
                c.abandon();
            }
            return Err(RunError::Open(format!(
                "--per-thread: cannot follow the command's threads with ptrace: {e} (is another tracer attached, or ptrace restricted by kernel.yama.ptrace_scope?)"
            )));
        }
    }
    let slots = slots(opts, child_pid);
    let mut status: Vec<EventStatus> = plan
        .events
        .iter()
        .map(|e| match &e.attr {
            Ok(_) => EventStatus::Counted,
            Err(r) => EventStatus::NotSupported(r.clone()),
        })
        .collect();
    let mut opened: Vec<Opened> = Vec::new();
    let mut leaders: Vec<usize> = Vec::new();
    // Hidden sampling leaders and the opened counters in their groups.
    let mut tickers: Vec<(Ticker, Vec<usize>)> = Vec::new();
    let mut hard_error: Option<String> = None;
    for g in &plan.groups {
        let members: Vec<usize> = g
            .members
            .iter()
            .copied()
            .filter(|&i| plan.events[i].attr.is_ok())
            .collect();
        if members.is_empty() {
            continue;
        }
        // Events with their own CPU list (uncore) are opened system-wide on
        // those CPUs; the group shares the first member's placement.
        let own_cpus = plan.events[members[0]].cpus.clone();
        let group_slots: Vec<(i32, i32)> = match &own_cpus {
            Some(c) => c.iter().map(|&c| (-1, c as i32)).collect(),
            None => slots.clone(),
        };
        // System-wide groups of software events read at intervals get a
        // hidden sampling leader on each CPU (see `crate::ticker`).
        let tickable = opts.interval.is_some()
            && own_cpus.is_none()
            && tickers_allowed()
            && members.iter().all(|&i| {
                plan.events[i]
                    .attr
                    .as_ref()
                    .is_ok_and(|a| ticker::joins_ticker(a.type_))
            });
        for &(pid, cpu) in &group_slots {
            let mut leader_idx: Option<usize> = None;
            let mut ticker = match (tickable && pid == -1 && cpu >= 0, opts.interval) {
                (true, Some(iv)) => Ticker::open(cpu, iv),
                _ => None,
            };
            let first_member = opened.len();
            for &ei in &members {
                if status[ei] != EventStatus::Counted {
                    continue;
                }
                let mut attr = plan.events[ei].attr.clone().expect("filtered");
                let is_leader = leader_idx.is_none() && ticker.is_none();
                // Children inherit task counters (not a single thread's;
                // traced tasks get their own).
                attr.inherit =
                    opts.inherit && !trace && pid != -1 && !matches!(opts.scope, Scope::Tids(_));
                if is_leader {
                    attr.disabled = true;
                    attr.enable_on_exec = by_exec && own_cpus.is_none();
                    // A real group is read in one go through its leader.
                    if members.len() > 1 {
                        attr.read_format |= pmx_perf::read_format::GROUP;
                    }
                }
                if ticker.is_some() {
                    attr.clockid = Some(ticker::CLOCK);
                }
                let group = match &ticker {
                    Some(t) => Some(&t.counter),
                    None => leader_idx.map(|l| &opened[l].counter),
                };
                match Counter::open(&attr, pmx_perf::Target { pid, cpu }, group) {
                    Ok(c) => {
                        if is_leader {
                            leader_idx = Some(opened.len());
                            leaders.push(opened.len());
                        }
                        opened.push(Opened {
                            counter: c,
                            event: ei,
                            cpu,
                            tid: pid,
                        });
                    }
                    Err(e) => {
                        // Rows name the event; their reason is the cause,
                        // shared by every event failing for it.
                        let reason = e.reason();
                        let fatal = format!("{}: {e}", plan.events[ei].name);
                        match e.cause {
                            ref c if c.is_unsupported_event() => {
                                status[ei] = EventStatus::NotSupported(reason);
                            }
                            OpenCause::NoProcess => {
                                if matches!(opts.scope, Scope::Pids(_)) {
                                    // A thread exited between listing and opening.
                                    continue;
                                }
                                hard_error.get_or_insert(fatal);
                                status[ei] = EventStatus::NotCounted(reason);
                            }
                            _ => {
                                hard_error.get_or_insert(fatal);
                                status[ei] = EventStatus::NotCounted(reason);
                            }
                        }
                    }
                }
            }
            if let Some(t) = ticker.take() {
                if opened.len() > first_member {
                    tickers.push((t, (first_member..opened.len()).collect()));
                }
            }
        }
    }
    if opened.is_empty() {
        if let Some(h) = hard_error {
            if let Some(c) = child.as_mut() {
                c.abandon();
            }
            return Err(RunError::Open(h));
        }
    }
    let start = Instant::now();
    let start_ns = ticker::monotonic_ns();
    // Start: the command's counters start at exec; others now.
    for (t, _) in &tickers {
        t.counter.enable(true)?;
    }
    for &l in &leaders {
        let o = &opened[l];
        if !(by_exec && plan.events[o.event].cpus.is_none()) {
            o.counter.enable(true)?;
        }
    }
    let mut exit = None;
    if let Some(c) = child.as_mut() {
        crate::signals::set_child(c.pid);
        if let Err(e) = c.release() {
            let reason = match e {
                StartError::Exec(errno) => {
                    let err = std::io::Error::from_raw_os_error(errno);
                    match errno {
                        libc::ENOENT => "command not found".to_string(),
                        libc::EACCES => "permission denied (not executable?)".to_string(),
                        _ => err.to_string(),
                    }
                }
                StartError::Pin(errno) => format!(
                    "--pin: cannot pin to those CPUs: {}",
                    std::io::Error::from_raw_os_error(errno)
                ),
            };
            let _ = c.wait();
            crate::signals::set_child(0);
            return Err(RunError::Exec {
                cmd: opts.command[0].clone(),
                reason,
            });
        }
    }
    if trace {
        let main = child_pid.unwrap_or(0);
        exit = follow_tasks(main, plan, &mut opened, &mut leaders);
    }
    // Wait for the end, reading every interval when asked.
    // Which opened counter a group read's id belongs to, built once so a
    // read stays linear in the number of counters.
    let by_id: std::collections::HashMap<u64, usize> = opened
        .iter()
        .enumerate()
        .map(|(k, o)| (o.counter.id(), k))
        .collect();
    // A group read's words, reused.
    let mut scratch: Vec<u64> = vec![0; 64 + 2 * opened.len()];
    // Read every counter not already in `counts` into `out`: groups
    // through their leader (one read, one time window), ticker groups
    // through the hidden leader, single events on their own. Allocates
    // nothing once the buffers have grown.
    let read_rest = |opened: &[Opened],
                     tickers: &mut [(Ticker, Vec<usize>)],
                     counts: &mut [Option<Count>],
                     scratch: &mut Vec<u64>,
                     out: &mut Vec<Count>|
     -> std::io::Result<()> {
        for (t, members) in tickers.iter_mut() {
            if members.iter().all(|&k| counts[k].is_some()) {
                continue;
            }
            t.counter.read_group_with(scratch, |id, c| {
                if let Some(&k) = by_id.get(&id) {
                    counts[k] = Some(c);
                }
            })?;
            t.read_directly_at(ticker::monotonic_ns());
        }
        for &l in &leaders {
            let o = &opened[l];
            if o.counter.read_format() & pmx_perf::read_format::GROUP == 0 {
                continue;
            }
            o.counter.read_group_with(scratch, |id, c| {
                if let Some(&k) = by_id.get(&id) {
                    counts[k] = Some(c);
                }
            })?;
        }
        out.clear();
        for (k, o) in opened.iter().enumerate() {
            out.push(match counts[k] {
                Some(c) => c,
                None => o.counter.read()?,
            });
        }
        Ok(())
    };
    // At an interval boundary (`Some`): ticker groups from their samples
    // where they are there, the rest read. At the end (`None`): all read.
    let mut counts_buf: Vec<Option<Count>> = Vec::with_capacity(opened.len());
    let mut read_at = |opened: &[Opened],
                       tickers: &mut [(Ticker, Vec<usize>)],
                       at: Option<Instant>,
                       out: &mut Vec<Count>|
     -> std::io::Result<()> {
        counts_buf.clear();
        counts_buf.resize(opened.len(), None);
        if let Some(at) = at {
            let at_ns = start_ns + u64::try_from((at - start).as_nanos()).unwrap_or(u64::MAX);
            for (t, _) in tickers.iter_mut() {
                if let Some(sample) = t.take(at_ns) {
                    for (id, c) in sample {
                        if let Some(&k) = by_id.get(id) {
                            counts_buf[k] = Some(*c);
                        }
                    }
                }
            }
        }
        read_rest(opened, tickers, &mut counts_buf, &mut scratch, out)
    };
    // Counts (or deltas) as instances, into `out`.
    let fill_instances = |out: &mut Vec<Instance>, counts: &mut dyn Iterator<Item = Count>| {
        out.clear();
        out.extend(opened.iter().zip(counts).map(|(o, count)| Instance {
            event: o.event,
            cpu: o.cpu,
            tid: o.tid,
            count,
        }));
    };
    let mut interrupted = false;
    let pidfd = child.as_ref().and_then(|c| launch::pidfd_open(c.pid));
    let deadline = opts.duration.map(|d| start + d);
    let mut next_tick = opts.interval.map(|i| start + i);
    let mut prev: Vec<Count> = vec![Count::default(); opened.len()];
    // This interval's readings and deltas, reused.
    let mut cur: Vec<Count> = Vec::with_capacity(opened.len());
    let mut tick_instances: Vec<Instance> = Vec::with_capacity(opened.len());
    let mut ticks = 0u64;
    // Move the loop next to the group it would otherwise interrupt most.
    let mut home = (!tickers.is_empty()).then(|| ticker::Home::new(tickers.len()));
    let mut last_tick_at = Duration::ZERO;
    let watched: Vec<i32> = match &opts.scope {
        Scope::Pids(p) | Scope::Tids(p) => p.clone(),
        _ => Vec::new(),
    };
    let mut ended_by_us = false;
    loop {
        if trace {
            // The traced command has already been followed to its end.
            break;
        }
        if let Some(c) = child.as_ref() {
            let mut st = 0;
            // SAFETY: non-blocking wait for our own child.
            let r = unsafe { libc::waitpid(c.pid, &mut st, libc::WNOHANG) };
            if r == c.pid {
                exit = Some(Exit::from_wait_status(st));
                break;
            }
            if r < 0 {
                break;
            }
        }
        if stop_requested() {
            interrupted = true;
            // The command got the signal too: wait for it to end.
            if child.is_none() {
                break;
            }
        }
        if child.is_none() && !watched.is_empty() && watched.iter().all(|&p| !task_alive(p)) {
            break;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            interrupted |= child.is_some();
            ended_by_us = true;
            break;
        }
        if let (Some(t), Some(iv)) = (next_tick, opts.interval) {
            if now >= t + tick_lag(iv) || (now >= t && tickers.is_empty()) {
                read_at(&opened, &mut tickers, Some(t), &mut cur)?;
                fill_instances(
                    &mut tick_instances,
                    &mut cur.iter().zip(&prev).map(|(c, p)| c.delta_since(p)),
                );
                std::mem::swap(&mut prev, &mut cur);
                ticks += 1;
                if let Some(h) = home.as_mut() {
                    h.after_tick(tickers.iter().map(|(t, _)| t));
                }
                last_tick_at = t - start;
                on_tick(&Tick {
                    index: ticks,
                    at: t - start,
                    last: false,
                    instances: &tick_instances,
                    status: &status,
                });
                if opts.interval_count.is_some_and(|n| ticks >= n) {
                    ended_by_us = true;
                    break;
                }
                next_tick = Some(next_tick_after(t, iv, now));
                continue;
            }
        }
        let mut wake: Option<Instant> = None;
        // With tickers, wake a little after the boundary so the samples
        // taken on it are in the rings.
        let tick_wake = match (next_tick, opts.interval) {
            (Some(t), Some(iv)) if !tickers.is_empty() => Some(t + tick_lag(iv)),
            _ => next_tick,
        };
        for t in [tick_wake, deadline].into_iter().flatten() {
            wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
        }
        let mut timeout = wake.map(|w| w.saturating_duration_since(now));
        if child.is_none() || pidfd.is_none() || stop_requested() {
            // Nothing to wake us but time: re-check the tasks regularly.
            let cap = Duration::from_millis(if child.is_some() { 5 } else { 20 });
            timeout = Some(timeout.map_or(cap, |t| t.min(cap)));
        }
        poll_fd(pidfd.as_ref(), timeout);
    }
    if ended_by_us {
        if let Some(c) = child.as_ref() {
            // SAFETY: signalling our own child; then reap it.
            unsafe { libc::kill(c.pid, libc::SIGINT) };
            exit = c.wait().ok();
        }
    }
    crate::signals::set_child(0);
    let mut elapsed = start.elapsed();
    for (t, _) in &tickers {
        let _ = t.counter.disable(true);
    }
    for &l in &leaders {
        let _ = opened[l].counter.disable(true);
    }
    read_at(&opened, &mut tickers, None, &mut cur)?;
    let mut finals = cur;
    // `--interval-count N` measures exactly N intervals: the totals are the
    // last one's readings, not what trickled in until the counters stopped.
    let count_reached = opts.interval.is_some() && opts.interval_count.is_some_and(|n| ticks >= n);
    if count_reached {
        finals = prev.clone();
        elapsed = last_tick_at;
    }
    if opts.interval.is_some() {
        fill_instances(
            &mut tick_instances,
            &mut finals.iter().zip(&prev).map(|(c, p)| c.delta_since(p)),
        );
        // The partial last interval, unless the last tick just happened.
        if !count_reached && (tick_instances.iter().any(|d| d.count.enabled > 0) || ticks == 0) {
            on_tick(&Tick {
                index: ticks + 1,
                at: elapsed,
                last: true,
                instances: &tick_instances,
                status: &status,
            });
        }
    }
    let mut instances = Vec::new();
    fill_instances(&mut instances, &mut finals.iter().copied());
    let planned: Vec<bool> = (0..plan.events.len())
        .map(|e| plan.groups.iter().any(|g| g.members.contains(&e)))
        .collect();
    for (i, st) in status.iter_mut().enumerate() {
        if *st != EventStatus::Counted || !planned[i] {
            continue;
        }
        let mine: Vec<&Instance> = instances.iter().filter(|x| x.event == i).collect();
        if mine.is_empty() {
            *st = EventStatus::NotCounted("no counter could be opened for it".to_string());
        } else if mine.iter().all(|x| x.count.running == 0) {
            *st = EventStatus::NotCounted(if mine.iter().all(|x| x.count.enabled == 0) {
                "never enabled: the measured task did not run".to_string()
            } else {
                "never scheduled onto a counter (all counters busy, or its group did not fit)"
                    .to_string()
            });
        }
    }
    Ok(StatRun {
        instances,
        status,
        elapsed,
        exit,
        interrupted,
    })
}

/// Follow a traced command until its main task ends: every new thread or
/// process stops before it first runs, gets its own counters (enabled at
/// once: they count from its first instruction), and is let go; signals
/// are passed on. Returns how the main task ended.
fn follow_tasks(
    main: i32,
    plan: &StatPlan,
    opened: &mut Vec<Opened>,
    leaders: &mut Vec<usize>,
) -> Option<Exit> {
    let mut known: std::collections::BTreeSet<i32> = [main].into_iter().collect();
    let mut add = |tid: i32, opened: &mut Vec<Opened>, leaders: &mut Vec<usize>| {
        if !known.insert(tid) {
            return;
        }
        for g in &plan.groups {
            let members: Vec<usize> = g
                .members
                .iter()
                .copied()
                .filter(|&i| plan.events[i].attr.is_ok() && plan.events[i].cpus.is_none())
                .collect();
            let mut leader: Option<usize> = None;
            for &ei in &members {
                let mut attr = plan.events[ei].attr.clone().expect("filtered");
                attr.inherit = false;
                if leader.is_none() && members.len() > 1 {
                    attr.read_format |= pmx_perf::read_format::GROUP;
                }
                let group = leader.map(|l| &opened[l].counter);
                if let Ok(c) = Counter::open(&attr, pmx_perf::Target { pid: tid, cpu: -1 }, group) {
                    if leader.is_none() {
                        leader = Some(opened.len());
                        leaders.push(opened.len());
                    }
                    opened.push(Opened {
                        counter: c,
                        event: ei,
                        cpu: -1,
                        tid,
                    });
                }
            }
        }
    };
    let cont = |tid: i32, sig: i32| {
        // SAFETY: resuming a tracee of ours; no memory is passed.
        unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, sig as usize) };
    };
    loop {
        let mut st = 0;
        // SAFETY: waiting for our children and tracees.
        let w = unsafe { libc::waitpid(-1, &mut st, libc::__WALL) };
        if w < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            if w == main {
                return Some(Exit::from_wait_status(st));
            }
            continue;
        }
        if !libc::WIFSTOPPED(st) {
            continue;
        }
        let sig = libc::WSTOPSIG(st);
        let event = (st >> 16) & 0xff;
        match event {
            libc::PTRACE_EVENT_CLONE | libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                let mut msg: libc::c_ulong = 0;
                // SAFETY: GETEVENTMSG writes one c_ulong into msg.
                unsafe {
                    libc::ptrace(
                        libc::PTRACE_GETEVENTMSG,
                        w,
                        0usize,
                        &mut msg as *mut libc::c_ulong,
                    )
                };
                add(msg as i32, opened, leaders);
                cont(w, 0);
            }
            libc::PTRACE_EVENT_STOP => {
                // A new task's first stop (possibly before its parent's
                // event), or a group stop: count it, let it run.
                add(w, opened, leaders);
                cont(w, 0);
            }
            _ => {
                add(w, opened, leaders);
                cont(w, sig);
            }
        }
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`; every CPU the
/// process may use when that cannot be read).
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| pmx_model::topology::parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

/// Is the task running (present and not a zombie)?
pub fn task_alive(tid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/stat")) {
        Ok(s) => {
            // The state follows the ')' that ends the command name.
            let state = s
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
        Err(_) => false,
    }
}

/// How to fold instances into rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// One row per event.
    Total,
    /// Per CPU (`-A`).
    PerCpu,
    /// Per physical core.
    PerCore,
    /// Per package.
    PerSocket,
    /// Per thread (`-p`/`-t`).
    PerThread,
}

/// Fold a run's instances into rows, events in plan order.
pub fn aggregate(
    plan: &StatPlan,
    instances: &[Instance],
    how: Aggregation,
    topo: Option<&Topology>,
) -> Vec<Row> {
    Aggregator::new(how).rows(plan, instances, topo).to_vec()
}

/// [`aggregate`] for a stream of readings of the same counters, such as
/// one per interval: which row each instance adds to is worked out once,
/// and the rows are refilled in place, allocating nothing, for as long as
/// the instances keep their layout (event, CPU and thread of each).
#[derive(Debug, Clone)]
pub struct Aggregator {
    how: Aggregation,
    /// The number of planned events the rows were built for (`None`:
    /// not built yet).
    events: Option<usize>,
    /// (event, cpu, tid) of each instance the layout was built for.
    layout: Vec<(usize, i32, i32)>,
    /// Per instance: its row.
    slot: Vec<usize>,
    rows: Vec<Row>,
}

impl Aggregator {
    /// An aggregator folding by `how`.
    pub fn new(how: Aggregation) -> Aggregator {
        Aggregator {
            how,
            events: None,
            layout: Vec::new(),
            slot: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The rows of `instances`: events in plan order, each event's domains
    /// in order, one `Total` row without a value for an event with no
    /// instance.
    pub fn rows(
        &mut self,
        plan: &StatPlan,
        instances: &[Instance],
        topo: Option<&Topology>,
    ) -> &[Row] {
        let same = self.events == Some(plan.events.len())
            && self.layout.len() == instances.len()
            && self
                .layout
                .iter()
                .zip(instances)
                .all(|(&(e, c, t), i)| e == i.event && c == i.cpu && t == i.tid);
        if !same {
            self.build(plan, instances, topo);
        }
        for r in &mut self.rows {
            r.count = Count::default();
            r.value = None;
            r.running_share = None;
            r.instances = 0;
        }
        for (inst, &k) in instances.iter().zip(&self.slot) {
            // An instance of no planned event has no row.
            let Some(r) = self.rows.get_mut(k) else {
                continue;
            };
            r.count.value = r.count.value.wrapping_add(inst.count.value);
            r.count.enabled += inst.count.enabled;
            r.count.running += inst.count.running;
            r.instances += 1;
            if let Some(s) = inst.count.scaled() {
                let scale = plan.events[inst.event].scale;
                r.value = Some(r.value.unwrap_or(0.0) + s * scale);
            }
        }
        for r in &mut self.rows {
            r.running_share = r.count.running_share();
            if r.count.running == 0 {
                r.value = None;
            }
        }
        &self.rows
    }

    /// Work out the rows and which row each instance adds to.
    fn build(&mut self, plan: &StatPlan, instances: &[Instance], topo: Option<&Topology>) {
        self.events = Some(plan.events.len());
        self.layout = instances.iter().map(|i| (i.event, i.cpu, i.tid)).collect();
        self.slot = vec![usize::MAX; instances.len()];
        self.rows.clear();
        for ei in 0..plan.events.len() {
            // This event's domains in order, each with its instances.
            let mut per: Vec<(Domain, Vec<usize>)> = Vec::new();
            for (k, inst) in instances.iter().enumerate().filter(|(_, i)| i.event == ei) {
                let d = domain_of(inst, self.how, topo);
                match per.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, ks)) => ks.push(k),
                    None => per.push((d, vec![k])),
                }
            }
            if per.is_empty() {
                per.push((Domain::Total, Vec::new()));
            }
            per.sort_by(|a, b| a.0.cmp(&b.0));
            for (domain, ks) in per {
                for k in ks {
                    self.slot[k] = self.rows.len();
                }
                self.rows.push(Row {
                    event: ei,
                    domain,
                    count: Count::default(),
                    value: None,
                    running_share: None,
                    instances: 0,
                });
            }
        }
    }
}

fn domain_of(inst: &Instance, how: Aggregation, topo: Option<&Topology>) -> Domain {
    let cpu = u32::try_from(inst.cpu).ok();
    let info = cpu.and_then(|c| topo.and_then(|t| t.cpu(c)));
    match how {
        Aggregation::Total => Domain::Total,
        Aggregation::PerThread => {
            if inst.tid >= 0 {
                Domain::Thread { tid: inst.tid }
            } else {
                Domain::Total
            }
        }
        Aggregation::PerCpu => match cpu {
            Some(c) => Domain::Cpu { cpu: c },
            None => Domain::Total,
        },
        Aggregation::PerCore => match info {
            Some(i) => Domain::Core {
                package: i.package.unwrap_or(0),
                core: i.core.unwrap_or(i.cpu),
            },
            None => Domain::Total,
        },
        Aggregation::PerSocket => match info {
            Some(i) => Domain::Socket {
                package: i.package.unwrap_or(0),
            },
            None => Domain::Total,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138).abs() < 1e-3);
        assert!(Spread::of(&[]).is_none());
        assert_eq!(Spread::of(&[3.0]).unwrap().stddev, 0.0);
    }

    fn planned(name: &str, scale: f64) -> PlannedEvent {
        PlannedEvent {
            name: name.to_string(),
            group: 0,
            attr: Err("not opened in this test".to_string()),
            cpus: None,
            unit: None,
            scale,
            source: None,
            need: crate::schedule::Need::None,
        }
    }

    fn inst(event: usize, cpu: i32, value: u64, enabled: u64, running: u64) -> Instance {
        Instance {
            event,
            cpu,
            tid: -1,
            count: Count {
                value,
                enabled,
                running,
            },
        }
    }

    /// A reused aggregator gives what a fresh `aggregate` gives, interval
    /// after interval, and rebuilds when the instances change layout.
    #[test]
    fn a_reused_aggregator_matches_a_fresh_one() {
        let plan = StatPlan {
            events: vec![planned("a", 1.0), planned("b", 0.5), planned("never", 1.0)],
            groups: Vec::new(),
        };
        let key = |rows: &[Row]| -> Vec<String> { rows.iter().map(|r| format!("{r:?}")).collect() };
        let mut agg = Aggregator::new(Aggregation::PerCpu);
        let layouts = [
            vec![
                inst(1, 1, 10, 100, 50),
                inst(0, 1, 5, 100, 100),
                inst(0, 0, 7, 100, 100),
                inst(1, 0, 3, 100, 100),
            ],
            vec![
                inst(1, 1, 20, 100, 100),
                inst(0, 1, 6, 100, 100),
                inst(0, 0, 8, 100, 0),
                inst(1, 0, 4, 100, 100),
            ],
            // A CPU went away: a new layout.
            vec![inst(0, 0, 9, 100, 100), inst(1, 0, 1, 100, 100)],
        ];
        for instances in &layouts {
            let fresh = aggregate(&plan, instances, Aggregation::PerCpu, None);
            assert_eq!(key(agg.rows(&plan, instances, None)), key(&fresh));
        }
        // Events in plan order, CPUs in order, a value-less total for the
        // event nothing counted; b's multiplexed count scaled and halved.
        let first = aggregate(&plan, &layouts[0], Aggregation::PerCpu, None);
        let order: Vec<(usize, String)> =
            first.iter().map(|r| (r.event, r.domain.label())).collect();
        assert_eq!(
            order,
            [
                (0, "CPU0".to_string()),
                (0, "CPU1".into()),
                (1, "CPU0".into()),
                (1, "CPU1".into()),
                (2, String::new())
            ]
        );
        assert_eq!(first[3].value, Some(10.0));
        assert_eq!(first[4].value, None);
        let second = aggregate(&plan, &layouts[1], Aggregation::PerCpu, None);
        assert_eq!(second[0].value, None, "never ran in this interval");
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Exit::Code { code: 3 }.shell_code(), 3);
        assert_eq!(Exit::Signal { signal: 9 }.shell_code(), 137);
    }
}
