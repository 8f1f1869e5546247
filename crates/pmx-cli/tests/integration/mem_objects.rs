//! Data objects by name: a program whose first touches land in known
//! global arrays (`.data`, `.bss`, a static `.bss` one) and a heap block,
//! one write per page, recorded with `-d -e page-faults -c 1` by perf and
//! by pmx. On both files perf and pmx print the same data addresses and
//! the same `--mem-mode --sort dso_daddr` table, and pmx's own
//! `--sort symbol_daddr` gives each array the share of the samples that
//! `nm`'s address ranges give perf script's addresses. Under perf's name
//! `--sort symbol_daddr` and `dcacheline` are perf 6.1's (the `.data`
//! array's addresses as `big_data+0xOFF`), and the exports of the memory
//! samples (`--folded`, pprof's labels read by `go tool pprof -tags`)
//! give each array its faults.

use crate::common::{pmx, stderr, stdout, PMX};
use crate::memory::{perf_out, pmx_out, same_lines, without_tip};
use crate::offcpu::which_go;
use pmx_testkit::{cc, perf};
use std::path::Path;
use std::process::Command;

/// The arrays (pages each) and a heap block of 150 pages (above malloc's
/// mmap threshold: anonymous memory of its own).
const OBJS: &str = "#include <stdio.h>\n#include <stdlib.h>\n#define P 4096\n\
    char big_bss[200 * P];\nchar big_data[100 * P] = {1};\nstatic char small_bss[50 * P];\n\
    int main(void) { char *h = malloc(150 * P);\n\
    printf(\"%p %p\\n\", (void *)big_bss, (void *)h); fflush(stdout);\n\
    for (int i = 0; i < 200 * P; i += P) big_bss[i] = 1;\n\
    for (int i = 0; i < 100 * P; i += P) big_data[i] = 2;\n\
    for (int i = 0; i < 50 * P; i += P) small_bss[i] = 3;\n\
    for (int i = 0; i < 150 * P; i += P) h[i] = 4;\n\
    return big_bss[P] + big_data[P] + small_bss[P] + h[P] == 10 ? 0 : 1; }\n";

