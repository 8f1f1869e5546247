//! `pmx stat record` / `pmx stat report` against the installed perf, both
//! ways: a file pmx writes is one `perf stat report` reads (file and pipe
//! stream), and pmx reads what `perf stat record` writes. The workload
//! touches a known number of pages, so each side's page-fault count is at
//! least that many, whoever recorded it.

use crate::common::{pmx, stderr, PMX};
use std::path::Path;
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

/// `perf stat BEFORE report -i FILE AFTER`'s report (perf prints it on
/// stderr) and its exit status.
fn perf_report(before: &[&str], file: &Path, after: &[&str]) -> (String, Option<i32>) {
    let o = Command::new("perf")
        .arg("stat")
        .args(before)
        .arg("report")
        .arg("-i")
        .arg(file)
        .args(after)
        .output()
        .unwrap();
    (pmx_testkit::text(&o.stderr), o.status.code())
}

/// The same with pmx.
fn pmx_report(before: &[&str], file: &Path, after: &[&str]) -> (String, Option<i32>) {
    let mut args = vec!["stat"];
    args.extend(before);
    args.extend(["report", "-i", file.to_str().unwrap()]);
    args.extend(after);
    let o = pmx(&args);
    (stderr(&o), o.status.code())
}

/// Run `program ARGS` (a `stat record`), its stderr kept; `false` (and
/// a skip message) when system-wide counting is refused here.
fn recorded(program: &str, args: &[&str]) -> bool {
    let o = Command::new(program).args(args).output().unwrap();
    if !o.status.success() {
        pmx_testkit::skip(format!(
            "{program} {}: {}",
            args.join(" "),
            pmx_testkit::text(&o.stderr)
        ));
    }
    o.status.success()
}

/// A line with its rate metric (`# 12.345 K/sec`, `-x`'s `12.345,K/sec`,
/// `-j`'s `"metric-value" : 12.345…, "metric-unit" : "K/sec"`) masked:
/// after the first `-I` round perf divides by the mean clock of all the
/// rounds so far (README).
fn mask_rate(line: &str) -> String {
    if !line.contains("/sec") {
        return line.to_string();
    }
    if let Some(at) = line.find("\"metric-value\" : ") {
        return format!("{}RATE", &line[..at]);
    }
    if let Some(at) = line.find(" # ") {
        return format!("{}# RATE", &line[..at]);
    }
    match line.rsplitn(3, ',').nth(2) {
        Some(head) => format!("{head},RATE"),
        None => line.to_string(),
    }
}

/// The forms perf's report is printed in: text, `-x,`, `-j`.
const FORMS: [&[&str]; 3] = [&[], &["-x,"], &["-j"]];

