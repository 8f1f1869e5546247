//! Open: every planned group on every (pid, cpu) slot it must count on,
//! disabled, with a hidden sampling leader (a [`Ticker`]) for system-wide
//! software groups read at intervals. A failed open is recorded in the
//! event's status; a failure the user must fix is kept as the run's hard
//! error.

use super::options::{RunOptions, Scope};
use super::outcome::{open_reason, EventOpenError};
use super::perf_options::{cgroup_path, Start};
use super::plan::StatPlan;
use crate::ticker::{self, Ticker};
use pmx_formats::EventStatus;
use pmx_perf::{Counter, OpenCause, OpenError};

/// One opened counter.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The counter.
    pub counter: Counter,
    /// Index into the plan's events.
    pub event: usize,
    /// CPU it is bound to, or -1.
    pub cpu: i32,
    /// Thread it is bound to, or -1.
    pub tid: i32,
}

/// Every counter of a run.
#[derive(Debug, Default)]
pub(crate) struct OpenSet {
    /// The counters, group by group.
    pub opened: Vec<Opened>,
    /// Indices into `opened` of the group leaders.
    pub leaders: Vec<usize>,
    /// Hidden sampling leaders and the opened counters in their groups.
    pub tickers: Vec<(Ticker, Vec<usize>)>,
    /// The first failure the user must fix.
    pub hard_error: Option<EventOpenError>,
    /// The cgroup directories (`-G`) the counters count in, open.
    pub cgroups: Vec<(String, std::fs::File)>,
}

/// How the counters of a run are placed, from its options.
struct Placement {
    /// Task counters are inherited by children (not a single thread's;
    /// traced tasks get their own).
    inherit: bool,
    /// Counting starts at the command's exec.
    by_exec: bool,
    /// `-p`, `--per-thread -a`: a thread may exit between listing and
    /// opening (perf skips it too).
    attaching_pids: bool,
    /// `-I`, when tickers may be used.
    ticker_interval: Option<std::time::Duration>,
    /// `-C` named CPUs (not every online one, as `-a` does): perf 6.1
    /// opens an uncore event on them too, not on its PMU's `cpumask`.
    user_cpus: bool,
}

/// Raise this process's soft `RLIMIT_NOFILE` to its hard limit, as perf
/// does when it runs out of descriptors: `true` when it went up (the
/// open that failed may be retried). The command counted was launched
/// before, with the limit it was given.
fn raise_nofile_limit() -> bool {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 || r.rlim_cur >= r.rlim_max {
            return false;
        }
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0
    }
}

impl OpenSet {
    /// Open `plan`'s groups on `slots` (groups with their own CPU list on
    /// those CPUs), updating `status` for events that fail. `trace`: the
    /// command's tasks are followed one by one.
    pub fn open(
        plan: &StatPlan,
        opts: &RunOptions,
        slots: &[(i32, i32)],
        trace: bool,
        status: &mut [EventStatus],
    ) -> OpenSet {
        let place = Placement {
            inherit: opts.inherit && !trace && !matches!(opts.scope, Scope::Tids(_)),
            by_exec: opts.scope == Scope::Command && opts.hooks.start == Start::Now,
            attaching_pids: matches!(opts.scope, Scope::Pids(_) | Scope::AllThreads),
            ticker_interval: opts.interval.filter(|_| opts.tickers),
            user_cpus: matches!(&opts.scope, Scope::Cpus(c) if *c != super::tasks::online_cpus()),
        };
        let mut set = OpenSet::default();
        for g in &plan.groups {
            let members: Vec<usize> = g
                .members
                .iter()
                .copied()
                .filter(|&i| plan.events[i].attr.is_ok())
                .collect();
            // A PMU of numbered boxes: the group once per box.
            let boxes = members.iter().map(|&m| plan.events[m].box_count());
            for b in 0..boxes.max().unwrap_or(1) {
                set.open_on_box(plan, &place, &members, b, slots, status);
            }
        }
        set
    }

    /// Open one group's `members` on box `b` of their PMU (0: the PMU
    /// of their attr) on every slot.
    fn open_on_box(
        &mut self,
        plan: &StatPlan,
        place: &Placement,
        members: &[usize],
        b: usize,
        slots: &[(i32, i32)],
        status: &mut [EventStatus],
    ) {
        let members: Vec<usize> = (members.iter().copied())
            .filter(|&i| plan.events[i].on_box(b).is_some())
            .collect();
        let Some((_, own_cpus)) = members.first().and_then(|&m| plan.events[m].on_box(b)) else {
            return;
        };
        // Events with their own CPU list (uncore: the PMU's `cpumask`)
        // are opened system-wide on those CPUs, with -a or a command as
        // with neither; `-C LIST` places them on its CPUs, as perf 6.1
        // does. The group shares the first member's placement.
        let own_cpus = own_cpus.filter(|_| !place.user_cpus);
        let group_slots: Vec<(i32, i32)> = match own_cpus {
            Some(c) => c.iter().map(|&c| (-1, c as i32)).collect(),
            None => slots.to_vec(),
        };
        // System-wide groups of software events read at intervals get
        // a hidden sampling leader on each CPU (see `crate::ticker`);
        // not those counted in a cgroup (`-G`: a group's members count
        // in their leader's cgroup, the kernel refuses others).
        let tickable = own_cpus.is_none()
            && members.iter().all(|&i| {
                plan.events[i].cgroup.is_none()
                    && (plan.events[i].attr.as_ref()).is_ok_and(|a| ticker::joins_ticker(a.type_))
            });
        for &(pid, cpu) in &group_slots {
            let ticker = match (tickable && pid == -1 && cpu >= 0, place.ticker_interval) {
                (true, Some(iv)) => Ticker::open(cpu, iv),
                _ => None,
            };
            let own = own_cpus.is_some();
            self.open_group(plan, place, (&members, b), own, (pid, cpu), ticker, status);
        }
    }

