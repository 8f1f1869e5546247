//! `Compressor`: records written as PERF_RECORD_COMPRESSED (with the
//! COMPRESSED feature) read back by `Reader` as the same records, bytes
//! for bytes (`next_record_bytes`), over many batches; perf 6.1 reading
//! such a file is tested in pmx-cli's perf_sampling.rs.

use pmx_perfdata::format::{feature, record_type};
use pmx_perfdata::write::Compressor;
use pmx_perfdata::{Features, Reader, Record};
use pmx_testkit::perfdata::{attr, comm, memory_writer, record, SAMPLE_ID_ALL};
use std::io::Cursor;

#[test]
fn compressed_records_read_back_as_written() {
    let mut w = memory_writer(attr(128, 4000, 0, SAMPLE_ID_ALL));
    let mut c = Compressor::new(3).unwrap();
    // Enough COMM records (~40 bytes each) for several 32 KiB batches.
    let recs: Vec<Vec<u8>> = (0..5000)
        .map(|i| record(record_type::COMM, 0, &comm(i, &format!("task-{i}"))))
        .collect();
    let mut compressed = 0;
    for r in &recs {
        c.add(r, &mut |z| {
            compressed += 1;
            w.write_record(z)
        })
        .unwrap();
    }
    c.flush(&mut |z| {
        compressed += 1;
        w.write_record(z)
    })
    .unwrap();
    assert!(compressed >= 5, "{compressed} COMPRESSED records");
    assert!(
        c.compressed_bytes < c.raw_bytes / 2,
        "{} of {}",
        c.compressed_bytes,
        c.raw_bytes
    );
    let raw = [(feature::COMPRESSED, c.feature(1 << 19))];
    let bytes = w
        .finish_with(&Features::default(), &raw)
        .unwrap()
        .into_inner();

    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    let info = r.features().compressed.expect("the COMPRESSED feature");
    assert_eq!((info.kind, info.level, info.mmap_len), (1, 3, 1 << 19));
    assert!(info.ratio >= 2, "{info:?}");
    let mut n = 0;
    while let Some((rec, b)) = r.next_record_bytes().unwrap() {
        assert!(matches!(rec, Record::Comm(_)));
        assert_eq!(b, &recs[n][..], "record {n}");
        n += 1;
    }
    assert_eq!(n, recs.len());
    assert_eq!(
        r.stats().records.get(&record_type::COMPRESSED),
        Some(&compressed)
    );
}
