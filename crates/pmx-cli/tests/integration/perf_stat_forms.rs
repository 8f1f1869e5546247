//! perf stat's `-x,` lines that carry a metric and no count, written by
//! the installed perf and read end to end by `pmx analyze`.
//!
//! This machine has no PMU, so `perf stat` cannot count the hardware
//! events whose metrics perf prints on lines of their own. `perf stat
//! report` can: it prints a `perf stat record` stream with perf's own
//! display code (tools/perf/util/stat-display.c), whatever machine
//! recorded the counts. The test writes such a stream — cycles,
//! instructions, both stall events, branches, with known counts, enabled
//! and running times — and lets the installed perf print it as `-x,`,
//! with and without `-I`. perf 6.1 prints `stalled cycles per insn` on a
//! line of its own under `insn per cycle`: empty count, unit and event
//! fields, then the metric value and unit. The outputs are kept under
//! `tests/data/perf-stat-forms/` (see its README), so the reading half
//! runs where perf is not installed too.

use crate::common::pmx;
use pmx_perfdata::format::{read_format, sample_type};
use pmx_perfdata::stat::{self, aggr_mode, StatConfig, StatCount, StatRecord};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// perf's generic hardware events (type 0) and their configs.
const EVENTS: &[(&str, u64)] = &[
    ("cycles", 0),
    ("instructions", 1),
    ("stalled-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("branches", 4),
    ("branch-misses", 5),
];

/// Per interval, per event: count, time enabled, time running (ns).
/// Cycles and instructions are multiplexed in the second interval.
const ROUNDS: &[[(u64, u64, u64); 6]] = &[
    [
        (4_000_000, 1_000_000, 1_000_000),
        (2_000_000, 1_000_000, 1_000_000),
        (1_000_000, 1_000_000, 1_000_000),
        (600_000, 1_000_000, 1_000_000),
        (400_000, 1_000_000, 1_000_000),
        (10_000, 1_000_000, 1_000_000),
    ],
    [
        (2_000_000, 1_000_000, 500_000),
        (3_000_000, 1_000_000, 750_000),
        (1_500_000, 1_000_000, 1_000_000),
        (300_000, 1_000_000, 1_000_000),
        (500_000, 1_000_000, 1_000_000),
        (20_000, 1_000_000, 1_000_000),
    ],
];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/perf-stat-forms")
        .join(name)
}

/// A 128-byte counting attr for hardware event `config`.
fn attr(config: u64) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8..16].copy_from_slice(&config.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type::IDENTIFIER.to_le_bytes());
    let rf = read_format::TOTAL_TIME_ENABLED | read_format::TOTAL_TIME_RUNNING;
    a[32..40].copy_from_slice(&rf.to_le_bytes());
    // exclude_guest, as perf stat sets it (no `:HG` on the names).
    a[40..48].copy_from_slice(&(1u64 << 20).to_le_bytes());
    a
}

/// A `perf stat record -o -` stream of [`ROUNDS`]: with `interval_ms`,
/// one round per interval (counts cumulative, as perf writes them),
/// else one final round of the sums.
fn stream(interval_ms: u64) -> Vec<u8> {
    let mut b = stat::pipe_header().to_vec();
    for (i, (_, config)) in EVENTS.iter().enumerate() {
        let a = pmx_perfdata::write::normalize_attr(&attr(*config)).unwrap();
        b.extend(stat::header_attr(&a, &[i as u64 + 1]));
    }
    b.extend(StatRecord::ThreadMap(vec![(-1, String::new())]).to_bytes());
    b.extend(StatRecord::CpuMap(vec![-1]).to_bytes());
    let config = StatConfig {
        aggr_mode: aggr_mode::GLOBAL,
        interval_ms,
        scale: true,
    };
    b.extend(StatRecord::Config(config).to_bytes());
    let mut sum = [(0u64, 0u64, 0u64); 6];
    for (r, round) in ROUNDS.iter().enumerate() {
        for (i, &(v, e, ru)) in round.iter().enumerate() {
            sum[i] = (sum[i].0 + v, sum[i].1 + e, sum[i].2 + ru);
        }
        if interval_ms == 0 && r + 1 < ROUNDS.len() {
            continue;
        }
        for (i, &(value, enabled, running)) in sum.iter().enumerate() {
            let count = StatCount {
                id: i as u64 + 1,
                cpu: -1,
                thread: 0,
                value,
                enabled,
                running,
            };
            b.extend(StatRecord::Count(count).to_bytes());
        }
        let time = (r as u64 + 1) * interval_ms.max(1) * 1_000_000;
        let final_round = interval_ms == 0;
        b.extend(StatRecord::Round { final_round, time }.to_bytes());
    }
    b
}

