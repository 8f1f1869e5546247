//! Matching and normalization on profiles built by hand; every expected
//! share is worked out in the comments.

use super::*;
use crate::profile::{EventProfile, Profile};

fn row(dso: &str, symbol: &str, samples: u64, period: u64) -> Row {
    Row {
        comm: None,
        pid: None,
        dso: Some(dso.into()),
        symbol: Some(symbol.into()),
        binary: None,
        kernel: false,
        cpu: None,
        thread: None,
        samples,
        period,
        children_samples: 0,
        children_period: 0,
        example: (0, 0),
        source: None,
    }
}

fn event(name: &str, rows: Vec<Row>) -> EventProfile {
    EventProfile {
        name: name.into(),
        samples: rows.iter().map(|r| r.samples).sum(),
        period: rows.iter().map(|r| r.period).sum(),
        rows,
        ..EventProfile::default()
    }
}

fn options() -> ReportOptions {
    ReportOptions {
        sort: "dso,symbol".into(),
        ..ReportOptions::for_input("x")
    }
}

fn report_of(file: &str, events: Vec<EventProfile>) -> Report {
    Report {
        selected: (0..events.len()).collect(),
        profile: Profile {
            events,
            ..Profile::default()
        },
        file: file.into(),
        captured: None,
        sort: vec![SortKey::Dso, SortKey::Symbol],
        one_value: Vec::new(),
        options: options(),
    }
}

/// BASE: total period 200: alpha 150 (75%), common 50 (25%).
/// NEW: total period 400: beta 240 (60%), common 100 (25%), alpha 60 (15%).
pub(crate) fn moved(compute: Compute) -> DiffReport {
    let base = report_of(
        "a/base.data",
        vec![event(
            "cpu-clock",
            vec![row("m", "alpha", 15, 150), row("m", "common", 5, 50)],
        )],
    );
    let new = report_of(
        "b/new.data",
        vec![event(
            "cpu-clock",
            vec![
                row("m", "beta", 24, 240),
                row("m", "common", 10, 100),
                row("m", "alpha", 6, 60),
            ],
        )],
    );
    compare(base, new, compute)
}

fn names(e: &EventDiff) -> Vec<&str> {
    e.rows
        .iter()
        .map(|r| r.symbol.as_deref().unwrap())
        .collect()
}

#[test]
fn shares_are_of_each_files_total_and_rows_pair_by_name() {
    let d = moved(Compute::DeltaAbs);
    assert_eq!(d.events.len(), 1);
    let e = &d.events[0];
    assert_eq!(
        e.base,
        Totals {
            samples: 20,
            period: 200
        }
    );
    assert_eq!(
        e.new,
        Totals {
            samples: 40,
            period: 400
        }
    );
    // |−60| = |+60|: the heavier in NEW (beta, 240) first; common: 0.
    assert_eq!(names(e), ["beta", "alpha", "common"]);
    let [beta, alpha, common] = &e.rows[..] else {
        panic!()
    };
    assert_eq!(beta.change(), Change::New);
    assert_eq!(beta.base, None);
    assert_eq!(beta.new.unwrap().share, 60.0);
    assert_eq!(beta.delta(), 60.0);
    assert_eq!(beta.ratio(), None);
    assert_eq!(alpha.change(), Change::Matched);
    assert_eq!(alpha.base.unwrap().share, 75.0);
    assert_eq!(alpha.new.unwrap().share, 15.0);
    assert_eq!(alpha.delta(), -60.0);
    // perf's ratio: periods, not shares: 60 / 150.
    assert_eq!(alpha.ratio(), Some(0.4));
    // common doubled its period but kept its share (25% of each total).
    assert_eq!(common.delta(), 0.0);
    assert_eq!(common.ratio(), Some(2.0));
    assert_eq!(common.new.unwrap().samples, 10);
}

#[test]
fn orders_by_each_computation() {
    assert_eq!(
        names(&moved(Compute::Delta).events[0]),
        ["beta", "common", "alpha"]
    );
    // Ratio: new rows first (infinite), then 2.0 (common), 0.4 (alpha).
    assert_eq!(
        names(&moved(Compute::Ratio).events[0]),
        ["beta", "common", "alpha"]
    );
    let d = moved(Compute::Ratio);
    assert_eq!(d.events[0].rows[2].symbol.as_deref(), Some("alpha"));
    assert_eq!("ratio".parse::<Compute>(), Ok(Compute::Ratio));
    assert_eq!("delta".parse::<Compute>(), Ok(Compute::Delta));
    assert_eq!(" delta-abs".parse::<Compute>(), Ok(Compute::DeltaAbs));
    assert_eq!(
        "wdiff".parse::<Compute>().unwrap_err(),
        "'wdiff' is not a computation (known: delta-abs, delta, ratio)"
    );
}

