//! `--call-graph dwarf` end to end: a C program built with
//! `-O2 -fomit-frame-pointer` (no frame pointer to walk) whose hot leaf
//! `c` is reached through main → a → b → c is recorded by pmx and by the
//! installed perf; both files unwind to the full chain in `pmx report`
//! (children, folded stacks, `--inline`), and perf unwinds pmx's file to
//! the same chain (`perf report --call-graph --stdio`). The attr pmx
//! writes is compared with the one perf writes (`perf evlist -v`).
//!
//! Needs a C compiler (`cc`) and, for the cross-checks, `perf`; without
//! them the tests skip with a message.

use crate::common::{pmx, stderr, stdout};
use pmx_testkit::{cc, perf};
use std::path::{Path, PathBuf};

/// main → a → b → c, each `noinline`; the loop of `c` is the hot leaf,
/// in an `always_inline` helper `d` (a frame only DWARF knows of).
const CHAIN_C: &str = r#"
#include <stdlib.h>
volatile unsigned long sink;
static inline __attribute__((always_inline)) unsigned long d(unsigned long n) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x += i * i ^ (x >> 3);
    return x;
}
__attribute__((noinline)) unsigned long c(unsigned long n) { unsigned long r = d(n); sink = r; return r; }
__attribute__((noinline)) unsigned long b(unsigned long n) { unsigned long r = c(n); sink = r; return r + 1; }
__attribute__((noinline)) unsigned long a(unsigned long n) { unsigned long r = b(n); sink = r; return r + 2; }
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000UL;
    sink = a(n);
    return 0;
}
"#;

/// Iterations of the hot loop: about 0.2 s of CPU.
const N: &str = "100000000";

/// The compiled program in a temporary directory, or `None` after a
/// `SKIP` line without a C compiler.
fn program() -> Option<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = ["-O2", "-fomit-frame-pointer", "-g"];
    match cc::compile(dir.path(), "chain", CHAIN_C, &flags) {
        Ok(bin) => Some((dir, bin)),
        Err(why) => {
            pmx_testkit::skip(format_args!("gcc -O2 -fomit-frame-pointer: {why}"));
            None
        }
    }
}

