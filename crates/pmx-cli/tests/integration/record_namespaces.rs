//! `record --namespaces`: the kernel's NAMESPACES records of the tasks a
//! command creates and one synthesized for the command itself (and for
//! every task of `-p`), shown by `script --show-namespace-events` as
//! perf 6.1 shows them: perf and pmx print the same lines of pmx's file,
//! and the same namespaces (device and inode of each) as perf's own
//! recording of the same command.

use crate::common::pmx;
use pmx_testkit::{perf, text};
use std::path::Path;

/// The `PERF_RECORD_NAMESPACES` lines of `script --show-namespace-events`
/// (each with its two lines of namespaces).
fn namespace_lines(out: &str) -> Vec<String> {
    let lines: Vec<&str> = out.lines().collect();
    let mut v = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("PERF_RECORD_NAMESPACES") {
            let more = lines.get(i + 1..(i + 3).min(lines.len())).unwrap_or(&[]);
            v.push([&[*l][..], more].concat().join("\n"));
        }
    }
    v
}

/// The namespaces of a line group: `[0/net: 4/0xeffffff9, …]` and the
/// count after `nr_namespaces:`.
fn links(group: &str) -> String {
    let at = group.find("nr_namespaces").unwrap_or(0);
    group[at..].split_whitespace().collect::<Vec<_>>().join(" ")
}

fn script(tool: &str, file: &Path) -> String {
    let args = [
        "script",
        "--show-namespace-events",
        "-i",
        file.to_str().unwrap(),
    ];
    let o = match tool {
        "perf" => perf::on_file(&args[..2], file),
        _ => pmx(&args),
    };
    assert!(o.status.success(), "{tool} script: {}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn namespace_records_are_written_and_shown_as_perf_shows_them() {
    if !perf::require("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cmd = ["sh", "-c", "/bin/true; /bin/true"];
    let ours = dir.path().join("pmx.data");
    let o = pmx(&[
        &[
            "record",
            "-q",
            "--namespaces",
            "-e",
            "cpu-clock",
            "-o",
            ours.to_str().unwrap(),
            "--",
        ][..],
        &cmd[..],
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let theirs = dir.path().join("perf.data");
    let o = std::process::Command::new("perf")
        .args(["record", "-q", "--namespaces", "-e", "cpu-clock", "-o"])
        .arg(&theirs)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    assert!(o.status.success(), "perf record: {}", text(&o.stderr));
    // pmx's file: the same lines from both readers.
    let (by_perf, by_pmx) = (script("perf", &ours), script("pmx", &ours));
    let (a, b) = (namespace_lines(&by_perf), namespace_lines(&by_pmx));
    assert_eq!(a, b, "perf:\n{by_perf}\npmx:\n{by_pmx}");
    // The command's (synthesized) and its two children's (the kernel's).
    assert_eq!(a.len(), 3, "{by_perf}");
    // perf's file of the same command: as many, the same namespaces.
    let p = namespace_lines(&script("perf", &theirs));
    let same: Vec<String> = p.iter().map(|g| links(g)).collect();
    assert_eq!(a.iter().map(|g| links(g)).collect::<Vec<_>>(), same);
    assert!(same[0].starts_with("nr_namespaces: 7 [0/net: "), "{same:?}");
    // pmx script reads perf's file as perf does.
    assert_eq!(namespace_lines(&script("pmx", &theirs)), p);
}
