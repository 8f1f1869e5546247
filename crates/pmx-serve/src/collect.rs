//! The counters: one set of groups per online CPU, opened once, read on
//! every scrape, closed when the CPU goes offline and reopened when it comes
//! back.
//!
//! Every planned group is opened on every online CPU system-wide (`pid -1`),
//! leader created disabled with `PERF_FORMAT_GROUP` when the group has more
//! than one member, members enabled so they start exactly with the leader,
//! then the leader enabled for the group. An event the kernel refuses is
//! marked unsupported (with the first reason) and the other events go on.
//!
//! Totals never go down for the daemon's lifetime: when a CPU goes offline
//! its last reading is kept as a *base* for that `(CPU, event)`, and when the
//! CPU comes back its new counters (which start from zero) are added on top.
//! A per-CPU series therefore continues where it stopped instead of
//! resetting, and per-core or per-socket sums keep what an offline CPU
//! counted.

use pmx_count::stat::{open_reason, EventStatus, StatPlan};
use pmx_model::count::Count;
use pmx_perf::{Counter, Target};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A `(CPU, event index)` pair: the key of one counter's reading.
pub type Key = (u32, usize);

/// All readings at one moment: cumulative counts per CPU and event.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// When the counters were read.
    pub at: Option<Instant>,
    /// Cumulative count (base from earlier online periods + live counter).
    pub counts: BTreeMap<Key, Count>,
    /// CPUs whose counters are live (online).
    pub online: BTreeSet<u32>,
    /// Counters that could not be read this time (their last good value
    /// is used).
    pub read_errors: usize,
}

struct OpenGroup {
    /// `(event index, counter)`, leader first.
    counters: Vec<(usize, Counter)>,
    /// Read through the leader with `PERF_FORMAT_GROUP`.
    grouped: bool,
    /// Counter id → position in `counters`.
    by_id: HashMap<u64, usize>,
}

struct CpuCounters {
    groups: Vec<OpenGroup>,
}

/// What changed in a hotplug sync.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// CPUs whose counters were opened.
    pub added: Vec<u32>,
    /// CPUs whose counters were closed.
    pub removed: Vec<u32>,
}

/// The daemon's counters.
pub struct Collector {
    plan: StatPlan,
    status: Vec<EventStatus>,
    live: BTreeMap<u32, CpuCounters>,
    /// Last good reading of each live counter.
    last: BTreeMap<Key, Count>,
    /// What counters of earlier online periods counted.
    base: BTreeMap<Key, Count>,
    online_file: PathBuf,
    /// Messages to log (unsupported events, read errors), taken by
    /// [`Collector::take_log`].
    log: Vec<String>,
    /// Events whose read errors were already logged.
    read_error_logged: BTreeSet<Key>,
    /// Events whose open failure was already logged.
    open_logged: BTreeSet<usize>,
}

/// The kernel's list of online CPUs.
pub const ONLINE_FILE: &str = "/sys/devices/system/cpu/online";

