//! Counters a program reads itself: start, stop, read.
//!
//! [`Counters`] is built from event specs in the CLI's grammar and
//! database (`"task-clock,page-faults,{cycles,instructions}:u"`), for one
//! [`CountTarget`]: the calling thread, every thread of a process, one
//! thread, or every task on some CPUs. Events are opened as perf groups
//! — `{…}` groups as written, the ungrouped events packed onto the CPU's
//! counters as `pmx stat` packs them, every software event in one group —
//! with the leader created disabled, so nothing counts until
//! [`Counters::enable`].
//!
//! A read is one `read(2)` per group into a buffer allocated once, decoded
//! in place: [`Counters::read_into`] fills a caller's slice of
//! [`Count`]s (one per event, summed over the target's threads or CPUs)
//! without allocating; [`Counters::read`] returns named [`Reading`]s.
//! Where the kernel lets user space read a counter with `rdpmc` (a real
//! PMU, the calling thread as target, `cap_user_rdpmc`), the group's
//! values come from [`pmx_perf::rdpmc`] instead of a system call.
//!
//! With [`Backend::Msr`] the same events are programmed straight into the
//! PMU through `/dev/cpu/N/msr` (`pmx-msr`: every register saved and
//! restored), counting whole CPUs; the API and the readings are the same.
//!
//! An event this machine cannot count (no hardware PMU, a PMU that is not
//! there) is kept with its reason ([`EventStatus::NotSupported`]); its
//! reading says so instead of showing a zero. Only when *no* event can be
//! opened does building fail.
//!
//! ```
//! let mut c = pmx::Counters::new("task-clock,page-faults")?;
//! c.enable()?;
//! let v: Vec<u8> = vec![1; 1 << 20];
//! c.disable()?;
//! for r in c.read()? {
//!     println!("{:>12} {}", r.scaled().unwrap_or(f64::NAN), r.name);
//! }
//! # drop(v);
//! # Ok::<(), pmx::counters::Error>(())
//! ```
//!
//! With metrics (values from the CPU's metric library; on a machine
//! without a hardware PMU, `IPC` says which input is missing):
//!
//! ```
//! let mut c = pmx::Counters::builder().events("task-clock").metrics("IPC").open()?;
//! c.enable()?;
//! c.disable()?;
//! for m in c.metrics()? {
//!     println!("{} = {:?} {}", m.name, m.value, m.missing.unwrap_or_default());
//! }
//! # Ok::<(), pmx::counters::Error>(())
//! ```

use crate::backend::nothing_opened;
pub use crate::backend::{Error, EventInfo};
use crate::backend_msr::MsrCounters;
pub use crate::backend_msr::MsrOptions;
use crate::eventlist::{parse_event_list, EventGroup};
use crate::metrics::{MetricSet, MetricValue};
use crate::stat::{self, EventStatus, StatPlan};
use pmx_events::{Database, EventsDirDefault, LoadOptions};
use pmx_model::count::Count;
use pmx_perf::{read_format, Counter, OpenCause, Target};
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Where the counters count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CountTarget {
    /// The calling thread only (perf's pid 0, any CPU). The counters may
    /// be read from any thread but count only the one that built them.
    #[default]
    ThisThread,
    /// Every thread a process has when the counters are built.
    Process(i32),
    /// One thread.
    Thread(i32),
    /// Every task on these CPUs (needs `perf_event_paranoid` ≤ 0 or
    /// CAP_PERFMON).
    Cpus(Vec<u32>),
}

