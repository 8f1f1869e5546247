//! `pmx record` with perf's per-event terms and modifiers: for each event
//! string, Debian's `perf record` and `pmx record` record `true`, and the
//! installed `perf evlist -v` reads both files; the event's name and the
//! attr fields the grammar decides (the sample period or frequency,
//! `freq`, `inherit`, the privilege filters, `exclude_guest`, call chains,
//! `sample_max_stack`, and with `call-graph=dwarf` the user registers,
//! stack size, `exclude_callchain_user` and `mmap_data`) must be the same. The fields a session chooses
//! (`sample_type` beyond call chains, `read_format`, side-band bits) are
//! pmx's own (README, "Event syntax"). And `pmx explain` shows the attr
//! of perf's forms, the flags modifiers set included.

use crate::common::PMX;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `perf evlist -v -i FILE`: the first event's name and its fields.
fn evlist(file: &Path) -> (String, BTreeMap<String, String>) {
    let out = Command::new("perf")
        .args(["evlist", "-v", "-i"])
        .arg(file)
        .env("LC_ALL", "C")
        .output()
        .expect("run perf evlist");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().next().unwrap_or("").to_string();
    let (name, rest) = line.split_once(": ").unwrap_or((&line, ""));
    let mut fields = BTreeMap::new();
    // `{ sample_period, sample_freq }: 4000` holds a ", " of its own.
    let rest = rest.replace("{ sample_period, sample_freq }", "sample_period");
    for part in rest.split(", ") {
        if let Some((k, v)) = part.split_once(": ") {
            fields.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    (name.to_string(), fields)
}

const COMPARED: &[&str] = &[
    "type",
    "config",
    "sample_period",
    "freq",
    "inherit",
    "exclude_user",
    "exclude_kernel",
    "exclude_hv",
    "exclude_guest",
    "exclude_host",
    "sample_max_stack",
    "sample_regs_user",
    "sample_stack_user",
    "exclude_callchain_user",
    "mmap_data",
];

#[test]
fn per_event_terms_make_perfs_sampling_attr() {
    if !pmx_testkit::perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let events = [
        "cpu-clock",
        "cpu-clock/freq=100/",
        "cpu-clock/period=100000,no-inherit/",
        "cpu-clock/inherit,call-graph=no/",
        "cpu-clock/max-stack=10,call-graph=fp/",
        "cpu-clock/call-graph=dwarf,stack-size=4096/",
        "cpu-clock/name=clk/u",
        "1:0:k",
        "cpu-clock//H",
    ];
    // perf record takes a second and a half to record `true`: all at once.
    let files: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = events
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let theirs = dir.path().join(format!("perf{i}.data"));
                let ours = dir.path().join(format!("pmx{i}.data"));
                s.spawn(move || {
                    let p = Command::new("perf")
                        .args(["record", "-q", "-o"])
                        .arg(&theirs)
                        .args(["-e", event, "true"])
                        .output()
                        .unwrap();
                    assert!(p.status.success(), "perf record -e {event}: {p:?}");
                    let o = Command::new(PMX)
                        .args(["record", "-o"])
                        .arg(&ours)
                        .args(["-e", event, "--", "true"])
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "pmx record -e {event}: {o:?}");
                    (theirs, ours)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (event, (theirs, ours)) in events.iter().zip(&files) {
        let (pn, pf) = evlist(theirs);
        let (xn, xf) = evlist(ours);
        if pn != xn {
            failures.push(format!("{event}: perf names it {pn:?}, pmx {xn:?}"));
        }
        for f in COMPARED {
            if pf.get(*f) != xf.get(*f) {
                failures.push(format!(
                    "{event}: {f} perf {:?}, pmx {:?}",
                    pf.get(*f),
                    xf.get(*f)
                ));
            }
        }
        let chain = |m: &BTreeMap<String, String>| {
            m.get("sample_type")
                .is_some_and(|t| t.split('|').any(|b| b == "CALLCHAIN"))
        };
        if chain(&pf) != chain(&xf) {
            failures.push(format!(
                "{event}: CALLCHAIN perf {}, pmx {}",
                chain(&pf),
                chain(&xf)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn terms_pmx_record_cannot_honour_are_refused_by_name() {
    for (event, word) in [
        (
            "cpu-clock/stack-size=4096/",
            "stack-size= goes with call-graph=dwarf",
        ),
        ("cpu-clock/aux-output/", "aux-output"),
        // Groups are recorded, but with one sample layout per file.
        (
            "{cpu-clock/call-graph=fp/,task-clock}",
            "call chains are recorded the same way for every event",
        ),
    ] {
        let o = Command::new(PMX)
            .args(["record", "-o", "/dev/null", "-e", event, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{event}: {err}");
        assert!(err.contains(word), "{event}: {err}");
    }
}

#[test]
fn explain_shows_the_attr_of_perf_forms() {
    let o = Command::new(PMX)
        .args([
            "explain",
            "--no-libpfm",
            "cycles/period=1000,config2=3/DIe",
            "1:1:hp",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    // Written from perf's rules: D pinned, e exclusive, I exclude_idle;
    // own modifiers without u/p clear exclude_guest; 1:1:hp is
    // task-clock, user and kernel excluded, precise_ip 1, exclude_guest.
    assert!(
        out.contains("type=0 (PERF_TYPE_HARDWARE) config=0x0 config1=0x0 config2=0x3"),
        "{out}"
    );
    assert!(out.contains("exclude_guest=0 exclude_host=0 precise_ip=0\n               pinned=1 exclusive=1 exclude_idle=1 sample_period=1000"), "{out}");
    assert!(
        out.contains("type=1 (PERF_TYPE_SOFTWARE) config=0x1"),
        "{out}"
    );
    assert!(out.contains("exclude_user=1 exclude_kernel=1 exclude_hv=0 exclude_guest=1 exclude_host=0 precise_ip=1"), "{out}");
}
