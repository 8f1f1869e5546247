//! Downloading event tables into the events directory (`pmx events
//! fetch`): Intel's perfmon tables for Intel CPUs, Linux perf's x86 tables
//! (AMD Zen) for the others.
//!
//! The download itself is `pmx-events`' [`fetch`](pmx_events::fetch::fetch)
//! (atomic: nothing replaced unless every file arrived). This module makes
//! the choices around it from what the user asked: which CPU (named, this
//! one, or every CPU), which tables (by default the ones pmx reads for
//! that CPU's vendor), where from, and which events directory — and how
//! that directory was chosen ([`Place`]), which decides what the user must
//! set to use the tables.

use pmx_events::fetch::fetch as download;
use pmx_model::cpu::{CpuId, Vendor};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub use pmx_events::fetch::{
    FetchError, FetchReport, FetchedFile, Origin, Progress, Selection, Tables, DEFAULT_BASE_URL,
    PERF_BASE_URL,
};

/// What to fetch, from where, to where.
#[derive(Debug, Clone)]
pub struct EventsFetchOptions {
    /// The CPU key (`GenuineIntel-6-55-4`); `None`: this CPU (unless `all`).
    pub cpu: Option<String>,
    /// Every file `mapfile.csv` lists, not one CPU's.
    pub all: bool,
    /// Which tables; `None`: those pmx reads for the CPU's vendor (with
    /// `all` and no CPU named: this machine's vendor, else Intel's).
    pub tables: Option<Tables>,
    /// Base URL of the tables (Intel's perfmon repository, or perf's
    /// `x86/` directory), or a local copy; `None`: the tables' default.
    pub from: Option<String>,
    /// The events directory; `None`: where pmx looks by default.
    pub events_dir: Option<PathBuf>,
    /// Set (from a signal handler, say) to stop cleanly.
    pub cancel: Option<&'static AtomicBool>,
}

/// How the events directory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `--events-dir`, not where pmx looks by default.
    Flag,
    /// `PMX_EVENTS_DIR` (or `--events-dir` naming the same directory).
    Env,
    /// The user cache directory (or `--events-dir` naming it).
    Cache,
}

/// What was fetched.
#[derive(Debug, Clone)]
pub struct EventsFetchReport {
    /// The files, where from and where to.
    pub fetched: FetchReport,
    /// Which CPU's tables (or all).
    pub selection: Selection,
    /// How the events directory was chosen.
    pub place: Place,
}

/// Why nothing was fetched.
#[derive(Debug, thiserror::Error)]
pub enum EventsFetchError {
    /// The CPU key does not parse.
    #[error("--cpu {text}: {reason}")]
    BadCpu {
        /// The text given.
        text: String,
        /// Why it does not parse.
        reason: String,
    },
    /// No CPU named and no CPUID to tell this one.
    #[error(
        "cannot tell this machine's CPU (no CPUID): name it with --cpu \
         vendor-family-model, or fetch every table with --all"
    )]
    NoCpuid,
    /// The tables asked for do not cover the CPU (Intel's for an AMD,
    /// perf's for an Intel); `host` when it is this machine's.
    #[error("{}{reason}", if *.host { "this machine's CPU: " } else { "" })]
    WrongTables {
        /// The CPU was this machine's, not named.
        host: bool,
        /// The fetcher's explanation.
        reason: FetchError,
    },
    /// The origin is not a URL or directory.
    #[error("--from {0}")]
    BadOrigin(String),
    /// Neither a directory given nor a home to put the cache in.
    #[error(
        "no events directory: neither HOME nor XDG_CACHE_HOME is set; \
         give --events-dir DIR or set PMX_EVENTS_DIR"
    )]
    NoEventsDir,
    /// The events directory exists and is a file.
    #[error("{}: exists and is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// Stopped through [`EventsFetchOptions::cancel`]; nothing in `dest`
    /// was replaced.
    #[error("interrupted; nothing in {} was replaced", .dest.display())]
    Interrupted {
        /// The events directory.
        dest: PathBuf,
    },
    /// The download failed.
    #[error(transparent)]
    Fetch(FetchError),
}