impl CountTarget {
    /// The target perf's `(pid, cpu)` pair names, as the C API's
    /// `pmx_counters_open` takes it: pid 0 (or the caller's own thread)
    /// with cpu -1 is the calling thread; pid > 0 with cpu -1 every thread
    /// of that process; pid -1 with cpu ≥ 0 every task on that CPU; pid -1
    /// with cpu -1 every task on every online CPU. A task on one CPU only
    /// is refused (pmx counts a task wherever it runs).
    ///
    /// ```
    /// use pmx::CountTarget;
    /// assert_eq!(CountTarget::from_pid_cpu(0, -1)?, CountTarget::ThisThread);
    /// assert_eq!(CountTarget::from_pid_cpu(1234, -1)?, CountTarget::Process(1234));
    /// assert_eq!(CountTarget::from_pid_cpu(-1, 3)?, CountTarget::Cpus(vec![3]));
    /// assert!(CountTarget::from_pid_cpu(1234, 0).unwrap_err().is_bad_input());
    /// # Ok::<(), pmx::counters::Error>(())
    /// ```
    pub fn from_pid_cpu(pid: i32, cpu: i32) -> Result<CountTarget, Error> {
        match (pid, cpu) {
            (0, -1) => Ok(CountTarget::ThisThread),
            (p, -1) if p > 0 => Ok(CountTarget::Process(p)),
            (-1, c) if c >= 0 => Ok(CountTarget::Cpus(vec![c as u32])),
            (-1, -1) => Ok(CountTarget::Cpus(stat::online_cpus())),
            (p, c) if p >= 0 && c >= 0 => Err(Error::Target(format!(
                "pid {p} on cpu {c}: pmx counts a task on every CPU it runs on; give pid {p} with cpu -1, or pid -1 with cpu {c}"
            ))),
            (p, c) => Err(Error::Target(format!(
                "pid {p}, cpu {c}: a pid is 0 (the calling thread), a process id, or -1 (every task on the CPU); a cpu is -1 (any) or a CPU number"
            ))),
        }
    }
}

/// One event's reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading<'a> {
    /// The spec as given.
    pub name: &'a str,
    /// Raw value, enabled and running time (summed over the target's
    /// threads or CPUs); all zero when the event is not counted.
    pub count: Count,
    /// Unit of [`Reading::value`].
    pub unit: Option<&'a str>,
    /// Raw value × `scale` = value in `unit`.
    pub scale: f64,
    /// Counting, or why not.
    pub status: &'a EventStatus,
}

impl Reading<'_> {
    /// The raw value scaled for multiplexing (`value × enabled /
    /// running`); `None` when the event is not counted or never ran.
    pub fn scaled(&self) -> Option<f64> {
        match self.status {
            EventStatus::Counted => self.count.scaled(),
            _ => None,
        }
    }

    /// [`Reading::scaled`] in the event's unit (task-clock in msec).
    pub fn value(&self) -> Option<f64> {
        self.scaled().map(|v| v * self.scale)
    }
}

/// One open perf group and its read buffer.
pub(crate) struct Group {
    leader: Counter,
    _members: Vec<Counter>,
    /// (kernel id, event index), in the order the kernel reports them.
    slots: Vec<(u64, usize)>,
    buf: Vec<u64>,
    user_page: Option<crate::backend_rdpmc::UserRead>,
}

const GROUP_FORMAT: u64 = read_format::GROUP
    | read_format::ID
    | read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING;

/// One `read(2)` of a group opened with [`GROUP_FORMAT`] into `buf`,
/// decoded in place: `(enabled, running)` and `(id, value)` pairs at
/// `buf[3 + 2i]`, `buf[4 + 2i]`. Returns the number of members.
pub(crate) fn read_group_raw(fd: i32, buf: &mut [u64]) -> io::Result<usize> {
    loop {
        // SAFETY: the pointer and length describe `buf`, which the kernel
        // may fill with any bytes (every bit pattern is a valid u64).
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        let words = n as usize / 8;
        let nr = buf[0] as usize;
        if n == 0 || words < 3 || words != 3 + 2 * nr {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("perf group read returned {n} bytes, which do not hold a group"),
            ));
        }
        return Ok(nr);
    }
}

