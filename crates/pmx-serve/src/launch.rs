//! From what `pmx serve` was asked for to a daemon ready to run: the
//! command line's settings over the configuration file's over the
//! defaults ([`Settings::resolve`]), the event groups to count, and
//! [`start`]: the plan packed onto this CPU's counters, the collector
//! opened on every online CPU (refused when nothing counts), the
//! listening socket bound, SIGTERM/SIGINT handled, and the banner.
//!
//! Profiles (`/debug/pprof/profile`, [`crate::profile`]) are on when the
//! address is loopback and off otherwise, unless `--profiles` or
//! `profiles = on|off` says: a profile shows code addresses and command
//! lines of every process.

use crate::collect::Collector;
use crate::config::{FileConfig, Per, DEFAULT_LISTEN, DEFAULT_MAX_CONNECTIONS};
use crate::conn::Probes;
use crate::profile::{self, Limits, ProfileSettings};
use crate::server::{Daemon, Log, Options};
use pmx_count::metrics::MetricSet;
use pmx_count::stat::EventStatus;
use pmx_count::{EventGroup, StatPlan};
use pmx_record::RecordEvent;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// What the command line set (each `None`/empty when not given).
#[derive(Debug, Clone, Default)]
pub struct ServeFlags {
    /// `--listen`.
    pub listen: Option<SocketAddr>,
    /// `-e` lists.
    pub events: Vec<String>,
    /// `-M`.
    pub metrics: Option<String>,
    /// `--per-cpu`, `--per-core`, `--per-socket`.
    pub per: Option<Per>,
    /// `--max-connections`.
    pub max_connections: Option<usize>,
    /// `--profiles`: serve profiles on a non-loopback address too.
    pub profiles: Option<bool>,
    /// `--profile-events`.
    pub profile_events: Option<String>,
    /// `--profile-max-seconds`.
    pub profile_max_seconds: Option<u64>,
}

/// The settings in force: flags over the file over the defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Series per CPU, core or socket.
    pub per: Per,
    /// Most connections at once.
    pub max_connections: usize,
    /// The event lists to count (the default set when nothing is asked).
    pub event_lists: Vec<String>,
    /// The metrics asked for (`-M` or the file's, comma-joined).
    pub metric_list: Option<String>,
    /// The file's user metrics.
    pub defines: Vec<(String, String)>,
    /// Profiles served (on loopback by default).
    pub profiles: bool,
    /// Why not, when not.
    pub profiles_off: String,
    /// The extra profile events asked for (`--profile-events`).
    pub profile_events: Option<String>,
    /// Those events for sampling, or why they cannot be (set by the
    /// caller, which resolves events).
    pub profile_extra: Option<Result<Vec<RecordEvent>, String>>,
    /// Longest and fastest profile.
    pub profile_limits: Limits,
    /// Most profile sessions at once.
    pub profile_sessions: usize,
    /// TCP keepalive of a profile's connection.
    pub profile_probes: Probes,
    /// Bytes of parsed binaries kept between profiles (`None`:
    /// `PMX_BINARY_CACHE_MB`, read by [`start`], or 64 MiB).
    pub profile_symbol_cache: Option<usize>,
    /// How long a client may take to read an answer.
    pub write_timeout: Duration,
}