impl EventsFetchError {
    /// Is this a mistake in what was asked (rather than a failure)?
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            EventsFetchError::Interrupted { .. } | EventsFetchError::Fetch(_)
        )
    }
}

/// Fetch the tables, telling `progress` how the downloads go.
pub fn events_fetch(
    opts: &EventsFetchOptions,
    progress: &mut dyn Progress,
) -> Result<EventsFetchReport, EventsFetchError> {
    let (selection, tables) = selection(opts)?;
    let from = opts
        .from
        .clone()
        .unwrap_or_else(|| tables.default_base_url().to_string());
    let origin = Origin::parse(&from).map_err(EventsFetchError::BadOrigin)?;
    let (dest, place) = destination(opts.events_dir.clone(), &crate::events_dirs::from_env())?;
    let fetch_opts = pmx_events::fetch::FetchOptions {
        tables,
        origin,
        dest: dest.clone(),
        selection: selection.clone(),
        cancel: opts.cancel,
    };
    match download(&fetch_opts, progress) {
        Ok(fetched) => Ok(EventsFetchReport {
            fetched,
            selection,
            place,
        }),
        Err(FetchError::Interrupted) => Err(EventsFetchError::Interrupted { dest }),
        Err(e @ (FetchError::NotIntel { .. } | FetchError::IntelCpu { .. })) => {
            Err(EventsFetchError::WrongTables {
                host: false,
                reason: e,
            })
        }
        Err(e) => Err(EventsFetchError::Fetch(e)),
    }
}

/// `--tables`' value: `intel` or `perf`.
pub fn parse_tables(s: &str) -> Result<Tables, String> {
    match s {
        "intel" => Ok(Tables::Intel),
        "perf" => Ok(Tables::Perf),
        _ => Err("intel or perf".to_string()),
    }
}

/// Which files (every CPU's, the named CPU's or this CPU's) and which
/// tables: asked for, or those pmx reads for the CPU's vendor.
fn selection(opts: &EventsFetchOptions) -> Result<(Selection, Tables), EventsFetchError> {
    if opts.all {
        let tables = opts.tables.unwrap_or_else(|| {
            crate::database::host_cpu_id().map_or(Tables::Intel, |c| Tables::for_vendor(&c.vendor))
        });
        return Ok((Selection::All, tables));
    }
    let cpu = match &opts.cpu {
        Some(text) => text
            .parse::<CpuId>()
            .map_err(|e| EventsFetchError::BadCpu {
                text: text.clone(),
                reason: format!("{e}"),
            })?,
        None => crate::database::host_cpu_id().ok_or(EventsFetchError::NoCpuid)?,
    };
    let tables = opts
        .tables
        .unwrap_or_else(|| Tables::for_vendor(&cpu.vendor));
    let reason = match tables {
        Tables::Intel if cpu.vendor != Vendor::Intel => {
            Some(FetchError::NotIntel { cpu: cpu.clone() })
        }
        Tables::Perf if cpu.vendor == Vendor::Intel => {
            Some(FetchError::IntelCpu { cpu: cpu.clone() })
        }
        _ => None,
    };
    if let Some(reason) = reason {
        return Err(EventsFetchError::WrongTables {
            host: opts.cpu.is_none(),
            reason,
        });
    }
    Ok((Selection::Cpu(cpu), tables))
}

