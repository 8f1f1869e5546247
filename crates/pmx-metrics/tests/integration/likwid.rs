//! LIKWID's groups in the library: every definition parses for every CPU
//! pmx defines them for, LIKWID's spelling of a group name selects
//! LIKWID's group while other spellings keep selecting what they did, and
//! `CLOCK` (which needs the TSC frequency a saved file lacks) computes
//! LIKWID's clock from counts.

use pmx_metrics::likwid::{absent, table, GROUPS};
use pmx_metrics::{Inputs, Library, Machine, Reading, SourceKind};

const CPUS: &[&str] = &[
    "GenuineIntel-6-55-4",
    "GenuineIntel-6-6A",
    "GenuineIntel-6-8F",
    "GenuineIntel-6-5E",
    "GenuineIntel-6-97",
    "AuthenticAMD-23-31",
    "AuthenticAMD-25-1",
    "AuthenticAMD-25-11",
    "AuthenticAMD-26-2",
];

#[test]
fn every_definition_parses_and_every_group_has_metrics() {
    for key in CPUS {
        let cpu = key.parse().unwrap();
        let t = table(Some(&cpu)).unwrap_or_else(|| panic!("{key}: no groups"));
        assert!(t.warnings.is_empty(), "{key}: {:?}", t.warnings);
        let lib = Library::for_cpu(Some(&cpu), None);
        for g in GROUPS {
            let ids = lib.group(g);
            let ours = ids
                .iter()
                .all(|&id| lib.source_of(id).kind == SourceKind::Groups);
            // A group either is LIKWID's here, or pmx says why it is not.
            assert!(
                (!ids.is_empty() && ours) || absent(g, &cpu).is_some(),
                "{key}: {g}"
            );
        }
    }
    assert!(table(Some(&"AuthenticAMD-16-2".parse().unwrap())).is_none());
    assert!(table(None).is_none());
}

#[test]
fn likwids_spelling_selects_likwids_group_and_others_keep_theirs() {
    let cpu = "GenuineIntel-6-55-4".parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), None);
    let kinds = |g: &str| -> Vec<SourceKind> {
        lib.select(g)
            .unwrap()
            .iter()
            .map(|alts| lib.source_of(alts[0]).kind)
            .collect()
    };
    let likwid = |k: &[SourceKind]| !k.is_empty() && k.iter().all(|&s| s == SourceKind::Groups);
    assert!(likwid(&kinds("MEM")));
    assert!(likwid(&kinds("BRANCH")));
    // Intel's `Mem` and pmx's `branch` as before.
    assert!(!kinds("Mem").contains(&SourceKind::Groups));
    assert!(!kinds("mem").contains(&SourceKind::Groups));
    assert_eq!(
        lib.select("branch").unwrap().len(),
        1,
        "branch_miss_ratio only"
    );
    // No other group of that name: any spelling finds LIKWID's.
    assert!(likwid(&kinds("flops_dp")));
    // The listing names both.
    let groups = lib.groups();
    for g in ["MEM", "Mem", "BRANCH", "branch"] {
        assert!(groups.iter().any(|x| x == g), "{g}: {groups:?}");
    }
}

#[test]
fn clock_is_likwids_from_cycles_and_reference_cycles() {
    let cpu = "GenuineIntel-6-8F".parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), None);
    let mut inputs = Inputs::new();
    inputs.insert("cycles", Reading::exact(3.0e9));
    inputs.insert("ref-cycles", Reading::exact(2.0e9));
    let machine = Machine {
        tsc_frequency_hz: Some(2.1e9),
        ..Machine::default()
    };
    let mut ev = lib.evaluator(&inputs, &machine);
    let clock = ev.metric_named("Clock [MHz]").unwrap().value().unwrap();
    // LIKWID: 1.E-06*(FIXC1/FIXC2)/inverseClock.
    assert!(
        (clock - 1.0e-6 * (3.0e9 / 2.0e9) * 2.1e9).abs() < 1e-6,
        "{clock}"
    );
    let unhalted = ev.metric_named("Runtime unhalted [s]").unwrap().value();
    assert!((unhalted.unwrap() - 3.0e9 / 2.1e9).abs() < 1e-12);
    // AMD: APERF over MPERF.
    let cpu = "AuthenticAMD-25-11".parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), None);
    let mut inputs = Inputs::new();
    inputs.insert("msr/aperf/", Reading::exact(5.0e8));
    inputs.insert("msr/mperf/", Reading::exact(4.0e8));
    let mut ev = lib.evaluator(&inputs, &machine);
    let clock = ev.metric_named("Clock [MHz]").unwrap().value().unwrap();
    assert!((clock - 1.0e-6 * 1.25 * 2.1e9).abs() < 1e-6, "{clock}");
}
