//! Plain samples read in place and counted on several threads (issue
//! 43): a mapped file's profile must be the one its records decoded one
//! by one give (the same file read from memory, where nothing is read in
//! place), and the same with 1, 2 or 3 jobs, on a generated file big
//! enough to be cut into parts (side-band records between the batches,
//! samples out of order within rounds, kernel and user stacks) and on
//! the shared recordings.

use pmx_perfdata::Reader;
use pmx_profile::{build, KernelSymbols, Options, Profile, SortKey};
use pmx_symbols::kernel::Kallsyms;
use pmx_testkit::perfdata::{self, SAMPLE_ID_ALL};
use std::io::Cursor;
use std::path::Path;

/// `n` samples of [`perfdata::many_samples`]: side-band records between
/// the batches, rounds written out of time order.
fn big_file(n: u64) -> Vec<u8> {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    perfdata::many_samples(&mut w, n, &mut |_| {}).unwrap();
    w.finish(&Default::default()).unwrap().into_inner()
}

/// `n` samples of [`perfdata::many_samples_every`]: a COMM and an MMAP2
/// every `every` samples.
fn spaced_file(n: u64, every: u64) -> Vec<u8> {
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    perfdata::many_samples_every(&mut w, n, u64::MAX, every, &mut |_| {}).unwrap();
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

/// A flat report's options (no call chains in the raw stacks).
fn flat(jobs: usize) -> Options {
    Options {
        stacks: false,
        binary_stacks: false,
        children: false,
        ..options(jobs)
    }
}

fn mapped(path: &Path, jobs: usize) -> String {
    mapped_with(path, &options(jobs))
}

fn mapped_with(path: &Path, options: &Options) -> String {
    let mut r = Reader::open(path).unwrap();
    assert!(r.mapped().is_some(), "a regular file is read through a map");
    text(&build(&mut r, options, &mut |_, _| {}).unwrap())
}

/// `bytes` decoded one by one from memory, then read through the map of
/// a file holding them with each of `jobs`, flat and with chains: the
/// same profile every time.
fn same_profiles(bytes: Vec<u8>, samples: u64, jobs: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spaced.data");
    std::fs::write(&path, &bytes).unwrap();
    for (form, opts) in [("chains", options as fn(usize) -> Options), ("flat", flat)] {
        let mut r = Reader::new(Cursor::new(bytes.clone())).unwrap();
        let decoded = text(&build(&mut r, &opts(1), &mut |_, _| {}).unwrap());
        let all = format!("samples: {samples}");
        assert!(decoded.contains(&all), "{form}: every sample counted");
        for &n in jobs {
            assert!(
                mapped_with(&path, &opts(n)) == decoded,
                "{form}, {n} jobs: a different profile"
            );
        }
    }
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

/// Long runs of samples with no side-band record between them: full
/// batches are counted on the threads while the replay reads on (several
/// at a time, or by the replay's thread when the threads are behind),
/// then a map and a command come and every batch must be merged before
/// they apply; the last runs end in a batch cut among the jobs.
#[test]
fn batches_counted_ahead_are_merged_in_order_before_the_maps_change() {
    same_profiles(spaced_file(420_000, 150_000), 420_000, &[2, 3, 4]);
}

/// Short runs: a map and a command every 3,000 samples, so no batch fills
/// and each is counted when the next side-band record comes.
#[test]
fn short_runs_between_maps_count_the_same_with_any_number_of_jobs() {
    same_profiles(spaced_file(45_000, 3_000), 45_000, &[2, 3]);
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
