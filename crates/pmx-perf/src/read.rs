//! Decoding what `read(2)` on a perf event fd returns.
//!
//! The layout depends only on the `read_format` the event was opened with,
//! all fields native-endian `u64`:
//!
//! ```text
//! single: value, [time_enabled], [time_running], [id], [lost]
//! group:  nr, [time_enabled], [time_running], nr × { value, [id], [lost] }
//! ```
//!
//! Fields in brackets are present when their `read_format` bit is set
//! (`TOTAL_TIME_ENABLED`, `TOTAL_TIME_RUNNING`, `ID`, `LOST`). The functions
//! here work on words already read, so they are tested without a kernel.

use crate::read_format;
use pmx_model::count::Count;
use std::io;

/// One decoded entry: the count and, when `read_format` has `ID`, the id.
pub(crate) type Entry = (Option<u64>, Count);

fn has(rf: u64, bit: u64) -> bool {
    rf & bit != 0
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Words of a single-event read with `rf`.
pub(crate) fn single_len(rf: u64) -> usize {
    1 + [
        read_format::TOTAL_TIME_ENABLED,
        read_format::TOTAL_TIME_RUNNING,
        read_format::ID,
        read_format::LOST,
    ]
    .iter()
    .filter(|&&b| has(rf, b))
    .count()
}

/// Words of a group read with `rf` and `nr` members; `None` when that
/// would not fit in memory anyway.
pub(crate) fn group_len(rf: u64, nr: usize) -> Option<usize> {
    let header = 1
        + usize::from(has(rf, read_format::TOTAL_TIME_ENABLED))
        + usize::from(has(rf, read_format::TOTAL_TIME_RUNNING));
    let per = 1 + usize::from(has(rf, read_format::ID)) + usize::from(has(rf, read_format::LOST));
    nr.checked_mul(per)?.checked_add(header)
}

/// Decode a single-event read. Times absent from `rf` read as 0.
pub(crate) fn parse_single(words: &[u64], rf: u64) -> io::Result<Entry> {
    let want = single_len(rf);
    if words.len() != want {
        return Err(invalid(format!(
            "perf read returned {} words, read_format {rf:#x} makes {want}",
            words.len()
        )));
    }
    let mut it = words.iter().copied();
    let value = it.next().unwrap_or(0);
    let mut next_if = |bit: u64| if has(rf, bit) { it.next() } else { None };
    let enabled = next_if(read_format::TOTAL_TIME_ENABLED).unwrap_or(0);
    let running = next_if(read_format::TOTAL_TIME_RUNNING).unwrap_or(0);
    let id = next_if(read_format::ID);
    Ok((
        id,
        Count {
            value,
            enabled,
            running,
        },
    ))
}

/// Decode a group read: every member with the group's shared times.
pub(crate) fn parse_group(words: &[u64], rf: u64) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    visit_group(words, rf, |id, c| out.push((id, c)))?;
    Ok(out)
}

/// Decode a group read without collecting it: `f` gets every member, leader
/// first, with the group's shared times. Checks the length before calling
/// `f` at all, so a malformed read visits nothing.
pub(crate) fn visit_group(
    words: &[u64],
    rf: u64,
    mut f: impl FnMut(Option<u64>, Count),
) -> io::Result<()> {
    let Some(&nr) = words.first() else {
        return Err(invalid("perf group read returned nothing".into()));
    };
    let nr = usize::try_from(nr)
        .ok()
        .filter(|&n| group_len(rf, n) == Some(words.len()))
        .ok_or_else(|| {
            invalid(format!(
                "perf group read of {} words does not hold {nr} members with read_format {rf:#x}",
                words.len()
            ))
        })?;
    let mut at = 1;
    let mut take_if = |bit: bool| {
        if bit {
            at += 1;
            Some(words[at - 1])
        } else {
            None
        }
    };
    let enabled = take_if(has(rf, read_format::TOTAL_TIME_ENABLED)).unwrap_or(0);
    let running = take_if(has(rf, read_format::TOTAL_TIME_RUNNING)).unwrap_or(0);
    for _ in 0..nr {
        let value = take_if(true).unwrap_or(0);
        let id = take_if(has(rf, read_format::ID));
        let _lost = take_if(has(rf, read_format::LOST));
        f(
            id,
            Count {
                value,
                enabled,
                running,
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_format::{GROUP, ID, LOST, TOTAL_TIME_ENABLED as E, TOTAL_TIME_RUNNING as R};

    fn c(value: u64, enabled: u64, running: u64) -> Count {
        Count {
            value,
            enabled,
            running,
        }
    }

    #[test]
    fn single_layouts_follow_read_format() {
        assert_eq!(parse_single(&[7], 0).unwrap(), (None, c(7, 0, 0)));
        assert_eq!(parse_single(&[7, 100], E).unwrap(), (None, c(7, 100, 0)));
        assert_eq!(parse_single(&[7, 50], R).unwrap(), (None, c(7, 0, 50)));
        assert_eq!(parse_single(&[7, 42], ID).unwrap(), (Some(42), c(7, 0, 0)));
        assert_eq!(
            parse_single(&[7, 100, 50, 42], E | R | ID).unwrap(),
            (Some(42), c(7, 100, 50))
        );
        assert_eq!(
            parse_single(&[7, 100, 50, 42, 3], E | R | ID | LOST).unwrap(),
            (Some(42), c(7, 100, 50))
        );
        assert_eq!(single_len(E | R | ID | LOST), 5);
    }

    #[test]
    fn single_rejects_a_length_that_does_not_fit() {
        let e = parse_single(&[7, 100], E | R).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("makes 3"), "{e}");
    }

    #[test]
    fn group_layouts_follow_read_format() {
        let rf = GROUP | E | R | ID;
        let words = [3, 1000, 600, 11, 101, 22, 102, 33, 103];
        assert_eq!(
            parse_group(&words, rf).unwrap(),
            vec![
                (Some(101), c(11, 1000, 600)),
                (Some(102), c(22, 1000, 600)),
                (Some(103), c(33, 1000, 600)),
            ]
        );
        assert_eq!(
            parse_group(&[2, 5, 6], GROUP).unwrap(),
            vec![(None, c(5, 0, 0)), (None, c(6, 0, 0))]
        );
        assert_eq!(
            parse_group(&[2, 9, 5, 1, 0, 6, 2, 0], GROUP | R | ID | LOST).unwrap(),
            vec![(Some(1), c(5, 0, 9)), (Some(2), c(6, 0, 9))]
        );
        assert_eq!(group_len(rf, 3), Some(words.len()));
    }

    #[test]
    fn group_rejects_inconsistent_reads() {
        assert!(parse_group(&[], GROUP).is_err());
        // nr says 3, only 2 members present.
        assert!(parse_group(&[3, 1000, 600, 11, 101, 22, 102], GROUP | E | R | ID).is_err());
        // An absurd nr must not overflow.
        assert!(parse_group(&[u64::MAX, 1], GROUP).is_err());
    }
}