/// Read a kernel CPU list file (`0-3,8`).
pub fn read_online(path: &Path) -> std::io::Result<Vec<u32>> {
    let text = std::fs::read_to_string(path)?;
    pmx_model::topology::parse_cpu_list(text.trim()).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

impl Collector {
    /// Counters for `plan` on the CPUs listed in `online_file` (normally
    /// [`ONLINE_FILE`]; tests point it elsewhere to simulate hotplug).
    /// Fails only when the online list cannot be read; events that cannot
    /// be opened are recorded in [`Collector::status`].
    pub fn open(plan: StatPlan, online_file: &Path) -> std::io::Result<Collector> {
        let status = plan
            .events
            .iter()
            .map(|e| match &e.attr {
                Ok(_) => EventStatus::NotCounted("not opened yet".into()),
                Err(r) => EventStatus::NotSupported(r.as_str().into()),
            })
            .collect();
        let mut c = Collector {
            plan,
            status,
            live: BTreeMap::new(),
            last: BTreeMap::new(),
            base: BTreeMap::new(),
            online_file: online_file.to_path_buf(),
            log: Vec::new(),
            read_error_logged: BTreeSet::new(),
            open_logged: BTreeSet::new(),
        };
        for e in &c.plan.events {
            if let Err(r) = &e.attr {
                c.log.push(format!("{}: not supported: {r}", e.name));
            }
        }
        let online = read_online(online_file)?;
        c.sync_to(&online);
        // An event that opened nowhere and has no recorded reason.
        for (i, st) in c.status.iter_mut().enumerate() {
            if matches!(st, EventStatus::NotCounted(r) if r.as_str() == "not opened yet") {
                *st = EventStatus::NotCounted("no CPU to count on".into());
                c.log.push(format!(
                    "{}: not counted: no CPU to count on",
                    c.plan.events[i].name
                ));
            }
        }
        Ok(c)
    }

    /// The plan the counters follow.
    pub fn plan(&self) -> &StatPlan {
        &self.plan
    }

    /// Per planned event: counted, or why not.
    pub fn status(&self) -> &[EventStatus] {
        &self.status
    }

    /// CPUs with live counters.
    pub fn cpus(&self) -> Vec<u32> {
        self.live.keys().copied().collect()
    }

    /// Log lines gathered since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Re-read the online list and follow it; returns what changed.
    pub fn sync(&mut self) -> std::io::Result<Change> {
        let online = read_online(&self.online_file)?;
        Ok(self.sync_to(&online))
    }

    /// Open counters on CPUs of `online` that have none, close those of
    /// CPUs not in it (keeping what they counted).
    pub fn sync_to(&mut self, online: &[u32]) -> Change {
        let want: BTreeSet<u32> = online.iter().copied().collect();
        let mut change = Change::default();
        let gone: Vec<u32> = self
            .live
            .keys()
            .copied()
            .filter(|c| !want.contains(c))
            .collect();
        for cpu in gone {
            // One last read, then what it counted becomes the base.
            let _ = self.read_cpu(cpu);
            self.live.remove(&cpu);
            let keys: Vec<Key> = self
                .last
                .range((cpu, 0)..(cpu + 1, 0))
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                if let Some(c) = self.last.remove(&k) {
                    let b = self.base.entry(k).or_default();
                    b.value = b.value.wrapping_add(c.value);
                    b.enabled += c.enabled;
                    b.running += c.running;
                }
            }
            change.removed.push(cpu);
        }
        for &cpu in &want {
            if self.live.contains_key(&cpu) {
                continue;
            }
            let counters = self.open_cpu(cpu);
            self.live.insert(cpu, counters);
            change.added.push(cpu);
        }
        change
    }

    fn open_cpu(&mut self, cpu: u32) -> CpuCounters {
        let mut groups = Vec::new();
        let planned: Vec<Vec<usize>> = (self.plan.groups.iter())
            .map(|g| g.members.clone())
            .collect();
        for members in planned {
            let members: Vec<usize> = (members.into_iter())
                .filter(|&i| self.plan.events[i].attr.is_ok())
                .filter(|&i| !matches!(self.status[i], EventStatus::NotSupported(_)))
                .collect();
            // A PMU of numbered boxes (uncore_imc_0 …): the group on each
            // box, the boxes' counts summed when read.
            let boxes = members.iter().map(|&m| self.plan.events[m].box_count());
            for b in 0..boxes.max().unwrap_or(0) {
                if let Some(g) = self.open_group(cpu, &members, b) {
                    groups.push(g);
                }
            }
        }
        CpuCounters { groups }
    }

    /// Open `members` of one group on box `b` of their PMU (0: the PMU of
    /// their attr) on `cpu`, unless the box counts on other CPUs.
    fn open_group(&mut self, cpu: u32, members: &[usize], b: usize) -> Option<OpenGroup> {
        let members: Vec<usize> = (members.iter().copied())
            .filter(|&m| self.plan.events[m].on_box(b).is_some())
            .collect();
        let (_, own_cpus) = self.plan.events[*members.first()?].on_box(b)?;
        // Events with their own CPU list (uncore) count only there.
        if own_cpus.is_some_and(|list| !list.contains(&cpu)) {
            return None;
        }
        let grouped = members.len() > 1;
        let mut counters: Vec<(usize, Counter)> = Vec::new();
        for &ei in &members {
            let (mut attr, _) = self.plan.events[ei].on_box(b)?;
            attr.inherit = false;
            attr.enable_on_exec = false;
            let leader = counters.first().map(|(_, c)| c);
            if leader.is_none() {
                attr.disabled = true;
                if grouped {
                    attr.read_format |= pmx_perf::read_format::GROUP;
                }
            } else {
                attr.disabled = false;
            }
            match Counter::open(
                &attr,
                Target {
                    pid: -1,
                    cpu: cpu as i32,
                },
                leader,
            ) {
                Ok(c) => {
                    counters.push((ei, c));
                    self.status[ei] = EventStatus::Counted;
                }
                Err(e) => {
                    let first = self.open_logged.insert(ei);
                    let name = &self.plan.events[ei].name;
                    if e.cause.is_unsupported_event() {
                        if self.status[ei] != EventStatus::Counted {
                            self.status[ei] = EventStatus::NotSupported(open_reason(&e));
                        }
                        if first {
                            self.log.push(format!("{name}: not supported: {e}"));
                        }
                    } else {
                        if self.status[ei] != EventStatus::Counted {
                            self.status[ei] = EventStatus::NotCounted(open_reason(&e));
                        }
                        if first {
                            self.log
                                .push(format!("{name}: cannot open on CPU {cpu}: {e}"));
                        }
                    }
                }
            }
        }
        if counters.is_empty() {
            return None;
        }
        if let Err(e) = counters[0].1.enable(true) {
            self.log
                .push(format!("CPU {cpu}: cannot enable a group: {e}"));
            return None;
        }
        let grouped = grouped && counters[0].1.read_format() & pmx_perf::read_format::GROUP != 0;
        let by_id = counters
            .iter()
            .enumerate()
            .map(|(k, (_, c))| (c.id(), k))
            .collect();
        Some(OpenGroup {
            counters,
            grouped,
            by_id,
        })
    }

    /// Read one CPU's counters into `last`; returns how many failed.
    fn read_cpu(&mut self, cpu: u32) -> usize {
        let Some(cc) = self.live.get(&cpu) else {
            return 0;
        };
        let mut errors = 0;
        let mut failed: Vec<(usize, String)> = Vec::new();
        // This read's counts, the boxes of an event summed.
        let mut fresh: BTreeMap<Key, Count> = BTreeMap::new();
        let mut add = |k: Key, c: Count| {
            let e = fresh.entry(k).or_default();
            e.value = e.value.wrapping_add(c.value);
            e.enabled += c.enabled;
            e.running += c.running;
        };
        for g in &cc.groups {
            if g.grouped {
                match g.counters[0].1.read_group() {
                    Ok(entries) => {
                        for (id, count) in entries {
                            if let Some(&k) = g.by_id.get(&id) {
                                add((cpu, g.counters[k].0), count);
                            }
                        }
                    }
                    Err(e) => {
                        errors += g.counters.len();
                        failed.extend(g.counters.iter().map(|(ei, _)| (*ei, e.to_string())));
                    }
                }
            } else {
                for (ei, c) in &g.counters {
                    match c.read() {
                        Ok(count) => add((cpu, *ei), count),
                        Err(e) => {
                            errors += 1;
                            failed.push((*ei, e.to_string()));
                        }
                    }
                }
            }
        }
        // An event with a box that could not be read keeps its last value.
        for (k, c) in fresh {
            if !failed.iter().any(|(ei, _)| *ei == k.1) {
                self.last.insert(k, c);
            }
        }
        for (ei, why) in failed {
            if self.read_error_logged.insert((cpu, ei)) {
                self.log.push(format!(
                    "{} on CPU {cpu}: read failed (keeping the last value): {why}",
                    self.plan.events[ei].name
                ));
            }
        }
        errors
    }

    /// Read every live counter: a few `read(2)` calls per CPU, nothing is
    /// reprogrammed.
    pub fn read(&mut self) -> Snapshot {
        let cpus: Vec<u32> = self.live.keys().copied().collect();
        let mut read_errors = 0;
        for &cpu in &cpus {
            read_errors += self.read_cpu(cpu);
        }
        let mut counts = self.base.clone();
        for (k, c) in &self.last {
            let e = counts.entry(*k).or_default();
            e.value = e.value.wrapping_add(c.value);
            e.enabled += c.enabled;
            e.running += c.running;
        }
        Snapshot {
            at: Some(Instant::now()),
            counts,
            online: cpus.into_iter().collect(),
            read_errors,
        }
    }
}

