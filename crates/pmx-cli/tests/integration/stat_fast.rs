//! `pmx stat`'s common lines, read without clap (`pmx_args::stat_fast`,
//! for start-up), mean what clap makes of them: each line below runs as
//! given (the fast path takes it) and with `--backend perf` added (pmx's
//! default, a flag the fast path leaves to clap), and both runs give the
//! same exit status and the same report, written to the same place, once
//! the counts' digits are set aside.

use crate::common::{pmx, stderr, stdout};
use std::path::Path;

/// `text` with each number (digits, with or without a fraction: a mean
/// of `-r` runs may be whole) as `N` and each run of blanks as one
/// space: the counts and their column widths vary from run to run.
fn shape(text: &str) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        let mut digits = false;
        for c in word.chars() {
            let number = c.is_ascii_digit() || (digits && c == '.');
            match (number, digits) {
                (true, true) => {}
                (true, false) => out.push('N'),
                (false, _) => out.push(c),
            }
            digits = number;
        }
        out.push(' ');
    }
    out
}

/// The exit status, stdout, stderr and `-o` file of `pmx stat ARGS`.
fn run(args: &[&str], file: Option<&Path>) -> (Option<i32>, String, String, String) {
    let o = pmx(args);
    let written = file.map(|f| std::fs::read_to_string(f).unwrap_or_default());
    let report = shape(&written.unwrap_or_default());
    (
        o.status.code(),
        shape(&stdout(&o)),
        shape(&stderr(&o)),
        report,
    )
}

fn same(line: &[&str], file: Option<&Path>) {
    let fast = run(line, file);
    let mut slow = line.to_vec();
    slow.insert(1, "--backend");
    slow.insert(2, "perf");
    assert_eq!(fast, run(&slow, file), "{line:?}");
}

#[test]
fn common_lines_mean_what_clap_makes_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("counts.txt");
    let out = out.to_str().unwrap();
    let ev = ["-e", "page-faults", "-e", "context-switches,cpu-migrations"];
    for tail in [
        &["-x,", "--", "true"][..],
        &["-x", ";", "-r", "3", "--", "true"],
        &["-j", "--", "true"],
        &["--", "true"],
        &["--field-separator=,", "--", "sh", "-c", "exit 3"],
        &["-x,", "--", "/nonexistent/program"],
    ] {
        same(&[&["stat"][..], &ev, tail].concat(), None);
    }
    same(
        &["stat", "-o", out, "-x,", "-etask-clock", "--", "true"],
        Some(Path::new(out)),
    );
    same(
        &["stat", "--output", out, "--event=page-faults", "--", "true"],
        Some(Path::new(out)),
    );
    // An error comes from the same place.
    same(&["stat", "-e", "no-such-event", "--", "true"], None);
    let exit = run(
        &[
            "stat",
            "-e",
            "page-faults",
            "-x,",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
        None,
    );
    assert_eq!(exit.0, Some(3), "the command's status: {exit:?}");
}