/// The events directory (absolute) and how it was chosen: `flag`, else
/// `defaults` (`$PMX_EVENTS_DIR`, else the cache, as
/// [`events_dirs::from_env`](crate::events_dirs::from_env) reads them).
pub fn destination(
    flag: Option<PathBuf>,
    defaults: &crate::events_dirs::EventsDirDefault,
) -> Result<(PathBuf, Place), EventsFetchError> {
    let env_set = defaults.env.is_some();
    let default = defaults.resolve(None).map(|d| absolute(&d));
    let is_default = match &flag {
        Some(f) => default.as_deref() == Some(absolute(f).as_path()),
        None => true,
    };
    let place = match (is_default, env_set) {
        (false, _) => Place::Flag,
        (true, true) => Place::Env,
        (true, false) => Place::Cache,
    };
    let dir = defaults
        .resolve(flag)
        .ok_or(EventsFetchError::NoEventsDir)?;
    if dir.exists() && !dir.is_dir() {
        return Err(EventsFetchError::NotADirectory(dir));
    }
    Ok((absolute(&dir), place))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_by_name() {
        assert_eq!(parse_tables("intel"), Ok(Tables::Intel));
        assert_eq!(parse_tables("perf"), Ok(Tables::Perf));
        assert_eq!(parse_tables("amd"), Err("intel or perf".to_string()));
    }

    fn opts(cpu: &str) -> EventsFetchOptions {
        EventsFetchOptions {
            cpu: Some(cpu.into()),
            all: false,
            tables: None,
            from: None,
            events_dir: None,
            cancel: None,
        }
    }

    #[test]
    fn each_vendor_gets_its_tables() {
        let (s, t) = selection(&opts("AuthenticAMD-25-11-1")).unwrap();
        assert!(matches!(s, Selection::Cpu(c) if c.model == 0x11));
        assert_eq!(t, Tables::Perf);
        let (s, t) = selection(&opts("GenuineIntel-6-55-4")).unwrap();
        assert!(matches!(s, Selection::Cpu(c) if c.model == 0x55));
        assert_eq!(t, Tables::Intel);
        let wrong = EventsFetchOptions {
            tables: Some(Tables::Intel),
            ..opts("AuthenticAMD-25-11-1")
        };
        let e = selection(&wrong).unwrap_err();
        assert!(matches!(
            e,
            EventsFetchError::WrongTables { host: false, .. }
        ));
        assert!(e.is_usage());
        assert!(
            e.to_string()
                .starts_with("AuthenticAMD-25-11-1 is an AMD CPU"),
            "{e}"
        );
        let wrong = EventsFetchOptions {
            tables: Some(Tables::Perf),
            ..opts("GenuineIntel-6-55-4")
        };
        let e = selection(&wrong).unwrap_err();
        assert!(e.to_string().contains("is an Intel CPU"), "{e}");
        let all = EventsFetchOptions {
            all: true,
            tables: Some(Tables::Perf),
            ..opts("nonsense")
        };
        assert_eq!(selection(&all).unwrap(), (Selection::All, Tables::Perf));
        let e = selection(&opts("nonsense")).unwrap_err();
        assert!(e.to_string().starts_with("--cpu nonsense: "), "{e}");
    }

    #[test]
    fn a_named_directory_is_a_flag_place() {
        let dir = tempfile::tempdir().unwrap();
        let (path, place) = destination(Some(dir.path().join("ev")), &Default::default()).unwrap();
        assert_eq!(path, dir.path().join("ev"));
        assert_eq!(place, Place::Flag);
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = destination(Some(file.clone()), &Default::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: exists and is not a directory", file.display())
        );
    }

    #[test]
    fn the_default_place_is_the_variable_else_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let (env, cache) = (dir.path().join("env"), dir.path().join("cache"));
        let both = crate::events_dirs::EventsDirDefault {
            env: Some(env.clone()),
            cache: Some(cache.clone()),
        };
        assert_eq!(destination(None, &both).unwrap(), (env.clone(), Place::Env));
        assert_eq!(destination(Some(env), &both).unwrap().1, Place::Env);
        let cached = crate::events_dirs::EventsDirDefault {
            env: None,
            cache: Some(cache.clone()),
        };
        assert_eq!(destination(None, &cached).unwrap(), (cache, Place::Cache));
        let none = crate::events_dirs::EventsDirDefault::default();
        assert!(matches!(
            destination(None, &none),
            Err(EventsFetchError::NoEventsDir)
        ));
    }

    #[test]
    fn a_bad_origin_names_the_flag() {
        let o = EventsFetchOptions {
            from: Some("http://".into()),
            ..opts("GenuineIntel-6-55-4")
        };
        let e = events_fetch(&o, &mut NoProgress).unwrap_err();
        assert!(e.to_string().starts_with("--from "), "{e}");
        assert!(e.is_usage());
    }

    struct NoProgress;
    impl Progress for NoProgress {}
}
