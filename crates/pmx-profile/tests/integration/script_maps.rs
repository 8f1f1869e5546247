//! `pmx script` resolves each sample with the maps of its time: a synthetic
//! perf.data (pmx-perfdata's writer) samples one address of one process
//! many times, while a later MMAP2 puts another file over that address and
//! a FORK gives a child the parent's maps. Every line must name what was
//! mapped at the sample's time in the sample's process, though the same
//! (process, address) repeats (`pmx script` keeps resolved sites until a
//! map or fork changes them).

use pmx_perfdata::format::{misc, record_type};
use pmx_perfdata::Features;
use pmx_profile::script::{script, ScriptOptions};
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};

#[inline(never)]
pub fn mapped_function(x: u64) -> u64 {
    x.wrapping_mul(17).rotate_left(3) ^ 11
}

const BASE: u64 = 0x5555_0000_0000;

fn sample(pid: u32, ip: u64, time: u64) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(pid, time, 0));
    b.extend_from_slice(&1000u64.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // no call chain
    rec(record_type::SAMPLE, misc::USER, &b)
}

fn with_trailer(mut body: Vec<u8>, pid: u32, time: u64) -> Vec<u8> {
    body.extend_from_slice(&sample_id(pid, time, 0));
    body
}

#[test]
fn every_line_uses_the_maps_of_its_time_and_process() {
    assert_ne!(mapped_function(1), 0);
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let sym = (elf.symbols().iter())
        .find(|s| demangle(&s.name).ends_with("::mapped_function"))
        .expect("mapped_function in the test binary");
    let addr = BASE + elf.vaddr_to_offset(sym.start).unwrap() + 2;
    let len = std::fs::metadata(&exe)
        .unwrap()
        .len()
        .next_multiple_of(4096);

    let mut w = perfdata::memory_writer(perfdata::attr(
        128,
        1000,
        perfdata::CALLCHAIN_SAMPLES,
        SAMPLE_ID_ALL,
    ));
    let mut put = |r: Vec<u8>| w.write_record(&r).unwrap();
    put(rec(
        record_type::COMM,
        misc::COMM_EXEC,
        &with_trailer(perfdata::comm(77, "prog"), 77, 10),
    ));
    let exe_map = perfdata::mmap2(77, BASE, len, 5, exe.to_str().unwrap());
    put(rec(
        record_type::MMAP2,
        misc::USER,
        &with_trailer(exe_map, 77, 20),
    ));
    for t in 0..3 {
        put(sample(77, addr, 100 + t));
    }
    // Another file over the same addresses of process 77.
    let other = perfdata::mmap2(77, BASE, len, 5, "/nonexistent/other.so");
    put(rec(
        record_type::MMAP2,
        misc::USER,
        &with_trailer(other, 77, 200),
    ));
    for t in 0..2 {
        put(sample(77, addr, 300 + t));
    }
    // Process 78 forked from 77 sees 77's maps; 79 has none.
    let mut fork = Vec::new();
    for v in [78u32, 77, 78, 77] {
        fork.extend_from_slice(&v.to_le_bytes());
    }
    fork.extend_from_slice(&400u64.to_le_bytes());
    put(rec(record_type::FORK, 0, &with_trailer(fork, 78, 400)));
    put(sample(78, addr, 500));
    put(sample(79, addr, 501));
    put(sample(77, addr, 502));
    put(rec(record_type::FINISHED_ROUND, 0, &[]));
    let bytes = w.finish(&Features::default()).unwrap().into_inner();

    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("maps.data");
    std::fs::write(&input, bytes).unwrap();
    let opts = ScriptOptions::new(input, vec!["pid,ip,sym,dso".into()], false, false);
    let mut out = Vec::new();
    let summary = script(&opts, &mut out).unwrap();
    assert_eq!(summary.samples, 8);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<(&str, &str)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2])
        })
        .collect();
    // This test binary is the crate `integration`, the test its module.
    let exe_sym = "integration::script_maps::mapped_function";
    assert!(lines[..3].iter().all(|l| *l == ("77", exe_sym)), "{text}");
    assert_eq!(lines[3..5], [("77", "[unknown]"); 2], "{text}");
    assert!(
        text.lines()
            .nth(3)
            .unwrap()
            .ends_with("(/nonexistent/other.so)"),
        "{text}"
    );
    assert_eq!(lines[5], ("78", "[unknown]"), "{text}");
    assert!(
        text.lines()
            .nth(5)
            .unwrap()
            .ends_with("(/nonexistent/other.so)"),
        "{text}"
    );
    assert_eq!(lines[6], ("79", "[unknown]"), "{text}");
    assert!(
        text.lines().nth(6).unwrap().ends_with("([unknown])"),
        "{text}"
    );
    assert_eq!(lines[7], ("77", "[unknown]"), "{text}");
}
