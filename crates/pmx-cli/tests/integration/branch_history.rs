//! `report --branch-history` with pmx as `perf` beside Debian's perf 6.1:
//! on the shared branch recordings without call chains (perf 4.14 `-b`
//! on Skylake, the Arm file with `hw_idx`) and on the branch file of a
//! local program (`branch_insn`'s: cycles on every entry, loops), in
//! callee and caller order: the same output, but for the tip line. The
//! lines show what the mode adds: the branches in the graph with their
//! `(cycles:N)`, `(predicted:N%)`, `(iter:N avg_cycles:N)` notes, the
//! `srcline,symbol,dso` rows and the IPC column. Files with call chains
//! (the shared perf 3.8 `-a -b -g` one and a local program's): the chain
//! after the branches and a row per frame (children). Entries with
//! types: perf 6.1's names of them.

use super::branch_insn::{self, Extras};
use super::branches::{tools, FILES};
use crate::common::stderr;
use std::path::Path;
use std::process::Command;

/// `BIN report --stdio --branch-history ARGS -i FILE`; perf 6.1 dies of
/// SIGPIPE when its addr2line child fails (a binary that is not here)
/// unless the signal is ignored, so it runs under `trap '' PIPE`.
fn run(bin: &Path, args: &[&str], file: &Path) -> String {
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' PIPE; exec \"$0\" report --stdio --branch-history \"$@\"")
        .arg(bin)
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} {args:?}: {}",
        bin.display(),
        stderr(&o)
    );
    // The tip under the table is each tool's own.
    let text = pmx_testkit::text(&o.stdout);
    text.lines()
        .filter(|l| !l.starts_with("# (Tip:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn same(as_perf: &Path, file: &Path, args: &[&str]) -> String {
    let (ours, theirs) = (run(as_perf, args, file), run(Path::new("perf"), args, file));
    if ours != theirs {
        let d = (ours.lines().zip(theirs.lines()))
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}:\n pmx:  {a:?}\n perf: {b:?}", i + 1));
        panic!(
            "{} {args:?}: outputs differ ({} and {} lines) at {}",
            file.display(),
            ours.lines().count(),
            theirs.lines().count(),
            d.unwrap_or_else(|| "the end".into())
        );
    }
    ours
}

#[test]
fn shared_files_as_perf_prints_them() {
    let Some(t) = tools("report --branch-history against perf") else {
        return;
    };
    for name in [FILES[0], FILES[2]] {
        let file = t.data.join(name);
        for args in [&[][..], &["--no-children"][..], &["-g", "callee"][..]] {
            let out = same(&t.as_perf, &file, args);
            assert!(
                out.contains("# Overhead  Source:Line") && out.contains("IPC   [IPC Coverage]"),
                "{name}: {out}"
            );
            assert!(
                out.contains("            ---0x"),
                "{name}: no branch chain\n{out}"
            );
        }
    }
    let out = same(&t.as_perf, &t.data.join(FILES[0]), &[]);
    assert!(
        out.contains(" (cycles:4)") && out.contains(" (predicted:"),
        "{out}"
    );
}

#[test]
fn a_local_programs_branches_as_perf_prints_them() {
    let Some(t) = tools("report --branch-history of a local program") else {
        return;
    };
    for pie in [false, true] {
        let Some(s) = branch_insn::setup("report --branch-history", pie, false) else {
            return;
        };
        for args in [&[][..], &["--no-children"][..], &["-g", "fractal"][..]] {
            let out = same(&t.as_perf, &s.data, args);
            assert!(out.contains("(cycles:"), "{out}");
        }
    }
}

/// The shared `-a -b -g` file (perf 3.8, Sandy Bridge): each sample's
/// chain after its branches, a row per frame of the chains (children,
/// perf's default there, and callers first), and without children.
#[test]
fn a_file_with_call_chains_as_perf_prints_it() {
    let Some(t) = tools("report --branch-history of a -g file") else {
        return;
    };
    let file = t.data.join(FILES[1]);
    let out = same(&t.as_perf, &file, &[]);
    assert!(out.contains("# Children      Self  Source:Line"), "{out}");
    assert!(out.contains(" (calltrace)"), "no call chain frame\n{out}");
    for args in [&["--no-children"][..], &["-g", "callee"][..]] {
        same(&t.as_perf, &file, args);
    }
}

/// A local program's branch file with its user call chains (`-g`) and
/// each entry's type (`save_type`), in both orders and without children.
#[test]
fn a_local_file_with_call_chains_as_perf_prints_it() {
    let Some(t) = tools("report --branch-history of a local -g file") else {
        return;
    };
    let extras = Extras {
        chains: true,
        types: true,
        ..Extras::default()
    };
    let Some(s) = branch_insn::setup_with("report --branch-history -g", true, extras) else {
        return;
    };
    let out = same(&t.as_perf, &s.data, &[]);
    assert!(
        out.contains("# Children      Self") && out.contains(" (calltrace)"),
        "{out}"
    );
    for args in [&["--no-children"][..], &["-g", "callee"][..]] {
        same(&t.as_perf, &s.data, args);
    }
}