impl Group {
    /// Add this group's values into `out` (indexed by event).
    #[inline]
    fn read_add(&mut self, out: &mut [Count]) -> io::Result<()> {
        if let Some(u) = &self.user_page {
            if u.read_add(&self.slots, out) {
                return Ok(());
            }
        }
        let nr = read_group_raw(self.leader.as_raw_fd(), &mut self.buf)?;
        let (enabled, running) = (self.buf[1], self.buf[2]);
        for i in 0..nr {
            let (value, id) = (self.buf[3 + 2 * i], self.buf[4 + 2 * i]);
            let event = match self.slots.get(i) {
                Some(&(sid, e)) if sid == id => e,
                _ => match self.slots.iter().find(|(sid, _)| *sid == id) {
                    Some(&(_, e)) => e,
                    None => continue,
                },
            };
            let c = &mut out[event];
            c.value = c.value.wrapping_add(value);
            c.enabled += enabled;
            c.running += running;
        }
        Ok(())
    }
}

/// How the counters are reached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Backend {
    /// `perf_event_open(2)` (the default).
    #[default]
    Perf,
    /// Program the PMU directly through `/dev/cpu/N/msr` (root or
    /// CAP_SYS_RAWIO and the msr driver; counts whole CPUs, so the target
    /// must be [`CountTarget::Cpus`]). See [`MsrOptions`].
    Msr(MsrOptions),
}

/// Builder for [`Counters`]: events, metrics, target, backend, database.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    events: Vec<String>,
    metrics: Option<String>,
    target: CountTarget,
    events_dir: Option<PathBuf>,
    backend: Backend,
    cpu: Option<pmx_model::cpu::CpuId>,
}

impl Builder {
    /// Add an `-e` list (repeatable, like `-e`).
    pub fn events(mut self, list: &str) -> Builder {
        self.events.push(list.to_string());
        self
    }

    /// Compute these metrics (`IPC,TopdownL1`); their inputs are added to
    /// the events.
    pub fn metrics(mut self, list: &str) -> Builder {
        self.metrics = Some(list.to_string());
        self
    }

    /// Where to count (default: the calling thread).
    pub fn target(mut self, target: CountTarget) -> Builder {
        self.target = target;
        self
    }

    /// Intel's perfmon tables (default: `$PMX_EVENTS_DIR`, then the
    /// cache `pmx events fetch` fills, read when the counters open:
    /// [`events_dirs::from_env`](crate::events_dirs::from_env)).
    pub fn events_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.events_dir = Some(dir.into());
        self
    }

    /// How to reach the counters (default: perf).
    pub fn backend(mut self, backend: Backend) -> Builder {
        self.backend = backend;
        self
    }

    /// Resolve events for this CPU instead of the one running (the MSR
    /// backend then plans with the counters such a CPU is assumed to have).
    pub fn cpu(mut self, cpu: pmx_model::cpu::CpuId) -> Builder {
        self.cpu = Some(cpu);
        self
    }

    /// Resolve, plan and open: every counter created, none counting.
    pub fn open(self) -> Result<Counters, Error> {
        let mut groups: Vec<EventGroup> = Vec::new();
        for l in &self.events {
            groups.extend(parse_event_list(l)?);
        }
        if let Backend::Msr(opts) = &self.backend {
            return self.open_msr(groups, opts);
        }
        let defaults = crate::events_dirs::from_env();
        let events_dir = defaults.resolve(self.events_dir.clone());
        let (metrics, mut db) = match &self.metrics {
            Some(list) => {
                let db = full_database(events_dir.clone(), &defaults)?;
                let set = MetricSet::new(list, &db)?;
                for spec in set.event_specs() {
                    let present = groups
                        .iter()
                        .any(|g| g.members.iter().any(|m| m.text == spec));
                    if !present {
                        groups.extend(parse_event_list(&spec)?);
                    }
                }
                (Some(set), Some(db))
            }
            None => (None, None),
        };
        if groups.is_empty() {
            return Err(Error::Open("no events given".to_string()));
        }
        let plan = plan_groups(&groups, db.take(), events_dir, &defaults)?;
        let mut c = Counters::open_plan(&plan, &self.target)?;
        c.metrics = metrics;
        Ok(c)
    }
}

