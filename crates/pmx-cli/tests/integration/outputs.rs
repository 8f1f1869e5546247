//! Output files (issue 22, item 1): `record -o` to a device node, a FIFO,
//! standard output (pipe-mode perf.data that `pmx report -i -` and
//! `perf report -i -` read), the `.old` rule; `stat -o` that fails before
//! measuring, interrupted `stat -I -o`, a read-only place, a directory.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{pmx, stderr, PMX};

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmx-workload");

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// A character device with /dev/full's numbers (1, 7) at `p`; false
/// when this process may not make one.
fn full_node(p: &Path) -> bool {
    // SAFETY: a valid C string.
    let r = unsafe {
        libc::mknod(
            c_path(p).as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, 7),
        )
    };
    if r != 0 {
        pmx_testkit::skip("mknod needs CAP_MKNOD");
    }
    r == 0
}

fn mkfifo(p: &Path) {
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c_path(p).as_ptr(), 0o600) }, 0);
}

/// `pmx record -e cpu-clock -F 2000 -o OUT -- pmx-workload spin 0.3`.
fn record_to(out: &str) -> Command {
    let mut c = Command::new(PMX);
    c.args(["record", "-e", "cpu-clock", "-F", "2000", "-o", out])
        .args(["--", WORKLOAD, "spin", "0.3"])
        .stdin(Stdio::null());
    c
}

/// The samples of a `report --json` and the symbols of the workload's
/// own code with their overhead (%).
fn report_of(json: &[u8]) -> (u64, Vec<(String, f64)>) {
    let v: serde_json::Value = serde_json::from_slice(json).expect("report JSON");
    let e = &v["events"][0];
    assert_eq!(e["name"], "cpu-clock");
    let syms = e["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["dso"] == "pmx-workload")
        .map(|r| {
            (
                r["symbol"].as_str().unwrap().to_string(),
                r["overhead"].as_f64().unwrap(),
            )
        })
        .collect();
    (e["samples"].as_u64().unwrap(), syms)
}

/// Every symbol with at least 10% of `a`'s samples is in `b` (sampling
/// varies between runs; the hot code does not).
fn hot_in(a: &[(String, f64)], b: &[(String, f64)]) -> Result<(), String> {
    for (s, o) in a.iter().filter(|(_, o)| *o >= 10.0) {
        if !b.iter().any(|(t, _)| t == s) {
            return Err(format!("{s} ({o}%) missing from {b:?}"));
        }
    }
    Ok(())
}

/// `N samples` of record's summary line.
fn announced(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains(" samples of "))
        .expect(stderr);
    let n = line.split_whitespace().find_map(|w| w.parse().ok());
    n.expect(line)
}

#[test]
fn record_to_a_device_reports_enospc_and_leaves_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("full");
    if !full_node(&dev) {
        return;
    }
    let o = record_to(dev.to_str().unwrap()).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}: No space left on device", dev.display())),
        "{err}"
    );
    assert!(std::fs::metadata(&dev)
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(names(dir.path()), ["full"], "no .old, no temporary file");
}

#[test]
fn record_to_a_fifo_streams_pipe_mode() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stream");
    mkfifo(&fifo);
    let reader = {
        let f = fifo.clone();
        std::thread::spawn(move || std::fs::read(f).unwrap())
    };
    let o = record_to(fifo.to_str().unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = reader.join().unwrap();
    // perf's pipe header: the magic and a header size of 16.
    assert_eq!(&bytes[..8], b"PERFILE2");
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 16);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let saved = dir.path().join("saved");
    std::fs::write(&saved, &bytes).unwrap();
    let r = pmx(&["report", "--json", "-i", saved.to_str().unwrap()]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(report_of(&r.stdout).0, announced(&stderr(&o)));
}

/// `record -o - | report -i -` gives the rows a file gives for the same
/// kind of run: the same symbols of the workload, every sample announced.
#[test]
fn record_to_stdout_reads_back_from_stdin_like_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let f = record_to(file.to_str().unwrap()).output().unwrap();
    assert!(f.status.success(), "{}", stderr(&f));
    let r = pmx(&["report", "--json", "-i", file.to_str().unwrap()]);
    let (file_samples, file_syms) = report_of(&r.stdout);
    assert_eq!(file_samples, announced(&stderr(&f)));

    let mut rec = record_to("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rep = Command::new(PMX)
        .args(["report", "--json", "-i", "-"])
        .stdin(rec.stdout.take().unwrap())
        .output()
        .unwrap();
    let rec = rec.wait_with_output().unwrap();
    assert!(rec.status.success(), "{}", stderr(&rec));
    assert!(rep.status.success(), "{}", stderr(&rep));
    let (pipe_samples, pipe_syms) = report_of(&rep.stdout);
    assert_eq!(pipe_samples, announced(&stderr(&rec)));
    assert!(stderr(&rec).contains("written to standard output"));
    for syms in [&pipe_syms, &file_syms] {
        let spin = syms
            .iter()
            .find(|(s, _)| s == "pmx_perf::workload::program::spin");
        assert!(spin.is_some_and(|(_, o)| *o >= 10.0), "{syms:?}");
    }
    hot_in(&pipe_syms, &file_syms).unwrap();
    hot_in(&file_syms, &pipe_syms).unwrap();
    assert!(!dir.path().join("-").exists());
}

