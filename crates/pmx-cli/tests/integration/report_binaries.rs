//! A recording outlives its binaries: when a binary is rebuilt (another
//! build id) or deleted, `pmx report` says so once, in its header and on
//! standard error, with the share of the samples left as raw addresses.
//! A binary deleted under a process that still runs it (a package
//! upgraded under a service) is read through `/proc/PID/map_files`: its
//! functions are named, where perf 6.1 shows addresses.

use crate::common::{pmx, stderr, stdout};
use pmx_testkit::cc;

const HOT: &str =
    "volatile long x;\nint main(void) { for (long i = 0; i < 400000000; i++) x += i; return 0; }\n";

#[test]
fn a_rebuilt_or_missing_binary_is_said_once_with_its_share() {
    if !cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // An empty build-id cache of its own, given to each pmx it runs (not
    // set in this process, whose other tests run pmx too): a copy of the
    // same build (an earlier run's, perf's) would name the functions.
    let cache = dir.path().join("cache");
    let pmx = |args: &[&str]| {
        std::process::Command::new(crate::common::PMX)
            .args(args)
            .env_remove("PMX_EVENTS_DIR")
            .env("PERF_BUILDID_DIR", &cache)
            .output()
            .expect("run pmx")
    };
    let bin = cc::compile(dir.path(), "hot", HOT, &["-O1"]).unwrap();
    let data = dir.path().join("hot.data");
    // -N: no copy in the build-id cache, which would name the functions
    // (the perf_sampling module tests that).
    let o = pmx(&[
        "record",
        "-N",
        "-F",
        "2000",
        "-o",
        data.to_str().unwrap(),
        "--",
        bin.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = || pmx(&["report", "-q", "--stdio", "-i", data.to_str().unwrap()]);
    let fresh = report();
    assert!(stdout(&fresh).contains("[.] main"), "{}", stdout(&fresh));
    assert!(!stdout(&fresh).contains("WARNING"), "{}", stdout(&fresh));

    // Rebuilt: another build id at the same path.
    cc::compile(dir.path(), "hot", HOT, &["-O2", "-DREBUILT"]).unwrap();
    let stale = report();
    let (out, err) = (stdout(&stale), stderr(&stale));
    let line = out
        .lines()
        .find(|l| l.starts_with("# WARNING:") && l.contains(bin.to_str().unwrap()))
        .unwrap_or_else(|| panic!("no warning for the rebuilt binary:\n{out}"));
    assert!(line.contains("differs from the one recorded"), "{line}");
    let share = share_of(line);
    assert!(share > 50.0, "{line}");
    assert!(!out.contains("[.] main"), "{out}");
    // Said once: one header line, one line on standard error.
    assert_eq!(
        out.matches("differs from the one recorded").count(),
        1,
        "{out}"
    );
    assert_eq!(
        err.matches("differs from the one recorded").count(),
        1,
        "{err}"
    );

    // Deleted.
    std::fs::remove_file(&bin).unwrap();
    let gone = report();
    let out = stdout(&gone);
    let line = out
        .lines()
        .find(|l| l.starts_with("# WARNING:") && l.contains("not found"))
        .unwrap_or_else(|| panic!("no warning for the missing binary:\n{out}"));
    assert_eq!(share_of(line), share, "{line}");
}

const SPIN_DELETED: &str = "volatile long x;\n__attribute__((noinline)) void deleted_spin(void) { for (;;) x += 1; }\nint main(void) { deleted_spin(); return 0; }\n";

#[test]
fn a_running_programs_deleted_binary_is_still_named() {
    if !cc::require() {
        return;
    }
    if !map_files_readable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = cc::compile(dir.path(), "spin", SPIN_DELETED, &["-O1"]).unwrap();
    let mut child = running(&bin);
    let pid = child.id().to_string();
    // Running from its file, then the file is gone (the mapping shows
    // `spin (deleted)`).
    std::fs::remove_file(&bin).unwrap();
    let data = dir.path().join("spin.data");
    record_pid(&pid, &data, &[]);
    let d = data.to_str().unwrap();
    let o = pmx(&["report", "-q", "--stdio", "--sort", "sym", "-i", d]);
    let _ = child.kill();
    let _ = child.wait();
    let out = stdout(&o);
    assert!(out.contains("[.] deleted_spin"), "{out}");
    // Once the process is gone its file is too: addresses, as before.
    let o = pmx(&["report", "-q", "--stdio", "--sort", "sym", "-i", d]);
    assert!(!stdout(&o).contains("deleted_spin"), "{}", stdout(&o));
}

/// `bin` started, once its maps show it.
fn running(bin: &std::path::Path) -> std::process::Child {
    let child = std::process::Command::new(bin).spawn().unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(bin.to_str().unwrap())) {
        assert!(
            std::time::Instant::now() < deadline,
            "the program did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// Whether this test can read `/proc/PID/map_files` (root), else a SKIP line.
fn map_files_readable() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        pmx_testkit::skip("/proc/PID/map_files needs root: the check does not run");
    }
    root
}

/// One second of samples of process `pid` into `data` (no build ids
/// with `-B`, none copied to the build-id cache).
fn record_pid(pid: &str, data: &std::path::Path, extra: &[&str]) {
    let d = data.to_str().unwrap();
    let args = [
        &[
            "record",
            "-N",
            "-q",
            "-F",
            "1000",
            "-p",
            pid,
            "--duration",
            "1",
            "-o",
            d,
        ],
        extra,
    ]
    .concat();
    let o = pmx(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

const SPIN_OLD: &str = "volatile long x;\n__attribute__((noinline)) void old_build_spin(void) { for (;;) x += 1; }\nint main(void) { old_build_spin(); return 0; }\n";
/// Another layout: a padding function first, so the old spin's
/// addresses fall in another function of the new build.
const SPIN_NEW: &str = "volatile long x;\n__attribute__((noinline)) void new_build_pad(void) { for (int i = 0; i < 64; i++) x += i * 3 + (x >> 2); }\n__attribute__((noinline)) void new_build_spin(void) { for (;;) x -= 1; }\nint main(void) { new_build_pad(); new_build_spin(); return 0; }\n";

/// A program rebuilt while it runs (`cc -o new` then `mv new old`, as a
/// build system writes its output): the path now leads to another
/// file, the running process maps the old one (its maps say `old
/// (deleted)`, the recording made before says `old`). While it lives
/// the old file is read through /proc/PID/map_files, found by the
/// inode the MMAP2 record carries; once it is gone its addresses are
/// left as addresses with a warning. perf 6.1 (and pmx before) read the
/// new file and name its functions.
#[test]
fn a_program_rebuilt_while_it_runs_is_named_from_its_old_file() {
    if !cc::require() || !map_files_readable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = cc::compile(dir.path(), "spin", SPIN_OLD, &["-O1"]).unwrap();
    let mut child = running(&bin);
    let pid = child.id().to_string();
    let data = dir.path().join("spin.data");
    // -B: no build ids, so the inode is all the recording says of it.
    record_pid(&pid, &data, &["-B"]);
    let new = cc::compile(dir.path(), "spin-new", SPIN_NEW, &["-O1"]).unwrap();
    std::fs::rename(&new, &bin).unwrap();
    let d = data.to_str().unwrap();
    let o = pmx(&["report", "-q", "--stdio", "--sort", "sym", "-i", d]);
    let _ = child.kill();
    let _ = child.wait();
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("[.] old_build_spin"), "{out}");
    assert!(!out.contains("new_build"), "{out}");
    // The process gone: never the new file's names; a warning says why.
    let o = pmx(&["report", "-q", "--stdio", "--sort", "sym", "-i", d]);
    let out = stdout(&o);
    assert!(
        !out.contains("new_build") && !out.contains("old_build"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("# WARNING:") && l.contains(bin.to_str().unwrap()))
        .unwrap_or_else(|| panic!("no warning for the replaced binary:\n{out}"));
    assert!(line.contains("replaced since it was mapped"), "{line}");
    assert!(share_of(line) > 50.0, "{line}");
}

/// `pmx annotate` of a function of a binary deleted under a running
/// process decodes it from the mapped file (its path is gone).
#[test]
fn annotate_reads_a_running_programs_deleted_binary() {
    if !cc::require() || !map_files_readable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = cc::compile(dir.path(), "spin", SPIN_DELETED, &["-O1"]).unwrap();
    let mut child = running(&bin);
    let pid = child.id().to_string();
    std::fs::remove_file(&bin).unwrap();
    let data = dir.path().join("spin.data");
    record_pid(&pid, &data, &[]);
    let d = data.to_str().unwrap();
    let o = pmx(&["annotate", "deleted_spin", "--json", "-i", d]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ins = v["instructions"].as_array().unwrap();
    let texts: Vec<&str> = ins.iter().filter_map(|i| i["text"].as_str()).collect();
    // The endless loop: an add to x and a jump back.
    assert!(texts.iter().any(|t| t.starts_with("jmp")), "{texts:?}");
    let samples: u64 = ins
        .iter()
        .filter_map(|i| i["samples"]["cpu-clock"].as_u64())
        .sum();
    assert!(samples > 0, "{v}");
}

/// `perf buildid-list -i DATA`'s (build id, file) lines for files whose
/// name starts with `path`.
fn listed_ids(data: &std::path::Path, path: &std::path::Path) -> Vec<(String, String)> {
    let o = pmx_testkit::perf::on_file(&["buildid-list"], data);
    assert!(o.status.success(), "{}", stderr(&o));
    (stdout(&o).lines())
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, f)| f.starts_with(path.to_str().unwrap()))
        .map(|(id, f)| (id.to_string(), f.to_string()))
        .collect()
}

/// `record`'s build ids (its BUILD_ID feature, as `perf buildid-list`
/// reads it) are the mapped files', not whatever the path leads to at
/// the end: a binary rebuilt during the recording is listed with the
/// running program's build id (read through /proc/PID/map_files), and a
/// binary deleted under the process (`PATH (deleted)`) is listed at all.
#[test]
fn record_lists_the_mapped_files_build_ids_not_their_replacements() {
    if !cc::require() || !map_files_readable() || !pmx_testkit::perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = cc::compile(dir.path(), "spin", SPIN_OLD, &["-O1"]).unwrap();
    let mut child = running(&bin);
    let pid = child.id().to_string();
    // The oracle: the build id listed while nothing has changed.
    let fresh = dir.path().join("fresh.data");
    record_pid(&pid, &fresh, &[]);
    let ids = listed_ids(&fresh, &bin);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let old_id = ids[0].0.clone();
    // Rebuilt while a 4-second recording runs (once its file exists;
    // should the machine be so slow that the rename comes first, the
    // maps say `spin (deleted)` and the old build id is still the one).
    let during = dir.path().join("during.data");
    let d = during.to_str().unwrap();
    let rec = std::process::Command::new(env!("CARGO_BIN_EXE_pmx"))
        .args([
            "record",
            "-N",
            "-q",
            "-F",
            "200",
            "-p",
            &pid,
            "--duration",
            "4",
            "-o",
            d,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // The file is written under a temporary name, renamed at the end.
    let started = || {
        (std::fs::read_dir(dir.path()).unwrap().flatten())
            .any(|e| e.file_name().to_string_lossy().contains("during.data"))
    };
    while !started() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let new = cc::compile(dir.path(), "spin-new", SPIN_NEW, &["-O1"]).unwrap();
    std::fs::rename(&new, &bin).unwrap();
    let o = rec.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ids = listed_ids(&during, &bin);
    assert!(!ids.is_empty(), "no build id listed for {}", bin.display());
    assert!(
        ids.iter().all(|(id, _)| *id == old_id),
        "{ids:?}, want {old_id}"
    );
    // Recorded after: the maps say `spin (deleted)`.
    let after = dir.path().join("after.data");
    record_pid(&pid, &after, &[]);
    let _ = child.kill();
    let _ = child.wait();
    let ids = listed_ids(&after, &bin);
    let deleted = format!("{} (deleted)", bin.display());
    assert_eq!(ids, [(old_id, deleted)]);
}

/// The percentage in `… N of M samples (X%) are shown as raw addresses`.
fn share_of(line: &str) -> f64 {
    let open = line.rfind('(').unwrap();
    let close = line.rfind("%)").unwrap();
    line[open + 1..close].parse().unwrap()
}
