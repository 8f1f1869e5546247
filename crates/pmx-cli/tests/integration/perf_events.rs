//! Linux perf's AMD tables through the real binary: `pmx explain`,
//! `pmx list` and `pmx msr plan` on this machine and on a named Zen 5, with
//! `--events-dir` (repeatable) and `$PMX_EVENTS_DIR`. Expected encodings are
//! read off the JSON in `../shared/data/linux-perf-events/x86` by hand;
//! every test skips with a message when that data is absent.

use std::path::PathBuf;
use std::process::{Command, Output};

const ZEN5: &str = "AuthenticAMD-26-2-1";

fn shared(sub: &str) -> Option<PathBuf> {
    pmx_testkit::shared::shared_data(sub)
}

fn pmx(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pmx"));
    c.args(args).env_remove("PMX_EVENTS_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run pmx")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn host_is_amd() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains("AuthenticAMD"))
}

#[test]
fn explain_prints_the_tables_encoding_on_zen5_and_here() {
    let Some(dir) = shared("linux-perf-events") else {
        return;
    };
    let d = dir.to_str().unwrap();
    let out = ok(&pmx(
        &[
            "explain",
            "--cpu",
            ZEN5,
            "--events-dir",
            d,
            "--no-libpfm",
            "ex_ret_instr",
        ],
        &[],
    ));
    assert!(
        out.contains("source       perf-json (amdzen5/execution.json)"),
        "{out}"
    );
    assert!(out.contains("encoding     event=0xc0\n"), "{out}");
    assert!(out.contains("config=0xc0 "), "{out}");
    // USR, OS and En with event 0xc0.
    assert!(out.contains("PERF_CTLx = 0x4300c0"), "{out}");
    assert!(out.contains("description  Retired instructions."), "{out}");
    // EventCode 0x1a0, UMask 0x1e: bits 11:8 of the event in PERF_CTL 35:32.
    let out = ok(&pmx(
        &[
            "explain",
            "--cpu",
            ZEN5,
            "--events-dir",
            d,
            "--no-libpfm",
            "de_no_dispatch_per_slot.backend_stalls:u",
        ],
        &[],
    ));
    assert!(out.contains("config=0x100001ea0 "), "{out}");
    assert!(out.contains("PERF_CTLx = 0x100411ea0"), "{out}");
    if !host_is_amd() {
        pmx_testkit::skip("host part: this machine is not an AMD CPU");
        return;
    }
    // This machine, through $PMX_EVENTS_DIR; libpfm4's name of the same
    // encoding is named once when libpfm4 knows this CPU.
    let out = ok(&pmx(&["explain", "ex_ret_instr"], &[("PMX_EVENTS_DIR", d)]));
    assert!(out.contains("source       perf-json (amdzen"), "{out}");
    assert!(out.contains("config=0xc0 "), "{out}");
}

#[test]
fn list_shows_perf_names_with_encodings_once() {
    let Some(dir) = shared("linux-perf-events") else {
        return;
    };
    let d = dir.to_str().unwrap();
    let out = ok(&pmx(
        &["list", "--cpu", ZEN5, "--events-dir", d, "ls_dispatch"],
        &[],
    ));
    assert!(
        out.contains("perf-json — Linux perf's tables for AuthenticAMD-26-2-1"),
        "{out}"
    );
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{out}"))
            .to_string()
    };
    assert!(
        line("ls_dispatch.ld_dispatch").contains("event=0x29,umask=0x01"),
        "{out}"
    );
    assert!(
        line("ls_dispatch.store_dispatch").contains("event=0x29,umask=0x02"),
        "{out}"
    );
    assert!(
        line("ls_dispatch.all").contains("event=0x29,umask=0x07"),
        "{out}"
    );
    // Uncore PMUs are listed under their PMU.
    let out = ok(&pmx(
        &["list", "--cpu", ZEN5, "--events-dir", d, "l3_lookup_state"],
        &[],
    ));
    assert!(out.contains("  [amd_l3]\n"), "{out}");
    if !host_is_amd() {
        pmx_testkit::skip("host part: this machine is not an AMD CPU");
        return;
    }
    let o = pmx(&["list", "--events-dir", d, "ls_dispatch"], &[]);
    let out = ok(&o);
    assert!(out.contains("perf-json"), "{out}");
    // pmx's built-in table (and libpfm4, when it knows this CPU) name the
    // same encodings: listed once, under perf's names.
    assert!(
        out.contains("[same as built-in LS_DISPATCH:LD_DISPATCH"),
        "{out}"
    );
    if out.contains("same as libpfm4") {
        // libpfm4 knows this CPU: its LS_DISPATCH names are not listed again.
        assert!(out.contains("libpfm4 LS_DISPATCH:LD_DISPATCH]"), "{out}");
        assert!(
            !out.lines()
                .any(|l| l.trim_start().starts_with("LS_DISPATCH:LD_DISPATCH")),
            "{out}"
        );
    } else {
        pmx_testkit::skip("libpfm4 part: libpfm4 does not know this CPU");
    }
}

