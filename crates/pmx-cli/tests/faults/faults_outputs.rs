//! Fault campaign, output files (issue 22, items 1 and 3): every command
//! that writes a file the user names (`stat -o`, `stat -I -o`, `stat
//! --plot`, `record -o`, `plot -o`), pointed at the places people point
//! them by accident: a device that is full (a node with /dev/full's
//! numbers made in a temporary directory), a read-only file system, a
//! FIFO, a directory, a symbolic link, and a file that must survive a run
//! that fails before measuring.
//!
//! Expected: a device is written in place and stays a device, its ENOSPC
//! reported with the path (stat's totals still on the terminal); a
//! read-only place and a directory give an error naming the path; a FIFO
//! gets the whole output and stays a FIFO; a link stays a link and its
//! target gets the output; a failed run leaves the old bytes; no
//! temporary file is ever left behind.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::faults_support::*;

/// One writer: its arguments with `OUT` where the output path goes,
/// what its complete output starts with, and whether it prints
/// totals (which must reach the terminal when the file fails).
struct Writer {
    name: &'static str,
    args: Vec<String>,
    starts: &'static [u8],
    totals: bool,
}

fn writers() -> Vec<Writer> {
    let plot_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plot/small.csv");
    let w = |name, args: &[&str], starts, totals| Writer {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        starts,
        totals,
    };
    vec![
        w(
            "stat -o",
            &["stat", "-e", "task-clock", "-o", "OUT", "--", "true"],
            b"\n Perf",
            true,
        ),
        w(
            "stat -I 100 -o",
            &[
                "stat",
                "-e",
                "task-clock",
                "-I",
                "100",
                "-o",
                "OUT",
                "--",
                "sleep",
                "0.25",
            ],
            b"      0.1",
            true,
        ),
        w(
            "stat --plot",
            &[
                "stat",
                "-e",
                "task-clock",
                "-I",
                "100",
                "--plot",
                "OUT.svg",
                "--",
                "sleep",
                "0.25",
            ],
            b"<?xml",
            false,
        ),
        w(
            "record -o",
            &["record", "-e", "cpu-clock", "-o", "OUT", "--", "true"],
            b"PERFILE2",
            false,
        ),
        w(
            "plot -o",
            &["plot", plot_in.to_str().unwrap(), "-o", "OUT.svg"],
            b"<?xml",
            false,
        ),
    ]
}

/// Run `w` with `OUT` replaced by `out` (and `OUT.svg` by `out` when the
/// writer needs the extension: the places are named `….svg` for those).
fn run(w: &Writer, out: &Path) -> Option<Run> {
    let args: Vec<String> = w
        .args
        .iter()
        .map(|a| match a.as_str() {
            "OUT" | "OUT.svg" => out.to_str().unwrap().to_string(),
            _ => a.clone(),
        })
        .collect();
    run_bounded(Command::new(PMX).args(&args), Duration::from_secs(30))
}

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// The name a writer's output gets in a place (`.svg` for the charts).
fn leaf(w: &Writer, name: &str) -> String {
    if w.args.iter().any(|a| a == "OUT.svg") {
        format!("{name}.svg")
    } else {
        name.to_string()
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Count a run that must fail with `reason` and the path.
fn expect_error(t: &mut Tally, case: &str, r: Option<Run>, path: &Path, reason: &str) -> bool {
    t.tried += 1;
    let Some(r) = r else {
        t.hang(case);
        return false;
    };
    if r.panicked() || r.crashed() {
        t.panic(case, &r.stderr);
        return false;
    }
    let want = format!("{}: {reason}", path.display());
    if r.status.code() != Some(1) || !r.stderr.contains(&want) {
        t.unclear(case, &format!("{:?}: {}", r.status, r.stderr));
        return false;
    }
    t.refused += 1;
    true
}

#[test]
fn outputs_to_a_full_device() {
    let mut t = Tally::new("output → device node (1,7)");
    for w in writers() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join(leaf(&w, "full"));
        // SAFETY: a valid C string.
        let made = unsafe {
            libc::mknod(
                c_path(&dev).as_ptr(),
                libc::S_IFCHR | 0o666,
                libc::makedev(1, 7),
            )
        };
        if made != 0 {
            pmx_testkit::skip("mknod needs CAP_MKNOD");
            return;
        }
        let r = run(&w, &dev);
        let totals_shown = r.as_ref().is_some_and(|r| r.stderr.contains("task-clock"));
        if expect_error(&mut t, w.name, r, &dev, "No space left on device") {
            let still = std::fs::metadata(&dev).is_ok_and(|m| m.file_type().is_char_device());
            if !still || entries(dir.path()).len() != 1 {
                t.lost(
                    w.name,
                    &format!("the node was replaced: {:?}", entries(dir.path())),
                );
            }
            if w.totals && !totals_shown {
                t.lost(w.name, "the totals did not reach the terminal");
            }
        }
    }
    t.finish();
}

#[test]
fn outputs_to_a_read_only_place_and_a_directory() {
    let mut t = Tally::new("output → read-only fs, directory");
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
        .arg(&ro)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        pmx_testkit::skip("cannot mount a read-only tmpfs (needs root): read-only cases left out");
    }
    // Unmounted however the test ends.
    struct Unmount<'a>(&'a Path, bool);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            if self.1 {
                let _ = Command::new("umount").arg(self.0).status();
            }
        }
    }
    let _unmount = Unmount(&ro, mounted);
    for (i, w) in writers().into_iter().enumerate() {
        if mounted {
            let out = ro.join(leaf(&w, "out"));
            let r = run(&w, &out);
            expect_error(
                &mut t,
                &format!("{} read-only", w.name),
                r,
                &out,
                "Read-only file system",
            );
        }
        let d = dir.path().join(leaf(&w, &format!("directory-{i}")));
        std::fs::create_dir(&d).unwrap();
        let r = run(&w, &d);
        expect_error(
            &mut t,
            &format!("{} directory", w.name),
            r,
            &d,
            "Is a directory",
        );
    }
    t.finish();
}

