//! `pmx stat --backend msr`: counting by programming the PMU through the
//! msr devices (`/dev/cpu/N/msr`) instead of `perf_event_open`.
//!
//! The backend is the library's ([`pmx::stat_msr`]: resolving the events
//! to register encodings, the "counters in use" checks, `--force`, the
//! held command, the read loop, energy, restoring every register). This
//! module checks the flags, selects the CPUs and makes the stat
//! [`Session`] over [`MsrBackend`]; `stat.rs` counts and renders it as it
//! does perf's (`stat_render.rs`, `pmx_output::stat_render`: table, CSV,
//! JSON, intervals, `--plot`, `-M`): the backend's [`pmx::stat::StatRun`]
//! has the same shape, one `Count { value: delta, enabled: ns, running:
//! ns }` per counter per CPU.

use crate::stat_args::{usage, StatArgs};
use crate::stat_render::{Prepared, StatView};
use pmx::stat::{RunOptions, Scope, Session, SessionOptions};
use pmx::stat_msr::DEFAULT_EVENTS;
use pmx::stat_msr::{msr_root, pmu_counters, Error, MsrBackend, MsrEvents};
use pmx_sys::SysRoot;

/// The session's error as the CLI reports it: events and plans are bad
/// input.
fn session_error(e: Error) -> anyhow::Error {
    match e.is_bad_input() {
        true => usage(e.message()),
        false => anyhow::anyhow!(e.message()),
    }
}

/// `pmx stat --backend msr`'s session: the flags checked, the events
/// resolved and planned onto the selected CPUs' counters, the session over
/// [`MsrBackend`] (`stat.rs` counts and renders it, as perf's).
pub fn session(args: &StatArgs, view: &StatView) -> anyhow::Result<Prepared> {
    let (tasks, cpus) = (
        args.pid.is_some() || args.tid.is_some(),
        args.all_cpus || args.cpus.is_some(),
    );
    if let Some(why) = pmx::stat_msr::refused_flags(tasks, args.per_thread, args.repeat, cpus) {
        return Err(usage(why));
    }
    let duration = crate::target::duration(args.duration)?;
    let interval = args.interval()?;
    let (groups, metrics, db) = args.event_groups(|| DEFAULT_EVENTS.into())?;
    let target = args.db.target()?;
    let arch = pmx::msr::msr_arch(&target).map_err(|e| usage(e.to_string()))?;
    let db = match db {
        Some(db) => Some(db),
        None if pmx::stat_msr::needs_database(&groups) => Some(args.db.load()?),
        None => None,
    };
    let events = MsrEvents::resolve(&groups, db.as_ref(), arch).map_err(session_error)?;
    let sysfs_root = args.db.sysfs_root.as_deref();
    let sys = sysfs_root.map(SysRoot::new).unwrap_or_default();
    let topo = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
    let root = msr_root(args.msr_root.as_deref(), sysfs_root);
    let cpus = pmx::msr::select_cpus(args.cpus.as_deref(), "-C", &topo, &root);
    let cpus = cpus.map_err(|e| usage(e.to_string()))?;
    let pmu = pmu_counters(&target, arch);
    let stat = events.plan(&cpus, &pmu, &topo).map_err(session_error)?;
    let pin = match &args.pin {
        Some(p) => pmx_args::stat_flags::cpu_list("--pin", p).map_err(|e| usage(e.0))?,
        None => cpus.clone(),
    };
    let mut run = RunOptions::for_command(args.command.clone());
    run.scope = Scope::Cpus(cpus);
    (run.pin, run.duration, run.interval) = (Some(pin), duration, interval);
    run.interval_count = args.interval_count;
    run.spawn = pmx::launch::Spawn::for_preload(std::env::var_os("LD_PRELOAD").as_deref());
    let backend = MsrBackend::new(stat, root, sys, args.force);
    let options = SessionOptions {
        run,
        aggregation: view.how,
        repeat: args.repeat,
        no_multiplex: false,
        budget: None,
        topology: Some(topo),
        signals: true,
    };
    let session = Session::with_backend(Box::new(backend), options);
    Ok(Prepared {
        session,
        metrics,
        perf: false,
    })
}
