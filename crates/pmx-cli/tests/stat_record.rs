//! `pmx stat record` / `pmx stat report` against the installed perf, both
//! ways: a file pmx writes is one `perf stat report` reads (file and pipe
//! stream), and pmx reads what `perf stat record` writes. The workload
//! touches a known number of pages, so each side's page-fault count is at
//! least that many, whoever recorded it.

mod common;

use common::{pmx, stderr, PMX};
use std::process::{Command, Stdio};

const WORK: &str = env!("CARGO_BIN_EXE_pmx-workload");

/// The value of `event`'s row in perf's text table (`  1,234  event`).
fn count(text: &str, event: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let v = w.next()?.replace(',', "");
        (w.next()? == event).then(|| v.parse().ok()).flatten()
    })
}

#[test]
fn perf_reads_pmx_files_and_pmx_reads_perfs() {
    if !pmx_testkit::perf::require("the stat record/report test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("pmx.data");
    let ours_s = ours.to_str().unwrap();
    let o = pmx(&[
        "stat",
        "-e",
        "task-clock,page-faults",
        "record",
        "-o",
        ours_s,
        WORK,
        "pages",
        "300",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The counts are printed as usual too (perf does).
    assert!(
        count(&stderr(&o), "page-faults").is_some(),
        "{}",
        stderr(&o)
    );
    let report = pmx_testkit::perf::on_file(&["stat", "report"], &ours);
    let text = pmx_testkit::text(&report.stderr);
    assert!(
        text.contains(&format!("Performance counter stats for '{PMX} stat -e")),
        "{text}"
    );
    assert!(count(&text, "page-faults").unwrap() >= 300.0, "{text}");
    assert!(text.contains("msec task-clock"), "{text}");
    // perf's own file, read by pmx.
    let theirs = dir.path().join("perf.data");
    let theirs_s = theirs.to_str().unwrap();
    let rec = Command::new("perf")
        .args(["stat", "record", "-o", theirs_s, "-e", "page-faults", WORK])
        .args(["pages", "300"])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", pmx_testkit::text(&rec.stderr));
    let o = pmx(&["stat", "report", "-i", theirs_s]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    assert!(text.contains("stat record -o"), "{text}");
    assert!(count(&text, "page-faults").unwrap() >= 300.0, "{text}");
    // A file that is not one: the path and the reason, exit 1.
    let o = pmx(&["stat", "report", "-i", "/nonexistent.data"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent.data"), "{}", stderr(&o));
}

#[test]
fn a_pipe_stream_perf_reads() {
    if !pmx_testkit::perf::require("the stat record pipe test") {
        return;
    }
    let mut rec = Command::new(PMX)
        .args([
            "stat",
            "-e",
            "page-faults",
            "record",
            "-o",
            "-",
            WORK,
            "pages",
            "200",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let report = Command::new("perf")
        .args(["stat", "report", "-i", "-"])
        .stdin(rec.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    let text = pmx_testkit::text(&report.stderr);
    assert!(
        text.contains("Performance counter stats for 'pipe':"),
        "{text}"
    );
    assert!(count(&text, "page-faults").unwrap() >= 200.0, "{text}");
}
