//! The exporters' input from a synthetic perf.data (pmx-perfdata's
//! writer, read back from memory): every sample reaches the
//! [`Collector`] with its time, thread and call chain (functions of this
//! very test binary, mapped by an MMAP2), a sample written before the
//! MMAP and COMM it needs is still resolved (the replay's time order),
//! LOST and THROTTLE/UNTHROTTLE records become markers with their times,
//! and the Firefox and pprof writers carry them: the `Throttled` interval
//! and the `Lost records` count in the JSON, the sample types and weights
//! in the protobuf. Group members as extra columns go through
//! `Export::add_weights`.

use pmx_perfdata::format::{callchain, misc, record_type};
use pmx_perfdata::{Features, Reader};
use pmx_profile::export::collect::Collector;
use pmx_profile::export::{firefox, pprof, Export, ExportEvent};
use pmx_profile::profile::build_with;
use pmx_profile::profile::sink::SideKind;
use pmx_profile::{Options, SortKey};
use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_testkit::perfdata::{self, record as rec, sample_id, SAMPLE_ID_ALL};
use std::io::Cursor;

#[inline(never)]
pub fn export_leaf(x: u64) -> u64 {
    x.wrapping_mul(31).rotate_left(7)
}

#[inline(never)]
pub fn export_caller(x: u64) -> u64 {
    export_leaf(x) ^ 5
}

const PID: u32 = 91;
const BASE: u64 = 0x5555_0000_0000;

fn sample(ip: u64, time: u64, period: u64, chain: &[u64]) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&sample_id(PID, time, 0));
    b.extend_from_slice(&period.to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for c in chain {
        b.extend_from_slice(&c.to_le_bytes());
    }
    rec(record_type::SAMPLE, misc::USER, &b)
}

/// THROTTLE or UNTHROTTLE of event id 1 at `time`.
fn throttle(kind: u32, time: u64) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [time, 1, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&sample_id(PID, time, 0));
    rec(kind, 0, &b)
}

fn file() -> Vec<u8> {
    // Called, so that the linker keeps both.
    std::hint::black_box(export_caller(std::hint::black_box(3)));
    let exe = std::env::current_exe().unwrap();
    let elf = ElfFile::open(&exe).unwrap();
    let addr_of = |name: &str| {
        let s = (elf.symbols().iter())
            .find(|s| demangle(&s.name).ends_with(name))
            .expect(name);
        BASE + elf.vaddr_to_offset(s.start).unwrap()
    };
    let (leaf, caller) = (addr_of("::export_leaf"), addr_of("::export_caller"));
    let st = perfdata::CALLCHAIN_SAMPLES;
    let mut w = perfdata::memory_writer(perfdata::attr(128, 1000, st, SAMPLE_ID_ALL));
    let chain = [callchain::CONTEXT_USER, leaf + 2, caller + 5];
    // Before the COMM and MMAP2 it needs in the file, after them in time.
    w.write_record(&sample(leaf + 2, 300, 1000, &chain))
        .unwrap();
    let mut comm = perfdata::comm(PID, "prog");
    comm.extend_from_slice(&sample_id(PID, 100, 0));
    w.write_record(&rec(record_type::COMM, misc::COMM_EXEC, &comm))
        .unwrap();
    let len = std::fs::metadata(&exe)
        .unwrap()
        .len()
        .next_multiple_of(4096);
    let mut mm = perfdata::mmap2(PID, BASE, len, 5, exe.to_str().unwrap());
    mm.extend_from_slice(&sample_id(PID, 200, 0));
    w.write_record(&rec(record_type::MMAP2, misc::USER, &mm))
        .unwrap();
    w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
        .unwrap();
    w.write_record(&throttle(record_type::THROTTLE, 350))
        .unwrap();
    for t in 0..4 {
        w.write_record(&sample(leaf + 2, 400 + t, 2000, &chain))
            .unwrap();
    }
    let mut lost = Vec::new();
    for v in [1u64, 7] {
        lost.extend_from_slice(&v.to_le_bytes());
    }
    lost.extend_from_slice(&sample_id(PID, 420, 0));
    w.write_record(&rec(record_type::LOST, 0, &lost)).unwrap();
    w.write_record(&throttle(record_type::UNTHROTTLE, 450))
        .unwrap();
    w.write_record(&rec(record_type::FINISHED_ROUND, 0, &[]))
        .unwrap();
    w.finish(&Features::default()).unwrap().into_inner()
}

/// The export of the synthetic file, its one event named.
fn export() -> Export {
    let bytes = file();
    let mut reader = Reader::new(Cursor::new(bytes)).unwrap();
    let options = Options {
        sort: vec![SortKey::Symbol],
        ..Options::default()
    };
    let mut c = Collector::new(false);
    let p = build_with(&mut reader, &options, &mut |_, _| {}, Some(&mut c)).unwrap();
    assert_eq!(p.events[0].samples, 5);
    let mut x = c.into_export();
    x.events = vec![ExportEvent {
        name: "cpu-clock".into(),
        kept: true,
        clock: true,
        off_cpu: false,
        members: Vec::new(),
        column: 0,
    }];
    x.span = (300, 403);
    x
}

