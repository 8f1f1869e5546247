//! `pmx c2c report`'s cache-line tables against perf 6.1's, side by side
//! (pmx under perf's name too): the Shared Data Cache Line Table and the
//! Shared Cache Line Distribution Pareto, with each `-d` display, `-c`
//! coalescing and `--full-symbols`, on a file of local and remote HITMs,
//! peer hits, loads and stores on a few cache lines written by
//! pmx-perfdata's writer, and on the real `weight_struct` recording.

use crate::common::{pmx, stderr};
use crate::memory::{pmx_out, same_lines, weight_struct, without_tip};
use pmx_perfdata::format::{feature, record_type, sample_type};
use pmx_testkit::perf;
use pmx_testkit::perfdata::{attr, comm, memory_writer, mmap2, record};
use std::path::{Path, PathBuf};

/// One memory sample: code address, process, CPU, data address, weight,
/// data source.
struct S(u64, u32, u32, u64, u64, u64);

const LOAD: u64 = 2;
const STORE: u64 = 4;
const fn lv(l: u64) -> u64 {
    l << 5
}
const HIT: u64 = lv(0x2);
const MISS: u64 = lv(0x4);
/// A load that hit the local L3 modified in another core (local HITM).
const LHITM: u64 = LOAD | HIT | lv(0x40) | 0x10 << 19;
/// A load served by a remote cache, modified there (remote HITM).
const RHITM: u64 = LOAD | lv(0x400) | 0x10 << 19;
const L1: u64 = LOAD | HIT | lv(0x08);
const ST_HIT: u64 = STORE | HIT | lv(0x08);
const ST_MISS: u64 = STORE | MISS | lv(0x08);
/// A load that hit a peer core's L2 (local peer).
const LPEER: u64 = LOAD | HIT | lv(0x20) | 0x2 << 38;
/// A load served remotely by a peer (remote hit, remote peer).
const RPEER: u64 = LOAD | 1 << 37 | 0x2 << 38;

/// The samples: lines A (HITMs at three offsets, two processes, stores, a
/// plain load), B (a remote and a local HITM, a peer), C (stores only),
/// D (peers only), E (one HITM).
fn samples() -> Vec<S> {
    let (a, b, c, d, e) = (
        0x7f00_0000_1000u64,
        0x7f00_0000_2040u64,
        0x7f00_0000_3000u64,
        0x7f00_0000_4080u64,
        0x7f00_0000_5000u64,
    );
    vec![
        S(0x401000, 100, 0, a + 0x08, 100, LHITM),
        S(0x401000, 100, 1, a + 0x08, 121, LHITM),
        S(0x401010, 100, 1, a + 0x10, 300, RHITM),
        S(0x401020, 100, 0, a + 0x08, 0, ST_HIT),
        S(0x401020, 100, 1, a + 0x0c, 0, ST_MISS),
        S(0x401030, 100, 0, a + 0x20, 5, L1),
        S(0x401000, 101, 1, a + 0x08, 77, LHITM),
        S(0x402000, 100, 1, b, 400, RHITM),
        S(0x402000, 100, 0, b + 0x04, 50, LHITM),
        S(0x402010, 100, 0, b + 0x3c, 30, LPEER),
        S(0x403000, 100, 0, c, 0, ST_HIT),
        S(0x403000, 100, 1, c + 8, 0, ST_HIT),
        S(0x404000, 100, 1, d + 0x10, 200, RPEER),
        S(0x404000, 100, 0, d + 0x10, 20, LPEER),
        S(0x405000, 100, 1, e + 0x18, 60, LHITM),
        S(0x401000, 100, 1, a + 0x08, 140, LHITM),
        S(0x402000, 100, 0, b, 410, RHITM),
    ]
}

