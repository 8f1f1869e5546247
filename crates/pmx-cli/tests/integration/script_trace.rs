//! Tracepoints as perf shows them: `pmx script` of tracepoint recordings
//! made here by perf (sched_switch, sched_wakeup, openat, softirqs; the
//! whole system, and a child with call chains) line for line against
//! `perf script`, `-F trace`; pmx's own tracepoint recordings read by
//! perf with their fields; a real `--switch-events --namespaces`
//! recording's side-band records; a damaged TRACING_DATA refused.

use crate::common::pmx;
use pmx_testkit::{perf, text};
use std::path::Path;
use std::process::{Command, Stdio};

const EVENTS: &str =
    "sched:sched_switch,sched:sched_wakeup,syscalls:sys_enter_openat,irq:softirq_entry";

fn perf_record(out: &Path, args: &[&str]) -> bool {
    let o = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(out)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run perf");
    if !o.status.success() {
        pmx_testkit::skip(format_args!(
            "perf record {args:?}: {}",
            text(&o.stderr).trim()
        ));
    }
    o.status.success()
}

fn pmx_script(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["script", "-i", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert!(o.status.success(), "pmx {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn perf_script(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["script"];
    all.extend_from_slice(args);
    let o = perf::on_file(&all, file);
    assert!(o.status.success(), "perf {all:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// Every line the same; the number of lines.
fn same_lines(ours: &str, theirs: &str, what: &str) -> usize {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "{what}: line {} differs", i + 1);
    }
    assert_eq!(a.len(), b.len(), "{what}: line counts differ");
    a.len()
}

#[test]
fn perf_tracepoint_recordings_print_as_perf_prints_them() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tp.data");
    let args = ["-e", EVENTS, "-a", "--", "sleep", "0.2"];
    if !perf_record(&f, &args) {
        return;
    }
    let n = same_lines(&pmx_script(&f, &[]), &perf_script(&f, &[]), "default");
    assert!(n > 10, "{n} lines");
    let ours = pmx_script(&f, &[]);
    for field in [
        "prev_state=",
        "==> next_comm=",
        "target_cpu=",
        "filename: 0x",
    ] {
        assert!(ours.contains(field), "no {field} in\n{ours}");
    }
    for spec in ["trace", "comm,tid,event,trace", "trace:time,cpu,trace"] {
        same_lines(
            &pmx_script(&f, &["-F", spec]),
            &perf_script(&f, &["-F", spec]),
            spec,
        );
    }
}

#[test]
fn tracepoint_call_chains_print_under_their_fields() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("g.data");
    let args = ["-g", "-e", "sched:sched_switch", "--", "sleep", "0.1"];
    if !perf_record(&f, &args) {
        return;
    }
    // Kernel frames may be named differently by the two (perf's kernel
    // map against pmx's kallsyms): the sample lines must agree, and the
    // frames' count and addresses.
    let ours = pmx_script(&f, &[]);
    let theirs = perf_script(&f, &[]);
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "{ours}\n--- perf:\n{theirs}");
    for (x, y) in a.iter().zip(&b) {
        if x.starts_with('\t') {
            assert_eq!(x.split_whitespace().next(), y.split_whitespace().next());
        } else {
            assert_eq!(x, y);
        }
    }
    assert!(ours.contains("prev_state=S"), "{ours}");
}