    /// Open one group's `members` on one slot, under `ticker` when given.
    #[allow(clippy::too_many_arguments)]
    fn open_group(
        &mut self,
        plan: &StatPlan,
        place: &Placement,
        (members, b): (&[usize], usize),
        own_cpus: bool,
        (pid, cpu): (i32, i32),
        ticker: Option<Ticker>,
        status: &mut [EventStatus],
    ) {
        let mut leader_idx: Option<usize> = None;
        let first_member = self.opened.len();
        for &ei in members {
            if status[ei] != EventStatus::Counted {
                continue;
            }
            let Some((mut attr, _)) = plan.events[ei].on_box(b) else {
                continue;
            };
            let is_leader = leader_idx.is_none() && ticker.is_none();
            // `no-inherit` on the event keeps it on the task itself.
            attr.inherit =
                place.inherit && pid != -1 && plan.events[ei].settings.inherit != Some(false);
            if is_leader {
                attr.disabled = true;
                attr.enable_on_exec = place.by_exec && !own_cpus;
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
                None => leader_idx.map(|l| &self.opened[l].counter),
            };
            let target = pmx_perf::Target { pid, cpu };
            let cgroup = plan.events[ei].cgroup.as_deref();
            let mut open = || match cgroup {
                Some(cg) => open_in_cgroup(&mut self.cgroups, &attr, cg, cpu, group),
                None => Counter::open(&attr, target, group),
            };
            let opened = open().or_else(|e| {
                // As perf does: out of descriptors, raise the soft limit
                // to the hard one (once) and try again.
                if e.errno == libc::EMFILE && raise_nofile_limit() {
                    open()
                } else {
                    Err(e)
                }
            });
            match opened {
                Ok(c) => {
                    if is_leader {
                        leader_idx = Some(self.opened.len());
                        self.leaders.push(self.opened.len());
                    }
                    self.opened.push(Opened {
                        counter: c,
                        event: ei,
                        cpu,
                        tid: pid,
                    });
                }
                Err(e) => {
                    let name = &plan.events[ei].name;
                    let mut failed = failure(&e, name, place.attaching_pids);
                    // A box that cannot be opened is named.
                    if let Some(x) = plan.events[ei].boxes.get(b) {
                        failed.status = failed.status.map(|s| on_box(s, &x.pmu));
                    }
                    if let Some(fatal) = failed.fatal {
                        self.hard_error.get_or_insert(fatal);
                    }
                    if let Some(st) = failed.status {
                        status[ei] = st;
                    }
                }
            }
        }
        if let Some(t) = ticker {
            if self.opened.len() > first_member {
                self.tickers
                    .push((t, (first_member..self.opened.len()).collect()));
            }
        }
    }

    /// Start counting: the tickers, then every leader, except those of the
    /// command's counters, which start at its exec (`by_exec`).
    pub fn enable(&self, plan: &StatPlan, by_exec: bool) -> std::io::Result<()> {
        for (t, _) in &self.tickers {
            t.counter.enable(true)?;
        }
        for &l in &self.leaders {
            let o = &self.opened[l];
            if !(by_exec && plan.events[o.event].cpus.is_none()) {
                o.counter.enable(true)?;
            }
        }
        Ok(())
    }

    /// Stop counting (errors ignored: the final read still happens).
    pub fn disable(&self) {
        for (t, _) in &self.tickers {
            let _ = t.counter.disable(true);
        }
        for &l in &self.leaders {
            let _ = self.opened[l].counter.disable(true);
        }
    }
}

