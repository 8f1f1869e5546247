//! The `PERF_SAMPLE_READ` field of samples: a leader-sampling group with
//! every read_format bit perf 6.x uses (`ID|GROUP|LOST`, plus the time
//! totals), and a single value without `GROUP`, written by hand (layouts
//! from perf_event_open(2): `read_format`) and decoded by the reader.

use pmx_perfdata::format::{read_format as rf, record_type, sample_type as st};
use pmx_perfdata::{FileAttr, ReadValue, Reader, Record};
use pmx_testkit::perfdata::{self, record as rec};
use std::io::Cursor;

const ST: u64 = st::IDENTIFIER | st::IP | st::TID | st::READ;

fn attr(config: u64, period: u64, read_format: u64) -> Vec<u8> {
    let mut a = perfdata::attr(128, period, ST, 1 << 18);
    a[8..16].copy_from_slice(&config.to_le_bytes());
    a[32..40].copy_from_slice(&read_format.to_le_bytes());
    a
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file of two events (ids 10 and 11) with `read_format`, whose
/// samples (of event 10, at ips 0x1000, 0x1001…, pid/tid 7) carry `reads`.
fn file(read_format: u64, reads: &[&[u64]]) -> Vec<u8> {
    let attrs = vec![
        FileAttr {
            attr: attr(0, 4000, read_format),
            ids: vec![10],
            name: "cpu-clock".into(),
        },
        FileAttr {
            attr: attr(2, 0, read_format),
            ids: vec![11],
            name: "page-faults".into(),
        },
    ];
    let mut w = pmx_perfdata::Writer::create(Cursor::new(Vec::new()), attrs).unwrap();
    for (i, read) in reads.iter().enumerate() {
        let mut body = words(&[10, 0x1000 + i as u64, 7 | (7 << 32)]);
        body.extend(words(read));
        w.write_record(&rec(record_type::SAMPLE, 2, &body)).unwrap();
    }
    w.finish(&Default::default()).unwrap().into_inner()
}

/// The samples' (ip, values, time totals).
type Decoded = Vec<(u64, Vec<ReadValue>, Option<u64>, Option<u64>)>;

fn samples(bytes: Vec<u8>) -> Decoded {
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Sample(s) = rec {
            let v = s.read_values();
            out.push((s.ip, v.iter().collect(), v.time_enabled, v.time_running));
        }
    }
    out
}

fn value(id: u64, value: u64, lost: u64) -> ReadValue {
    ReadValue { id, value, lost }
}

#[test]
fn a_group_read_with_ids_lost_counts_and_times() {
    let f = rf::ID | rf::GROUP | rf::LOST | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING;
    // nr, enabled, running, {value, id, lost} × 2.
    let s = samples(file(
        f,
        &[
            &[2, 5000, 4000, 274_843, 10, 0, 2, 11, 3],
            &[1, 6000, 5000, 99, 10, 4],
        ],
    ));
    assert_eq!(
        s[0],
        (
            0x1000,
            vec![value(10, 274_843, 0), value(11, 2, 3)],
            Some(5000),
            Some(4000)
        )
    );
    // The sample after it was found where it starts.
    assert_eq!(s[1].1, vec![value(10, 99, 4)]);
    assert_eq!((s[1].0, s[1].2), (0x1001, Some(6000)));
}

#[test]
fn perf_6_1s_layout_id_group_lost() {
    // What `perf record -e '{cpu-clock,page-faults}:S'` writes (perf report -D:
    // "group nr 2 / id 29e11, value 4319b, lost 0 / id 29e13, value 2, lost 0").
    let f = rf::ID | rf::GROUP | rf::LOST;
    let s = samples(file(f, &[&[2, 0x4319b, 10, 0, 2, 11, 0]]));
    assert_eq!(s[0].1, vec![value(10, 0x4319b, 0), value(11, 2, 0)]);
    assert_eq!((s[0].2, s[0].3), (None, None));
}

#[test]
fn a_single_value_has_its_times_before_its_id() {
    // value, enabled, running, id, lost.
    let f = rf::ID | rf::LOST | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING;
    let s = samples(file(f, &[&[77, 9, 8, 11, 1], &[78, 10, 9, 11, 0]]));
    assert_eq!(s[0], (0x1000, vec![value(11, 77, 1)], Some(9), Some(8)));
    assert_eq!(s[1], (0x1001, vec![value(11, 78, 0)], Some(10), Some(9)));
    // Without ID the value is the sample's own event's (the sample id, 10).
    let s = samples(file(0, &[&[77]]));
    assert_eq!(s[0].1, vec![value(10, 77, 0)]);
}

#[test]
fn group_desc_reads_back() {
    let attrs = vec![
        FileAttr {
            attr: attr(0, 4000, 0),
            ids: vec![10],
            name: "cpu-clock".into(),
        },
        FileAttr {
            attr: attr(2, 4000, 0),
            ids: vec![11],
            name: "page-faults".into(),
        },
    ];
    let w = pmx_perfdata::Writer::create(Cursor::new(Vec::new()), attrs).unwrap();
    let groups = vec![("{anon_group}".to_string(), 0, 2), ("g2".to_string(), 1, 1)];
    let features = pmx_perfdata::Features {
        group_desc: groups.clone(),
        ..Default::default()
    };
    let bytes = w.finish(&features).unwrap().into_inner();
    let r = Reader::new(Cursor::new(bytes.clone())).unwrap();
    assert_eq!(r.features().group_desc, groups);
    // Cut inside the section: a clear error, no panic.
    let at = bytes.windows(4).position(|w| w == b"g2\0\0").unwrap();
    let mut cut = bytes;
    cut[at - 4..at].copy_from_slice(&1000u32.to_le_bytes());
    let e = Reader::new(Cursor::new(cut)).err().expect("an error");
    assert!(e.to_string().contains("group_desc"), "{e}");
}

#[test]
fn read_records_name_their_event_and_values() {
    // Two events with read_format ID (no sample_id_all: no trailer), so
    // the event comes from the value's id; then a record too short.
    let attrs = vec![
        FileAttr {
            attr: perfdata::attr(128, 4000, ST, 0),
            ids: vec![10],
            name: "cpu-clock".into(),
        },
        FileAttr {
            attr: perfdata::attr(128, 4000, ST, 0),
            ids: vec![11],
            name: "page-faults".into(),
        },
    ];
    let mut attrs = attrs;
    for a in &mut attrs {
        a.attr[32..40].copy_from_slice(&rf::ID.to_le_bytes());
    }
    let mut w = pmx_perfdata::Writer::create(Cursor::new(Vec::new()), attrs).unwrap();
    let mut body = [7u32.to_le_bytes(), 8u32.to_le_bytes()].concat();
    body.extend(words(&[1234, 11]));
    w.write_record(&rec(record_type::READ, 0, &body)).unwrap();
    w.write_record(&rec(record_type::READ, 0, &body[..12]))
        .unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    match r.next_record().unwrap() {
        Some(Record::Read(x)) => {
            assert_eq!((x.pid, x.tid, x.event, x.time), (7, 8, Some(1), None));
            assert_eq!(x.values.iter().collect::<Vec<_>>(), [value(11, 1234, 0)]);
        }
        other => panic!("{other:?}"),
    }
    let e = r.next_record().expect_err("a short READ record");
    assert!(e.to_string().contains("READ record of 20 bytes"), "{e}");
}
