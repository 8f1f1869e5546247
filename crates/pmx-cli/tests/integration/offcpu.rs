//! `record --off-cpu` without BPF, on a program of known waits
//! (`programs/waits.c`: nanosleep 4 × 100 ms, a pipe read and a futex
//! lock of 400 ms each, a 200 ms spin): perf 6.1 reads pmx's file, the
//! off-CPU time of each waiting function is within 15% of its wait, the
//! spinning function has none; `-p` and `-a`; the pprof export in
//! nanoseconds through `go tool pprof`.

use crate::common::pmx;
use pmx_testkit::{cc, perf, text};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The known waits, in ms, of `waits 100`.
const WAITS: [(&str, f64); 3] = [
    ("wait_sleep", 400.0),
    ("wait_pipe", 400.0),
    ("wait_mutex", 400.0),
];

fn waits_program(dir: &Path) -> Option<PathBuf> {
    if !cc::require() {
        return None;
    }
    let src = include_str!("../programs/waits.c");
    let flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-pthread"];
    Some(cc::compile(dir, "waits", src, &flags).unwrap())
}

fn record(args: &[&str]) {
    let mut all = vec!["record", "-q", "--off-cpu"];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert_eq!(o.status.code(), Some(0), "pmx {all:?}: {}", text(&o.stderr));
}

/// Per function of `names`: the ms of off-CPU time whose stack's
/// innermost frame among them is that function, from `perf script`'s
/// `offcpu-time` samples (period line, then the frames); and the
/// samples' count per command.
fn off_cpu_ms(file: &Path, names: &[&str]) -> (HashMap<String, f64>, HashMap<String, u64>) {
    let o = perf::on_file(&["script", "-F", "comm,period,event,ip,sym"], file);
    assert!(o.status.success(), "perf script: {}", text(&o.stderr));
    let out = text(&o.stdout);
    let (mut ms, mut comms) = (HashMap::new(), HashMap::new());
    for sample in out.split("\n\n") {
        let mut lines = sample.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        if !head.contains("offcpu-time:") {
            continue;
        }
        let words: Vec<&str> = head.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "offcpu-time:").unwrap();
        let period: f64 = words[at - 1].parse().unwrap();
        *comms.entry(words[..at - 1].join(" ")).or_insert(0) += 1;
        let frame = lines.find_map(|l| {
            let sym = l.split_whitespace().nth(1)?;
            names.iter().find(|n| sym == **n)
        });
        if let Some(f) = frame {
            *ms.entry(f.to_string()).or_insert(0.0) += period / 1e6;
        }
    }
    (ms, comms)
}

fn within(got: f64, want: f64) -> bool {
    (got - want).abs() <= 0.15 * want
}

