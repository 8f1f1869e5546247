//! `pmx stat -M`: the metrics to compute, the events they need, and their
//! values from the counted rows as the renderers' metric lines.

use crate::exit::UsageError;
use crate::stat_args::StatArgs;
use pmx::database::{default_events_dir, Database};
use pmx::metrics::MetricSet;
use pmx::stat::{EventStatus, Row, StatPlan};
use pmx::EventGroup;
use pmx_output::stat::MetricLine;
use std::time::Duration;

/// The `-e` groups (or `default_events` when there is no `-e` and no `-M`)
/// plus, with `-M`, the metrics' inputs; the metric setup; and the event
/// database when `-M` had to load it (so it is not loaded twice).
pub fn event_groups(
    args: &StatArgs,
    default_events: &str,
) -> anyhow::Result<(Vec<EventGroup>, Option<MetricSetup>, Option<Database>)> {
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
            let dir = default_events_dir(args.db.events_dirs.first().cloned());
            let set = MetricSet::new(list, &db, dir.as_deref())
                .map_err(|e| UsageError(format!("-M: {e}")))?;
            let extra = set.event_groups(&groups);
            groups.extend(extra);
            let notes = set.notes();
            (Some(MetricSetup { set, notes }), Some(db))
        }
        None => (None, None),
    };
    if groups.is_empty() {
        return Err(
            UsageError("-M: the metrics need no event pmx can count here".to_string()).into(),
        );
    }
    Ok((groups, metrics, db))
}

/// The chosen metrics (`pmx::metrics`), with the notes for the report.
pub struct MetricSetup {
    set: MetricSet,
    /// Notes for the report.
    pub notes: Vec<String>,
}

impl MetricSetup {
    /// The metrics for every domain of `rows`.
    pub fn evaluate(
        &self,
        plan: &StatPlan,
        status: &[EventStatus],
        rows: &[Row],
        elapsed: Duration,
    ) -> Vec<MetricLine> {
        self.set
            .evaluate_rows(plan, status, rows, elapsed.as_secs_f64(), "never ran")
            .into_iter()
            .map(|(d, v)| MetricLine {
                name: v.name,
                domain: d.label(),
                value: v.value,
                unit: v.unit,
                reliability: v.reliability,
                estimate: v.estimate,
                missing: v.missing,
            })
            .collect()
    }
}
