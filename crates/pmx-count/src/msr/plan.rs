//! `pmx msr plan`: the writes `pmx stat --backend msr` would make for a
//! list of events, with the registers' current values where readable, and
//! none made.

use super::access::{msr_root, sys_root, topology};
use super::error::MsrCommandError;
use crate::stat_msr::{msr_event, pmu_counters};
use pmx_events::{Database, Target};
use pmx_model::encoding::Arch;
use pmx_model::spec::EventSpec;
use pmx_model::topology::parse_cpu_list;
use pmx_msr::{plan as plan_writes, Mode, MsrDevice, MsrEvent, Plan};
use std::path::PathBuf;

/// What to plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The events (from [`event_specs`]).
    pub specs: Vec<EventSpec>,
    /// CPUs in the kernel's list syntax; `None`: every online CPU.
    pub cpus: Option<String>,
    /// Where to read the current values (reads only).
    pub msr_root: PathBuf,
    /// Root holding `sys/` instead of `/` (tests).
    pub sysfs_root: Option<PathBuf>,
}

/// The answer of [`plan`].
#[derive(Debug)]
pub struct PlanReport {
    /// The CPU planned for (`vendor-family-model`).
    pub cpu: String,
    /// The writes, with old values filled in where they could be read.
    pub plan: Plan,
    /// The events as encoded (their notes).
    pub events: Vec<MsrEvent>,
    /// Why the old values are unknown, when they are.
    pub old_values_unknown: Option<String>,
}

/// The events of `-e` lists, groups flattened.
pub fn event_specs(lists: &[String]) -> Result<Vec<EventSpec>, MsrCommandError> {
    let mut specs = Vec::new();
    for list in lists {
        for g in crate::parse_event_list(list).map_err(|e| MsrCommandError::Usage(e.to_string()))? {
            specs.extend(g.members);
        }
    }
    Ok(specs)
}

/// The register set of `target`: only Intel and AMD are programmed.
pub fn msr_arch(target: &Target) -> Result<Arch, MsrCommandError> {
    target.arch().ok_or_else(|| {
        MsrCommandError::Usage(format!(
            "{} is not an x86 CPU: the msr backend programs Intel and AMD PMUs",
            target.cpu
        ))
    })
}

/// Plan the events for `target` (of register set `arch`) with `db`.
pub fn plan(
    opts: &PlanOptions,
    target: &Target,
    arch: Arch,
    db: &Database,
) -> Result<PlanReport, MsrCommandError> {
    let usage = |e: &dyn std::fmt::Display| MsrCommandError::Usage(e.to_string());
    let events = opts
        .specs
        .iter()
        .map(|s| msr_event(db, s, arch).map_err(|e| usage(&e)))
        .collect::<Result<Vec<_>, _>>()?;
    let pmu = pmu_counters(target, arch);
    let topo = topology(&sys_root(&opts.sysfs_root));
    let cpus = match &opts.cpus {
        Some(text) => {
            let c = parse_cpu_list(text)
                .map_err(|e| MsrCommandError::Usage(format!("-c {text}: {e}")))?;
            if c.is_empty() {
                return Err(MsrCommandError::Usage(format!("-c {text:?}: no CPU")));
            }
            c
        }
        None => {
            let online = topo.online_cpus();
            if online.is_empty() {
                vec![0]
            } else {
                online
            }
        }
    };
    let mut p = plan_writes(&events, &cpus, &pmu, &topo).map_err(|e| usage(&e))?;
    let root = msr_root(&opts.msr_root, &opts.sysfs_root);
    let old_values_unknown = match MsrDevice::open(&root, &p.cpus_touched(), Mode::Read) {
        Ok(dev) => {
            p.fill_old(&dev);
            None
        }
        Err(e) => Some(e.to_string()),
    };
    Ok(PlanReport {
        cpu: target.cpu.to_string(),
        plan: p,
        events,
        old_values_unknown,
    })
}
