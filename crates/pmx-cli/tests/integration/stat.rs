//! `pmx stat` on the real kernel: software events, breakpoints, msr,
//! exit statuses. Runs the real binary and `pmx-workload`.

use crate::common::{pmx, stderr, PMX};
use pmx_testkit::process::interrupt_after;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const WORK: &str = env!("CARGO_BIN_EXE_pmx-workload");

/// Parse `-x,` output: (domain, value, event, status, reason) per line.
fn csv_rows(o: &Output) -> Vec<Vec<String>> {
    stderr(o)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("pmx"))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn value_of(o: &Output, event: &str) -> f64 {
    let rows = csv_rows(o);
    let row = rows
        .iter()
        .find(|r| r.get(3).map(String::as_str) == Some(event))
        .unwrap_or_else(|| panic!("no row for {event} in {}", stderr(o)));
    row[1]
        .parse()
        .unwrap_or_else(|_| panic!("no value for {event}: {row:?}"))
}

fn faults(args: &[&str]) -> f64 {
    let mut a = vec!["stat", "-e", "page-faults", "-x,", "--", WORK];
    a.extend_from_slice(args);
    let o = pmx(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    value_of(&o, "page-faults")
}

fn median_of(n: usize, f: impl Fn() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..n).map(|_| f()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[n / 2]
}

fn min_of(n: usize, f: impl Fn() -> f64) -> f64 {
    (0..n).map(|_| f()).fold(f64::INFINITY, f64::min)
}

#[test]
fn page_faults_are_exact() {
    let n = 1000.0;
    // The runtime's own faults vary by one or two between runs (address
    // randomisation moves the stack and heap across page boundaries), so
    // compare the medians of several runs each. pmx-perf's tests show the
    // exact count without a runtime around it.
    let control = median_of(9, || faults(&["pages", "0"]));
    let measured = median_of(9, || faults(&["pages", "1000"]));
    let extra = measured - control;
    assert!(
        (extra - n).abs() <= 3.0,
        "control {control}, measured {measured}: {extra} extra faults, expected {n}"
    );
}

#[test]
fn children_are_counted_unless_no_inherit() {
    let n = 600.0;
    let control = min_of(2, || faults(&["fork-pages", "0"]));
    let with = min_of(2, || faults(&["fork-pages", "600"]));
    assert!(
        (with - control - n).abs() <= 10.0,
        "inherit: control {control}, with child {with}"
    );
    let o = pmx(&[
        "stat",
        "-e",
        "page-faults",
        "-x,",
        "--no-inherit",
        "--",
        WORK,
        "fork-pages",
        "600",
    ]);
    assert!(o.status.success());
    let parent_only = value_of(&o, "page-faults");
    assert!(
        parent_only < control + 50.0,
        "no-inherit counted the child: {parent_only} vs control {control}"
    );
}

#[test]
fn per_cpu_rows_for_every_cpu() {
    let o = pmx(&[
        "stat",
        "-a",
        "-A",
        "-e",
        "task-clock,context-switches",
        "-x,",
        "--duration",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&o);
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let task: Vec<&Vec<String>> = rows.iter().filter(|r| r[3] == "task-clock").collect();
    assert_eq!(task.len(), ncpu, "{}", stderr(&o));
    for (i, r) in task.iter().enumerate() {
        assert_eq!(r[0], format!("CPU{i}"));
        let ms: f64 = r[1].parse().unwrap();
        assert!(ms > 50.0, "CPU{i} task-clock {ms} ms over 200 ms");
    }
}

fn no_aslr(args: &[&str]) -> Vec<String> {
    let mut v = vec![
        "setarch".to_string(),
        "x86_64".into(),
        "-R".into(),
        WORK.into(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

fn target_addr() -> Option<String> {
    let out = Command::new("setarch")
        .args(["x86_64", "-R", WORK, "addr"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn breakpoints_count_exact_writes_and_the_fifth_is_refused() {
    let Some(addr) = target_addr() else {
        pmx_testkit::skip("setarch -R is not available to fix the workload's address");
        return;
    };
    let ev = format!("mem:{addr}/8:w");
    let writes = |n: &str| {
        let mut a: Vec<String> = ["stat", "-e", ev.as_str(), "-x,", "--"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(no_aslr(&["writes", n]));
        let o = Command::new(PMX).args(&a).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        value_of(&o, &ev)
    };
    // `setarch` itself runs at the same address before it execs the
    // workload and writes there a few times: subtract a control run.
    let control = writes("0");
    assert_eq!(writes("12345") - control, 12345.0);
    assert_eq!(writes("7") - control, 7.0);

    let five = vec![ev.clone(); 5].join(",");
    let mut a: Vec<String> = ["stat", "-e", five.as_str(), "-x,", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(no_aslr(&["writes", "10"]));
    let o = Command::new(PMX).args(&a).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&o);
    assert_eq!(rows.len(), 5, "{}", stderr(&o));
    assert_eq!(
        rows.iter().filter(|r| r[4] == "counted").count(),
        4,
        "{}",
        stderr(&o)
    );
    let refused = rows
        .iter()
        .find(|r| r[4] == "not-supported")
        .expect("a refused breakpoint");
    assert!(refused[10].contains("debug register"), "{refused:?}");
}

#[test]
fn msr_tsc_counts() {
    if !std::path::Path::new("/sys/bus/event_source/devices/msr").exists() {
        pmx_testkit::skip("no msr PMU");
        return;
    }
    let o = pmx(&["stat", "-e", "msr/tsc/", "-x,", "-a", "--duration", "0.1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(value_of(&o, "msr/tsc/") > 1e6, "{}", stderr(&o));
}

#[test]
fn hardware_events_are_not_supported_here_and_the_run_goes_on() {
    let o = pmx(&["stat", "-e", "cycles,instructions,task-clock", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stderr(&o);
    let unsupported = text
        .lines()
        .filter(|l| l.contains("<not supported>"))
        .count();
    let hw = std::fs::metadata("/sys/bus/event_source/devices/cpu").is_ok();
    if !hw {
        assert_eq!(unsupported, 2, "{text}");
    }
    assert!(text.contains("task-clock"));
}

#[test]
fn exit_statuses() {
    let o = pmx(&["stat", "-e", "task-clock", "--", WORK, "exit", "3"]);
    assert_eq!(o.status.code(), Some(3));
    let o = pmx(&["stat", "-e", "task-clock", "--", WORK, "kill", "9"]);
    assert_eq!(o.status.code(), Some(128 + 9));
    let o = pmx(&["stat", "-e", "task-clock", "--", "/nonexistent/command"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    // No target and no command: every CPU, as perf (here for 0.2 s: the
    // clock counts on each CPU, idle or not).
    let o = pmx(&["stat", "-e", "task-clock", "-x,", "--duration", "0.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ms = value_of(&o, "task-clock");
    assert!(ms > 150.0, "task-clock {ms}");
    let o = pmx(&["stat", "-e", "cylces", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean 'cycles'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn json_and_repeats() {
    let o = pmx(&[
        "stat",
        "-e",
        "page-faults,task-clock",
        "--json",
        "-r",
        "3",
        "--",
        WORK,
        "pages",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(j["runs"], 3);
    let ev = &j["events"][0];
    assert_eq!(ev["event"], "page-faults");
    assert_eq!(ev["status"], "counted");
    assert!(ev["spread"]["stddev"].as_f64().is_some());
    assert!(ev["value"].as_f64().unwrap() >= 100.0);
}

#[test]
fn ctrl_c_prints_counts_and_forwards_the_signal() {
    let child = Command::new(PMX)
        .args(["stat", "-e", "task-clock", "-x,", "--", WORK, "spin", "20"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = interrupt_after(child, Duration::from_millis(600));
    assert_eq!(o.status.code(), Some(128 + libc::SIGINT), "{}", stderr(&o));
    // ~600 ms on an idle machine; a loaded one gives the spinner less.
    let ms = value_of(&o, "task-clock");
    assert!(ms > 1.0 && ms < 15_000.0, "task-clock {ms}");
}

/// perf's `-r 0`: the command again and again, each run printed on its
/// own, until Ctrl-C.
#[test]
fn repeat_zero_runs_until_interrupted() {
    let child = Command::new(PMX)
        .args(["stat", "-r", "0", "-e", "task-clock", "-x,", "--", WORK])
        .args(["spin", "0.05"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = interrupt_after(child, Duration::from_millis(1500));
    let runs = stderr(&o)
        .lines()
        .filter(|l| l.contains(",task-clock,"))
        .count();
    assert!(runs >= 2, "one line per run: {}", stderr(&o));
    assert!(!stderr(&o).contains("runs"), "{}", stderr(&o));
}

#[test]
fn attach_to_a_pid_until_it_exits() {
    let mut w = Command::new(WORK).args(["spin", "0.5"]).spawn().unwrap();
    let pid = w.id().to_string();
    let o = pmx(&[
        "stat",
        "-e",
        "task-clock",
        "-x,",
        "-p",
        &pid,
        "--per-thread",
    ]);
    let _ = w.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&o);
    assert_eq!(rows.len(), 1, "{}", stderr(&o));
    assert_eq!(rows[0][0], format!("tid {pid}"));
}

fn interval_lines(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("pmx"))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn interval_deltas_add_up_to_the_totals() {
    let o = pmx(&[
        "stat",
        "-I",
        "50",
        "-x,",
        "-e",
        "page-faults,task-clock",
        "--",
        WORK,
        "spin",
        "0.3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    let rows = interval_lines(&text);
    assert!(rows.len() >= 8, "{text}");
    for event in ["page-faults", "task-clock"] {
        let raw_sum: u64 = rows
            .iter()
            .filter(|r| r[4] == event)
            .map(|r| r[7].parse::<u64>().unwrap())
            .sum();
        let total: u64 = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|r| r.len() > 6 && r[3] == event)
            .map(|r| r[6].parse().unwrap())
            .unwrap_or_else(|| panic!("no total for {event}: {text}"));
        assert_eq!(
            raw_sum, total,
            "{event}: intervals {raw_sum} vs total {total}"
        );
    }
}

/// System-wide software groups are read at each boundary from per-CPU
/// ring samples (tickers): every CPU's deltas must add up to its totals,
/// and each full interval's cpu-clock must be about the interval (a sample
/// attributed to the wrong boundary would show 0 and 2 intervals).
#[test]
fn system_wide_intervals_add_up_per_cpu_and_follow_the_grid() {
    let o = pmx(&[
        "stat",
        "-I",
        "20",
        "-a",
        "-A",
        "-x,",
        "-e",
        "cpu-clock,context-switches,page-faults",
        "--duration",
        "0.4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    let rows = interval_lines(&text);
    let totals: Vec<Vec<&str>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r.len() > 6)
        .collect();
    let cpus: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert!(!cpus.is_empty(), "{text}");
    for cpu in &cpus {
        for event in ["cpu-clock", "context-switches", "page-faults"] {
            let sum: u64 = rows
                .iter()
                .filter(|r| r[1] == *cpu && r[4] == event)
                .map(|r| r[7].parse::<u64>().unwrap())
                .sum();
            let total: u64 = totals
                .iter()
                .find(|r| r[0] == *cpu && r[3] == event)
                .map(|r| r[6].parse().unwrap())
                .unwrap_or_else(|| panic!("no total for {cpu} {event}: {text}"));
            assert_eq!(
                sum, total,
                "{cpu} {event}: intervals {sum} vs total {total}"
            );
        }
        let clock: Vec<f64> = rows
            .iter()
            .filter(|r| r[1] == *cpu && r[4] == "cpu-clock")
            .map(|r| r[7].parse::<f64>().unwrap() / 1e6)
            .collect();
        assert!(clock.len() >= 15, "{text}");
        // The first and the partial last interval aside. A loaded machine
        // may read a boundary a period late: that row then holds two
        // periods (about 40 ms) and the run has a row less. A sample
        // given to the wrong boundary shows as an interval near 0 beside
        // one of two periods, so each interval must be about a whole,
        // non-zero number of periods.
        let inner = &clock[1..clock.len() - 1];
        let off = inner
            .iter()
            .filter(|&&ms| {
                let periods = (ms / 20.0).round();
                periods < 1.0 || (ms - 20.0 * periods).abs() > 10.0
            })
            .count();
        assert!(
            off * 5 <= inner.len(),
            "{cpu}: cpu-clock per 20 ms interval should be a whole number of periods: {clock:?}"
        );
    }
}

#[test]
fn interval_count_per_cpu_rows() {
    let o = pmx(&[
        "stat",
        "-I",
        "20",
        "--interval-count",
        "5",
        "-a",
        "-A",
        "-x,",
        "-e",
        "task-clock,context-switches,page-faults",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let rows = interval_lines(&stderr(&o));
    assert_eq!(rows.len(), 5 * ncpu * 3, "{}", stderr(&o));
    let times: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(times.len(), 5);
    // Exactly 5 intervals were measured: the totals are their sum.
    let text = stderr(&o);
    let totals: Vec<Vec<&str>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r.len() > 6)
        .collect();
    assert_eq!(totals.len(), ncpu * 3, "{text}");
    for r in totals {
        let sum: u64 = rows
            .iter()
            .filter(|x| x[1] == r[0] && x[4] == r[3])
            .map(|x| x[7].parse::<u64>().unwrap())
            .sum();
        assert_eq!(
            sum,
            r[6].parse::<u64>().unwrap(),
            "{} {}: {text}",
            r[0],
            r[3]
        );
    }
}

#[test]
fn sigint_leaves_a_complete_interval_file() {
    let dir = std::env::temp_dir().join(format!("pmx-stat-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("run.jsonl");
    let child = crate::common::spawn_system_intervals("100", "--json", &file);
    // Interrupt once 8 intervals are written (about 0.85 s on an idle
    // machine; a loaded one starts pmx later). Until pmx ends they are in
    // its temporary file beside the named one (pmx-io's `OutFile`), so
    // every file of the directory is read.
    let latest = || {
        let files = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        files
            .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
            .flat_map(|text| {
                (text.lines())
                    .filter_map(|l| {
                        serde_json::from_str::<serde_json::Value>(l).ok()?["time"].as_f64()
                    })
                    .collect::<Vec<_>>()
            })
            .fold(0.0, f64::max)
    };
    let start = std::time::Instant::now();
    while latest() < 0.75 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = latest();
    let o = interrupt_after(child, Duration::from_millis(150));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with('\n'));
    let mut last_time = 0.0;
    let mut intervals = 0;
    let mut totals = 0;
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match v.get("time").and_then(|t| t.as_f64()) {
            Some(t) => {
                intervals += 1;
                assert!(t >= last_time);
                last_time = t;
            }
            None => totals += 1,
        }
    }
    assert_eq!(totals, 1, "{text}");
    assert!(intervals >= 8 * 2, "{text}");
    // The partial last interval is there: it ends after the last full one.
    assert!(
        last_time > before && last_time > 0.8 && last_time < 40.0,
        "last interval at {last_time}, {before} before the signal"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn software_events_share_one_group_and_one_time_window() {
    let o = pmx(&[
        "stat",
        "-e",
        "task-clock,page-faults,context-switches",
        "--json",
        "--no-multiplex",
        "--",
        WORK,
        "pages",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    let evs = j["events"].as_array().unwrap();
    assert!(evs.iter().all(|e| e["group"] == 0), "{j}");
    let enabled: Vec<u64> = evs
        .iter()
        .map(|e| e["time_enabled_ns"].as_u64().unwrap())
        .collect();
    assert!(
        enabled.windows(2).all(|w| w[0] == w[1]),
        "group members read together: {enabled:?}"
    );
    let notes = j["notes"].to_string();
    assert!(notes.contains("--no-multiplex"), "{notes}");
}

#[test]
fn interval_plot_at_the_end() {
    let dir = std::env::temp_dir().join(format!("pmx-stat-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("run.svg");
    let o = Command::new(PMX)
        .args([
            "stat",
            "-I",
            "50",
            "-a",
            "-A",
            "-e",
            "task-clock",
            "--duration",
            "0.3",
            "--plot",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert_eq!(text.matches("<polyline").count(), ncpu, "one line per CPU");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn metrics_say_which_input_is_missing() {
    let o = pmx(&[
        "stat",
        "-e",
        "task-clock",
        "-M",
        "IPC",
        "--json",
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    let m = &j["metrics"][0];
    assert_eq!(m["name"], "IPC");
    if std::fs::metadata("/sys/bus/event_source/devices/cpu").is_err() {
        assert!(m["value"].is_null());
        let why = m["missing"].as_str().unwrap();
        assert!(
            why.starts_with("IPC ← ") && why.contains("not supported"),
            "{why}"
        );
    }
    let o = pmx(&["stat", "-M", "NoSuchMetric", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn metrics_in_interval_rows() {
    let o = pmx(&[
        "stat",
        "-I",
        "50",
        "-x,",
        "-e",
        "task-clock",
        "-M",
        "IPC",
        "--",
        WORK,
        "spin",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = interval_lines(&stderr(&o));
    let metric_rows: Vec<&Vec<String>> = rows.iter().filter(|r| r[4] == "IPC").collect();
    let times: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        metric_rows.len(),
        times.len(),
        "one IPC line per interval: {}",
        stderr(&o)
    );
    assert!(metric_rows.iter().all(|r| r[5].starts_with("metric")));
}

#[test]
fn per_thread_counts_every_thread_and_child_of_a_command() {
    let o = pmx(&[
        "stat",
        "--per-thread",
        "-e",
        "task-clock",
        "-x,",
        "--",
        WORK,
        "threads",
        "3",
        "0.15",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&o);
    assert_eq!(rows.len(), 4, "main thread + 3 threads: {}", stderr(&o));
    let tids: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(tids.len(), 4);
    // The spinners spin for 0.15 s of wall time; on a loaded machine they
    // get less CPU than that, so compare them with the main thread, which
    // only waits for them.
    let mut ms: Vec<f64> = rows.iter().map(|r| r[1].parse::<f64>().unwrap()).collect();
    ms.sort_by(f64::total_cmp);
    assert!(
        ms[1..].iter().all(|&t| t > 2.0 * ms[0].max(0.5)),
        "the three spinning threads each ran far longer than the waiting main thread: {}",
        stderr(&o)
    );

    let o = pmx(&[
        "stat",
        "--per-thread",
        "-e",
        "page-faults",
        "-x,",
        "--",
        WORK,
        "fork-pages",
        "600",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let faults: Vec<f64> = csv_rows(&o).iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(faults.len(), 2, "{}", stderr(&o));
    assert!(
        faults.iter().any(|&f| f >= 600.0) && faults.iter().any(|&f| f < 300.0),
        "{faults:?}"
    );
}

#[test]
fn per_thread_command_forwards_ctrl_c() {
    let child = Command::new(PMX)
        .args([
            "stat",
            "--per-thread",
            "-e",
            "task-clock",
            "-x,",
            "--",
            WORK,
            "threads",
            "2",
            "20",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = interrupt_after(child, Duration::from_millis(500));
    assert_eq!(o.status.code(), Some(128 + libc::SIGINT), "{}", stderr(&o));
    assert_eq!(csv_rows(&o).len(), 3, "{}", stderr(&o));
}

/// `-M` of a metric whose inputs this machine cannot count, as perf does:
/// the inputs as `<not supported>` rows, the metric not computed, exit 0.
/// An Intel Emerald Rapids metric (`tma_retiring` over `topdown-retiring`
/// and `slots`, which no table names where the kernel shows no core PMU)
/// from Intel's tables and from pmx's own, and an AMD one from perf's.
/// A name that is neither a metric nor a group stays an error (exit 2)
/// with the close names.
#[test]
fn metrics_this_machine_cannot_count_print_their_inputs_not_supported() {
    let (Some(intel), Some(amd)) = (
        pmx_testkit::shared::intel_perfmon(),
        pmx_testkit::shared::linux_perf_events(),
    ) else {
        return;
    };
    let no_pmu = std::fs::metadata("/sys/bus/event_source/devices/cpu").is_err();
    let (intel, amd) = (intel.to_str().unwrap(), amd.to_str().unwrap());
    let emr = ["--cpu", "GenuineIntel-6-CF"];
    let zen4 = ["--cpu", "AuthenticAMD-25-11-1"];
    for (db, metric) in [
        (
            &[&emr[..], &["--events-dir", intel]].concat(),
            "tma_retiring",
        ),
        (
            &[&emr[..], &["--events-dir", intel]].concat(),
            "tma_frontend_bound",
        ),
        (&[&emr[..], &["--events-dir", amd]].concat(), "tma_retiring"),
        (
            &[&zen4[..], &["--events-dir", amd]].concat(),
            "ic_fetch_miss_ratio",
        ),
    ] {
        let args = [
            &["stat", "--format", "perf"][..],
            db,
            &["-M", metric, "true"],
        ]
        .concat();
        let o = pmx(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        if no_pmu {
            assert!(err.contains("<not supported>"), "{args:?}: {err}");
            assert!(!err.contains(&format!("# {metric}")), "{args:?}: {err}");
        }
    }
    let args = [
        &["stat", "--format", "perf"][..],
        &emr,
        &["--events-dir", intel],
    ]
    .concat();
    let o = pmx(&[&args[..], &["-M", "tma_retirng", "true"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("did you mean tma_retiring"),
        "{}",
        stderr(&o)
    );
}