/// A c2c file of `samples()`: a program's text mapping and its anonymous
/// data for process 100, nothing mapped for process 101, two CPUs of one
/// node.
pub(crate) fn c2c_file(dir: &Path) -> PathBuf {
    let st = sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::ADDR
        | sample_type::CPU
        | sample_type::WEIGHT
        | sample_type::DATA_SRC;
    let mut a = attr(128, 10007, st, 0);
    a[0..4].copy_from_slice(&4u32.to_le_bytes()); // PERF_TYPE_RAW
    a[8..16].copy_from_slice(&0x1cdu64.to_le_bytes());
    let mut w = memory_writer(a);
    w.write_record(&record(record_type::COMM, 0, &comm(100, "c2cprog")))
        .unwrap();
    w.write_record(&record(record_type::COMM, 0, &comm(101, "other")))
        .unwrap();
    let text = mmap2(100, 0x400000, 0x10000, 5, "/nonexistent/c2cprog");
    w.write_record(&record(record_type::MMAP2, 2, &text))
        .unwrap();
    let anon = mmap2(100, 0x7f00_0000_0000, 0x10000, 3, "//anon");
    w.write_record(&record(record_type::MMAP2, 2, &anon))
        .unwrap();
    for (i, S(ip, pid, cpu, addr, weight, src)) in samples().into_iter().enumerate() {
        let mut b = Vec::new();
        b.extend_from_slice(&ip.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&(1000 + i as u64).to_le_bytes());
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&u64::from(cpu).to_le_bytes());
        b.extend_from_slice(&weight.to_le_bytes());
        b.extend_from_slice(&src.to_le_bytes());
        w.write_record(&record(record_type::SAMPLE, 2, &b)).unwrap();
    }
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
    let path = dir.join("c2c.data");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// perf's output of `perf ARGS -i FILE`. perf feeds a missing binary's
/// addresses to an addr2line child, which may exit first: under SIGPIPE's
/// default action that write ended perf (about every other run here).
/// perf runs with SIGPIPE ignored, so the write fails with EPIPE and perf
/// carries on with the line unknown, as when addr2line answers `??:0`.
fn perf_retrying(args: &[&str], file: &Path) -> String {
    use std::os::unix::process::CommandExt;
    let mut perf = std::process::Command::new("perf");
    perf.args(args).arg("-i").arg(file);
    perf.stdin(std::process::Stdio::null());
    // SAFETY: signal(2) is async-signal-safe, and the closure touches
    // nothing else between fork and exec.
    unsafe {
        perf.pre_exec(|| {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            Ok(())
        });
    }
    let o = perf.output().expect("run perf");
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    crate::common::stdout(&o)
}

/// Every display, coalescing, `--full-symbols` and `--no-source` on the
/// written file, and the empty tables of weight_struct: perf's lines.
#[test]
fn c2c_tables_are_perfs() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = c2c_file(dir.path());
    for d in ["tot", "lcl", "rmt", "peer"] {
        for c in ["iaddr", "pid,iaddr", "tid", "dso", "tid,dso,pid"] {
            for extra in [None, Some("--full-symbols"), Some("--no-source")] {
                let mut args = vec!["c2c", "report", "--stdio", "-d", d, "-c", c];
                args.extend(extra);
                let theirs = perf_retrying(&args, &f);
                let ours = pmx_out(&args, &f);
                same_lines(&args.join(" "), &without_tip(&ours), &without_tip(&theirs));
            }
        }
    }
    // The lines and their entries are there: line A's three offsets.
    let ours = pmx_out(&["c2c", "report", "--stdio"], &f);
    assert!(
        ours.contains("0x7f0000001000") && ours.contains("c2cprog[1010]"),
        "{ours}"
    );
    if let Some(w) = weight_struct() {
        let theirs = perf_retrying(&["c2c", "report", "--stdio"], &w);
        let ours = pmx_out(&["c2c", "report", "--stdio"], &w);
        same_lines("weight_struct", &without_tip(&ours), &without_tip(&theirs));
    }
    // A display or key perf does not know is refused.
    let o = pmx(&["c2c", "report", "-d", "all", "-i", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown display type 'all'"),
        "{}",
        stderr(&o)
    );
    let o = pmx(&["c2c", "report", "-c", "sym", "-i", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `pmx c2c record` records with the memory events; where there are
/// none (a virtual machine) it refuses as `mem record` does.
#[test]
fn c2c_record_uses_the_memory_events_or_says_why_not() {
    let root = pmx_sys::SysRoot::host();
    if pmx_args::mem_words::events::mem_events(&root, true, true, 30).is_ok() {
        return pmx_testkit::skip("this machine has memory events: the refusal is not tested");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.data");
    let o = pmx(&["c2c", "record", "-o", out.to_str().unwrap(), "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no memory-access sampling"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}
