//! Stacks interned once (issue 43): a report counts the samples of one
//! raw stack in one entry, resolved once; a record that changes what the
//! stack means (here a COMM renaming the thread, then an MMAP2 giving its
//! addresses a binary) must end the entry, so later samples of the very
//! same raw stack land in their new rows, with their own counts and
//! periods.

use pmx_perfdata::format::{callchain, misc, record_type};
use pmx_perfdata::Reader;
use pmx_profile::{build, Options, SortKey};
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;

const PID: u32 = 91;
const IP: u64 = 0x7000_0000_1234;

fn sample(time: u64, period: u64) -> Vec<u8> {
    let chain = [callchain::CONTEXT_USER, IP, IP + 0x100];
    let mut b = IP.to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(PID, time, 0));
    b.extend_from_slice(&period.to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    rec(record_type::SAMPLE, misc::USER, &b)
}

/// 5 samples as "before", a COMM "after", 3 samples, an MMAP2 of a file
/// under the addresses, 2 samples: all of one raw stack.
fn file() -> Vec<u8> {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    let mut put = |r: Vec<u8>| w.write_record(&r).unwrap();
    let comm = |name: &str, time: u64| {
        let mut c = perfdata::comm(PID, name);
        c.extend_from_slice(&sample_id(PID, time, 0));
        rec(record_type::COMM, misc::COMM_EXEC, &c)
    };
    put(comm("before", 1));
    for t in 0..5 {
        put(sample(10 + t, 100));
    }
    put(comm("after", 20));
    for t in 0..3 {
        put(sample(30 + t, 1000));
    }
    let mut mm = perfdata::mmap2(PID, IP & !0xfff, 0x1000, 5, "/nonexistent/libinterned.so");
    mm.extend_from_slice(&sample_id(PID, 40, 0));
    put(rec(record_type::MMAP2, misc::USER, &mm));
    for t in 0..2 {
        put(sample(50 + t, 10_000));
    }
    w.finish(&Default::default()).unwrap().into_inner()
}

#[test]
fn side_band_records_end_an_interned_stack() {
    let options = Options {
        sort: vec![SortKey::Comm, SortKey::Dso],
        stacks: true,
        ..Options::default()
    };
    let mut r = Reader::new(Cursor::new(file())).unwrap();
    let p = build(&mut r, &options, &mut |_, _| {}).unwrap();
    let e = &p.events[0];
    assert_eq!((e.samples, e.period), (10, 5 * 100 + 3 * 1000 + 2 * 10_000));
    let rows: Vec<(&str, &str, u64, u64)> = (e.rows.iter())
        .map(|r| {
            let comm = r.comm.as_deref().unwrap_or("");
            (comm, r.dso.as_deref().unwrap_or(""), r.samples, r.period)
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("after", "libinterned.so", 2, 20_000),
            ("after", "[unknown]", 3, 3000),
            ("before", "[unknown]", 5, 500),
        ],
    );
    let mut stacks: Vec<(String, u64, u64)> = (e.stacks.iter())
        .map(|(frames, n, period)| (frames[0].clone(), *n, *period))
        .collect();
    stacks.sort();
    assert_eq!(
        stacks,
        [
            ("after".to_string(), 2, 20_000),
            ("after".to_string(), 3, 3000),
            ("before".to_string(), 5, 500),
        ]
    );
}
