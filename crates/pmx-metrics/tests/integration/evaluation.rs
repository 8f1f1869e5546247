//! Evaluation: missing inputs through metric chains, reliability, the
//! language's evaluation rules, lookups and requirements.

use pmx_metrics::{
    builtin, Constant, Inputs, Library, Machine, Metric, MetricSource, MetricTable, Reading,
    Reason, SourceKind, ESTIMATE_BELOW,
};

fn fam10h() -> Library {
    let cpu = "AuthenticAMD-16-2".parse().unwrap();
    Library::for_cpu(Some(&cpu), None)
}

/// Every input of the family 10h cache group, fully counted.
fn fam10h_inputs() -> Inputs {
    let mut i = Inputs::new();
    for (name, value) in [
        ("RETIRED_INSTRUCTIONS", 1_000_000),
        ("DATA_CACHE_ACCESSES", 400_000),
        (
            "DATA_CACHE_REFILLS:L2_SHARED:L2_EXCLUSIVE:L2_OWNED:L2_MODIFIED",
            8_000,
        ),
        (
            "DATA_CACHE_REFILLS_FROM_SYSTEM:SHARED:EXCLUSIVE:OWNED:MODIFIED",
            2_000,
        ),
        ("INSTRUCTION_CACHE_FETCHES", 300_000),
        ("INSTRUCTION_CACHE_REFILLS_FROM_L2", 1_500),
        ("INSTRUCTION_CACHE_REFILLS_FROM_SYSTEM", 500),
        ("REQUESTS_TO_L2:TLB_WALK", 1_000),
        ("L2_CACHE_MISS:TLB_WALK", 250),
        ("READ_REQUEST_TO_L3_CACHE:ALL_CORES", 2_400),
        ("L3_CACHE_MISSES:ALL_CORES", 600),
    ] {
        i.insert(name, Reading::count(value, 1_000, 1_000));
    }
    i
}

fn value(lib: &Library, inputs: &Inputs, name: &str) -> f64 {
    let m = Machine::default();
    let mut ev = lib.evaluator(inputs, &m);
    let e = ev.metric_named(name).unwrap();
    e.value()
        .unwrap_or_else(|| panic!("{name}: {}", e.missing().unwrap()))
}

#[test]
fn fam10h_group_computes_from_libpfm_names() {
    let lib = fam10h();
    let inputs = fam10h_inputs();
    let close = |name: &str, want: f64| {
        let got = value(&lib, &inputs, name);
        assert!((got - want).abs() < 1e-12, "{name}: {got} != {want}");
    };
    close("dc_request_rate", 0.4);
    close("dc_misses", 10_000.0);
    close("dc_miss_ratio", 10_000.0 / 400_000.0);
    close("ic_request_rate", 0.3);
    close("ic_misses", 2_000.0);
    close("ic_miss_ratio", 2_000.0 / 300_000.0);
    close("l2_requests", 10_000.0 + 2_000.0 + 1_000.0);
    close("l2_request_rate", 13_000.0 / 1e6);
    close("l2_misses", 2_000.0 + 500.0 + 250.0);
    close("l2_miss_ratio", 2_750.0 / 13_000.0);
    close("l3_request_rate", 2_400.0 / 1e6);
    close("l3_miss_ratio", 0.25);
    // The group lists all twelve.
    assert_eq!(lib.group("fam10h_cache").len(), 12);
}

