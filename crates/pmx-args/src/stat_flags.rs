//! Where a measurement happens, from the flags `-p`, `-t`, `-C`, `-a` or a
//! command ([`scope`], shared by `pmx stat` and `pmx record`), one
//! `pmx stat` run's options from its flags ([`run_options`]), and the
//! lists and times those flags take. Errors name the flag and say what is
//! wrong: they are the user's to fix. The engine (`pmx-count`) takes the
//! options made here and never sees a flag.

use pmx_count::stat::{online_cpus, Aggregation, PerfStatOptions, RunOptions, Scope};
use pmx_model::topology::parse_cpu_list;
use std::time::Duration;

/// The target flags as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct TargetFlags<'a> {
    /// `-p PID,…`.
    pub pid: Option<&'a str>,
    /// `-t TID,…`.
    pub tid: Option<&'a str>,
    /// `-C LIST`.
    pub cpus: Option<&'a str>,
    /// `-a`.
    pub all_cpus: bool,
    /// The command after `--`.
    pub command: &'a [String],
}

/// A target flag that is malformed, missing or contradictory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(pub String);

/// The scope the flags name (`-p` before `-t` before `-C` before
/// `-a`, else the command); `verb` is what the command does
/// ("count", "record"), for the error when there is nothing to do it to.
pub fn scope(f: &TargetFlags, verb: &str) -> Result<Scope, FlagError> {
    let scope = if let Some(p) = f.pid {
        Scope::Pids(id_list("-p", p)?)
    } else if let Some(t) = f.tid {
        Scope::Tids(id_list("-t", t)?)
    } else if let Some(c) = f.cpus {
        Scope::Cpus(cpu_list("-C", c)?)
    } else if f.all_cpus {
        Scope::Cpus(online_cpus())
    } else {
        Scope::Command
    };
    if scope == Scope::Command && f.command.is_empty() {
        return Err(FlagError(format!(
            "nothing to {verb}: give a command after --, or -p PID, -t TID, -a or -C LIST"
        )));
    }
    if matches!(scope, Scope::Pids(_) | Scope::Tids(_)) && !f.command.is_empty() {
        return Err(FlagError(
            "-p/-t attach to running tasks; do not also give a command".to_string(),
        ));
    }
    Ok(scope)
}

/// `pmx stat`'s scope, as perf's: [`scope`], except that
/// no target and no command means every CPU (perf counts system-wide
/// until Ctrl-C, the duration or the interval count), and that
/// `per_thread` (`--per-thread`) with `-a`, or alone, counts every
/// thread on its own ([`Scope::AllThreads`]); with `-C` it is refused,
/// as perf refuses it.
pub fn stat_scope(f: &TargetFlags, per_thread: bool) -> Result<Scope, FlagError> {
    let named = f.pid.is_some() || f.tid.is_some() || f.cpus.is_some();
    let scope = match named || f.all_cpus || !f.command.is_empty() {
        true => scope(f, "count")?,
        false => Scope::Cpus(online_cpus()),
    };
    match scope {
            Scope::Cpus(_) if per_thread && f.cpus.is_some() => Err(FlagError(
                "--per-thread counts threads, not CPUs: give it with -p, -t, -a, a command or alone, not with -C"
                    .to_string(),
            )),
            Scope::Cpus(_) if per_thread => Ok(Scope::AllThreads),
            s => Ok(s),
        }
}

/// The flags of one `pmx stat` run, as given (the interval's own checks
/// are [`interval`]'s).
#[derive(Debug, Clone, Copy)]
pub struct RunFlags<'a> {
    /// `-p`, `-t`, `-C`, `-a` and the command.
    pub target: TargetFlags<'a>,
    /// `--per-thread`.
    pub per_thread: bool,
    /// `-A`, `--per-core` …: rows by CPU, which need `-a` or `-C`.
    pub by_cpu: bool,
    /// `--duration SEC`.
    pub duration: Option<f64>,
    /// `--pin LIST`.
    pub pin: Option<&'a str>,
    /// `-i`/`--no-inherit`.
    pub no_inherit: bool,
    /// `-I` was given.
    pub interval: bool,
    /// `--interval-count N`.
    pub interval_count: Option<u64>,
    /// `-r N`.
    pub repeat: u32,
    /// perf's options (`-D`, `--pre`, `--post`, `-S`, cgroups).
    pub perf: &'a PerfStatOptions,
}