#[test]
fn aggregation_at_report_time_as_perf_folds_it() {
    if !pmx_testkit::perf::require("the stat report aggregation test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let ev = "task-clock,page-faults";
    let (perf_a, perf_cpu) = (path("perf-a.data"), path("perf-A.data"));
    let (pmx_a, pmx_core) = (path("pmx-a.data"), path("pmx-core.data"));
    let sleep = ["sleep", "0.1"];
    let recordings: [(&str, Vec<&str>); 4] = [
        (
            "perf",
            vec!["stat", "record", "-a", "-e", ev, "-o", &perf_a],
        ),
        (
            "perf",
            vec!["stat", "record", "-a", "-A", "-e", ev, "-o", &perf_cpu],
        ),
        // Options on both sides of `record`, as perf takes them.
        (PMX, vec!["stat", "-e", ev, "record", "-a", "-o", &pmx_a]),
        (
            PMX,
            vec![
                "stat",
                "-a",
                "record",
                "--per-core",
                "-e",
                ev,
                "-o",
                &pmx_core,
            ],
        ),
    ];
    for (program, args) in &recordings {
        let mut args = args.clone();
        args.extend(sleep);
        if !recorded(program, &args) {
            return;
        }
    }
    let aggrs: [&[&str]; 6] = [
        &[],
        &["-A"],
        &["--per-core"],
        &["--per-socket"],
        &["--per-die"],
        &["--per-node"],
    ];
    let mut per_core_rows = 0;
    for file in [&perf_a, &perf_cpu, &pmx_a, &pmx_core] {
        for form in FORMS {
            for aggr in aggrs {
                let file = Path::new(file);
                let (want, code) = perf_report(form, file, aggr);
                assert_eq!(code, Some(0), "{want}");
                let (got, code) = pmx_report(form, file, aggr);
                assert_eq!(code, Some(0), "{got}");
                // Counts from the same file: every byte the same.
                assert_eq!(got, want, "{file:?} {form:?} {aggr:?}");
                if aggr == ["--per-core"] && form.is_empty() {
                    per_core_rows += got.lines().filter(|l| l.starts_with("S")).count();
                }
            }
        }
    }
    assert!(per_core_rows >= 8, "no per-core rows");
}

#[test]
fn interval_rounds_replayed_as_perf_replays_them() {
    if !pmx_testkit::perf::require("the stat report -I test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (theirs, ours) = (dir.path().join("perf.data"), dir.path().join("pmx.data"));
    // 10 ms rounds: more than 25 of them, after which perf's header
    // comes again.
    let common = ["-a", "-I", "10", "-e", "task-clock,page-faults"];
    let sleep = ["sleep", "0.35"];
    for (program, out) in [("perf", &theirs), (PMX, &ours)] {
        let mut args = vec!["stat", "record", "-o", out.to_str().unwrap()];
        args.extend(common);
        args.extend(sleep);
        if !recorded(program, &args) {
            return;
        }
    }
    for file in [&theirs, &ours] {
        for form in FORMS {
            for aggr in [&[][..], &["-A"], &["--per-core"]] {
                let (want, code) = perf_report(form, file, aggr);
                assert_eq!(code, Some(0), "{want}");
                let (got, code) = pmx_report(form, file, aggr);
                assert_eq!(code, Some(0), "{got}");
                let masked = |s: &str| s.lines().map(mask_rate).collect::<Vec<_>>();
                assert_eq!(masked(&got), masked(&want), "{file:?} {form:?} {aggr:?}");
                // One line per event (and CPU or core) per round, the
                // first round's rates perf's too.
                let stamps = |s: &str| {
                    let mut t: Vec<String> = (s.lines())
                        .filter(|l| !l.starts_with('#'))
                        .filter_map(|l| {
                            l.trim_start_matches("{\"interval\" : ")
                                .split([' ', ','])
                                .find(|w| !w.is_empty())
                                .map(String::from)
                        })
                        .collect();
                    t.dedup();
                    t
                };
                let rounds = stamps(&want);
                assert!(rounds.len() >= 3, "{want}");
                if form.is_empty() && rounds.len() > 25 {
                    assert_eq!(got.lines().filter(|l| l.starts_with("#  ")).count(), 2);
                }
                let first = |s: &str| -> Vec<String> {
                    s.lines()
                        .filter(|l| l.contains(&rounds[0]))
                        .map(String::from)
                        .collect()
                };
                assert_eq!(first(&got), first(&want));
            }
        }
    }
}

#[test]
fn options_after_record_as_perf_takes_them() {
    if !pmx_testkit::perf::require("the stat record options test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| dir.path().join(n);
    // stat's options before and after `record`, `-o` after it, `--`.
    let both = file("both.data");
    let o = pmx(&[
        "stat",
        "-e",
        "page-faults",
        "record",
        "-e",
        "task-clock",
        "-o",
        both.to_str().unwrap(),
        "--",
        WORK,
        "pages",
        "300",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (text, _) = perf_report(&[], &both, &[]);
    assert!(count(&text, "page-faults").unwrap() >= 300.0, "{text}");
    assert!(text.contains("msec task-clock"), "{text}");
    // `-o` before `record` names the data file too, as perf's does.
    let before = file("before.data");
    let o = pmx(&[
        "stat",
        "-o",
        before.to_str().unwrap(),
        "record",
        "-e",
        "page-faults",
        WORK,
        "pages",
        "200",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (text, _) = perf_report(&[], &before, &[]);
    assert!(count(&text, "page-faults").unwrap() >= 200.0, "{text}");
    // Given on both sides, the last `-o` wins, for pmx as for perf.
    for (program, tag) in [("perf", "perf"), (PMX, "pmx")] {
        let (first, last) = (
            file(&format!("{tag}-1.data")),
            file(&format!("{tag}-2.data")),
        );
        let o = Command::new(program)
            .args(["stat", "-o", first.to_str().unwrap(), "record", "-o"])
            .args([last.to_str().unwrap(), "-e", "page-faults", "true"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
        assert!(!first.exists() && last.exists(), "{program}");
    }
    // Run as `perf`, the word cut to `rec`.
    let link = file("perf");
    std::os::unix::fs::symlink(PMX, &link).unwrap();
    let short = file("short.data");
    let o = Command::new(&link)
        .args([
            "stat",
            "rec",
            "-e",
            "page-faults",
            "-o",
            short.to_str().unwrap(),
            WORK,
            "pages",
            "250",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
    let (text, _) = perf_report(&[], &short, &[]);
    assert!(count(&text, "page-faults").unwrap() >= 250.0, "{text}");
    // What perf refuses: `-r` with record, an option `report` does not
    // take. perf fails; pmx exits 2 naming the option.
    let refused = file("refused.data");
    let r = Command::new("perf")
        .args([
            "stat",
            "record",
            "-o",
            refused.to_str().unwrap(),
            "-r",
            "2",
            "true",
        ])
        .output()
        .unwrap();
    assert!(!r.status.success());
    let o = pmx(&[
        "stat",
        "record",
        "-o",
        refused.to_str().unwrap(),
        "-r",
        "2",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-r 2"), "{}", stderr(&o));
    let (text, code) = perf_report(&[], &both, &["--per-thread"]);
    assert_ne!(code, Some(0), "{text}");
    let (text, code) = pmx_report(&[], &both, &["--per-thread"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("'--per-thread'"), "{text}");
    // A task's counts asked per core: perf's warning, then the totals.
    let (want, _) = perf_report(&[], &both, &["--per-core"]);
    let (got, code) = pmx_report(&[], &both, &["--per-core"]);
    assert_eq!(code, Some(0));
    assert!(got.starts_with("warning: processing task data"), "{got}");
    assert_eq!(got, want);
}