#[test]
fn each_waiting_function_gets_its_wait_and_the_spinning_one_none() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    let data = dir.path().join("off.data");
    record(&[
        "-g",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    let names = ["wait_sleep", "wait_pipe", "wait_mutex", "spin"];
    let (ms, _) = off_cpu_ms(&data, &names);
    for (f, want) in WAITS {
        let got = ms.get(f).copied().unwrap_or(0.0);
        assert!(
            within(got, want),
            "{f}: {got:.1} ms off the CPU, {want} ms known: {ms:?}"
        );
    }
    assert_eq!(ms.get("spin"), None, "{ms:?}");
    // perf report reads it: offcpu-time, and the waits at the top.
    let o = perf::on_file(
        &["report", "--stdio", "-q", "--no-children", "-s", "sym"],
        &data,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rep = text(&o.stdout);
    for (f, _) in WAITS {
        assert!(rep.contains(f), "{f} not in perf report:\n{rep}");
    }
    // And pmx report, offcpu-time among its events.
    let o = pmx(&["report", "--stdio", "-i", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("offcpu-time"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn without_g_the_stacks_are_recorded_anyway_beside_cpu_events() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    let data = dir.path().join("off.data");
    let file = data.to_str().unwrap();
    record(&[
        "-e",
        "cpu-clock",
        "-o",
        file,
        "--",
        prog.to_str().unwrap(),
        "50",
    ]);
    let o = perf::on_file(&["evlist"], &data);
    let events = text(&o.stdout);
    assert!(
        events.contains("cpu-clock") && events.contains("offcpu-time"),
        "{events}"
    );
    let (ms, _) = off_cpu_ms(&data, &["wait_sleep"]);
    let got = ms.get("wait_sleep").copied().unwrap_or(0.0);
    assert!(within(got, 200.0), "{got} ms: {ms:?}");
}

#[test]
fn a_running_process_and_the_whole_system() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // -a: sleep's nanosleep is one wait of about 300 ms.
    let data = dir.path().join("a.data");
    record(&["-a", "-o", data.to_str().unwrap(), "--", "sleep", "0.3"]);
    let o = perf::on_file(&["script", "-F", "comm,period,event"], &data);
    let out = text(&o.stdout);
    let sleep_ms: f64 = (out.lines())
        .filter(|l| l.contains("offcpu-time:") && l.trim_start().starts_with("sleep "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e6;
    assert!(within(sleep_ms, 300.0), "sleep: {sleep_ms} ms\n{out}");
    // -p: a shell running six 100 ms sleeps one after the other, recorded
    // until it ends: the shell waits for each child, and each child
    // (followed, as perf follows the tasks a -p target creates) sleeps.
    let script = "for i in 1 2 3 4 5 6; do sleep 0.1; done";
    let mut child = Command::new("sh").args(["-c", script]).spawn().unwrap();
    let pid = child.id().to_string();
    let data = dir.path().join("p.data");
    record(&["-p", &pid, "-o", data.to_str().unwrap()]);
    child.wait().unwrap();
    let o = perf::on_file(&["script", "-F", "comm,pid,period,event"], &data);
    let out = text(&o.stdout);
    let waits: Vec<(String, f64)> = (out.lines())
        .filter(|l| l.contains("offcpu-time:"))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.to_string(), w.get(2)?.parse::<f64>().ok()? / 1e6))
        })
        .collect();
    let shell: f64 = waits.iter().filter(|w| w.0 == "sh").map(|w| w.1).sum();
    assert!(shell > 0.0, "sh waited {shell} ms: {out}");
    // A nanosleep of 100 ms is never shorter.
    assert!(waits.iter().any(|w| w.0 == "sleep" && w.1 >= 99.0), "{out}");
}

#[test]
fn the_pprof_export_has_the_waits_in_nanoseconds() {
    let Ok(go) = which_go() else {
        pmx_testkit::skip("go tool pprof: golang-go is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    let data = dir.path().join("off.data");
    record(&[
        "-g",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "50",
    ]);
    let pb = dir.path().join("off.pb.gz");
    let o = pmx(&[
        "report",
        "-i",
        data.to_str().unwrap(),
        "--pprof",
        pb.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run = |args: &[&str]| {
        let o = Command::new(&go)
            .args(["tool", "pprof"])
            .args(args)
            .arg(&pb)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let raw = run(&["-raw"]);
    assert!(raw.contains("offcpu-time/nanoseconds"), "{raw}");
    let top = run(&["-top", "-sample_index=offcpu-time"]);
    let rows = pmx_testkit::pprof::top_rows(&top);
    for (f, _) in WAITS {
        let cum = rows.iter().find(|r| r.name == f).map_or(0.0, |r| r.cum_pct);
        // Each is 200 ms of the about 1 s all threads waited.
        assert!((10.0..=35.0).contains(&cum), "{f}: {cum}%\n{top}");
    }
    assert!(rows.iter().all(|r| r.name != "spin"), "{top}");
}

fn which_go() -> Result<PathBuf, ()> {
    let o = Command::new("go").arg("version").output().map_err(|_| ())?;
    o.status.success().then(|| PathBuf::from("go")).ok_or(())
}
