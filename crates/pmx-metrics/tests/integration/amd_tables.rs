//! Linux perf's AMD Zen tables (`../shared/data/linux-perf-events/x86`):
//! the mapfile picks the directory for each Zen, the pipeline-utilization
//! tree of Zen 4 and Zen 5 is built from `pipeline.json`, and its level-1
//! and level-2 values from constructed counts equal the tables' formulas
//! worked by hand (the expected numbers are written below, with the
//! arithmetic).
//!
//! The data lives outside the repository: `PMX_SHARED_DIR`, else
//! `CARGO_MANIFEST_DIR/../../../shared/data`. Without it the tests print
//! `SKIP: …` and pass.

use pmx_metrics::perf_x86::{load_perf_x86_tables, select_dir};
use pmx_metrics::{Flag, Inputs, Library, Machine, Reading, Reason, TmaReport};
use std::path::Path;

fn library(dir: &Path, key: &str) -> Library {
    let cpu = key.parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), Some(dir));
    assert!(lib.warnings.is_empty(), "{key}: {:?}", lib.warnings);
    lib
}

fn evaluate(lib: &Library, inputs: &Inputs, level: u32) -> TmaReport {
    let tree = lib.tma_tree().expect("a tree");
    let machine = Machine {
        smt_on: Some(false),
        ..Machine::default()
    };
    let mut ev = lib.evaluator(inputs, &machine);
    tree.evaluate(&mut ev, level)
}

fn percents(r: &TmaReport) -> Vec<(String, u32, f64)> {
    r.nodes
        .iter()
        .map(|n| {
            let p = n.percent.unwrap_or(f64::NAN);
            (n.name.clone(), n.level, (p * 1e6).round() / 1e6)
        })
        .collect()
}

#[test]
fn the_mapfile_picks_each_zen() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let root = dir.join("x86");
    for (key, want) in [
        ("AuthenticAMD-23-1-2", "amdzen1"),
        ("AuthenticAMD-23-8", "amdzen1"),
        ("AuthenticAMD-23-31", "amdzen2"),
        ("AuthenticAMD-23-71", "amdzen2"),
        ("AuthenticAMD-25-1", "amdzen3"),
        ("AuthenticAMD-25-21-0", "amdzen3"),
        ("AuthenticAMD-25-50", "amdzen3"),
        ("AuthenticAMD-25-11-1", "amdzen4"),
        ("AuthenticAMD-25-61", "amdzen4"),
        ("AuthenticAMD-25-A0", "amdzen4"),
        ("AuthenticAMD-26-2-1", "amdzen5"),
        ("AuthenticAMD-26-44", "amdzen5"),
    ] {
        let cpu = key.parse().unwrap();
        let row = select_dir(&root, &cpu).unwrap();
        assert_eq!(row.map(|r| r.dir).as_deref(), Some(want), "{key}");
    }
    let k10 = "AuthenticAMD-16-2".parse().unwrap();
    assert!(select_dir(&root, &k10).unwrap().is_none());
    // Zen 1–3 define no pipeline metrics: their tables load, no tree.
    for key in [
        "AuthenticAMD-23-1",
        "AuthenticAMD-23-31",
        "AuthenticAMD-25-21",
    ] {
        let cpu = key.parse().unwrap();
        let tables = load_perf_x86_tables(&dir, &cpu).unwrap();
        assert_eq!(tables.len(), 1, "{key}: recommended.json only");
        assert!(tables[0]
            .metrics
            .iter()
            .any(|m| m.name == "all_l2_cache_misses"));
        let lib = library(&dir, key);
        assert!(lib.tma_tree().is_none(), "{key}");
    }
}