/// The options of one run (its `interval` still `None`), or what is
/// wrong with the flags.
pub fn run_options(f: &RunFlags) -> Result<RunOptions, FlagError> {
    let scope = stat_scope(&f.target, f.per_thread)?;
    let trace_tasks = f.per_thread && scope == Scope::Command;
    let duration = duration(f.duration)?;
    let pin = f.pin.map(|p| cpu_list("--pin", p)).transpose()?;
    let cpus = matches!(scope, Scope::Cpus(_));
    if f.by_cpu && !cpus {
        return Err(FlagError(
            "-A and --per-core/die/cache/socket/node need -a or -C".to_string(),
        ));
    }
    let hooks = f.perf.hooks(cpus).map_err(|e| FlagError(e.to_string()))?;
    let opts = RunOptions {
        scope,
        command: f.target.command.to_vec(),
        inherit: !f.no_inherit,
        pin,
        duration,
        interval: None,
        interval_count: f.interval_count,
        trace_tasks,
        hooks,
        tickers: true,
        spawn: Default::default(),
    };
    check_target(&opts, f.interval, f.repeat)?;
    Ok(opts)
}

/// What counting refuses about the target: a command followed task by
/// task (`--per-thread`) counts until it ends, so not with `-I`
/// (`interval`), `--duration` or `--no-inherit`; `repeat` runs need a
/// command or a duration.
pub fn check_target(opts: &RunOptions, interval: bool, repeat: u32) -> Result<(), FlagError> {
    let refuse = |m: &str| Err(FlagError(m.to_string()));
    if opts.trace_tasks && (interval || opts.duration.is_some()) {
        return refuse(
            "--per-thread with a command counts until the command ends: drop -I/--duration",
        );
    }
    if opts.trace_tasks && !opts.inherit {
        return refuse("--per-thread with a command follows every thread and child; --no-inherit contradicts it");
    }
    if repeat > 1 && opts.command.is_empty() && opts.duration.is_none() {
        return refuse("-r needs a command or --duration");
    }
    Ok(())
}

/// A CPU list (`0-3,8`) given with `flag`.
pub fn cpu_list(flag: &str, text: &str) -> Result<Vec<u32>, FlagError> {
    parse_cpu_list(text).map_err(|e| FlagError(format!("{flag} {text}: {e}")))
}

/// A comma-separated list of positive ids given with `flag`.
pub fn id_list(flag: &str, text: &str) -> Result<Vec<i32>, FlagError> {
    text.split(',')
        .map(|s| {
            (s.trim().parse::<i32>().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| FlagError(format!("{flag} {text}: '{s}' is not a positive id")))
        })
        .collect()
}

/// `--duration SEC`: a positive, finite number of seconds.
pub fn duration(seconds: Option<f64>) -> Result<Option<Duration>, FlagError> {
    match seconds {
        Some(d) if !(d > 0.0 && d.is_finite()) => Err(FlagError(format!(
            "--duration {d}: give a positive number of seconds"
        ))),
        Some(d) => Ok(Some(Duration::from_secs_f64(d))),
        None => Ok(None),
    }
}

/// `-I MS` (with `-r N`): at least 1 ms, not with `-r`; with a warning
/// to say under 10 ms.
pub fn interval(
    ms: Option<u64>,
    repeat: u32,
) -> Result<(Option<Duration>, Option<String>), FlagError> {
    let bad = |m: &str| Err(FlagError(m.to_string()));
    match ms {
        None => Ok((None, None)),
        Some(0) => bad("-I 0: the interval must be at least 1 ms"),
        Some(_) if repeat > 1 => bad("-I and -r cannot be combined"),
        Some(ms) => Ok((
            Some(Duration::from_millis(ms)),
            (ms < 10).then(|| format!("warning: -I {ms}: intervals under 10 ms cost noticeable CPU time and perturb what is measured")),
        )),
    }
}