impl Builder {
    fn open_msr(&self, groups: Vec<EventGroup>, opts: &MsrOptions) -> Result<Counters, Error> {
        let CountTarget::Cpus(cpus) = &self.target else {
            return Err(Error::Open(
                "the msr backend counts whole CPUs: use CountTarget::Cpus".to_string(),
            ));
        };
        if self.metrics.is_some() {
            return Err(Error::Open(
                "metrics are computed from perf counters; with the msr backend read the events"
                    .to_string(),
            ));
        }
        let target = match &self.cpu {
            Some(cpu) => pmx_events::Target {
                cpu: cpu.clone(),
                host: false,
            },
            None => pmx_events::Target {
                cpu: pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).ok_or(Error::NoCpu)?,
                host: true,
            },
        };
        let defaults = crate::events_dirs::from_env();
        let db = Database::load(
            target,
            &LoadOptions {
                events_dir: defaults.resolve(self.events_dir.clone()),
                sysfs_root: None,
                no_libpfm: false,
                events_dir_default: defaults,
                ..Default::default()
            },
        );
        let specs: Vec<pmx_model::spec::EventSpec> =
            groups.into_iter().flat_map(|g| g.members).collect();
        let mut events: Vec<EventInfo> = specs
            .iter()
            .map(|s| EventInfo {
                name: s.text.clone(),
                unit: None,
                scale: 1.0,
                status: EventStatus::Counted,
            })
            .collect();
        let msr = MsrCounters::open(&specs, &mut events, &db, cpus, opts)?;
        let n = events.len();
        Ok(Counters {
            events,
            groups: Vec::new(),
            places: Vec::new(),
            metrics: None,
            started: None,
            elapsed: std::time::Duration::ZERO,
            scratch: written(n),
            msr: Some(msr),
        })
    }
}

/// The full event database for this machine (kernel events, sysfs,
/// Intel's tables from `events_dir`, libpfm4); `defaults` says which
/// directory is the cache.
pub(crate) fn full_database(
    events_dir: Option<PathBuf>,
    defaults: &EventsDirDefault,
) -> Result<Database, Error> {
    let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).ok_or(Error::NoCpu)?;
    let target = pmx_events::Target { cpu, host: true };
    Ok(Database::load(
        target,
        &LoadOptions {
            events_dir,
            sysfs_root: None,
            no_libpfm: false,
            events_dir_default: defaults.clone(),
            ..Default::default()
        },
    ))
}

/// Plan `groups`: with the cheap sources first (kernel events and sysfs),
/// the full database only when a name needs it; then packed onto the
/// CPU's counters and the software events put in one group.
pub(crate) fn plan_groups(
    groups: &[EventGroup],
    db: Option<Database>,
    events_dir: Option<PathBuf>,
    defaults: &EventsDirDefault,
) -> Result<StatPlan, Error> {
    let mut plan = match db {
        Some(db) => stat::plan(groups, &db)?,
        None => {
            let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).ok_or(Error::NoCpu)?;
            let target = pmx_events::Target { cpu, host: true };
            let light = Database::light(target, std::path::Path::new("/"))
                .with_events_dirs(defaults.resolve_all(&[]));
            match stat::plan(groups, &light) {
                Ok(p) => p,
                Err(_) => stat::plan(groups, &full_database(events_dir, defaults)?)?,
            }
        }
    };
    if let Some(b) = crate::schedule::CounterBudget::this_cpu() {
        plan.pack(&b);
    }
    plan.group_software();
    Ok(plan)
}

/// A set of open counters.
pub struct Counters {
    events: Vec<EventInfo>,
    groups: Vec<Group>,
    /// (tid, cpu) of each group, parallel to `groups`.
    places: Vec<(i32, i32)>,
    metrics: Option<MetricSet>,
    started: Option<std::time::Instant>,
    elapsed: std::time::Duration,
    scratch: Vec<Count>,
    msr: Option<MsrCounters>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("events", &self.events)
            .field("groups", &self.groups.len())
            .field("places", &self.places)
            .finish()
    }
}

impl Counters {
    /// Counters for `list` (an `-e` list) on the calling thread.
    pub fn new(list: &str) -> Result<Counters, Error> {
        Counters::builder().events(list).open()
    }