/// `nm -S`'s (start, size) of symbol `name` of `bin`.
fn nm_range(bin: &Path, name: &str) -> (u64, u64) {
    let o = Command::new("nm").arg("-S").arg(bin).output().unwrap();
    let text = stdout(&o);
    let line = (text.lines())
        .find(|l| l.split_whitespace().nth(3) == Some(name))
        .unwrap_or_else(|| panic!("nm has no {name}: {text}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    (hex(w[0]), hex(w[1]))
}

/// `pmx report --sort symbol_daddr`'s share of each row, by name.
fn shares(report: &str) -> Vec<(String, f64)> {
    (report.lines())
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            let name = rest.trim().strip_prefix("[.] ")?;
            let name = name.split("  ").next()?.trim().to_string();
            Some((name, pct.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn data_objects_are_named_and_each_array_gets_its_share() {
    if !perf::require("") {
        return;
    }
    if Command::new("nm").arg("--version").output().is_err() {
        return pmx_testkit::skip("no nm");
    }
    let dir = tempfile::tempdir().unwrap();
    let Ok(bin) = cc::compile(dir.path(), "objs", OBJS, &["-O1"]) else {
        return pmx_testkit::skip("no C compiler");
    };
    let ranges: Vec<(&str, (u64, u64))> = ["big_bss", "big_data", "small_bss"]
        .iter()
        .map(|n| (*n, nm_range(&bin, n)))
        .collect();
    for tool in ["pmx", "perf"] {
        let file = dir.path().join(format!("{tool}.data"));
        let exe = if tool == "pmx" { PMX } else { "perf" };
        let o = Command::new(exe)
            .args(["record", "-q", "-d", "-e", "page-faults", "-c", "1", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .output()
            .unwrap();
        assert!(o.status.success(), "{tool} record: {}", stderr(&o));
        let printed = stdout(&o);
        let w: Vec<&str> = printed.split_whitespace().collect();
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
        let (bss_at, heap) = (hex(w[0]), hex(w[1]));
        let bias = bss_at - ranges[0].1 .0;
        // Both tools read the file alike.
        let theirs = perf_out(&["script", "-F", "addr"], &file);
        let ours = pmx_out(&["script", "-F", "addr"], &file);
        same_lines(
            "script -F addr",
            &ours.lines().map(String::from).collect::<Vec<_>>(),
            &theirs.lines().map(String::from).collect::<Vec<_>>(),
        );
        let args = ["report", "--mem-mode", "--stdio", "--sort", "dso_daddr"];
        same_lines(
            &format!("dso_daddr of {tool}'s file"),
            &without_tip(&pmx_out(&args, &file)),
            &without_tip(&perf_out(&args, &file)),
        );
        // pmx's own layout: one row per object, its share of the samples
        // (page faults weigh nothing: each sample counts 1).
        let addrs: Vec<u64> = theirs.lines().map(|l| hex(l.trim())).collect();
        let o = pmx(&[
            "report",
            "--sort",
            "symbol_daddr",
            "-i",
            file.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let report = stdout(&o);
        let rows = shares(&report);
        for (name, (start, size)) in &ranges {
            let at = start + bias;
            let n = addrs.iter().filter(|a| (at..at + size).contains(a)).count();
            let want = 100.0 * n as f64 / addrs.len() as f64;
            assert!(n >= 40, "{tool}: {name}: {n} faults\n{report}");
            let got = (rows.iter().find(|(r, _)| r == name))
                .unwrap_or_else(|| panic!("{tool}: no row {name}\n{report}"))
                .1;
            assert!(
                (got - want).abs() <= 1.0,
                "{tool}: {name}: {got}% in pmx, {want:.2}% by nm's range\n{report}"
            );
            assert_eq!(
                rows.iter().filter(|(r, _)| r == name).count(),
                1,
                "{report}"
            );
        }
        perf_names(&file, tool);
        exports(&file, tool, &ranges, |name| {
            let (start, size) = ranges.iter().find(|r| r.0 == name).unwrap().1;
            let at = start + bias;
            addrs.iter().filter(|a| (at..at + size).contains(a)).count()
        });
        // The heap block is anonymous memory (malloc mmaps it), named so.
        let in_heap = addrs
            .iter()
            .filter(|a| (heap..heap + 150 * 4096).contains(a));
        assert!(in_heap.count() >= 100, "{tool}: the heap block's faults");
        assert!(
            rows.iter()
                .any(|(r, p)| r == "[anon]" && *p >= 100.0 * 100.0 / addrs.len() as f64),
            "{report}"
        );
    }
}

/// Under perf's name, `--sort symbol_daddr` names the `.data` array's
/// addresses as perf 6.1 does (`big_data+0xOFF`, each row where perf has
/// it), and the cache lines are perf's (their cells; the column's width
/// follows the longest name of any binary, where pmx and perf name some
/// of libc's PLT entries apart: docs/memory.md).
fn perf_names(file: &Path, tool: &str) {
    let dir = tempfile::tempdir().unwrap();
    let as_perf = dir.path().join("perf");
    std::os::unix::fs::symlink(PMX, &as_perf).unwrap();
    let trimmed = |s: &str, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        (without_tip(s).iter())
            .filter(|l| keep(l))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    for key in ["symbol_daddr", "dcacheline"] {
        let args = ["report", "--mem-mode", "--stdio", "--sort", key];
        let theirs = perf_out(&args, file);
        let o = Command::new(&as_perf)
            .args(args)
            .arg("-i")
            .arg(file)
            .output();
        let o = o.unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let ours = stdout(&o);
        let keep: &dyn Fn(&str) -> bool = match key {
            "symbol_daddr" => &|l: &str| l.contains("big_data"),
            _ => &|l: &str| !l.starts_with("# ."),
        };
        let (a, b) = (trimmed(&ours, keep), trimmed(&theirs, keep));
        // perf 6.1 names some of libc's PLT entries `@plt` alone where pmx
        // gives the function's name (docs/memory.md, docs/PERF_DIFF.md):
        // that one word is compared without the name.
        let plt = |v: Vec<String>| v.into_iter().map(|l| unnamed_plt(&l)).collect::<Vec<_>>();
        let (a, b) = (plt(a), plt(b));
        if key == "symbol_daddr" {
            assert!(
                b.len() >= 40 && b[0].contains("[.] big_data+0x"),
                "{theirs}"
            );
        }
        same_lines(&format!("{key} of {tool}'s file"), &a, &b);
    }
}

/// `l` with a PLT entry's name left out (`[.] memset@plt` → `[.] @plt`).
fn unnamed_plt(l: &str) -> String {
    let Some(i) = l.find("[.] ") else {
        return l.to_string();
    };
    let rest = &l[i + 4..];
    match rest.find("@plt") {
        Some(j) if !rest[..j].contains(' ') => format!("{}{}", &l[..i + 4], &rest[j..]),
        _ => l.to_string(),
    }
}

/// The exports of `file`'s memory samples: the folded stacks of data
/// objects and pprof's `data_object` labels give each array `faults(name)`
/// samples (a page fault weighs nothing: each costs 1).
fn exports(file: &Path, tool: &str, ranges: &[(&str, (u64, u64))], faults: impl Fn(&str) -> usize) {
    let f = file.to_str().unwrap();
    let o = pmx(&["report", "--mem-mode", "--folded", "-i", f]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folded = stdout(&o);
    for (name, _) in ranges {
        let n: usize = (folded.lines())
            .filter(|l| l.split(';').nth(1) == Some(name))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(n, faults(name), "{tool}: {name} in\n{folded}");
    }
    assert!(
        folded
            .lines()
            .any(|l| l.ends_with(";main 1") || l.contains(";main ")),
        "{folded}"
    );
    let Ok(go) = which_go() else {
        return pmx_testkit::skip("go tool pprof: golang-go is not installed");
    };
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("mem.pb.gz");
    let o = pmx(&[
        "report",
        "--mem-mode",
        "--pprof",
        pb.to_str().unwrap(),
        "-i",
        f,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Command::new(&go)
        .args(["tool", "pprof", "-tags", "-sample_index=weight"])
        .arg(&pb)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let tags = stdout(&o);
    assert!(o.status.success(), "{}{tags}", stderr(&o));
    for (name, _) in ranges {
        // `   200.0 (48.19%): big_bss` (weights print as decimals)
        let n = (tags.lines())
            .find(|l| l.trim_end().ends_with(&format!(": {name}")))
            .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok());
        assert_eq!(n, Some(faults(name) as f64), "{tool}: {name} in\n{tags}");
    }
    assert!(
        tags.contains("mem_level:") && tags.contains("data_map:"),
        "{tags}"
    );
}