/// The aggregation flags of `pmx stat` as given: `-A`, `--per-core`,
/// `--per-die`, `--per-cache[=LEVEL]`, `--per-socket`, `--per-node`,
/// `--per-thread`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AggregationFlags<'a> {
    /// `-A`.
    pub no_aggr: bool,
    /// `--per-core`.
    pub core: bool,
    /// `--per-die`.
    pub die: bool,
    /// `--per-cache`: `L1` … `L4`.
    pub cache: Option<&'a str>,
    /// `--per-socket`.
    pub socket: bool,
    /// `--per-node`.
    pub node: bool,
    /// `--per-thread`.
    pub thread: bool,
}

/// The first aggregation the flags ask for, in that order; else total.
pub fn aggregation(f: AggregationFlags) -> Aggregation {
    let level = f
        .cache
        .and_then(|l| l.trim_start_matches(['L', 'l']).parse().ok());
    let flags = [
        (f.no_aggr, Aggregation::PerCpu),
        (f.core, Aggregation::PerCore),
        (f.die, Aggregation::PerDie),
        (f.cache.is_some(), Aggregation::PerCache(level.unwrap_or(3))),
        (f.socket, Aggregation::PerSocket),
        (f.node, Aggregation::PerNode),
        (f.thread, Aggregation::PerThread),
    ];
    flags
        .iter()
        .find(|x| x.0)
        .map_or(Aggregation::Total, |x| x.1)
}

