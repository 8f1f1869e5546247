//! The AMD cache-hierarchy group (`amd_cache`) on Zen 4 and Zen 5 from
//! constructed counts (the expected values worked by hand below), missing
//! inputs through the chain as for family 10h, and every event name of the
//! group on Zen 1–5 checked against perf's tables
//! (`../shared/data/linux-perf-events/x86`, skipped with a message when
//! absent).

use pmx_metrics::{Inputs, Library, Machine, Reading, Reason};
use std::path::{Path, PathBuf};

fn lib(key: &str) -> Library {
    let cpu = key.parse().unwrap();
    Library::for_cpu(Some(&cpu), None)
}

fn inputs(counts: &[(&str, u64)]) -> Inputs {
    let mut i = Inputs::new();
    for &(name, n) in counts {
        i.insert(name, Reading::count(n, 1_000, 1_000));
    }
    i
}

fn check(lib: &Library, inputs: &Inputs, want: &[(&str, f64)]) {
    let machine = Machine::default();
    let mut ev = lib.evaluator(inputs, &machine);
    for &(name, v) in want {
        let e = ev.metric_named(name).unwrap();
        let got = e
            .value()
            .unwrap_or_else(|| panic!("{name}: {}", e.missing().unwrap()));
        assert!((got - v).abs() < 1e-12, "{name}: {got} != {v}");
    }
}

const ZEN4_COUNTS: &[(&str, u64)] = &[
    ("instructions", 1_000_000),
    // perf's raw term as `perf stat` names it: PMCx029 umask 0x07
    ("cpu/event=0x29,umask=0x07/", 500_000),
    ("l2_cache_req_stat.dc_hit_in_l2", 12_000),
    ("l2_cache_req_stat.ls_rd_blk_c", 3_000),
    ("ic_tag_hit_miss.all_instruction_cache_accesses", 200_000),
    ("ic_cache_fill_l2", 4_000),
    ("ic_cache_fill_sys", 1_000),
    ("l3_lookup_state.all_coherent_accesses_to_l3", 8_000),
    ("l3_lookup_state.l3_miss", 2_000),
];

const ZEN5_COUNTS: &[(&str, u64)] = &[
    ("instructions", 2_000_000),
    ("ls_dispatch.all", 600_000),
    ("l2_cache_req_stat.dc_hit_in_l2", 9_000),
    ("l2_cache_req_stat.ls_rd_blk_c", 1_000),
    ("ic_tag_hit_miss.all_instruction_cache_accesses", 250_000),
    ("ic_cache_fill_l2", 2_000),
    ("ic_cache_fill_sys", 500),
    ("l3_lookup_state.all_coherent_accesses_to_l3", 5_000),
    ("l3_lookup_state.l3_miss", 500),
];

