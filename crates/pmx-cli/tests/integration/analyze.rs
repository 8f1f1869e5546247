//! `pmx analyze`: metrics and the top-down tree from saved counts (perf
//! and pmx CSV/JSON), matched to metric inputs by encoding.
//!
//! The Skylake client files under `tests/data/analyze/` hold the TMA level-1
//! inputs of Intel's Skylake table (SMT off):
//!
//! | input | count |
//! |---|---|
//! | CPU_CLK_UNHALTED.THREAD (CLKS) | 1,000,000 |
//! | IDQ_UOPS_NOT_DELIVERED.CORE (written `r019c`) | 800,000 |
//! | UOPS_ISSUED.ANY | 1,500,000 |
//! | UOPS_RETIRED.RETIRE_SLOTS | 1,300,000 |
//! | INT_MISC.RECOVERY_CYCLES | 20,000 |
//!
//! SLOTS = 4 × CLKS = 4,000,000, so by Intel's formulas:
//! Frontend_Bound = 800,000 / 4,000,000 = 20.0 %;
//! Bad_Speculation = (1,500,000 − 1,300,000 + 4 × 20,000) / 4,000,000 = 7.0 %;
//! Retiring = 1,300,000 / 4,000,000 = 32.5 %;
//! Backend_Bound = 1 − 0.2 − (1,500,000 + 4 × 20,000) / 4,000,000 = 40.5 %.
//!
//! Needs Intel's tables (`../shared/data/intel-perfmon`, or
//! `$PMX_SHARED_DIR`); the tests print SKIP and pass without them.

use crate::common::{analyze_data, pmx};
use pmx_testkit::shared::intel_perfmon;
use std::path::Path;

const CPU: &str = "GenuineIntel-6-5E-3";

fn analyze(file: &str, dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let f = analyze_data(file);
    let mut args = vec![
        "analyze",
        f.to_str().unwrap(),
        "--cpu",
        CPU,
        "--events-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = pmx(&args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The line of the tree for `node`.
fn node_line<'a>(text: &'a str, node: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(node))
        .unwrap_or_else(|| panic!("no line for {node} in:\n{text}"))
}

const L1: [(&str, f64); 4] = [
    ("Frontend_Bound", 800_000.0 / 4_000_000.0),
    (
        "Bad_Speculation",
        (1_500_000.0 - 1_300_000.0 + 4.0 * 20_000.0) / 4_000_000.0,
    ),
    (
        "Backend_Bound",
        1.0 - 0.2 - (1_500_000.0 + 4.0 * 20_000.0) / 4_000_000.0,
    ),
    ("Retiring", 1_300_000.0 / 4_000_000.0),
];

fn assert_level1(text: &str) {
    for (name, frac) in L1 {
        let line = node_line(text, name);
        let want = format!("{:.1}%", frac * 100.0);
        assert!(
            line.contains(&want),
            "{name}: want {want} in '{line}'\n{text}"
        );
    }
    // Frontend 20 % and Backend 40.5 % are over Intel's thresholds (> 15 %,
    // > 20 %); Backend is the larger, so it is the bottleneck.
    assert!(node_line(text, "Frontend_Bound").contains("OVER"), "{text}");
    assert!(
        node_line(text, "Backend_Bound").contains("bottleneck"),
        "{text}"
    );
    assert!(text.contains("Bottleneck: Backend_Bound"), "{text}");
}