#[test]
fn perf_reads_the_stream() {
    if !pmx_testkit::perf::require("perf report -i -") {
        return;
    }
    let mut rec = record_to("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rep = Command::new("perf")
        .args(["report", "-i", "-", "--stdio"])
        .stdin(rec.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    let out = pmx_testkit::text(&rep.stdout);
    assert!(rep.status.success(), "{}", pmx_testkit::text(&rep.stderr));
    assert!(out.contains("of event 'cpu-clock'"), "{out}");
    assert!(out.contains("pmx_perf::workload::program::spin"), "{out}");
}

#[test]
fn old_file_only_for_a_non_empty_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    std::fs::write(&data, b"").unwrap();
    let o = record_to(data.to_str().unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        names(dir.path()),
        ["perf.data"],
        "an empty file is not kept"
    );
    let first = std::fs::read(&data).unwrap();
    let o = record_to(data.to_str().unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(names(dir.path()), ["perf.data", "perf.data.old"]);
    assert_eq!(
        std::fs::read(dir.path().join("perf.data.old")).unwrap(),
        first
    );
    assert!(stderr(&o).contains("the previous file was kept as"));
}

#[test]
fn stat_that_cannot_start_its_command_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("results.csv");
    let old = b"event,value\ntask-clock,1.5\n";
    std::fs::write(&f, old).unwrap();
    let o = pmx(&[
        "stat",
        "-x",
        ",",
        "-o",
        f.to_str().unwrap(),
        "--",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert_eq!(std::fs::read(&f).unwrap(), old);
    assert_eq!(names(dir.path()), ["results.csv"]);
}

/// Ctrl-C of `stat -I 100 -o f`: every interval up to the signal and the
/// totals are in `f`.
#[test]
fn interrupted_intervals_end_up_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    std::fs::write(&f, "previous\n").unwrap();
    let child = Command::new(PMX)
        .args([
            "stat",
            "-e",
            "task-clock",
            "-I",
            "100",
            "-o",
            f.to_str().unwrap(),
        ])
        .args(["--", "sleep", "10"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let text = std::fs::read_to_string(&f).unwrap();
    let times: Vec<f64> = text
        .lines()
        .filter(|l| l.contains("task-clock") && !l.contains("ran"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(times.len() >= 3, "{text}");
    // Every whole interval, none missing: 0.1, 0.2, … then the partial one.
    for (i, t) in times[..times.len() - 1].iter().enumerate() {
        assert!((t - 0.1 * (i + 1) as f64).abs() < 1e-6, "{text}");
    }
    assert!(
        text.contains("Performance counter stats for 'sleep 10'"),
        "{text}"
    );
    assert!(!text.contains("previous"));
    assert_eq!(names(dir.path()), ["f"]);
}

/// A read-only tmpfs mounted in a temporary directory (root does not
/// obey `chmod 555`); unmounted when dropped.
struct ReadOnly(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl ReadOnly {
    fn mount() -> Option<ReadOnly> {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("ro");
        std::fs::create_dir(&at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
            .arg(&at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            pmx_testkit::skip("cannot mount a read-only tmpfs here (needs root)");
            return None;
        }
        Some(ReadOnly(at, dir))
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_place_and_a_directory_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = pmx(&["stat", "-e", "task-clock", "-o", d, "--", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("{d}: Is a directory")),
        "{}",
        stderr(&o)
    );
    let Some(ro) = ReadOnly::mount() else { return };
    let target = ro.0.join("results.txt");
    let t = target.to_str().unwrap();
    for args in [
        &["stat", "-e", "task-clock", "-o", t, "--", "true"][..],
        &["record", "-e", "cpu-clock", "-o", t, "--", "true"][..],
    ] {
        let o = pmx(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let want = format!("{t}: Read-only file system");
        assert!(stderr(&o).contains(&want), "{args:?}: {}", stderr(&o));
    }
}

/// A file the user may write in a directory they may not (no temporary
/// file beside it): written in place, and left whole by a run that fails
/// before writing. Run as `nobody` (root passes every permission check).
#[test]
fn a_writable_file_in_a_locked_directory_is_written_in_place() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let f = locked.join("results.txt");
    std::fs::write(&f, "old\n").unwrap();
    let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(dir.path(), 0o755).unwrap();
    mode(&f, 0o666).unwrap();
    mode(&locked, 0o555).unwrap();
    let as_nobody = |cmd: &str| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", PMX])
            .args([
                "stat",
                "-e",
                "task-clock:u",
                "-o",
                f.to_str().unwrap(),
                "--",
                cmd,
            ])
            .output()
    };
    let Ok(o) = as_nobody("/nonexistent") else {
        pmx_testkit::skip("no setpriv here");
        return;
    };
    if o.status.code() != Some(127) {
        pmx_testkit::skip(format_args!("cannot run pmx as nobody: {}", stderr(&o)));
        return;
    }
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "old\n");
    let o = as_nobody("true").unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.contains("Performance counter stats for 'true'"),
        "{text}"
    );
    assert!(!text.contains("old"), "{text}");
}