#[test]
fn zen4_group_computes() {
    let lib = lib("AuthenticAMD-25-11");
    check(
        &lib,
        &inputs(ZEN4_COUNTS),
        &[
            ("dc_request_rate", 0.5),   // 500000 / 1e6
            ("dc_misses", 15_000.0),    // 12000 + 3000
            ("dc_miss_ratio", 0.03),    // 15000 / 500000
            ("ic_request_rate", 0.2),   // 200000 / 1e6
            ("ic_misses", 5_000.0),     // 4000 + 1000
            ("ic_miss_ratio", 0.025),   // 5000 / 200000
            ("l2_requests", 20_000.0),  // 15000 + 5000
            ("l2_request_rate", 0.02),  // 20000 / 1e6
            ("l2_misses", 4_000.0),     // 3000 + 1000
            ("l2_miss_ratio", 0.2),     // 4000 / 20000
            ("l2_mpki", 4.0),           // 1000 × 4000 / 1e6
            ("l3_request_rate", 0.008), // 8000 / 1e6
            ("l3_miss_ratio", 0.25),    // 2000 / 8000
        ],
    );
    assert_eq!(lib.group("amd_cache").len(), 13);
    // What to count: seven core events and two of the L3 PMU; no metric
    // needs more core events than one pass of six counters holds.
    let ids = lib.group("amd_cache");
    let req = lib.requirements(&ids, false, None);
    let mut names: Vec<String> = req.events.iter().map(|e| e.name.clone()).collect();
    names.sort();
    let mut want: Vec<String> = ZEN4_COUNTS.iter().map(|(n, _)| n.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
    for (_, per_metric) in &req.per_metric {
        let core = per_metric
            .iter()
            .filter(|&&i| !req.events[i].name.starts_with("l3_"))
            .count();
        assert!(core <= 5, "{per_metric:?}");
    }
}

#[test]
fn zen5_group_computes() {
    let lib = lib("AuthenticAMD-26-2-1");
    check(
        &lib,
        &inputs(ZEN5_COUNTS),
        &[
            ("dc_request_rate", 0.3),      // 600000 / 2e6
            ("dc_misses", 10_000.0),       // 9000 + 1000
            ("dc_miss_ratio", 1.0 / 60.0), // 10000 / 600000
            ("ic_request_rate", 0.125),    // 250000 / 2e6
            ("ic_misses", 2_500.0),        // 2000 + 500
            ("ic_miss_ratio", 0.01),       // 2500 / 250000
            ("l2_requests", 12_500.0),     // 10000 + 2500
            ("l2_request_rate", 0.00625),  // 12500 / 2e6
            ("l2_misses", 1_500.0),        // 1000 + 500
            ("l2_miss_ratio", 0.12),       // 1500 / 12500
            ("l2_mpki", 0.75),             // 1000 × 1500 / 2e6
            ("l3_request_rate", 0.0025),   // 5000 / 2e6
            ("l3_miss_ratio", 0.1),        // 500 / 5000
        ],
    );
}

#[test]
fn zen5_missing_input_propagates_through_the_chain_only() {
    let lib = lib("AuthenticAMD-26-2-1");
    let mut i = inputs(ZEN5_COUNTS);
    i.insert("ic_cache_fill_sys", Reading::NotCounted { why: None });
    let machine = Machine::default();
    let mut ev = lib.evaluator(&i, &machine);
    let ratio = ev.metric_named("l2_miss_ratio").unwrap();
    let m = ratio.missing().expect("l2_miss_ratio must be missing");
    assert_eq!(m.reason, Reason::NotCounted(None));
    assert_eq!(m.chain, ["l2_miss_ratio", "l2_misses"]);
    assert_eq!(
        m.to_string(),
        "l2_miss_ratio ← l2_misses ← ic_cache_fill_sys: not counted"
    );
    assert_eq!(
        ev.metric_named("l2_request_rate")
            .unwrap()
            .missing()
            .unwrap()
            .to_string(),
        "l2_request_rate ← l2_requests ← ic_misses ← ic_cache_fill_sys: not counted"
    );
    for name in [
        "dc_request_rate",
        "dc_misses",
        "dc_miss_ratio",
        "ic_request_rate",
        "l3_request_rate",
        "l3_miss_ratio",
    ] {
        let e = ev.metric_named(name).unwrap();
        assert!(e.value().is_some(), "{name}: {:?}", e.missing());
    }
}

#[test]
fn family_10h_still_answers_to_its_group_and_to_amd_cache() {
    let lib = lib("AuthenticAMD-16-2");
    assert_eq!(lib.group("fam10h_cache").len(), 12);
    assert_eq!(lib.group("amd_cache").len(), 12);
}

fn perf_x86() -> Option<PathBuf> {
    pmx_testkit::shared::linux_perf_events().map(|d| d.join("x86"))
}

/// (EventName → (EventCode, UMask)) of one perf directory.
fn perf_events(dir: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read(f.path()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        for e in v.as_array().unwrap() {
            let s = |k: &str| e.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            if !s("EventName").is_empty() {
                out.push((s("EventName"), s("EventCode"), s("UMask")));
            }
        }
    }
    out
}

#[test]
fn every_named_input_is_in_perfs_table_for_its_zen() {
    let Some(x86) = perf_x86() else { return };
    for (key, dir) in [
        ("AuthenticAMD-23-1", "amdzen1"),
        ("AuthenticAMD-23-31", "amdzen2"),
        ("AuthenticAMD-25-1", "amdzen3"),
        ("AuthenticAMD-25-11", "amdzen4"),
        ("AuthenticAMD-26-2", "amdzen5"),
    ] {
        let lib = lib(key);
        let events = perf_events(&x86.join(dir));
        let req = lib.requirements(&lib.group("amd_cache"), false, None);
        assert_eq!(req.events.len(), 9, "{key}");
        for e in &req.events {
            if e.name == "instructions" || e.name.starts_with("cpu/event=") {
                continue;
            }
            assert!(
                events.iter().any(|(n, _, _)| *n == e.name),
                "{key}: {} is not in {dir}",
                e.name
            );
        }
    }
    // The raw terms are unions of unit masks the tables name one by one:
    // PMCx064 0xF0 = ls_rd_blk_x 0x10 | ls_rd_blk_l_hit_s 0x20 |
    // ls_rd_blk_l_hit_x 0x40 | ls_rd_blk_cs 0x80 (Zen 1–3; Zen 4 names the
    // union dc_hit_in_l2); PMCx029 0x07 = ld 0x01 | st 0x02 | ld_st 0x04
    // (Zen 4; Zen 5 names it ls_dispatch.all).
    for dir in ["amdzen1", "amdzen2", "amdzen3"] {
        let ev = perf_events(&x86.join(dir));
        let mut union = 0u32;
        for n in [
            "ls_rd_blk_x",
            "ls_rd_blk_l_hit_s",
            "ls_rd_blk_l_hit_x",
            "ls_rd_blk_cs",
        ] {
            let (_, code, umask) = ev
                .iter()
                .find(|(x, _, _)| *x == format!("l2_cache_req_stat.{n}"))
                .unwrap_or_else(|| panic!("{dir}: {n}"));
            assert_eq!(code, "0x64");
            union |= u32::from_str_radix(umask.trim_start_matches("0x"), 16).unwrap();
        }
        assert_eq!(union, 0xf0, "{dir}");
    }
    let z4 = perf_events(&x86.join("amdzen4"));
    let dc = z4
        .iter()
        .find(|(n, _, _)| n == "l2_cache_req_stat.dc_hit_in_l2")
        .unwrap();
    assert_eq!((dc.1.as_str(), dc.2.as_str()), ("0x64", "0xf0"));
    let mut union = 0;
    for n in ["ld_dispatch", "store_dispatch", "ld_st_dispatch"] {
        let (_, code, umask) = z4
            .iter()
            .find(|(x, _, _)| *x == format!("ls_dispatch.{n}"))
            .unwrap();
        assert_eq!(code, "0x29");
        union |= u32::from_str_radix(umask.trim_start_matches("0x"), 16).unwrap();
    }
    assert_eq!(union, 0x07);
    let z5 = perf_events(&x86.join("amdzen5"));
    assert!(z5
        .iter()
        .any(|(n, c, u)| n == "ls_dispatch.all" && c == "0x29" && u == "0x07"));
}
