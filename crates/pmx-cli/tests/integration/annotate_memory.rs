//! `pmx annotate`'s memory columns (perf annotate 6.1 has none): a
//! small C program is compiled, the instructions of its loop that read
//! memory are found with `objdump -d`, and a file is written with
//! pmx-perfdata's writer whose samples land on them with `data_src`
//! values of a real Skylake-SP recording and varied weights. Each
//! instruction's levels and average weight in `pmx annotate --json` must
//! be those of its samples as Debian's perf 6.1 prints them (`perf
//! script -F ip,data_src,weight`), computed here from perf's lines.

use crate::common::{pmx, stderr};
use pmx_perfdata::format::{record_type, sample_type as st};
use pmx_perfdata::write::{BuildIdEntry, Features};
use pmx_perfdata::FileAttr;
use pmx_testkit::perfdata::{padded, pid_tid, record as rec};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdlib.h>
__attribute__((noinline)) long walk(const long *a, const int *idx, int n) {
  long s = 0;
  for (int i = 0; i < n; i++) s += a[idx[i]] * a[i];
  return s;
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  long *a = calloc(n, sizeof *a);
  int *idx = calloc(n, sizeof *idx);
  return (int)walk(a, idx, n);
}
"#;

const BASE: u64 = 0x5555_5555_4000;
const PID: u32 = 5151;

/// `data_src` values of `perf_data_converter__perf.data.weight_struct`
/// (LFB, L1, L1 locked).
const SOURCES: [u64; 3] = [0x118_6810_0242, 0x102_6810_0142, 0x102_6a10_0142];

/// The addresses of `walk`'s instructions with a memory operand.
fn loads(prog: &Path) -> Vec<u64> {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "--disassemble=walk"])
        .arg(prog)
        .output()
        .unwrap();
    let text = pmx_testkit::text(&o.stdout);
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if rest.contains('(') && !rest.starts_with("lea") && !rest.starts_with("nop") {
            out.push(addr);
        }
    }
    out
}

fn write_file(prog: &Path, at: &[u64], out: &Path) -> usize {
    let text = prog.canonicalize().unwrap();
    let sample_type = st::IP | st::TID | st::TIME | st::PERIOD | st::WEIGHT | st::DATA_SRC;
    let mut a = pmx_testkit::perfdata::attr(128, 1000, sample_type, (1 << 18) | (1 << 5));
    a[0..4].copy_from_slice(&0u32.to_le_bytes());
    let attrs = vec![FileAttr {
        attr: a,
        ids: vec![],
        name: "cycles:u".into(),
    }];
    let mut w = pmx_perfdata::Writer::create(std::fs::File::create(out).unwrap(), attrs).unwrap();
    let trailer = |time: u64| [pid_tid(PID), time.to_le_bytes().to_vec()].concat();
    let mut comm = pid_tid(PID);
    comm.extend_from_slice(&padded(b"prog"));
    comm.extend_from_slice(&trailer(1));
    w.write_record(&rec(record_type::COMM, 0x2000, &comm))
        .unwrap();
    let mut mmap = pid_tid(PID);
    for v in [BASE + 0x1000, 0x1000, 0x1000] {
        mmap.extend_from_slice(&v.to_le_bytes());
    }
    mmap.extend_from_slice(&[8, 0, 0, 0, 1, 0, 0, 0]);
    mmap.extend_from_slice(&[0u8; 16]);
    mmap.extend_from_slice(&5u32.to_le_bytes());
    mmap.extend_from_slice(&2u32.to_le_bytes());
    mmap.extend_from_slice(&padded(text.to_str().unwrap().as_bytes()));
    mmap.extend_from_slice(&trailer(2));
    w.write_record(&rec(record_type::MMAP2, 2, &mmap)).unwrap();
    let mut n = 0;
    for (k, &addr) in at.iter().enumerate() {
        // Instruction k gets 3 + 2k samples, its sources and weights varied.
        for j in 0..3 + 2 * k {
            let ip = BASE + addr;
            let weight = (7 + 13 * j + 31 * k) as u64 % 400;
            let src = SOURCES[(j + k) % SOURCES.len().min(2 + k)];
            let mut body = Vec::new();
            for v in [
                ip,
                u64::from(PID) | (u64::from(PID) << 32),
                100 + n as u64,
                1000,
            ] {
                body.extend_from_slice(&v.to_le_bytes());
            }
            body.extend_from_slice(&weight.to_le_bytes());
            body.extend_from_slice(&src.to_le_bytes());
            w.write_record(&rec(record_type::SAMPLE, 2, &body)).unwrap();
            n += 1;
        }
    }
    let id = pmx_symbols::elf::ElfFile::open(&text).unwrap();
    let features = Features {
        build_ids: vec![BuildIdEntry {
            pid: -1,
            misc: 2,
            build_id: id.build_id().unwrap().to_vec(),
            filename: text.to_str().unwrap().to_string(),
        }],
        cmdline: Some(vec!["perf".into(), "record".into(), "-d".into()]),
        ..Default::default()
    };
    w.finish(&features).unwrap();
    n
}