#[test]
fn missing_input_propagates_through_the_chain_only() {
    let lib = fam10h();
    let mut inputs = fam10h_inputs();
    inputs.insert("L2_CACHE_MISS:TLB_WALK", Reading::NotCounted { why: None });
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);

    let misses = ev.metric_named("l2_misses").unwrap();
    let m = misses.missing().expect("l2_misses must be missing");
    assert_eq!(m.input, "L2_CACHE_MISS:TLB_WALK");
    assert_eq!(m.reason, Reason::NotCounted(None));
    assert_eq!(m.chain, ["l2_misses"]);

    let ratio = ev.metric_named("l2_miss_ratio").unwrap();
    let m = ratio.missing().expect("l2_miss_ratio must be missing");
    assert_eq!(m.chain, ["l2_miss_ratio", "l2_misses"]);
    assert_eq!(
        m.to_string(),
        "l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK: not counted"
    );

    // Everything that does not use it is still computed.
    for name in [
        "dc_request_rate",
        "dc_misses",
        "dc_miss_ratio",
        "ic_request_rate",
        "ic_misses",
        "ic_miss_ratio",
        "l2_requests",
        "l2_request_rate",
        "l3_request_rate",
        "l3_miss_ratio",
    ] {
        let e = ev.metric_named(name).unwrap();
        assert!(e.value().is_some(), "{name}: {:?}", e.missing());
    }
}

#[test]
fn reasons_read_plainly() {
    let lib = fam10h();
    let mut inputs = fam10h_inputs();
    inputs.insert(
        "L2_CACHE_MISS:TLB_WALK",
        Reading::NotSupported {
            why: "unknown event for AuthenticAMD-16-2".into(),
        },
    );
    inputs.insert("INSTRUCTION_CACHE_FETCHES", Reading::count(7, 1000, 0));
    let mut only_dc = Inputs::new();
    only_dc.insert("DATA_CACHE_ACCESSES", Reading::exact(0.0));
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);
    assert_eq!(
        ev.metric_named("l2_miss_ratio").unwrap().missing().unwrap().to_string(),
        "l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK: not supported (unknown event for AuthenticAMD-16-2)"
    );
    assert_eq!(
        ev.metric_named("ic_miss_ratio").unwrap().missing().unwrap().to_string(),
        "ic_miss_ratio ← INSTRUCTION_CACHE_FETCHES: not counted (never scheduled on a counter (multiplexed out))"
    );
    let mut ev = lib.evaluator(&only_dc, &machine);
    assert_eq!(
        ev.metric_named("dc_request_rate")
            .unwrap()
            .missing()
            .unwrap()
            .to_string(),
        "dc_request_rate ← RETIRED_INSTRUCTIONS: not requested"
    );
    // Division by zero names the divisor.
    let dc = ev.metric_named("dc_miss_ratio").unwrap();
    let m = dc.missing().unwrap();
    // The numerator (dc_misses) is not requested: the first missing wins.
    assert_eq!(m.reason, Reason::NotRequested);
    let mut zero = fam10h_inputs();
    zero.insert("DATA_CACHE_ACCESSES", Reading::exact(0.0));
    let mut ev = lib.evaluator(&zero, &machine);
    let m = ev.metric_named("dc_miss_ratio").unwrap();
    let m = m.missing().unwrap();
    assert_eq!(m.reason, Reason::DividedByZero);
    assert_eq!(m.input, "DATA_CACHE_ACCESSES");
    assert_eq!(
        m.to_string(),
        "dc_miss_ratio: divided by zero (DATA_CACHE_ACCESSES = 0)"
    );
}