#[test]
fn zen4_pipeline_levels_1_and_2() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let lib = library(&dir, "AuthenticAMD-25-11-1");
    let tree = lib.tma_tree().unwrap();
    assert_eq!(tree.origin, "x86/amdzen4/pipeline.json", "the tables win");
    assert_eq!(tree.depth(), 2);
    let mut inputs = Inputs::new();
    for (name, n) in [
        ("ls_not_halted_cyc", 1_000.0),
        ("de_no_dispatch_per_slot.no_ops_from_frontend", 1_500.0),
        // perf's `cpu@…\,cmask\=0x6@` term: cycles with all 6 slots empty
        (
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/",
            150.0,
        ),
        ("de_src_op_disp.all", 2_700.0),
        ("ex_ret_ops", 2_400.0),
        ("ex_ret_brn_misp", 30.0),
        ("resyncs_or_nc_redirects", 10.0),
        ("de_no_dispatch_per_slot.backend_stalls", 1_620.0),
        ("ex_no_retire.load_not_complete", 600.0),
        ("ex_no_retire.not_complete", 800.0),
        ("de_no_dispatch_per_slot.smt_contention", 180.0),
        ("ex_ret_ucode_ops", 240.0),
    ] {
        inputs.insert(name, Reading::exact(n));
    }
    let r = evaluate(&lib, &inputs, 2);
    // total_dispatch_slots = 6 × 1000 = 6000.
    let want: Vec<(String, u32, f64)> = [
        ("frontend_bound", 1, 25.0),                    // 1500 / 6000
        ("frontend_bound_latency", 2, 15.0),            // 6 × 150 / 6000
        ("frontend_bound_bandwidth", 2, 10.0),          // (1500 − 900) / 6000
        ("bad_speculation", 1, 5.0),                    // (2700 − 2400) / 6000
        ("bad_speculation_mispredicts", 2, 3.75),       // 0.05 × 30 / 40
        ("bad_speculation_pipeline_restarts", 2, 1.25), // 0.05 × 10 / 40
        ("backend_bound", 1, 27.0),                     // 1620 / 6000
        ("backend_bound_memory", 2, 20.25),             // 0.27 × 600 / 800
        ("backend_bound_cpu", 2, 6.75),                 // 0.27 × (1 − 0.75)
        ("smt_contention", 1, 3.0),                     // 180 / 6000
        ("retiring", 1, 40.0),                          // 2400 / 6000
        ("retiring_fastpath", 2, 36.0),                 // 0.4 × (1 − 240 / 2400)
        ("retiring_microcode", 2, 4.0),                 // 0.4 × 0.1
    ]
    .iter()
    .map(|(n, l, v)| (n.to_string(), *l, *v))
    .collect();
    assert_eq!(percents(&r), want);
    // pmx's thresholds (AMD publishes none): FE 25 % > 15 %, BE 27 % > 20 %;
    // the larger is backend bound, whose memory child is 20.25 % > 20 %.
    assert_eq!(
        r.bottleneck_path(),
        ["backend_bound", "backend_bound_memory"]
    );
    let flag = |n: &str| r.nodes.iter().find(|x| x.name == n).unwrap().flag.clone();
    assert_eq!(flag("frontend_bound"), Flag::Over);
    assert_eq!(flag("frontend_bound_latency"), Flag::Over);
    assert_eq!(
        flag("frontend_bound_bandwidth"),
        Flag::Under,
        "10 % is not over 10 %"
    );
    assert_eq!(flag("retiring"), Flag::Under);
    assert_eq!(flag("smt_contention"), Flag::NoThreshold);
    assert!(
        r.notes.iter().any(|n| n.starts_with("thresholds: pmx's")),
        "{:?}",
        r.notes
    );

    assert!(
        r.notes
            .contains(&"dispatch slots: total_dispatch_slots = 6 * ls_not_halted_cyc".to_string()),
        "{:?}",
        r.notes
    );
    // Level 1 only: five nodes.
    assert_eq!(evaluate(&lib, &inputs, 1).nodes.len(), 5);

    // One input not counted: its nodes say why, through the chain; the
    // others keep their values.
    let mut partial = inputs.clone();
    partial.insert(
        "ex_ret_ucode_ops",
        Reading::NotCounted {
            why: Some("no counter left".into()),
        },
    );
    let r = evaluate(&lib, &partial, 2);
    let node = |n: &str| r.nodes.iter().find(|x| x.name == n).unwrap();
    let m = node("retiring_microcode")
        .evaluated
        .missing()
        .unwrap()
        .clone();
    assert_eq!(
        m.to_string(),
        "retiring_microcode ← ex_ret_ucode_ops: not counted (no counter left)"
    );
    assert!(matches!(m.reason, Reason::NotCounted(_)));
    assert!(node("retiring_fastpath").percent.is_none());
    assert_eq!(node("retiring").percent.map(|p| p.round()), Some(40.0));
}

