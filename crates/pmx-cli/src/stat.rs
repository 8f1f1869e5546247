//! `pmx stat`: count events for a command, processes, threads or CPUs.
//!
//! [`run`] picks the way: `--regions` (which then counts as usual), then
//! the backend: perf's session is made here, the msr backend's in
//! `stat_msr.rs`; either way the flags become one [`SessionOptions`], one
//! [`Session`] counts, and the same code renders it through
//! `stat_render.rs` (which drives `pmx_output::stat_render`).

use crate::exit::UsageError;
use crate::stat_args::usage;
use crate::stat_render::{self, Prepared, StatView};
use pmx::stat::{self, RunError, RunOptions, Scope, Session, SessionOptions};
use pmx::stat::{StatPlan, Tick};
use pmx::stat_file;
use pmx_output::stat_render::{compose, stat_file as perf_report};
use std::io::Write;

pub use crate::stat_args::StatArgs;

/// Run `pmx stat`.
pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let (mut args, how) = (args.normalized(), stat_render::aggregation(args));
    if args.record.is_some() {
        pmx_args::stat_file_args::check_record(args.repeat).map_err(|e| usage(e.0))?;
    } else if let Some(r) =
        pmx_args::stat_file_args::split(&mut args.command, how).map_err(|e| usage(e.0))?
    {
        let file = stat_file::read(&r.input, r.aggregation)?;
        file.warnings.iter().for_each(|w| eprintln!("{w}"));
        let format = StatView::of(&args, how)?.style.format;
        let text = perf_report(&file, format, crate::perf_cli::thousands());
        args.output(false)?.write_all(text.as_bytes())?;
        return Ok(0);
    }
    let (args, view) = (&args, StatView::of(&args, how)?);
    if args.regions {
        return crate::regions::run(args, &view, count);
    }
    count(args, &view)
}

/// Count with the backend the flags name.
fn count(args: &StatArgs, view: &StatView) -> anyhow::Result<i32> {
    if args.backend == "msr" {
        return counted(args, view, crate::stat_msr::session(args, view)?);
    }
    // perf's -r 0: run after run, each printed, until Ctrl-C (or the
    // command cannot be run).
    loop {
        let code = counted(args, view, perf_session(args, view)?)?;
        if args.repeat != 0 || stat::stop_requested() || code == 127 {
            return Ok(code);
        }
    }
}

/// The flags as the options of one run (the interval is checked later,
/// after the plan, as it always was).
pub(crate) fn run_options(args: &StatArgs, view: &StatView) -> anyhow::Result<RunOptions> {
    if let Some(why) = view.style.perf_refusal(args.per_thread, args.repeat) {
        return Err(usage(why));
    }
    let target = pmx_args::stat_flags::TargetFlags {
        pid: args.pid.as_deref(),
        tid: args.tid.as_deref(),
        cpus: args.cpus.as_deref(),
        all_cpus: args.all_cpus,
        command: &args.command,
    };
    let (perf, pin) = (args.perf.options(), args.pin.as_deref());
    let flags = pmx_args::stat_flags::RunFlags {
        target,
        per_thread: args.per_thread,
        by_cpu: view.how.by_cpu(),
        duration: args.duration,
        pin,
        no_inherit: args.no_inherit,
        interval: args.interval.is_some(),
        interval_count: args.interval_count,
        repeat: args.repeat,
        perf: &perf,
    };
    let mut opts = pmx_args::stat_flags::run_options(&flags).map_err(|e| usage(e.0))?;
    opts.tickers = std::env::var_os("PMX_NO_TICKER").is_none();
    opts.spawn = pmx::launch::Spawn::for_preload(std::env::var_os("LD_PRELOAD").as_deref());
    Ok(opts)
}

