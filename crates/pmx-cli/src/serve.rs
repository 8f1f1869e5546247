//! `pmx serve`: count system-wide continuously and serve `/metrics` to
//! Prometheus (the daemon itself is `pmx-serve`; this turns flags and the
//! configuration file into its plan, metrics and options).

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::metrics::{MetricError, MetricSet};
use pmx_serve::{FileConfig, Per, ServeError, ServeFlags, Settings};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Arguments of `pmx serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Series: pmx_events_total (raw counts), pmx_event_enabled_seconds_total, pmx_event_running_seconds_total, pmx_event_running_ratio, pmx_event_supported, pmx_metric, pmx_metric_reliability, pmx_build_info, pmx_up, pmx_scrape_duration_seconds, pmx_profile_sessions. Profiles (pprof): GET /debug/pprof/profile?seconds=N&hz=N&pid=&comm=&cgroup=&offcpu=1 (offcpu=1: where threads wait; loopback only unless --profiles; docs/pprof.md). See docs/serve.md.\nExit status: 0 after SIGTERM/SIGINT; 1 when it cannot count or listen; 2 for bad input."
)]
pub struct ServeArgs {
    /// Address to listen on, ADDRESS:PORT (default 127.0.0.1:9464: loopback
    /// only). Port 0 picks a free port; the address is printed on stderr.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Events to count (as pmx stat -e); repeatable. Default: perf's set
    /// (software events, plus cycles, instructions, branches, branch-misses
    /// where the PMU has them).
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Derived metrics to export as gauges (names or groups, as pmx stat
    /// -M), computed over each scraper's interval.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// One series per CPU (default).
    #[arg(long = "per-cpu", conflicts_with_all = ["per_core", "per_socket"])]
    pub per_cpu: bool,
    /// One series per physical core.
    #[arg(long = "per-core", conflicts_with = "per_socket")]
    pub per_core: bool,
    /// One series per package.
    #[arg(long = "per-socket")]
    pub per_socket: bool,
    /// Configuration file (key = value lines: listen, events, metrics, per,
    /// define NAME = FORMULA, max-connections, profiles, profile-*); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Most connections open at once; at the limit the one that has waited
    /// on its client the longest is closed to make room.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Serve /debug/pprof/profile on a non-loopback --listen too (it is on
    /// for loopback only: profiles show code addresses and command lines).
    #[arg(long)]
    pub profiles: bool,
    /// Events sampled in profiles beside the CPU profile, each a sample
    /// type of its own (e.g. '{cycles,instructions}:S').
    #[arg(long, value_name = "EVENTS")]
    pub profile_events: Option<String>,
    /// Longest profile a request may ask for, in seconds (default 300).
    #[arg(long, value_name = "N")]
    pub profile_max_seconds: Option<u64>,
    /// The online-CPU list to follow (for tests).
    #[arg(long, value_name = "FILE", hide = true)]
    pub online_file: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

fn listen_addr(text: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    text.to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| {
            UsageError(format!(
                "--listen {text}: not ADDRESS:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464)"
            ))
            .into()
        })
}

/// Run `pmx serve`.
pub fn run(args: &ServeArgs) -> anyhow::Result<i32> {
    let file = match &args.config {
        Some(p) => FileConfig::load(p).map_err(|e| UsageError(format!("--config {e}")))?,
        None => FileConfig::default(),
    };
    let flags = ServeFlags {
        listen: args.listen.as_deref().map(listen_addr).transpose()?,
        events: args.events.clone(),
        metrics: args.metrics.clone(),
        per: if args.per_core {
            Some(Per::Core)
        } else if args.per_socket {
            Some(Per::Socket)
        } else if args.per_cpu {
            Some(Per::Cpu)
        } else {
            None
        },
        max_connections: args.max_connections,
        profiles: args.profiles.then_some(true),
        profile_events: args.profile_events.clone(),
        profile_max_seconds: args.profile_max_seconds,
    };
    let mut settings = Settings::resolve(&flags, &file).map_err(failure)?;
    if let Some(list) = settings.profile_events.clone() {
        let groups = pmx::record::event_groups(&[list]).map_err(|e| UsageError(e.to_string()))?;
        let plan = args.db.plan(&groups, None)?;
        settings.profile_extra =
            Some(pmx::record::sampling_events(plan, &groups).map_err(|e| e.to_string()));
    }
    let mut groups = settings.event_groups().map_err(failure)?;
    let (metrics, db) = if settings.wants_metrics() {
        let db = args.db.load()?;
        let set = metric_set(&settings, &db)?;
        groups.extend(set.event_groups(&groups));
        (Some(set), Some(db))
    } else {
        (None, None)
    };
    if groups.is_empty() {
        return Err(UsageError(
            "nothing to count: the metrics need no event pmx can count here".to_string(),
        )
        .into());
    }
    let plan = args.db.plan(&groups, db.as_ref())?;
    let online_file = args
        .online_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(pmx_serve::collect::ONLINE_FILE));
    let log = Box::new(|l: &str| eprintln!("pmx serve: {l}"));
    let started = pmx_serve::start(plan, metrics, &settings, &online_file, log).map_err(failure)?;
    eprintln!("pmx serve: {}", started.banner);
    started.daemon.run()?;
    Ok(0)
}

/// The metrics asked for (`-M`, the file's `metrics` and `define`s), with
/// their notes on stderr.
fn metric_set(s: &Settings, db: &pmx::Database) -> anyhow::Result<MetricSet> {
    let set = MetricSet::with_definitions(s.metric_list.as_deref(), &s.defines, db).map_err(
        |e| match e {
            MetricError::Unknown(u) => UsageError(format!("-M: {u}")),
            d => UsageError(d.to_string()),
        },
    )?;
    for n in set.notes() {
        eprintln!("pmx serve: {n}");
    }
    Ok(set)
}

/// A start-up failure as the CLI reports it (bad input: exit 2).
fn failure(e: ServeError) -> anyhow::Error {
    match e {
        ServeError::Usage(m) => UsageError(m).into(),
        e => e.into(),
    }
}
