//! `pmx serve`: count system-wide continuously and serve `/metrics` to
//! Prometheus (the daemon itself is `pmx-serve`; this turns flags and the
//! configuration file into its plan, metrics and options).

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::metrics::{MetricError, MetricSet};
use pmx::stat::{self, EventStatus};
use pmx_serve::config::{FileConfig, Per, DEFAULT_LISTEN, DEFAULT_MAX_CONNECTIONS};
use pmx_serve::{Collector, Daemon, Options};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Arguments of `pmx serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Series: pmx_events_total (raw counts), pmx_event_enabled_seconds_total, pmx_event_running_seconds_total, pmx_event_running_ratio, pmx_event_supported, pmx_metric, pmx_metric_reliability, pmx_build_info, pmx_up, pmx_scrape_duration_seconds. See the README.\nExit status: 0 after SIGTERM/SIGINT; 1 when it cannot count or listen; 2 for bad input."
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
    /// define NAME = FORMULA, max-connections); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Most connections served at once (more are answered 503).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
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
    let listen = match (&args.listen, file.listen) {
        (Some(t), _) => listen_addr(t)?,
        (None, Some(a)) => a,
        (None, None) => DEFAULT_LISTEN.parse().expect("valid default"),
    };
    let per = if args.per_core {
        Per::Core
    } else if args.per_socket {
        Per::Socket
    } else if args.per_cpu {
        Per::Cpu
    } else {
        file.per.unwrap_or(Per::Cpu)
    };
    let max_connections = args
        .max_connections
        .or(file.max_connections)
        .unwrap_or(DEFAULT_MAX_CONNECTIONS);
    if max_connections == 0 {
        return Err(UsageError("--max-connections 0: allow at least one".to_string()).into());
    }
    let event_lists: Vec<String> = if !args.events.is_empty() {
        args.events.clone()
    } else {
        file.events.clone()
    };
    let metric_list: Option<String> = match &args.metrics {
        Some(m) => Some(m.clone()),
        None if !file.metrics.is_empty() => Some(file.metrics.join(",")),
        None => None,
    };
    let wants_metrics = metric_list.is_some() || !file.defines.is_empty();
    let lists: Vec<String> = if event_lists.is_empty() && !wants_metrics {
        vec![stat::DEFAULT_EVENTS.to_string()]
    } else {
        event_lists
    };
    let mut groups = Vec::new();
    for l in &lists {
        groups.extend(pmx::parse_event_list(l).map_err(|e| UsageError(e.to_string()))?);
    }
    let (metrics, db) = if wants_metrics {
        let db = args.db.load()?;
        let dir = pmx_events::default_events_dir(args.db.events_dirs.first().cloned());
        let set =
            MetricSet::with_definitions(metric_list.as_deref(), &file.defines, &db, dir.as_deref())
                .map_err(|e| match e {
                    MetricError::Unknown(u) => UsageError(format!("-M: {u}")),
                    d => UsageError(d.to_string()),
                })?;
        for n in set.notes() {
            eprintln!("pmx serve: {n}");
        }
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
    let mut plan = args.db.plan(&groups, db.as_ref())?;
    if let Some(b) = pmx::schedule::CounterBudget::this_cpu() {
        for n in plan.pack(&b) {
            eprintln!("pmx serve: {n}");
        }
    }
    plan.group_software();
    let online_file = args
        .online_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(pmx_serve::collect::ONLINE_FILE));
    let collector = Collector::open(plan, &online_file)
        .map_err(|e| anyhow::anyhow!("cannot read the online CPUs: {e}"))?;
    if !collector.status().contains(&EventStatus::Counted) {
        let why = collector
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
            .unwrap_or_default();
        anyhow::bail!("no event can be counted system-wide here ({why})");
    }
    let counted = collector
        .status()
        .iter()
        .filter(|s| **s == EventStatus::Counted)
        .count();
    let cpus = pmx_model::topology::format_cpu_list(&collector.cpus());
    let names = metrics.as_ref().map(|m| m.names()).unwrap_or_default();
    let opts = Options {
        listen,
        per,
        max_connections,
        ..Options::default()
    };
    let daemon = Daemon::bind(
        collector,
        metrics,
        opts,
        Box::new(|l: &str| eprintln!("pmx serve: {l}")),
    )
    .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    daemon.stop().install_signal_handlers()?;
    let addr = daemon.local_addr()?;
    eprintln!(
        "pmx serve: listening on http://{addr}/metrics ({counted} event{} on CPUs {cpus}{})",
        if counted == 1 { "" } else { "s" },
        if names.is_empty() {
            String::new()
        } else {
            format!("; metrics {}", names.join(", "))
        }
    );
    daemon.run()?;
    Ok(0)
}