/// `perf stat -x, report -i -` on `bytes`: what perf printed.
fn perf_report(bytes: &[u8]) -> String {
    let mut child = Command::new("perf")
        .args(["stat", "-x,", "report", "-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run perf");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", pmx_testkit::text(&out.stderr));
    // perf 6.1 prints the totals on stderr, `-I` intervals on stdout.
    pmx_testkit::text(&out.stderr) + &pmx_testkit::text(&out.stdout)
}

#[test]
fn perf_writes_the_kept_files() {
    if !pmx_testkit::perf::require("") {
        return;
    }
    for (name, interval) in [
        ("perf61-continuation.csv", 0),
        ("perf61-continuation-I.csv", 1000),
    ] {
        let got = perf_report(&stream(interval));
        if std::env::var_os("PMX_REGENERATE").is_some() {
            std::fs::write(data(name), &got).unwrap();
        }
        let kept = std::fs::read_to_string(data(name)).unwrap();
        assert_eq!(got, kept, "{name}: perf prints otherwise now");
    }
}

/// `pmx analyze --json` on a kept file (read as a Skylake server's).
fn analyze(path: &Path) -> serde_json::Value {
    let out = pmx(&[
        "analyze",
        path.to_str().unwrap(),
        "--json",
        "--cpu",
        "GenuineIntel-6-55-4",
        "--no-libpfm",
    ]);
    let text = crate::common::stdout(&out);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn analyze_text(path: &Path) -> String {
    let f = path.to_str().unwrap();
    let out = pmx(&["analyze", f, "--cpu", "GenuineIntel-6-55-4", "--no-libpfm"]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    crate::common::stdout(&out)
}

/// perf's printed metrics with `unit`: (time, event, perf's value, pmx's).
fn printed(j: &serde_json::Value, unit: &str) -> Vec<(Option<f64>, String, f64, f64)> {
    (j["perf_printed"].as_array().unwrap().iter())
        .filter(|p| p["perf_unit"] == unit)
        .map(|p| {
            (
                p["time"].as_f64(),
                p["event"].as_str().unwrap().to_string(),
                p["perf_value"].as_f64().unwrap(),
                p["pmx_value"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

/// The entry of `event` (its first counter) in `events_read`.
fn event<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    (j["events_read"].as_array().unwrap().iter())
        .find(|e| e["event"] == name && e["instance"] == 0)
        .unwrap_or_else(|| panic!("no {name} in {j}"))
}

#[test]
fn metric_only_lines_are_read_with_and_without_intervals() {
    let j = analyze(&data("perf61-continuation.csv"));
    // (1,250,000 + 500,000) × 2 / 2 / (4,000,000 / 0.875 = 5,714,285).
    let got = printed(&j, "stalled cycles per insn");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].0, got[0].1.as_str(), got[0].2),
        (None, "instructions", 0.44)
    );
    assert!(
        (got[0].3 - 2_500_000.0 / 5_714_285.0).abs() < 1e-6,
        "{got:?}"
    );
    assert_eq!(j["events_read"].as_array().unwrap().len(), 6);
    assert_eq!(event(&j, "cycles")["running_pct"], 75.0);
    // With -I: each metric with its interval's time.
    let j = analyze(&data("perf61-continuation-I.csv"));
    let got = printed(&j, "stalled cycles per insn");
    let at: Vec<(Option<f64>, f64, f64)> = got.iter().map(|g| (g.0, g.2, g.3)).collect();
    assert_eq!(at, [(Some(1.0), 0.5, 0.5), (Some(2.0), 0.31, 0.375)]);
    assert!(got.iter().all(|g| g.1 == "instructions"));
    let c = event(&j, "cycles");
    assert_eq!(c["value"], 8_000_000.0);
    assert_eq!(c["running_min_pct"], 50.0);
    assert_eq!(c["multiplexed_rows"], 1);
    assert_eq!(c["intervals"]["n"], 2);
    let text = analyze_text(&data("perf61-continuation-I.csv"));
    assert!(text.contains("Events read (6):"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("cycles"))
        .unwrap();
    assert!(
        line.contains("8000000") && line.contains("running  83.33% (min 50.00%)"),
        "{line}"
    );
    assert!(
        line.contains("per interval min 4000000 mean 4000000 max 4000000"),
        "{line}"
    );
}

#[test]
fn perf68_metric_groups_with_intervals() {
    let j = analyze(&data("perf68-hybrid-metricgroup-I.csv"));
    let got = printed(&j, "% tma_bad_speculation");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Some(2.002003004));
    assert_eq!(got[0].1, "TopdownL1 (cpu_atom)");
    assert_eq!(got[0].2, 87.9);
    let c = event(&j, "cpu_atom/cycles/u");
    assert_eq!(
        (c["value"].as_f64(), c["running_pct"].as_f64()),
        (Some(775564.0), Some(42.0))
    );
    assert_eq!(c["pmu"], "cpu_atom");
    assert_eq!(
        event(&j, "cpu_core/cycles/u")["why_not"],
        "perf: <not counted>"
    );
    assert_eq!(j["events_read"].as_array().unwrap().len(), 12);
}

#[test]
fn summaries_after_intervals_are_not_counted_twice() {
    for (name, total) in [
        ("perf61-summary-I.csv", 3216.0),
        ("perf61-no-csv-summary-I.csv", 3212.0),
        ("perf61-summary-I.txt", 3214.0),
    ] {
        let j = analyze(&data(name));
        let n = if name.ends_with(".txt") { 2 } else { 3 };
        assert_eq!(j["intervals"], n, "{name}");
        let pf = event(&j, "page-faults");
        assert_eq!(pf["value"], total, "{name}");
        assert_eq!(pf["intervals"]["n"], n, "{name}");
    }
    // Live: the summary perf prints is the sum pmx reads.
    if !pmx_testkit::perf::require("the live --summary check") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.csv");
    let work = env!("CARGO_BIN_EXE_pmx-workload");
    let st = Command::new("perf")
        .args(["stat", "-x,", "-I", "100", "--summary", "-e", "page-faults"])
        .arg("-o")
        .arg(&f)
        .args(["--", "sh", "-c"])
        .arg(format!("{work} pages 3000; {work} spin 0.15"))
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&f).unwrap();
    let summary: f64 = (text.lines())
        .find_map(|l| {
            l.trim()
                .strip_prefix("summary,")?
                .split(',')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    assert!(summary >= 3000.0, "{text}");
    assert_eq!(
        event(&analyze(&f), "page-faults")["value"],
        summary,
        "{text}"
    );
}

/// Every count and running share a hybrid text file holds (perf 6.4 on
/// Alder Lake, multiplexed cpu_atom events; one event counted twice).
#[test]
fn every_count_and_share_of_a_hybrid_file_is_shown() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/perf-stat/17-alderlake-perf-tools-next.txt");
    let out = pmx(&[
        "analyze",
        f.to_str().unwrap(),
        "--cpu",
        "GenuineIntel-6-97",
        "--no-libpfm",
    ]);
    let text = crate::common::stdout(&out);
    // 22 events, three of them counted twice.
    assert!(text.contains("Events read (25):"), "{text}");
    let line = |name: &str| {
        (text.lines())
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name}: {text}"))
            .to_string()
    };
    assert!(line("cpu_atom/cycles/").contains("122018505"), "{text}");
    assert!(
        line("cpu_atom/cycles/").contains("running  63.32%"),
        "{text}"
    );
    assert!(
        line("cpu_atom/TOPDOWN_RETIRING.ALL/").contains("32110597"),
        "{text}"
    );
    assert!(
        line("cpu_atom/TOPDOWN_RETIRING.ALL/").contains("running  72.48%"),
        "{text}"
    );
    assert!(
        line("cpu_atom/TOPDOWN_RETIRING.ALL/ #2").contains("31363579"),
        "{text}"
    );
    assert!(
        line("cpu_atom/TOPDOWN_RETIRING.ALL/ #2").contains("running  73.37%"),
        "{text}"
    );
    assert!(
        line("cpu_core/TOPDOWN.SLOTS/").contains("113357334"),
        "{text}"
    );
    let (core, atom) = (text.find("\n  cpu_core:\n"), text.find("\n  cpu_atom:\n"));
    assert!(core.is_some() && atom.is_some(), "{text}");
    let out = pmx(&[
        "analyze",
        f.to_str().unwrap(),
        "--json",
        "--cpu",
        "GenuineIntel-6-97",
        "--no-libpfm",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let evs = j["events_read"].as_array().unwrap();
    assert_eq!(evs.len(), 25);
    let atoms = evs.iter().filter(|e| e["pmu"] == "cpu_atom").count();
    assert_eq!(atoms, 11);
    assert_eq!(event(&j, "cpu-clock")["value"], 24064.65);
    assert_eq!(event(&j, "cpu-clock")["unit"], "msec");
}

/// Published outputs of perf 6.5 (group lines, metric-only lines, a
/// metric without a value) and 6.13 (the threshold column, with -I).
#[test]
fn published_metric_group_and_threshold_lines() {
    let j = analyze(&data("perf65-spr-metricgroups.csv"));
    let got = printed(&j, "% tma_memory_bound");
    assert_eq!((got[0].1.as_str(), got[0].2), ("TopdownL2", 50.5));
    assert_eq!(j["events_read"].as_array().unwrap().len(), 8);
    let j = analyze(&data("perf65-hybrid-metricgroups.csv"));
    let bb: Vec<(String, Option<f64>)> = (j["perf_printed"].as_array().unwrap().iter())
        .filter(|p| p["perf_unit"] == "% tma_backend_bound")
        .map(|p| {
            (
                p["event"].as_str().unwrap().to_string(),
                p["perf_value"].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        bb,
        [
            ("TopdownL1 (cpu_core)".to_string(), None),
            ("TopdownL1 (cpu_atom)".to_string(), Some(38.6))
        ]
    );
    assert_eq!(event(&j, "cpu_atom/cycles/")["running_pct"], 54.0);
    let j = analyze(&data("perf613-threshold-I.csv"));
    let rated: Vec<(String, String)> = (j["perf_printed"].as_array().unwrap().iter())
        .map(|p| {
            let t = p["perf_threshold"].as_str().unwrap_or("-").to_string();
            (p["perf_unit"].as_str().unwrap().to_string(), t)
        })
        .collect();
    let want = [
        ("% tma_backend_bound", "bad"),
        ("% tma_frontend_bound", "bad"),
        ("% tma_bad_speculation", "good"),
        ("% tma_retiring", "good"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(u, t)| (u.to_string(), t.to_string()))
        .collect();
    assert_eq!(rated, want);
    assert!(printed(&j, "% tma_frontend_bound")
        .iter()
        .all(|p| p.0 == Some(1.000103288)));
    // 13 events: `cpu/UOPS_DECODED.DEC0,cmask=1/` is one.
    assert_eq!(j["events_read"].as_array().unwrap().len(), 13);
    assert_eq!(
        event(&j, "cpu/UOPS_DECODED.DEC0,cmask=1/")["value"],
        26472844.0
    );
    let text = analyze_text(&data("perf613-threshold-I.csv"));
    assert!(
        text.contains("% tma_frontend_bound") && text.contains("(perf: bad)"),
        "{text}"
    );
}
