//! Where a measurement happens, from `-p`, `-t`, `-C`, `-a` or a command:
//! shared by `pmx stat` and `pmx record`; and how long (`--duration`).

use crate::exit::UsageError;
use pmx::stat::Scope;
use pmx_model::topology::parse_cpu_list;

/// The target flags as given.
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

/// The scope, or a usage error (exit 2) naming what is missing or
/// contradictory; `verb` is what the command does ("count", "record").
pub fn scope(f: &TargetFlags, verb: &str) -> anyhow::Result<Scope> {
    let scope = if let Some(p) = f.pid {
        Scope::Pids(id_list("-p", p)?)
    } else if let Some(t) = f.tid {
        Scope::Tids(id_list("-t", t)?)
    } else if let Some(c) = f.cpus {
        Scope::Cpus(cpu_list("-C", c)?)
    } else if f.all_cpus {
        Scope::Cpus(pmx::stat::online_cpus())
    } else {
        Scope::Command
    };
    if scope == Scope::Command && f.command.is_empty() {
        return Err(UsageError(format!(
            "nothing to {verb}: give a command after --, or -p PID, -t TID, -a or -C LIST"
        ))
        .into());
    }
    if matches!(scope, Scope::Pids(_) | Scope::Tids(_)) && !f.command.is_empty() {
        return Err(UsageError(
            "-p/-t attach to running tasks; do not also give a command".to_string(),
        )
        .into());
    }
    Ok(scope)
}

/// A CPU list (`0-3,8`) given with `flag`.
pub fn cpu_list(flag: &str, text: &str) -> anyhow::Result<Vec<u32>> {
    parse_cpu_list(text).map_err(|e| UsageError(format!("{flag} {text}: {e}")).into())
}

/// A comma-separated list of positive ids given with `flag`.
pub fn id_list(flag: &str, text: &str) -> anyhow::Result<Vec<i32>> {
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    UsageError(format!("{flag} {text}: '{s}' is not a positive id")).into()
                })
        })
        .collect()
}

/// `--duration SEC`: a positive, finite number of seconds.
pub fn duration(seconds: Option<f64>) -> anyhow::Result<Option<std::time::Duration>> {
    match seconds {
        Some(d) if !(d > 0.0 && d.is_finite()) => {
            Err(UsageError(format!("--duration {d}: give a positive number of seconds")).into())
        }
        Some(d) => Ok(Some(std::time::Duration::from_secs_f64(d))),
        None => Ok(None),
    }
}
