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
pub fn command_line() -> Vec<OsString> {
    match personality::command_line(std::env::args_os().collect()) {
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

/// perf's options for the totals of `report`; `walls`: each run's
/// wall-clock time.
pub fn options(
    args: &StatArgs,
    form: PerfForm,
    report: &StatReport,
    walls: &[Duration],
) -> PerfOptions {
    let command_only = !args.all_cpus && args.cpus.is_none() && !args.command.is_empty();
    let mut o = PerfOptions::new(form);
    o.target = personality::target(
        args.all_cpus,
        args.cpus.as_deref(),
        args.pid.as_deref(),
        args.tid.as_deref(),
        &args.command,
    );
    o.runs = report.runs;
    o.elapsed = personality::elapsed(walls, report.elapsed);
    o.user_sys = (command_only && report.runs <= 1 && args.repeat == 1)
        .then(personality::children_times)
        .flatten();
    o.thousands = thousands();
    o.comms = pmx::stat::thread_comms(&report.rows);
    (o.system_wide, o.summary) = (args.system_wide(), args.perf.summary);
    (o.no_csv_summary, o.metric_only) = (args.perf.no_csv_summary, args.perf.metric_only);
    o
}

/// perf's thousands separator in the locale of the environment
/// (`LC_ALL`, `LC_NUMERIC`, `LANG`, read here at the edge).
pub fn thousands() -> Option<char> {
    pmx_output::stat_render::perf_thousands(|k| std::env::var(k).ok())
}