#[test]
fn perf_csv_prints_the_level1_tree() {
    let Some(dir) = intel_perfmon() else { return };
    let (code, out, err) = analyze("skl_l1.csv", &dir, &["--tma", "-l", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("perf stat CSV"), "{out}");
    assert!(out.contains("SKL/metrics/skylake_metrics.json"), "{out}");
    assert_level1(&out);
    // Level 1 only.
    assert!(!out.contains("Fetch_Latency"), "{out}");
    assert!(
        node_line(&out, "Retiring").contains("reliability 100%"),
        "{out}"
    );
}

#[test]
fn raw_encoding_matches_a_symbolic_input() {
    let Some(dir) = intel_perfmon() else { return };
    // The file has r019c and no IDQ_UOPS_NOT_DELIVERED.CORE.
    let (code, out, err) = analyze("skl_l1.csv", &dir, &["-M", "Frontend_Bound", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = &v["metrics"][0];
    assert_eq!(m["name"], "Frontend_Bound");
    assert!((m["value"].as_f64().unwrap() - 20.0).abs() < 1e-9, "{m}");
    // cpu/event=0x9c,umask=0x01/ (perf writes it unquoted in -x, output).
    let (code, out, err) = analyze("skl_l1_missing.csv", &dir, &["-M", "Frontend_Bound"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        node_line(&out, "Frontend_Bound").contains("20.0000"),
        "{out}"
    );
    // perf's generic `instructions`/`cycles` (IPC's inputs) are Intel's fixed
    // counter events.
    let (code, out, err) = analyze("skl_l1.csv", &dir, &["-M", "IPC"]);
    assert_eq!(code, 0, "{err}");
    assert!(node_line(&out, "IPC").contains("1.2000"), "{out}");
}

#[test]
fn missing_input_is_named() {
    let Some(dir) = intel_perfmon() else { return };
    let (code, out, err) = analyze("skl_l1_missing.csv", &dir, &["--tma"]);
    assert_eq!(code, 0, "{err}");
    let bs = node_line(&out, "Bad_Speculation");
    assert!(
        bs.contains("UOPS_ISSUED.ANY") && bs.contains("not counted"),
        "{out}"
    );
    assert!(node_line(&out, "Frontend_Bound").contains("20.0%"), "{out}");
    // An input absent from the file is listed by name.
    let (code, out, err) = analyze("skl_l1.csv", &dir, &["-M", "Fetch_Latency"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Not computed (1)"), "{out}");
    assert!(
        node_line(&out, "Fetch_Latency: missing")
            .contains("IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE"),
        "{out}"
    );
    // Default mode: everything computable, and what is not, with inputs.
    let (code, out, err) = analyze("skl_l1.csv", &dir, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(node_line(&out, "Retiring").contains("32.5000"), "{out}");
    assert!(out.contains("Not computed ("), "{out}");
    assert!(out.contains("missing "), "{out}");
    // JSON lists them too.
    let (code, out, _) = analyze("skl_l1.csv", &dir, &["--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let not = v["not_computed"].as_array().unwrap();
    assert!(not.iter().any(|m| m["name"] == "Fetch_Latency"
        && m["absent_inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i == "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE")));
}

#[test]
fn pmx_csv_and_json_inputs() {
    let Some(dir) = intel_perfmon() else { return };
    for (file, format) in [
        ("skl_l1_pmx.csv", "pmx stat CSV"),
        ("skl_l1_pmx_interval.csv", "pmx stat CSV (intervals)"),
        ("skl_l1_pmx.json", "pmx stat JSON"),
        ("skl_l1_pmx_lines.json", "pmx stat JSON (intervals)"),
        ("skl_l1_perf.json", "perf stat JSON"),
        ("skl_l1_interval.csv", "perf stat CSV (intervals)"),
    ] {
        let (code, out, err) = analyze(file, &dir, &["--tma"]);
        assert_eq!(code, 0, "{file}: {err}");
        assert!(out.contains(format), "{file}: {out}");
        assert_level1(&out);
    }
}

#[test]
fn estimates_are_flagged() {
    let Some(dir) = intel_perfmon() else { return };
    // skl_l1_pmx.json: r019c (IDQ_UOPS_NOT_DELIVERED.CORE) ran half the time.
    let (code, out, err) = analyze("skl_l1_pmx.json", &dir, &["--tma"]);
    assert_eq!(code, 0, "{err}");
    let fe = node_line(&out, "Frontend_Bound");
    assert!(
        fe.contains("reliability  50%") && fe.contains("ESTIMATE"),
        "{out}"
    );
    assert!(!node_line(&out, "Retiring").contains("ESTIMATE"), "{out}");
    let (_, out, _) = analyze("skl_l1_pmx.json", &dir, &["-M", "Frontend_Bound", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metrics"][0]["estimate"], true);
    assert_eq!(v["metrics"][0]["reliability"], 0.5);
    // Interval file: per-interval spread, and the 50 % UOPS_RETIRED rows.
    let (_, out, _) = analyze("skl_l1_interval.csv", &dir, &["-M", "Retiring"]);
    let line = node_line(&out, "Retiring");
    assert!(
        line.contains("ESTIMATE") && line.contains("per interval min 32.5000"),
        "{out}"
    );
}

#[test]
fn bad_input_exits_2() {
    let dir = std::env::temp_dir().join(format!("pmx-analyze-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.csv");
    std::fs::write(&garbage, "hello world\nthis is not perf\n").unwrap();
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, "{\"counter-value\" : \"1\", \n").unwrap();
    let empty = dir.join("empty.csv");
    std::fs::write(&empty, "# nothing\n").unwrap();
    for (args, want) in [
        (
            vec![garbage.to_str().unwrap(), "--cpu", CPU],
            "garbage.csv:1",
        ),
        (vec![bad_json.to_str().unwrap(), "--cpu", CPU], "not JSON"),
        (vec![empty.to_str().unwrap(), "--cpu", CPU], "no counts"),
        (
            vec!["/nonexistent/file.csv", "--cpu", CPU],
            "/nonexistent/file.csv",
        ),
        // No CPU in the file and no --cpu.
        (vec![analyze_data("skl_l1.csv").to_str().unwrap()], "--cpu"),
        (
            vec![
                analyze_data("skl_l1.csv").to_str().unwrap(),
                "--cpu",
                "Nonsense",
            ],
            "--cpu",
        ),
        (
            vec![
                analyze_data("skl_l1.csv").to_str().unwrap(),
                "--cpu",
                CPU,
                "-M",
                "NoSuchMetric",
            ],
            "NoSuchMetric",
        ),
    ] {
        let mut a = vec!["analyze"];
        a.extend(args.iter().copied());
        let out = pmx(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        // A file without its CPU is read as this machine's when every
        // event of it is known here (a Skylake-server host knows
        // skl_l1.csv's): then it is no error, and it must say so.
        let this_machine =
            a.len() == 2 && String::from_utf8_lossy(&out.stdout).contains("(this machine)");
        if this_machine && out.status.code() == Some(0) {
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: want '{want}' in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files written by `pmx stat` itself (software events count everywhere;
/// `-M IPC` adds metric rows, and interval JSON ends with the totals
/// document): each is read, and IPC's missing input is named.
#[test]
fn reads_what_pmx_stat_writes() {
    let dir = std::env::temp_dir().join(format!("pmx-analyze-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, &[&str], &str); 4] = [
        ("t.csv", &["-x,", "--csv-header"], "pmx stat CSV"),
        ("t.json", &["--json"], "pmx stat JSON"),
        ("i.csv", &["-x,", "-I", "20"], "pmx stat CSV (intervals)"),
        (
            "i.json",
            &["--json", "-I", "20"],
            "pmx stat JSON (intervals)",
        ),
    ];
    for (name, flags, format) in cases {
        let path = dir.join(name);
        let mut args = vec!["stat", "-M", "IPC", "-e", "task-clock,page-faults", "-o"];
        args.push(path.to_str().unwrap());
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sleep", "0.05"]);
        let out = pmx(&args);
        if out.status.code() != Some(0) || !path.is_file() {
            println!(
                "SKIP {name}: pmx stat failed here: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        }
        let out = pmx(&[
            "analyze",
            path.to_str().unwrap(),
            "--cpu",
            "AuthenticAMD-25-11-1",
            "-M",
            "IPC",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        assert!(text.contains(format), "{name}: {text}");
        // Counted where there is a PMU; named as missing where there is not.
        assert!(
            node_line(&text, "IPC").contains("instructions")
                || text.contains("Metrics (1 computed)"),
            "{name}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `zen4_pipeline_l1.csv`: what `perf stat -x, -M PipelineL1` writes on a
/// Zen 4. perf's `amdzen4/pipeline.json`: slots = 6 × ls_not_halted_cyc =
/// 6,000,000; frontend_bound = 1,500,000 / 6e6 = 25.0 %; bad_speculation =
/// (2,700,000 − 2,400,000) / 6e6 = 5.0 %; backend_bound = 1,620,000 / 6e6 =
/// 27.0 %; smt_contention = 180,000 / 6e6 = 3.0 %; retiring = 2,400,000 /
/// 6e6 = 40.0 %.
#[test]
fn zen4_perf_csv_prints_amds_level1_tree() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let f = analyze_data("zen4_pipeline_l1.csv");
    let out = pmx(&[
        "analyze",
        f.to_str().unwrap(),
        "--cpu",
        "AuthenticAMD-25-11-1",
        "--events-dir",
        dir.to_str().unwrap(),
        "--tma",
        "-l",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text.contains("x86/amdzen4/pipeline.json"), "{text}");
    for (node, want) in [
        ("frontend_bound", "25.0%"),
        ("bad_speculation", "5.0%"),
        ("backend_bound", "27.0%"),
        ("smt_contention", "3.0%"),
        ("retiring", "40.0%"),
    ] {
        let line = node_line(&text, node);
        assert!(line.contains(want), "{node}: want {want} in '{line}'");
        assert!(line.contains("reliability 100%"), "{line}");
    }
    // pmx's thresholds (AMD publishes none): 25 % > 15 %, 27 % > 20 %.
    assert!(
        node_line(&text, "frontend_bound").contains("OVER"),
        "{text}"
    );
    assert!(text.contains("Bottleneck: backend_bound"), "{text}");
    assert!(text.contains("thresholds: pmx's"), "{text}");
    assert!(!text.contains("frontend_bound_latency"), "level 1 only");
}

fn analyze_amd(file: &str, cpu: &str, dir: &Path, extra: &[&str]) -> (i32, String) {
    let f = analyze_data(file);
    let mut args = vec![
        "analyze",
        f.to_str().unwrap(),
        "--cpu",
        cpu,
        "--events-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = pmx(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &err,
    )
}

/// `zen4_amd_cache.csv`: the `amd_cache` inputs on a Zen 4, DC accesses
/// written as the raw `r729` (matched by encoding to PMCx029 umask 0x07).
/// By hand: DC 500,000 / 1e6 instructions = 0.5; DC misses 12,000 + 3,000;
/// 15,000 / 500,000 = 3 %; IC misses 4,000 + 1,000, / 200,000 = 2.5 %; L2
/// requests 20,000, misses 3,000 + 1,000 = 4,000: 20 %, 4 per 1000
/// instructions; L3 2,000 / 8,000 = 25 %.
#[test]
fn zen4_perf_csv_computes_the_amd_cache_group() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let (code, text) = analyze_amd(
        "zen4_amd_cache.csv",
        "AuthenticAMD-25-11-1",
        &dir,
        &["-M", "amd_cache"],
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Metrics (13 computed)"), "{text}");
    for (name, want) in [
        ("dc_request_rate", "0.5000"),
        ("dc_misses", "15000.0000"),
        ("dc_miss_ratio", "3.0000 %"),
        ("ic_miss_ratio", "2.5000 %"),
        ("l2_requests", "20000.0000"),
        ("l2_request_rate", "0.0200"),
        ("l2_miss_ratio", "20.0000 %"),
        ("l2_mpki", "4.0000"),
        ("l3_request_rate", "0.0080"),
        ("l3_miss_ratio", "25.0000 %"),
    ] {
        let line = node_line(&text, &format!("{name} "));
        assert!(line.contains(want), "{name}: want {want} in '{line}'");
    }
}

/// `zen5_amd_cache.csv`: the Zen 5 inputs with `ic_cache_fill_sys` not
/// counted. Computed: DC 600,000 / 2e6 = 0.3; DC misses 9,000 + 1,000 =
/// 10,000 (1.6667 %); L3 500 / 5,000 = 10 %. Everything built on the IC
/// refills from system says so, through its chain.
#[test]
fn zen5_perf_csv_amd_cache_with_a_missing_input() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let (code, text) = analyze_amd(
        "zen5_amd_cache.csv",
        "AuthenticAMD-26-2-1",
        &dir,
        &["-M", "amd_cache"],
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Metrics (6 computed)"), "{text}");
    assert!(
        node_line(&text, "dc_request_rate").contains("0.3000"),
        "{text}"
    );
    assert!(
        node_line(&text, "dc_miss_ratio").contains("1.6667 %"),
        "{text}"
    );
    assert!(
        node_line(&text, "l3_miss_ratio").contains("10.0000 %"),
        "{text}"
    );
    assert!(
        text.contains("l2_request_rate ← l2_requests ← ic_misses ← ic_cache_fill_sys: not counted"),
        "{text}"
    );
    assert!(
        text.contains("l2_miss_ratio ← l2_misses ← ic_cache_fill_sys: not counted"),
        "{text}"
    );
}

#[test]
fn perfs_rates_from_its_own_csv_are_reproduced_to_its_digits() {
    // perf's -x prints task-clock in msec with two decimals and its rates
    // from the ns; pmx reads the ns from the run-time column, so its
    // page-fault rate is perf's to the last printed digit (from `0.59`
    // msec it was off by up to 1%).
    if !pmx_testkit::perf::require("recording a perf stat -x file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pf.csv");
    let o = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "task-clock,page-faults", "-o"])
        .arg(&f)
        .arg("true")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = pmx(&["analyze", "--json", f.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let printed = v["perf_printed"].as_array().unwrap();
    let rate = printed
        .iter()
        .find(|p| p["event"] == "page-faults")
        .unwrap_or_else(|| panic!("no printed rate: {v:#}"));
    let (perf, ours) = (
        rate["perf_value"].as_f64().unwrap(),
        rate["pmx_value"].as_f64().unwrap(),
    );
    assert!(
        (perf - ours).abs() <= 0.0005 + 1e-9,
        "perf {perf}, pmx {ours}"
    );
    assert_eq!(rate["agrees"], true, "{rate:#}");
}
