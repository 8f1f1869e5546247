//! AMD Zen 1–5 out of the box, through the real binary, as on a fresh
//! node: `HOME` an empty directory, no `XDG_CACHE_HOME`, no
//! `PMX_EVENTS_DIR`, and libpfm4 made unloadable (`PMX_LIBPFM` names a file
//! that does not exist), so every answer comes from pmx's built-in tables.
//! The expected configs are AMD's fields worked by hand:
//! `select[7:0] | umask << 8 | select[11:8] << 32`.

use crate::common::stderr;
use std::process::{Command, Output};

fn fresh(args: &[&str]) -> Output {
    let home = std::env::temp_dir().join(format!("pmx-fresh-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    Command::new(env!("CARGO_BIN_EXE_pmx"))
        .args(args)
        .env("HOME", &home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("PMX_EVENTS_DIR")
        .env("PMX_LIBPFM", "/nonexistent/libpfm.so.4")
        .output()
        .expect("run pmx")
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (CPU key, table, a model-specific event, its config).
const ZENS: &[(&str, &str, &str, u64)] = &[
    ("AuthenticAMD-23-1-2", "zen1", "RETIRED_UOPS", 0xc1),
    (
        "AuthenticAMD-23-31-0",
        "zen2",
        "LS_DISPATCH:LD_ST_DISPATCH",
        0x429,
    ),
    ("AuthenticAMD-25-1-1", "zen3", "RETIRED_OPS", 0xc1),
    (
        "AuthenticAMD-25-11-1",
        "zen4",
        "DISPATCH_STALLS_1:FE_NO_OPS",
        0x1_0000_01a0,
    ),
    (
        "AuthenticAMD-26-2-1",
        "zen5",
        "de_no_dispatch_per_slot.backend_stalls",
        0x1_0000_1ea0,
    ),
];

#[test]
fn explain_and_list_work_for_every_zen_without_tables() {
    for (cpu, table, event, config) in ZENS {
        let out = ok(&fresh(&["explain", "--cpu", cpu, event]));
        assert!(
            out.contains(&format!("source       builtin-amd (built-in {table}.tsv")),
            "{cpu}: {out}"
        );
        assert!(
            out.contains(&format!("config={config:#x} ")),
            "{cpu}: {out}"
        );
        let out = ok(&fresh(&["list", "--cpu", cpu]));
        assert!(out.contains("\nbuiltin-amd — "), "{cpu}: {out}");
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{event} "))),
            "{cpu}: {event} not listed"
        );
        let out = ok(&fresh(&[
            "list",
            "--cpu",
            cpu,
            "--source",
            "builtin-amd",
            event,
        ]));
        assert!(out.contains(&format!("{event} ")), "{cpu}: {out}");
        assert!(!out.contains("\nkernel — "), "{cpu}: {out}");
    }
}

/// `-M` of a pipeline group on Zen 4 and Zen 5 runs here: the tree is
/// built in, its events resolve from the built-in tables and, with no
/// hardware PMU, print as `<not supported>` (as perf prints them).
#[test]
fn stat_pipeline_groups_run_without_tables() {
    let no_pmu = std::fs::metadata("/sys/bus/event_source/devices/cpu").is_err();
    for (cpu, group, event) in [
        (
            "AuthenticAMD-25-11-1",
            "PipelineL1",
            "DISPATCH_STALLS_1:FE_NO_OPS",
        ),
        (
            "AuthenticAMD-26-2-1",
            "PipelineL1",
            "de_no_dispatch_per_slot.no_ops_from_frontend",
        ),
        (
            "AuthenticAMD-26-2-1",
            "TopdownL2",
            "ex_no_retire.load_not_complete",
        ),
    ] {
        let o = fresh(&[
            "stat", "--format", "perf", "--cpu", cpu, "-M", group, "--", "true",
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{cpu} {group}: {err}");
        assert!(err.contains(event), "{cpu} {group}: {err}");
        if no_pmu {
            assert!(err.contains("<not supported>"), "{cpu} {group}: {err}");
        }
    }
}

/// Zen 1–3 have no top-down tree (AMD defines one from Zen 4 on, and
/// Linux perf has none for them): `-M TopdownL1` there is an unknown
/// metric that says why, exit 2, not a silent empty run; Zen 4's runs.
#[test]
fn topdown_on_zen_1_to_3_says_amd_defines_it_from_zen_4() {
    for (cpu, zen) in [
        ("AuthenticAMD-23-1-2", "Zen 1"),
        ("AuthenticAMD-23-31-0", "Zen 2"),
        ("AuthenticAMD-25-1-1", "Zen 3"),
    ] {
        let o = fresh(&["stat", "--cpu", cpu, "-M", "TopdownL1", "--", "true"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{cpu}: {err}");
        assert!(
            err.contains("unknown metric 'TopdownL1'")
                && err.contains(&format!("from Zen 4 on, and this CPU is {zen}")),
            "{cpu}: {err}"
        );
    }
    let o = fresh(&[
        "stat",
        "--cpu",
        "AuthenticAMD-25-11-1",
        "-M",
        "TopdownL1",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `pmx tma` on Zen 5 without tables: the built-in tree, both levels.
#[test]
fn tma_on_zen5_uses_the_builtin_tree() {
    let o = fresh(&[
        "tma",
        "-l",
        "2",
        "--cpu",
        "AuthenticAMD-26-2-1",
        "--",
        "true",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("(tree from built-in"), "{err}");
    for node in ["frontend_bound_by_latency", "retiring_from_microcode"] {
        assert!(err.contains(node), "{node}: {err}");
    }
}