    /// A builder: events, metrics, target.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Open a plan made by [`crate::stat::plan`] on `target`.
    pub fn open_plan(plan: &StatPlan, target: &CountTarget) -> Result<Counters, Error> {
        let places: Vec<(i32, i32)> = match target {
            CountTarget::ThisThread => vec![(0, -1)],
            CountTarget::Thread(t) => vec![(*t, -1)],
            CountTarget::Process(p) => {
                let t = stat::threads_of(*p);
                if t.is_empty() {
                    vec![(*p, -1)]
                } else {
                    t.into_iter().map(|t| (t, -1)).collect()
                }
            }
            CountTarget::Cpus(c) => c.iter().map(|&c| (-1, c as i32)).collect(),
        };
        let mut events: Vec<EventInfo> = plan
            .events
            .iter()
            .map(|e| EventInfo {
                name: e.name.clone(),
                unit: e.unit.clone(),
                scale: e.scale,
                status: match &e.attr {
                    Ok(_) => EventStatus::Counted,
                    Err(why) => EventStatus::NotSupported(why.as_str().into()),
                },
            })
            .collect();
        let mut groups = Vec::new();
        let mut opened_places = Vec::new();
        let mut opened_any = vec![false; events.len()];
        let mut first_error: Vec<Option<String>> = vec![None; events.len()];
        for &(pid, cpu) in &places {
            let target = Target { pid, cpu };
            for g in &plan.groups {
                let mut leader: Option<Counter> = None;
                let mut members = Vec::new();
                let mut slots = Vec::new();
                let mut all_hardware = true;
                for &ei in &g.members {
                    let Ok(attr) = &plan.events[ei].attr else {
                        continue;
                    };
                    if plan.events[ei].cpus.is_some() && cpu < 0 {
                        first_error[ei].get_or_insert_with(|| {
                            "an uncore event counts per CPU, not per task: use CountTarget::Cpus"
                                .to_string()
                        });
                        continue;
                    }
                    let mut a = attr.clone();
                    all_hardware &= matches!(a.type_, 0 | 3 | 4);
                    a.read_format = GROUP_FORMAT;
                    a.disabled = leader.is_none();
                    match Counter::open(&a, target, leader.as_ref()) {
                        Ok(c) => {
                            slots.push((c.id(), ei));
                            opened_any[ei] = true;
                            if leader.is_none() {
                                leader = Some(c);
                            } else {
                                members.push(c);
                            }
                        }
                        Err(e) => {
                            if e.cause == OpenCause::NoProcess && places.len() > 1 {
                                // A thread that exited since it was listed.
                                continue;
                            }
                            first_error[ei].get_or_insert_with(|| e.to_string());
                        }
                    }
                }
                if let Some(leader) = leader {
                    let buf = written(3 + 2 * slots.len());
                    let user_page = if pid == 0 && cpu == -1 && all_hardware {
                        crate::backend_rdpmc::UserRead::new(&leader, &members, &slots)
                    } else {
                        None
                    };
                    groups.push(Group {
                        leader,
                        _members: members,
                        slots,
                        buf,
                        user_page,
                    });
                    opened_places.push((pid, cpu));
                }
            }
        }
        for (i, ev) in events.iter_mut().enumerate() {
            if ev.status == EventStatus::Counted && !opened_any[i] {
                ev.status = EventStatus::NotSupported(
                    first_error[i]
                        .take()
                        .unwrap_or_else(|| "could not be opened".to_string())
                        .into(),
                );
            }
        }
        if groups.is_empty() {
            return Err(nothing_opened(&events));
        }
        let n = events.len();
        Ok(Counters {
            events,
            groups,
            places: opened_places,
            metrics: None,
            started: None,
            elapsed: std::time::Duration::ZERO,
            scratch: written(n),
            msr: None,
        })
    }

    /// The events, in the order given (metric inputs last).
    pub fn events(&self) -> &[EventInfo] {
        &self.events
    }

