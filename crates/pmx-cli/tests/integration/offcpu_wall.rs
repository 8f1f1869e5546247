//! `report --wall-clock` and the off-CPU flame graphs and exports, on
//! `programs/waits.c` recorded with `-e cpu-clock --off-cpu -g`: per
//! function, the waits are within 15% of the times the program measured
//! and spin's CPU time within 25% of its own measure; the main thread's
//! on- and off-CPU time adds up to its wall time (less the time it waited
//! for a CPU while runnable, which the program reads from schedstat);
//! the folded stacks, the flame graph, pprof (`go tool pprof -top`) and
//! the Firefox Profiler's processed profile (its samples' weights times
//! its interval, as the profiler's call tree adds them) say the same.

use super::offcpu::{measured, record, waits_program, which_go, within};
use crate::common::pmx;
use pmx_testkit::{perf, text};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

const WAITS: [&str; 3] = ["wait_sleep", "wait_pipe", "wait_mutex"];

/// `pmx report -i FILE ARGS…`'s standard output (success asserted).
fn report(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["report", "-q", "-i", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert!(o.status.success(), "pmx {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// A recording of `waits 100` with cpu-clock and off-CPU stacks, and the
/// program's own figures.
fn recording(dir: &Path) -> Option<(std::path::PathBuf, HashMap<String, f64>)> {
    if !perf::require("") {
        return None;
    }
    let prog = waits_program(dir)?;
    let data = dir.join("wall.data");
    let out = record(&[
        "-e",
        "cpu-clock",
        "-F",
        "1000",
        "-g",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    Some((data, measured(&out, 100.0)))
}

/// Sum of `ms` per function of `names` found in the folded lines
/// (`frames ns`) that `keep` accepts, by the innermost of those names.
fn folded_ms(folded: &str, names: &[&str], keep: impl Fn(&str) -> bool) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for l in folded.lines().filter(|l| keep(l)) {
        let (stack, ns) = l.rsplit_once(' ').unwrap();
        let ns: f64 = ns.parse().unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(f) = frames.iter().rev().find(|f| names.contains(f)) {
            *out.entry(f.to_string()).or_insert(0.0) += ns / 1e6;
        }
    }
    out
}

#[test]
fn wall_clock_time_per_function_and_thread_is_what_the_program_measured() {
    let dir = tempfile::tempdir().unwrap();
    let Some((data, known)) = recording(dir.path()) else {
        return;
    };
    let v: Value = serde_json::from_str(&report(&data, &["--wall-clock", "--json"])).unwrap();
    let ms = |t: &Value, k: &str| t[k].as_u64().unwrap() as f64 / 1e6;
    let func = |name: &str| {
        (v["functions"].as_array().unwrap().iter())
            .find(|f| f["symbol"] == name)
            .unwrap_or_else(|| panic!("{name} not in {v:#}"))
            .clone()
    };
    for f in WAITS {
        let got = ms(&func(f)["total"], "off_cpu_ns");
        assert!(within(got, known[f]), "{f}: {got} ms off, {known:?}");
        assert!(ms(&func(f)["total"], "on_cpu_ns") < 0.1 * known[f], "{f}");
    }
    let spin = func("spin");
    let on = ms(&spin["total"], "on_cpu_ns");
    let want = known["spin_cpu"];
    assert!((on - want).abs() <= 0.25 * want, "spin: {on} ms on, {want}");
    assert_eq!(ms(&spin["total"], "off_cpu_ns"), 0.0);
    // main holds them all: it is as long as the waits and the spin.
    let main = ms(&func("main")["total"], "wall_ns");
    let parts = on + WAITS.iter().map(|f| known[*f]).sum::<f64>();
    assert!((main - parts).abs() <= 0.15 * parts, "main {main}, {parts}");
    // The main thread: on + off ≈ its wall time, less its run delay.
    let threads = v["threads"].as_array().unwrap();
    let t = (threads.iter())
        .find(|t| t["comm"] == "waits" && t["pid"] == t["tid"])
        .unwrap_or_else(|| panic!("{v:#}"));
    let (wall, delay) = (known["main_wall"], known["main_delay"]);
    let got = ms(t, "wall_ns");
    assert!(
        got >= 0.85 * (wall - delay) && got <= 1.15 * wall + 20.0,
        "main thread: {got} ms, wall {wall}, run delay {delay}"
    );
    // The table says the same (ms, three decimals).
    let table = report(&data, &["--wall-clock"]);
    let row = (table.lines())
        .find(|l| l.ends_with(" wait_pipe"))
        .unwrap_or_else(|| panic!("{table}"));
    let total: f64 = row.split_whitespace().next().unwrap().parse().unwrap();
    assert!(within(total, known["wait_pipe"]), "{row}");
}

#[test]
fn wall_clock_folded_stacks_flame_graph_and_pprof() {
    let dir = tempfile::tempdir().unwrap();
    let Some((data, known)) = recording(dir.path()) else {
        return;
    };
    let folded = report(&data, &["--wall-clock", "--folded"]);
    let names = [&WAITS[..], &["spin"]].concat();
    let off = folded_ms(&folded, &names, |l| l.contains(";[off-CPU] "));
    let on = folded_ms(&folded, &names, |l| !l.contains("[off-CPU]"));
    for f in WAITS {
        let got = off.get(f).copied().unwrap_or(0.0);
        assert!(within(got, known[f]), "{f}: {got}\n{folded}");
    }
    let spin = on.get("spin").copied().unwrap_or(0.0);
    assert!(spin > 0.5 * known["spin_cpu"], "spin {spin}\n{folded}");
    assert_eq!(off.get("spin"), None);
    // offcpu-time alone: folded in nanoseconds waited.
    let alone = report(&data, &["--event", "offcpu-time", "--folded"]);
    let got = folded_ms(&alone, &WAITS, |_| true);
    for f in WAITS {
        let g = got.get(f).copied().unwrap_or(0.0);
        assert!(within(g, known[f]), "{f}: {g}\n{alone}");
    }
    let svg = dir.path().join("wall.svg");
    report(
        &data,
        &["--wall-clock", "--flamegraph", svg.to_str().unwrap()],
    );
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("<title>[off-CPU] ("), "{svg}");
    assert!(svg.contains(">spin</text>") || svg.contains("<title>spin ("));
    // pprof: one wall-clock column naming both kinds of functions.
    let Ok(go) = which_go() else {
        pmx_testkit::skip("go tool pprof: golang-go is not installed");
        return;
    };
    let pb = dir.path().join("wall.pb.gz");
    report(&data, &["--wall-clock", "--pprof", pb.to_str().unwrap()]);
    let o = Command::new(&go)
        .args(["tool", "pprof", "-top", "-sample_index=wall-clock"])
        .arg(&pb)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let top = text(&o.stdout);
    let rows = pmx_testkit::pprof::top_rows(&top);
    for f in ["spin", "wait_sleep", "wait_pipe", "wait_mutex"] {
        assert!(rows.iter().any(|r| r.name == f), "{f} not in\n{top}");
    }
}

/// Per thread name of a Firefox processed profile: ms per function (the
/// samples' weights times the interval, for each function on the stack).
fn firefox_ms(v: &Value) -> HashMap<String, HashMap<String, f64>> {
    let interval = v["meta"]["interval"].as_f64().unwrap();
    let mut out: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for t in v["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap();
        let func = t["funcTable"]["name"].as_array().unwrap();
        let frame = t["frameTable"]["func"].as_array().unwrap();
        let (prefix, sframe) = (&t["stackTable"]["prefix"], &t["stackTable"]["frame"]);
        let samples = &t["samples"];
        let weights = samples["weight"].as_array().unwrap();
        let per = out.entry(t["name"].as_str().unwrap().into()).or_default();
        for (s, w) in samples["stack"].as_array().unwrap().iter().zip(weights) {
            let mut seen = Vec::new();
            let mut node = s.as_u64();
            while let Some(i) = node.map(|i| i as usize) {
                let f = frame[sframe[i].as_u64().unwrap() as usize]
                    .as_u64()
                    .unwrap();
                let name = strings[func[f as usize].as_u64().unwrap() as usize].as_str();
                let name = name.unwrap().to_string();
                if !seen.contains(&name) {
                    *per.entry(name.clone()).or_insert(0.0) += w.as_f64().unwrap() * interval;
                    seen.push(name);
                }
                node = prefix[i].as_u64();
            }
        }
    }
    out
}

#[test]
fn firefox_profiles_weigh_waits_by_their_time() {
    let dir = tempfile::tempdir().unwrap();
    let Some((data, known)) = recording(dir.path()) else {
        return;
    };
    let json = dir.path().join("off.json");
    report(&data, &["--firefox", json.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let ms = firefox_ms(&v);
    let off = &ms["waits (offcpu-time)"];
    for f in WAITS {
        let got = off.get(f).copied().unwrap_or(0.0);
        assert!(within(got, known[f]), "{f}: {got} ms\n{ms:?}");
    }
    // Off-CPU samples use no CPU.
    for t in v["threads"].as_array().unwrap() {
        if t["name"].as_str().unwrap().ends_with("(offcpu-time)") {
            let cpu = t["samples"]["threadCPUDelta"].as_array().unwrap();
            assert!(cpu.iter().all(|d| d.as_f64() == Some(0.0)), "{}", t["name"]);
        }
    }
    let wall = dir.path().join("wall.json");
    report(
        &data,
        &["--wall-clock", "--firefox", wall.to_str().unwrap()],
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&wall).unwrap()).unwrap();
    let ms = firefox_ms(&v);
    let main = &ms["waits"];
    for f in WAITS {
        let got = main.get(f).copied().unwrap_or(0.0);
        assert!(within(got, known[f]), "{f}: {got} ms\n{ms:?}");
    }
    let spin = main.get("spin").copied().unwrap_or(0.0);
    let want = known["spin_cpu"];
    assert!((spin - want).abs() <= 0.25 * want, "spin {spin}, {want}");
}

#[test]
fn wall_clock_needs_both_halves() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("cpu.data");
    let o = pmx(&[
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-o",
        data.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = pmx(&["report", "--wall-clock", "-i", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("--wall-clock:")
            && err.contains("no offcpu-time samples (record with --off-cpu)"),
        "{err}"
    );
}

/// perf report's `-t SEP` rows (and heading) as perf 6.1 prints them,
/// pmx in perf's place: the off-CPU check of perf's `record_offcpu.sh`
/// reads the third field of `-s comm -q -n -t ';'`.
#[test]
fn field_separator_rows_as_perf() {
    let dir = tempfile::tempdir().unwrap();
    let Some((data, _)) = recording(dir.path()) else {
        return;
    };
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(crate::common::PMX, &as_perf).unwrap();
    let cases: [&[&str]; 4] = [
        &["-s", "comm", "-q", "-n", "-t", ";", "--percent-limit=1"],
        &[
            "--no-children",
            "-s",
            "comm,dso",
            "-n",
            "-t",
            ";",
            "-g",
            "none",
        ],
        // Rows over 5%: with children a start-up frame of ld.so may be
        // named otherwise by perf (a difference of names, not of -t).
        &[
            "-s",
            "comm,dso,sym",
            "-t",
            "\t",
            "-g",
            "none",
            "--percent-limit=5",
        ],
        &["--no-children", "-s", "dso,sym", "-t", "|", "-g", "none"],
    ];
    // The heading and the rows, which -t changes.
    let rows = |out: &[u8], sep: &str| -> Vec<String> {
        (text(out).lines())
            .filter(|l| l.contains(sep) && !l.starts_with("# (Tip"))
            .map(str::to_string)
            .collect()
    };
    for args in cases {
        let sep = args[args.iter().position(|a| *a == "-t").unwrap() + 1];
        let all = [&["report", "--stdio"], args].concat();
        let theirs = perf::on_file(&all, &data);
        assert!(theirs.status.success(), "{}", text(&theirs.stderr));
        let ours = Command::new(&as_perf)
            .args(&all)
            .arg("-i")
            .arg(&data)
            .output()
            .unwrap();
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        let theirs = rows(&theirs.stdout, sep);
        assert!(theirs.len() > 1, "{args:?}: {theirs:?}");
        assert_eq!(rows(&ours.stdout, sep), theirs, "{args:?}");
    }
}

/// `record --off-cpu` without tracefs (unmounted in a mount namespace of
/// its own) and as a user who may not read it (nobody, through setpriv):
/// one sentence with the fix, exit 2, no file. Needs root.
#[test]
fn no_tracefs_and_no_permission_say_how_to_fix_it() {
    let root = Command::new("id").arg("-u").output().unwrap();
    if text(&root.stdout).trim() != "0" || !perf::require("") {
        pmx_testkit::skip("needs root (unshare -m, setpriv)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mode = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o777);
    std::fs::set_permissions(dir.path(), mode).unwrap();
    let out = dir.path().join("x.data");
    let record = format!(
        "{} record -q --off-cpu -o {} -- true",
        crate::common::PMX,
        out.display()
    );
    let umount = "for m in /sys/kernel/tracing /sys/kernel/debug/tracing /sys/kernel/debug; \
                  do umount $m 2>/dev/null; done";
    // Root mounts tracefs where it is mounted nowhere, as perf does (a
    // freshly booted machine): the recording is made and tracefs is
    // mounted in that namespace afterwards.
    let o = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            &format!(
                "{umount}; {record} && grep -c ' /sys/kernel/tracing tracefs ' /proc/self/mounts"
            ),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "1", "{}", text(&o.stderr));
    assert!(out.exists());
    std::fs::remove_file(&out).unwrap();
    // Without CAP_SYS_ADMIN it may not mount: the reason and the fix.
    let o = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            &format!("{umount}; exec setpriv --bounding-set=-sys_admin {record}"),
        ])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "tracefs is not mounted: mount it with `mount -t tracefs nodev /sys/kernel/tracing`"
        ),
        "{err}"
    );
    assert_eq!(err.matches("tracefs").count(), 2, "one sentence: {err}");
    assert!(!out.exists());
    let o = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(&record)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("this user may not read it: run as root"),
        "{err}"
    );
    assert!(!out.exists());
    // The machine's tracefs is still there.
    assert!(Path::new("/sys/kernel/tracing/events/header_page").exists());
}
