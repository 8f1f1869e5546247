//! `report --total-cycles`: the basic blocks by the LBR's cycles. perf
//! 6.1 ends in a segmentation fault on it with any file whose entries
//! carry cycles (docs/branches.md), so no oracle prints the table; the
//! figures are checked against the entries `perf script -F brstack`
//! decodes on the branch file of `branch_insn` (a local program, its
//! branches walked, 16 per sample with cycles), counted per branch source
//! as perf's `cyc_hist` counts them (`annotate_lbr`'s count), and the
//! functions' bounds `pmx annotate` gives.

use super::annotate_lbr::{expected, perf_entries};
use super::branch_insn::setup;
use crate::common::{pmx, stderr, PMX};

#[test]
fn blocks_are_perfs_cycle_counts_of_the_branch_stacks() {
    let Some(s) = setup("report --total-cycles", true, false) else {
        return;
    };
    let samples = perf_entries(&s);
    let file = s.data.to_str().unwrap();
    let o = pmx(&["report", "-b", "--total-cycles", "--json", "-i", file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &j["events"][0];
    // The total: every entry's cycles in the samples whose newest has some.
    let total: u64 = (samples.iter().filter(|s| s[0].2 > 0))
        .flat_map(|s| s.iter().map(|e| e.2))
        .sum();
    assert!(total > 0);
    assert_eq!(e["total_cycles"], total);
    let blocks = e["blocks"].as_array().unwrap();
    let cycles: Vec<u64> = (blocks.iter())
        .map(|b| b["sampled_cycles"].as_u64().unwrap())
        .collect();
    assert!(cycles.windows(2).all(|w| w[0] >= w[1]), "{cycles:?}");
    for sym in ["step", "collatz", "work"] {
        let a = pmx(&["annotate", "--json", "-i", file, sym]);
        assert!(a.status.success(), "{sym}: {}", stderr(&a));
        let a: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
        let (lo, hi) = (a["start"].as_u64().unwrap(), a["end"].as_u64().unwrap());
        let want = expected(&samples, lo, hi);
        assert!(!want.is_empty(), "{sym}: no branches from it");
        let mut got: Vec<(u64, u64, u64, u64)> = (blocks.iter())
            .filter(|b| b["symbol"] == sym)
            .map(|b| {
                let n = |k: &str| b[k].as_u64().unwrap();
                (n("end"), n("start"), n("sampled_cycles"), n("branches"))
            })
            .collect();
        got.sort();
        let want: Vec<(u64, u64, u64, u64)> = (want.iter())
            .map(|(&end, w)| {
                let start = if w.have_start { w.start - lo } else { 0 };
                (end - lo, start, w.sum, w.n)
            })
            .collect();
        assert_eq!(got, want, "{sym}");
    }
    // The averages' shares add up to the whole.
    let avg: f64 = (blocks.iter())
        .map(|b| b["avg_cycles_percent"].as_f64().unwrap())
        .sum();
    assert!((avg - 100.0).abs() < 0.01, "{avg}");
    // The text: perf's columns, a row per block in the same order, the
    // same under the perf name.
    let o = pmx(&["report", "--total-cycles", "--stdio", "-i", file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = pmx_testkit::text(&o.stdout);
    let head = text.lines().find(|l| l.contains("Sampled Cycles%"));
    let want_head = format!(
        "# Sampled Cycles%  Sampled Cycles  Avg Cycles%  Avg Cycles  {:>70}  {:>20}",
        "[Program Block Range]", "Shared Object"
    );
    assert_eq!(head, Some(want_head.as_str()), "{text}");
    let rows: Vec<&str> = (text.lines())
        .filter(|l| l.starts_with("  ") && l.trim_end().ends_with("prog"))
        .collect();
    assert_eq!(rows.len(), blocks.len(), "{text}");
    for (row, b) in rows.iter().zip(blocks) {
        let share = format!("{:.2}%", b["sampled_cycles_percent"].as_f64().unwrap());
        assert!(row.trim_start().starts_with(&share), "{row} {b}");
        let range = b["range"].as_str().unwrap();
        assert!(
            row.contains(range) && range.starts_with("[prog.c:"),
            "{row}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    let p = std::process::Command::new(&as_perf)
        .args(["report", "--total-cycles", "--stdio", "-i", file])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", stderr(&p));
    assert_eq!(pmx_testkit::text(&p.stdout), text);
}

/// A file without cycles in its entries (the Arm file's synthesized
/// stacks): a table without blocks, not a failure; a file without branch
/// stacks: the message that says so.
#[test]
fn files_without_cycles_or_branches() {
    let dir = pmx_testkit::shared::shared_data("perfdata");
    let Some(dir) = dir.filter(|d| d.join("linux-perf-data__sleep.data").exists()) else {
        return pmx_testkit::skip("the shared recordings are absent");
    };
    let arm = dir.join("perf_data_converter__perf.data.branch_stack_hw_index");
    let o = pmx(&[
        "report",
        "-b",
        "--total-cycles",
        "--json",
        "-i",
        arm.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["events"][0]["total_cycles"], 0, "{j}");
    assert_eq!(j["events"][0]["blocks"], serde_json::json!([]), "{j}");
    let plain = dir.join("linux-perf-data__sleep.data");
    let o = pmx(&[
        "report",
        "-b",
        "--total-cycles",
        "-i",
        plain.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no event samples branch stacks"),
        "{}",
        stderr(&o)
    );
}
