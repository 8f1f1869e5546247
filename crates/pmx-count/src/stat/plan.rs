//! Plan: the `-e` groups resolved through the event database to perf
//! attrs (or to the reason an event cannot be counted here), in groups.
//!
//! An event of a PMU the kernel registers only as numbered boxes
//! (`uncore_imc/cas_count_read/`, a table's `UNC_M_CAS_COUNT.RD` where
//! sysfs has `uncore_imc_0` … `uncore_imc_5`) is one planned event with
//! its [`PmuBox`]es: opened on every box, the boxes' counts summed into
//! its row, as perf merges them. [`StatPlan::split_boxes`] (`--no-merge`)
//! makes each box an event of its own, named as perf names it.

use crate::eventlist::EventGroup;
use crate::schedule::Need;
use pmx_events::{Database, Resolved, SourceKind};
use pmx_model::spec::{Body, EventSpec, Modifiers, Settings};
use pmx_perf::Attr;
use serde::Serialize;

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
    /// Count only in this cgroup (`-G`, `--for-each-cgroup`): its path
    /// under the cgroup v2 mount, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// The spec's setting terms (`name=`, `period=`, `no-inherit` …): a
    /// counting run uses `inherit`; the sampling ones are record's.
    #[serde(skip)]
    pub settings: Settings,
    /// The numbered boxes the event is opened on, first box first (`attr`
    /// and `cpus` are the first's); empty: `attr` alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PmuBox>,
    /// After [`StatPlan::split_boxes`]: the event this one is a box of
    /// (its name before the split) and the box's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<(String, usize)>,
}

/// One box of a PMU the kernel registers only as numbered boxes
/// (`uncore_imc_3`): what its attr has of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuBox {
    /// The box's PMU (`uncore_imc_3`).
    pub pmu: String,
    /// Its `attr.type`.
    #[serde(rename = "type")]
    pub type_: u32,
    /// `config`, `config1`, `config2` as placed by its format.
    pub config: [u64; 3],
    /// Its `cpumask`, when it has one.
    pub cpus: Option<Vec<u32>>,
}

impl PlannedEvent {
    /// How many places the event opens on per CPU or task: its boxes, or 1.
    pub fn box_count(&self) -> usize {
        self.boxes.len().max(1)
    }

    /// The attr and CPU list of box `b` (`b` 0 without boxes); `None`
    /// past the last box or when the event has no attr.
    pub fn on_box(&self, b: usize) -> Option<(Attr, Option<&[u32]>)> {
        let attr = self.attr.as_ref().ok()?;
        if self.boxes.is_empty() {
            return (b == 0).then(|| (attr.clone(), self.cpus.as_deref()));
        }
        let x = self.boxes.get(b)?;
        let mut a = attr.clone();
        a.type_ = x.type_;
        [a.config, a.config1, a.config2] = x.config;
        Some((a, x.cpus.as_deref()))
    }