/// Why `pmx serve` cannot start.
#[derive(Debug)]
pub enum ServeError {
    /// Bad input (exit 2).
    Usage(String),
    /// The online-CPU list cannot be read.
    Online(std::io::Error),
    /// No event counts system-wide; the first reason.
    NothingCounted(String),
    /// The address cannot be bound.
    Listen(SocketAddr, std::io::Error),
    /// The stop pipe or signal handlers cannot be set up.
    Io(std::io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Usage(m) => f.write_str(m),
            ServeError::Online(e) => write!(f, "cannot read the online CPUs: {e}"),
            ServeError::NothingCounted(why) => {
                write!(f, "no event can be counted system-wide here ({why})")
            }
            ServeError::Listen(a, e) => write!(f, "cannot listen on {a}: {e}"),
            ServeError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ServeError {}

impl Settings {
    /// `flags` over `file` over the defaults.
    pub fn resolve(flags: &ServeFlags, file: &FileConfig) -> Result<Settings, ServeError> {
        let max_connections = flags
            .max_connections
            .or(file.max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err(ServeError::Usage(
                "--max-connections 0: allow at least one".to_string(),
            ));
        }
        let events = if !flags.events.is_empty() {
            flags.events.clone()
        } else {
            file.events.clone()
        };
        let metric_list = match &flags.metrics {
            Some(m) => Some(m.clone()),
            None if !file.metrics.is_empty() => Some(file.metrics.join(",")),
            None => None,
        };
        let wants_metrics = metric_list.is_some() || !file.defines.is_empty();
        let listen: SocketAddr = flags
            .listen
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("valid default"));
        let asked = flags.profiles.or(file.profiles);
        let profiles_off = match asked {
            Some(false) => "profiles are off (profiles = off in the configuration)".to_string(),
            _ => format!(
                "profiles are off: pmx serve listens on {listen}, not on loopback, and a profile shows the code addresses and command lines of every process; start it with --profiles (or profiles = on), behind an authenticating reverse proxy (docs/pprof.md)"
            ),
        };
        let max_seconds = (flags.profile_max_seconds)
            .or(file.profile_max_seconds)
            .unwrap_or(profile::DEFAULT_MAX_SECONDS);
        if max_seconds == 0 {
            return Err(ServeError::Usage(
                "--profile-max-seconds 0: allow at least one second".to_string(),
            ));
        }
        let kernel_max = pmx_record::max_sample_rate().unwrap_or(u64::MAX);
        let max_hz = (file.profile_max_hz.unwrap_or(profile::DEFAULT_MAX_HZ) as u64)
            .min(kernel_max)
            .max(1) as u32;
        Ok(Settings {
            listen,
            profiles: asked.unwrap_or(listen.ip().is_loopback()),
            profiles_off,
            profile_events: flags.profile_events.clone().or(file.profile_events.clone()),
            profile_extra: None,
            profile_limits: Limits {
                max_seconds,
                max_hz,
            },
            profile_sessions: file.profile_sessions.unwrap_or(profile::DEFAULT_SESSIONS),
            profile_probes: Probes::every(
                (file.profile_keepalive).unwrap_or(profile::DEFAULT_KEEPALIVE_SECONDS),
            ),
            profile_symbol_cache: file
                .profile_symbol_cache
                .map(|mb| usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)),
            write_timeout: Duration::from_secs(
                file.write_timeout
                    .unwrap_or(crate::server::DEFAULT_WRITE_TIMEOUT_SECONDS),
            ),
            per: flags.per.or(file.per).unwrap_or(Per::Cpu),
            max_connections,
            event_lists: if events.is_empty() && !wants_metrics {
                vec![pmx_count::stat::DEFAULT_EVENTS.to_string()]
            } else {
                events
            },
            metric_list,
            defines: file.defines.clone(),
        })
    }

    /// Metrics are asked for (`-M`, the file's `metrics` or `define`s).
    pub fn wants_metrics(&self) -> bool {
        self.metric_list.is_some() || !self.defines.is_empty()
    }

    /// The groups of the event lists.
    pub fn event_groups(&self) -> Result<Vec<EventGroup>, ServeError> {
        let mut groups = Vec::new();
        for l in &self.event_lists {
            groups.extend(
                pmx_count::parse_event_list(l).map_err(|e| ServeError::Usage(e.to_string()))?,
            );
        }
        Ok(groups)
    }
}

/// A daemon bound and ready to [`Daemon::run`], and the line that says so.
pub struct Started {
    /// The daemon.
    pub daemon: Daemon,
    /// `listening on http://ADDR/metrics (N events on CPUs …; metrics …)`.
    pub banner: String,
}