#[test]
fn reliability_is_the_least_running_input_used() {
    let lib = fam10h();
    let mut inputs = fam10h_inputs();
    // Counted 60 % of the time: the scaled value is 1200 / 0.6 = 2000.
    inputs.insert(
        "DATA_CACHE_REFILLS_FROM_SYSTEM:SHARED:EXCLUSIVE:OWNED:MODIFIED",
        Reading::count(1_200, 1_000, 600),
    );
    // 360 000 in 90 % of the time: 400 000 scaled.
    inputs.insert("DATA_CACHE_ACCESSES", Reading::count(360_000, 1_000, 900));
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);

    let dc = ev.metric_named("dc_miss_ratio").unwrap();
    assert!(
        (dc.value().unwrap() - 10_000.0 / 400_000.0).abs() < 1e-12,
        "{dc:?}"
    );
    assert_eq!(dc.reliability, Some(0.6));
    assert!(dc.is_estimate());
    assert_eq!(
        dc.least_running.as_deref(),
        Some("DATA_CACHE_REFILLS_FROM_SYSTEM:SHARED:EXCLUSIVE:OWNED:MODIFIED")
    );
    // Through another metric too.
    let l2 = ev.metric_named("l2_miss_ratio").unwrap();
    assert_eq!(l2.reliability, Some(0.6));
    // Not an estimate at 0.9, and exact inputs are 1.0.
    let rate = ev.metric_named("dc_request_rate").unwrap();
    assert_eq!(rate.reliability, Some(0.9));
    assert!(!rate.is_estimate());
    let ic = ev.metric_named("ic_miss_ratio").unwrap();
    assert_eq!(ic.reliability, Some(1.0));
    assert_eq!(ESTIMATE_BELOW, 0.7);
    // Values without timing are exact.
    let mut plain = Inputs::new();
    plain.insert("DATA_CACHE_ACCESSES", Reading::exact(10.0));
    plain.insert("RETIRED_INSTRUCTIONS", Reading::exact(100.0));
    let mut ev = lib.evaluator(&plain, &machine);
    let r = ev.metric_named("dc_request_rate").unwrap();
    assert_eq!(
        (r.value(), r.reliability, r.is_estimate()),
        (Some(0.1), None, false)
    );
}

fn user_lib(defs: &[(&str, &str)]) -> Library {
    let mut lib = Library::new();
    for (n, f) in defs {
        lib.define(n, f).unwrap_or_else(|e| panic!("{e}"));
    }
    lib
}

#[test]
fn only_the_branch_taken_is_needed() {
    let lib = user_lib(&[("x", "A.B if #smt_on else C.D")]);
    let mut inputs = Inputs::new();
    inputs.insert("C.D", Reading::count(10, 100, 50));
    let off = Machine {
        smt_on: Some(false),
        ..Machine::default()
    };
    let on = Machine {
        smt_on: Some(true),
        ..Machine::default()
    };
    let e = lib.evaluator(&inputs, &off).metric_named("x").unwrap();
    assert_eq!(e.value(), Some(20.0));
    assert_eq!(e.reliability, Some(0.5));
    let e = lib.evaluator(&inputs, &on).metric_named("x").unwrap();
    assert_eq!(e.missing().unwrap().to_string(), "x ← A.B: not requested");
    let e = lib
        .evaluator(&inputs, &Machine::default())
        .metric_named("x")
        .unwrap();
    assert_eq!(
        e.missing().unwrap().to_string(),
        "x ← #smt_on: constant not set"
    );
    // Requirements follow the machine when it is known.
    let id = lib.find("x").unwrap();
    let names = |m: Option<&Machine>| -> Vec<String> {
        lib.requirements(&[id], false, m)
            .events
            .into_iter()
            .map(|e| e.name)
            .collect()
    };
    assert_eq!(names(Some(&off)), ["C.D"]);
    assert_eq!(names(Some(&on)), ["A.B"]);
    assert_eq!(names(None), ["A.B", "C.D"]);
    let req = lib.requirements(&[id], false, None);
    assert_eq!(req.constants, [Constant::SmtOn]);
}

