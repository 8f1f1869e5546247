//! `pmx stat` with perf stat's command line (issue 16, item 1), through
//! the real binary: the command after the options, perf's `-d` sets (the
//! installed perf is the reference), `--topdown` without a PMU, cgroups,
//! the topology aggregations, `--metric-only`, the hooks, and perf
//! options pmx refuses naming themselves.

use crate::common::{pmx, stderr};
use pmx_testkit::skip;
use std::process::Output;

const WORK: &str = env!("CARGO_BIN_EXE_pmx-workload");

/// `-x,` lines as fields (pmx's columns: domain, value, unit, event, …).
fn rows(o: &Output) -> Vec<Vec<String>> {
    stderr(o)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("pmx"))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn events(o: &Output) -> Vec<String> {
    rows(o).into_iter().map(|r| r[3].clone()).collect()
}

fn sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

#[test]
fn the_command_follows_the_options_as_in_perf() {
    let o = pmx(&["stat", "-e", "task-clock", "-x,", WORK, "exit", "3"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(rows(&o)[0][4], "counted");
    // Options of the command stay the command's, after its name.
    let o = pmx(&[
        "stat",
        "-r",
        "2",
        "-x,",
        "-e",
        "page-faults",
        WORK,
        "pages",
        "300",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let faults: f64 = rows(&o)[0][1].parse().unwrap();
    assert!(faults >= 300.0, "{faults}");
    let o = pmx(&["stat", "-e", "task-clock", "--", WORK, "exit", "4"]);
    assert_eq!(o.status.code(), Some(4), "-- still works");
}

#[test]
fn detailed_sets_are_perfs() {
    // perf 6.1's builtin-stat.c: default_attrs, then detailed_attrs (-d),
    // very_detailed_attrs (-dd), very_very_detailed_attrs (-ddd).
    let mut want = vec![
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "cycles",
        "instructions",
        "branches",
        "branch-misses",
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ];
    let stalls = "/sys/bus/event_source/devices/cpu/events/stalled-cycles-frontend";
    if std::path::Path::new(stalls).exists() {
        want.insert(5, "stalled-cycles-frontend");
    }
    let o = pmx(&["stat", "-d", "-x,", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(events(&o), want);
    let o = pmx(&["stat", "-ddd", "-x,", "true"]);
    let got = events(&o);
    assert_eq!(got.len(), want.len() + 8, "{got:?}");
    assert_eq!(
        got.last().map(String::as_str),
        Some("L1-dcache-prefetch-misses")
    );
    // The installed perf prints the same events in the same order.
    match std::process::Command::new("perf")
        .args(["stat", "-ddd", "-x,", "true"])
        .output()
    {
        Ok(p) if p.status.success() => {
            let perf: Vec<String> = stderr(&p)
                .lines()
                .filter(|l| l.split(',').count() > 3)
                .map(|l| l.split(',').nth(2).unwrap_or("").to_string())
                .collect();
            assert_eq!(got, perf);
        }
        _ => skip("perf is not installed: -ddd compared with the hand-written list only"),
    }
}

#[test]
fn topdown_says_there_is_no_pmu() {
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        return skip("this machine has a core PMU: the no-PMU message is not shown");
    }
    let o = pmx(&["stat", "--topdown", "-a", "sleep", "0.1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("this machine has no hardware PMU"),
        "{}",
        stderr(&o)
    );
}

/// The cgroup v2 mount, as /proc/self/mounts lists it.
fn cgroup2() -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"cgroup2")).then(|| f[1].to_string())
    })
}

#[test]
fn cgroup_counts_only_its_tasks_and_names_itself() {
    let Some(root) = cgroup2() else {
        return skip("no cgroup v2 mount");
    };
    let name = format!("pmx-test-{}", std::process::id());
    let dir = format!("{root}/{name}");
    if std::fs::create_dir(&dir).is_err() {
        return skip(format!("cgroup v2 at {root} is not writable"));
    }
    // The command moves itself into the cgroup, then works there.
    let script = format!("echo $$ > {dir}/cgroup.procs && exec {WORK} work 30");
    let o = pmx(&[
        "stat",
        "-G",
        &name,
        "-a",
        "-x,",
        "-e",
        "task-clock",
        "sh",
        "-c",
        &script,
    ]);
    let j = pmx(&[
        "stat",
        "--for-each-cgroup",
        &name,
        "-a",
        "-j",
        "-e",
        "cpu-clock",
        "true",
    ]);
    let bad = pmx(&["stat", "-G", "pmx-no-such-cgroup", "-a", "true"]);
    let _ = std::fs::remove_dir(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = &rows(&o)[0];
    assert_eq!(r[3], format!("task-clock (cgroup {name})"));
    let ms: f64 = r[1].parse().unwrap_or(0.0);
    assert!(ms > 0.0, "the work ran in the cgroup: {r:?}");
    assert!(
        stderr(&j).contains(&format!("cpu-clock (cgroup {name})")),
        "{}",
        stderr(&j)
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("no such cgroup"), "{}", stderr(&bad));
}

#[test]
fn per_die_node_and_cache_follow_sysfs() {
    let cpu0 = "/sys/devices/system/cpu/cpu0";
    let (Some(pkg), Some(die)) = (
        sysfs(&format!("{cpu0}/topology/physical_package_id")),
        sysfs(&format!("{cpu0}/topology/die_id")),
    ) else {
        return skip("no topology in sysfs");
    };
    let label = |flag: &str| {
        let o = pmx(&[
            "stat",
            flag,
            "-a",
            "-x,",
            "-e",
            "cpu-clock",
            "sleep",
            "0.05",
        ]);
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        rows(&o)
            .into_iter()
            .map(|r| r[0].clone())
            .collect::<Vec<_>>()
    };
    assert!(label("--per-die").contains(&format!("S{pkg}-D{die}")));
    if std::path::Path::new(&format!("{cpu0}/node0")).exists() {
        assert!(label("--per-node").contains(&"N0".to_string()));
    }
    if let Some(id) = sysfs(&format!("{cpu0}/cache/index3/id")) {
        assert!(label("--per-cache").contains(&format!("S{pkg}-D{die}-L3-ID{id}")));
    }
    let o = pmx(&["stat", "--per-die", "-e", "task-clock", "true"]);
    assert_eq!(o.status.code(), Some(2), "needs -a");
}

#[test]
fn metric_only_prints_the_metrics_alone() {
    let o = pmx(&["stat", "--metric-only", "-M", "IPC", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("IPC"), "{e}");
    assert!(
        !e.contains("instructions  ") && !e.contains("cycles "),
        "{e}"
    );
    let o = pmx(&["stat", "--metric-only", "-M", "IPC", "-x,", "true"]);
    assert!(rows(&o).iter().all(|r| r[3] == "IPC"), "{}", stderr(&o));
}

#[test]
fn perf_options_pmx_refuses_name_themselves() {
    for opt in ["--smi-cost", "-T", "--bpf-counters", "--iostat"] {
        let o = pmx(&["stat", opt, "true"]);
        assert_eq!(o.status.code(), Some(2), "{opt}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("perf stat option {opt} is not supported")),
            "{e}"
        );
        assert!(!e.contains("unexpected argument"), "{e}");
    }
    // Bad input keeps its caret and close matches.
    let o = pmx(&["stat", "-e", "task-clok", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains('^') && stderr(&o).contains("task-clock"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn null_delay_privilege_quiet() {
    let o = pmx(&["stat", "-D", "-1", "-x,", "-e", "task-clock", "true"]);
    assert_eq!(rows(&o)[0][4], "not-counted", "-D -1 never starts");
    let o = pmx(&["stat", "-n", "-x,", "true"]);
    assert!(o.status.success() && rows(&o).is_empty(), "{}", stderr(&o));
    let o = pmx(&[
        "stat",
        "--all-user",
        "-v",
        "-x,",
        "-e",
        "page-faults",
        "true",
    ]);
    assert!(
        stderr(&o).contains("page-faults: type 1 config 0x2")
            && stderr(&o).contains("exclude_kernel")
    );
    let o = pmx(&["stat", "-q", "-e", "task-clock", WORK, "exit", "5"]);
    assert_eq!(o.status.code(), Some(5));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let o = pmx(&[
        "stat",
        "--pre",
        "echo pre >&2",
        "--post",
        "echo post >&2",
        "-x,",
        "-e",
        "task-clock",
        "true",
    ]);
    let e = stderr(&o);
    assert!(e.starts_with("pre\n") && e.contains("post\n"), "{e}");
}
