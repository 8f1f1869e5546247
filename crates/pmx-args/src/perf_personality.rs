//! pmx run under the name `perf` (a symlink): perf's command lines as
//! pmx's ([`command_line`]: `perf stat …` is `pmx stat --format perf …`,
//! `stat record`/`stat report` included; `record`, `report`, `script`,
//! `annotate`, `inject`, `evlist`, `buildid-list`, `buildid-cache`, `list`
//! are pmx's; `top` is pmx top with perf top's flags ([`top`]); perf's global `--buildid-dir DIR` is `PERF_BUILDID_DIR`, as
//! perf itself passes it on), the perf options pmx refuses by name
//! ([`refused_option`]; [`record`], [`report`]: the mapping of perf's
//! sampling flags; [`tools`]: `script`, `annotate`, `inject`, `evlist`,
//! `buildid-list`), `perf version` ([`version`]), and what perf's `stat` output
//! says beyond the rows: the header's target ([`target`]), the user and
//! system times of the footer ([`children_times`]), the comm of each
//! `--per-thread` row (`pmx_count::stat::thread_comms`).

pub mod record;
pub mod report;
pub mod tools;
pub mod top;
mod version;

pub use version::version;

use std::ffi::OsString;
use std::path::Path;

/// A perf command pmx does not implement (perf exits 1 for it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'perf {what}' is not implemented by pmx; pmx implements perf {}", implemented.join(", "))]
pub struct NotImplemented {
    /// The command as given (`trace`, `(no command)`).
    pub what: String,
    /// The perf commands pmx implements, in pmx's order.
    pub implemented: Vec<String>,
}

