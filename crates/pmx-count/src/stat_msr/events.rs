//! Events: an `-e` spec resolved to a register encoding
//! ([`msr_event`]), the PMU's counters, the default CPUs, package energy.

use crate::eventlist::EventGroup;
use crate::schedule::Need;
use crate::stat::PlannedEvent;
use pmx_events::{Counters, Database, SourceKind};
use pmx_model::encoding::{encode_spec, Arch, EncodeOptions, Encoded};
use pmx_model::spec::{Body, EventSpec, SpecError};
use pmx_model::topology::Topology;
use pmx_msr::{
    generic_cache_event, generic_hardware_event, CacheGap, MsrEvent, MsrRoot, PmuCounters,
};
use pmx_sys::{NativeCpuid, PmuCaps};

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
    /// A generic cache event the kernel's table for this CPU does not
    /// give as one event select (no table, not counted, or an
    /// `OFFCORE_RESPONSE` event with its extra register).
    NoCacheEncoding {
        /// The spec as typed.
        event: String,
        /// The event's name in the database.
        name: String,
        /// The CPU.
        cpu: String,
        /// Why.
        gap: CacheGap,
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
            MsrEventError::NoCacheEncoding { name, cpu, gap, .. } => match gap {
                CacheGap::NoTable => format!("pmx has no copy of the kernel's cache-event table for {cpu}, so the msr backend cannot encode '{name}'"),
                CacheGap::NotCounted => format!("the kernel's cache-event table for {cpu} does not count '{name}'"),
                CacheGap::Offcore(select) => format!("the kernel counts '{name}' on {cpu} as OFFCORE_RESPONSE (event select {select:#x}) with an extra register (MSR_OFFCORE_RSP_x) the msr backend does not program"),
            },
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
            | MsrEventError::NoCacheEncoding { event, .. }
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
/// Intel), its cache events through [`generic_cache_event`] (the table
/// of the database's CPU model), client-uncore terms through the register model, the counter
/// constraint from the event's definition. Anything the kernel counts
/// (software events, tracepoints) is an error. The one resolver of
/// `pmx stat --backend msr`, `pmx msr plan` and `pmx::Backend::Msr`.
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
        (None, Some(def))
            if def.source == SourceKind::Kernel
                && def.perf_type == Some(pmx_events::perf_type::HW_CACHE) =>
        {
            generic_cache_event(&db.target.cpu, def.config, &r.attr).map_err(|gap| {
                MsrEventError::NoCacheEncoding {
                    event: text.clone(),
                    name: def.name.clone(),
                    cpu: db.target.cpu.to_string(),
                    gap,
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
            let mut p = PmuCounters::assumed_for(arch, &target.cpu);
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
pub(super) enum Source {
    /// A PMU counter: index into the msr events (and the plan's events).
    Counter(usize),
    /// The package energy counter.
    Energy,
    /// Package power: the energy counter over each interval's length.
    Power,
}

pub(super) fn stat_event(name: &str, group: usize, unit: Option<&str>) -> PlannedEvent {
    PlannedEvent {
        name: name.to_string(),
        group,
        attr: Err("counted through the msr device, not perf".to_string()),
        cpus: None,
        unit: unit.map(str::to_string),
        scale: 1.0,
        source: None,
        need: Need::None,
        cgroup: None,
        settings: Default::default(),
        boxes: Vec::new(),
        origin: None,
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
}
