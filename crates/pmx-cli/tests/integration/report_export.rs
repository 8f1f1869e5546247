//! `pmx report --firefox` and `--pprof` end to end.
//!
//! A C program (main → middle_step → leaf_work, built with frame pointers
//! and line info) is recorded here with `pmx record -g -e cpu-clock`;
//! its pprof export is read by pprof itself (`go tool pprof`, or a
//! standalone `pprof`; the checks skip with a message without either):
//! the same top functions with the same shares as `pmx report`, the same
//! sample count, source lines from DWARF, the program's mapping with its
//! build id. Its Firefox export (plain and gzip-compressed) is checked
//! against the processed profile format: every table's columns as long
//! as its `length`, every index in range, every sample's stack a chain of
//! frames to a root, the meta fields the profiler requires, and the
//! samples and call chains of the recording. A `{cpu-clock,page-faults}:S`
//! recording's member is a pprof sample type that puts the page faults on
//! the function that takes them, and a Firefox track weighing them. Every
//! real recording in
//! `../shared/data/perfdata` (file and pipe mode, several events, LOST
//! records) is exported both ways too.

use crate::common::{pmx, stderr};
use pmx_testkit::cc;
use pmx_testkit::shared::shared_data;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `leaf_work` calls `tiny` once so that GCC gives it a frame (a leaf
/// function gets none even with -fno-omit-frame-pointer, and the
/// frame-pointer chain would then skip its caller).
const PROG_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long tiny(long n) { return n ^ (n >> 3); }
__attribute__((noinline)) double leaf_work(long n) {
    double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 1.0000001;
    return x + (double)tiny(n);
}
__attribute__((noinline)) double middle_step(long n) {
    return leaf_work(n) * 0.5 + 1.0;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    printf("%f\n", middle_step(n));
    return 0;
}
"#;

/// The program compiled and recorded: (its directory, the perf.data).
fn recording() -> Option<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let prog = match cc::compile(
        dir.path(),
        "prog",
        PROG_C,
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    ) {
        Ok(p) => p,
        Err(why) => {
            pmx_testkit::skip(why);
            return None;
        }
    };
    let data = dir.path().join("prog.data");
    let o = pmx(&[
        "record",
        "-g",
        "-F",
        "5000",
        "-e",
        "cpu-clock",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "80000000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    Some((dir, data))
}

/// `pmx report -q ARGS…`, which must succeed.
fn report(args: &[&str]) -> std::process::Output {
    let mut all = vec!["report", "-q"];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert!(o.status.success(), "pmx {all:?}: {}", stderr(&o));
    o
}

/// The pprof here: `go tool pprof`, else a standalone `pprof`.
fn pprof_tool() -> Option<Vec<&'static str>> {
    let works = |cmd: &[&str]| {
        Command::new(cmd[0])
            .args(&cmd[1..])
            .arg("-h")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    if works(&["go", "tool", "pprof"]) {
        return Some(vec!["go", "tool", "pprof"]);
    }
    if works(&["pprof"]) {
        return Some(vec!["pprof"]);
    }
    pmx_testkit::skip(
        "neither `go tool pprof` nor `pprof` is installed (apt-get install golang-go): \
         the pprof reading checks do not run",
    );
    None
}

/// pprof's output for `ARGS… FILE`, which must succeed.
fn pprof(tool: &[&str], args: &[&str], file: &Path) -> String {
    let o = Command::new(tool[0])
        .args(&tool[1..])
        .args(args)
        .arg(file)
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("run pprof");
    let text = pmx_testkit::text(&o.stdout);
    assert!(
        o.status.success(),
        "pprof {args:?} {}: {}{text}",
        file.display(),
        pmx_testkit::text(&o.stderr)
    );
    text
}

/// `pprof -top` as (name, flat %) rows, and its "Total samples" line.
fn pprof_top(tool: &[&str], file: &Path, extra: &[&str]) -> (Vec<(String, f64)>, String) {
    let mut args = vec!["-top", "-nodecount=200", "-nodefraction=0"];
    args.extend_from_slice(extra);
    let out = pprof(tool, &args, file);
    let rows = pmx_testkit::pprof::top_rows(&out);
    let rows = rows.into_iter().map(|r| (r.name, r.flat_pct)).collect();
    (rows, pmx_testkit::pprof::total_samples(&out))
}

/// `pmx report --sort symbol` of one event as (name, overhead %, samples)
/// per name (rows of one name in several binaries added up).
fn pmx_top(file: &Path, event: usize) -> Vec<(String, f64, u64)> {
    let o = report(&["--json", "--sort", "symbol", "-i", file.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut by: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for r in v["events"][event]["rows"].as_array().unwrap() {
        let e = by
            .entry(r["symbol"].as_str().unwrap().to_string())
            .or_default();
        e.0 += r["overhead"].as_f64().unwrap();
        e.1 += r["samples"].as_u64().unwrap();
    }
    let mut rows: Vec<_> = by.into_iter().map(|(n, (p, s))| (n, p, s)).collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    rows
}

/// The first event's total period per `pmx report --json`.
fn total_period(file: &Path) -> u64 {
    let o = report(&["--json", "-i", file.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["events"][0]["period"].as_u64().unwrap()
}

/// pprof's rows agree with pmx's: every pmx row of at least 1% is in
/// pprof's list with the same share (to pprof's two decimals), the top
/// one first.
fn same_top(ours: &[(String, f64, u64)], theirs: &[(String, f64)], what: &str) {
    let top: Vec<_> = ours.iter().filter(|r| r.1 >= 1.0).collect();
    assert!(!top.is_empty(), "{what}: pmx has no row of 1% or more");
    assert_eq!(theirs[0].0, top[0].0, "{what}: top function\n{theirs:?}");
    for (name, pct, _) in top {
        let Some((_, p)) = theirs.iter().find(|(n, _)| n == name) else {
            panic!("{what}: {name} ({pct:.2}%) is not in pprof's -top:\n{theirs:?}");
        };
        assert!(
            (p - pct).abs() < 0.011,
            "{what}: {name}: pmx {pct}%, pprof {p}%"
        );
    }
}

#[test]
fn pprof_reads_the_export_with_the_same_top_functions() {
    let Some((dir, data)) = recording() else {
        return;
    };
    let out = dir.path().join("prog.pb.gz");
    let o = report(&[
        "-i",
        data.to_str().unwrap(),
        "--pprof",
        out.to_str().unwrap(),
    ]);
    assert!(o.stdout.is_empty(), "an export alone prints no table");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip-compressed");
    let Some(tool) = pprof_tool() else { return };
    let ours = pmx_top(&data, 0);
    assert_eq!(ours[0].0, "leaf_work", "{ours:?}");
    let (theirs, total) = pprof_top(&tool, &out, &[]);
    same_top(&ours, &theirs, "cpu-clock");
    // The period column is CPU time, in pprof's milliseconds.
    let samples: u64 = ours.iter().map(|r| r.2).sum();
    let ms: f64 = total.strip_suffix("ms").expect(&total).parse().unwrap();
    let period = total_period(&data) as f64 / 1e6;
    assert!((ms - period).abs() < 0.01, "pprof {total}, pmx {period} ms");
    // The sample-count column.
    let (counts, total) = pprof_top(&tool, &out, &["-sample_index=cpu-clock_samples"]);
    assert_eq!(total, samples.to_string());
    assert_eq!(counts[0].0, "leaf_work");
    // Source lines from DWARF, callers through main.
    let lines = pprof(&tool, &["-top", "-lines", "-nodefraction=0"], &out);
    assert!(
        lines.contains("leaf_work ") && lines.contains("prog.c:7"),
        "{lines}"
    );
    let tree = pprof(&tool, &["-traces"], &out);
    let chain = ["leaf_work", "middle_step", "main"];
    assert!(
        tree.split("-----------").any(|t| {
            let names: Vec<&str> = t
                .lines()
                .filter_map(|l| l.split_whitespace().last())
                .collect();
            names.windows(3).any(|w| w == chain)
        }),
        "no trace leaf_work ← middle_step ← main:\n{tree}"
    );
    // The program's mapping, with its build id.
    let raw = pprof(&tool, &["-raw"], &out);
    let mapping = raw
        .lines()
        .skip_while(|l| *l != "Mappings")
        .find(|l| l.contains("/prog "))
        .unwrap_or_else(|| panic!("no mapping of prog:\n{raw}"));
    let id = mapping.split_whitespace().nth(3).unwrap();
    assert!(
        id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{mapping}"
    );
}

/// Check a Firefox processed profile against the format: returns the
/// sample count of each thread name and every sample's stack as function
/// names, root first.
fn check_firefox(v: &Value) -> (BTreeMap<String, u64>, Vec<Vec<String>>) {
    let meta = &v["meta"];
    for key in [
        "version",
        "preprocessedProfileVersion",
        "interval",
        "startTime",
    ] {
        assert!(meta[key].is_number(), "meta.{key}: {}", meta[key]);
    }
    assert!(meta["interval"].as_f64().unwrap() > 0.0);
    assert!(meta["product"].is_string(), "meta.product");
    let categories = meta["categories"].as_array().expect("meta.categories");
    for c in categories {
        assert!(c["name"].is_string() && c["color"].is_string(), "{c}");
        assert!(!c["subcategories"].as_array().unwrap().is_empty(), "{c}");
    }
    let schemas: Vec<&str> = meta["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let mut per_thread = BTreeMap::new();
    let mut stacks = Vec::new();
    for t in v["threads"].as_array().unwrap() {
        let strings: Vec<&str> = t["stringArray"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let table = |name: &str, cols: &[&str]| -> Vec<Vec<Value>> {
            let tab = &t[name];
            let n = tab["length"].as_u64().unwrap() as usize;
            cols.iter()
                .map(|c| {
                    let col = tab[*c].as_array().unwrap_or_else(|| panic!("{name}.{c}"));
                    assert_eq!(col.len(), n, "{name}.{c} has {} of {n}", col.len());
                    col.clone()
                })
                .collect()
        };
        let index = |v: &Value, len: usize, what: &str| -> Option<usize> {
            if v.is_null() {
                return None;
            }
            let i = v.as_u64().unwrap_or_else(|| panic!("{what}: {v}")) as usize;
            assert!(i < len, "{what}: {i} of {len}");
            Some(i)
        };
        let func = table("funcTable", &["name", "resource", "isJS"]);
        let resources = t["resourceTable"]["length"].as_u64().unwrap() as usize;
        for (n, r) in func[0].iter().zip(&func[1]) {
            index(n, strings.len(), "funcTable.name").unwrap();
            if r.as_i64() != Some(-1) {
                index(r, resources, "funcTable.resource");
            }
        }
        let frame = table("frameTable", &["func", "category", "address"]);
        for (f, c) in frame[0].iter().zip(&frame[1]) {
            index(f, func[0].len(), "frameTable.func").unwrap();
            index(c, categories.len(), "frameTable.category").unwrap();
        }
        let stack = table("stackTable", &["prefix", "frame"]);
        for (i, (p, f)) in stack[0].iter().zip(&stack[1]).enumerate() {
            // A prefix comes before its stack: every chain ends at a root.
            if let Some(p) = index(p, stack[0].len(), "stackTable.prefix") {
                assert!(p < i, "stack {i}'s prefix {p} is not before it");
            }
            index(f, frame[0].len(), "stackTable.frame").unwrap();
        }
        let samples = table(
            "samples",
            &["stack", "timeDeltas", "weight", "threadCPUDelta"],
        );
        for s in &samples[0] {
            let mut names = Vec::new();
            let mut node = index(s, stack[0].len(), "samples.stack");
            while let Some(i) = node {
                let f = stack[1][i].as_u64().unwrap() as usize;
                let fun = frame[0][f].as_u64().unwrap() as usize;
                names.push(strings[func[0][fun].as_u64().unwrap() as usize].to_string());
                node = stack[0][i].as_u64().map(|p| p as usize);
            }
            names.reverse();
            stacks.push(names);
        }
        assert!(
            samples[1].iter().all(|d| d.as_f64().unwrap() >= 0.0),
            "time order"
        );
        let markers = table(
            "markers",
            &["name", "startTime", "endTime", "phase", "data"],
        );
        for (n, d) in markers[0].iter().zip(&markers[4]) {
            index(n, strings.len(), "markers.name").unwrap();
            let ty = d["type"].as_str().unwrap();
            assert!(schemas.contains(&ty), "marker type {ty} has no schema");
        }
        let name = t["name"].as_str().unwrap().to_string();
        *per_thread.entry(name).or_insert(0) += samples[0].len() as u64;
        assert!(t["pid"].is_string() && t["tid"].is_string(), "pid, tid");
    }
    (per_thread, stacks)
}

/// A Firefox export read back (gunzipped when named `.gz`).
fn read_firefox(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "gz") {
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip-compressed");
        let o = Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .output()
            .expect("gzip");
        assert!(o.status.success());
        return serde_json::from_slice(&o.stdout).unwrap();
    }
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn firefox_export_is_a_consistent_processed_profile() {
    let Some((dir, data)) = recording() else {
        return;
    };
    let json = dir.path().join("prog.json");
    let gz = dir.path().join("prog.json.gz");
    let i = data.to_str().unwrap();
    report(&["-i", i, "--firefox", json.to_str().unwrap()]);
    report(&["-i", i, "--firefox", gz.to_str().unwrap()]);
    let v = read_firefox(&json);
    assert_eq!(read_firefox(&gz)["threads"], v["threads"]);
    let (threads, stacks) = check_firefox(&v);
    let ours = pmx_top(&data, 0);
    let samples: u64 = ours.iter().map(|r| r.2).sum();
    assert_eq!(threads, BTreeMap::from([("prog".to_string(), samples)]));
    let leaf = |s: &Vec<String>| s.last().map(String::as_str) == Some("leaf_work");
    let in_leaf = stacks.iter().filter(|s| leaf(s)).count() as u64;
    assert_eq!(in_leaf, ours[0].2, "samples whose leaf is leaf_work");
    let chained = stacks
        .iter()
        .filter(|s| {
            leaf(s)
                && s.windows(3)
                    .any(|w| w == ["main", "middle_step", "leaf_work"])
        })
        .count() as u64;
    assert!(
        chained > in_leaf / 2,
        "{chained} of {in_leaf} through main → middle_step"
    );
    // CPU usage: each cpu-clock sample's period, in whole µs.
    let t = &v["threads"][0];
    let cpu: f64 = t["samples"]["threadCPUDelta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap())
        .sum();
    let period = total_period(&data) as f64 / 1e3;
    assert!(
        cpu <= period && cpu > period - samples as f64,
        "{cpu} µs of {period}"
    );
    assert_eq!(v["meta"]["symbolicated"], true);
}

#[test]
fn every_shared_recording_exports_both_ways() {
    let Some(dir) = shared_data("perfdata") else {
        return;
    };
    let tool = pprof_tool();
    let tmp = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    let mut markers = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let json = tmp.path().join(format!("{name}.json"));
        let pb = tmp.path().join(format!("{name}.pb.gz"));
        let (j, p) = (json.to_str().unwrap(), pb.to_str().unwrap());
        let o = if name.contains("pipe") {
            // Pipe mode, from standard input.
            let o = Command::new(crate::common::PMX)
                .args(["report", "-q", "-i", "-", "--firefox", j, "--pprof", p])
                .stdin(std::fs::File::open(f).unwrap())
                .output()
                .unwrap();
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            o
        } else {
            report(&["-i", f.to_str().unwrap(), "--firefox", j, "--pprof", p])
        };
        assert!(o.stdout.is_empty());
        let v = read_firefox(&json);
        let (threads, _) = check_firefox(&v);
        let js: Value =
            serde_json::from_slice(&report(&["--json", "-i", f.to_str().unwrap()]).stdout).unwrap();
        let events = js["events"].as_array().unwrap();
        let samples: u64 = events.iter().map(|e| e["samples"].as_u64().unwrap()).sum();
        assert_eq!(threads.values().sum::<u64>(), samples, "{name}");
        // Several events with samples: one track per thread and event,
        // named for both.
        let with: Vec<&Value> = events.iter().filter(|e| e["samples"] != 0).collect();
        if with.len() > 1 {
            let evs: Vec<String> = with
                .iter()
                .map(|e| format!(" ({})", e["name"].as_str().unwrap()))
                .collect();
            for t in threads.keys() {
                assert!(
                    evs.iter().any(|e| t.ends_with(e.as_str())),
                    "{name}: track {t}"
                );
            }
        }
        let lost: u64 = events.iter().map(|e| e["lost"].as_u64().unwrap()).sum();
        assert_eq!(marked(&v, "Lost records"), lost, "{name}: LOST in markers");
        let lost = js["lost_samples"].as_u64().unwrap();
        assert_eq!(marked(&v, "Lost samples"), lost, "{name}: LOST_SAMPLES");
        markers += lost;
        if let Some(tool) = &tool {
            for (k, e) in events.iter().enumerate() {
                if e["samples"].as_u64().unwrap() == 0 {
                    continue;
                }
                let ev = e["name"].as_str().unwrap();
                let index = format!("-sample_index={ev}");
                let (theirs, _) = pprof_top(tool, &pb, &[&index]);
                same_top(&pmx_top(f, k), &theirs, &format!("{name} {ev}"));
                let index = format!("-sample_index={ev}_samples");
                let (_, total) = pprof_top(tool, &pb, &[&index]);
                assert_eq!(total, e["samples"].to_string(), "{name} {ev}");
            }
        }
    }
    // lost_samples-4.4 has two.
    assert!(markers > 0, "no recording had lost samples");
}

/// The sum of the counts of the markers named `what`.
fn marked(v: &Value, what: &str) -> u64 {
    let mut sum = 0;
    for t in v["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap();
        let m = &t["markers"];
        for (n, d) in m["name"]
            .as_array()
            .unwrap()
            .iter()
            .zip(m["data"].as_array().unwrap())
        {
            if strings[n.as_u64().unwrap() as usize] == what {
                sum += d["count"].as_f64().unwrap() as u64;
            }
        }
    }
    sum
}

/// `pprof -top -cum -sample_index=INDEX` as (name, cum %) rows, and its
/// "Total samples" figure.
fn pprof_cum(tool: &[&str], file: &Path, index: &str) -> (Vec<(String, f64)>, String) {
    let si = format!("-sample_index={index}");
    let out = pprof(
        tool,
        &["-top", "-cum", "-nodecount=200", "-nodefraction=0", &si],
        file,
    );
    assert!(out.contains(&format!("Type: {index}\n")), "{out}");
    let rows = pmx_testkit::pprof::top_rows(&out);
    let rows = rows.into_iter().map(|r| (r.name, r.cum_pct)).collect();
    (rows, pmx_testkit::pprof::total_samples(&out))
}

#[test]
fn a_sample_read_groups_members_are_sample_types_on_the_functions_that_caused_them() {
    let Some(tool) = pprof_tool() else { return };
    if !cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = include_str!("../programs/spin_fault.c");
    let flags = ["-O0", "-g", "-fno-omit-frame-pointer"];
    let prog = cc::compile(dir.path(), "spin_fault", src, &flags).unwrap();
    let data = dir.path().join("g.data");
    // cpu-clock samples; each sample reads page-faults (no PMU needed).
    let o = pmx(&[
        "record",
        "-g",
        "-e",
        "{cpu-clock,page-faults}:S",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.path().join("g.pb.gz");
    let ff = dir.path().join("g.json");
    report(&[
        "-i",
        data.to_str().unwrap(),
        "--pprof",
        out.to_str().unwrap(),
        "--firefox",
        ff.to_str().unwrap(),
    ]);
    // The sample types: the leader's count and time, then the member's
    // count, named without the group's `:S`.
    let raw = pprof(&tool, &["-raw"], &out);
    assert!(
        raw.contains("cpu-clock_samples/count cpu-clock/nanoseconds[dflt] page-faults/count"),
        "{raw}"
    );
    // By page faults: fault_here (and its callers) hold nearly all, the
    // spinning function none; the total is pmx report's count of them.
    let (faults, total) = pprof_cum(&tool, &out, "page-faults");
    let cum = |rows: &[(String, f64)], f: &str| rows.iter().find(|r| r.0 == f).map_or(0.0, |r| r.1);
    assert!(cum(&faults, "fault_here") >= 80.0, "{faults:?}");
    assert!(cum(&faults, "spin_here") < 5.0, "{faults:?}");
    let o = report(&["--json", "-i", data.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let counted = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("page-faults"))
        })
        .unwrap_or_else(|| panic!("no page-faults event: {v}"))["period"]
        .as_u64()
        .unwrap();
    assert!(counted >= 1000, "{counted} page faults");
    assert_eq!(total, counted.to_string(), "{faults:?}");
    // The Firefox export: a track of the member per thread, its samples
    // weighing the member's counts, as many as pmx report counts.
    let v = read_firefox(&ff);
    check_firefox(&v);
    let mut weights = 0;
    let names: Vec<&str> = (v["threads"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Named by what they count: the leader's `:S` (how the group was
    // sampled) is in no track's name.
    assert!(
        names.iter().any(|n| n.ends_with(" (cpu-clock)")),
        "{names:?}"
    );
    assert!(names.iter().all(|n| !n.contains(":S")), "{names:?}");
    for t in v["threads"].as_array().unwrap() {
        if t["name"].as_str().unwrap().ends_with(" (page-faults)") {
            let w = t["samples"]["weight"].as_array().expect("weights");
            weights += w.iter().map(|w| w.as_u64().unwrap()).sum::<u64>();
        }
    }
    assert_eq!(weights, counted, "page faults in the Firefox export");
    // By CPU time (the default type) the spinning function has its
    // share (about half: both functions run some 40 ms a round).
    let (cpu, _) = pprof_cum(&tool, &out, "cpu-clock");
    assert!(cum(&cpu, "spin_here") >= 25.0, "{cpu:?}");
}