/// The command after stat's options (with or without `--`); the one
/// place that reads the trailing arguments.
pub fn command(trailing: &[String]) -> Vec<String> {
    match trailing.first().map(String::as_str) {
        Some("--") => trailing[1..].to_vec(),
        _ => trailing.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_options_from_the_flags() {
        let perf = PerfStatOptions::default();
        let cmd = vec!["true".to_string()];
        let flags = RunFlags {
            target: TargetFlags {
                command: &cmd,
                ..Default::default()
            },
            per_thread: false,
            by_cpu: false,
            duration: Some(2.0),
            pin: Some("0"),
            no_inherit: true,
            interval: false,
            interval_count: Some(3),
            repeat: 1,
            perf: &perf,
        };
        let o = run_options(&flags).unwrap();
        assert_eq!(
            (o.scope, o.command, o.inherit),
            (Scope::Command, cmd.clone(), false)
        );
        assert_eq!(
            (o.pin, o.duration),
            (Some(vec![0]), Some(Duration::from_secs(2)))
        );
        assert_eq!((o.interval, o.interval_count), (None, Some(3)));
        let e = |f: RunFlags| run_options(&f).unwrap_err().0;
        assert!(e(RunFlags {
            by_cpu: true,
            ..flags
        })
        .contains("need -a or -C"));
        assert!(e(RunFlags {
            pin: Some("x"),
            ..flags
        })
        .starts_with("--pin x: "));
        assert!(e(RunFlags {
            duration: Some(-1.0),
            ..flags
        })
        .starts_with("--duration -1"));
        let e = e(RunFlags {
            per_thread: true,
            interval: true,
            ..flags
        });
        assert!(e.contains("drop -I/--duration"), "{e}");
    }

    #[test]
    fn an_interval_of_at_least_a_millisecond_without_repeats() {
        assert_eq!(interval(None, 3), Ok((None, None)));
        assert_eq!(
            interval(Some(100), 1),
            Ok((Some(Duration::from_millis(100)), None))
        );
        let (d, warn) = interval(Some(5), 1).unwrap();
        assert_eq!(d, Some(Duration::from_millis(5)));
        assert!(warn.unwrap().contains("-I 5: intervals under 10 ms"));
        assert_eq!(
            interval(Some(0), 1).unwrap_err().0,
            "-I 0: the interval must be at least 1 ms"
        );
        assert_eq!(
            interval(Some(100), 2).unwrap_err().0,
            "-I and -r cannot be combined"
        );
    }

    fn scope_of(f: TargetFlags) -> Result<Scope, String> {
        super::scope(&f, "count").map_err(|e| e.0)
    }

    #[test]
    fn the_first_target_flag_wins_and_needs_no_command() {
        let cmd = ["true".to_string()];
        let flags = TargetFlags {
            pid: Some("12,13"),
            tid: Some("14"),
            cpus: Some("0-1"),
            ..TargetFlags::default()
        };
        assert_eq!(scope_of(flags), Ok(Scope::Pids(vec![12, 13])));
        let flags = TargetFlags {
            tid: Some("14"),
            cpus: Some("0-1"),
            ..TargetFlags::default()
        };
        assert_eq!(scope_of(flags), Ok(Scope::Tids(vec![14])));
        let flags = TargetFlags {
            cpus: Some("0-1,3"),
            command: &cmd,
            ..TargetFlags::default()
        };
        assert_eq!(scope_of(flags), Ok(Scope::Cpus(vec![0, 1, 3])));
        let flags = TargetFlags {
            command: &cmd,
            ..TargetFlags::default()
        };
        assert_eq!(scope_of(flags), Ok(Scope::Command));
    }

    #[test]
    fn missing_and_contradictory_targets_say_what_to_give() {
        let cmd = ["true".to_string()];
        assert_eq!(
            super::scope(&TargetFlags::default(), "record").map_err(|e| e.0),
            Err(
                "nothing to record: give a command after --, or -p PID, -t TID, -a or -C LIST"
                    .into()
            )
        );
        let flags = TargetFlags {
            tid: Some("5"),
            command: &cmd,
            ..TargetFlags::default()
        };
        assert_eq!(
            scope_of(flags),
            Err("-p/-t attach to running tasks; do not also give a command".into())
        );
        let flags = TargetFlags {
            pid: Some("1,x"),
            ..TargetFlags::default()
        };
        assert_eq!(
            scope_of(flags),
            Err("-p 1,x: 'x' is not a positive id".into())
        );
        assert_eq!(
            id_list("-t", "0").unwrap_err().0,
            "-t 0: '0' is not a positive id"
        );
        assert!(cpu_list("--pin", "3-1")
            .unwrap_err()
            .0
            .starts_with("--pin 3-1: "));
    }

    /// perf's stat: nothing named counts every CPU; `--per-thread` with
    /// `-a` or alone counts every thread, with `-C` it is an error.
    #[test]
    fn stat_without_a_target_is_system_wide() {
        let stat = |f: TargetFlags, t| stat_scope(&f, t).map_err(|e| e.0);
        let all = Scope::Cpus(online_cpus());
        assert_eq!(stat(TargetFlags::default(), false), Ok(all));
        assert_eq!(stat(TargetFlags::default(), true), Ok(Scope::AllThreads));
        let a = TargetFlags {
            all_cpus: true,
            ..TargetFlags::default()
        };
        assert_eq!(stat(a, true), Ok(Scope::AllThreads));
        let c = TargetFlags {
            cpus: Some("0"),
            ..TargetFlags::default()
        };
        assert!(stat(c, true).unwrap_err().contains("not with -C"));
        assert_eq!(stat(c, false), Ok(Scope::Cpus(vec![0])));
        let p = TargetFlags {
            pid: Some("7"),
            ..TargetFlags::default()
        };
        assert_eq!(stat(p, true), Ok(Scope::Pids(vec![7])));
        let cmd = ["true".to_string()];
        let with_cmd = TargetFlags {
            command: &cmd,
            ..TargetFlags::default()
        };
        assert_eq!(stat(with_cmd, true), Ok(Scope::Command));
    }

    #[test]
    fn traced_commands_and_repeats_refuse_what_contradicts_them() {
        let mut o = RunOptions {
            scope: Scope::Command,
            command: vec!["true".into()],
            inherit: true,
            pin: None,
            duration: None,
            interval: None,
            interval_count: None,
            trace_tasks: true,
            hooks: Default::default(),
            tickers: true,
            spawn: Default::default(),
        };
        assert_eq!(check_target(&o, false, 1), Ok(()));
        assert!(check_target(&o, true, 1)
            .unwrap_err()
            .0
            .contains("drop -I/--duration"));
        o.inherit = false;
        assert!(check_target(&o, false, 1)
            .unwrap_err()
            .0
            .contains("--no-inherit"));
        o.trace_tasks = false;
        o.command.clear();
        assert_eq!(
            check_target(&o, false, 2).unwrap_err().0,
            "-r needs a command or --duration"
        );
        o.duration = Some(Duration::from_secs(1));
        assert_eq!(check_target(&o, false, 2), Ok(()));
    }

    #[test]
    fn durations_are_positive_and_finite() {
        assert_eq!(duration(None), Ok(None));
        assert_eq!(duration(Some(0.5)), Ok(Some(Duration::from_millis(500))));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(duration(Some(bad))
                .unwrap_err()
                .0
                .contains("give a positive number of seconds"));
        }
    }
}
