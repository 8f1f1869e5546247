//! `pmx encode` and `pmx decode` run as the real binary; raw configs
//! through `explain`, `encode` and `stat` (the attr it opens, read back
//! by the installed perf).

use crate::common::pmx;
use std::process::Output;

fn json_of(out: &Output) -> serde_json::Value {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn encode(arch: &str, spec: &str) -> serde_json::Value {
    let out = pmx(&["encode", "--arch", arch, "--json", spec]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

#[test]
fn intel_llc_misses_in_each_ring() {
    for (spec, register) in [
        ("cpu/event=0x2e,umask=0x41/u", "0x41412e"),
        ("cpu/event=0x2e,umask=0x41/k", "0x42412e"),
        ("cpu/event=0x2e,umask=0x41/", "0x43412e"),
        ("event=0x2e,umask=0x41:u", "0x41412e"),
        ("r412e:k", "0x42412e"),
    ] {
        let j = encode("intel", spec);
        assert_eq!(j["register"], register, "{spec}");
        assert_eq!(j["config"], "0x412e", "{spec}");
        assert_eq!(j["attr"]["type"], 4);
        assert!(j["fields"].as_array().unwrap().len() >= 15);
    }
    let u = encode("intel", "cpu/event=0x2e,umask=0x41/u");
    assert_eq!(u["attr"]["exclude_kernel"], true);
    assert_eq!(u["attr"]["exclude_user"], false);
}

#[test]
fn amd_twelve_bit_event() {
    let j = encode("amd", "cpu/event=0x4e1,umask=0xf7/");
    assert_eq!(j["config"], "0x40000f7e1");
    assert_eq!(j["register"], "0x40043f7e1");
    assert_eq!(j["register_name"], "PERF_CTLx");
}

#[test]
fn text_output_has_register_attr_and_fields() {
    let out = pmx(&[
        "encode",
        "--arch",
        "intel",
        "cpu/event=0x2e,umask=0x41,cmask=1,inv,edge/u",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("IA32_PERFEVTSELx = 0x1c5412e"), "{text}");
    assert!(text.contains("config=0x184412e"), "{text}");
    assert!(text.contains("CMASK"));
    assert!(text.contains("exclude_kernel=1"));
}

#[test]
fn malformed_specs_exit_2_with_position() {
    for (spec, col) in [
        ("cpu/event=0x2g/", "column 14"),
        ("cpu/event=0x2e,umsk=0x41/", "column 16"),
        ("r412e:q", "column 7"),
        ("cpu/event=0x2e", "column 15"),
        ("", "column 1"),
    ] {
        let out = pmx(&["encode", "--arch", "intel", spec]);
        assert_eq!(out.status.code(), Some(2), "{spec}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(col), "{spec}: {err}");
        assert!(err.contains('^'), "{spec}: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = pmx(&["encode", "--arch", "intel", "cpu/event=0x2e,umsk=0x41/"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean 'umask'"));
}

#[test]
fn good_specs_are_printed_even_when_one_is_bad() {
    let out = pmx(&[
        "encode",
        "--arch",
        "intel",
        "--json",
        "r412e",
        "cpu/nope=1/",
        "r3c",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 2);
}

#[test]
fn decode_every_field_and_warnings() {
    let out = pmx(&["decode", "--arch", "intel", "--json", "0x53412e"]);
    assert!(out.status.success());
    let j = json_of(&out);
    assert_eq!(j["register"], "0x53412e");
    assert_eq!(j["config"], "0x412e");
    let fields = j["fields"].as_array().unwrap();
    let get = |n: &str| {
        fields.iter().find(|f| f["name"] == n).unwrap()["value"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(get("EventSelect"), 0x2e);
    assert_eq!(get("UMASK"), 0x41);
    assert_eq!(get("INT"), 1);
    assert!(j["notes"][0].as_str().unwrap().contains("USR"));

    let out = pmx(&["decode", "--arch", "intel", "--json", "0x10000000041412e"]);
    let j = json_of(&out);
    assert!(
        j["warnings"][0].as_str().unwrap().contains("reserved"),
        "{j}"
    );
    let out = pmx(&["decode", "--arch", "intel", "0x8141412e"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("CMASK"), "{text}");

    let out = pmx(&["decode", "--register", "fixed-ctrl", "--json", "0x333"]);
    let j = json_of(&out);
    assert_eq!(j["config"], serde_json::Value::Null);
    let fields = j["fields"].as_array().unwrap();
    assert_eq!(fields.iter().filter(|f| f["value"] == 1).count(), 6);

    let out = pmx(&["decode", "--arch", "amd", "--json", "0x4_0043_f7e1"]);
    let j = json_of(&out);
    assert_eq!(j["config"], "0x40000f7e1");
}

#[test]
fn decode_pc_bit_is_flagged_for_perf() {
    let out = pmx(&["decode", "--arch", "intel", "--json", "0x8412e"]);
    let j = json_of(&out);
    let w: Vec<String> = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert!(w.iter().any(|s| s.contains("PC")), "{w:?}");
    assert_eq!(j["config"], "0x412e");
}

#[test]
fn malformed_values_exit_2() {
    for v in ["0x12g", "12a", "0x", "99999999999999999999999"] {
        let out = pmx(&["decode", "--arch", "intel", v]);
        assert_eq!(out.status.code(), Some(2), "{v}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("column") || err.contains("digits"),
            "{v}: {err}"
        );
    }
    let out = pmx(&["decode", "--register", "nope", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pmx(&["decode", "--arch", "amd", "--register", "evtsel", "1"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A numeric raw config is passed bit for bit, as perf passes it, with a
/// warning naming the bits the kernel sets itself (USR, OS, INT, EN).
#[test]
fn raw_configs_are_passed_bit_exact_with_a_warning() {
    let cpu = ["--cpu", "GenuineIntel-6-55-4", "--no-libpfm"];
    let out = pmx(&[&["explain"][..], &cpu, &["4:0x6530160"]].concat());
    assert!(out.status.success());
    let text = crate::common::stdout(&out);
    assert!(
        text.contains("type=4 (PERF_TYPE_RAW) config=0x6530160 "),
        "{text}"
    );
    assert!(text.contains("IA32_PERFEVTSELx = 0x6430160"), "{text}");
    assert!(
        text.contains("warning: config 0x6530160 passed to the kernel as given, but bits 0x530000 are not event bits of IA32_PERFEVTSELx: USR (bit 16), OS (bit 17), INT (bit 20), EN (bit 22) the kernel sets"),
        "{text}"
    );
    let out = pmx(&[&["explain", "--json"][..], &cpu, &["cpu/config=0x6530160/"]].concat());
    let j = json_of(&out);
    let j = if j.is_array() { j[0].clone() } else { j };
    assert_eq!(j["config"], "0x6530160", "{j}");
    assert!(
        j["register_warnings"][0]
            .as_str()
            .unwrap()
            .contains("0x530000"),
        "{j}"
    );
    let j = encode("intel", "r6530160");
    assert_eq!(j["config"], "0x6530160");
    assert_eq!(j["register"], "0x6430160");
    assert!(
        j["warnings"][0].as_str().unwrap().contains("USR (bit 16)"),
        "{j}"
    );
    // `pmx stat` opens that attr: `-v` prints it, and the attr it writes
    // to a `stat record` file (the one it opens) reads back in perf.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("raw.data");
    let file_s = file.to_str().unwrap();
    let out = pmx(&[
        "stat", "-v", "-e", "r6530160", "record", "-o", file_s, "true",
    ]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let err = crate::common::stderr(&out);
    assert!(err.contains("r6530160: type 4 config 0x6530160 "), "{err}");
    // The attr the kernel is handed, as strace decodes the syscall (this
    // machine has no PMU: the open fails with ENOENT after it).
    let trace = dir.path().join("trace");
    let traced = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=perf_event_open", "-o"])
        .arg(&trace)
        .args([crate::common::PMX, "stat", "-e", "r6530160", "true"])
        .output();
    match traced {
        Ok(o) if o.status.success() => {
            let t = std::fs::read_to_string(&trace).unwrap();
            let raw =
                |l: &&str| l.contains("type=PERF_TYPE_RAW") && l.contains("config=0x6530160,");
            assert!(t.lines().any(|l| raw(&l)), "{t}");
        }
        _ => pmx_testkit::skip("the perf_event_open attr check: strace is not installed"),
    }
    if !pmx_testkit::perf::require("raw config read back by perf evlist") {
        return;
    }
    let ev = pmx_testkit::perf::on_file(&["evlist", "-v"], &file);
    let text = pmx_testkit::text(&ev.stdout);
    assert!(
        text.contains("r6530160: type: 4, size: 128, config: 0x6530160,"),
        "{text}"
    );
}
