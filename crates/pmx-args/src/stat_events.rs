//! What `pmx stat` counts: the `-e` lists (or perf's default and `-d`
//! sets, through [`PerfStatOptions::event_lists`]) and, with `-M` or
//! `--topdown`, the metrics and the events they need, counted like the
//! `-e` events ([`stat_events`]).

use pmx_count::database::{self, Database, DatabaseOptions};
use pmx_count::metrics::MetricSet;
use pmx_count::stat::PerfStatOptions;
use pmx_count::EventGroup;

/// The flags that choose what `pmx stat` counts.
#[derive(Debug, Clone, Copy)]
pub struct StatEventFlags<'a> {
    /// `-e` lists.
    pub events: &'a [String],
    /// `-M LIST`.
    pub metrics: Option<&'a str>,
    /// `--topdown`.
    pub topdown: bool,
    /// `--td-level N`.
    pub td_level: Option<u32>,
    /// perf's options (`-d`, `--null`, cgroups …).
    pub perf: &'a PerfStatOptions,
}

/// The groups to count and the metrics to compute from them.
pub struct StatEvents {
    /// The `-e` groups (or the default ones) and the metrics' inputs.
    pub groups: Vec<EventGroup>,
    /// The metrics of `-M`/`--topdown`.
    pub metrics: Option<MetricSet>,
    /// The event database, when the metrics had to load it (so it is
    /// not loaded twice).
    pub database: Option<Database>,
}

/// Why the events could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum StatEventsError {
    /// A mistake in the flags (an event list, a metric name, the database).
    #[error("{0}")]
    Usage(String),
    /// The top-down tree cannot be had here (no core PMU, …).
    #[error("--topdown: {0}")]
    Topdown(pmx_analysis::tma::TmaError),
}

/// The groups `f` asks for (`default_events`' list when there is no `-e`
/// and no metric: asked for only then, as it may read sysfs), the
/// metrics' inputs added, with the database `db` names.
pub fn stat_events(
    f: &StatEventFlags,
    default_events: impl FnOnce() -> String,
    db: &DatabaseOptions,
) -> Result<StatEvents, StatEventsError> {
    let usage = StatEventsError::Usage;
    let topdown = f.topdown || f.td_level.is_some();
    let metric_list = if topdown || f.metrics.is_some() {
        let db = database::load(db).map_err(|e| usage(e.to_string()))?;
        let list = match topdown {
            true => pmx_analysis::tma::topdown_metrics(&db, f.td_level.unwrap_or(1), f.metrics)
                .map_err(StatEventsError::Topdown)?,
            false => f.metrics.unwrap_or_default().to_string(),
        };
        Some((list, db))
    } else {
        None
    };
    let lists: Vec<String> = if f.events.is_empty() && metric_list.is_some() && !f.perf.null {
        (f.perf.event_lists(&[], String::new).into_iter())
            .skip(1)
            .collect()
    } else {
        f.perf.event_lists(f.events, default_events)
    };
    let mut groups = Vec::new();
    for l in &lists {
        groups.extend(pmx_count::parse_event_list(l).map_err(|e| usage(e.to_string()))?);
    }
    // -M: the metrics' inputs are counted like the events given with -e.
    let mut metrics = None;
    if let Some((list, db)) = &metric_list {
        let set = MetricSet::new(list, db).map_err(|e| usage(format!("-M: {e}")))?;
        groups.extend(set.event_groups(&groups));
        // Those this machine's database cannot name are counted as perf
        // counts them: not supported.
        groups.extend(set.unsupported_groups(&groups));
        metrics = Some(set);
    }
    if groups.is_empty() && !f.perf.null {
        return Err(usage(
            "-M: the metrics need no event pmx can count here".to_string(),
        ));
    }
    Ok(StatEvents {
        groups,
        metrics,
        database: metric_list.map(|m| m.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(e: &[&str], metrics: Option<&str>) -> Result<StatEvents, StatEventsError> {
        let events: Vec<String> = e.iter().map(|s| s.to_string()).collect();
        let perf = PerfStatOptions::default();
        let f = StatEventFlags {
            events: &events,
            metrics,
            topdown: false,
            td_level: None,
            perf: &perf,
        };
        stat_events(
            &f,
            || "task-clock,page-faults".into(),
            &DatabaseOptions::default(),
        )
    }

    #[test]
    fn the_default_list_is_not_made_when_e_lists_are_given() {
        let events = vec!["task-clock".to_string()];
        let perf = PerfStatOptions::default();
        let f = StatEventFlags {
            events: &events,
            metrics: None,
            topdown: false,
            td_level: None,
            perf: &perf,
        };
        let no_default = || -> String { panic!("the default list was made (it reads sysfs)") };
        let s = stat_events(&f, no_default, &DatabaseOptions::default());
        assert_eq!(s.map(|s| s.groups.len()).ok(), Some(1));
    }

    #[test]
    fn the_e_lists_or_the_default() {
        let ok = |r: Result<StatEvents, StatEventsError>| match r {
            Ok(s) => s,
            Err(e) => panic!("refused: {e}"),
        };
        let s = ok(events(&["cpu-clock", "{task-clock,cpu-clock}"], None));
        assert_eq!(s.groups.len(), 2);
        assert!(s.metrics.is_none() && s.database.is_none());
        let s = ok(events(&[], None));
        let names: Vec<&str> = (s.groups.iter())
            .flat_map(|g| g.members.iter().map(|m| m.text.as_str()))
            .collect();
        assert_eq!(names, ["task-clock", "page-faults"]);
    }

    #[test]
    fn bad_lists_and_unknown_metrics_are_the_users_to_fix() {
        let err = |r: Result<StatEvents, StatEventsError>| r.err().expect("refused");
        let e = err(events(&["{cpu-clock"], None));
        assert!(matches!(e, StatEventsError::Usage(_)), "{e:?}");
        let e = err(events(&[], Some("NoSuchMetricAnywhere")));
        assert!(
            matches!(&e, StatEventsError::Usage(m) if m.starts_with("-M: ")),
            "{e:?}"
        );
    }
}