/// Start serving `plan` (and `metrics`) as `settings` say, following the
/// online CPUs in `online_file`; `log` gets the daemon's lines.
pub fn start(
    mut plan: StatPlan,
    metrics: Option<MetricSet>,
    settings: &Settings,
    online_file: &Path,
    log: Log,
) -> Result<Started, ServeError> {
    if let Some(b) = pmx_count::schedule::CounterBudget::this_cpu() {
        for n in plan.pack(&b) {
            log(&n);
        }
    }
    plan.group_software();
    let collector = Collector::open(plan, online_file).map_err(ServeError::Online)?;
    if !collector.status().contains(&EventStatus::Counted) {
        return Err(ServeError::NothingCounted(first_reason(&collector)));
    }
    let counted = collector
        .status()
        .iter()
        .filter(|s| **s == EventStatus::Counted)
        .count();
    let cpus = pmx_model::topology::format_cpu_list(&collector.cpus());
    let names = metrics.as_ref().map(|m| m.names()).unwrap_or_default();
    let (event, notes) = pmx_record::default_event(pmx_record::SampleRate::Frequency(u64::from(
        profile::query::DEFAULT_HZ,
    )));
    if settings.profiles {
        for n in notes {
            log(&format!("profiles: {n}"));
        }
    }
    // The environment, read here at the launch: pmx's directories and the
    // binary cache's default capacity.
    let capacity = settings.profile_symbol_cache.unwrap_or_else(|| {
        use pmx_symbols::elf::cache::{capacity_from_mb, CAPACITY_VAR};
        capacity_from_mb(std::env::var(CAPACITY_VAR).ok().as_deref())
    });
    let symbols = pmx_symbols::SymbolOptions::new(pmx_io::dirs::Dirs::from_env(), capacity);
    let opts = Options {
        listen: settings.listen,
        per: settings.per,
        max_connections: settings.max_connections,
        write_timeout: settings.write_timeout,
        probes: settings.profile_probes,
        profiles: Some(ProfileSettings {
            enabled: settings.profiles,
            off_reason: settings.profiles_off.clone(),
            limits: settings.profile_limits,
            sessions: settings.profile_sessions,
            event,
            extra: settings.profile_extra.clone(),
            symbols,
        }),
        ..Options::default()
    };
    let daemon = Daemon::bind(collector, metrics, opts, log)
        .map_err(|e| ServeError::Listen(settings.listen, e))?;
    daemon
        .stop()
        .install_signal_handlers()
        .map_err(ServeError::Io)?;
    let addr = daemon.local_addr().map_err(ServeError::Io)?;
    let banner = format!(
        "listening on http://{addr}/metrics ({counted} event{} on CPUs {cpus}{}){}",
        if counted == 1 { "" } else { "s" },
        if names.is_empty() {
            String::new()
        } else {
            format!("; metrics {}", names.join(", "))
        },
        if settings.profiles {
            format!(" and http://{addr}/debug/pprof/profile")
        } else {
            String::new()
        }
    );
    Ok(Started { daemon, banner })
}

/// Why the first event that does not count does not.
fn first_reason(collector: &Collector) -> String {
    collector
        .status()
        .iter()
        .zip(&collector.plan().events)
        .map(|(s, e)| match s {
            EventStatus::NotSupported(r) | EventStatus::NotCounted(r) => {
                format!("{}: {r}", e.name)
            }
            EventStatus::Counted => String::new(),
        })
        .next()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_which_overrides_the_defaults() {
        let file = FileConfig {
            listen: Some("0.0.0.0:1".parse().unwrap()),
            events: vec!["page-faults".into()],
            per: Some(Per::Core),
            max_connections: Some(4),
            ..FileConfig::default()
        };
        let s = Settings::resolve(&ServeFlags::default(), &file).unwrap();
        assert_eq!(s.listen, "0.0.0.0:1".parse().unwrap());
        assert_eq!((s.per, s.max_connections), (Per::Core, 4));
        assert_eq!(s.event_lists, vec!["page-faults".to_string()]);
        assert!(!s.wants_metrics());
        let flags = ServeFlags {
            events: vec!["task-clock".into()],
            per: Some(Per::Socket),
            max_connections: Some(2),
            ..ServeFlags::default()
        };
        let s = Settings::resolve(&flags, &file).unwrap();
        assert_eq!((s.per, s.max_connections), (Per::Socket, 2));
        assert_eq!(s.event_lists, vec!["task-clock".to_string()]);
        assert_eq!(s.event_groups().unwrap().len(), 1);
    }

    #[test]
    fn defaults_and_refusals() {
        let s = Settings::resolve(&ServeFlags::default(), &FileConfig::default()).unwrap();
        assert_eq!(s.listen, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(
            s.event_lists,
            vec![pmx_count::stat::DEFAULT_EVENTS.to_string()]
        );
        let metrics = FileConfig {
            metrics: vec!["IPC".into(), "CPI".into()],
            ..FileConfig::default()
        };
        let s = Settings::resolve(&ServeFlags::default(), &metrics).unwrap();
        assert!(s.event_lists.is_empty() && s.wants_metrics());
        assert_eq!(s.metric_list.as_deref(), Some("IPC,CPI"));
        let zero = ServeFlags {
            max_connections: Some(0),
            ..ServeFlags::default()
        };
        let e = Settings::resolve(&zero, &FileConfig::default()).unwrap_err();
        assert_eq!(e.to_string(), "--max-connections 0: allow at least one");
    }
}
