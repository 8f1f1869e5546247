//! Pipe-mode perf.data from [`PipeWriter`] reads back with the crate's
//! reader: events, names, features, build ids, records.

use pmx_perfdata::format::{align_up, misc, record_type, EventHeader};
use pmx_perfdata::{BuildIdEntry, Features, FileAttr, PipeWriter, Reader, Record};

/// A record of `kind` with `body` after its header.
fn record(kind: u32, body: &[u8]) -> Vec<u8> {
    let h = EventHeader {
        kind,
        misc: 0,
        size: (8 + body.len()) as u16,
    };
    let mut r = h.to_bytes().to_vec();
    r.extend_from_slice(body);
    r
}

fn attr(config: u8) -> Vec<u8> {
    // A software cpu-clock attr (type 1), 128 bytes, sample_type IP|TID.
    let mut a = vec![0u8; 128];
    a[0] = 1;
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8] = config;
    a[24] = 0x3;
    a
}

/// A COMM record with no sample_id trailer.
fn comm(pid: u32, name: &str) -> Vec<u8> {
    let mut body = pid.to_le_bytes().to_vec();
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(name.as_bytes());
    body.resize(align_up(body.len() + 1, 8), 0);
    record(record_type::COMM, &body)
}

#[test]
fn the_stream_reads_back_with_its_events_features_and_build_ids() {
    let attrs = vec![
        FileAttr {
            attr: attr(0),
            ids: vec![11, 12],
            name: "cpu-clock".into(),
        },
        FileAttr {
            attr: attr(2),
            ids: vec![21],
            name: "page-faults".into(),
        },
    ];
    let features = Features {
        hostname: Some("box".into()),
        cmdline: Some(vec!["pmx".into(), "record".into()]),
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: misc::USER,
            build_id: vec![0xab; 20],
            filename: "/usr/bin/true".into(),
        }],
        sample_time: Some((5, 9)),
        ..Features::default()
    };
    let mut w = PipeWriter::create(Vec::new(), attrs, &features).unwrap();
    w.write_record(&comm(7, "worker")).unwrap();
    assert!(w.write_record(&comm(7, "x")[..12]).is_err());
    let bytes = w.finish(&features).unwrap();
    // The pipe header as perf writes it: the magic, then 16.
    assert_eq!(&bytes[..8], b"PERFILE2");
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 16);
    // The first record is the first attr: 8 + 128 + 2 ids.
    let h = EventHeader::parse(&bytes[16..]);
    assert_eq!((h.kind, h.size), (record_type::HEADER_ATTR, 8 + 128 + 16));

    let mut r = Reader::new(std::io::Cursor::new(bytes)).unwrap();
    assert!(r.is_pipe());
    let mut comms = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Comm(c) = rec {
            comms.push(String::from_utf8_lossy(c.comm).into_owned());
        }
    }
    assert_eq!(comms, ["worker"]);
    let names: Vec<_> = r.events().iter().map(|e| e.name.clone()).collect();
    assert_eq!(names, ["cpu-clock", "page-faults"]);
    assert_eq!(r.events()[0].ids, [11, 12]);
    let f = r.features();
    assert_eq!(f.hostname.as_deref(), Some("box"));
    assert_eq!(f.build_ids.len(), 1);
    assert_eq!(f.build_ids[0].filename, "/usr/bin/true");
    assert_eq!(f.build_ids[0].build_id, vec![0xab; 20]);
    assert_eq!(f.sample_time, Some((5, 9)));
}
