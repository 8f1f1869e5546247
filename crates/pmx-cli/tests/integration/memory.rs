//! Memory-access samples against perf 6.1, side by side: on the real
//! Skylake-SP PEBS load-latency recording of perf_data_converter
//! (`weight_struct`, 14 samples, in `../shared/data/perfdata`) `pmx
//! script`'s memory fields, `pmx report --mem-mode` and `pmx mem report`
//! (also as `perf mem report`, pmx under perf's name) print what perf
//! prints; and every `data_src` field combination, written into a file
//! by pmx-perfdata's writer, is decoded as perf decodes it.

use crate::common::{pmx, stderr, stdout, PMX};
use pmx_perfdata::format::{record_type, sample_type};
use pmx_testkit::perfdata::{attr, memory_writer, record};
use pmx_testkit::{cc, perf};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn weight_struct() -> Option<PathBuf> {
    pmx_testkit::shared::shared_data("perfdata/perf_data_converter__perf.data.weight_struct")
}

/// perf's output of `perf ARGS -i FILE` (stderr dropped).
pub(crate) fn perf_out(args: &[&str], file: &Path) -> String {
    let o = perf::on_file(args, file);
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// pmx's output of `pmx ARGS -i FILE`, which must succeed.
pub(crate) fn pmx_out(args: &[&str], file: &Path) -> String {
    let mut a = args.to_vec();
    let f = file.to_str().unwrap();
    a.extend(["-i", f]);
    let o = pmx(&a);
    assert!(o.status.success(), "pmx {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The lines of a report but perf's tip (a random line of perf's, pmx's own).
pub(crate) fn without_tip(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| !l.starts_with("# (Tip:"))
        .map(String::from)
        .collect()
}

pub(crate) fn same_lines(what: &str, pmx: &[String], perf: &[String]) {
    for (i, (a, b)) in pmx.iter().zip(perf).enumerate() {
        assert_eq!(
            a,
            b,
            "{what}: line {} differs\npmx:  {a:?}\nperf: {b:?}",
            i + 1
        );
    }
    assert_eq!(
        pmx.len(),
        perf.len(),
        "{what}: line counts\n{}",
        pmx.join("\n")
    );
}

#[test]
fn script_prints_the_memory_fields_as_perf_does() {
    let Some(f) = weight_struct() else { return };
    if !perf::require("") {
        return;
    }
    for fields in [
        "ip,addr,data_src,weight",
        "ip,addr,data_src,weight,ins_lat",
        "comm,tid,ip,sym,addr,data_src,weight,ins_lat",
        "data_src",
    ] {
        let theirs = perf_out(&["script", "-F", fields], &f);
        let ours = pmx_out(&["script", "-F", fields], &f);
        assert_eq!(theirs.lines().count(), 14, "{fields}");
        same_lines(fields, &without_tip(&ours), &without_tip(&theirs));
    }
    // The raw event's default fields hold the memory ones too.
    let theirs = perf_out(&["script"], &f);
    same_lines(
        "default",
        &without_tip(&pmx_out(&["script"], &f)),
        &without_tip(&theirs),
    );
    // A field the samples lack is refused, as perf refuses it.
    let o = pmx(&["script", "-F", "ip,phys_addr", "-i", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("PHYS_ADDR"), "{}", stderr(&o));
    // JSON lines carry the same values.
    let json = pmx_out(
        &["script", "--json", "-F", "ip,addr,data_src,weight,ins_lat"],
        &f,
    );
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["addr"], "0x55ffba5cda08");
    assert_eq!(first["data_src"], "0x11868100242");
    assert_eq!(first["mem"]["lvl"], "LFB/MAB or LFB/MAB hit");
    assert_eq!(first["weight"], 225);
    assert_eq!(first["ins_lat"], 0);
}

/// A file of one raw event (PEBS-like) whose samples carry these data
/// sources (and weights, ascending times).
fn data_src_file(dir: &Path, values: &[u64]) -> PathBuf {
    let st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::ADDR
        | sample_type::WEIGHT
        | sample_type::DATA_SRC;
    let mut a = attr(128, 10007, st, 0);
    a[0..4].copy_from_slice(&4u32.to_le_bytes()); // PERF_TYPE_RAW
    a[8..16].copy_from_slice(&0x1cdu64.to_le_bytes());
    let mut w = memory_writer(a);
    for (i, &v) in values.iter().enumerate() {
        let mut b = Vec::new();
        for x in [
            0x401000 + i as u64,
            7 | 7 << 32,
            1000 + i as u64,
            0x7f00_0000 + 64 * i as u64,
        ] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&(30 + i as u64).to_le_bytes());
        b.extend_from_slice(&v.to_le_bytes());
        w.write_record(&record(record_type::SAMPLE, 2, &b)).unwrap();
    }
    // Two CPUs of one node: perf c2c reads the topology.
    use pmx_perfdata::format::feature;
    use pmx_perfdata::topology::{cpu_topology, numa_topology, CpuIds, NumaNode};
    let cpu = |core| CpuIds {
        core,
        die: 0,
        socket: 0,
    };
    let node = NumaNode {
        node: 0,
        mem_total: 1 << 20,
        mem_free: 1 << 19,
        cpus: vec![0, 1],
    };
    let raw = [
        (feature::CPU_TOPOLOGY, cpu_topology(&[cpu(0), cpu(1)])),
        (feature::NUMA_TOPOLOGY, numa_topology(&[node])),
    ];
    let features = pmx_perfdata::write::Features {
        nrcpus: Some((2, 2)),
        ..Default::default()
    };
    let bytes = w.finish_with(&features, &raw).unwrap().into_inner();
    let path = dir.join("data_src.data");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Every value of each `data_src` field alone, and combinations (perf's
/// tests/mem.c cases among them), decoded by pmx as perf decodes them.
#[test]
fn every_data_src_field_is_decoded_as_perf_decodes_it() {
    if !perf::require("") {
        return;
    }
    // (shift, bits) of op, lvl, snoop, lock, dtlb, lvl_num, remote, snoopx, blk, hops.
    let fields = [
        (0, 5),
        (5, 14),
        (19, 5),
        (24, 2),
        (26, 7),
        (33, 4),
        (37, 1),
        (38, 2),
        (40, 3),
        (43, 3),
    ];
    let mut values: Vec<u64> = vec![0];
    for (shift, bits) in fields {
        // Every value of a small field, each bit and pairs of a wide one.
        let n = if bits <= 5 { 1u64 << bits } else { 0 };
        values.extend((1..n).map(|v| v << shift));
        if bits > 5 {
            for i in 0..bits {
                values.push(1 << (shift + i));
                values.push(0b11 << (shift + i) & (((1 << bits) - 1) << shift));
            }
        }
    }
    // Hops past perf's table (5-7) index past its end: left out.
    values.retain(|v| (v >> 43) & 7 < 5);
    values.extend([
        0x11868100242,                                 // LFB hit, L1/L2 TLB hit (weight_struct)
        0x10650100842,                                 // L3 hit, L2 TLB miss
        0x1026a100142,                                 // L1 hit, locked
        0x2_0000_0000 | 1 << 37 | 1 << 43,             // remote core, same node L1
        0xd << 33 | 1 << 37 | 3 << 43 | 0x80 << 5 | 2, // load, remote board RAM
        0x3fff << 5 | 0x1f << 19 | 0x7f << 26 | 1 << 37 | 3 << 38 | 0xd << 33, // cut at 99
        0x10 << 19 | 2 << 38 | 0x40 << 5 | 2,          // HitM, peer
    ]);
    let dir = tempfile::tempdir().unwrap();
    let f = data_src_file(dir.path(), &values);
    let theirs = perf_out(&["script", "-F", "data_src"], &f);
    let ours = pmx_out(&["script", "-F", "data_src"], &f);
    assert_eq!(theirs.lines().count(), values.len());
    same_lines("data_src", &without_tip(&ours), &without_tip(&theirs));
    let theirs = perf_out(&["script", "-F", "ip,addr,data_src,weight"], &f);
    let ours = pmx_out(&["script", "-F", "ip,addr,data_src,weight"], &f);
    same_lines(
        "with addr and weight",
        &without_tip(&ours),
        &without_tip(&theirs),
    );
}

#[test]
fn mem_mode_reports_are_perfs() {
    let Some(f) = weight_struct() else { return };
    if !perf::require("") {
        return;
    }
    let cases: &[&[&str]] = &[
        &["report", "--mem-mode", "--stdio"],
        &["report", "--mem-mode", "--stdio", "-s", "mem,snoop"],
        &[
            "report",
            "--mem-mode",
            "--stdio",
            "-s",
            "dso_daddr,locked,comm",
        ],
        &[
            "report",
            "--stdio",
            "--mem-mode",
            "-n",
            "--sort",
            "tlb,blocked,local_ins_lat,symbol_daddr",
        ],
        &["report", "--stdio", "--mem-mode", "-F", "overhead,mem,sym"],
        &["mem", "report", "--stdio"],
        &["mem", "-t", "store", "report", "--stdio"],
    ];
    // pmx under perf's name (pmx's own `symbol_daddr` names data
    // objects: mem_objects.rs).
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    for args in cases {
        let theirs = perf_out(args, &f);
        let o = Command::new(&as_perf)
            .args(*args)
            .arg("-i")
            .arg(&f)
            .output();
        let o = o.unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let ours = stdout(&o);
        same_lines(&args.join(" "), &without_tip(&ours), &without_tip(&theirs));
    }
    // `pmx mem report` (perf's layout: `-n`) is perf's too.
    let theirs = perf_out(&["mem", "report", "--stdio"], &f);
    let ours = pmx_out(&["mem", "report", "--stdio"], &f);
    same_lines("pmx mem report", &without_tip(&ours), &without_tip(&theirs));
}

#[test]
fn mem_mode_on_a_file_without_data_sources_says_what_perf_says() {
    let dir = tempfile::tempdir().unwrap();
    let st = sample_type::IP | sample_type::TID | sample_type::TIME;
    let w = memory_writer(attr(128, 1000, st, 0));
    let path = dir.path().join("plain.data");
    std::fs::write(&path, w.finish(&Default::default()).unwrap().into_inner()).unwrap();
    let o = pmx(&["report", "--mem-mode", "-i", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("Selected --mem-mode but no mem data. Did you call perf record without -d?"),
        "{}",
        stderr(&o)
    );
}

/// A program whose first touches land in a known global array (`.bss`)
/// and a heap block, one write per page, which prints both addresses.
const TOUCH: &str = "#include <stdio.h>\n#include <stdlib.h>\n#define N (256 * 4096)\n\
    static char buf[N];\n\
    int main(void) { char *h = malloc(N); printf(\"%p %p %d\\n\", (void *)buf, (void *)h, N); fflush(stdout);\n\
    for (int i = 0; i < N; i += 4096) buf[i] = 1;\n\
    for (int i = 0; i < N; i += 4096) h[i] = 2;\n\
    return buf[4096] + h[8192] == 3 ? 0 : 1; }\n";

/// `pmx record -d -e page-faults -c 1`: every fault's address is the
/// sample's; perf reads them as pmx does, they fall on the pages the
/// program touched, and both tools name their mappings alike.
#[test]
fn record_d_samples_the_faulting_addresses() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Ok(bin) = cc::compile(dir.path(), "touch", TOUCH, &["-O1"]) else {
        return pmx_testkit::skip("no C compiler");
    };
    let file = dir.path().join("pf.data");
    let o = Command::new(PMX)
        .args(["record", "-q", "-d", "-e", "page-faults", "-c", "1", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = stdout(&o);
    let w: Vec<&str> = printed.split_whitespace().collect();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (buf, heap, n) = (hex(w[0]), hex(w[1]), w[2].parse::<u64>().unwrap());
    let theirs = perf_out(&["script", "-F", "addr"], &file);
    let ours = pmx_out(&["script", "-F", "addr"], &file);
    same_lines("script -F addr", &without_tip(&ours), &without_tip(&theirs));
    let addrs: Vec<u64> = ours.lines().map(|l| hex(l.trim())).collect();
    // Each page was first written once: its fault's address is the write's.
    for (base, what) in [(buf, "the array"), (heap, "the heap block")] {
        let inside: Vec<u64> = (addrs.iter().copied())
            .filter(|a| (base..base + n).contains(a))
            .collect();
        assert!(
            inside.len() >= 200,
            "{what}: {} faults of 256 pages",
            inside.len()
        );
        assert!(
            inside.iter().all(|a| (a - base) % 4096 == 0),
            "{what}: {inside:x?}"
        );
    }
    let args = [
        "report",
        "--mem-mode",
        "--stdio",
        "--sort",
        "dso_daddr,comm",
    ];
    let theirs = perf_out(&args, &file);
    same_lines(
        "dso_daddr",
        &without_tip(&pmx_out(&args, &file)),
        &without_tip(&theirs),
    );
    // The samples carry what perf's -d asks for.
    let evlist = perf_out(&["evlist", "-v"], &file);
    assert!(
        evlist.contains("ADDR") && evlist.contains("DATA_SRC") && evlist.contains("mmap_data: 1"),
        "{evlist}"
    );
    // --phys-data, --data-page-size and -W add their fields (what the
    // kernel gives a software event for them: perf reads what pmx reads).
    let more = dir.path().join("more.data");
    let o = Command::new(PMX)
        .args([
            "record",
            "-q",
            "-d",
            "--phys-data",
            "--data-page-size",
            "-W",
        ])
        .args(["-e", "page-faults", "-c", "1", "-o"])
        .arg(&more)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let evlist = perf_out(&["evlist", "-v"], &more);
    for bit in ["PHYS_ADDR", "DATA_PAGE_SIZE", "WEIGHT_STRUCT"] {
        assert!(evlist.contains(bit), "{bit}: {evlist}");
    }
    let fields = [
        "script",
        "-F",
        "ip,addr,weight,ins_lat,phys_addr,data_page_size",
    ];
    let theirs = perf_out(&fields, &more);
    same_lines(
        "page sizes",
        &without_tip(&pmx_out(&fields, &more)),
        &without_tip(&theirs),
    );
}

/// `pmx mem record` uses the machine's precise memory events; where
/// there are none (a virtual machine) it refuses, saying why and what
/// samples data addresses here.
#[test]
fn mem_record_uses_the_memory_events_or_says_why_not() {
    let root = pmx_sys::SysRoot::host();
    if pmx_args::mem_words::events::mem_events(&root, true, true, 30).is_ok() {
        return pmx_testkit::skip("this machine has memory events: the refusal is not tested");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.data");
    let o = pmx(&["mem", "record", "-o", out.to_str().unwrap(), "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("no memory-access sampling") && e.contains("record -d -e page-faults"),
        "{e}"
    );
    assert!(!out.exists());
}

/// `c2c report --stats` counts what perf c2c counts: on weight_struct,
/// and on a file of local and remote HITMs, peers, DRAM, stores, locked
/// and blocked accesses (some on one cache line) written by pmx-perfdata.
#[test]
fn c2c_stats_are_perfs() {
    if !perf::require("") {
        return;
    }
    let lv = |l: u64| l << 5;
    let (hit, miss) = (lv(0x2), lv(0x4));
    let load = 2;
    let store = 4;
    let values = [
        load | hit | lv(0x40) | 0x10 << 19,                // L3 local HITM
        load | hit | lv(0x40) | 0x10 << 19 | 1 << 24 << 1, // locked HITM
        load | lv(0x400) | 0x10 << 19,                     // remote cache HITM
        load | lv(0x800) | 0x4 << 19,                      // remote cache HIT
        load | 1 << 37 | 0x2 << 38,                        // remote, peer
        load | hit | lv(0x80) | 0x4 << 19,                 // local DRAM, shared
        load | hit | lv(0x100) | 0x2 << 19,                // remote DRAM
        load | hit | lv(0x20) | 0x2 << 38,                 // L2 peer
        load | hit | lv(0x10) | 2 << 40,                   // LFB, blocked by data
        load | miss | lv(0x08) | 4 << 40,                  // L1 miss, blocked by address
        load | hit | lv(0x3000),                           // uncached, I/O
        store | hit | lv(0x08),                            // store L1 hit
        store | miss | lv(0x08),                           // store L1 miss
        store | lv(0x01),                                  // store N/A
        0,                                                 // unparsable
    ];
    let dir = tempfile::tempdir().unwrap();
    let f = data_src_file(dir.path(), &values);
    let mut files = vec![f];
    files.extend(weight_struct());
    for f in &files {
        let theirs = perf_out(&["c2c", "report", "--stats"], f);
        let ours = pmx_out(&["c2c", "report", "--stats"], f);
        same_lines("c2c --stats", &without_tip(&ours), &without_tip(&theirs));
    }
}
