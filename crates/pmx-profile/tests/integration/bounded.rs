//! The symbol side stays bounded and fresh in a long-lived process:
//!
//! - a binary cache answers the same symbols as a fresh
//!   read, shares one parsed binary between symbolizers, and never answers
//!   for a binary rebuilt at the same path from the old entry;
//! - a `perf-PID.map` appended to after its first use is read again, and
//!   one that was missing is looked for again;
//! - [`Live`] fed a stream of many short-lived processes (COMM, MMAP2, a
//!   sample, EXIT each) forgets each process after its EXIT: the
//!   symbolizer's per-process state goes back down, the rows keep their
//!   names; a process whose main thread exits first is kept until its
//!   last thread does.

use pmx_perfdata::format::{misc, record_type};
use pmx_perfdata::Reader;
use pmx_profile::{KernelSymbols, Live, Options};
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::cache::{BinaryCache, DEFAULT_CAPACITY};
use pmx_symbols::elf::ElfFile;
use pmx_symbols::kernel::Kallsyms;
use pmx_symbols::symbolize::Symbolizer;
use pmx_symbols::SymbolOptions;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

fn program(function: &str) -> String {
    format!(
        "int __attribute__((noinline)) {function}(int x) {{ return x * 3 + 1; }}\n\
         int main(int c, char **v) {{ (void)v; return {function}(c) == 4 ? 0 : 1; }}\n"
    )
}

fn names(elf: &ElfFile) -> Vec<String> {
    elf.symbols().iter().map(|s| s.name.clone()).collect()
}

fn address_of(elf: &ElfFile, name: &str) -> u64 {
    let s = (elf.symbols().iter())
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} in {:?}", names(elf)));
    elf.vaddr_to_offset(s.start).expect("file offset")
}

fn resolve(path: &std::path::Path, offset: u64, binaries: &Arc<BinaryCache>) -> String {
    let options = SymbolOptions {
        binaries: binaries.clone(),
        ..SymbolOptions::default()
    };
    let mut s = Symbolizer::new(Kallsyms::default(), Default::default(), None, &options);
    let base = 0x5555_0000_0000u64;
    s.add_map(9, base, 1 << 24, 0, path.to_str().unwrap().as_bytes());
    let f = s.user_frame(9, base + offset);
    s.frame(f).label()
}

#[test]
fn the_binary_cache_is_a_fresh_read_and_never_stale_after_a_rebuild() {
    if !pmx_testkit::cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin =
        pmx_testkit::cc::compile(dir.path(), "prog", &program("first_name"), &["-O1"]).expect("cc");
    let fresh = ElfFile::open(&bin).unwrap();
    let cache = Arc::new(BinaryCache::new(DEFAULT_CAPACITY, None));
    let (a, id_a) = cache.open(&bin).unwrap();
    assert_eq!(
        names(&a),
        names(&fresh),
        "the cache's symbols are a fresh read's"
    );
    let (b, id_b) = cache.open(&bin).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "the same file is one parsed binary");
    assert_eq!(id_a, id_b);
    let off = address_of(&fresh, "first_name");
    assert_eq!(resolve(&bin, off, &cache), "first_name");

    // Rebuilt at the same path with another function: a new file id,
    // read again, never the old entry's symbols.
    std::fs::remove_file(&bin).unwrap();
    let bin2 = pmx_testkit::cc::compile(dir.path(), "prog", &program("second_name"), &["-O1"])
        .expect("cc");
    assert_eq!(bin, bin2);
    let (c, id_c) = cache.open(&bin).unwrap();
    assert_ne!(id_a, id_c);
    assert!(!Arc::ptr_eq(&a, &c));
    let now = names(&c);
    assert!(now.iter().any(|n| n == "second_name"), "{now:?}");
    assert!(!now.iter().any(|n| n == "first_name"), "{now:?}");
    assert_eq!(now, names(&ElfFile::open(&bin).unwrap()));
    let off2 = address_of(&c, "second_name");
    assert_eq!(resolve(&bin, off2, &cache), "second_name");
    let st = cache.stats();
    assert!(st.hits >= 1 && st.misses >= 2, "{st:?}");
    assert!(st.bytes <= cache.capacity().max(st.bytes.min(1 << 20)));
}

