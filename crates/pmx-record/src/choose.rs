//! What to sample, from the user's words: the rate (`-c PERIOD`, `-F HZ`
//! or `-F max`, capped at `kernel.perf_event_max_sample_rate`) and the
//! events of `-e` lists, each of which must sample on the cores.

use super::callgraph::CallGraph;
use super::default::{max_sample_rate, DEFAULT_FREQUENCY};
use super::options::{GroupMember, RecordError, RecordEvent};
use pmx_count::{EventGroup, StatPlan};
use pmx_perf::SampleRate;

/// The rate of `-c count` or `-F freq` (a number or `max`; perf's 4000 Hz
/// without either), with a note when the kernel's limit lowered it.
pub fn sample_rate(
    count: Option<u64>,
    freq: Option<&str>,
) -> Result<(SampleRate, Vec<String>), RecordError> {
    let mut notes = Vec::new();
    let max = max_sample_rate();
    if let Some(c) = count {
        if c == 0 {
            return Err(invalid("-c 0: give a period of at least 1".to_string()));
        }
        return Ok((SampleRate::Period(c), notes));
    }
    let hz = match freq {
        None => DEFAULT_FREQUENCY,
        Some("max") => max.ok_or_else(|| {
            invalid(
                "-F max: kernel.perf_event_max_sample_rate cannot be read; give a number"
                    .to_string(),
            )
        })?,
        Some(s) => s.parse::<u64>().ok().filter(|&f| f > 0).ok_or_else(|| {
            invalid(format!(
                "-F {s}: give a positive number of samples per second, or max"
            ))
        })?,
    };
    if let Some(m) = max.filter(|&m| hz > m) {
        notes.push(format!(
            "-F {hz} is above kernel.perf_event_max_sample_rate ({m}); using {m} Hz \
             (raise it with sysctl kernel.perf_event_max_sample_rate=N)"
        ));
        return Ok((SampleRate::Frequency(m), notes));
    }
    Ok((SampleRate::Frequency(hz), notes))
}

fn invalid(m: String) -> RecordError {
    RecordError::Invalid(m)
}

/// The groups of `-e` lists (`{…}` groups, with `:S` for leader
/// sampling, included).
pub fn event_groups(lists: &[String]) -> Result<Vec<EventGroup>, RecordError> {
    let mut groups = Vec::new();
    for l in lists {
        groups.extend(pmx_count::parse_event_list(l).map_err(|e| invalid(e.to_string()))?);
    }
    Ok(groups)
}

/// The planned events of `groups` as sampling events; one that cannot be
/// opened here, or that belongs to an uncore PMU, is an error with its
/// reason.
pub fn sampling_events(
    plan: StatPlan,
    groups: &[EventGroup],
) -> Result<Vec<RecordEvent>, RecordError> {
    let mut out = Vec::new();
    let mut leaders: Vec<Option<usize>> = vec![None; groups.len()];
    for e in plan.events {
        let g = groups.get(e.group).filter(|g| g.explicit);
        let group = g.map(|g| GroupMember {
            leader: *leaders[e.group].get_or_insert(out.len()),
            sample_read: g.members.iter().any(|m| m.modifiers.sample_read),
        });
        let attr = e.attr.map_err(|why| {
            RecordError::NotSampleable(format!("{} cannot be sampled here: {why}", e.name))
        })?;
        if e.cpus.is_some() {
            return Err(RecordError::NotSampleable(format!(
                "{} belongs to a PMU outside the cores (uncore): it counts, but cannot \
                 attribute events to instructions, so it cannot be sampled",
                e.name
            )));
        }
        let attr = with_sampling_terms(attr, &e.settings, &e.name)?;
        let (mode, size) = (e.settings.call_graph.as_deref(), e.settings.stack_size);
        let call_graph = CallGraph::from_terms(mode, size, &e.name)?;
        out.push(RecordEvent {
            name: e.name,
            attr,
            inherit: e.settings.inherit,
            call_graph,
            group,
        });
    }
    Ok(out)
}

/// The sampling setting terms of one event on its attr: `period=`,
/// `freq=`, `max-stack=` (`inherit`, `no-inherit`, `call-graph=` and
/// `stack-size=` go on the [`RecordEvent`]). Terms pmx record cannot honour yet are
/// refused by name rather than ignored.
fn with_sampling_terms(
    mut attr: pmx_perf::Attr,
    s: &pmx_model::spec::Settings,
    name: &str,
) -> Result<pmx_perf::Attr, RecordError> {
    attr.sample = match (s.period, s.freq) {
        (Some(p), _) => Some(SampleRate::Period(p)),
        (None, Some(f)) => Some(SampleRate::Frequency(f)),
        (None, None) => None,
    };
    if let Some(m) = s.max_stack {
        attr.sample_max_stack = u16::try_from(m).unwrap_or(u16::MAX);
    }
    const NOT_YET: &[&str] = &[
        "aux-output",
        "aux-sample-size",
        "branch_type",
        "time",
        "nr",
        "overwrite",
        "no-overwrite",
        "driver-config",
    ];
    if let Some((k, _)) = s.given.iter().find(|(k, _)| NOT_YET.contains(&k.as_str())) {
        return Err(invalid(format!(
            "{name}: the '{k}' term is not supported by pmx record"
        )));
    }
    Ok(attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_or_a_frequency_within_the_kernel_limit() {
        assert_eq!(
            sample_rate(Some(5000), None).unwrap().0,
            SampleRate::Period(5000)
        );
        assert_eq!(
            sample_rate(Some(0), None).unwrap_err().to_string(),
            "-c 0: give a period of at least 1"
        );
        for bad in ["0", "fast", "-3"] {
            let e = sample_rate(None, Some(bad)).unwrap_err().to_string();
            assert!(e.contains("give a positive number"), "{e}");
        }
        let max = max_sample_rate();
        let (rate, notes) = sample_rate(None, None).unwrap();
        match max {
            Some(m) if m < DEFAULT_FREQUENCY => {
                assert_eq!(rate, SampleRate::Frequency(m));
                assert_eq!(notes.len(), 1);
            }
            _ => assert_eq!(
                (rate, notes),
                (SampleRate::Frequency(DEFAULT_FREQUENCY), vec![])
            ),
        }
        if let Some(m) = max {
            assert_eq!(
                sample_rate(None, Some("max")).unwrap().0,
                SampleRate::Frequency(m)
            );
            let (r, n) = sample_rate(None, Some(&(m + 1).to_string())).unwrap();
            assert_eq!(r, SampleRate::Frequency(m));
            assert!(n[0].contains("above kernel.perf_event_max_sample_rate"));
        }
    }

    #[test]
    fn groups_and_leader_sampling_are_kept() {
        let g = event_groups(&["{cpu-clock,page-faults}:S,task-clock".into()]).unwrap();
        assert_eq!(g.len(), 2);
        assert!(g[0].explicit && !g[1].explicit);
        assert!(g[0].members.iter().all(|m| m.modifiers.sample_read));
        assert!(event_groups(&["{cpu-clock".into()]).is_err());
    }
}