#[test]
fn zen5_pipeline_levels_1_and_2() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let lib = library(&dir, "AuthenticAMD-26-2-1");
    let tree = lib.tma_tree().unwrap();
    assert_eq!(tree.origin, "x86/amdzen5/pipeline.json");
    let mut inputs = Inputs::new();
    for (name, n) in [
        ("ls_not_halted_cyc", 1_000.0),
        ("de_no_dispatch_per_slot.no_ops_from_frontend", 2_000.0),
        // cycles with all 8 slots empty
        (
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8/",
            100.0,
        ),
        ("de_src_op_disp.all", 4_400.0),
        ("ex_ret_ops", 4_000.0),
        ("ex_ret_brn_misp", 45.0),
        ("bp_redirects.resync", 15.0),
        ("de_no_dispatch_per_slot.backend_stalls", 1_200.0),
        ("ex_no_retire.load_not_complete", 300.0),
        ("de_no_dispatch_per_slot.smt_contention", 400.0),
        ("ex_ret_ucode_ops", 800.0),
    ] {
        inputs.insert(name, Reading::exact(n));
    }
    // Multiplexed: counted half the time, 500 scaled to 1000.
    inputs.insert("ex_no_retire.not_complete", Reading::count(500, 100, 50));
    let r = evaluate(&lib, &inputs, 2);
    // total_dispatch_slots = 8 × 1000 = 8000.
    let want: Vec<(String, u32, f64)> = [
        ("frontend_bound", 1, 25.0),                         // 2000 / 8000
        ("frontend_bound_by_latency", 2, 10.0),              // 8 × 100 / 8000
        ("frontend_bound_by_bandwidth", 2, 15.0),            // (2000 − 800) / 8000
        ("bad_speculation", 1, 5.0),                         // (4400 − 4000) / 8000
        ("bad_speculation_from_mispredicts", 2, 3.75),       // 0.05 × 45 / 60
        ("bad_speculation_from_pipeline_restarts", 2, 1.25), // 0.05 × 15 / 60
        ("backend_bound", 1, 15.0),                          // 1200 / 8000
        ("backend_bound_by_memory", 2, 4.5),                 // 0.15 × 300 / 1000
        ("backend_bound_by_cpu", 2, 10.5),                   // 0.15 × 0.7
        ("smt_contention", 1, 5.0),                          // 400 / 8000
        ("retiring", 1, 50.0),                               // 4000 / 8000
        ("retiring_from_fastpath", 2, 40.0),                 // 0.5 × (1 − 800 / 4000)
        ("retiring_from_microcode", 2, 10.0),                // 0.5 × 0.2
    ]
    .iter()
    .map(|(n, l, v)| (n.to_string(), *l, *v))
    .collect();
    assert_eq!(percents(&r), want);
    // FE 25 % is the only flagged level-1 node; bandwidth 15 % > 10 %.
    assert_eq!(
        r.bottleneck_path(),
        ["frontend_bound", "frontend_bound_by_bandwidth"]
    );
    assert!(
        r.notes
            .contains(&"dispatch slots: total_dispatch_slots = 8 * ls_not_halted_cyc".to_string()),
        "{:?}",
        r.notes
    );
    let node = |n: &str| r.nodes.iter().find(|x| x.name == n).unwrap();
    assert!(node("backend_bound_by_memory").evaluated.is_estimate());
    assert!(!node("backend_bound").evaluated.is_estimate());
    // perf's names answer -M TopdownL1 and PipelineL2.
    assert_eq!(lib.select("TopdownL1").unwrap().len(), 5);
    assert_eq!(lib.select("PipelineL2").unwrap().len(), 8);
}
