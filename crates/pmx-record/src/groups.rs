//! Groups in `pmx record`, as perf records them:
//!
//! - `{A,B}`: the members are opened in the leader's group (scheduled on
//!   the PMU together) and each samples on its own; only the leader is
//!   opened disabled (and enabled at `exec`), the members follow it.
//! - `{A,B}:S` (leader sampling): only the leader samples; the members
//!   have `sample_period` 0, and every event carries `PERF_SAMPLE_READ`
//!   with `read_format` `ID|GROUP` plus `LOST` (Linux 6.0+) and the time
//!   totals, so each sample holds every member's running count (a reader
//!   credits each member its delta since the previous sample). The kernel
//!   refuses `inherit` with `PERF_SAMPLE_READ` before Linux 6.12 and
//!   `LOST` before 6.0: a probe finds what this kernel takes and drops the
//!   rest, with a note (without inherit, the command's children and
//!   threads are not sampled, as with perf 6.1, which never inherits
//!   these groups).

use super::options::RecordEvent;
use pmx_perf::{read_format, sample_type, Attr, Counter, OpenCause, Target};

/// The read_format of a sample-read group, everything asked.
const SAMPLE_READ_FORMAT: u64 = read_format::ID
    | read_format::GROUP
    | read_format::LOST
    | read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING;

/// Turn the events' sampling attrs into their groups' attrs; notes on
/// what the kernel did not take.
pub(super) fn shape(attrs: &mut [Attr], events: &[RecordEvent]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        let Some(g) = ev.group else { continue };
        let a = &mut attrs[i];
        if g.leader != i {
            a.disabled = false;
            a.enable_on_exec = false;
        }
        if g.sample_read {
            a.sample_type |= sample_type::READ;
            a.read_format = SAMPLE_READ_FORMAT;
            if g.leader != i {
                a.sample = None;
            }
        }
    }
    // Probe each sample-read leader with its first member on this process.
    for (i, ev) in events.iter().enumerate() {
        if !ev.group.is_some_and(|g| g.sample_read && g.leader == i) {
            continue;
        }
        let member =
            (i + 1..events.len()).find(|&j| events[j].group.is_some_and(|m| m.leader == i));
        let wanted = attrs[i].inherit;
        let (inherit, lost) = probe(&attrs[i], member.map(|j| &attrs[j]));
        for (j, a) in attrs.iter_mut().enumerate() {
            if events[j].group.is_some_and(|m| m.leader == i) {
                a.inherit &= inherit;
                if !lost {
                    a.read_format &= !read_format::LOST;
                }
            }
        }
        if !inherit && wanted {
            notes.push(format!(
                "{}: this kernel does not sample group reads with inherit (Linux 6.12+ does): \
                 only the threads there when sampling started are sampled",
                ev.name
            ));
        }
    }
    notes
}

/// Whether this kernel takes `leader` (with `member` in its group) as it
/// is, without `LOST`, without inherit: (inherit kept, LOST kept).
fn probe(leader: &Attr, member: Option<&Attr>) -> (bool, bool) {
    let tries = [(true, true), (true, false), (false, true), (false, false)];
    for (inherit, lost) in tries {
        let fix = |a: &Attr| {
            let mut a = a.clone();
            a.inherit &= inherit;
            a.enable_on_exec = false;
            a.disabled = true;
            if !lost {
                a.read_format &= !read_format::LOST;
            }
            a
        };
        let me = Target { pid: 0, cpu: -1 };
        match Counter::open(&fix(leader), me, None) {
            Ok(l) => match member.map(|m| Counter::open(&fix(m), me, Some(&l))) {
                None | Some(Ok(_)) => return (inherit || !leader.inherit, lost),
                Some(Err(e)) if matches!(e.cause, OpenCause::Invalid { .. }) => continue,
                // Another failure is the real open's to report.
                Some(Err(_)) => return (inherit || !leader.inherit, lost),
            },
            Err(e) if matches!(e.cause, OpenCause::Invalid { .. }) => continue,
            Err(_) => return (true, true),
        }
    }
    (true, true)
}

/// GROUP_DESC's entries: per `{…}` group of several events, perf's name
/// for an unnamed group, the leader's index and the number of members.
pub(super) fn descriptions(events: &[RecordEvent]) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        if ev.group.is_some_and(|g| g.leader == i) {
            let n = events
                .iter()
                .filter(|e| e.group.is_some_and(|g| g.leader == i))
                .count();
            if n > 1 {
                out.push(("{anon_group}".to_string(), i as u32, n as u32));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GroupMember;
    use pmx_perf::SampleRate;

    fn event(name: &str, config: u64, group: Option<GroupMember>) -> (RecordEvent, Attr) {
        let attr = Attr {
            type_: 1,
            config,
            sample: Some(SampleRate::Frequency(4000)),
            sample_type: sample_type::IP | sample_type::TID | sample_type::IDENTIFIER,
            read_format: read_format::ID,
            disabled: true,
            enable_on_exec: true,
            inherit: true,
            ..Attr::default()
        };
        let ev = RecordEvent {
            name: name.into(),
            attr: attr.clone(),
            inherit: None,
            call_graph: None,
            group,
        };
        (ev, attr)
    }

    #[test]
    fn leader_sampling_reads_the_group_and_members_do_not_sample() {
        let s = |leader| {
            Some(GroupMember {
                leader,
                sample_read: true,
            })
        };
        // {cpu-clock,page-faults}:S, then task-clock alone.
        let (evs, mut attrs): (Vec<_>, Vec<_>) = [
            event("cpu-clock", 0, s(0)),
            event("page-faults", 2, s(0)),
            event("task-clock", 1, None),
        ]
        .into_iter()
        .unzip();
        shape(&mut attrs, &evs);
        let (l, m, alone) = (&attrs[0], &attrs[1], &attrs[2]);
        assert!(l.sample_type & sample_type::READ != 0 && m.sample_type & sample_type::READ != 0);
        assert_eq!(alone.sample_type & sample_type::READ, 0);
        // ID|GROUP always; LOST where the kernel has it (Linux 6.0+).
        let rf = read_format::ID | read_format::GROUP;
        assert_eq!(l.read_format & rf, rf);
        assert_eq!(l.read_format, m.read_format);
        assert!(l.is_sampling() && !m.is_sampling() && alone.is_sampling());
        // The leader starts the group; the members follow it.
        assert!(l.disabled && l.enable_on_exec && !m.disabled && !m.enable_on_exec);
        assert_eq!(descriptions(&evs), vec![("{anon_group}".to_string(), 0, 2)]);
    }

    #[test]
    fn a_plain_group_samples_every_member() {
        let g = Some(GroupMember {
            leader: 0,
            sample_read: false,
        });
        let (evs, mut attrs): (Vec<_>, Vec<_>) =
            [event("cpu-clock", 0, g), event("page-faults", 2, g)]
                .into_iter()
                .unzip();
        shape(&mut attrs, &evs);
        assert!(attrs
            .iter()
            .all(|a| a.is_sampling() && a.read_format == read_format::ID));
        assert!(attrs.iter().all(|a| a.sample_type & sample_type::READ == 0));
        assert!(!attrs[1].disabled && attrs[0].disabled);
    }
}
