//! `pmx compare` and `pmx stat --compare`: runs kept by `pmx stat -r N
//! --json`, compared with statistics; A/B runs of `pmx-workload` whose
//! page faults are known exactly; top-down trees side by side from
//! hand-written Skylake counts.

use crate::common::{pmx, stderr, stdout};
use serde_json::{json, Value};
use std::path::Path;

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmx-workload");

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The row of `name` in a compare JSON report.
fn row<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// `pmx stat --compare -r 10 --json` of `pmx-workload touch A` against
/// `touch B`: the report.
fn ab(a: &str, b: &str) -> Value {
    let out = pmx(&[
        "stat",
        "--compare",
        "-r",
        "10",
        "--warmup",
        "1",
        "--json",
        "-e",
        "task-clock,page-faults",
        "--",
        WORKLOAD,
        "touch",
        a,
        ":::",
        WORKLOAD,
        "touch",
        b,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json_of(&stderr(&out))
}

#[test]
fn a_thousand_more_pages_is_a_thousand_more_faults() {
    let r = ab("1000", "2000");
    let faults = row(&r, "page-faults");
    let (a, b) = (&faults["sides"][0], &faults["sides"][1]);
    assert_eq!((a["n"].as_u64(), b["n"].as_u64()), (Some(10), Some(10)));
    // Exactly 1000 pages more are touched: 1000 faults more (± the odd
    // fault of the runtime).
    let diff = b["mean"].as_f64().unwrap() - a["mean"].as_f64().unwrap();
    assert!((diff - 1000.0).abs() < 5.0, "{faults}");
    let c = &faults["changes"][0];
    assert_eq!(c["test"], "welch");
    assert!(c["p"].as_f64().unwrap() < 0.01, "{c}");
    assert_eq!(c["significant"], true);
    // Significant rows first, then by the size of the change (|ln ratio|).
    // Which of task-clock and page-faults changes more depends on the
    // machine's load (a busy machine can slow B more than twice), so the
    // rule is checked, not a winner.
    let key = |row: &Value| {
        let changes = row["changes"].as_array().unwrap();
        let sig = changes.iter().any(|c| c["significant"] == true);
        let size = changes
            .iter()
            .filter(|c| c["significant"] == true || !sig)
            .filter_map(|c| c["percent"].as_f64())
            .map(|p| (1.0 + p / 100.0).abs().max(1e-12).ln().abs())
            .fold(0.0, f64::max);
        (sig, size)
    };
    let rows = r["rows"].as_array().unwrap();
    assert!(rows.len() >= 2, "{r}");
    for pair in rows.windows(2) {
        let (a, b) = (key(&pair[0]), key(&pair[1]));
        assert!(
            (a.0 && !b.0) || (a.0 == b.0 && a.1 >= b.1),
            "rows out of order: {r}"
        );
    }
    assert!(key(row(&r, "page-faults")).0, "{r}");
}

#[test]
fn a_against_itself_changes_no_fault_count() {
    // Under no change p is uniform: one run in twenty is called
    // significant at 0.05 by design. A second, independent comparison is
    // made only then; both calling it is a 1-in-400 event, while a real
    // difference (a bias of the runner between A and B) fails both.
    for attempt in 0..2 {
        let r = ab("1000", "1000");
        let c = &row(&r, "page-faults")["changes"][0];
        if c["significant"] == false {
            assert!(c["p"].as_f64().unwrap() >= 0.05, "{c}");
            return;
        }
        eprintln!("attempt {attempt}: A against A called significant: {c}");
    }
    panic!("A against A was called significant twice in a row");
}

#[test]
fn stat_compare_refuses_what_it_cannot_do() {
    let out = pmx(&["stat", "--compare", "-r", "3", "--", WORKLOAD, "touch", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("-- A ARGS… ::: B ARGS…"),
        "{}",
        stderr(&out)
    );
    let cmd = ["--", WORKLOAD, "touch", "1", ":::", WORKLOAD, "touch", "2"];
    let out = pmx(&[&["stat", "--compare"][..], &cmd].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--compare needs -r N"),
        "{}",
        stderr(&out)
    );
    // A failing command fails the comparison, as in hyperfine.
    let cmd = ["--", WORKLOAD, "exit", "3", ":::", WORKLOAD, "touch", "2"];
    let out = pmx(&[
        &["stat", "--compare", "-r", "2", "-e", "page-faults"][..],
        &cmd,
    ]
    .concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited with status 3"),
        "{}",
        stderr(&out)
    );
}

/// `pmx stat -r N --json -o FILE -e page-faults -- pmx-workload touch PAGES`.
fn stat_file(dir: &Path, name: &str, runs: &str, pages: &str) -> String {
    let f = dir.join(name);
    let out = pmx(&[
        "stat",
        "-r",
        runs,
        "--json",
        "-o",
        f.to_str().unwrap(),
        "-e",
        "page-faults,task-clock",
        "--",
        WORKLOAD,
        "touch",
        pages,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    f.to_str().unwrap().to_string()
}

#[test]
fn kept_runs_compare_and_files_pool() {
    let dir = tempfile::tempdir().unwrap();
    let a = stat_file(dir.path(), "a.json", "4", "300");
    let doc = json_of(&std::fs::read_to_string(&a).unwrap());
    let faults = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "page-faults")
        .unwrap();
    // Every run is kept, with its count and times.
    let reps = faults["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 4, "{faults}");
    assert!(
        reps.iter().all(|r| r["raw"].as_u64().unwrap() >= 300),
        "{faults}"
    );
    assert!(reps[0]["time_enabled_ns"].as_u64().is_some());
    // With -M, each run's metric values too (IPC has no value on a
    // machine without a PMU, one per run where it has one).
    let m = dir.path().join("m.json");
    let out = pmx(&[
        "stat",
        "-r",
        "3",
        "--json",
        "-o",
        m.to_str().unwrap(),
        "-M",
        "IPC",
        "--",
        WORKLOAD,
        "touch",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json_of(&std::fs::read_to_string(&m).unwrap());
    assert_eq!(doc["metrics"][0]["name"], "IPC");
    assert_eq!(
        doc["metrics"][0]["repeats"].as_array().unwrap().len(),
        3,
        "{doc}"
    );
    let a2 = stat_file(dir.path(), "a2.json", "3", "300");
    let b = stat_file(dir.path(), "b.json", "4", "800");
    let b2 = stat_file(dir.path(), "b2.json", "3", "800");
    // One file per side: 4 + 4 runs, the rank test.
    let out = pmx(&["compare", &a, &b]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.starts_with(&format!("A: {a} (4 runs)\nB: {b} (4 runs)\n")),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("page-faults")).unwrap();
    assert!(line.contains("n=4+4"), "{text}");
    // Pooled: 7 + 7 runs.
    let out = pmx(&["compare", "--json", &a, &a2, "--", &b, &b2]);
    let r = json_of(&stdout(&out));
    let faults = row(&r, "page-faults");
    assert_eq!(faults["sides"][1]["n"], 7);
    assert_eq!(faults["changes"][0]["test"], "mann-whitney");
    assert_eq!(faults["changes"][0]["significant"], true);
    // CSV.
    let out = pmx(&["compare", "-x", ";", &a, &b]);
    let csv = stdout(&out);
    assert!(
        csv.lines().next().unwrap().starts_with("kind;name;domain"),
        "{csv}"
    );
    assert!(
        csv.lines().any(|l| l.starts_with("event;page-faults;;;")),
        "{csv}"
    );
    // Errors name the file.
    let out = pmx(&["compare", &a, "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent.json"),
        "{}",
        stderr(&out)
    );
    let out = pmx(&["compare", &a]);
    assert!(
        stderr(&out).contains("at least two sides"),
        "{}",
        stderr(&out)
    );
}

/// `perf stat FORM -e page-faults -o FILE -- pmx-workload touch PAGES`.
fn perf_file(dir: &Path, name: &str, form: &str, pages: &str) -> String {
    let f = dir.join(name);
    let out = std::process::Command::new("perf")
        .args(["stat", form, "-e", "page-faults", "-o"])
        .arg(&f)
        .args(["--", WORKLOAD, "touch", pages])
        .output()
        .expect("run perf");
    assert!(out.status.success(), "{}", stderr(&out));
    f.to_str().unwrap().to_string()
}

#[test]
fn perf_files_one_per_run_pool_into_sides() {
    if !pmx_testkit::perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Side A as perf stat -x, files, side B as perf stat -j files.
    let a: Vec<String> = (0..5)
        .map(|i| perf_file(dir.path(), &format!("a{i}.csv"), "-x,", "1000"))
        .collect();
    let b: Vec<String> = (0..5)
        .map(|i| perf_file(dir.path(), &format!("b{i}.json"), "-j", "2000"))
        .collect();
    let args: Vec<&str> = ["compare", "--json"]
        .into_iter()
        .chain(a.iter().map(String::as_str))
        .chain(["--"])
        .chain(b.iter().map(String::as_str))
        .collect();
    let out = pmx(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_of(&stdout(&out));
    let faults = row(&r, "page-faults");
    assert_eq!(faults["sides"][0]["n"], 5);
    assert_eq!(faults["sides"][1]["n"], 5);
    let diff =
        faults["sides"][1]["mean"].as_f64().unwrap() - faults["sides"][0]["mean"].as_f64().unwrap();
    assert!((diff - 1000.0).abs() < 5.0, "{faults}");
    // 5 runs a side: the rank test, every B above every A (p ≤ 0.012
    // with ties inside a side, 2/252 without).
    let c = &faults["changes"][0];
    assert_eq!(c["test"], "mann-whitney");
    assert!(c["p"].as_f64().unwrap() < 0.013, "{c}");
    assert_eq!(r["sides"][1]["sources"][0], b[0].as_str());
}

/// A pmx stat JSON document for Skylake (`GenuineIntel-6-5E-3`) with five
/// kept runs: the TMA level-1 inputs, IDQ_UOPS_NOT_DELIVERED.CORE as
/// `idq + 4,000 × (run − 2)`.
fn skylake_runs(idq: u64) -> Value {
    let fixed = [
        ("CPU_CLK_UNHALTED.THREAD", 1_000_000u64),
        ("UOPS_ISSUED.ANY", 1_500_000),
        ("UOPS_RETIRED.RETIRE_SLOTS", 1_300_000),
        ("INT_MISC.RECOVERY_CYCLES", 20_000),
    ];
    let runs = |f: &dyn Fn(u64) -> u64| -> Vec<Value> {
        (0..5u64)
            .map(|i| json!({"value": f(i), "raw": f(i), "time_enabled_ns": 1000, "time_running_ns": 1000}))
            .collect()
    };
    let mut events: Vec<Value> = fixed
        .iter()
        .map(
            |&(e, v)| json!({"event": e, "value": v, "status": "counted", "repeats": runs(&|_| v)}),
        )
        .collect();
    let varied = |i: u64| idq + 4_000 * i - 8_000;
    events.push(json!({"event": "IDQ_UOPS_NOT_DELIVERED.CORE", "value": idq, "status": "counted", "repeats": runs(&varied)}));
    json!({"cpu": "GenuineIntel-6-5E-3", "runs": 5, "events": events})
}

#[test]
fn tma_trees_side_by_side_name_the_moved_bottleneck() {
    let Some(tables) = pmx_testkit::shared::intel_perfmon() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    // SLOTS = 4 × 1,000,000. A: Frontend_Bound = 800,000 / 4,000,000 =
    // 20 %, Backend_Bound = 1 − 0.2 − (1,500,000 + 4 × 20,000) / SLOTS =
    // 40.5 %. B: Frontend 2,000,000 / SLOTS = 50 %, Backend 10.5 %.
    // Retiring (1,300,000 / SLOTS = 32.5 %) and Bad_Speculation (7 %) are
    // the same on both sides.
    std::fs::write(&a, skylake_runs(800_000).to_string()).unwrap();
    std::fs::write(&b, skylake_runs(2_000_000).to_string()).unwrap();
    let (a, b, t) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        tables.to_str().unwrap(),
    );
    let out = pmx(&["compare", "--tma", "--json", "--events-dir", t, a, b]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_of(&stdout(&out));
    let node = |name: &str| {
        r["tma"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {r}"))
    };
    let mean = |n: &Value, side: usize| n["sides"][side]["mean"].as_f64().unwrap();
    for (name, want_a, want_b, significant) in [
        ("Frontend_Bound", 20.0, 50.0, true),
        ("Backend_Bound", 40.5, 10.5, true),
        ("Retiring", 32.5, 32.5, false),
        ("Bad_Speculation", 7.0, 7.0, false),
    ] {
        let n = node(name);
        assert!((mean(&n, 0) - want_a).abs() < 1e-6, "{n}");
        assert!((mean(&n, 1) - want_b).abs() < 1e-6, "{n}");
        // 5 distinct runs a side, all of one above the other: the exact
        // rank test, p = 2/252.
        assert_eq!(n["changes"][0]["significant"], significant, "{n}");
    }
    assert_eq!(
        r["tma"]["bottlenecks"],
        json!([["Backend_Bound"], ["Frontend_Bound"]])
    );
    let out = pmx(&["compare", "--tma", "--events-dir", t, a, b]);
    let text = stdout(&out);
    assert!(
        text.contains("B moved the bottleneck from Backend_Bound to Frontend_Bound"),
        "{text}"
    );
    let fe = text
        .lines()
        .find(|l| l.contains("Frontend_Bound") && l.starts_with('!'))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(fe.contains("+30.0 pt") || fe.contains("p=0.008"), "{text}");
    let ret = text
        .lines()
        .find(|l| l.trim_start().starts_with("Retiring"))
        .unwrap();
    assert!(ret.contains(" ~ "), "{text}");
}