#[test]
fn logic_ratio_and_functions() {
    let lib = user_lib(&[
        ("and_false", "A > 5 and B > 1"),
        ("or_true", "B > 1 or A > 3"),
        ("and_missing", "A < 5 and B > 1"),
        ("ratio", "d_ratio(A, Z)"),
        ("div", "A / Z"),
        ("rem", "A % 3"),
        ("mm", "min(A, 3, 10) + max(A, 3, 10)"),
        ("cmp", "(A == 4) + (A != 4) + (A <= 4) + (A >= 5) + (not A)"),
        ("fn_if", "if(A > 3, 1, B)"),
        ("neg", "-A * 2"),
        ("na", "#NA if 0 > 2 else A * 10"),
        ("na2", "#NA if 2 > 0 else A"),
        ("cycle", "cycle + 1"),
        ("hz", "#system_tsc_freq / 1e9"),
        ("dur", "A / duration_time + DURATIONTIMEINMILLISECONDS_LIKE"),
        ("dur2", "A / duration_time"),
        ("unknown", "#no_such_thing"),
        ("has", "has_event(A) + has_event(Q) * 10"),
        ("sources", "source_count(A)"),
        ("inst", "A[1] / A[0]"),
        ("cpuid", r"strcmp_cpuid_str(GenuineIntel\-6\-55\-\[01234\])"),
    ]);
    let mut inputs = Inputs::new();
    inputs
        .insert("A", Reading::exact(4.0))
        .insert("Z", Reading::exact(0.0))
        .insert("Q", Reading::NotSupported { why: String::new() })
        .insert_instance("A", 0, Reading::exact(1.0))
        .insert_instance("A", 1, Reading::exact(3.0))
        .set_source_count("A", 12);
    inputs.duration = Some(2.0);
    let machine = Machine {
        tsc_frequency_hz: Some(2.5e9),
        cpuid: Some("GenuineIntel-6-55-4".into()),
        ..Machine::default()
    };
    let mut ev = lib.evaluator(&inputs, &machine);
    let mut v = |n: &str| ev.metric_named(n).unwrap();
    assert_eq!(v("and_false").value(), Some(0.0), "false and ? is false");
    assert_eq!(v("or_true").value(), Some(1.0), "? or true is true");
    assert_eq!(
        v("and_missing").missing().unwrap().to_string(),
        "and_missing ← B: not requested"
    );
    assert_eq!(v("ratio").value(), Some(0.0));
    assert_eq!(v("div").missing().unwrap().reason, Reason::DividedByZero);
    assert_eq!(v("rem").value(), Some(1.0));
    assert_eq!(v("mm").value(), Some(3.0 + 10.0));
    assert_eq!(v("cmp").value(), Some(1.0 + 0.0 + 1.0 + 0.0 + 0.0));
    assert_eq!(v("fn_if").value(), Some(1.0));
    assert_eq!(v("neg").value(), Some(-8.0));
    assert_eq!(v("na").value(), Some(40.0));
    assert_eq!(
        v("na2").missing().unwrap().to_string(),
        "na2 ← #NA: not available (the metric table marks it not available)"
    );
    assert_eq!(v("cycle").missing().unwrap().reason, Reason::Cycle);
    assert_eq!(v("hz").value(), Some(2.5));
    assert_eq!(v("dur2").value(), Some(2.0));
    assert_eq!(
        v("unknown").missing().unwrap().to_string(),
        "unknown ← #no_such_thing: unknown constant"
    );
    assert_eq!(v("has").value(), Some(1.0));
    assert_eq!(v("sources").value(), Some(12.0));
    assert_eq!(v("inst").value(), Some(3.0));
    assert_eq!(v("cpuid").value(), Some(1.0));
}

#[test]
fn chains_of_metrics_are_computed_once_and_keep_reliability() {
    let lib = user_lib(&[("a", "E1 + E2"), ("b", "a * 2"), ("c", "b / E3")]);
    let mut inputs = Inputs::new();
    inputs
        .insert("E1", Reading::count(10, 100, 100))
        .insert("E2", Reading::count(10, 100, 40))
        .insert("E3", Reading::count(5, 100, 80));
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);
    let c = ev.metric_named("c").unwrap();
    assert_eq!(c.value(), Some((10.0 + 25.0) * 2.0 / 6.25));
    assert_eq!(c.reliability, Some(0.4));
    assert_eq!(c.least_running.as_deref(), Some("E2"));
}

