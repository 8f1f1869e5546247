//! perf mem's own flags against perf 6.1: `-D` (the raw dump, with its
//! padded first line), `-x`, `-p`, `--data-page-size`, `-U`, `-C` (its
//! checks: perf 6.1's dump does not filter by it) taken before or after
//! `report`, on the real `weight_struct` recording and on a page-fault
//! recording made here (`-d -e page-faults -c 1`).

use crate::common::{pmx, stderr, stdout};
use crate::memory::{perf_out, same_lines, weight_struct};
use pmx_testkit::perf;
use std::path::Path;
use std::process::Command;

fn lines(s: &str) -> Vec<String> {
    s.lines().map(String::from).collect()
}

/// perf's and pmx's `mem FLAGS… report -i FILE` (perf's stderr dropped),
/// without the lines of `skip` (a difference of symbol names that is not
/// the dump's).
fn compare(file: &Path, flags: &[&str], skip: &str) {
    let mut args = flags.to_vec();
    args.insert(0, "mem");
    let theirs = perf_out(&args, file);
    args.extend(["-i", file.to_str().unwrap()]);
    let o = pmx(&args);
    assert!(o.status.success(), "{flags:?}: {}", stderr(&o));
    let keep = |s: &str| -> Vec<String> {
        lines(s)
            .into_iter()
            .filter(|l| skip.is_empty() || !l.contains(skip))
            .collect()
    };
    same_lines(&flags.join(" "), &keep(&stdout(&o)), &keep(&theirs));
}

const CASES: &[&[&str]] = &[
    &["-D", "report"],
    &["report", "-D", "-x", ","],
    &["-p", "--data-page-size", "report", "-D"],
    &["-U", "-x", ";", "report", "-D"],
    &["-C", "0-3", "report", "-D"],
];

#[test]
fn perf_mems_dump_and_flags_are_perfs() {
    let Some(f) = weight_struct() else { return };
    if !perf::require("") {
        return;
    }
    for flags in CASES {
        compare(&f, flags, "");
    }
    // -p and --data-page-size change report's sort order, as perf's.
    for flag in ["-p", "--data-page-size"] {
        let theirs = perf_out(&["mem", flag, "report", "--stdio"], &f);
        let o = pmx(&["mem", "report", flag, "--stdio", "-i", f.to_str().unwrap()]);
        let ours = stdout(&o);
        let strip = |s: &str| -> Vec<String> {
            lines(s)
                .into_iter()
                .filter(|l| !l.starts_with("# (Tip:"))
                .collect()
        };
        same_lines(flag, &strip(&ours), &strip(&theirs));
    }
    // -C is checked as perf checks it: a CPU past the file's, not a list.
    for (list, says) in [
        ("112", "Requested CPU 112 too large"),
        ("x", "Invalid cpu_list"),
    ] {
        let o = pmx(&["mem", "-C", list, "report", "-D", "-i", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
}

#[test]
fn the_dump_of_a_page_fault_recording_is_perfs() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pf.data");
    let o = Command::new("perf")
        .args(["record", "-q", "-d", "-e", "page-faults", "-c", "1", "-o"])
        .arg(&file)
        .args(["--", "ls", "/"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // perf 6.1 names some of libc's PLT entries `@plt` alone where pmx
    // (and perf's report) give the function's name: those lines are left out.
    for flags in CASES.iter().filter(|f| f[0] != "-C") {
        compare(&file, flags, "@plt");
    }
    // No CPU in the samples: -C is refused with perf's words.
    let o = pmx(&[
        "mem",
        "-C",
        "0",
        "-D",
        "report",
        "-i",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("File does not contain CPU events. Remove -C option to proceed."));
}
