//! Choosing the CPU and loading the event database for it: what every
//! resolving command (`stat`, `record`, `tma`, `list`, `explain`, …) does
//! with `--cpu`, `--events-dir`, `--no-libpfm` and the sysfs root.
//!
//! [`DatabaseOptions`] names the choices; [`target`] turns them into the
//! CPU to resolve for, [`load`] into the full [`Database`], and [`plan`]
//! plans an `-e` list with the cheap sources first (kernel events and
//! sysfs aliases), loading the full database only when a name needs it.

use crate::eventlist::EventGroup;
use crate::stat::StatPlan;
use pmx_events::LoadOptions;
use pmx_model::cpu::CpuId;
use pmx_model::spec::SpecError;
use std::path::PathBuf;

pub use pmx_events::{Database, EventsDirDefault, Target};

/// Which CPU to resolve for and where its event tables are.
#[derive(Debug, Clone, Default)]
pub struct DatabaseOptions {
    /// The CPU as perf prints it (`GenuineIntel-6-55-4`); `None`: this CPU.
    pub cpu: Option<String>,
    /// Events directory (Intel's perfmon tables, Linux perf's tables, or
    /// both); `None` (and no `more_events_dirs`): the default place
    /// (`events_dir_default`).
    pub events_dir: Option<PathBuf>,
    /// Further events directories (`--events-dir` given more than once),
    /// searched in order after `events_dir`.
    pub more_events_dirs: Vec<PathBuf>,
    /// Do not load libpfm4.
    pub no_libpfm: bool,
    /// Root of sysfs (tests); `None`: `/`.
    pub sysfs_root: Option<PathBuf>,
    /// Where the tables are when no directory is given: `$PMX_EVENTS_DIR`,
    /// else the cache, as the caller read them at its edge
    /// ([`EventsDirDefault`]; empty: neither).
    pub events_dir_default: EventsDirDefault,
}

/// Why the database could not be chosen or a plan made. Every variant is
/// a mistake in what the user asked for.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// `--cpu` is not a CPU key.
    #[error("--cpu {text}: {reason}")]
    BadCpu {
        /// The text given.
        text: String,
        /// Why it does not parse.
        reason: String,
    },
    /// No `--cpu` and no CPUID to tell this machine's CPU.
    #[error("this machine has no CPUID: name the CPU with --cpu vendor-family-model")]
    NoCpuid,
    /// `--events-dir` names something that is not a directory.
    #[error("--events-dir {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// An event of the list does not resolve.
    #[error("{0}")]
    Plan(#[from] SpecError),
}

/// This machine's CPU key, from CPUID (`None` where there is no CPUID).
pub fn host_cpu_id() -> Option<CpuId> {
    pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid)
}

/// The target CPU: `opts.cpu` or this machine; `host` is set when the
/// named CPU is this machine's (stepping compared only when given).
pub fn target(opts: &DatabaseOptions) -> Result<Target, DatabaseError> {
    let host = host_cpu_id();
    let Some(text) = &opts.cpu else {
        return host
            .map(|cpu| Target { cpu, host: true })
            .ok_or(DatabaseError::NoCpuid);
    };
    let cpu: CpuId = text.parse().map_err(|e| DatabaseError::BadCpu {
        text: text.clone(),
        reason: format!("{e}"),
    })?;
    let is_host = host.as_ref().is_some_and(|h| {
        h.vendor == cpu.vendor
            && h.family == cpu.family
            && h.model == cpu.model
            && cpu.stepping.is_none_or(|s| Some(s) == h.stepping)
    });
    Ok(Target { cpu, host: is_host })
}

/// Load the full database for the target.
pub fn load(opts: &DatabaseOptions) -> Result<Database, DatabaseError> {
    let target = target(opts)?;
    for d in opts.events_dir.iter().chain(&opts.more_events_dirs) {
        if !d.is_dir() {
            return Err(DatabaseError::NotADirectory(d.clone()));
        }
    }
    let load = LoadOptions {
        events_dir: opts.events_dir.clone(),
        more_events_dirs: opts.more_events_dirs.clone(),
        sysfs_root: opts.sysfs_root.clone(),
        no_libpfm: opts.no_libpfm,
        events_dir_default: opts.events_dir_default.clone(),
    };
    Ok(Database::load(target, &load))
}

/// Plan `groups`: with `loaded` when the full database is already there;
/// otherwise with the cheap sources first (kernel events and sysfs, only
/// for this machine and the default tables), loading the full database
/// only when a name needs it.
pub fn plan(
    opts: &DatabaseOptions,
    groups: &[EventGroup],
    loaded: Option<&Database>,
) -> Result<StatPlan, DatabaseError> {
    if let Some(db) = loaded {
        return Ok(crate::stat::plan(groups, db)?);
    }
    let target = target(opts)?;
    if opts.cpu.is_none() && opts.events_dir.is_none() && opts.more_events_dirs.is_empty() {
        let root = opts
            .sysfs_root
            .clone()
            .unwrap_or_else(|| PathBuf::from("/"));
        let light = Database::light(target, &root)
            .with_events_dirs(opts.events_dir_default.resolve_all(&[]));
        if let Ok(p) = crate::stat::plan(groups, &light) {
            return Ok(p);
        }
    }
    let db = load(opts)?;
    Ok(crate::stat::plan(groups, &db)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_cpu_is_the_target() {
        let opts = DatabaseOptions {
            cpu: Some("GenuineIntel-6-55-4".into()),
            ..Default::default()
        };
        let t = target(&opts).unwrap();
        assert_eq!(t.cpu.to_string(), "GenuineIntel-6-55-4");
        assert_eq!(t.cpu.model, 0x55);
    }

    #[test]
    fn bad_choices_say_which_flag() {
        let opts = DatabaseOptions {
            cpu: Some("nonsense".into()),
            ..Default::default()
        };
        let e = target(&opts).unwrap_err();
        assert!(matches!(e, DatabaseError::BadCpu { .. }));
        assert!(e.to_string().starts_with("--cpu nonsense: "), "{e}");
        let opts = DatabaseOptions {
            cpu: Some("GenuineIntel-6-55-4".into()),
            events_dir: Some("/nonexistent/pmx-events".into()),
            ..Default::default()
        };
        let e = load(&opts).err().unwrap();
        assert_eq!(
            e.to_string(),
            "--events-dir /nonexistent/pmx-events: not a directory"
        );
    }
}