#[test]
fn alternatives_and_groups() {
    // A table with its own CPI shadows the built-in one; the built-in one
    // is the fallback when the table's inputs are absent.
    let cpu = "GenuineIntel-6-55-4".parse().unwrap();
    let mut lib = Library::new();
    let mut t = MetricTable::new(MetricSource {
        kind: SourceKind::IntelFormat,
        origin: "test".into(),
        version: None,
        pmu: None,
    });
    t.metrics
        .push(Metric::new("cpi", "CPU_CLK_UNHALTED.THREAD / INST_RETIRED.ANY", "", 1.0).unwrap());
    lib.add_table(t);
    lib.add_table(builtin::builtin_table(Some(&cpu)));
    let alts = lib.lookup("CPI");
    assert_eq!(alts.len(), 2);
    assert_eq!(lib.source_of(alts[0]).kind, SourceKind::IntelFormat);
    let mut inputs = Inputs::new();
    inputs
        .insert("cycles", Reading::exact(300.0))
        .insert("instructions", Reading::exact(100.0));
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);
    let (id, e) = ev.first_with_value(&alts).unwrap();
    assert_eq!(id, alts[1]);
    assert_eq!(e.value(), Some(3.0));
    // -M selection: names, groups, unknown names with suggestions.
    let sel = lib.select("IPC, TopdownL1").unwrap();
    assert_eq!(sel.len(), 5);
    let err = lib.select("IPX").unwrap_err();
    assert!(err.to_string().contains("did you mean 'ipc'"), "{err}");
    assert!(lib.groups().iter().any(|g| g == "TopdownL1"));
}

#[test]
fn user_metrics_and_parse_errors() {
    let mut lib = Library::new();
    let e = lib.define("bad", "cycles / (instructions").unwrap_err();
    assert_eq!(e.span.start, 22);
    let id = lib.define("ipc2", "instructions / cycles").unwrap();
    assert_eq!(lib.metric(id).name, "ipc2");
    assert_eq!(
        lib.requirements(&[id], false, None)
            .events
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["instructions", "cycles"]
    );
}

#[test]
fn custom_keys_match_by_encoding() {
    // A key function that knows `r3c` and `cycles` are one counter.
    let lib = user_lib(&[("ipc", "instructions / cycles")]);
    let mut inputs = Inputs::with_key_fn(std::sync::Arc::new(|name: &str| {
        match name.to_ascii_lowercase().as_str() {
            "r3c" | "cycles" | "cpu/event=0x3c/" => "core:0x3c".to_string(),
            "rc0" | "instructions" => "core:0xc0".to_string(),
            other => other.to_string(),
        }
    }));
    inputs
        .insert("r3c", Reading::exact(100.0))
        .insert("rc0", Reading::exact(250.0));
    let machine = Machine::default();
    assert_eq!(
        lib.evaluator(&inputs, &machine)
            .metric_named("ipc")
            .unwrap()
            .value(),
        Some(2.5)
    );
}

#[test]
fn every_builtin_formula_parses_and_binds() {
    for t in builtin::all_builtin_tables() {
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        let origin = t.source.origin.clone();
        let mut lib = Library::new();
        lib.add_table(t);
        assert!(
            lib.unknown_references().is_empty(),
            "{origin}: {:?}",
            lib.unknown_references()
        );
        for (_, m) in lib.iter() {
            for r in m.formula.references() {
                // No built-in formula refers to a name that is neither a
                // metric of its own table nor a spec pmx can parse.
                if lib.find(&r.name).is_none() && r.name != "duration_time" {
                    let ev = pmx_metrics::EventRef::new(&r.name);
                    let spec = ev.spec("cpu").unwrap();
                    pmx_model::spec::parse_spec(&spec)
                        .unwrap_or_else(|e| panic!("{origin}: {}: {e}", m.name));
                }
            }
        }
    }
}

