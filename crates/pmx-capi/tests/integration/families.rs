//! The C API's families (counters, recorder, msr, encode/decode) through
//! the examples in `examples/c/`, built against `include/pmx.h` and
//! this build's `libpmx.a` and run on the real kernel: exact page faults
//! of a known workload (C, C++ and Fortran), N samples of cpu-clock on
//! every CPU as deltas and through a C callback, the msr driver's reason
//! when there is none, encodings written by hand from the register
//! layouts; plus the ABI's error paths and the pkg-config install.

use pmx_testkit::cc;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The linker arguments for this build's `libpmx.so` (a copy, so a
/// concurrent build cannot swap it; linking the 100 MB `libpmx.a` takes
/// seconds per program, and `c_example.rs` covers it), or None after a
/// SKIP line.
fn shared_lib(dir: &Path) -> Option<Vec<String>> {
    if !cc::require() {
        return None;
    }
    let so = cc::built_capi("libpmx.so")?;
    std::fs::copy(&so, dir.join("libpmx.so")).unwrap();
    let d = dir.display();
    Some(vec![
        format!("-L{d}"),
        "-lpmx".into(),
        format!("-Wl,-rpath,{d}"),
    ])
}

/// Build a C source with `cc` against libpmx.
fn build_c(src: &Path, lib: &[String], out: &Path) {
    let mut inputs = vec![src.to_str().unwrap()];
    inputs.extend(lib.iter().map(String::as_str));
    cc::build_with_pmx(&["-Wall", "-Wextra", "-Werror"], &inputs, out).expect("cc");
}

fn example(name: &str) -> PathBuf {
    cc::repo().join("examples/c").join(name)
}

/// A compiler (`c++`, `gfortran`) that runs, or None after a SKIP line.
fn compiler(name: &str) -> Option<&str> {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => Some(name),
        _ => {
            pmx_testkit::skip(format_args!("no {name} (apt-get install {name})"));
            None
        }
    }
}

/// Build with another compiler: `COMPILER FLAGS -I include SRC LIB -lpthread -ldl -lm -o OUT`.
fn build_with(compiler: &str, flags: &[&str], src: &Path, lib: &[String], out: &Path) {
    let o = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(cc::repo().join("include"))
        .arg(src)
        .args(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{compiler} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .env_remove("PMX_EVENTS")
        .env_remove("PMX_REGIONS_OUT")
        .env_remove("PMX_METRICS")
        .output()
        .unwrap()
}

fn stdout_ok(exe: &Path, args: &[&str]) -> String {
    let o = run(exe, args);
    assert!(
        o.status.success(),
        "{} {args:?}: {:?}\n{}\n{}",
        exe.display(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `key=value` of a line as a number.
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} in {line:?}"))
}

/// The online CPUs, counted from sysfs's list (`0-1`, `0,2-5`).
fn online_cpus() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    text.trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

#[test]
fn counters_read_the_exact_page_faults_of_touching_fresh_pages() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    let exe = dir.path().join("counters");
    build_c(&example("counters.c"), &lib, &exe);
    for n in [100u64, 1000] {
        let out = stdout_ok(&exe, &[&n.to_string()]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("page-faults "), "{out}");
        assert_eq!(field(lines[0], "value"), n, "{out}");
        assert_eq!(field(lines[0], "scaled"), n, "{out}");
        // Software events are never multiplexed: running = enabled > 0.
        let enabled = field(lines[0], "enabled");
        assert!(
            enabled > 0 && field(lines[0], "running") == enabled,
            "{out}"
        );
        assert!(lines[1].starts_with("task-clock "), "{out}");
        assert!(field(lines[1], "value") > 0, "{out}");
        assert_eq!(lines[2], "after reset: page-faults value=0");
    }
}

#[test]
fn the_cpp_wrapper_counts_the_same_and_throws_pmx_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    let Some(cxx) = compiler("c++") else { return };
    let exe = dir.path().join("counters_cpp");
    let flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror"];
    build_with(cxx, &flags, &example("counters.cpp"), &lib, &exe);
    let out = stdout_ok(&exe, &["100"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "page-faults value=100", "{out}");
    assert!(lines[1].starts_with("task-clock value="), "{out}");
    // The misspelt event: pmx's caret message and the close match.
    assert!(
        lines[2].starts_with(
            "error: pmx_counters_open: in event spec at column 1: unknown event 'page-fautls'"
        ),
        "{out}"
    );
    assert!(out.contains("did you mean 'page-faults'"), "{out}");
    assert!(out.contains("\n  page-fautls\n  ^^^^^^^^^^^"), "{out}");
}

#[test]
fn the_fortran_example_prints_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    let Some(fc) = compiler("gfortran") else {
        return;
    };
    let exe = dir.path().join("counters_f90");
    build_with(
        fc,
        &["-Wall", "-Werror"],
        &example("counters.f90"),
        &lib,
        &exe,
    );
    for n in ["100", "1000"] {
        let out = stdout_ok(&exe, &[n]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], format!("page-faults value={n}"), "{out}");
        assert!(lines[1].starts_with("task-clock value="), "{out}");
        assert!(field(lines[1], "value") > 0, "{out}");
    }
}

