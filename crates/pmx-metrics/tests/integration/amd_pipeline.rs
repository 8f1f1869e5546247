//! pmx's built-in AMD pipeline tree (Zen 4, Zen 5) against Linux perf's
//! `pipeline.json` (the oracle, read at run time from
//! `shared/data/linux-perf-events/x86`): from the same counts, every node
//! has the same value. Each library's events are resolved to their
//! encoding through pmx-events (the built-in table for pmx's names, perf's
//! table for perf's), and every encoding gets one synthetic count, so the
//! two formulas see the same hardware numbers under their own names.

use pmx_events::amd_builtin::Zen;
use pmx_events::{Database, LoadOptions, Target};
use pmx_metrics::amd_pipeline::node_names;
use pmx_metrics::perf_x86::load_perf_x86_tables;
use pmx_metrics::{Inputs, Library, Machine, Reading};
use std::path::Path;

/// A count for an encoding: any fixed, spread-out positive number.
fn synthetic(config: u64) -> f64 {
    let h = config.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (1_000 + h % 1_000_000) as f64
}

/// Inputs for every event `lib`'s formulas name, by encoding.
fn inputs(lib: &Library, db: &Database) -> Inputs {
    let mut out = Inputs::new();
    for e in lib.events() {
        // The kernel's own PMUs (RAPL `power/`, `msr/`, which LIKWID's
        // ENERGY and CLOCK groups read) resolve through this machine's
        // sysfs only; the pipeline tree reads neither.
        let kernel_pmu = e.name.starts_with("power/") || e.name.starts_with("msr/");
        if e.name == "duration_time" || kernel_pmu {
            continue;
        }
        let spec = e.spec("cpu").unwrap_or_else(|| panic!("{}", e.name));
        let parsed =
            pmx_model::spec::parse_spec(&spec).unwrap_or_else(|err| panic!("{spec}: {err}"));
        let r = db
            .resolve(&parsed)
            .unwrap_or_else(|err| panic!("{spec}: {err}"));
        out.insert(&e.name, Reading::exact(synthetic(r.attr.config)));
    }
    out
}

fn values(lib: &Library, inputs: &Inputs, names: &[&str]) -> Vec<Option<f64>> {
    let machine = Machine {
        smt_on: Some(true),
        ..Machine::default()
    };
    let mut ev = lib.evaluator(inputs, &machine);
    names
        .iter()
        .map(|n| {
            let id = lib.find(n).unwrap_or_else(|| panic!("no metric {n}"));
            ev.metric(id).value()
        })
        .collect()
}

fn perf_library(dir: &Path, cpu: &pmx_model::cpu::CpuId) -> Library {
    let mut lib = Library::new();
    for t in load_perf_x86_tables(dir, cpu).unwrap() {
        lib.add_table(t);
    }
    lib
}

#[test]
fn the_builtin_tree_computes_what_perfs_formulas_do() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    for zen in [Zen::Zen4, Zen::Zen5] {
        let cpu = zen.example_cpu().parse().unwrap();
        let ours = Library::for_cpu(Some(&cpu), None);
        let theirs = perf_library(&dir, &cpu);
        let db = Database::load(
            Target {
                cpu: cpu.clone(),
                host: false,
            },
            &LoadOptions {
                events_dir: Some(dir.clone()),
                no_libpfm: true,
                ..Default::default()
            },
        );
        let names = node_names(zen);
        assert_eq!(
            names.len(),
            14,
            "{zen:?}: slots, 5 level-1 and 8 level-2 nodes"
        );
        let a = values(&ours, &inputs(&ours, &db), &names);
        let b = values(&theirs, &inputs(&theirs, &db), &names);
        for ((n, x), y) in names.iter().zip(&a).zip(&b) {
            let (x, y) = (
                x.unwrap_or_else(|| panic!("{zen:?} {n}: no value")),
                y.unwrap(),
            );
            assert!(
                (x - y).abs() <= 1e-12 * y.abs().max(1.0),
                "{zen:?} {n}: built in {x} vs perf {y}"
            );
            assert!(x != 0.0, "{zen:?} {n}: zero says nothing");
        }
        // The built-in tree is a tree of two levels with perf's names.
        let tree = ours.tma_tree().unwrap();
        assert_eq!(tree.depth(), 2, "{zen:?}");
        assert_eq!(tree.nodes().len(), 13, "{zen:?}");
    }
}

#[test]
fn zen_1_to_3_have_no_builtin_tree() {
    for zen in [Zen::Zen1, Zen::Zen2, Zen::Zen3] {
        assert!(node_names(zen).is_empty());
        let cpu = zen.example_cpu().parse().unwrap();
        let lib = Library::for_cpu(Some(&cpu), None);
        assert!(lib.find("frontend_bound").is_none(), "{zen:?}");
    }
}
