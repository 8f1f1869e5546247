//! The `perf` personality: pmx run under the name `perf` (a symlink)
//! takes perf's subcommands (`perf stat …` is `pmx stat --format perf
//! …`; `record`, `report`, `list` are pmx's), and what perf's output
//! says beyond the rows (header target, footer times) for `--format perf`.
//! The mapping and those values are [`pmx_args::perf_personality`].

use crate::stat_args::StatArgs;
use pmx_args::perf_personality as personality;
use pmx_formats::perf::{PerfForm, PerfOptions};
use pmx_output::stat::StatReport;
use std::ffi::OsString;
use std::time::Duration;

/// The command line to parse: as given, or, when run as `perf`, perf's
/// subcommand as pmx's (`--buildid-dir` exported as `PERF_BUILDID_DIR`,
/// as perf does; `perf version` printed here). Exits (status 1, as perf)
/// for a perf command pmx does not implement, 2 for a perf top option
/// it refuses.
pub fn command_line(pmx_commands: &dyn Fn() -> Vec<String>) -> Vec<OsString> {
    match personality::command_line(std::env::args_os().collect(), pmx_commands) {
        Ok((args, dir)) => {
            if let Some(d) = dir {
                std::env::set_var("PERF_BUILDID_DIR", d);
            }
            if personality::as_perf(&args) && args.get(1).is_some_and(|a| a == "version") {
                print!(
                    "{}",
                    personality::version(args.iter().any(|a| a == "--build-options"))
                );
                std::process::exit(0);
            }
            args
        }
        Err(e) => {
            eprintln!("perf (pmx): {e}");
            std::process::exit(e.exit_code());
        }
    }
}

/// What perf's layout needs from `pmx stat`'s flags, read once (part of
/// `stat_render::StatView`).
pub struct PerfView {
    /// perf's header target (`'system wide'`, `process id '…'`, …).
    target: String,
    /// A command alone, run once: perf's user and sys times.
    command_once: bool,
    /// `-a`, or no target at all (perf counts system-wide then).
    pub system_wide: bool,
    /// `--summary`, `--no-csv-summary`, `--metric-only`.
    summary: (bool, bool, bool),
}

impl PerfView {
    /// The view of `args`.
    pub fn of(args: &StatArgs) -> PerfView {
        let command_only = !args.all_cpus && args.cpus.is_none() && !args.command.is_empty();
        let named = args.pid.is_some() || args.tid.is_some() || args.cpus.is_some();
        let (p, cpus) = (&args.perf, args.cpus.as_deref());
        let (pid, tid) = (args.pid.as_deref(), args.tid.as_deref());
        PerfView {
            target: personality::target(args.all_cpus, cpus, pid, tid, &args.command),
            command_once: command_only && args.repeat == 1,
            system_wide: args.all_cpus || (!named && args.command.is_empty()),
            summary: (p.summary, p.no_csv_summary, p.metric_only),
        }
    }
}

/// perf's options for the totals of `report`; `walls`: each run's
/// wall-clock time.
pub fn options(
    view: &PerfView,
    form: PerfForm,
    report: &StatReport,
    walls: &[Duration],
) -> PerfOptions {
    let mut o = PerfOptions::new(form);
    o.target = view.target.clone();
    o.runs = report.runs;
    o.elapsed = personality::elapsed(walls, report.elapsed);
    o.user_sys = (view.command_once && report.runs <= 1)
        .then(personality::children_times)
        .flatten();
    o.thousands = thousands();
    o.comms = pmx::stat::thread_comms(&report.rows);
    (o.system_wide, o.summary) = (view.system_wide, view.summary.0);
    (o.no_csv_summary, o.metric_only) = (view.summary.1, view.summary.2);
    o
}

/// perf's thousands separator in the locale of the environment
/// (`LC_ALL`, `LC_NUMERIC`, `LANG`, read here at the edge).
pub fn thousands() -> Option<char> {
    pmx_output::stat_render::perf_thousands(|k| std::env::var(k).ok())
}