#[test]
fn a_jit_map_that_grows_or_appears_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Symbolizer::new(
        Kallsyms::default(),
        Default::default(),
        None,
        &SymbolOptions::default(),
    );
    s.set_jit_dir(dir.path().to_path_buf());
    let map = dir.path().join("perf-4242.map");
    std::fs::write(&map, "7f0000001000 100 jitted_first\n").unwrap();
    let f = s.user_frame(4242, 0x7f00_0000_1010);
    assert_eq!(s.frame(f).label(), "jitted_first");
    // Not there yet: an address.
    let g = s.user_frame(4242, 0x7f00_0000_2010);
    assert!(s.frame(g).label().starts_with("0x"));
    // The runtime appends a function (a longer file, a later mtime).
    let mut text = std::fs::read_to_string(&map).unwrap();
    text.push_str("7f0000002000 100 jitted_second\n");
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(&map, text).unwrap();
    let g = s.user_frame(4242, 0x7f00_0000_2010);
    assert_eq!(s.frame(g).label(), "jitted_second");
    let f = s.user_frame(4242, 0x7f00_0000_1010);
    assert_eq!(s.frame(f).label(), "jitted_first");

    // A process without a map when first seen, which writes one later.
    let h = s.user_frame(4243, 0x7f00_0000_3010);
    assert!(s.frame(h).label().starts_with("0x"));
    std::fs::write(
        dir.path().join("perf-4243.map"),
        "7f0000003000 40 late_map\n",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let h = s.user_frame(4243, 0x7f00_0000_3010);
    assert_eq!(s.frame(h).label(), "late_map");
    assert_eq!(s.stats().jit_maps, 2);
    s.forget_process(4243);
    assert_eq!(s.stats().jit_maps, 1);
}

const BASE: u64 = 0x5555_0000_0000;

#[inline(never)]
pub fn short_lived_marker(x: u64) -> u64 {
    x.wrapping_mul(17).rotate_left(3)
}

/// This test binary's path, the address of `short_lived_marker` when the
/// binary is mapped whole at [`BASE`], and the mapping's length.
fn this_binary_at_base() -> (String, u64, u64) {
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let marker = (elf.symbols().iter())
        .find(|s| demangle(&s.name).ends_with("::short_lived_marker"))
        .map(|s| BASE + elf.vaddr_to_offset(s.start).unwrap())
        .expect("marker");
    let len = std::fs::metadata(&exe)
        .unwrap()
        .len()
        .next_multiple_of(4096);
    (exe.to_str().unwrap().to_string(), marker, len)
}

/// A stream of `n` processes, each: COMM, MMAP2 of this test binary, a
/// sample in `short_lived_marker`, EXIT; every 10 processes the 10
/// before them exit and a round ends.
fn stream(n: u32) -> Vec<u8> {
    let (exe, marker, len) = this_binary_at_base();
    let mut w = perfdata::memory_writer(perfdata::attr(
        128,
        1000,
        perfdata::CALLCHAIN_SAMPLES,
        SAMPLE_ID_ALL,
    ));
    let exit = |pid: u32, t: u64| {
        // EXIT: pid, ppid, tid, ptid, time, then the trailer.
        let mut e = Vec::new();
        for v in [pid, 1, pid, 1] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.extend_from_slice(&t.to_le_bytes());
        e.extend_from_slice(&sample_id(pid, t, 0));
        rec(record_type::EXIT, 0, &e)
    };
    let mut t = 1000u64;
    let mut running: Vec<u32> = Vec::new();
    for i in 0..n {
        let pid = 10_000 + i;
        t += 10;
        let mut comm = perfdata::comm(pid, &format!("short{}", i % 3));
        comm.extend_from_slice(&sample_id(pid, t, 0));
        w.write_record(&rec(record_type::COMM, misc::COMM_EXEC, &comm))
            .unwrap();
        let mut mm = perfdata::mmap2(pid, BASE, len, 5, &exe);
        mm.extend_from_slice(&sample_id(pid, t + 1, 0));
        w.write_record(&rec(record_type::MMAP2, misc::USER, &mm))
            .unwrap();
        let mut s = (marker + 1).to_le_bytes().to_vec();
        s.extend_from_slice(&sample_id(pid, t + 2, 0));
        s.extend_from_slice(&1000u64.to_le_bytes());
        s.extend_from_slice(&0u64.to_le_bytes()); // empty call chain
        w.write_record(&rec(record_type::SAMPLE, misc::USER, &s))
            .unwrap();
        running.push(pid);
        // Every 10 processes, the 10 before them exit, and a round ends.
        if i % 10 == 9 {
            let older = running.len().saturating_sub(10);
            for pid in running.drain(..older) {
                t += 1;
                w.write_record(&exit(pid, t)).unwrap();
            }
            w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
                .unwrap();
        }
    }
    for pid in running {
        t += 1;
        w.write_record(&exit(pid, t)).unwrap();
    }
    w.finish(&pmx_perfdata::Features::default())
        .unwrap()
        .into_inner()
}