#[test]
fn events_dir_repeats_and_each_layout_is_recognised() {
    let (Some(perf), Some(intel)) = (shared("linux-perf-events"), shared("intel-perfmon")) else {
        return;
    };
    let (p, i) = (perf.to_str().unwrap(), intel.to_str().unwrap());
    // Intel's layout first, perf's second: each CPU finds its tables.
    let args = |cpu: &'static str, ev: &'static str| {
        vec![
            "explain",
            "--cpu",
            cpu,
            "--events-dir",
            i,
            "--events-dir",
            p,
            "--no-libpfm",
            ev,
        ]
    };
    let out = ok(&pmx(&args(ZEN5, "ls_dispatch.ld_dispatch"), &[]));
    assert!(out.contains("config=0x129 "), "{out}");
    let out = ok(&pmx(
        &args("GenuineIntel-6-55-4", "LONGEST_LAT_CACHE.MISS"),
        &[],
    ));
    assert!(out.contains("config=0x412e "), "{out}");
    // perf's own x86/ directory works as well.
    let x86 = perf.join("x86");
    let out = ok(&pmx(
        &[
            "explain",
            "--cpu",
            "AuthenticAMD-23-1-2",
            "--events-dir",
            x86.to_str().unwrap(),
            "--no-libpfm",
            "ex_ret_instr",
        ],
        &[],
    ));
    assert!(out.contains("perf-json (amdzen1/"), "{out}");
    // Only Intel's layout: a core name comes from pmx's built-in Zen 5
    // table; an uncore one is unknown and the reason says why.
    let o = pmx(
        &[
            "explain",
            "--cpu",
            ZEN5,
            "--events-dir",
            i,
            "--no-libpfm",
            "ex_ret_instr",
        ],
        &[],
    );
    assert!(ok(&o).contains("source       builtin-amd"), "{}", ok(&o));
    let o = pmx(
        &[
            "explain",
            "--cpu",
            ZEN5,
            "--events-dir",
            i,
            "--no-libpfm",
            "l3_lookup_state.l3_miss",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no Linux perf tables"), "{err}");
}

#[test]
fn msr_plan_writes_the_tables_encodings_on_zen5() {
    let Some(dir) = shared("linux-perf-events") else {
        return;
    };
    let root = crate::common::four_cpu_msr_machine();
    let dev = root.dev();
    let out = ok(&pmx(
        &[
            "msr",
            "plan",
            "-e",
            "ex_ret_instr,ls_dispatch.ld_dispatch",
            "-c",
            "0",
            "--cpu",
            ZEN5,
            "--events-dir",
            dir.to_str().unwrap(),
            "--no-libpfm",
            "--msr-root",
            dev.to_str().unwrap(),
            "--sysfs-root",
            root.path().to_str().unwrap(),
        ],
        &[],
    ));
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let writes: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[1], r[2], r[4])).collect();
    // The extended core counters: CTL at 0xC0010200 + 2i, CTR at + 1; Zen 5
    // has PerfMonV2: PerfCntrGlobalCtl enables counters 0 and 1 last.
    assert_eq!(
        writes,
        vec![
            ("0xc0010201", "PERF_CTR_EXT0", "0x0"),
            ("0xc0010203", "PERF_CTR_EXT1", "0x0"),
            ("0xc0010200", "PERF_CTL_EXT0", "0x4300c0"),
            ("0xc0010202", "PERF_CTL_EXT1", "0x430129"),
            ("0xc0000301", "PERF_CNTR_GLOBAL_CTL", "0x3"),
        ],
        "{out}"
    );
    assert!(
        out.contains("EventSelect[7:0]=0x29 UnitMask=0x1 USR=1 OS=1 En=1"),
        "{out}"
    );
}