#[test]
fn addresses_never_pair_and_other_dsos_do_not_either() {
    // The same address in both builds means nothing: 0x401136 is 40% of
    // BASE and 30% of NEW, but NEW also has 0x401200 (10%). A DSO's
    // unresolved addresses are one `[unknown]` row: 40% → 40%, where
    // pairing by address would say −10 points. `work` is in the program
    // in BASE but in a library in NEW: two rows. Totals 100 each.
    let base = report_of(
        "base",
        vec![event(
            "cpu-clock",
            vec![
                row("m", "0x0000000000401136", 40, 40),
                row("m", "work", 60, 60),
            ],
        )],
    );
    let new = report_of(
        "new",
        vec![event(
            "cpu-clock",
            vec![
                row("m", "0x0000000000401136", 30, 30),
                row("libw.so", "work", 60, 60),
                row("m", "0x0000000000401200", 10, 10),
            ],
        )],
    );
    let d = compare(base, new, Compute::DeltaAbs);
    let e = &d.events[0];
    let got: Vec<(Option<&str>, &str, Change, f64)> = e
        .rows
        .iter()
        .map(|r| {
            (
                r.dso.as_deref(),
                r.symbol.as_deref().unwrap(),
                r.change(),
                r.delta(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("libw.so"), "work", Change::New, 60.0),
            (Some("m"), "work", Change::Gone, -60.0),
            (Some("m"), "[unknown]", Change::Matched, 0.0),
        ]
    );
    assert_eq!(e.rows[2].base.unwrap().samples, 40);
    assert_eq!(e.rows[2].new.unwrap().samples, 40);
    assert!(is_address("0x0000000000401136") && !is_address("0x") && !is_address("main"));
}

#[test]
fn rows_alike_in_one_file_are_one_row() {
    // Two static `helper`s in m (BASE 30 + 20 of 100); one in NEW (10 of 100).
    let base = report_of(
        "base",
        vec![event(
            "cpu-clock",
            vec![
                row("m", "helper", 3, 30),
                row("m", "main", 5, 50),
                row("m", "helper", 2, 20),
            ],
        )],
    );
    let new = report_of(
        "new",
        vec![event(
            "cpu-clock",
            vec![row("m", "main", 9, 90), row("m", "helper", 1, 10)],
        )],
    );
    let d = compare(base, new, Compute::DeltaAbs);
    let e = &d.events[0];
    // |+40| = |−40|: the heavier in NEW (main, 90) first.
    assert_eq!(names(e), ["main", "helper"]);
    assert_eq!(
        e.rows[1].base,
        Some(Side {
            samples: 5,
            period: 50,
            share: 50.0
        })
    );
    assert_eq!(e.rows[1].delta(), -40.0);
    assert_eq!(e.rows[0].delta(), 40.0);
}

#[test]
fn events_pair_by_name_and_modifiers_fall_back() {
    let one = |n: &str| event(n, vec![row("m", "f", 1, 10)]);
    let base = report_of(
        "base",
        vec![one("cycles:u"), one("cpu-clock"), one("instructions")],
    );
    let new = report_of(
        "new",
        vec![one("page-faults"), one("cpu-clock"), one("cycles")],
    );
    let d = compare(base, new, Compute::DeltaAbs);
    let pairs: Vec<(usize, usize, &str)> = d
        .events
        .iter()
        .map(|e| (e.base_index, e.new_index, e.name.as_str()))
        .collect();
    assert_eq!(pairs, [(1, 1, "cpu-clock"), (0, 2, "cycles")]);
    assert_eq!(d.only_base, ["instructions"]);
    assert_eq!(d.only_new, ["page-faults"]);
}

#[test]
fn children_shares_and_limits() {
    let mut d = moved(Compute::DeltaAbs);
    // Either share at least 20%: beta (60 new), alpha (75 base), common (25).
    d.new.options.percent_limit = 20.0;
    assert_eq!(d.visible(&d.events[0]).count(), 3);
    d.new.options.percent_limit = 30.0;
    assert_eq!(d.visible(&d.events[0]).count(), 2);
    d.new.options.limit = Some(1);
    assert_eq!(d.visible(&d.events[0]).count(), 1);

    // With children, the inclusive periods are compared: main holds 100
    // of 100 in BASE and 150 of 200 in NEW (−25 points).
    let mut main = row("m", "main", 0, 0);
    main.children_samples = 10;
    main.children_period = 100;
    let mut base = report_of("base", vec![event("cpu-clock", vec![main.clone()])]);
    base.profile.events[0].period = 100;
    main.children_period = 150;
    let mut new = report_of("new", vec![event("cpu-clock", vec![main])]);
    new.profile.events[0].period = 200;
    new.options.children = true;
    let d = compare(base, new, Compute::DeltaAbs);
    assert_eq!(d.events[0].rows[0].delta(), -25.0);
}

#[test]
fn warnings_name_their_file_and_missing_files_are_errors() {
    let mut d = moved(Compute::Delta);
    d.new.profile.warnings.push("hot: build-id differs".into());
    assert_eq!(d.warnings(), ["b/new.data: hot: build-id differs"]);
    let opts = DiffOptions {
        report: options(),
        base: "/nonexistent/a.data".into(),
        new: "/nonexistent/b.data".into(),
        compute: Compute::DeltaAbs,
    };
    let err = diff(&opts, &mut |_, _| {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/a.data: no such file (record one with `pmx record` or `perf record`, or give -i FILE)"
    );
    assert_eq!(d.stack_event().unwrap(), (0, false));
}