/// Open `attr` on `cpu` in the cgroup `name` (its directory opened
/// once per run).
fn open_in_cgroup(
    cgroups: &mut Vec<(String, std::fs::File)>,
    attr: &pmx_perf::Attr,
    name: &str,
    cpu: i32,
    group: Option<&Counter>,
) -> Result<Counter, OpenError> {
    use std::os::fd::AsFd;
    let k = match cgroups.iter().position(|(n, _)| n == name) {
        Some(k) => k,
        None => {
            let dir = std::fs::File::open(cgroup_path(name)).map_err(|e| {
                let errno = e.raw_os_error().unwrap_or(libc::ENOENT);
                pmx_perf::OpenError {
                    errno,
                    attr: Box::new(attr.clone()),
                    target: pmx_perf::Target { pid: -1, cpu },
                    pmu: None,
                    cause: OpenCause::Other,
                }
            })?;
            cgroups.push((name.to_string(), dir));
            cgroups.len() - 1
        }
    };
    Counter::open_in_cgroup(attr, cgroups[k].1.as_fd(), cpu, group)
}

/// `status` of an event whose box `pmu` failed: the box named first.
fn on_box(status: EventStatus, pmu: &str) -> EventStatus {
    let named = |r: pmx_formats::Reason| match r.detail() {
        Some(d) => pmx_formats::Reason::with_detail(format!("{pmu}: {d}"), r.cause()),
        None => pmx_formats::Reason::with_detail(pmu, r.cause()),
    };
    match status {
        EventStatus::NotSupported(r) => EventStatus::NotSupported(named(r)),
        EventStatus::NotCounted(r) => EventStatus::NotCounted(named(r)),
        s => s,
    }
}

/// What a failed open means for the run.
#[derive(Debug, PartialEq, Eq)]
struct Failure {
    /// The event's new status (`None`: unchanged, the slot is skipped).
    status: Option<EventStatus>,
    /// The run's hard error, when the user must fix this one.
    fatal: Option<EventOpenError>,
}

/// The one place that reads an open error's cause: rows name the event,
/// their reason is the cause's (shared by every event failing for it); a
/// hard error names the event and says everything.
fn failure(e: &OpenError, name: &str, attaching_pids: bool) -> Failure {
    let reason = open_reason(e);
    match e.cause {
        ref c if c.is_unsupported_event() => Failure {
            status: Some(EventStatus::NotSupported(reason)),
            fatal: None,
        },
        // A thread exited between listing and opening.
        OpenCause::NoProcess if attaching_pids => Failure {
            status: None,
            fatal: None,
        },
        _ => Failure {
            status: Some(EventStatus::NotCounted(reason)),
            fatal: Some(EventOpenError {
                event: name.to_string(),
                error: e.clone(),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::{plan, tasks};

    fn error(cause: OpenCause) -> OpenError {
        OpenError {
            errno: libc::ENOENT,
            attr: Box::default(),
            target: pmx_perf::Target { pid: 0, cpu: -1 },
            pmu: None,
            cause,
        }
    }

    #[test]
    fn failures_are_unsupported_skipped_or_fatal() {
        let unsupported = error(OpenCause::NotSupported { core_pmu: None });
        let f = failure(&unsupported, "cycles", false);
        assert_eq!(
            f.status,
            Some(EventStatus::NotSupported(open_reason(&unsupported)))
        );
        assert_eq!(open_reason(&unsupported).as_str(), unsupported.reason());
        assert_eq!(f.fatal, None);
        let f = failure(&error(OpenCause::NoProcess), "cycles", true);
        assert_eq!(
            f,
            Failure {
                status: None,
                fatal: None
            }
        );
        let gone = error(OpenCause::NoProcess);
        let f = failure(&gone, "cycles", false);
        assert_eq!(
            f.fatal.as_ref().map(|e| e.to_string()),
            Some(format!("cycles: {gone}"))
        );
        assert_eq!(f.fatal.map(|e| e.error.cause), Some(OpenCause::NoProcess));
        let busy = error(OpenCause::Busy);
        let f = failure(&busy, "cycles", false);
        assert_eq!(f.status, Some(EventStatus::NotCounted(open_reason(&busy))));
        assert_eq!(open_reason(&busy).as_str(), busy.reason());
    }

    /// Software events open on this process, disabled, as one group; the
    /// hardware ones are either counted or not supported, never fatal here.
    #[test]
    fn software_events_open_on_this_process() {
        let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).expect("cpuid");
        let target = pmx_events::Target { cpu, host: true };
        let db = pmx_events::Database::light(target, std::path::Path::new("/"));
        let groups =
            crate::parse_event_list("{task-clock,page-faults},context-switches").expect("list");
        let plan = plan(&groups, &db).expect("plan");
        let opts = RunOptions {
            scope: Scope::Tids(vec![std::process::id() as i32]),
            command: Vec::new(),
            inherit: false,
            pin: None,
            duration: None,
            interval: None,
            interval_count: None,
            trace_tasks: false,
            hooks: Default::default(),
            tickers: true,
            spawn: Default::default(),
        };
        let mut status = vec![EventStatus::Counted; plan.events.len()];
        let slots = tasks::slots(&opts, None);
        let set = OpenSet::open(&plan, &opts, &slots, false, &mut status);
        assert_eq!(set.hard_error, None);
        assert_eq!(set.opened.len(), 3, "{status:?}");
        assert_eq!(set.leaders, [0, 2], "one leader per group");
        assert!(set.tickers.is_empty());
    }
}