    /// The name of box `b` of this event as perf names it with
    /// `--no-merge`: `uncore_imc_3/cas_count_read/` for a spec with a
    /// PMU, `UNC_M_CAS_COUNT.RD [uncore_imc_3]` for a name alone, the
    /// `name=` given unchanged.
    pub fn box_name(&self, b: usize) -> String {
        let Some(x) = self.boxes.get(b) else {
            return self.name.clone();
        };
        if self.settings.name.is_some() {
            return self.name.clone();
        }
        match self.name.find('/') {
            Some(at) => format!("{}{}", x.pmu, &self.name[at..]),
            None => format!("{} [{}]", self.name, x.pmu),
        }
    }
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

impl StatPlan {
    /// `--no-merge`: each event with boxes becomes one event per box,
    /// named as perf names it ([`PlannedEvent::box_name`]), in box order
    /// where the event was; a group with such events becomes one group
    /// per box (an event without boxes stays in the first).
    pub fn split_boxes(&mut self) {
        if self.events.iter().all(|e| e.boxes.is_empty()) {
            return;
        }
        let (mut events, mut groups) = (Vec::new(), Vec::new());
        for g in &self.groups {
            let n = g.members.iter().map(|&m| self.events[m].box_count());
            for b in 0..n.max().unwrap_or(1) {
                let mut members = Vec::new();
                for &m in &g.members {
                    let e = &self.events[m];
                    let Some((attr, cpus)) = e.on_box(b) else {
                        if b == 0 {
                            // No attr: kept once, with its reason.
                            members.push(events.len());
                            events.push(PlannedEvent {
                                group: groups.len(),
                                ..e.clone()
                            });
                        }
                        continue;
                    };
                    members.push(events.len());
                    events.push(PlannedEvent {
                        name: e.box_name(b),
                        group: groups.len(),
                        attr: Ok(attr),
                        cpus: cpus.map(<[u32]>::to_vec),
                        boxes: Vec::new(),
                        origin: (!e.boxes.is_empty()).then(|| (e.name.clone(), b)),
                        ..e.clone()
                    });
                }
                if !members.is_empty() {
                    groups.push(PlanGroup {
                        members,
                        explicit: g.explicit,
                    });
                }
            }
        }
        (self.events, self.groups) = (events, groups);
    }
}

/// Resolve the `-e` groups against the database. An event with no attr
/// here, or a metric's input the database cannot resolve
/// ([`EventGroup::unsupported`]), is planned as "not supported" with the
/// reason, so the run goes on; a name the database does not know is the
/// error.
pub fn plan(groups: &[EventGroup], db: &Database) -> Result<StatPlan, pmx_model::spec::SpecError> {
    let mut events = Vec::new();
    let mut out_groups = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let mut members = Vec::new();
        for (mi, spec) in g.members.iter().enumerate() {
            let mut ev = match &g.unsupported {
                Some(why) => unsupported(spec, why, gi)?,
                None => plan_one(spec, db, gi)?,
            };
            // Only a group's leader is pinned or exclusive (the kernel
            // refuses the flags on members; perf clears them too).
            if let (true, Ok(a)) = (mi > 0 && g.explicit, &mut ev.attr) {
                a.pinned = false;
                a.exclusive = false;
            }
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

/// A metric's input the database cannot resolve, planned as not
/// supported for `why` ([`EventGroup::unsupported`]).
fn unsupported(
    spec: &EventSpec,
    why: &str,
    group: usize,
) -> Result<PlannedEvent, pmx_model::spec::SpecError> {
    let settings = spec.settings()?;
    Ok(PlannedEvent {
        name: settings.name.clone().unwrap_or_else(|| spec.text.clone()),
        group,
        attr: Err(why.to_string()),
        cpus: None,
        unit: None,
        scale: 1.0,
        source: None,
        need: Need::None,
        cgroup: None,
        settings,
        boxes: Vec::new(),
        origin: None,
    })
}

fn plan_one(
    spec: &EventSpec,
    db: &Database,
    group: usize,
) -> Result<PlannedEvent, pmx_model::spec::SpecError> {
    let settings = spec.settings()?;
    let mut ev = PlannedEvent {
        // `name=` names the counter in every output (perf's evsel name).
        name: settings.name.clone().unwrap_or_else(|| spec.text.clone()),
        group,
        attr: Err(String::new()),
        cpus: None,
        unit: None,
        scale: 1.0,
        source: None,
        need: Need::None,
        cgroup: None,
        settings,
        boxes: Vec::new(),
        origin: None,
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
        apply_modifiers(&mut a, &spec.modifiers);
        ev.attr = Ok(a);
        return Ok(ev);
    }
    if let Some(boxes) = db.resolve_boxes(spec)? {
        return Ok(on_boxes(ev, &boxes, db));
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
                        apply_modifiers(&mut a, &spec.modifiers);
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
    // A counting attr, as perf stat makes it: `period=` is kept in the
    // settings for record, not in the attr.
    if let Ok(a) = &mut ev.attr {
        a.sample = None;
    }
    ev.need = need_of(&resolved, db);
    Ok(ev)
}

/// `ev` planned on every box it resolved on (`boxes`, at least one): the
/// first box's attr, unit and scale, each box's own type, config and CPUs.
fn on_boxes(mut ev: PlannedEvent, boxes: &[Resolved], db: &Database) -> PlannedEvent {
    for (k, r) in boxes.iter().enumerate() {
        let mut one = ev.clone();
        apply_resolved(&mut one, r, db);
        if let Ok(a) = &mut one.attr {
            a.sample = None;
        }
        if k == 0 {
            ev.source = Some(r.source);
            ev.need = need_of(r, db);
            (ev.attr, ev.cpus, ev.unit, ev.scale) =
                (one.attr.clone(), one.cpus.clone(), one.unit, one.scale);
        }
        match one.attr {
            Ok(a) => ev.boxes.push(PmuBox {
                pmu: r.attr.pmu.clone(),
                type_: a.type_,
                config: [a.config, a.config1, a.config2],
                cpus: one.cpus,
            }),
            // A box without a type: the event is not countable as a whole.
            Err(why) => {
                ev.attr = Err(format!("{}: {why}", r.attr.pmu));
                ev.boxes.clear();
                return ev;
            }
        }
    }
    ev
}

/// The modifiers of an event the database does not resolve (breakpoints,
/// tracepoints), as [`pmx_model::PerfAttr::apply_modifiers`] applies them.
fn apply_modifiers(a: &mut Attr, m: &Modifiers) {
    a.exclude_user = m.exclude_user();
    a.exclude_kernel = m.exclude_kernel();
    a.exclude_hv = m.exclude_hv();
    a.exclude_guest = m.exclude_guest();
    a.exclude_host = m.exclude_host();
    a.exclude_idle = m.exclude_idle;
    a.pinned = m.pinned;
    a.exclusive = m.exclusive;
    a.precise_ip = m.precise;
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

fn apply_resolved(ev: &mut PlannedEvent, r: &Resolved, db: &Database) {
    let a = &r.attr;
    if a.type_ == Some(pmx_events::perf_type::SOFTWARE) && (a.config == 0 || a.config == 1) {
        ev.unit = Some("msec".to_string());
        ev.scale = 1e-6;
    }
    let mut attr = a.clone();
    // The kernel's generic PMUs (types 0–5 under their own names) have
    // no cpumask that applies: no need to read sysfs for them. A PMU of
    // another name is asked, whatever its type (perf reads its cpumask).
    let generic = a.type_.is_some_and(|t| t <= 5)
        && matches!(
            a.pmu.as_str(),
            "" | "cpu" | "software" | "tracepoint" | "breakpoint"
        );
    if let Some(sys) = db.sysfs().filter(|_| !generic) {
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
    // pmx-sys mounts tracefs, as perf does, where it is mounted nowhere.
    let p = (pmx_sys::tracefs::root()?)
        .join("events")
        .join(system)
        .join(name)
        .join("id");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}
