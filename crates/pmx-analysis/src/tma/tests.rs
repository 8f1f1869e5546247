//! The stages of `pmx tma` on a CPU that is not this one (AMD Zen 4, whose
//! level-1 tree is built in), so nothing depends on the machine.

use super::*;

fn zen4() -> (Database, Model) {
    let opts = DatabaseOptions {
        cpu: Some("AuthenticAMD-25-11".into()),
        no_libpfm: true,
        ..Default::default()
    };
    let db = database::load(&opts).unwrap();
    let model = Model::for_database(&db).unwrap();
    (db, model)
}

const INPUTS: [&str; 6] = [
    "CYCLES_NOT_IN_HALT",
    "DISPATCH_STALLS_1:FE_NO_OPS",
    "OPS_SOURCE_DISPATCHED_FROM_DECODER:DECODER:OPCACHE:LOOP_BUFFER",
    "RETIRED_OPS",
    "DISPATCH_STALLS_1:BE_STALLS",
    "DISPATCH_STALLS_1:SMT_CONTENTION",
];

#[test]
fn the_model_names_the_inputs_of_the_level() {
    let (_, model) = zen4();
    assert_eq!(model.cpu.to_string(), "AuthenticAMD-25-11");
    assert_eq!(model.machine.cpuid.as_deref(), Some("AuthenticAMD-25-11"));
    assert_eq!(model.machine.smt_on, Some(false), "not this machine");
    let mut got: Vec<String> = model
        .inputs_to_level(1)
        .into_iter()
        .map(|e| e.name)
        .collect();
    got.sort();
    let mut want: Vec<String> = INPUTS.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_recorded_count_set_gives_the_level1_shares() {
    let (_, model) = zen4();
    let counts = [1_000.0, 1_200.0, 2_700.0, 2_400.0, 1_800.0, 600.0];
    let mut inputs = Inputs::new();
    for (name, n) in INPUTS.iter().zip(counts) {
        inputs.insert(name, Reading::exact(n));
    }
    let tree = model.evaluate(&inputs, 1);
    let got: Vec<(&str, f64)> = tree
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), (n.percent.unwrap() * 1e9).round() / 1e9))
        .collect();
    // 6 dispatch slots per cycle: 6000 slots.
    assert_eq!(
        got,
        [
            ("frontend_bound", 20.0),
            ("bad_speculation", 5.0),
            ("backend_bound", 30.0),
            ("smt_contention", 10.0),
            ("retiring", 40.0),
        ]
    );
    // pmx's thresholds (AMD publishes none): BE 30 % > 20 %.
    assert_eq!(tree.bottleneck_path(), ["backend_bound"]);
}

#[test]
fn inputs_resolve_from_the_builtin_table_and_others_say_why_not() {
    let (db, model) = zen4();
    // pmx's built-in Zen 4 table knows every input, without libpfm4 or an
    // events directory.
    let events = model.inputs_to_level(1);
    let plan = plan_inputs(&events, &db);
    assert!(plan.unavailable.is_empty(), "{:?}", plan.unavailable);
    assert_eq!(plan.plan.events.len(), INPUTS.len());
    // A name no table has is unavailable, with why; the others still plan.
    let mut events = events;
    events.push(EventRef::new("NOT_AN_AMD_EVENT"));
    let mut plan = plan_inputs(&events, &db);
    assert_eq!(plan.plan.events.len(), INPUTS.len());
    assert_eq!(plan.unavailable.len(), 1);
    let (name, why) = &plan.unavailable[0];
    assert_eq!(name, "NOT_AN_AMD_EVENT");
    assert!(
        why.as_str()
            .starts_with("not in the event tables for AuthenticAMD-25-11: "),
        "{why}"
    );
    assert_eq!(
        why.detail(),
        Some("not in the event tables for AuthenticAMD-25-11")
    );
    // Nothing was counted: no node has a value, each says which input.
    let inputs = plan.readings(None);
    assert_eq!(inputs.duration, None);
    let tree = model.evaluate(&inputs, 1);
    assert_eq!(tree.nodes.len(), 5);
    for n in &tree.nodes {
        assert!(n.percent.is_none(), "{}", n.name);
        assert!(n.evaluated.missing().is_some(), "{}", n.name);
    }
}

#[test]
fn level_zero_is_refused_before_anything_runs() {
    let opts = TmaOptions {
        level: 0,
        command: vec!["/nonexistent/command".into()],
        ..Default::default()
    };
    let e = run(&opts).unwrap_err();
    assert!(matches!(e, TmaError::LevelZero));
    assert!(e.is_usage());
    assert_eq!(e.to_string(), "-l 0: levels start at 1");
}

#[test]
fn a_command_that_cannot_run_is_an_exec_error() {
    // The inputs resolve (pmx's built-in Zen 4 table), whether they can be
    // counted here or not; the command does not exist.
    let opts = TmaOptions {
        level: 1,
        command: vec!["/nonexistent/command".into()],
        database: DatabaseOptions {
            cpu: Some("AuthenticAMD-25-11".into()),
            no_libpfm: true,
            ..Default::default()
        },
        ..Default::default()
    };
    match run(&opts) {
        Err(TmaError::Exec { cmd, .. }) => assert_eq!(cmd, "/nonexistent/command"),
        other => panic!("{other:?}"),
    }
}
