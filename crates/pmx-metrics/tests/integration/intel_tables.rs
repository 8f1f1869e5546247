//! Intel's metric tables (`../shared/data/intel-perfmon`): every formula and
//! threshold of every file parses and binds, and top-down level 1 computed
//! by the engine equals Intel's formulas worked by hand.
//!
//! The data lives outside the repository: `PMX_SHARED_DIR`, else
//! `CARGO_MANIFEST_DIR/../../../shared/data`. Without it the tests print
//! `SKIP: …` and pass.

use pmx_metrics::formula::{Dialect, Formula};
use pmx_metrics::tables::{load_intel_tables, parse_metric_file, parse_retire_latency};
use pmx_metrics::{
    builtin, Evaluated, Flag, Inputs, Library, Machine, MetricId, Reading, SourceKind,
};
use pmx_testkit::shared::intel_perfmon;
use std::path::{Path, PathBuf};

/// Every metric file under `<PLATFORM>/metrics/` and `metrics/perf/`.
fn metric_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(platforms) = std::fs::read_dir(dir) else {
        return out;
    };
    for p in platforms.flatten() {
        for sub in [p.path().join("metrics"), p.path().join("metrics/perf")] {
            if let Ok(files) = std::fs::read_dir(&sub) {
                for f in files.flatten() {
                    let path = f.path();
                    if path.extension().is_some_and(|e| e == "json") {
                        out.push(path);
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// A deterministic, varied count for an event name.
fn fake_count(name: &str) -> u64 {
    let mut h: u64 = 1469598103934665603;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(1099511628211);
    }
    1_000 + h % 1_000_000
}

#[test]
fn every_formula_and_threshold_of_every_table_parses() {
    let Some(dir) = intel_perfmon() else { return };
    let files = metric_files(&dir);
    assert!(files.len() >= 30, "only {} metric files found", files.len());
    let machine = Machine {
        smt_on: Some(true),
        threads_per_core: Some(2),
        num_cpus: Some(64),
        num_cpus_online: Some(64),
        num_cores: Some(32),
        num_packages: Some(2),
        num_dies: Some(2),
        pipeline_width: Some(6),
        tsc_frequency_hz: Some(2.0e9),
        base_frequency_hz: Some(2.0e9),
        core_wide: Some(true),
        chas_per_socket: Some(16),
        cores_per_socket: Some(16),
        cpuid: Some("GenuineIntel-6-8F-8".into()),
        ..Machine::default()
    };
    let (mut metrics, mut thresholds, mut valued) = (0usize, 0usize, 0usize);
    for path in &files {
        let rel = path.strip_prefix(&dir).unwrap().display().to_string();
        let bytes = std::fs::read(path).unwrap();
        if rel.contains("retire_latency") {
            let l = parse_retire_latency(&bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
            assert!(!l.is_empty(), "{rel}");
            continue;
        }
        let table = parse_metric_file(&bytes, &rel).unwrap_or_else(|e| panic!("{rel}: {e}"));
        // Every entry became a metric; nothing was skipped or left unbound.
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let entries = doc
            .get("Metrics")
            .or(Some(&doc))
            .and_then(|v| v.as_array())
            .unwrap()
            .len();
        assert_eq!(table.metrics.len(), entries, "{rel}: {:#?}", table.warnings);
        let bad: Vec<&String> = table
            .warnings
            .iter()
            .filter(|w| !w.contains("parent taken from its threshold"))
            .collect();
        assert!(bad.is_empty(), "{rel}: {bad:#?}");
        metrics += table.metrics.len();
        let with_threshold = table
            .metrics
            .iter()
            .filter(|m| m.threshold.is_some())
            .count();
        let in_json = doc
            .get("Metrics")
            .or(Some(&doc))
            .and_then(|v| v.as_array())
            .unwrap()
            .iter()
            .filter(|m| {
                let t = m
                    .get("Threshold")
                    .and_then(|t| t.get("Formula"))
                    .or(m.get("MetricThreshold"));
                t.and_then(|t| t.as_str())
                    .is_some_and(|t| !t.trim().is_empty())
            })
            .count();
        assert_eq!(with_threshold, in_json, "{rel}: thresholds");
        thresholds += with_threshold;
        // Printing gives pmx-dialect text that parses back to the same tree.
        for m in &table.metrics {
            for f in std::iter::once(&m.formula).chain(m.threshold.as_ref().map(|t| &t.formula)) {
                let printed = f.to_string();
                let again = Formula::parse(&printed, Dialect::Pmx)
                    .unwrap_or_else(|e| panic!("{rel}: {}: {e}", m.name));
                assert_eq!(again.to_string(), printed, "{rel}: {}", m.name);
            }
        }
        // Bound in a library of its own, nothing refers to a missing metric.
        let mut lib = Library::new();
        lib.add_table(table);
        let unknown = lib.unknown_references();
        assert!(unknown.is_empty(), "{rel}: {unknown:?}");
        // Every event has a spec pmx's grammar reads (what `pmx stat -M`
        // schedules); retire latencies are sampled, not counted.
        for ev in lib.events() {
            if let Some(spec) = ev.spec("cpu") {
                pmx_model::spec::parse_spec(&spec)
                    .unwrap_or_else(|e| panic!("{rel}: {} → {spec}: {e}", ev.name));
            }
        }
        // Every metric and threshold evaluates without panicking.
        let mut inputs = Inputs::new();
        for ev in lib.events() {
            inputs.insert(&ev.name, Reading::count(fake_count(&ev.name), 1000, 800));
        }
        inputs.duration = Some(1.5);
        let mut ev = lib.evaluator(&inputs, &machine);
        for (id, _) in lib.iter() {
            let e: Evaluated = ev.metric(id);
            if e.value().is_some() {
                valued += 1;
            }
            let _ = ev.threshold(id);
        }
    }
    println!("{} files, {metrics} metrics, {thresholds} thresholds, {valued} computed from synthetic counts", files.len());
    assert!(metrics > 5_000 && thresholds > 2_500);
    assert!(valued * 10 > metrics * 8, "{valued} of {metrics}");
}

#[test]
fn every_platform_has_a_tma_tree() {
    let Some(dir) = intel_perfmon() else { return };
    let map = pmx_events::intel_json::Mapfile::read(&dir).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for row in map.rows() {
        if !row.event_type.eq_ignore_ascii_case("metrics") || !seen.insert(row.filename.clone()) {
            continue;
        }
        let bytes = std::fs::read(dir.join(row.relative_path())).unwrap();
        let t = parse_metric_file(&bytes, row.relative_path()).unwrap();
        let has_tma = t.metrics.iter().any(|m| m.parent.is_some());
        let mut lib = Library::new();
        lib.add_table(t);
        let Some(tree) = lib.tma_tree() else {
            assert!(!has_tma, "{}: TMA metrics but no tree", row.filename);
            continue;
        };
        let roots: Vec<&str> = tree
            .roots()
            .iter()
            .map(|&r| tree.nodes()[r].name.as_str())
            .collect();
        assert_eq!(
            &roots[..3],
            ["Frontend_Bound", "Bad_Speculation", "Backend_Bound"],
            "{}",
            row.filename
        );
        assert!(tree.depth() >= 3, "{}", row.filename);
        // Every TMA metric with a parent is in the tree.
        let with_parent = lib.metrics().iter().filter(|m| m.parent.is_some()).count();
        assert_eq!(
            tree.nodes().len(),
            with_parent + roots.len(),
            "{}",
            row.filename
        );
    }
}

/// Intel's table's definition of `name` for a CPU (not the built-in one).
fn intel_metric(lib: &Library, name: &str) -> MetricId {
    lib.lookup(name)
        .into_iter()
        .find(|&id| lib.source_of(id).kind == SourceKind::IntelFormat)
        .unwrap_or_else(|| panic!("no {name} in Intel's table"))
}

fn builtin_metric(lib: &Library, name: &str) -> MetricId {
    lib.lookup(name)
        .into_iter()
        .find(|&id| lib.source_of(id).kind == SourceKind::Builtin)
        .unwrap_or_else(|| panic!("no built-in {name}"))
}

fn close(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: no value"));
    assert!((got - want).abs() < 1e-9, "{what}: {got} != {want}");
}

fn library(dir: &Path, key: &str) -> Library {
    let cpu = key.parse().unwrap();
    let mut lib = Library::new();
    for t in load_intel_tables(dir, &cpu).unwrap() {
        lib.add_table(t);
    }
    lib.add_table(builtin::builtin_table(Some(&cpu)));
    assert!(
        lib.sources()
            .iter()
            .any(|s| s.kind == SourceKind::IntelFormat),
        "{key}: no Intel table"
    );
    lib
}

#[test]
fn skylake_sp_level1_classic_formulas() {
    let Some(dir) = intel_perfmon() else { return };
    let lib = library(&dir, "GenuineIntel-6-55-4");
    let (thread, thread_any) = (1_000_000.0, 1_800_000.0);
    let idq_not_delivered = 800_000.0;
    let (issued, retire_slots) = (2_000_000.0, 1_600_000.0);
    let (recovery, recovery_any) = (20_000.0, 36_000.0);
    let mut inputs = Inputs::new();
    inputs
        .insert("CPU_CLK_UNHALTED.THREAD", Reading::exact(thread))
        .insert("CPU_CLK_UNHALTED.THREAD_ANY", Reading::exact(thread_any))
        .insert(
            "IDQ_UOPS_NOT_DELIVERED.CORE",
            Reading::exact(idq_not_delivered),
        )
        .insert("UOPS_ISSUED.ANY", Reading::exact(issued))
        .insert("UOPS_RETIRED.RETIRE_SLOTS", Reading::exact(retire_slots))
        .insert("INT_MISC.RECOVERY_CYCLES", Reading::exact(recovery))
        .insert("INT_MISC.RECOVERY_CYCLES_ANY", Reading::exact(recovery_any));

    for smt in [false, true] {
        let machine = Machine {
            smt_on: Some(smt),
            ..Machine::default()
        };
        // Intel's SKX formulas (skylakex_metrics.json), worked by hand:
        //   slots        = 4 * (THREAD_ANY / 2 if smt_on else THREAD)
        //   Frontend     = 100 * IDQ_UOPS_NOT_DELIVERED.CORE / slots
        //   Bad_Spec     = 100 * (UOPS_ISSUED.ANY - RETIRE_SLOTS
        //                        + 4 * (RECOVERY_CYCLES_ANY / 2 if smt_on else RECOVERY_CYCLES)) / slots
        //   Backend      = 100 * (1 - IDQ_UOPS_NOT_DELIVERED.CORE / slots
        //                        - (UOPS_ISSUED.ANY + 4 * recovery) / slots)
        //   Retiring     = 100 * RETIRE_SLOTS / slots
        let slots = if smt {
            4.0 * (thread_any / 2.0)
        } else {
            4.0 * thread
        };
        let rec = if smt { recovery_any / 2.0 } else { recovery };
        let fe = 100.0 * idq_not_delivered / slots;
        let bs = 100.0 * (issued - retire_slots + 4.0 * rec) / slots;
        let be = 100.0 * (1.0 - idq_not_delivered / slots - (issued + 4.0 * rec) / slots);
        let ret = 100.0 * retire_slots / slots;
        if !smt {
            // 4 000 000 slots: 20 %, 12 %, 28 %, 40 %.
            assert!((fe - 20.0).abs() < 1e-9 && (bs - 12.0).abs() < 1e-9);
            assert!((be - 28.0).abs() < 1e-9 && (ret - 40.0).abs() < 1e-9);
        }
        let mut ev = lib.evaluator(&inputs, &machine);
        let cases = [
            ("Frontend_Bound", "tma_frontend_bound", fe),
            ("Bad_Speculation", "tma_bad_speculation", bs),
            ("Backend_Bound", "tma_backend_bound", be),
            ("Retiring", "tma_retiring", ret),
        ];
        for (intel, builtin_name, want) in cases {
            let what = format!("{intel} (SMT {smt})");
            close(ev.metric(intel_metric(&lib, intel)).value(), want, &what);
            // The built-in level 1 agrees (it is a fraction, shown × 100).
            let b = ev.metric(builtin_metric(&lib, builtin_name));
            close(
                b.value().map(|v| v * 100.0),
                want,
                &format!("built-in {what}"),
            );
        }
        // The tree: Intel's, flagged by Intel's thresholds.
        let tree = lib.tma_tree().unwrap();
        assert!(
            tree.origin.contains("skylakex_metrics.json"),
            "{}",
            tree.origin
        );
        let report = tree.evaluate(&mut ev, 1);
        let flags: Vec<(&str, &Flag)> = report
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), &n.flag))
            .collect();
        assert_eq!(flags[0], ("Frontend_Bound", &Flag::Over)); // > 15
        assert_eq!(flags[1], ("Bad_Speculation", &Flag::Under)); // < 15
        assert_eq!(flags[2], ("Backend_Bound", &Flag::Over)); // > 20
                                                              // Retiring > 70 | Heavy_Operations > 10: Retiring is under and
                                                              // Heavy_Operations was not counted, so it cannot be decided.
        assert!(
            matches!(flags[3], ("Retiring", Flag::Unknown(_))),
            "{flags:?}"
        );
        // The flagged level-1 node with the larger share: Backend Bound
        // (28 %) without SMT; with SMT, Frontend Bound (22.2 %) beats
        // Backend Bound (20.2 %).
        let want = if be > fe {
            "Backend_Bound"
        } else {
            "Frontend_Bound"
        };
        assert_eq!(
            want,
            if smt {
                "Frontend_Bound"
            } else {
                "Backend_Bound"
            }
        );
        assert_eq!(report.bottleneck().unwrap().name, want);
        assert_eq!(report.notes.len(), usize::from(smt), "{:?}", report.notes);
        // Deeper levels are missing here and say so; the bottleneck stays.
        let deep = tree.evaluate(&mut ev, 3);
        assert!(deep.nodes.len() > report.nodes.len());
        let mem = deep
            .nodes
            .iter()
            .find(|n| n.name == "Memory_Bound")
            .unwrap();
        assert!(mem
            .evaluated
            .missing()
            .unwrap()
            .to_string()
            .starts_with("Memory_Bound ← "));
        assert_eq!(deep.bottleneck_path(), [want]);
    }
}

fn slots_form_inputs() -> Inputs {
    // perf's names on purpose: they must meet Intel's PERF_METRICS.* and
    // TOPDOWN.SLOTS:perf_metrics.
    let mut inputs = Inputs::new();
    inputs
        .insert("slots", Reading::exact(10_000_000.0))
        .insert("topdown-fe-bound", Reading::exact(2_500_000.0))
        .insert("topdown-bad-spec", Reading::exact(1_000_000.0))
        .insert("topdown-retiring", Reading::exact(4_000_000.0))
        .insert("topdown-be-bound", Reading::exact(2_500_000.0))
        .insert("INT_MISC.UOP_DROPPING", Reading::exact(100_000.0))
        .insert("INT_MISC.CLEARS_COUNT", Reading::exact(20_000.0));
    inputs
}

#[test]
fn ice_lake_level1_slots_form() {
    let Some(dir) = intel_perfmon() else { return };
    let lib = library(&dir, "GenuineIntel-6-7E");
    let inputs = slots_form_inputs();
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);
    // Intel's ICL formulas (icelake_metrics.json), worked by hand with
    // a..d = PERF_METRICS FE, BS, RET, BE; sum = a + b + c + d:
    let (a, b, c, d): (f64, f64, f64, f64) = (2_500_000.0, 1_000_000.0, 4_000_000.0, 2_500_000.0);
    let sum = a + b + c + d;
    let (slots, dropping, clears) = (10_000_000.0, 100_000.0, 20_000.0);
    //   Frontend = 100 * (a / sum - UOP_DROPPING / slots)
    let fe = 100.0 * (a / sum - dropping / slots); // 24
                                                   //   Backend  = 100 * (d / sum + 5 * CLEARS_COUNT / slots)
    let be = 100.0 * (d / sum + 5.0 * clears / slots); // 26
                                                       //   Retiring = 100 * c / sum
    let ret = 100.0 * c / sum; // 40
                               //   Bad_Spec = 100 * max(1 - (fe + be + ret) / 100, 0)
    let bs = 100.0
        * (1.0 - (a / sum - dropping / slots) - (d / sum + 5.0 * clears / slots) - c / sum)
            .max(0.0); // 10
    for (name, want) in [
        ("Frontend_Bound", fe),
        ("Bad_Speculation", bs),
        ("Backend_Bound", be),
        ("Retiring", ret),
    ] {
        close(ev.metric(intel_metric(&lib, name)).value(), want, name);
    }
    assert!((fe - 24.0).abs() < 1e-9 && (be - 26.0).abs() < 1e-9 && (bs - 10.0).abs() < 1e-9);
    // The built-in level 1 is the plain PERF_METRICS form: a / sum, …
    for (name, want) in [
        ("tma_frontend_bound", a / sum),
        ("tma_bad_speculation", b / sum),
        ("tma_backend_bound", d / sum),
        ("tma_retiring", c / sum),
    ] {
        close(ev.metric(builtin_metric(&lib, name)).value(), want, name);
    }
}

#[test]
fn sapphire_rapids_level1_slots_form() {
    let Some(dir) = intel_perfmon() else { return };
    let lib = library(&dir, "GenuineIntel-6-8F-8");
    let mut inputs = slots_form_inputs();
    let machine = Machine::default();
    // Intel's SPR formulas (sapphirerapids_metrics.json), by hand:
    //   Frontend = 100 * (a / sum - UOP_DROPPING / slots)   = 24
    //   Backend  = 100 * d / sum                              = 25
    //   Retiring = 100 * c / sum                              = 40
    //   Bad_Spec = 100 * max(1 - (Frontend + Backend + Retiring) / 100, 0) = 11
    let (a, c, d, sum): (f64, f64, f64, f64) =
        (2_500_000.0, 4_000_000.0, 2_500_000.0, 10_000_000.0);
    let fe = 100.0 * (a / sum - 100_000.0 / 10_000_000.0);
    let be = 100.0 * d / sum;
    let ret = 100.0 * c / sum;
    let bs = (100.0 - fe - be - ret).max(0.0);
    {
        let mut ev = lib.evaluator(&inputs, &machine);
        for (name, want) in [
            ("Frontend_Bound", fe),
            ("Bad_Speculation", bs),
            ("Backend_Bound", be),
            ("Retiring", ret),
        ] {
            close(ev.metric(intel_metric(&lib, name)).value(), want, name);
        }
        assert!((bs - 11.0).abs() < 1e-9);
    }
    // Without INT_MISC.UOP_DROPPING, Intel's Frontend Bound says why, and
    // the built-in one (PERF_METRICS only) still has a value.
    inputs.insert("INT_MISC.UOP_DROPPING", Reading::NotCounted { why: None });
    let mut ev = lib.evaluator(&inputs, &machine);
    let intel = ev.metric(intel_metric(&lib, "Frontend_Bound"));
    assert_eq!(
        intel.missing().unwrap().to_string(),
        "Frontend_Bound ← INT_MISC.UOP_DROPPING: not counted"
    );
    let alts = lib.lookup("tma_frontend_bound");
    let (id, e) = ev.first_with_value(&alts).unwrap();
    assert_eq!(lib.source_of(id).kind, SourceKind::Builtin);
    close(e.value(), 0.25, "built-in fallback");
}

#[test]
fn retire_latency_defaults_are_used_and_reported() {
    let Some(dir) = intel_perfmon() else { return };
    let lib = library(&dir, "GenuineIntel-6-AD");
    let with_rl = lib
        .iter()
        .find(|(_, m)| {
            m.formula
                .references()
                .iter()
                .any(|r| r.name.ends_with(":retire_latency"))
        })
        .map(|(id, _)| id)
        .expect("GNR uses retire latencies");
    let mut inputs = Inputs::new();
    for e in lib.events() {
        if !e.retire_latency {
            inputs.insert(&e.name, Reading::exact(fake_count(&e.name) as f64));
        }
    }
    let machine = Machine {
        smt_on: Some(false),
        ..Machine::default()
    };
    let mut ev = lib.evaluator(&inputs, &machine);
    let e = ev.metric(with_rl);
    assert!(
        e.assumptions
            .iter()
            .any(|a| a.contains("Intel's published mean")),
        "{}: {e:?}",
        lib.metric(with_rl).name
    );
}

/// The metric tables built into pmx are Intel's, descriptions aside: for
/// every platform with metrics, the same tables, metrics, formulas,
/// thresholds, groups, TMA levels and parents, units and retire latencies
/// as the files give; and an events directory's tables are used instead of
/// them.
#[test]
fn built_in_metric_tables_are_intels_without_the_prose() {
    use pmx_metrics::tables::load_builtin_intel_tables;
    let Some(dir) = intel_perfmon() else { return };
    let map = std::fs::read_to_string(dir.join("mapfile.csv")).unwrap();
    let mut checked = 0;
    for line in map.lines().filter(|l| l.contains(",metrics,")) {
        // A key the row's pattern selects: each class → its first character.
        let pattern = line.split(',').next().unwrap();
        let mut key = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if c == '[' {
                key.extend(chars.next());
                chars.by_ref().find(|&c| c == ']');
            } else {
                key.push(c);
            }
        }
        let cpu = key.parse().unwrap();
        let built_in = load_builtin_intel_tables(&cpu).unwrap();
        let files = load_intel_tables(&dir, &cpu).unwrap();
        assert_eq!(built_in.len(), files.len(), "{key}");
        assert!(!built_in.is_empty(), "{key}");
        for (b, f) in built_in.iter().zip(&files) {
            assert_eq!(b.source.origin, format!("{} (built in)", f.source.origin));
            assert_eq!(b.source.version, f.source.version);
            assert_eq!(b.retire_latency, f.retire_latency, "{key}");
            assert_eq!(b.metrics.len(), f.metrics.len(), "{key}");
            for (bm, fm) in b.metrics.iter().zip(&f.metrics) {
                assert!(bm.description.is_empty(), "{key} {}", bm.name);
                let mut fm = fm.clone();
                fm.description.clear();
                assert_eq!(*bm, fm, "{key}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} metric rows");

    // No directory: Skylake-SP's library holds Intel's TMA tree, built in.
    let cpu = "GenuineIntel-6-55-4".parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), None);
    let id = lib
        .find("tma_frontend_bound")
        .expect("built-in Intel metric");
    assert_eq!(lib.source_of(id).kind, SourceKind::IntelFormat);
    assert!(lib.source_of(id).origin.ends_with("(built in)"));
    // With the directory, its tables and not the built-in ones.
    let lib = Library::for_cpu(Some(&cpu), Some(&dir));
    assert!(lib.sources().iter().all(|s| !s.origin.contains("built in")));
}
