//! The `perf` personality: pmx run under the name `perf` (a symlink)
//! takes perf's subcommands (`perf stat …` is `pmx stat --format perf
//! …`; `record`, `report`, `list` are pmx's), and what perf's output
//! says beyond the rows (header target, footer times) for `--format perf`.

use crate::stat_args::StatArgs;
use pmx_formats::perf::{PerfForm, PerfOptions};
use pmx_output::stat::StatReport;
use std::ffi::OsString;
use std::time::Duration;

/// The command line to parse: as given, or, when run as `perf`, perf's
/// subcommand as pmx's. Exits (status 1, as perf) for a perf command pmx
/// does not implement.
pub fn command_line() -> Vec<OsString> {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let as_perf = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name().map(|n| n == "perf"))
        .unwrap_or(false);
    if !as_perf {
        return args;
    }
    args.retain(|a| a != "--no-pager");
    let sub = args
        .get(1)
        .and_then(|a| a.to_str())
        .unwrap_or("")
        .to_string();
    let next = args.get(2).and_then(|a| a.to_str()).unwrap_or("");
    match sub.as_str() {
        "stat" if !matches!(next, "record" | "report") => {
            args.splice(1..2, ["stat", "--format", "perf"].map(OsString::from));
            args
        }
        "record" | "report" | "list" => args,
        _ => {
            let what = match sub.as_str() {
                "stat" => format!("stat {next}"),
                "" => "(no command)".to_string(),
                s => s.to_string(),
            };
            eprintln!(
                "perf (pmx): 'perf {what}' is not implemented by pmx; pmx implements perf stat, record, report and list"
            );
            std::process::exit(1);
        }
    }
}

/// The header's target as perf words it.
fn target(args: &StatArgs) -> String {
    if args.all_cpus {
        "'system wide'".into()
    } else if let Some(c) = &args.cpus {
        format!("'CPU(s) {c}'")
    } else if let Some(p) = &args.pid {
        format!("process id '{p}'")
    } else if let Some(t) = &args.tid {
        format!("thread id '{t}'")
    } else {
        format!("'{}'", args.command.join(" "))
    }
}

/// User and system seconds of the children waited for (the command).
fn children_times() -> Option<(f64, f64)> {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
}

/// perf's options for the totals of `report`; `walls`: each run's
/// wall-clock time.
pub fn options(
    args: &StatArgs,
    form: PerfForm,
    report: &StatReport,
    walls: &[Duration],
) -> PerfOptions {
    let secs: Vec<f64> = walls.iter().map(Duration::as_secs_f64).collect();
    let elapsed = match pmx_formats::Spread::of(&secs) {
        Some(sp) => (sp.mean, sp.stddev / (sp.runs as f64).sqrt()),
        None => (report.elapsed.as_secs_f64(), 0.0),
    };
    let command_only = !args.all_cpus && args.cpus.is_none() && !args.command.is_empty();
    let mut o = PerfOptions::new(form);
    o.target = target(args);
    o.runs = report.runs;
    o.elapsed = elapsed;
    o.user_sys = (command_only && report.runs <= 1)
        .then(children_times)
        .flatten();
    o.thousands = pmx_output::stat_render::perf_thousands();
    // `--per-thread`: the comm of each thread still there.
    o.comms = (report.rows.iter())
        .filter_map(|r| match r.domain {
            pmx_formats::Domain::Thread { tid } => Some(tid),
            _ => None,
        })
        .filter_map(|t| Some((t, std::fs::read_to_string(format!("/proc/{t}/comm")).ok()?)))
        .map(|(t, c)| (t, c.trim_end().to_string()))
        .collect();
    o
}