/// Count a run that must succeed and leave `check`'s bytes complete.
fn expect_output(t: &mut Tally, case: &str, r: Option<Run>, w: &Writer, bytes: &[u8]) {
    t.tried += 1;
    match r {
        None => t.hang(case),
        Some(r) if r.panicked() || r.crashed() => t.panic(case, &r.stderr),
        Some(r) if !r.status.success() => t.unclear(case, &r.stderr),
        Some(_) if !bytes.starts_with(w.starts) => {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned();
            t.lost(case, &format!("the output starts {head:?}"));
        }
        Some(_) => t.accepted += 1,
    }
}

#[test]
fn outputs_to_a_fifo_a_link_and_over_a_file_that_must_survive() {
    let mut t = Tally::new("output → FIFO, symlink, failed run");
    for w in writers() {
        let dir = tempfile::tempdir().unwrap();
        // A FIFO with a reader: the whole output through it, in place.
        let fifo = dir.path().join(leaf(&w, "fifo"));
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
        let reader = {
            let f = fifo.clone();
            std::thread::spawn(move || std::fs::read(f).unwrap_or_default())
        };
        let r = run(&w, &fifo);
        // A writer that failed before opening the FIFO leaves the reader
        // waiting: open it once to let it go.
        // (Non-blocking: when the reader is gone, the open fails at once.)
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo);
        let got = reader.join().unwrap();
        expect_output(&mut t, &format!("{} fifo", w.name), r, &w, &got);
        if !std::fs::metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo()) {
            t.lost(w.name, "the FIFO was replaced");
        }
        // A link to a file: the target gets the output, the link stays.
        let target = dir.path().join(leaf(&w, "target"));
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join(leaf(&w, "link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let r = run(&w, &link);
        let got = std::fs::read(&target).unwrap();
        expect_output(&mut t, &format!("{} symlink", w.name), r, &w, &got);
        if !std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
            t.lost(w.name, "the link was replaced by a file");
        }
        // A run that fails before measuring (stat, record: a missing
        // command; plot: a missing input) leaves the old bytes.
        let keep = dir.path().join(leaf(&w, "keep"));
        std::fs::write(&keep, b"old results\n").unwrap();
        let mut failing = Writer {
            args: w.args.clone(),
            ..w
        };
        match failing.args.iter().position(|a| a == "--") {
            Some(i) => failing.args.truncate(i + 1),
            None => failing.args[1] = "/nonexistent.csv".into(),
        }
        failing.args.push("/nonexistent".into());
        if failing.args[0] == "plot" {
            failing.args.pop();
        }
        t.tried += 1;
        match run(&failing, &keep) {
            None => t.hang(&format!("{} failed run", w.name)),
            Some(r) if r.panicked() => t.panic(w.name, &r.stderr),
            Some(r) if r.status.success() => t.unclear(w.name, "a failed run exited 0"),
            Some(_) if std::fs::read(&keep).unwrap() != b"old results\n" => {
                t.lost(&format!("{} failed run", w.name), "the old file changed")
            }
            Some(_) => t.refused += 1,
        }
        let left: Vec<String> = entries(dir.path())
            .into_iter()
            .filter(|n| n.contains(".pmx-"))
            .collect();
        if !left.is_empty() {
            t.lost(w.name, &format!("temporary files left: {left:?}"));
        }
    }
    t.finish();
}