    /// Number of perf groups opened (one `read(2)` each).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Start counting: every group at once, one ioctl per group.
    pub fn enable(&mut self) -> io::Result<()> {
        if let Some(m) = &mut self.msr {
            m.enable()?;
        }
        for g in &self.groups {
            g.leader.enable(true)?;
        }
        self.started.get_or_insert_with(std::time::Instant::now);
        Ok(())
    }

    /// Stop counting; the values stay readable.
    pub fn disable(&mut self) -> io::Result<()> {
        if let Some(m) = &mut self.msr {
            m.disable()?;
        }
        for g in &self.groups {
            g.leader.disable(true)?;
        }
        if let Some(t) = self.started.take() {
            self.elapsed += t.elapsed();
        }
        Ok(())
    }

    /// Zero the values (the enabled and running times keep counting, as
    /// the kernel does).
    pub fn reset(&mut self) -> io::Result<()> {
        if let Some(m) = &mut self.msr {
            m.reset()?;
        }
        for g in &self.groups {
            g.leader.reset(true)?;
        }
        self.elapsed = std::time::Duration::ZERO;
        if self.started.is_some() {
            self.started = Some(std::time::Instant::now());
        }
        Ok(())
    }

    /// Read every event into `out` (one [`Count`] per event, in
    /// [`Counters::events`] order, summed over threads or CPUs; zero for
    /// events not counted) without allocating. `out` must have room for
    /// every event.
    #[inline]
    pub fn read_into(&mut self, out: &mut [Count]) -> io::Result<()> {
        if out.len() < self.events.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "read_into: room for {} counts, the counters have {} events",
                    out.len(),
                    self.events.len()
                ),
            ));
        }
        for c in out.iter_mut() {
            *c = Count::default();
        }
        if let Some(m) = &mut self.msr {
            return m.read_into(out);
        }
        for g in &mut self.groups {
            g.read_add(out)?;
        }
        Ok(())
    }

    /// Read every event, named, in [`Counters::events`] order.
    ///
    /// The readings borrow the names, units and statuses from the
    /// counters, so a read allocates only the returned vector.
    pub fn read(&mut self) -> io::Result<Vec<Reading<'_>>> {
        let mut counts = std::mem::take(&mut self.scratch);
        let r = self.read_into(&mut counts);
        self.scratch = counts;
        r?;
        Ok(self
            .events
            .iter()
            .zip(&self.scratch)
            .map(|(e, c)| Reading {
                name: &e.name,
                count: *c,
                unit: e.unit.as_deref(),
                scale: e.scale,
                status: &e.status,
            })
            .collect())
    }

    /// Per thread or CPU: `(tid, cpu, counts)` for each place counted
    /// (tid -1 for a CPU, cpu -1 for a thread; tid 0 is the calling
    /// thread). The msr backend gives its totals over its CPUs as one
    /// entry `(-1, -1, …)`.
    pub fn read_per_place(&mut self) -> io::Result<Vec<(i32, i32, Vec<Count>)>> {
        let mut out: Vec<(i32, i32, Vec<Count>)> = Vec::new();
        if self.msr.is_some() {
            let mut c = vec![Count::default(); self.events.len()];
            self.read_into(&mut c)?;
            return Ok(vec![(-1, -1, c)]);
        }
        for (g, &(tid, cpu)) in self.groups.iter_mut().zip(&self.places) {
            let at = match out.iter().position(|(t, c, _)| *t == tid && *c == cpu) {
                Some(i) => i,
                None => {
                    out.push((tid, cpu, vec![Count::default(); self.events.len()]));
                    out.len() - 1
                }
            };
            g.read_add(&mut out[at].2)?;
        }
        Ok(out)
    }

    /// Wall-clock time spent enabled (since the last reset).
    pub fn elapsed(&self) -> std::time::Duration {
        self.elapsed
            + self
                .started
                .map_or(std::time::Duration::ZERO, |t| t.elapsed())
    }

    /// The metrics asked for with [`Builder::metrics`], from a fresh read
    /// (empty when none were asked for).
    pub fn metrics(&mut self) -> io::Result<Vec<MetricValue>> {
        if self.metrics.is_none() {
            return Ok(Vec::new());
        }
        let duration = self.elapsed().as_secs_f64();
        let metrics = self.metrics.take();
        let out = match (&metrics, self.read()) {
            (Some(set), Ok(readings)) => Ok(evaluate_readings(set, &readings, Some(duration))),
            (_, Err(e)) => Err(e),
            (None, Ok(_)) => Ok(Vec::new()),
        };
        self.metrics = metrics;
        out
    }
}

