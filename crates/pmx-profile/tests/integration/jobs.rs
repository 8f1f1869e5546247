//! Plain samples read in place and counted on several threads (issue
//! 43): a mapped file's profile must be the one its records decoded one
//! by one give (the same file read from memory, where nothing is read in
//! place), and the same with 1, 2 or 3 jobs, on a generated file big
//! enough to be cut into parts (side-band records between the batches,
//! samples out of order within rounds, kernel and user stacks) and on
//! the shared recordings.

use pmx_perfdata::format::{callchain, misc, record_type};
use pmx_perfdata::Reader;
use pmx_profile::{build, KernelSymbols, Options, Profile, SortKey};
use pmx_symbols::kernel::Kallsyms;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;
use std::path::Path;

const BASE: u64 = 0x5555_0000_0000;

fn sample(pid: u32, time: u64, cpu: u32, chain: &[u64], kernel: bool) -> Vec<u8> {
    let ip = chain[1];
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(pid, time, cpu));
    b.extend_from_slice(&(1000 + time % 7).to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    let m = if kernel { misc::KERNEL } else { misc::USER };
    rec(record_type::SAMPLE, m, &b)
}

/// `n` samples of three processes over ~600 distinct stacks (some with a
/// kernel part), a COMM and an MMAP2 every 40,000 samples, a round every
/// 1,000 records whose samples are written out of time order.
fn big_file(n: u64) -> Vec<u8> {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    let mut put = |r: Vec<u8>| w.write_record(&r).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..n {
        let time = 1000 + i;
        if i % 40_000 == 0 {
            let (pid, k) = (100 + (i / 40_000) as u32 % 3, i / 40_000);
            let mut c = perfdata::comm(pid, &format!("prog{k}"));
            c.extend_from_slice(&sample_id(pid, time, 0));
            put(rec(record_type::COMM, misc::COMM_EXEC, &c));
            let start = BASE + k * 0x10_0000;
            let mut mm =
                perfdata::mmap2(pid, start, 0x10_0000, 5, &format!("/nonexistent/lib{k}.so"));
            mm.extend_from_slice(&sample_id(pid, time, 0));
            put(rec(record_type::MMAP2, misc::USER, &mm));
        }
        let r = next();
        let pid = 100 + (r % 3) as u32;
        let leaf = BASE + (r >> 8) % 200 * 0x40;
        let mut chain = vec![
            callchain::CONTEXT_USER,
            leaf,
            BASE + 0x9000 + (r >> 20) % 3 * 8,
        ];
        let kernel = (r >> 30) % 5 == 0;
        if kernel {
            let k = 0xffff_ffff_8100_0000 + (r >> 33) % 4 * 0x10;
            chain.splice(0..0, [callchain::CONTEXT_KERNEL, k]);
        }
        // Out of order within the round: a little later or earlier.
        let jitter = (r >> 40) % 5;
        put(sample(
            pid,
            time + jitter,
            (r >> 50) as u32 % 4,
            &chain,
            kernel,
        ));
        if i % 1000 == 999 {
            put(rec(record_type::FINISHED_ROUND, 0, &[]));
        }
    }
    w.finish(&Default::default()).unwrap().into_inner()
}

fn options(jobs: usize) -> Options {
    Options {
        sort: vec![
            SortKey::Comm,
            SortKey::Pid,
            SortKey::Dso,
            SortKey::Symbol,
            SortKey::Cpu,
        ],
        stacks: true,
        binary_stacks: true,
        children: true,
        kallsyms: KernelSymbols::Given(Kallsyms::parse(
            "ffffffff81000000 T kfunc\nffffffff81000020 T kother\n",
        )),
        jobs,
        ..Options::default()
    }
}

/// Everything the profile holds, as text; but a kernel row's example
/// address (any of the addresses its symbol merged, shown nowhere: only
/// user rows look their source line up by it).
fn text(p: &Profile) -> String {
    let mut p = p.clone();
    for e in &mut p.events {
        e.rows
            .iter_mut()
            .filter(|r| r.kernel)
            .for_each(|r| r.example = (0, 0));
    }
    format!("{p:#?}")
}

fn mapped(path: &Path, jobs: usize) -> String {
    let mut r = Reader::open(path).unwrap();
    assert!(r.mapped().is_some(), "a regular file is read through a map");
    text(&build(&mut r, &options(jobs), &mut |_, _| {}).unwrap())
}

#[test]
fn in_place_and_parallel_counts_equal_decoding_one_by_one() {
    let bytes = big_file(300_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.data");
    std::fs::write(&path, &bytes).unwrap();
    let mut r = Reader::new(Cursor::new(bytes)).unwrap();
    assert!(r.mapped().is_none());
    let decoded = text(&build(&mut r, &options(1), &mut |_, _| {}).unwrap());
    assert!(decoded.contains("samples: 300000"), "every sample counted");
    assert!(decoded.contains("kfunc") && decoded.contains("prog7"));
    for jobs in [1, 2, 3] {
        assert!(
            mapped(&path, jobs) == decoded,
            "{jobs} jobs: a different profile"
        );
    }
}

#[test]
fn shared_recordings_are_the_same_with_any_number_of_jobs() {
    let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(mut r) = Reader::open(&path) else {
            continue;
        };
        if r.is_pipe() {
            continue;
        }
        let one = build(&mut r, &options(1), &mut |_, _| {}).map(|p| text(&p));
        let Ok(one) = one else {
            continue;
        };
        seen += 1;
        for jobs in [2, 4] {
            assert!(
                mapped(&path, jobs) == one,
                "{}: {jobs} jobs differ",
                path.display()
            );
        }
    }
    assert!(seen >= 5, "only {seen} shared recordings were read");
}