/// `pmx stat` through perf_event_open: the flags become one session's
/// options over perf's backend.
fn perf_session(args: &StatArgs, view: &StatView) -> anyhow::Result<Prepared> {
    let (mut opts, how) = (run_options(args, view)?, view.how);
    let wide = matches!(opts.scope, Scope::Cpus(_) | Scope::AllThreads);
    let default = || stat::host_default_events(wide, args.db.sysfs_root.as_deref());
    let (groups, metrics, db) = args.event_groups(default)?;
    let mut plan = args.db.plan(&groups, db.as_ref())?;
    let perf = args.perf.options();
    perf.apply(&mut plan).map_err(|e| usage(e.to_string()))?;
    // CPUID (a VM exit each in a guest) only when a counter is needed.
    let needs = args.no_multiplex || plan.needs_counters();
    let budget = needs.then(pmx::schedule::CounterBudget::this_cpu).flatten();
    let topology = how.needs_topology().then(|| {
        let mut problems = Vec::new();
        pmx_sys::topology::read_topology(&pmx_sys::SysRoot::host(), &mut problems)
    });
    opts.interval = args.interval()?;
    let (repeat, no_multiplex) = (args.repeat.max(1), args.no_multiplex);
    let session = Session::new(
        plan,
        SessionOptions {
            run: opts,
            aggregation: how,
            repeat,
            no_multiplex,
            budget,
            topology,
            signals: true,
        },
    )
    .map_err(|e| UsageError(e.to_string()))?;
    Ok(Prepared {
        session,
        metrics,
        perf: true,
    })
}

/// Count with the prepared session (intervals written as they come),
/// then render the totals and the `--plot` chart.
fn counted(args: &StatArgs, view: &StatView, prepared: Prepared) -> anyhow::Result<i32> {
    let Prepared {
        mut session,
        metrics,
        perf,
    } = prepared;
    if let Some(f) = session
        .fitted()
        .filter(|_| args.perf.verbose > 0 && !args.perf.quiet)
    {
        eprint!("{}", pmx_output::stat_render::plan_lines(&f.sets));
    }
    let mut out = args.output(perf && args.perf.append)?;
    // The msr backend programs its registers here: a refusal leaves the
    // output untouched (no interval header).
    if let Err(e) = session.start() {
        return failed(e);
    }
    let (m, topo) = (metrics.as_ref(), session.options().topology.clone());
    let mut intervals = stat_render::intervals(&mut out, view, topo.as_ref(), m)?;
    let mut rounds = stat_file::Rounds::new(args.record.is_some(), args.interval);
    let result = session.count(&mut |set: &StatPlan, t: &Tick| {
        rounds.tick(t);
        intervals.write(set, t)
    });
    let end = intervals.finish();
    let counted = match result {
        Ok(counted) => counted,
        Err(e) => return failed(e),
    };
    let runs = &counted.runs;
    if let Some(path) = args.record.as_ref().filter(|_| perf) {
        stat_file::write(path, session.plan(), runs, view.how, &rounds)?;
    }
    let target = session.options().run.scope.describe(&args.command);
    let report = compose(target, session.plan(), counted.summary, m, counted.notes);
    let walls: Vec<_> = runs.iter().filter(|_| perf).map(|r| r.elapsed).collect();
    stat_render::totals(&mut out, view, &report, end.error, (perf, &walls))?;
    if args.perf.table && runs.len() > 1 {
        let times: Vec<f64> = walls.iter().map(|w| w.as_secs_f64()).collect();
        out.write_all(pmx_output::stat_render::run_table(&times).as_bytes())?;
    }
    out.commit()?;
    if let Some(e) = counted.late_error {
        anyhow::bail!("{e}");
    }
    stat_render::draw(view, end.plot)?;
    Ok(counted.exit_code)
}

/// A run that failed: the command that cannot run is exit 127 (said
/// here); the backend's bad input is a usage error.
fn failed(e: RunError) -> anyhow::Result<i32> {
    match e {
        RunError::Exec { cmd, reason } => {
            eprintln!("pmx stat: cannot run '{cmd}': {reason}");
            Ok(127)
        }
        RunError::Open(msg) => anyhow::bail!("{msg}"),
        RunError::Io(e) => Err(e.into()),
        RunError::Backend {
            message,
            bad_input: true,
        } => Err(usage(message)),
        RunError::Backend { message, .. } => anyhow::bail!("{message}"),
    }
}