#[test]
fn pmx_tracepoint_recordings_carry_the_formats_perf_needs() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pmx.data");
    let o = pmx(&[
        "record",
        "-q",
        "-e",
        EVENTS,
        "-a",
        "-o",
        f.to_str().unwrap(),
        "--",
        "sleep",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let theirs = perf_script(&f, &[]);
    assert!(theirs.contains("prev_state="), "{theirs}");
    same_lines(&pmx_script(&f, &[]), &theirs, "pmx's recording");
    // The samples carry their raw data: perf's -F trace prints each.
    let fields = perf_script(&f, &["-F", "trace"]);
    assert!(fields.lines().all(|l| !l.trim().is_empty()), "{fields}");
}

#[test]
fn switch_and_namespace_records_print_as_perf() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../../shared/data/perfdata/perf_data_converter__perf.data.ctx_switch_namespaces-4.14",
    );
    if !file.exists() {
        pmx_testkit::skip(format_args!("{} is absent", file.display()));
        return;
    }
    let args = ["--show-switch-events", "--show-namespace-events"];
    let ours = pmx_script(&file, &args);
    assert!(ours.contains("PERF_RECORD_SWITCH OUT        \n"), "{ours}");
    assert!(
        ours.contains("PERF_RECORD_NAMESPACES 5969/5969 - nr_namespaces: 7"),
        "{ours}"
    );
    // Without the flags, only the samples.
    assert!(!pmx_script(&file, &[]).contains("PERF_RECORD"));
    if perf::require("perf's side of the switch records") {
        same_lines(&ours, &perf_script(&file, &args), "switch events");
    }
}

#[test]
fn pmx_switch_events_are_recorded_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sw.data");
    let o = pmx(&[
        "record",
        "-q",
        "--switch-events",
        "-e",
        "cpu-clock",
        "-o",
        f.to_str().unwrap(),
        "--",
        "sleep",
        "0.05",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ours = pmx_script(&f, &["--show-switch-events"]);
    assert!(ours.contains("PERF_RECORD_SWITCH OUT"), "{ours}");
    assert!(ours.contains("PERF_RECORD_SWITCH IN"), "{ours}");
    if perf::require("perf's side") {
        same_lines(
            &ours,
            &perf_script(&f, &["--show-switch-events"]),
            "pmx --switch-events",
        );
    }
}

#[test]
fn a_damaged_tracing_data_is_refused_in_one_sentence() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tp.data");
    if !perf_record(&f, &["-e", "sched:sched_switch", "--", "sleep", "0.01"]) {
        return;
    }
    let mut bytes = std::fs::read(&f).unwrap();
    let magic = b"\x17\x08\x44tracing";
    let at = (bytes.windows(magic.len()))
        .rposition(|w| w == magic)
        .expect("the tracing data's magic");
    // Past the magic and version, the header_page name: its bytes garbled.
    bytes[at + 22..at + 30].copy_from_slice(b"XXXXXXXX");
    let bad = dir.path().join("bad.data");
    std::fs::write(&bad, &bytes).unwrap();
    let o = pmx(&["script", "-i", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(err.contains("TRACING_DATA"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Without the fields, the samples still print.
    let plain = pmx_script(&bad, &["-F", "-trace"]);
    assert!(plain.contains("sched:sched_switch"), "{plain}");
}

/// `script -i -` of a stream in `file`.
fn script_stdin(program: &str, file: &Path) -> String {
    let mut cmd = match program {
        "pmx" => Command::new(crate::common::PMX),
        _ => Command::new("perf"),
    };
    let o = cmd
        .args(["script", "-i", "-"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .expect("run script");
    assert!(o.status.success(), "{program}: {}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn pipe_streams_carry_the_formats_both_ways() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // perf's stream read by pmx.
    let theirs = dir.path().join("perf.pipe");
    let o = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch,sched:sched_wakeup",
            "-o",
            "-",
        ])
        .args(["--", "sleep", "0.05"])
        .stdout(std::fs::File::create(&theirs).unwrap())
        .output()
        .unwrap();
    if !o.status.success() {
        pmx_testkit::skip(format_args!("perf record -o -: {}", text(&o.stderr)));
        return;
    }
    let ours = script_stdin("pmx", &theirs);
    assert!(ours.contains("prev_state="), "{ours}");
    same_lines(&ours, &script_stdin("perf", &theirs), "perf's stream");
    // pmx's stream read by perf.
    let mine = dir.path().join("pmx.pipe");
    let o = Command::new(crate::common::PMX)
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-o",
            "-",
            "--",
            "sleep",
            "0.05",
        ])
        .stdout(std::fs::File::create(&mine).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let theirs = script_stdin("perf", &mine);
    assert!(theirs.contains("prev_state="), "{theirs}");
    same_lines(&script_stdin("pmx", &mine), &theirs, "pmx's stream");
}