#[test]
fn zen4_pipeline_level1() {
    let cpu = "AuthenticAMD-25-11".parse().unwrap();
    let lib = Library::for_cpu(Some(&cpu), None);
    let mut inputs = Inputs::new();
    inputs
        .insert("CYCLES_NOT_IN_HALT", Reading::exact(1_000.0))
        .insert("DISPATCH_STALLS_1:FE_NO_OPS", Reading::exact(1_200.0))
        .insert("DISPATCH_STALLS_1:BE_STALLS", Reading::exact(1_800.0))
        .insert("DISPATCH_STALLS_1:SMT_CONTENTION", Reading::exact(600.0))
        .insert(
            "OPS_SOURCE_DISPATCHED_FROM_DECODER:DECODER:OPCACHE:LOOP_BUFFER",
            Reading::exact(2_700.0),
        )
        .insert("RETIRED_OPS", Reading::exact(2_400.0));
    let machine = Machine::default();
    let tree = lib.tma_tree().unwrap();
    let mut ev = lib.evaluator(&inputs, &machine);
    let report = tree.evaluate(&mut ev, 1);
    let got: Vec<(String, f64)> = report
        .nodes
        .iter()
        .map(|n| (n.name.clone(), (n.percent.unwrap() * 1e9).round() / 1e9))
        .collect();
    // slots = 6 × 1000 = 6000
    assert_eq!(
        got,
        [
            ("frontend_bound".to_string(), 20.0),
            ("bad_speculation".to_string(), 5.0),
            ("backend_bound".to_string(), 30.0),
            ("smt_contention".to_string(), 10.0),
            ("retiring".to_string(), 40.0),
        ]
    );
    // AMD publishes no thresholds; pmx's (Intel's level-1 ones): FE 20 % >
    // 15 %, BE 30 % > 20 %, the larger is named.
    assert_eq!(report.bottleneck_path(), ["backend_bound"]);
    assert_eq!(
        report.notes[0],
        "dispatch slots: total_dispatch_slots = 6 * CYCLES_NOT_IN_HALT"
    );
    assert!(
        report.notes[1].starts_with("thresholds: pmx's"),
        "{:?}",
        report.notes
    );
}

#[test]
fn hybrid_core_pmu_readings_meet_plain_names() {
    let lib = user_lib(&[("r", "PERF_METRICS.RETIRING / TOPDOWN.SLOTS:perf_metrics")]);
    let mut inputs = Inputs::with_core_pmu("cpu_core");
    inputs
        .insert("cpu_core/topdown-retiring/", Reading::exact(30.0))
        .insert("cpu_core/slots/", Reading::exact(100.0))
        .insert("cpu_atom/slots/", Reading::exact(7.0));
    let machine = Machine::default();
    assert_eq!(
        lib.evaluator(&inputs, &machine)
            .metric_named("r")
            .unwrap()
            .value(),
        Some(0.3)
    );
}

#[test]
fn choosing_what_to_count_and_listing_what_is_absent() {
    let cpu = "GenuineIntel-6-55-4".parse().unwrap();
    let mut lib = Library::new();
    let mut t = MetricTable::new(MetricSource {
        kind: SourceKind::IntelFormat,
        origin: "test".into(),
        version: None,
        pmu: None,
    });
    let mut fe = Metric::new(
        "Frontend_Bound",
        "100 * IDQ_UOPS_NOT_DELIVERED.CORE / (4 * CPU_CLK_UNHALTED.THREAD) + 0 * SOMETHING.ODD",
        "%",
        1.0,
    )
    .unwrap();
    fe.aliases.push("tma_frontend_bound".into());
    t.metrics.push(fe);
    lib.add_table(t);
    lib.add_table(builtin::builtin_table(Some(&cpu)));
    // -M Frontend_Bound: Intel's first, the built-in one as a fallback.
    let sel = lib.select("Frontend_Bound").unwrap();
    assert_eq!(sel[0].len(), 2);
    assert_eq!(lib.source_of(sel[0][1]).kind, SourceKind::Builtin);
    // With SOMETHING.ODD not countable here, schedule the built-in one.
    let machine = Machine {
        smt_on: Some(false),
        ..Machine::default()
    };
    let chosen = lib
        .choose(&sel[0], Some(&machine), |e| e.name != "SOMETHING.ODD")
        .unwrap();
    assert_eq!(chosen, sel[0][1]);
    // What a file lacks for it.
    let mut inputs = Inputs::new();
    inputs.insert("CPU_CLK_UNHALTED.THREAD", Reading::exact(1.0));
    let absent: Vec<String> = lib
        .absent_inputs(&[chosen], &inputs, Some(&machine))
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(absent, ["IDQ_UOPS_NOT_DELIVERED.CORE"]);
}

