//! `record --off-cpu` without BPF, on a program of known waits
//! (`programs/waits.c`: nanosleep 4 × 100 ms, a pipe read and a futex
//! lock of 400 ms each, a 200 ms spin): perf 6.1 reads pmx's file, the
//! off-CPU time of each waiting function is within 15% of its wait (as
//! the program measured it: on a loaded machine a woken thread may wait
//! for a CPU, which is off-CPU time too), the spinning function has none;
//! `-p` and `-a`; `--off-cpu-thresh`; the pprof export in nanoseconds
//! through `go tool pprof`.

use crate::common::pmx;
use pmx_testkit::{cc, perf, text};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The waiting functions of `waits`.
const WAITS: [&str; 3] = ["wait_sleep", "wait_pipe", "wait_mutex"];

pub(crate) fn waits_program(dir: &Path) -> Option<PathBuf> {
    if !cc::require() {
        return None;
    }
    let src = include_str!("../programs/waits.c");
    let flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-pthread"];
    Some(cc::compile(dir, "waits", src, &flags).unwrap())
}

/// `pmx record -q --off-cpu ARGS…`; the command's standard output.
pub(crate) fn record(args: &[&str]) -> String {
    let mut all = vec!["record", "-q", "--off-cpu"];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert_eq!(o.status.code(), Some(0), "pmx {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// The waits as the program measured them (`wait_sleep 401.2` lines), in
/// ms, each there (`unit`: the program's unit, for the message). No lower
/// bound: on a loaded machine the waiting thread may start its clock
/// late, after the other thread began the 4 × `unit` it waits for (seen
/// here at a load of 18); the tests compare with what it measured.
pub(crate) fn measured(stdout: &str, unit: f64) -> HashMap<String, f64> {
    let m: HashMap<String, f64> = (stdout.lines())
        .filter_map(|l| {
            let (f, ms) = l.split_once(' ')?;
            Some((f.to_string(), ms.parse().ok()?))
        })
        .collect();
    for f in WAITS {
        assert!(
            m.get(f).is_some_and(|&ms| ms > 0.0),
            "{f} (4 × {unit} ms): {m:?}"
        );
    }
    m
}

/// Per function of `names`: the ms of off-CPU time whose stack's
/// innermost frame among them is that function, from `perf script`'s
/// `offcpu-time` samples (period line, then the frames); and the
/// samples' count per command.
fn off_cpu_ms(file: &Path, names: &[&str]) -> (HashMap<String, f64>, HashMap<String, u64>) {
    let (ms, _, comms) = off_cpu(file, names);
    (ms, comms)
}

/// [`off_cpu_ms`] and the number of samples per function.
fn off_cpu(
    file: &Path,
    names: &[&str],
) -> (
    HashMap<String, f64>,
    HashMap<String, u64>,
    HashMap<String, u64>,
) {
    let o = perf::on_file(&["script", "-F", "comm,period,event,ip,sym"], file);
    assert!(o.status.success(), "perf script: {}", text(&o.stderr));
    let out = text(&o.stdout);
    let (mut ms, mut counts, mut comms) = (HashMap::new(), HashMap::new(), HashMap::new());
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
            *counts.entry(f.to_string()).or_insert(0) += 1;
        }
    }
    (ms, counts, comms)
}

