//! One kernel run counted through the msr backend
//! ([`pmx_count::stat_msr::MsrBackend`]), as `pmx stat --backend msr -C
//! CPU` would: the events resolved to register encodings for the target
//! CPU, planned onto one CPU's counters, the kernel pinned there. The
//! devices are `ROOT/dev/cpu/N/msr` (or `cpuN/msr`, a fixture's), the
//! topology and the "counters in use" checks read under `ROOT`.

use super::count::{self, Run, Where};
use pmx_count::database::Database;
use pmx_count::stat::{Aggregation, RunOptions, Scope, Session, SessionOptions};
use pmx_count::stat_msr::{default_cpus, msr_root, pmu_counters, MsrBackend, MsrEvents, MsrRoot};
use pmx_sys::SysRoot;
use std::path::Path;

/// The msr devices under `root` (`/`: the host's `/dev/cpu`).
pub fn devices(root: &Path) -> MsrRoot {
    msr_root(Some(&root.join("dev/cpu")), Some(root))
}

/// No device for the first CPU under `root`: the msr driver is not
/// loaded (or this is not x86).
pub fn missing(root: &Path) -> bool {
    let dir = root.join("dev/cpu");
    !dir.join("0/msr").exists() && !dir.join("cpu0/msr").exists()
}

/// Count `events` while `argv` runs pinned to one CPU (the row's own, or
/// the first online one), through the devices under `root`. An event the
/// backend cannot program, and a session that cannot start (counters in
/// use, the NMI watchdog, a device that cannot be opened), is every
/// event's reason, not an error.
pub fn run(
    events: &[String],
    argv: &[String],
    at: &Where,
    root: &Path,
    db: &Database,
) -> Result<Run, String> {
    let mut groups = Vec::new();
    for e in events {
        groups.extend(pmx_count::parse_event_list(e).map_err(|err| err.to_string())?);
    }
    let arch = pmx_count::msr::msr_arch(&db.target).map_err(|e| e.to_string())?;
    let resolved = match MsrEvents::resolve(&groups, Some(db), arch) {
        Ok(r) => r,
        Err(e) => return Ok(count::none(events.len(), &e.message())),
    };
    if resolved.plan.events.len() != events.len() {
        return Err(format!(
            "'{}' does not name one event each",
            events.join(",")
        ));
    }
    let sys = SysRoot::new(root);
    let topology = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
    let devices = devices(root);
    let cpu = match at.pin.as_ref().and_then(|p| p.first()) {
        Some(c) => *c,
        None => default_cpus(&topology, &devices)[0],
    };
    let pmu = pmu_counters(&db.target, arch);
    let stat = match resolved.plan(&[cpu], &pmu, &topology) {
        Ok(s) => s,
        Err(e) => return Ok(count::none(events.len(), &e.message())),
    };
    let mut run = RunOptions::for_command(argv.to_vec());
    (run.scope, run.pin) = (Scope::Cpus(vec![cpu]), Some(vec![cpu]));
    let opts = SessionOptions {
        run,
        aggregation: Aggregation::Total,
        repeat: 1,
        no_multiplex: false,
        budget: None,
        topology: Some(topology),
        signals: true,
    };
    let backend = MsrBackend::new(stat, devices, sys, false);
    count::counted(Session::with_backend(Box::new(backend), opts), events.len())
}