impl Snapshot {
    /// The change from `earlier` to `self` per counter (a counter that was
    /// not in `earlier` counts from zero).
    pub fn delta_since(&self, earlier: &Snapshot) -> BTreeMap<Key, Count> {
        self.counts
            .iter()
            .map(|(k, c)| {
                let d = match earlier.counts.get(k) {
                    Some(p) => c.delta_since(p),
                    None => *c,
                };
                (*k, d)
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pmx_count::schedule::Need;
    use pmx_count::stat::{PlanGroup, PlannedEvent};
    use pmx_perf::Attr;

    fn event(name: &str, attr: Result<Attr, String>, group: usize) -> PlannedEvent {
        PlannedEvent {
            name: name.to_string(),
            group,
            attr,
            cpus: None,
            unit: None,
            scale: 1.0,
            source: None,
            need: Need::None,
            cgroup: None,
            settings: Default::default(),
            boxes: Vec::new(),
            origin: None,
        }
    }

    /// page-faults and task-clock in one group, plus an event that cannot
    /// be counted.
    pub(crate) fn software_plan() -> StatPlan {
        let sw = |config| {
            Ok(Attr {
                type_: 1,
                config,
                ..Attr::default()
            })
        };
        StatPlan {
            events: vec![
                event("page-faults", sw(2), 0),
                event("task-clock", sw(1), 0),
                event("nothing", Err("made up for the test".into()), 1),
            ],
            groups: vec![
                PlanGroup {
                    members: vec![0, 1],
                    explicit: true,
                },
                PlanGroup {
                    members: vec![2],
                    explicit: false,
                },
            ],
        }
    }

    fn touch(pages: usize) {
        let mut v = vec![0u8; pages * 4096];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
    }

    #[test]
    fn counts_follow_the_online_list_and_never_go_down() {
        let dir = std::env::temp_dir().join(format!("pmx-serve-online-{}", std::process::id()));
        std::fs::write(&dir, "0\n").unwrap();
        let mut c = Collector::open(software_plan(), &dir).unwrap();
        let log = c.take_log();
        assert!(
            log.iter().any(|l| l.contains("nothing: not supported")),
            "{log:?}"
        );
        assert_eq!(c.status()[0], EventStatus::Counted);
        assert!(matches!(c.status()[2], EventStatus::NotSupported(_)));
        assert_eq!(c.cpus(), vec![0]);
        let a = c.read();
        touch(64);
        let b = c.read();
        assert_eq!(b.read_errors, 0);
        let clock = |s: &Snapshot| s.counts[&(0, 1)];
        assert!(
            clock(&b).value > clock(&a).value,
            "task-clock of CPU 0 grows"
        );
        assert!(!b.counts.contains_key(&(0, 2)));
        // CPU 0 goes away: its counts stay, it is no longer online.
        assert_eq!(
            c.sync_to(&[]),
            Change {
                added: vec![],
                removed: vec![0]
            }
        );
        let off = c.read();
        assert!(off.online.is_empty());
        assert!(clock(&off).value >= clock(&b).value);
        // Back: the series goes on from where it stopped.
        std::fs::write(&dir, "0\n").unwrap();
        assert_eq!(c.sync().unwrap().added, vec![0]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let back = c.read();
        assert!(clock(&back).value > clock(&off).value);
        let d = back.delta_since(&off);
        assert!(d[&(0, 1)].value > 0 && d[&(0, 1)].value < clock(&back).value);
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn a_bad_online_list_is_an_error() {
        let dir = std::env::temp_dir().join(format!("pmx-serve-bad-online-{}", std::process::id()));
        std::fs::write(&dir, "zero\n").unwrap();
        assert!(Collector::open(software_plan(), &dir).is_err());
        let _ = std::fs::remove_file(&dir);
        assert!(Collector::open(software_plan(), Path::new("/nonexistent/online")).is_err());
    }
}