#[test]
fn every_sample_with_its_stack_and_the_side_band_as_markers() {
    let x = export();
    let times: Vec<u64> = x.samples.iter().map(|s| s.time).collect();
    assert_eq!(times, [300, 400, 401, 402, 403]);
    assert_eq!(x.threads.len(), 1);
    assert_eq!(
        (x.threads[0].pid, x.threads[0].comm.as_str()),
        (PID, "prog")
    );
    for s in &x.samples {
        let names: Vec<&str> = x
            .stack_locations(s.stack)
            .map(|l| {
                x.functions[x.locations[l as usize].function as usize]
                    .name
                    .as_str()
            })
            .map(|n| n.rsplit("::").next().unwrap())
            .collect();
        assert_eq!(names, ["export_leaf", "export_caller"], "leaf first");
    }
    // Both frames lie in the one mapping of this binary.
    assert_eq!(x.mappings.len(), 1);
    assert_eq!((x.mappings[0].start, x.mappings[0].offset), (BASE, 0));
    let marks: Vec<(u64, Option<u32>, SideKind)> = x
        .markers
        .iter()
        .map(|m| (m.time, m.event, m.kind))
        .collect();
    assert_eq!(
        marks,
        [
            (350, Some(0), SideKind::Throttle),
            (420, Some(0), SideKind::Lost(7)),
            (450, Some(0), SideKind::Unthrottle),
        ]
    );
}

#[test]
fn firefox_json_has_the_samples_and_the_markers() {
    let x = export();
    let mut out = Vec::new();
    firefox::write(&x, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let t = &v["threads"][0];
    assert_eq!(t["name"], "prog");
    assert_eq!(t["samples"]["length"], 5);
    // cpu-clock: each sample's period as its CPU time, in µs.
    let cpu: Vec<f64> = (t["samples"]["threadCPUDelta"].as_array().unwrap())
        .iter()
        .map(|d| d.as_f64().unwrap())
        .collect();
    assert_eq!(cpu, [1.0, 2.0, 2.0, 2.0, 2.0]);
    let strings = t["stringArray"].as_array().unwrap();
    let m = &t["markers"];
    let names: Vec<&str> = (m["name"].as_array().unwrap())
        .iter()
        .map(|n| strings[n.as_u64().unwrap() as usize].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Lost records", "Throttled"]);
    assert_eq!(m["data"][0]["count"].as_f64(), Some(7.0));
    // A unique-string field: an index into the thread's strings.
    let event = m["data"][0]["event"].as_u64().unwrap() as usize;
    assert_eq!(strings[event], "cpu-clock");
    // Times in ms from the first sample (300 ns).
    assert_eq!(m["startTime"][0].as_f64().unwrap(), 120e-6);
    assert_eq!(m["startTime"][1].as_f64().unwrap(), 50e-6);
    assert_eq!(m["endTime"][1].as_f64().unwrap(), 150e-6);
}

/// The fields of one protobuf message: (field number, varint or bytes).
fn fields(mut b: &[u8]) -> Vec<(u64, Result<u64, Vec<u8>>)> {
    let varint = |b: &mut &[u8]| {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                return v;
            }
        }
    };
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => out.push((key >> 3, Ok(varint(&mut b)))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((key >> 3, Err(b[..n].to_vec())));
                b = &b[n..];
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

#[test]
fn pprof_sample_types_and_weights() {
    let x = export();
    let p = fields(&pprof::encode(&x));
    let strings: Vec<String> = (p.iter().filter(|f| f.0 == 6))
        .map(|f| String::from_utf8(f.1.clone().unwrap_err()).unwrap())
        .collect();
    assert_eq!(strings[0], "");
    let types: Vec<(String, String)> = (p.iter().filter(|f| f.0 == 1))
        .map(|f| {
            let vt = fields(f.1.as_ref().unwrap_err());
            let s = |i: usize| strings[*vt[i].1.as_ref().unwrap() as usize].clone();
            (s(0), s(1))
        })
        .collect();
    assert_eq!(
        types,
        [
            ("cpu-clock_samples".into(), "count".into()),
            ("cpu-clock".into(), "nanoseconds".into())
        ]
    );
    // One sample: the five with one stack and thread, summed; values
    // packed (field 2 of Sample).
    let samples: Vec<_> = p.iter().filter(|f| f.0 == 2).collect();
    assert_eq!(samples.len(), 1);
    let s = fields(samples[0].1.as_ref().unwrap_err());
    let values = s.iter().find(|f| f.0 == 2).unwrap().1.clone().unwrap_err();
    // 5 (one byte), 9000 = 0x2328 as a varint: 0xa8 0x46.
    assert_eq!(values, [5, 0xa8, 0x46]);
    assert_eq!(p.iter().filter(|f| f.0 == 4).count(), 2, "two locations");
    assert_eq!(p.iter().filter(|f| f.0 == 5).count(), 2, "two functions");
    // duration_nanos: 403 − 300.
    assert!(p.contains(&(10, Ok(103))));
}

#[test]
fn group_members_are_extra_columns() {
    let mut x = export();
    x.events[0].members = vec!["instructions".into()];
    x.extra = vec![(0, 11), (0, 22)];
    x.samples[1].extra = (0, 1);
    x.samples[2].extra = (1, 1);
    let columns: Vec<String> = x.columns().into_iter().map(|c| c.name).collect();
    assert_eq!(columns, ["cpu-clock_samples", "cpu-clock", "instructions"]);
    let mut v = vec![0; 3];
    for s in &x.samples {
        x.add_weights(s, &mut v);
    }
    assert_eq!(v, [5, 9000, 33]);
}
