//! `pmx annotate`'s IPC and Cycle columns from the LBR's cycle counts,
//! on the branch file of `branch_insn` (a local program, its branches
//! walked, 16 per sample with cycles; pmx-perfdata's writer marks it
//! BRANCH_STACK as perf record does). perf 6.1 cannot be the oracle of
//! the columns themselves: its `annotate --stdio` prints none, and
//! `--stdio2` and the TUI, which would, end in a segmentation fault on a
//! file with the BRANCH_STACK feature (docs/annotate.md). So the figures
//! are checked against the branch entries as `perf script -F brstack`
//! decodes them, counted per branch source as perf's `cyc_hist` counts
//! them, and the blocks' instructions as `objdump -d` lists them.

use super::branch_insn::{setup, Setup};
use super::optimizers::BASE;
use crate::common::{pmx, stderr};
use std::collections::BTreeMap;

/// One branch source's counts: (cycles sum, branches, min, max, longest
/// block's start, its cycles, its branches, whether it has a start).
#[derive(Default, Debug)]
pub(crate) struct Want {
    pub(crate) sum: u64,
    pub(crate) n: u64,
    min: u64,
    max: u64,
    pub(crate) start: u64,
    pub(crate) cycles: u64,
    pub(crate) num: u64,
    pub(crate) have_start: bool,
}

/// perf script's entries per sample (link-time addresses, newest first).
pub(crate) fn perf_entries(s: &Setup) -> Vec<Vec<(u64, u64, u64)>> {
    let o = pmx_testkit::perf::on_file(&["script", "-F", "brstack"], &s.data);
    assert!(o.status.success(), "{}", stderr(&o));
    let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap();
    (pmx_testkit::text(&o.stdout).lines())
        .map(|l| {
            (l.split_whitespace())
                .map(|e| {
                    let p: Vec<&str> = e.split('/').collect();
                    (hex(p[0]) - BASE, hex(p[1]) - BASE, p[5].parse().unwrap())
                })
                .collect()
        })
        .filter(|v: &Vec<_>| !v.is_empty())
        .collect()
}

/// Each branch source in `lo..hi` counted over perf's entries: the
/// cycles of every entry, and the longest block from a target in the
/// function before the source (a longer one restarts the count).
pub(crate) fn expected(samples: &[Vec<(u64, u64, u64)>], lo: u64, hi: u64) -> BTreeMap<u64, Want> {
    let mut out: BTreeMap<u64, Want> = BTreeMap::new();
    let inside = |a: u64| (lo..hi).contains(&a);
    for s in samples.iter().filter(|s| s[0].2 > 0) {
        let mut prev: Option<u64> = None;
        for &(from, to, cycles) in s.iter().rev() {
            if cycles > 0 && inside(from) {
                let w = out.entry(from).or_default();
                (w.sum, w.n, w.max) = (w.sum + cycles, w.n + 1, w.max.max(cycles));
                w.min = if w.min == 0 {
                    cycles
                } else {
                    w.min.min(cycles)
                };
                let start = prev.filter(|&t| inside(t) && t < from);
                match (start, w.have_start) {
                    (None, true) => {}
                    (Some(b), true) if b > w.start => {}
                    (Some(b), true) if b == w.start => {
                        (w.cycles, w.num) = (w.cycles + cycles, w.num + 1)
                    }
                    (Some(b), _) => (w.start, w.cycles, w.num, w.have_start) = (b, cycles, 1, true),
                    (None, false) => (w.cycles, w.num) = (w.cycles + cycles, w.num + 1),
                }
            }
            prev = Some(to);
        }
    }
    out
}