pub(crate) fn within(got: f64, want: f64) -> bool {
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
    let out = record(&[
        "-g",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    let known = measured(&out, 100.0);
    let names = ["wait_sleep", "wait_pipe", "wait_mutex", "spin"];
    let (ms, _) = off_cpu_ms(&data, &names);
    for f in WAITS {
        let (got, want) = (ms.get(f).copied().unwrap_or(0.0), known[f]);
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
    for f in WAITS {
        assert!(rep.contains(f), "{f} not in perf report:\n{rep}");
    }
    // pmx in perf's place reports the same rows (≥ 1%), whitespace aside.
    let args = [
        "report",
        "--stdio",
        "-q",
        "--no-children",
        "-g",
        "none",
        "--percent-limit",
        "1",
    ];
    let rows = |out: &[u8]| -> Vec<String> {
        (text(out).lines())
            .filter(|l| {
                l.trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let theirs = rows(&perf::on_file(&args, &data).stdout);
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(crate::common::PMX, &as_perf).unwrap();
    let o = Command::new(&as_perf)
        .args(args)
        .arg("-i")
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(rows(&o.stdout), theirs);
    assert!(
        theirs.iter().any(|r| r.ends_with("wait_mutex")),
        "{theirs:?}"
    );
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
fn waits_shorter_than_the_threshold_are_summed_per_stack() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    let (plain, summed) = (
        dir.path().join("plain.data"),
        dir.path().join("summed.data"),
    );
    let p = prog.to_str().unwrap();
    let out = record(&["-g", "-o", plain.to_str().unwrap(), "--", p, "50"]);
    measured(&out, 50.0);
    // 1 s: longer than every wait of the program.
    let thresh = ["--off-cpu-thresh", "1000"];
    let args = [
        &thresh[..],
        &["-g", "-o", summed.to_str().unwrap(), "--", p, "50"],
    ]
    .concat();
    let known = measured(&record(&args), 50.0);
    let (ms, n, _) = off_cpu(&plain, &["wait_sleep"]);
    assert_eq!(n.get("wait_sleep"), Some(&4), "{ms:?}");
    let (ms, n, _) = off_cpu(&summed, &["wait_sleep"]);
    assert_eq!(n.get("wait_sleep"), Some(&1), "{ms:?}");
    let got = ms.get("wait_sleep").copied().unwrap_or(0.0);
    assert!(
        within(got, known["wait_sleep"]),
        "{got} ms summed, {known:?}"
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
    let out = record(&[
        "-e",
        "cpu-clock",
        "-o",
        file,
        "--",
        prog.to_str().unwrap(),
        "50",
    ]);
    let known = measured(&out, 50.0);
    let o = perf::on_file(&["evlist"], &data);
    let events = text(&o.stdout);
    assert!(
        events.contains("cpu-clock") && events.contains("offcpu-time"),
        "{events}"
    );
    let (ms, _) = off_cpu_ms(&data, &["wait_sleep"]);
    let got = ms.get("wait_sleep").copied().unwrap_or(0.0);
    assert!(
        within(got, known["wait_sleep"]),
        "{got} ms: {ms:?}, {known:?}"
    );
}

#[test]
fn a_running_process_and_the_whole_system() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // -a: sleep's nanosleep is one wait of 300 ms or a little more (no
    // more than the whole recording lasted).
    let data = dir.path().join("a.data");
    let start = std::time::Instant::now();
    record(&["-a", "-o", data.to_str().unwrap(), "--", "sleep", "0.3"]);
    let lasted = start.elapsed().as_secs_f64() * 1e3;
    let o = perf::on_file(&["script", "-F", "comm,period,event"], &data);
    let out = text(&o.stdout);
    let sleep_ms: f64 = (out.lines())
        .filter(|l| l.contains("offcpu-time:") && l.trim_start().starts_with("sleep "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e6;
    assert!(
        (299.0..=lasted).contains(&sleep_ms),
        "sleep: {sleep_ms} ms of {lasted}\n{out}"
    );
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
    for f in WAITS {
        let cum = rows.iter().find(|r| r.name == f).map_or(0.0, |r| r.cum_pct);
        // Each is 200 ms of the about 1 s all threads waited.
        assert!((10.0..=35.0).contains(&cum), "{f}: {cum}%\n{top}");
    }
    assert!(rows.iter().all(|r| r.name != "spin"), "{top}");
}

pub(crate) fn which_go() -> Result<PathBuf, ()> {
    let o = Command::new("go").arg("version").output().map_err(|_| ())?;
    o.status.success().then(|| PathBuf::from("go")).ok_or(())
}

#[test]
fn dwarf_stacks_of_the_blocked_threads_are_unwound_by_perf() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = waits_program(dir.path()) else {
        return;
    };
    let data = dir.path().join("dwarf.data");
    let file = data.to_str().unwrap();
    let args = [
        "--call-graph",
        "dwarf",
        "-o",
        file,
        "--",
        prog.to_str().unwrap(),
        "50",
    ];
    let known = measured(&record(&args), 50.0);
    let (ms, _) = off_cpu_ms(&data, &["wait_sleep", "wait_pipe", "wait_mutex", "spin"]);
    for f in WAITS {
        let (got, want) = (ms.get(f).copied().unwrap_or(0.0), known[f]);
        assert!(within(got, want), "{f}: {got:.1} ms, {want} known: {ms:?}");
    }
    assert_eq!(ms.get("spin"), None, "{ms:?}");
    // The stacks go on below the blocked function: perf unwound them
    // from the registers and stack copied at the switch. (perf 6.1's
    // script prints a sample's chain only with `ip` among the fields.)
    let o = perf::on_file(&["script", "-F", "event,ip,sym"], &data);
    let out = text(&o.stdout);
    let unwound = out
        .split("\n\n")
        .filter(|s| s.contains("offcpu-time:"))
        .any(|s| s.contains("wait_pipe") && s.contains("main"));
    assert!(
        unwound,
        "no offcpu-time stack from wait_pipe to main:\n{out}"
    );
    // pmx reads its file the same way: the waits are offcpu-time's rows.
    let o = pmx(&[
        "report",
        "--stdio",
        "-s",
        "sym",
        "--event",
        "offcpu-time",
        "-i",
        file,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for f in WAITS {
        assert!(text(&o.stdout).contains(f), "{f}:\n{}", text(&o.stdout));
    }
    // Summing short waits needs stacks to sum by: refused with dwarf.
    let o = pmx(&[
        "record",
        "-q",
        "--off-cpu",
        "--off-cpu-thresh",
        "1",
        "--call-graph",
        "dwarf",
        "-o",
        file,
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--off-cpu-thresh"),
        "{}",
        text(&o.stderr)
    );
}
