//! pmx's exports in a real viewer: speedscope's web app in headless
//! Chromium.
//!
//! A C program with one clearly dominant function (`hot_loop`, ~80% of
//! its time, `warm_loop` most of the rest) is recorded here with
//! `pmx record -g -e cpu-clock`. Its `pmx report --pprof` export and its
//! `pmx script` output are each imported into speedscope (the npm
//! package's own `index.html`, opened from disk: no server, no network)
//! through the page's file input, by `tests/viewer/speedscope.mjs` under
//! node and playwright-core driving Debian's `/usr/bin/chromium`. The
//! hottest function is read from the page's DOM — the Sandwich view's
//! table, whose Self column is each function's self time — and must be
//! the one `pmx report` puts first; the pprof file's self shares must be
//! pmx's overheads to the hundredth (speedscope weighs `perf script`
//! samples by the wall-clock time between them, so those shares are only
//! close). A screenshot per format is kept under `target/tmp/speedscope/`.
//! The `--firefox` export is loaded too, and speedscope must refuse it as
//! the README says (it reads another Firefox format).
//!
//! Needs node, chromium and the npm packages `speedscope` and
//! `playwright-core` under `$PMX_VIEWER_DIR` (relative to the repository;
//! default `target/viewer`), which `.ci/run` installs; without any of them
//! the test skips with a message.

mod common;
use common::{pmx, stderr};
use pmx_testkit::cc;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROG_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long tiny(long n) { return n ^ (n >> 3); }
__attribute__((noinline)) double hot_loop(long n) {
    double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 1.0000001;
    return x + (double)tiny(n);
}
__attribute__((noinline)) double warm_loop(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 0.999999 + 1.0;
    return x;
}
__attribute__((noinline)) double driver(long n) {
    return hot_loop(n) + warm_loop(n / 4);
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    printf("%f\n", driver(n));
    return 0;
}
"#;

/// The npm prefix holding speedscope and playwright-core, or `None` after
/// a SKIP line saying what is missing.
fn viewer() -> Option<PathBuf> {
    // Relative to the repository's root, as `.ci/run` takes it.
    let dir = std::env::var_os("PMX_VIEWER_DIR").unwrap_or("target/viewer".into());
    let dir = cc::repo().join(dir);
    let chromium = std::env::var("PMX_CHROMIUM").unwrap_or("/usr/bin/chromium".into());
    let missing = if Command::new("node").arg("--version").output().is_err() {
        "node (apt-get install nodejs)".to_string()
    } else if !Path::new(&chromium).exists() {
        format!("{chromium} (apt-get install chromium)")
    } else if let Some(p) = ["speedscope", "playwright-core"].into_iter().find(|p| {
        !dir.join("node_modules")
            .join(p)
            .join("package.json")
            .exists()
    }) {
        format!("npm package {p} in {} (.ci/run installs it)", dir.display())
    } else {
        return Some(dir);
    };
    pmx_testkit::skip(format!("no {missing}: speedscope is not driven"));
    None
}

/// `pmx ARGS…`, which must succeed.
fn run(args: &[&str]) -> std::process::Output {
    let o = pmx(args);
    assert!(o.status.success(), "pmx {args:?}: {}", stderr(&o));
    o
}

/// What the driver printed for each profile, in order.
fn speedscope(modules: &Path, out: &Path, profiles: &[&Path]) -> Vec<Value> {
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/viewer/speedscope.mjs");
    let o = Command::new("node")
        .arg(driver)
        .arg(modules)
        .arg(out)
        .args(profiles)
        .output()
        .expect("run node");
    let text = pmx_testkit::text(&o.stdout);
    assert!(o.status.success(), "{driver}: {}{text}", stderr(&o));
    let seen: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(seen.len(), profiles.len(), "{text}");
    seen
}