#[test]
fn ipc_and_cycles_are_perfs_counts_of_the_branch_stacks() {
    let Some(s) = setup("annotate's LBR columns", true, false) else {
        return;
    };
    let samples = perf_entries(&s);
    assert!(samples.len() > 300, "{} samples", samples.len());
    let file = s.data.to_str().unwrap();
    for sym in ["step", "collatz", "work"] {
        let o = pmx(&["annotate", "--json", "-i", file, sym]);
        assert!(o.status.success(), "{sym}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let (lo, hi) = (j["start"].as_u64().unwrap(), j["end"].as_u64().unwrap());
        let ins = j["instructions"].as_array().unwrap();
        let addrs: Vec<u64> = ins.iter().map(|i| i["addr"].as_u64().unwrap()).collect();
        let want = expected(&samples, lo, hi);
        assert!(!want.is_empty(), "{sym}: no branches from it");
        // Cycle: every branch source's average, min, max, count.
        for (i, a) in ins.iter().zip(&addrs) {
            let got = &i["cycles"];
            match want.get(a) {
                Some(w) => {
                    let expect = serde_json::json!({
                        "average": w.sum / w.n, "min": w.min, "max": w.max, "branches": w.n,
                    });
                    assert_eq!(got, &expect, "{sym} {a:#x}");
                }
                None => assert!(got.is_null(), "{sym} {a:#x}: {got}"),
            }
        }
        // IPC: from the last block down, each block's instructions get
        // its IPC unless a later block gave them one.
        let mut ipc: Vec<Option<f32>> = vec![None; addrs.len()];
        let mut covered = 0;
        for (end, w) in want
            .iter()
            .rev()
            .filter(|(_, w)| w.have_start && w.cycles > 0)
        {
            let (a, b) = (
                addrs.partition_point(|&x| x < w.start),
                addrs.partition_point(|&x| x <= *end),
            );
            let v = ((b - a) as f64 / (w.cycles as f64 / w.num as f64)) as f32;
            for c in ipc[a..b].iter_mut().filter(|c| c.is_none()) {
                *c = Some(v);
                covered += 1;
            }
        }
        assert!(covered > 0, "{sym}: no block measured");
        for ((i, a), w) in ins.iter().zip(&addrs).zip(&ipc) {
            let got = i["ipc"].as_f64();
            let want = w.map(|v| (f64::from(v) * 100.0).round() / 100.0);
            assert_eq!(got, want, "{sym} {a:#x}");
        }
        assert_eq!(j["lbr"]["covered"], covered, "{sym}");
        assert_eq!(j["lbr"]["instructions"], addrs.len(), "{sym}");
        // The text has the columns and the function's figures.
        let o = pmx(&["annotate", "--stdio", "-i", file, sym]);
        let text = pmx_testkit::text(&o.stdout);
        let head = format!(
            "average IPC {:.2}",
            j["lbr"]["average_ipc"].as_f64().unwrap()
        );
        assert!(text.contains(&head), "{text}");
        let columns = text
            .lines()
            .find(|l| l.contains("Source code & disassembly"));
        assert!(
            columns.is_some_and(|l| l.contains("IPC") && l.contains("Cycle")),
            "{text}"
        );
    }
}

/// The same through `perf annotate` (pmx as perf), `--stdio2` taken as
/// the one text layout; a file without cycles has no such columns.
#[test]
fn perf_annotate_stdio2_prints_the_columns_and_none_without_cycles() {
    let Some(s) = setup("annotate's LBR columns as perf", true, false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(crate::common::PMX, &as_perf).unwrap();
    let o = std::process::Command::new(&as_perf)
        .args(["annotate", "--stdio2", "-i"])
        .arg(&s.data)
        .arg("collatz")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = pmx_testkit::text(&o.stdout);
    assert!(text.contains("LBR cycles: average IPC"), "{text}");
    // A file of samples without branch stacks: no columns.
    let plain = pmx_testkit::shared::shared_data("perfdata")
        .map(|d| d.join("linux-perf-data__sleep.data"))
        .filter(|p| p.exists());
    let Some(plain) = plain else {
        return pmx_testkit::skip("the shared sleep recording is absent");
    };
    let o = pmx(&["annotate", "--json", "-i", plain.to_str().unwrap()]);
    let out = pmx_testkit::text(&o.stdout);
    assert!(!out.contains("\"lbr\""), "{out}");
}