/// Per address (the binary's): levels → samples, and the weights, from
/// perf script's `IP |OP …|LVL …|SNP …|… WEIGHT` lines.
type Expected = BTreeMap<u64, (BTreeMap<String, u64>, Vec<u64>)>;

fn from_perf(out: &str) -> Expected {
    let mut by: Expected = BTreeMap::new();
    for line in out.lines().filter(|l| l.contains("|LVL ")) {
        let ip = u64::from_str_radix(line.split_whitespace().last().unwrap(), 16).unwrap();
        let lvl = line
            .split("|LVL ")
            .nth(1)
            .unwrap()
            .split('|')
            .next()
            .unwrap();
        let weight: u64 = line
            .split("|BLK")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let e = by.entry(ip - BASE).or_default();
        *e.0.entry(lvl.to_string()).or_default() += 1;
        e.1.push(weight);
    }
    by
}

#[test]
fn memory_columns_are_the_samples_levels_and_weights() {
    if !pmx_testkit::cc::require() || !pmx_testkit::perf::require("annotate memory columns") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = pmx_testkit::cc::compile(
        dir.path(),
        "prog",
        PROGRAM,
        &["-O2", "-g", "-Wl,--build-id"],
    )
    .unwrap();
    let at = loads(&prog);
    assert!(at.len() >= 2, "{at:?}");
    let data = dir.path().join("mem.data");
    let n = write_file(&prog, &at, &data);
    let o = pmx_testkit::perf::on_file(&["script", "-F", "ip,data_src,weight"], &data);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = from_perf(&pmx_testkit::text(&o.stdout));
    assert_eq!(want.values().map(|v| v.1.len()).sum::<usize>(), n);
    assert!(want.values().any(|v| v.0.len() > 1), "{want:?}");
    let o = pmx(&["annotate", "--json", "walk", "-i", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut got: Expected = BTreeMap::new();
    for ins in j["instructions"].as_array().unwrap() {
        let Some(m) = ins.get("memory") else { continue };
        let levels = (m["levels"].as_array().unwrap().iter())
            .map(|l| {
                (
                    l["level"].as_str().unwrap().to_string(),
                    l["samples"].as_u64().unwrap(),
                )
            })
            .collect();
        let avg = m["average_weight"].as_f64().unwrap();
        let samples = m["samples"].as_u64().unwrap();
        let addr = ins["addr"].as_u64().unwrap();
        let (_, weights) = &want[&addr];
        let mean = weights.iter().sum::<u64>() as f64 / weights.len() as f64;
        assert!((avg - mean).abs() < 1e-9, "{addr:#x}: {avg} vs {mean}");
        assert_eq!(samples, weights.len() as u64, "{addr:#x}");
        got.insert(addr, (levels, weights.clone()));
    }
    assert_eq!(got, want);
    // The text layout has the columns.
    let o = pmx(&["annotate", "--stdio", "walk", "-i", data.to_str().unwrap()]);
    let text = pmx_testkit::text(&o.stdout);
    assert!(
        text.contains("Avg weight") && text.contains("Memory levels"),
        "{text}"
    );
    assert!(text.contains("L1 or L1 hit \u{d7}"), "{text}");
}
