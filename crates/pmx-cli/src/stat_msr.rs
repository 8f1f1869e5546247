//! `pmx stat --backend msr`: counting by programming the PMU through the
//! msr devices (`/dev/cpu/N/msr`) instead of `perf_event_open`.
//!
//! The session is the library's ([`pmx::stat_msr`]: resolving the events
//! to register encodings, the "counters in use" checks, `--force`, the
//! held command, the read loop, energy, restoring every register). This
//! module checks the flags, selects the CPUs, turns the flags into
//! [`MsrRunOptions`], and renders what the session gives back with the
//! perf backend's renderers (`stat_render.rs`, `pmx_output::stat_render`:
//! table, CSV, JSON, intervals, `--plot`, `-M`): the session's [`pmx::stat::StatRun`] has
//! the same shape, one `Count { value: delta, enabled: ns, running: ns }`
//! per counter per CPU.

use crate::stat_args::{usage, StatArgs};
use crate::stat_render;
use pmx::stat::Scope;
use pmx::stat_msr::DEFAULT_EVENTS;
use pmx::stat_msr::{device_message, msr_root, pmu_counters, Error, MsrEvents, MsrRunOptions};
use pmx_output::stat_render::compose;
use pmx_sys::SysRoot;

/// The session's error as the CLI reports it: events and plans are bad
/// input.
fn session_error(e: Error) -> anyhow::Error {
    match e.is_bad_input() {
        true => usage(e.message()),
        false => anyhow::anyhow!(e.message()),
    }
}

/// Run `pmx stat --backend msr`.
pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let (tasks, cpus) = (
        args.pid.is_some() || args.tid.is_some(),
        args.all_cpus || args.cpus.is_some(),
    );
    if let Some(why) = pmx::stat_msr::refused_flags(tasks, args.per_thread, args.repeat, cpus) {
        return Err(usage(why));
    }
    let duration = crate::target::duration(args.duration)?;
    let interval = args.interval()?;
    let how = args.aggregation();
    let plot = args.plot()?;
    let (groups, metrics, db) = args.event_groups(DEFAULT_EVENTS)?;
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
    let mut stat = events.plan(&cpus, &pmu, &topo).map_err(session_error)?;
    let pin = match &args.pin {
        Some(p) => pmx_args::stat_flags::cpu_list("--pin", p).map_err(|e| usage(e.0))?,
        None => cpus.clone(),
    };
    // The output first: a bad -o path fails before any register changes.
    let mut out = args.output(false)?;
    let options = MsrRunOptions {
        root,
        sys,
        force: args.force,
        command: args.command.clone(),
        pin: Some(pin),
        duration,
        interval,
        interval_count: args.interval_count,
    };
    let running = stat.start(&options).map_err(session_error)?;
    let plan = &stat.plan;
    let m = metrics.as_ref();
    let mut intervals = stat_render::intervals(&mut out, args, Some(&topo), m, plot.is_some())?;
    let result = running.run(&mut |t| intervals.write(plan, t));
    let end = intervals.finish();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(Error::Exec { cmd, reason }) => {
            eprintln!("pmx stat: cannot run '{cmd}': {reason}");
            return Ok(127);
        }
        Err(e) => return Err(session_error(e)),
    };
    let exit = outcome.run.exit;
    let runs = [outcome.run];
    let summary = pmx::stat::summarize(plan, &runs, how, Some(&topo), args.repeat);
    let target = Scope::Cpus(cpus).describe(&args.command);
    let report = compose(target, plan, summary, m, outcome.notes);
    stat_render::totals(&mut out, args, &report, end.error, (false, &[]))?;
    out.commit()?;
    if let Some(e) = outcome.restore_error {
        let e = device_message(&e);
        anyhow::bail!("putting the PMU registers back: {e}");
    }
    stat_render::draw(&plot, end.plot)?;
    Ok(exit.map(|e| e.shell_code()).unwrap_or(0))
}
