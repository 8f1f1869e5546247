//! Call chains read as perf reads them (found by the differential suite
//! against perf, `crates/pmx-cli/tests/perf_diff.rs`): a chain with a
//! value in the marker range that is no marker (a corrupt frame-pointer
//! walk, e.g. `u64::MAX`, or `PERF_CONTEXT_USER - 1`, the value pmx once
//! marked its LBR call stacks with inside the chain) is dropped whole, by
//! `report` (children, stacks) and by `script`; a caller's return address that no symbol
//! covers is shown as that address, not the call's (one less).

use pmx_perfdata::format::{callchain, misc, record_type};
use pmx_perfdata::{Features, Reader};
use pmx_profile::script::{script, ScriptOptions};
use pmx_profile::{build, Options, SortKey};
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;

#[inline(never)]
pub fn chain_leaf(x: u64) -> u64 {
    x.wrapping_mul(29).rotate_left(9)
}

#[inline(never)]
pub fn chain_caller(x: u64) -> u64 {
    chain_leaf(x) ^ 3
}

const PID: u32 = 91;
const BASE: u64 = 0x5555_0000_0000;
/// An address in no mapping: an `[unknown]` frame.
const NOWHERE: u64 = 0x1234;

fn sample(ip: u64, time: u64, chain: &[u64]) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(PID, time, 0));
    b.extend_from_slice(&1000u64.to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    rec(record_type::SAMPLE, misc::USER, &b)
}

fn with_trailer(mut body: Vec<u8>, time: u64) -> Vec<u8> {
    body.extend_from_slice(&sample_id(PID, time, 0));
    body
}

/// The values in the marker range that are no marker the tests put in a
/// chain.
const CORRUPT: [u64; 2] = [u64::MAX, callchain::CONTEXT_USER - 1];

/// Two samples in `chain_leaf`: one with a sound chain (leaf, caller, an
/// unknown return address), one whose chain holds `corrupt` after the
/// caller.
fn file(corrupt: u64) -> Vec<u8> {
    assert_ne!(chain_caller(1), 0);
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let addr_of = |name: &str| {
        let s = (elf.symbols().iter())
            .find(|s| demangle(&s.name).ends_with(name))
            .expect(name);
        BASE + elf.vaddr_to_offset(s.start).unwrap()
    };
    let (leaf, caller) = (addr_of("::chain_leaf"), addr_of("::chain_caller"));
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
        &with_trailer(perfdata::comm(PID, "chains"), 10),
    ));
    let map = perfdata::mmap2(PID, BASE, len, 5, exe.to_str().unwrap());
    put(rec(record_type::MMAP2, misc::USER, &with_trailer(map, 20)));
    let user = callchain::CONTEXT_USER;
    put(sample(
        leaf + 2,
        100,
        &[user, leaf + 2, caller + 5, NOWHERE],
    ));
    put(sample(
        leaf + 2,
        101,
        &[user, leaf + 2, caller + 5, corrupt, NOWHERE + 0x100],
    ));
    put(rec(record_type::FINISHED_ROUND, 0, &[]));
    w.finish(&Features::default()).unwrap().into_inner()
}

#[test]
fn report_drops_a_corrupt_chain_and_shows_unknown_callers_at_their_address() {
    for corrupt in CORRUPT {
        report_drops(corrupt);
    }
}

fn report_drops(corrupt: u64) {
    let mut r = Reader::new(Cursor::new(file(corrupt))).unwrap();
    let o = Options {
        sort: vec![SortKey::Dso, SortKey::Symbol],
        children: true,
        stacks: true,
        ..Options::default()
    };
    let p = build(&mut r, &o, &mut |_, _| {}).unwrap();
    let e = &p.events[0];
    let children = |name: &str| {
        (e.rows.iter())
            .find(|r| r.symbol.as_deref().is_some_and(|s| s.ends_with(name)))
            .map(|r| r.children_samples)
    };
    assert_eq!(children("::chain_leaf"), Some(2));
    // Only the sound chain reaches the caller and the unknown frame.
    assert_eq!(children("::chain_caller"), Some(1));
    assert_eq!(children("0x0000000000001234"), Some(1), "{:?}", e.rows);
    assert_eq!(children("0x0000000000001233"), None);
    assert_eq!(children("0x0000000000001334"), None);
    // The corrupt sample's stack is its command and leaf alone.
    let alone: Vec<_> = (e.stacks.iter())
        .filter(|(frames, _, _)| frames.len() == 2)
        .collect();
    assert_eq!(alone.len(), 1, "{:?}", e.stacks);
    assert!(alone[0].0[1].ends_with("::chain_leaf"), "{:?}", e.stacks);
}

#[test]
fn script_prints_no_frame_of_a_corrupt_chain() {
    for corrupt in CORRUPT {
        script_drops(corrupt);
    }
}

fn script_drops(corrupt: u64) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("chains.data");
    std::fs::write(&input, file(corrupt)).unwrap();
    let opts = ScriptOptions::new(input, vec![], false, true);
    let mut out = Vec::new();
    script(&opts, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let samples: Vec<&str> = text.split("\n\n").filter(|s| !s.is_empty()).collect();
    assert_eq!(samples.len(), 2, "{text}");
    // The sound chain: leaf, caller, the unknown address (as perf shows it).
    let sound: Vec<&str> = samples[0].lines().skip(1).collect();
    assert_eq!(sound.len(), 3, "{text}");
    assert!(sound[1].contains("::chain_caller+0x5 ("), "{text}");
    assert_eq!(sound[2], "\t            1234 [unknown] ([unknown])");
    // The corrupt one: the sample line alone.
    assert_eq!(samples[1].lines().count(), 1, "{text}");
    assert!(samples[1].starts_with("chains    91 "), "{text}");
}
