use super::*;
use pmx_formats::{ReportRow, RunCount};

/// A side whose one file kept `values` of each event as its runs.
fn side(label: &str, events: &[(&str, &[f64])]) -> Side {
    let rows = events
        .iter()
        .map(|(name, values)| {
            let mut r = ReportRow::new(name, "");
            r.value = Some(stats::mean(values));
            r.repeats = values
                .iter()
                .map(|&v| RunCount {
                    value: Some(v),
                    raw: v as u64,
                    time_enabled_ns: 10,
                    time_running_ns: 10,
                })
                .collect();
            r
        })
        .collect();
    Side {
        label: label.into(),
        reports: vec![StatReport {
            runs: Some(events[0].1.len()),
            rows,
            ..StatReport::default()
        }],
    }
}

const FAULTS_A: [f64; 5] = [1062.0, 1063.0, 1062.0, 1061.0, 1062.0];
const FAULTS_B: [f64; 5] = [2062.0, 2061.0, 2063.0, 2062.0, 2062.0];
const CLOCK_A: [f64; 5] = [1.10, 1.30, 1.20, 1.25, 1.15];
const CLOCK_B: [f64; 5] = [1.22, 1.12, 1.28, 1.18, 1.21];

#[test]
fn significant_changes_come_first_and_noise_is_not_called() {
    let a = side("A", &[("task-clock", &CLOCK_A), ("page-faults", &FAULTS_A)]);
    let b = side("B", &[("task-clock", &CLOCK_B), ("page-faults", &FAULTS_B)]);
    let r = compare_sides(&[a, b], 0.05).unwrap();
    assert_eq!(r.rows[0].name, "page-faults");
    let c = r.rows[0].changes[0].unwrap();
    // 5 runs a side: the rank test. All of B above all of A: U = 0; the
    // ties within a side make it the normal approximation, whose p for
    // 5 + 5 with these ties is about 0.0102 (not the exact 2/252).
    assert_eq!(c.test, "mann-whitney");
    let rank = c.rank.unwrap();
    assert_eq!((rank.u, rank.exact), (0.0, false));
    assert!(c.significant && c.p.unwrap() < 0.011, "{c:?}");
    // (2062 − 1062) / 1062 = +94.16 %.
    assert!((c.percent.unwrap() - 1000.0 / 1062.0 * 100.0).abs() < 1e-9);
    let clock = r.rows[1].changes[0].unwrap();
    assert_eq!(r.rows[1].name, "task-clock");
    assert!(!clock.significant, "{clock:?}");
    assert_eq!(r.summaries[0].significant, 1);
    assert_eq!(r.summaries[0].compared, 2);
    let g = r.summaries[0].geomean_percent.unwrap();
    assert!((g - 1000.0 / 1062.0 * 100.0).abs() < 1e-9, "{g}");
    assert_eq!(r.sides[0].runs, 5);
}

#[test]
fn ten_runs_a_side_use_welch_and_sides_pool() {
    let a1 = side("A", &[("page-faults", &FAULTS_A)]);
    let mut a = side("A", &[("page-faults", &FAULTS_A)]);
    a.reports.extend(a1.reports);
    let b1 = side("B", &[("page-faults", &FAULTS_B)]);
    let mut b = side("B", &[("page-faults", &FAULTS_B)]);
    b.reports.extend(b1.reports);
    let r = compare_sides(&[a, b], 0.05).unwrap();
    assert_eq!(r.rows[0].sides[0].unwrap().n, 10);
    let c = r.rows[0].changes[0].unwrap();
    assert_eq!(c.test, "welch");
    assert!(c.p.unwrap() < 1e-10);
    let (lo, hi) = c.welch.unwrap().ci95;
    assert!(lo < 1000.0 && 1000.0 < hi, "{lo} {hi}");
}

#[test]
fn a_against_itself_changes_nothing() {
    let a = side("A", &[("page-faults", &FAULTS_A), ("task-clock", &CLOCK_A)]);
    let r = compare_sides(&[a.clone(), a], 0.05).unwrap();
    for row in &r.rows {
        let c = row.changes[0].unwrap();
        assert!(!c.significant && c.p.unwrap() > 0.9, "{row:?}");
        assert_eq!(c.percent, Some(0.0));
    }
    assert_eq!(r.summaries[0].geomean_percent, None);
}

#[test]
fn three_sides_one_sided_rows_and_errors() {
    let a = side("A", &[("page-faults", &FAULTS_A), ("gone", &[1.0, 2.0])]);
    let b = side("B", &[("page-faults", &FAULTS_B)]);
    let c = side("C", &[("page-faults", &FAULTS_A), ("new", &[1.0])]);
    let r = compare_sides(&[a.clone(), b.clone(), c], 0.05).unwrap();
    // `gone` is on A only: no row.
    assert_eq!(r.rows.len(), 1);
    assert!(r.rows[0].changes[0].unwrap().significant);
    assert!(!r.rows[0].changes[1].unwrap().significant);
    assert!(r
        .notes
        .iter()
        .any(|n| n == "only in A: gone (not compared)"));
    assert!(r.notes.iter().any(|n| n == "only in C: new (not compared)"));
    assert!(matches!(
        compare_sides(std::slice::from_ref(&a), 0.05),
        Err(CompareError::OneSide)
    ));
    assert!(matches!(
        compare_sides(&[a.clone(), b], 1.5),
        Err(CompareError::Threshold(_))
    ));
    let mut other = side("X", &[("cycles", &[1.0])]);
    other.reports[0].provenance.path = Some("x.csv".into());
    other.reports[0].provenance.cut = Some(pmx_formats::Cut { line: 3, byte: 250 });
    let e = compare_sides(&[a, other], 0.05).unwrap_err();
    assert!(matches!(e, CompareError::NothingInCommon(_)));
    assert_eq!(
        e.to_string(),
        "the sides have no event or metric in common: A: 2 series: page-faults, gone; \
         X (x.csv, which ends inside line 3 (at byte 250) with no end of line, so it may be \
         cut short): 1 series: cycles"
    );
}

#[test]
fn single_values_are_compared_without_a_test() {
    let mut a = ReportRow::new("cycles", "");
    a.value = Some(100.0);
    let mut b = a.clone();
    b.value = Some(150.0);
    let one = |r: ReportRow, l: &str| Side {
        label: l.into(),
        reports: vec![StatReport {
            rows: vec![r],
            ..StatReport::default()
        }],
    };
    let r = compare_sides(&[one(a, "A"), one(b, "B")], 0.05).unwrap();
    let c = r.rows[0].changes[0].unwrap();
    assert_eq!((c.p, c.test, c.significant), (None, "none", false));
    assert_eq!(c.percent, Some(50.0));
    assert!(r.notes.iter().any(|n| n.starts_with("one run per side")));
}

#[test]
fn command_lines_name_the_sides() {
    let f = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let one_each = sides_of(&f(&["a.json", "b.json", "c.json"]), &[]);
    assert_eq!(one_each.len(), 3);
    assert_eq!(
        (one_each[2].label.as_str(), one_each[2].files.clone()),
        ("C", f(&["c.json"]))
    );
    let pooled = sides_of(&f(&["a1", "a2"]), &s(&["b1", "b2", "--", "c1"]));
    let files: Vec<_> = pooled
        .iter()
        .map(|p| (p.label.clone(), p.files.clone()))
        .collect();
    assert_eq!(
        files,
        [
            ("A".to_string(), f(&["a1", "a2"])),
            ("B".to_string(), f(&["b1", "b2"])),
            ("C".to_string(), f(&["c1"]))
        ]
    );
}