/// `pmx record --call-graph dwarf -e cpu-clock -F 2000 -o OUT -- PROG N`.
fn pmx_record(prog: &Path, out: &Path) {
    let o = pmx(&[
        "record",
        "--call-graph",
        "dwarf",
        "-e",
        "cpu-clock",
        "-F",
        "2000",
        "-o",
        out.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        N,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `pmx report -q -i FILE ARGS…`: standard output.
fn report(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["report", "-q", "-i", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = pmx(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

/// The `--children` rows: symbol → (children %, self %).
fn children(table: &str) -> Vec<(String, f64, f64)> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let pct = |s: &str| s.trim_end_matches('%').parse::<f64>().unwrap();
            (f[f.len() - 1].to_string(), pct(f[0]), pct(f[1]))
        })
        .collect()
}

/// The folded stacks as (frames root first, count).
fn folded(text: &str) -> Vec<(Vec<String>, u64)> {
    text.lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((
                stack.split(';').map(String::from).collect(),
                n.parse().ok()?,
            ))
        })
        .collect()
}

/// Of all samples, the share whose stack holds `chain` consecutively.
fn share_with(stacks: &[(Vec<String>, u64)], chain: &[&str]) -> f64 {
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let with: u64 = stacks
        .iter()
        .filter(|(s, _)| s.windows(chain.len()).any(|w| w == chain))
        .map(|s| s.1)
        .sum();
    with as f64 / total.max(1) as f64
}

/// pmx's report of a dwarf file shows the whole chain: main, a, b with
/// (nearly) all of c's inclusive share and no self share; the folded
/// stacks read main;a;b;c; `--inline` adds `d (inlined)` under c.
fn assert_full_chain(file: &Path) {
    let rows = children(&report(file, &["--children"]));
    let row = |sym: &str| {
        rows.iter()
            .find(|r| r.0 == sym)
            .unwrap_or_else(|| panic!("no row for {sym} in {rows:?}"))
            .clone()
    };
    let (_, c_children, c_self) = row("c");
    assert!(c_self > 80.0, "c is the hot leaf: {rows:?}");
    for caller in ["b", "a", "main"] {
        let (_, ch, slf) = row(caller);
        assert!(
            ch >= c_children * 0.95 && slf < 2.0,
            "{caller} must carry c's samples as children: {rows:?}"
        );
    }
    let stacks = folded(&report(file, &["--folded"]));
    let share = share_with(&stacks, &MAIN_A_B_C);
    assert!(share > 0.8, "only {share:.2} of the stacks read main;a;b;c");
    let inl = folded(&report(file, &["--folded", "--inline"]));
    let share = share_with(&inl, &["main", "a", "b", "c", "d (inlined)"]);
    assert!(
        share > 0.8,
        "--inline: {share:.2} of the stacks end in c;d (inlined)"
    );
}

#[test]
fn pmx_dwarf_file_unwinds_to_main_a_b_c() {
    let Some((dir, prog)) = program() else { return };
    let data = dir.path().join("pmx.data");
    pmx_record(&prog, &data);
    assert_full_chain(&data);
}

/// The chain from main to the hot leaf, callers first.
const MAIN_A_B_C: [&str; 4] = ["main", "a", "b", "c"];

/// A perf graph block that goes main → a → b → c first.
fn starts_main_a_b_c(graph: &[String]) -> bool {
    graph.len() >= 4 && graph[..4] == MAIN_A_B_C
}

/// The names of a perf `--stdio` call graph block, from the line
/// `---ROOT` to the blank line that ends it (branch marks removed).
fn perf_graph_after(text: &str, root: &str) -> Vec<String> {
    let mut lines = text
        .lines()
        .skip_while(|l| l.trim() != format!("---{root}"));
    let mut names: Vec<String> = lines
        .next()
        .map(|_| vec![root.to_string()])
        .unwrap_or_default();
    for l in lines.take_while(|l| !l.trim().is_empty()) {
        let t = l.trim().trim_start_matches('|').trim();
        let name = t.rsplit("--").next().unwrap_or(t).trim();
        if !name.is_empty() {
            names.push(name.to_string());
        }
    }
    names
}

/// perf reads pmx's dwarf file and unwinds it to the same chain, with
/// the attr bits perf itself sets for `--call-graph dwarf`.
#[test]
fn perf_unwinds_pmx_dwarf_file_the_same() {
    let Some((dir, prog)) = program() else { return };
    if !perf::require("") {
        return;
    }
    let data = dir.path().join("pmx.data");
    pmx_record(&prog, &data);
    let o = perf::on_file(&["report", "--call-graph", "--stdio"], &data);
    assert!(o.status.success(), "{}", stderr(&o));
    let graph = perf_graph_after(&stdout(&o), "main");
    assert!(starts_main_a_b_c(&graph), "{}", stdout(&o));

    // The attr next to perf's own: `perf evlist -v` of both files.
    let theirs = dir.path().join("perf.data");
    if let Err(why) = perf::record_cpu_clock(&["--call-graph", "dwarf"], &theirs, &prog) {
        pmx_testkit::skip(format_args!("perf record --call-graph dwarf: {why}"));
        return;
    }
    let evlist = |f: &Path| stdout(&perf::on_file(&["evlist", "-v"], f));
    let field = |text: &str, name: &str| -> Option<String> {
        text.split(", ")
            .find_map(|kv| kv.strip_prefix(&format!("{name}: ")))
            .map(|v| v.trim().to_string())
    };
    let (ours, perfs) = (evlist(&data), evlist(&theirs));
    for name in [
        "sample_regs_user",
        "sample_stack_user",
        "exclude_callchain_user",
        "mmap_data",
    ] {
        assert_eq!(
            field(&ours, name),
            field(&perfs, name),
            "{name}: pmx {ours} perf {perfs}"
        );
        assert!(field(&ours, name).is_some(), "{name} unset: {ours}");
    }
    for bit in ["CALLCHAIN", "REGS_USER", "STACK_USER"] {
        let st = field(&ours, "sample_type").unwrap();
        assert!(st.split('|').any(|b| b == bit), "{bit} not in {st}");
    }
}

/// pmx reads the file `perf record --call-graph dwarf` writes, with the
/// chain perf itself shows for it.
#[test]
fn pmx_reads_perf_dwarf_file_with_perfs_chains() {
    let Some((dir, prog)) = program() else { return };
    if !perf::require("") {
        return;
    }
    let theirs = dir.path().join("perf.data");
    if let Err(why) = perf::record_cpu_clock(&["--call-graph", "dwarf"], &theirs, &prog) {
        pmx_testkit::skip(format_args!("perf record --call-graph dwarf: {why}"));
        return;
    }
    let o = perf::on_file(&["report", "--call-graph", "--stdio"], &theirs);
    assert!(o.status.success(), "{}", stderr(&o));
    let graph = perf_graph_after(&stdout(&o), "main");
    assert!(
        starts_main_a_b_c(&graph),
        "perf's own view of its file: {}",
        stdout(&o)
    );
    assert_full_chain(&theirs);
}

#[test]
fn lbr_and_bad_sizes_are_refused_clearly() {
    let o = pmx(&["record", "--call-graph", "dwarf,70000", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("callchain: Incorrect stack dump size (max 65528): 70000"),
        "{}",
        stderr(&o)
    );
    let o = pmx(&["record", "--call-graph", "fpx", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // No LBR on this machine (a VM without a PMU, or not Intel): the
    // kernel refuses the branch stack and pmx says what LBR needs.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lbr.data");
    let o = pmx(&[
        "record",
        "--call-graph",
        "lbr",
        "-e",
        "cpu-clock",
        "-o",
        out.to_str().unwrap(),
        "--",
        "true",
    ]);
    if o.status.success() {
        pmx_testkit::skip("this machine records LBR call stacks for cpu-clock");
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--call-graph lbr") && stderr(&o).contains("--call-graph dwarf"),
        "{}",
        stderr(&o)
    );
}
