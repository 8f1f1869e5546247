//! `pmx stat -M`: the metrics to compute and the events they need; their
//! values become metric lines in `pmx_output::stat_render::StatMetrics`.

use crate::exit::UsageError;
use crate::stat_args::{usage, StatArgs};
use pmx::database::Database;
use pmx::metrics::MetricSet;
use pmx::EventGroup;
use pmx_output::stat_render::StatMetrics;

/// The `-e` groups (or `default_events` when there is no `-e` and no `-M`)
/// plus, with `-M`, the metrics' inputs; the metric setup; and the event
/// database when `-M` had to load it (so it is not loaded twice).
pub fn event_groups(
    args: &StatArgs,
    default_events: &str,
) -> anyhow::Result<(Vec<EventGroup>, Option<StatMetrics>, Option<Database>)> {
    let lists: Vec<String> = if args.events.is_empty() && args.metrics.is_some() {
        Vec::new()
    } else if args.events.is_empty() {
        vec![default_events.to_string()]
    } else {
        args.events.clone()
    };
    let mut groups = Vec::new();
    for l in &lists {
        groups.extend(pmx::parse_event_list(l).map_err(|e| UsageError(e.to_string()))?);
    }
    // -M: the metrics' inputs are counted like the events given with -e.
    let (metrics, db) = match &args.metrics {
        Some(list) => {
            let db = args.db.load()?;
            let set = MetricSet::new(list, &db).map_err(|e| UsageError(format!("-M: {e}")))?;
            let extra = set.event_groups(&groups);
            groups.extend(extra);
            (Some(StatMetrics::new(set)), Some(db))
        }
        None => (None, None),
    };
    if groups.is_empty() {
        return Err(usage("-M: the metrics need no event pmx can count here"));
    }
    Ok((groups, metrics, db))
}