/// A perf command line pmx cannot take: a command it does not implement
/// (perf exits 1), or an option of perf top it refuses (exit 2, bad
/// input, as the other commands' refused options).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The command.
    #[error(transparent)]
    NotImplemented(#[from] NotImplemented),
    /// An option of perf top, with the reason.
    #[error(transparent)]
    Refused(#[from] top::Refused),
}

impl LineError {
    /// The exit status: 1 as perf for a command it does not know, 2 for
    /// an option refused.
    pub fn exit_code(&self) -> i32 {
        match self {
            LineError::NotImplemented(_) => 1,
            LineError::Refused(_) => 2,
        }
    }
}

/// perf 6.1's commands (`perf help -a`'s list, and `version`). A pmx
/// command of one of these names is that perf command under the perf
/// personality; the list of pmx's commands comes from the command line's
/// own declaration ([`command_line`]'s `pmx_commands`), so a new perf
/// command in pmx needs no change here.
pub const PERF_COMMANDS: &[&str] = &[
    "annotate",
    "archive",
    "bench",
    "buildid-cache",
    "buildid-list",
    "c2c",
    "config",
    "daemon",
    "data",
    "diff",
    "evlist",
    "ftrace",
    "help",
    "inject",
    "iostat",
    "kallsyms",
    "kmem",
    "kvm",
    "kwork",
    "list",
    "lock",
    "mem",
    "probe",
    "record",
    "report",
    "sched",
    "script",
    "stat",
    "test",
    "timechart",
    "top",
    "trace",
    "version",
];

/// The perf commands pmx implements: those of `pmx_commands` (pmx's own
/// command names, in their order) that perf has, and `version` (printed
/// by the CLI).
pub fn implemented(pmx_commands: &[String]) -> Vec<String> {
    let mut v: Vec<String> = (pmx_commands.iter())
        .filter(|c| c.as_str() != "version" && PERF_COMMANDS.contains(&c.as_str()))
        .cloned()
        .collect();
    v.push("version".to_string());
    v
}

/// The program is run as `perf` (`args[0]`'s file name).
pub fn as_perf(args: &[OsString]) -> bool {
    (args.first())
        .and_then(|a| Path::new(a).file_name().map(|n| n == "perf"))
        .unwrap_or(false)
}

/// The command line to parse: `args` as given, or, when the program's name
/// (`args[0]`) is `perf`, perf's subcommand as pmx's (`--no-pager`
/// dropped; `stat` gets `--format perf`; a global `--buildid-dir DIR`
/// before the subcommand is taken off and returned). `pmx_commands`
/// gives pmx's command names (asked only when run as perf): a perf
/// command is implemented when pmx has a command of its name.
pub fn command_line(
    mut args: Vec<OsString>,
    pmx_commands: &dyn Fn() -> Vec<String>,
) -> Result<(Vec<OsString>, Option<OsString>), LineError> {
    if !as_perf(&args) {
        return Ok((args, None));
    }
    args.retain(|a| a != "--no-pager");
    let mut buildid_dir = None;
    while let Some(a) = args.get(1).and_then(|a| a.to_str()) {
        if let Some(dir) = a.strip_prefix("--buildid-dir=") {
            buildid_dir = Some(OsString::from(dir));
            args.remove(1);
        } else if a == "--buildid-dir" && args.len() > 2 {
            buildid_dir = Some(args.remove(2));
            args.remove(1);
        } else {
            break;
        }
    }
    let sub = (args.get(1).and_then(|a| a.to_str()))
        .unwrap_or("")
        .to_string();
    match sub.as_str() {
        "stat" => {
            args.splice(1..2, ["stat", "--format", "perf"].map(OsString::from));
            Ok((args, buildid_dir))
        }
        "top" => {
            let top = top::command_line(&args[2..])?;
            args.splice(1.., top);
            Ok((args, buildid_dir))
        }
        s => {
            let implemented = implemented(&pmx_commands());
            if !s.is_empty() && implemented.iter().any(|c| c == s) {
                return Ok((args, buildid_dir));
            }
            Err(LineError::NotImplemented(NotImplemented {
                what: match s {
                    "" => "(no command)".to_string(),
                    s => s.to_string(),
                },
                implemented,
            }))
        }
    }
}

/// The message for an option of perf `command` that pmx does not take,
/// naming it and why; `None` for any other.
pub fn refused_option(command: &str, name: &str) -> Option<String> {
    match command {
        "stat" => pmx_count::stat::refused_perf_option(name),
        "record" => record::refused_option(name),
        "report" => report::refused_option(name),
        _ => tools::refused_option(command, name),
    }
}

/// The header's target as perf words it: `-a` (or nothing at all:
/// system-wide), `-C`, `-p`, `-t` or the command.
pub fn target(
    all_cpus: bool,
    cpus: Option<&str>,
    pid: Option<&str>,
    tid: Option<&str>,
    command: &[String],
) -> String {
    match (all_cpus, cpus, pid, tid) {
        (true, ..) => "'system wide'".into(),
        (_, Some(c), ..) => format!("'CPU(s) {c}'"),
        (_, _, Some(p), _) => format!("process id '{p}'"),
        (_, _, _, Some(t)) => format!("thread id '{t}'"),
        _ if command.is_empty() => "'system wide'".into(),
        _ => format!("'{}'", command.join(" ")),
    }
}

/// perf's footer time: the mean of the runs' wall-clock times (`walls`)
/// and its standard error; without runs, `elapsed` and 0.
pub fn elapsed(walls: &[std::time::Duration], elapsed: std::time::Duration) -> (f64, f64) {
    let secs: Vec<f64> = walls.iter().map(|w| w.as_secs_f64()).collect();
    match pmx_formats::Spread::of(&secs) {
        Some(sp) => (sp.mean, sp.stddev / (sp.runs as f64).sqrt()),
        None => (elapsed.as_secs_f64(), 0.0),
    }
}

/// User and system seconds of the children waited for (the command).
pub fn children_times() -> Option<(f64, f64)> {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_time_is_the_mean_and_its_standard_error() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(elapsed(&[], ms(1500)), (1.5, 0.0));
        let (mean, err) = elapsed(&[ms(1000), ms(3000)], ms(0));
        assert_eq!(mean, 2.0);
        // stddev √2 over √2 runs.
        assert!((err - 1.0).abs() < 1e-9, "{err}");
    }

    /// pmx's commands as pmx-cli declares them (the perf ones among
    /// pmx's own).
    fn pmx_commands() -> Vec<String> {
        let names = "stat tma analyze compare plot record report top script mem c2c annotate inject evlist buildid-list buildid-cache serve merge msr encode decode info list explain events completions man";
        names.split(' ').map(String::from).collect()
    }

    fn line(words: &[&str]) -> Result<Vec<String>, String> {
        let args = words.iter().map(OsString::from).collect();
        (command_line(args, &pmx_commands).map_err(|e| e.to_string()))
            .map(|(v, _)| v.iter().map(|a| a.to_string_lossy().into_owned()).collect())
    }

    #[test]
    fn perf_command_lines_become_pmx_ones() {
        assert_eq!(
            line(&["/usr/bin/perf", "--no-pager", "stat", "-e", "x", "true"]),
            Ok(vec![
                "/usr/bin/perf",
                "stat",
                "--format",
                "perf",
                "-e",
                "x",
                "true"
            ]
            .into_iter()
            .map(String::from)
            .collect())
        );
        assert_eq!(
            line(&["perf", "report", "-i", "f"]),
            Ok(vec![
                "perf".into(),
                "report".into(),
                "-i".into(),
                "f".into()
            ])
        );
        // Not run as perf: untouched, --no-pager included.
        assert_eq!(
            line(&["pmx", "--no-pager", "trace"]),
            Ok(vec!["pmx".into(), "--no-pager".into(), "trace".into()])
        );
        let refused = |what: &str| {
            Err(format!("'perf {what}' is not implemented by pmx; pmx implements perf stat, record, report, top, script, mem, c2c, annotate, inject, evlist, buildid-list, buildid-cache, list, version"))
        };
        // perf stat record/report: pmx stat's subcommands.
        assert_eq!(
            line(&["perf", "stat", "record", "-o", "-", "true"]).map(|v| v[1..5].join(" ")),
            Ok("stat --format perf record".to_string())
        );
        assert_eq!(line(&["perf", "trace"]), refused("trace"));
        // perf's global --buildid-dir: taken off, returned.
        let args = ["perf", "--buildid-dir", "/tmp/d", "buildid-cache", "-l"];
        let (v, dir) =
            command_line(args.iter().map(OsString::from).collect(), &pmx_commands).unwrap();
        assert_eq!((v.len(), dir), (3, Some(OsString::from("/tmp/d"))));
        let args = ["perf", "--buildid-dir=/x", "script"];
        let (v, dir) =
            command_line(args.iter().map(OsString::from).collect(), &pmx_commands).unwrap();
        assert_eq!(
            (v[1].to_str(), dir),
            (Some("script"), Some(OsString::from("/x")))
        );
        assert_eq!(line(&["perf"]), refused("(no command)"));
    }

    #[test]
    fn header_target_as_perf_words_it() {
        let cmd = ["sleep".to_string(), "1".to_string()];
        assert_eq!(target(true, Some("0"), None, None, &cmd), "'system wide'");
        assert_eq!(target(false, Some("0-3"), None, None, &cmd), "'CPU(s) 0-3'");
        assert_eq!(
            target(false, None, Some("12"), None, &[]),
            "process id '12'"
        );
        assert_eq!(target(false, None, None, Some("13"), &[]), "thread id '13'");
        assert_eq!(target(false, None, None, None, &cmd), "'sleep 1'");
        assert_eq!(target(false, None, None, None, &[]), "'system wide'");
    }
}
