//! `pmx stat -M`: the metrics to compute and the events they need; their
//! values become metric lines in `pmx_output::stat_render::StatMetrics`.

use crate::exit::UsageError;
use crate::stat_args::{usage, StatArgs};
use pmx::database::{default_events_dir, Database};
use pmx::metrics::MetricSet;
use pmx::EventGroup;
use pmx_output::stat_render::StatMetrics;

/// `-M`, or with `--topdown` the tree's metrics, and the database loaded
/// for them.
fn metric_list(args: &StatArgs) -> anyhow::Result<Option<(String, Database)>> {
    let p = &args.perf;
    if !p.topdown && p.td_level.is_none() {
        return match &args.metrics {
            Some(m) => Ok(Some((m.clone(), args.db.load()?))),
            None => Ok(None),
        };
    }
    let db = args.db.load()?;
    let level = p.td_level.unwrap_or(1);
    let names = pmx::tma::topdown_metrics(&db, &args.db.events_dirs, level)
        .map_err(|e| anyhow::anyhow!("--topdown: {e}"))?;
    let list = args
        .metrics
        .iter()
        .cloned()
        .chain(names)
        .collect::<Vec<_>>();
    Ok(Some((list.join(","), db)))
}

/// perf's default set for this target.
pub fn perf_default_events(args: &StatArgs) -> String {
    let wide = args.all_cpus || args.cpus.is_some();
    let root = args.db.sysfs_root.clone().unwrap_or_else(|| "/".into());
    pmx::stat::default_events(wide, &pmx::stat::host_stall_events(&root))
}

/// The `-e` groups (or `default_events` when there is no `-e` and no `-M`)
/// plus, with `-M`, the metrics' inputs; the metric setup; and the event
/// database when `-M` had to load it (so it is not loaded twice).
pub fn event_groups(
    args: &StatArgs,
    default_events: &str,
) -> anyhow::Result<(Vec<EventGroup>, Option<StatMetrics>, Option<Database>)> {
    let perf = args.perf.options();
    let metric_list = metric_list(args)?;
    let lists: Vec<String> = if args.events.is_empty() && metric_list.is_some() && !perf.null {
        perf.event_lists(&[], String::new)
            .into_iter()
            .skip(1)
            .collect()
    } else {
        perf.event_lists(&args.events, || default_events.to_string())
    };
    let mut groups = Vec::new();
    for l in &lists {
        groups.extend(pmx::parse_event_list(l).map_err(|e| UsageError(e.to_string()))?);
    }
    // -M: the metrics' inputs are counted like the events given with -e.
    let mut metrics = None;
    if let Some((list, db)) = &metric_list {
        let dir = default_events_dir(args.db.events_dirs.first().cloned());
        let set =
            MetricSet::new(list, db, dir.as_deref()).map_err(|e| UsageError(format!("-M: {e}")))?;
        groups.extend(set.event_groups(&groups));
        metrics = Some(StatMetrics::new(set));
    }
    let db = metric_list.map(|m| m.1);
    if groups.is_empty() && !perf.null {
        return Err(usage("-M: the metrics need no event pmx can count here"));
    }
    Ok((groups, metrics, db))
}