#[test]
fn the_recorder_takes_n_deltas_of_cpu_clock_on_every_cpu_and_calls_the_c_transform() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    let exe = dir.path().join("recorder");
    build_c(&example("recorder.c"), &lib, &exe);
    let csv = dir.path().join("cpu-clock.csv");
    let (n, interval_ms) = (6usize, 5u64);
    let out = stdout_ok(
        &exe,
        &[
            &n.to_string(),
            &interval_ms.to_string(),
            csv.to_str().unwrap(),
        ],
    );
    let cpus = online_cpus();
    assert_eq!(
        out,
        format!("samples={n}\ncallback calls={n} ncpus={cpus} chained=1\n")
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("sample,time_s,cpu,cpu-clock,cpu-clock"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), n * cpus, "{text}");
    let mut last_raw = vec![0u64; cpus];
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 5, "{text}");
        assert_eq!(r[0], (i / cpus + 1).to_string(), "sample number: {text}");
        assert_eq!(r[2], (i % cpus).to_string(), "CPUs ascending: {text}");
        // cpu-clock counts nanoseconds on each CPU: a delta is about one
        // interval (well under a second even on a loaded machine).
        let delta: u64 = r[3].parse().unwrap();
        assert!(delta > 0 && delta < 1_000_000_000, "delta {delta}: {text}");
        // The callback stored the raw values: running totals, growing.
        let raw: u64 = r[4].parse().unwrap();
        assert!(raw >= last_raw[i % cpus] + delta / 100, "raw {raw}: {text}");
        last_raw[i % cpus] = raw;
    }
}

#[test]
fn msr_open_fails_here_with_the_msr_drivers_reason() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    if Path::new("/dev/cpu/0/msr").exists() {
        pmx_testkit::skip("this machine has the msr driver: pmx_msr_open does not fail here");
        return;
    }
    let exe = dir.path().join("msr");
    build_c(&example("msr.c"), &lib, &exe);
    let o = run(&exe, &[]);
    // The example's own exit code for "could not open": no crash.
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err,
        "pmx_msr_open: /dev/cpu/0/msr: not found — load the msr driver (modprobe msr)\n"
    );
}

#[test]
fn encode_and_decode_give_the_register_layouts_values() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    let exe = dir.path().join("encode");
    build_c(&example("encode.c"), &lib, &exe);
    let out = stdout_ok(&exe, &[]);
    // IA32_PERFEVTSELx: EventSelect 7:0 = 0x2e, UMASK 15:8 = 0x41, USR
    // bit 16, OS bit 17, EN bit 22 → 0x43412e; perf's config is event |
    // umask << 8. AMD PERF_CTL with :u: USR (16) and En (22) → 0x410076.
    let want = "\
intel event=0x2e,umask=0x41 reg=0x43412e config=0x412e
  EventSelect=0x2e UMASK=0x41 USR=0x1 OS=0x1 EN=0x1
amd event=0x76:u reg=0x410076 config=0x76
  EventSelect[7:0]=0x76 UnitMask=0 USR=0x1 OS=0 En=0x1
";
    assert!(out.starts_with(want), "{out}");
    let rest = &out[want.len()..];
    assert!(
        rest.starts_with(
            "pmx_decode: evtsel has no field 'nope' (fields: EventSelect, UMASK, USR, OS,"
        ),
        "{rest}"
    );
    assert!(
        rest.contains("pmx_encode: in event spec at column 12: 'umask' takes a number, not 'zz'\n  event=0x2e,umask=zz\n             ^"),
        "{rest}"
    );
}

/// Every family's error paths: NULL handles, short buffers, bad
/// arguments, handles added too late, frees of NULL — each a -1 or NULL
/// with a reason, never a crash.
const ERRORS: &str = r#"
#include <pmx.h>
#include <stdio.h>
#include <string.h>

static int failed(int rc, const char *want)
{
    const char *e = pmx_last_error();
    if (rc != -1 || !e || !strstr(e, want)) {
        printf("rc %d, error '%s', wanted '%s'\n", rc, e ? e : "(null)", want);
        return 1;
    }
    return 0;
}