/// Entries that carry their type (`-j save_type`): perf 6.1 notes the
/// types at each branch's target by its names (`COND_FWD`, `COND_BWD`,
/// `UNCOND`, `CALL`, `RET`, `SYSCALL` … and `EXTEND_ABI`'s `FAULT_ALGN`
/// …, perf 4.x's `JCC fwd`, `JMP` no more) and the boundaries crossed.
#[test]
fn branch_types_named_as_perf_names_them() {
    let Some(t) = tools("report --branch-history branch types") else {
        return;
    };
    let extras = Extras {
        types: true,
        ..Extras::default()
    };
    let Some(s) = branch_insn::setup_with("report --branch-history types", true, extras) else {
        return;
    };
    for args in [&[][..], &["-g", "caller"][..]] {
        let out = same(&t.as_perf, &s.data, args);
        for name in ["COND_FWD", "COND_BWD", "CALL", "RET", "SYSCALL"] {
            assert!(out.contains(name), "no {name}\n{out}");
        }
        assert!(!out.contains("JCC"), "{out}");
    }
}

/// `perf top --stitch-lbr` and `perf c2c report --stitch-lbr` under the
/// perf name: pmx refuses both, saying why (perf 6.1's top wants
/// `--call-graph lbr` with it and then needs a PMU with branch stacks,
/// which this machine lacks; pmx's top and c2c build no LBR call stacks).
#[test]
fn top_and_c2c_refuse_stitch_lbr_with_the_reason() {
    let Some(t) = tools("top and c2c --stitch-lbr") else {
        return;
    };
    let file = t.data.join(FILES[0]);
    let top = Command::new(&t.as_perf)
        .args(["top", "--stitch-lbr", "--stdio"])
        .output()
        .unwrap();
    assert_eq!(top.status.code(), Some(2), "{}", stderr(&top));
    assert!(stderr(&top).contains("--stitch-lbr") && stderr(&top).contains("LBR"));
    let theirs = Command::new("perf")
        .args(["top", "--stitch-lbr", "--stdio"])
        .output()
        .unwrap();
    assert!(stderr(&theirs).contains("--stitch-lbr must be used with --call-graph lbr"));
    let c2c = Command::new(&t.as_perf)
        .args(["c2c", "report", "--stitch-lbr", "--stdio", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(c2c.status.code(), Some(2), "{}", stderr(&c2c));
    assert!(stderr(&c2c).contains("--stitch-lbr"), "{}", stderr(&c2c));
}

/// `pmx report --branch-history` under its own name: the table perf
/// prints (the tip aside), and `--json`: the same rows in the same order
/// with their self and children periods, each row's chains (frames and
/// notes) summing to its children period.
#[test]
fn pmx_prints_the_table_and_json_of_it() {
    let Some(_perf) = tools("pmx report --branch-history") else {
        return;
    };
    let extras = Extras {
        chains: true,
        types: true,
        ..Extras::default()
    };
    let Some(s) = branch_insn::setup_with("pmx report --branch-history --json", true, extras)
    else {
        return;
    };
    let theirs = run(Path::new("perf"), &[], &s.data);
    assert_eq!(run(Path::new(crate::common::PMX), &[], &s.data), theirs);
    let o = Command::new(crate::common::PMX)
        .args(["report", "--branch-history", "--json", "-q", "-i"])
        .arg(&s.data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["events"][0];
    assert_eq!(e["children"], true, "{e}");
    let total = e["period"].as_u64().unwrap();
    let rows = e["rows"].as_array().unwrap();
    // perf's rows: `children% self% srcline`, in order.
    let perf_rows: Vec<Vec<&str>> = (theirs.lines())
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(perf_rows.len(), rows.len());
    let mut self_sum = 0;
    for (r, p) in rows.iter().zip(&perf_rows) {
        let pct = |k: &str| format!("{:.2}%", r[k].as_f64().unwrap());
        assert_eq!(
            [pct("children_percent"), pct("self_percent")],
            [p[0], p[1]],
            "{r}"
        );
        assert_eq!(r["srcline"], p[2], "{r}");
        let chained: u64 = (r["chains"].as_array().unwrap().iter())
            .map(|c| c["period"].as_u64().unwrap())
            .sum();
        assert_eq!(chained, r["children"].as_u64().unwrap(), "{r}");
        self_sum += r["self"].as_u64().unwrap();
    }
    assert_eq!(self_sum, total);
    let notes = o.stdout.windows(9).any(|w| w == b"calltrace");
    assert!(notes, "no call-chain note in the JSON");
}