#[test]
fn results_serialize_for_json_output() {
    let lib = fam10h();
    let mut inputs = fam10h_inputs();
    inputs.insert("L2_CACHE_MISS:TLB_WALK", Reading::NotCounted { why: None });
    inputs.insert("DATA_CACHE_ACCESSES", Reading::count(200_000, 1_000, 500));
    let machine = Machine::default();
    let mut ev = lib.evaluator(&inputs, &machine);
    let ok = serde_json::to_value(ev.metric_named("dc_request_rate").unwrap()).unwrap();
    assert_eq!(ok["outcome"]["status"], "value");
    assert_eq!(ok["outcome"]["value"], 0.4);
    assert_eq!(ok["reliability"], 0.5);
    assert_eq!(ok["least_running"], "DATA_CACHE_ACCESSES");
    let missing = serde_json::to_value(ev.metric_named("l2_miss_ratio").unwrap()).unwrap();
    assert_eq!(
        missing["outcome"],
        serde_json::json!({
            "status": "missing",
            "input": "L2_CACHE_MISS:TLB_WALK",
            "reason": {"kind": "not-counted", "detail": null},
            "chain": ["l2_miss_ratio", "l2_misses"]
        })
    );
}

/// perf's shadow metrics, checked against what perf printed beside the
/// counts in a published `perf stat` output (perf 4, a German locale;
/// the profiling talk at https://github.com/kiith-sa/profiling, "perf
/// stat ./cfg small.cfg 1000"): 26.554473 msec task-clock, 77,375,671 cycles,
/// 27,928,664 stalled-cycles-frontend (perf: 36.09% frontend cycles
/// idle), 121,540,390 instructions (perf: 0.23 stalled cycles per insn),
/// 356,636 branch-misses of 30,904,551 branches (perf: 1.15%), 13
/// context-switches (perf: 0.490 K/sec), 77,375,671 cycles (perf: 2.914
/// GHz).
#[test]
fn perf_shadow_metrics_match_what_perf_printed() {
    let lib = Library::for_cpu(None, None);
    let mut i = Inputs::new();
    for (name, v) in [
        ("task-clock", 26_554_473.0),
        ("context-switches", 13.0),
        ("cycles", 77_375_671.0),
        ("stalled-cycles-frontend", 27_928_664.0),
        ("instructions", 121_540_390.0),
        ("branches", 30_904_551.0),
        ("branch-misses", 356_636.0),
    ] {
        i.insert(
            name,
            Reading::Scaled {
                value: v,
                running_share: None,
            },
        );
    }
    i.insert(
        "stalled-cycles-backend",
        Reading::NotSupported {
            why: "perf: <not supported>".into(),
        },
    );
    let shown = |i: &Inputs, name: &str| {
        let id = lib.find(name).unwrap();
        lib.metric(id).display_value(value(&lib, i, name))
    };
    assert!((shown(&i, "frontend_cycles_idle") - 36.09).abs() < 0.005);
    assert!((shown(&i, "stalled_cycles_per_insn") - 0.23).abs() < 0.005);
    assert!((shown(&i, "branch_miss_ratio") - 1.15).abs() < 0.005);
    assert!((shown(&i, "cs_per_second") / 1e3 - 0.490).abs() < 0.0005);
    assert!((shown(&i, "running_frequency") - 2.914).abs() < 0.0005);
    // 26.554473 ms of task-clock over 27.5 ms of wall time.
    i.duration = Some(0.0275);
    assert!((shown(&i, "CPUs_utilized") - 26.554473 / 27.5).abs() < 1e-9);
}