#[test]
fn live_forgets_processes_after_their_exit() {
    let n = 300;
    std::hint::black_box(short_lived_marker(std::hint::black_box(3)));
    let o = Options {
        kallsyms: KernelSymbols::Off,
        ..Options::default()
    };
    let mut live = Live::new(Reader::new(Cursor::new(stream(n))).unwrap(), &o, false);
    let mut most = 0;
    while live.next_round().unwrap() {
        let st = live.stats();
        most = most.max(st.symbolizer.processes);
        // At most the processes of a round and the one before it (a
        // round's records are applied up to the previous round's end).
        assert!(st.symbolizer.processes <= 20, "round: {st:?}");
        assert!(st.threads <= 20, "round: {st:?}");
    }
    let st = live.stats();
    assert!(most > 0, "processes were seen");
    assert_eq!(st.symbolizer.processes, 0, "every process exited: {st:?}");
    assert_eq!(st.threads, 0, "{st:?}");
    assert!(st.symbolizer.binaries <= 1, "{st:?}");
    // The rows made before the exits keep their names and counts.
    let p = live.snapshot();
    let marker: u64 = (p.events[0].rows.iter())
        .filter(|r| {
            r.symbol
                .as_deref()
                .is_some_and(|s| s.contains("short_lived_marker"))
        })
        .map(|r| r.samples)
        .sum();
    assert_eq!(marker, u64::from(n));
    assert!(p.events[0]
        .rows
        .iter()
        .any(|r| r.comm.as_deref() == Some("short1")));
}

/// The sample-id trailer of thread `tid` of `pid` at `t` on CPU 0.
fn ids(pid: u32, tid: u32, t: u64) -> Vec<u8> {
    let mut b = [pid.to_le_bytes(), tid.to_le_bytes()].concat();
    b.extend_from_slice(&t.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b
}

/// A process whose main thread ends first (`pthread_exit`) while another
/// thread runs on in its maps: that thread's later samples still resolve,
/// and the process is forgotten at its last thread's EXIT.
#[test]
fn a_process_outlives_its_main_thread() {
    std::hint::black_box(short_lived_marker(std::hint::black_box(5)));
    let (exe, marker, len) = this_binary_at_base();
    let (pid, worker) = (20_000u32, 20_001u32);
    let mut w = perfdata::memory_writer(perfdata::attr(
        128,
        1000,
        perfdata::CALLCHAIN_SAMPLES,
        SAMPLE_ID_ALL,
    ));
    let round = |w: &mut pmx_perfdata::Writer<Cursor<Vec<u8>>>| {
        w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
            .unwrap();
    };
    for (tid, name, t) in [(pid, "leader", 1000), (worker, "worker", 1001)] {
        let mut c = [pid.to_le_bytes(), tid.to_le_bytes()].concat();
        c.extend_from_slice(&perfdata::padded(name.as_bytes()));
        c.extend_from_slice(&ids(pid, tid, t));
        w.write_record(&rec(record_type::COMM, 0, &c)).unwrap();
    }
    let mut mm = perfdata::mmap2(pid, BASE, len, 5, &exe);
    mm.extend_from_slice(&ids(pid, pid, 1002));
    w.write_record(&rec(record_type::MMAP2, misc::USER, &mm))
        .unwrap();
    let exit = |tid: u32, t: u64| {
        let mut e = Vec::new();
        for v in [pid, 1, tid, 1] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.extend_from_slice(&t.to_le_bytes());
        e.extend_from_slice(&ids(pid, tid, t));
        rec(record_type::EXIT, 0, &e)
    };
    // The main thread exits; the worker samples on, then exits too.
    w.write_record(&exit(pid, 1003)).unwrap();
    round(&mut w);
    let mut s = (marker + 1).to_le_bytes().to_vec();
    s.extend_from_slice(&ids(pid, worker, 1010));
    s.extend_from_slice(&1000u64.to_le_bytes());
    s.extend_from_slice(&0u64.to_le_bytes()); // empty call chain
    w.write_record(&rec(record_type::SAMPLE, misc::USER, &s))
        .unwrap();
    round(&mut w);
    w.write_record(&exit(worker, 1020)).unwrap();
    round(&mut w);
    let bytes = w
        .finish(&pmx_perfdata::Features::default())
        .unwrap()
        .into_inner();
    let o = Options {
        kallsyms: KernelSymbols::Off,
        ..Options::default()
    };
    let mut live = Live::new(Reader::new(Cursor::new(bytes)).unwrap(), &o, false);
    while live.next_round().unwrap() {}
    let st = live.stats();
    assert_eq!(
        st.symbolizer.processes, 0,
        "gone with its last thread: {st:?}"
    );
    assert_eq!(st.threads, 0, "{st:?}");
    let p = live.snapshot();
    let rows = &p.events[0].rows;
    assert!(
        rows.iter().any(|r| r.comm.as_deref() == Some("worker")
            && r.symbol
                .as_deref()
                .is_some_and(|s| s.contains("short_lived_marker"))),
        "the worker's sample after the main thread's exit: {:?}",
        rows.iter()
            .map(|r| (&r.comm, &r.symbol))
            .collect::<Vec<_>>()
    );
}
