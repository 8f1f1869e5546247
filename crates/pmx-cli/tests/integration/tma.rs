//! `pmx tma -- CMD`: counts the top-down tree's inputs for a command and
//! prints the tree. On a machine without a hardware PMU (a VM without a
//! virtual PMU, like the AMD Zen 4 VM this was written on) it must still
//! run the command, say plainly which events are not available and why,
//! and exit with the command's status. Where the PMU does count, the tree
//! has values instead; the test accepts either and checks the shape.

use crate::common::pmx;

fn has_hardware_pmu() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        || std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists()
}

#[test]
fn tma_level2_runs_and_explains() {
    let out = pmx(&["tma", "-l", "2", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no top-down metrics are known") {
        pmx_testkit::skip(format_args!("no top-down tree for this CPU: {err}"));
        assert_eq!(out.status.code(), Some(2));
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("Top-down analysis to level 2"), "{err}");
    assert!(err.contains("Bottleneck:"), "{err}");
    if !has_hardware_pmu() {
        assert!(err.contains("are not available here"), "{err}");
        assert!(err.contains("why: "), "{err}");
        assert!(err.contains("no hardware PMU"), "{err}");
        assert!(err.contains("not available here"), "{err}");
    }
}

#[test]
fn tma_exits_with_the_command_status() {
    let out = pmx(&["tma", "-l", "2", "--", "sh", "-c", "exit 3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no top-down metrics are known") {
        pmx_testkit::skip("no top-down tree for this CPU");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{err}");
    let out = pmx(&["tma", "--", "/nonexistent/command"]);
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn tma_json_and_an_intel_tree_elsewhere() {
    let out = pmx(&["tma", "--json", "--", "true"]);
    let text = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(2) {
        pmx_testkit::skip("no top-down tree for this CPU");
        return;
    }
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    assert_eq!(v["exit_code"], 0);
    assert!(!v["tma"]["nodes"].as_array().unwrap().is_empty(), "{v}");
    if !has_hardware_pmu() {
        assert!(!v["unavailable"].as_array().unwrap().is_empty(), "{v}");
    }
    // An Intel built-in tree for another CPU: resolves, cannot count here.
    let out = pmx(&["tma", "--cpu", "GenuineIntel-6-55-4", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("tma_frontend_bound") || err.contains("Frontend_Bound"),
        "{err}"
    );
}

#[test]
fn tma_bad_input_exits_2() {
    for args in [
        vec!["tma"],
        vec!["tma", "-l", "0", "--", "true"],
        vec!["tma", "--cpu", "Nonsense", "--", "true"],
    ] {
        let out = pmx(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

/// The Zen 5 tree from perf's tables: every level-1 and level-2 node is
/// shown, each input that cannot be counted here is named with why, and
/// the command's status is the exit status.
#[test]
fn tma_level2_on_zen5_from_perfs_tables() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let d = dir.to_str().unwrap();
    let out = pmx(&[
        "tma",
        "-l",
        "2",
        "--cpu",
        "AuthenticAMD-26-2-1",
        "--events-dir",
        d,
        "--",
        "true",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("Top-down analysis to level 2 (tree from x86/amdzen5/pipeline.json)"),
        "{err}"
    );
    let tree: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("Top-down analysis"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        tree,
        [
            "frontend_bound",
            "frontend_bound_by_latency",
            "frontend_bound_by_bandwidth",
            "bad_speculation",
            "bad_speculation_from_mispredicts",
            "bad_speculation_from_pipeline_restarts",
            "backend_bound",
            "backend_bound_by_memory",
            "backend_bound_by_cpu",
            "smt_contention",
            "retiring",
            "retiring_from_fastpath",
            "retiring_from_microcode",
        ],
        "{err}"
    );
    if !has_hardware_pmu() {
        assert!(err.contains("are not available here"), "{err}");
        assert!(err.contains("why: "), "{err}");
        assert!(err.contains("ls_not_halted_cyc"), "{err}");
    }
    // perf's tables as the second of two --events-dir (an empty first one).
    let empty = std::env::temp_dir().join(format!("pmx-tma-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = pmx(&[
        "tma",
        "--cpu",
        "AuthenticAMD-26-2-1",
        "--events-dir",
        empty.to_str().unwrap(),
        "--events-dir",
        d,
        "--",
        "true",
    ]);
    let _ = std::fs::remove_dir(&empty);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("tree from x86/amdzen5/pipeline.json"), "{err}");
    // Without the tables: pmx's built-in tree (amd_builtin.rs has more).
    let out = pmx(&["tma", "--cpu", "AuthenticAMD-26-2-1", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("(tree from built-in"), "{err}");
}

/// Here (whatever AMD this is): Zen 4 and 5 show the tree, Zen 1–3 say it
/// is unavailable because AMD defines none.
#[test]
fn tma_here_with_perfs_tables() {
    let Some(dir) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !cpuinfo.contains("AuthenticAMD") {
        println!("SKIP: not an AMD machine");
        return;
    }
    let field = |name: &str| -> u32 {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let (family, model) = (field("cpu family"), field("model"));
    let out = pmx(&[
        "tma",
        "-l",
        "2",
        "--events-dir",
        dir.to_str().unwrap(),
        "--",
        "true",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // Family 19h models 10h–1Fh and 60h–AFh are Zen 4; the rest Zen 3.
    let zen4_or_later =
        family >= 0x1a || (family == 0x19 && matches!(model, 0x10..=0x1f | 0x60..=0xaf));
    if zen4_or_later {
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("Top-down analysis to level 2"), "{err}");
        assert!(err.contains("frontend_bound"), "{err}");
        if !has_hardware_pmu() {
            assert!(err.contains("not available here"), "{err}");
        }
    } else {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("the pipeline-utilization tree is unavailable: AMD defines no top-down"),
            "{err}"
        );
    }
}