int main(void)
{
    int bad = 0;
    pmx_count v[1];
    bad |= failed(pmx_counters_read(NULL, v, 1), "handle is NULL");
    bad |= pmx_counters_open("page-faults", 1, 0) != NULL;
    bad |= failed(-1, "pmx counts a task on every CPU it runs on");
    pmx_counters *c = pmx_counters_open("page-faults,task-clock", 0, -1);
    if (!c)
        return 1;
    bad |= pmx_counters_count(c) != 2;
    bad |= strcmp(pmx_counters_name(c, 1), "task-clock") != 0;
    bad |= pmx_counters_name(c, 2) != NULL || pmx_counters_status(c, 0) != NULL;
    bad |= failed(pmx_counters_read(c, v, 1), "room for 1 counts, the counters have 2 events");
    pmx_counters_close(c);
    pmx_counters_close(NULL);

    bad |= pmx_recorder_new(10, 0) != NULL;
    bad |= failed(-1, "both must be positive");
    pmx_recorder *r = pmx_recorder_new(1, 3);
    bad |= failed(pmx_recorder_add_event(r, "cpu-clock", NULL, 0, 7), "PMX_RAW (0) or PMX_DELTA (1)");
    bad |= failed(pmx_recorder_add_event_fn(r, "cpu-clock", NULL, 0, NULL, NULL), "callback is NULL");
    bad |= failed(pmx_recorder_add_msr(r, "IA32_TIME_STAMP_COUNTER", 9, PMX_RAW), "scope 9");
    bad |= failed(pmx_recorder_add_msr(r, "IA32_TIME_STAMP_COUNTER", PMX_SCOPE_PACKAGE, PMX_DELTA), "modprobe msr");
    int cpu0 = 0;
    bad |= pmx_recorder_add_event(r, "cpu-clock", &cpu0, 1, PMX_RAW) != 0;
    bad |= pmx_recorder_add_event(r, "context-switches", &cpu0, 1, PMX_DELTA) != 1;
    /* By hand: three samples fit, the fourth does not. */
    bad |= pmx_recorder_sample(r) != 1 || pmx_recorder_sample(r) != 1;
    bad |= pmx_recorder_sample(r) != 1 || pmx_recorder_sample(r) != 0;
    bad |= pmx_recorder_len(r) != 3;
    bad |= failed(pmx_recorder_add_event(r, "cpu-clock", NULL, 0, PMX_RAW), "add every handle before the first sample");
    bad |= failed(pmx_recorder_write_csv(r, "/nonexistent/dir/x.csv"), "/nonexistent/dir/x.csv");
    pmx_recorder_free(r);
    pmx_recorder_free(NULL);

    /* Started and freed while running: stopped, no crash. */
    r = pmx_recorder_new(1, 100000);
    bad |= pmx_recorder_add_event(r, "cpu-clock", NULL, 0, PMX_DELTA) != 0;
    bad |= pmx_recorder_start(r) != 0;
    bad |= failed(pmx_recorder_sample(r), "the recorder is running");
    pmx_recorder_free(r);

    bad |= pmx_msr_open("0-") != NULL;
    bad |= failed(-1, "cpus \"0-\"");
    bad |= failed(pmx_msr_read(NULL, "IA32_TIME_STAMP_COUNTER", 0, NULL), "handle is NULL");
    bad |= pmx_msr_close(NULL) != 0;
    bad |= failed(pmx_encode("event=0x2e", "arm", NULL, NULL), "unknown register set 'arm'");
    uint64_t field;
    bad |= failed(pmx_decode("nope", 0, "EN", &field), "unknown register 'nope'");
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad;
}
"#;

#[test]
fn every_family_fails_with_a_reason_and_never_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = shared_lib(dir.path()) else {
        return;
    };
    if Path::new("/dev/cpu/0/msr").exists() {
        pmx_testkit::skip("this machine has the msr driver: the msr errors differ");
        return;
    }
    let src = dir.path().join("errors.c");
    std::fs::write(&src, ERRORS).unwrap();
    let exe = dir.path().join("errors");
    build_c(&src, &lib, &exe);
    let o = run(&exe, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(out, "ok\n");
}

#[test]
fn pkg_config_builds_a_program_after_the_install() {
    if !cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = cc::built_capi("libpmx.a") else {
        return;
    };
    let Some(so) = cc::built_capi("libpmx.so") else {
        return;
    };
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        pmx_testkit::skip("no pkg-config");
        return;
    }
    // The install script takes the libraries from a directory: copies,
    // so a concurrent build cannot swap them.
    let libs = dir.path().join("built");
    std::fs::create_dir(&libs).unwrap();
    std::fs::copy(&lib, libs.join("libpmx.a")).unwrap();
    std::fs::copy(&so, libs.join("libpmx.so")).unwrap();
    let prefix = dir.path().join("prefix");
    let o = Command::new(cc::repo().join("crates/pmx-capi/install.sh"))
        .arg(&prefix)
        .env("PMX_LIB_DIR", &libs)
        .env_remove("DESTDIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "lib/libpmx.so",
        "lib/libpmx.a",
        "include/pmx.h",
        "include/pmx.hpp",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    let pc_path = prefix.join("lib/pkgconfig");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "pmx"])
        .env("PKG_CONFIG_PATH", &pc_path)
        .output()
        .unwrap();
    assert!(flags.status.success(), "{flags:?}");
    let flags = String::from_utf8(flags.stdout).unwrap();
    assert_eq!(
        flags.trim(),
        format!("-I{p}/include -L{p}/lib -lpmx", p = prefix.display())
    );
    // cc app.c $(pkg-config --cflags --libs pmx), run against the
    // installed shared library.
    let exe = dir.path().join("counters");
    let mut cmd = Command::new("cc");
    cmd.arg(example("counters.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&exe)
        .arg("50")
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.starts_with("page-faults value=50 "), "{out}");
}