/// The Sandwich table's rows as (name, file, self %), and its hottest one
/// by self time, after checking the import worked offline with `importer`.
fn hottest<'a>(seen: &'a Value, importer: &str) -> (&'a str, &'a str, f64) {
    let what = &seen["profile"];
    assert!(seen["failure"].is_null(), "{what}: {}", seen["failure"]);
    assert_eq!(seen["offline"], serde_json::json!([]), "{what}: network");
    let said = seen["importer"].as_str().unwrap_or_default();
    assert!(said.contains(importer), "{what}: {said:?}");
    let rows = seen["rows"].as_array().unwrap();
    assert!(rows.len() > 2, "{what}: {rows:?}");
    println!(
        "{what}: screenshot {}",
        seen["screenshot"].as_str().unwrap()
    );
    rows.iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap();
            (s("name"), s("file"), r["self"].as_f64().unwrap())
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap()
}

/// The share of `name` in the Sandwich table.
fn self_share(seen: &Value, name: &str) -> f64 {
    let rows = seen["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["name"] == name);
    row.unwrap_or_else(|| panic!("no {name} in {rows:?}"))["self"]
        .as_f64()
        .unwrap()
}

#[test]
fn speedscope_shows_pmx_reports_hottest_function_first() {
    let Some(modules) = viewer() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = ["-O1", "-g", "-fno-omit-frame-pointer"];
    let prog = match cc::compile(dir.path(), "prog", PROG_C, &flags) {
        Ok(p) => p,
        Err(why) => return pmx_testkit::skip(why),
    };
    let data = dir.path().join("prog.data");
    let d = data.to_str().unwrap();
    let p = prog.to_str().unwrap();
    run(&[
        "record",
        "-g",
        "-F",
        "5000",
        "-e",
        "cpu-clock",
        "-o",
        d,
        "--",
        p,
        "80000000",
    ]);

    // What pmx report puts first (and second), with their overheads.
    let o = run(&["report", "-q", "--json", "-i", d]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["events"][0]["rows"].as_array().unwrap();
    let row = |i: usize| {
        (
            rows[i]["symbol"].as_str().unwrap(),
            rows[i]["overhead"].as_f64().unwrap(),
        )
    };
    let (first, share) = row(0);
    let (second, share2) = row(1);
    assert_eq!((first, second), ("hot_loop", "warm_loop"), "{rows:?}");

    let pprof = dir.path().join("prog.pb.gz");
    run(&["report", "-q", "-i", d, "--pprof", pprof.to_str().unwrap()]);
    let script = dir.path().join("prog.perf-script.txt");
    std::fs::write(&script, run(&["script", "-i", d]).stdout).unwrap();
    let firefox = dir.path().join("prog.json");
    run(&[
        "report",
        "-q",
        "-i",
        d,
        "--firefox",
        firefox.to_str().unwrap(),
    ]);

    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("speedscope");
    std::fs::create_dir_all(&out).unwrap();
    let seen = speedscope(&modules, &out, &[&pprof, &script, &firefox]);

    // pprof: functions with their source file, weighted by cpu-clock's
    // period, so the shares are pmx's to speedscope's rounding.
    let (name, file, top) = hottest(&seen[0], "protobuf encoded pprof");
    assert_eq!(name, first, "pprof: hottest function");
    assert!(file.ends_with("prog.c"), "pprof: {name} in {file}");
    assert!((top - share).abs() < 0.01, "pprof: {top}% vs pmx {share}%");
    let warm = self_share(&seen[0], second);
    assert!(
        (warm - share2).abs() < 0.01,
        "pprof: {second} {warm}% vs pmx {share2}%"
    );

    // perf script: frames named in the program, samples weighed by the
    // wall-clock time between them (cpu-clock samples are CPU time apart:
    // time the program waited for a CPU on a busy machine is credited to
    // the samples around it), so the share is only most of the time.
    let (name, file, top) = hottest(&seen[1], "linux perf script");
    assert_eq!(name, first, "perf script: hottest function");
    assert_eq!(file, p, "perf script: {name}'s binary");
    assert!(top > 50.0, "script: {top}% (pmx {share}%)");
    let title = seen[1]["title"].as_str().unwrap();
    assert!(
        title.starts_with("prog tid: "),
        "one profile per thread: {title}"
    );

    // The Firefox Profiler's format is not one speedscope reads (its
    // "Firefox" importer takes the old DevTools recording): the page says
    // so, as the README does.
    let failure = seen[2]["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("Unrecognized format"),
        "firefox: {}",
        seen[2]
    );
}