/// Metrics from named readings.
pub(crate) fn evaluate_readings(
    set: &MetricSet,
    readings: &[Reading],
    duration: Option<f64>,
) -> Vec<MetricValue> {
    let lookup = |spec: &str| -> Result<Count, String> {
        match readings.iter().find(|r| r.name == spec) {
            None => Err("not counted".to_string()),
            Some(r) => match r.status {
                EventStatus::Counted => Ok(r.count),
                EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => Err(w.to_string()),
            },
        }
    };
    set.evaluate(&lookup, duration)
}

/// A buffer of `n` default values, every element written now. A zeroed
/// allocation may be pages nobody touched yet; if the kernel's copy of a
/// read into it were the first touch, the page fault would come after the
/// counts were taken and be charged to whatever is measured next.
pub(crate) fn written<T: Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(std::hint::black_box(T::default()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_testkit::workload::touch_pages;

    #[test]
    fn page_faults_of_the_calling_thread_are_exact() {
        let mut c = Counters::new("page-faults,task-clock").unwrap();
        assert_eq!(c.group_count(), 1, "software events share one group");
        let mut counts = vec![Count::default(); 2];
        c.read_into(&mut counts).unwrap();
        assert_eq!(counts[0].value, 0, "created disabled");
        // The same call once before counting, so the stack pages it needs
        // are already there (a first touch of a stack page is a fault too).
        touch_pages(1).unwrap();
        c.enable().unwrap();
        touch_pages(100).unwrap();
        c.disable().unwrap();
        let r = c.read().unwrap();
        assert_eq!(r[0].name, "page-faults");
        assert_eq!(r[0].count.value, 100);
        assert_eq!(r[0].scaled(), Some(100.0));
        assert!(r[1].count.value > 0 && r[1].unit == Some("msec"));
        // Disabled: another touch is not counted.
        touch_pages(10).unwrap();
        assert_eq!(c.read().unwrap()[0].count.value, 100);
        c.reset().unwrap();
        assert_eq!(c.read().unwrap()[0].count.value, 0);
    }

    #[test]
    fn an_event_the_machine_cannot_count_keeps_its_reason() {
        // Five breakpoints: x86 has four debug registers, so the fifth
        // cannot be opened, on every machine.
        let x = [0u64; 5];
        let specs: Vec<String> = x
            .iter()
            .map(|v| format!("mem:{:#x}/8:w", v as *const u64 as usize))
            .collect();
        let list = format!("page-faults,{}", specs.join(","));
        let mut c = Counters::new(&list).unwrap();
        let r = c.read().unwrap();
        assert_eq!(*r[0].status, EventStatus::Counted);
        let failed: Vec<&Reading> = r
            .iter()
            .filter(|r| matches!(r.status, EventStatus::NotSupported(_)))
            .collect();
        assert!(!failed.is_empty(), "{r:?}");
        for f in failed {
            match &f.status {
                EventStatus::NotSupported(why) => {
                    assert!(why.as_str().contains("debug register"), "{why}")
                }
                _ => unreachable!(),
            }
            assert_eq!(f.scaled(), None);
        }
    }

    #[test]
    fn bad_specs_are_bad_input() {
        let e = Counters::new("page-faults,,").unwrap_err();
        assert!(e.is_bad_input(), "{e}");
    }

    #[test]
    fn read_into_refuses_a_short_slice() {
        let mut c = Counters::new("page-faults,task-clock").unwrap();
        let mut one = [Count::default(); 1];
        assert!(c.read_into(&mut one).is_err());
    }
}
