//! `Reader::next_in_place` (plain samples left in a mapped file) against
//! `Reader::next_record` over the same file, record by record: a plain
//! sample handed out in place is the sample the decoder reads (event,
//! offset, time, and every field its `Layout` reads from the bytes at
//! that offset), any other record is decoded alike, and the reader's
//! counts at the end are the same. Over a generated file (rounds out of
//! time order, maps and commands among the samples, kernel and user
//! chains) and the real recordings of the shared data.

use pmx_perfdata::read::Next;
use pmx_perfdata::{Reader, Record};
use pmx_testkit::perfdata::{attr, many_samples, memory_writer, CALLCHAIN_SAMPLES, SAMPLE_ID_ALL};
use std::path::Path;

/// Read `path` both ways in lockstep; the plain samples handed out in place.
fn both_ways(path: &Path) -> u64 {
    let (Ok(mut fast), Ok(mut slow)) = (Reader::open(path), Reader::open(path)) else {
        return 0; // a file the reader refuses is no case here
    };
    let mut in_place = 0u64;
    loop {
        let all = vec![true; fast.events().len()];
        let layouts: Vec<_> = (0..all.len()).map(|e| fast.layout(e)).collect();
        let a = fast.next_in_place(&all);
        let b = slow.next_record();
        let (a, b) = match (a, b) {
            (Ok(Some(a)), Ok(Some(b))) => (a, b),
            (Ok(None), Ok(None)) => break,
            (Err(x), Err(y)) => {
                assert_eq!(x.to_string(), y.to_string(), "{}", path.display());
                break;
            }
            (a, b) => panic!("{}: {a:?} against {b:?}", path.display()),
        };
        match (a, b) {
            (
                Next::InPlace {
                    event,
                    offset,
                    time,
                },
                Record::Sample(s),
            ) => {
                in_place += 1;
                assert_eq!((event, time), (s.event, s.time), "{}", path.display());
                let data = fast.mapped().expect("a mapped file");
                let size = u16::from_le_bytes([data[offset + 6], data[offset + 7]]) as usize;
                let layout = layouts[event].expect("read in place: a plain layout");
                let p = layout.read(&data[offset..offset + size]).expect("fits");
                let chain: Vec<u64> = (p.chain.chunks_exact(8))
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(
                    (p.misc, p.ip, p.pid, p.tid, p.time, p.cpu, p.period),
                    (s.misc, s.ip, s.pid, s.tid, s.time, s.cpu, s.period)
                );
                assert_eq!(chain, s.callchain().collect::<Vec<_>>());
            }
            (Next::Record(x), y) => assert_eq!(format!("{x:?}"), format!("{y:?}")),
            (a, b) => panic!("{}: {a:?} against {b:?}", path.display()),
        }
    }
    assert_eq!(fast.stats(), slow.stats(), "{}", path.display());
    in_place
}

#[test]
fn a_generated_file_reads_the_same_in_place() {
    let mut w = memory_writer(attr(128, 1000, CALLCHAIN_SAMPLES, SAMPLE_ID_ALL));
    many_samples(&mut w, 100_000, &mut |_| {}).unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.data");
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(both_ways(&path), 100_000);
}

#[test]
fn the_shared_recordings_read_the_same_in_place() {
    let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let plain: u64 = files.iter().map(|f| both_ways(f)).sum();
    // Some of them are plain `perf record -g` samples (busy.0-3.8, sleep).
    assert!(plain > 0, "no plain sample read in place in {files:?}");
}
