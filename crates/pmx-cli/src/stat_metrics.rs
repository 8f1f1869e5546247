//! `pmx stat -M`: the metrics to compute and the events they need; their
//! values become metric lines in `pmx_output::stat_render::StatMetrics`.

use crate::exit::UsageError;
use crate::stat_args::{usage, StatArgs};
use pmx::database::Database;
use pmx::metrics::MetricSet;
use pmx::EventGroup;
use pmx_output::stat_render::StatMetrics;

/// `-M`, or with `--topdown` the tree's metrics, and the database loaded
/// for them.
fn metric_list(args: &StatArgs) -> anyhow::Result<Option<(String, Database)>> {
    let (p, m) = (&args.perf, args.metrics.as_deref());
    let topdown = p.topdown || p.td_level.is_some();
    if !topdown && m.is_none() {
        return Ok(None);
    }
    let db = args.db.load()?;
    let list = match topdown {
        true => pmx::tma::topdown_metrics(&db, p.td_level.unwrap_or(1), m)
            .map_err(|e| anyhow::anyhow!("--topdown: {e}"))?,
        false => m.unwrap_or_default().to_string(),
    };
    Ok(Some((list, db)))
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
        let set = MetricSet::new(list, db).map_err(|e| UsageError(format!("-M: {e}")))?;
        groups.extend(set.event_groups(&groups));
        metrics = Some(StatMetrics::new(set));
    }
    let db = metric_list.map(|m| m.1);
    if groups.is_empty() && !perf.null {
        return Err(usage("-M: the metrics need no event pmx can count here"));
    }
    Ok((groups, metrics, db))
}
