//! The checker on small crates written for the purpose, and on this
//! workspace itself (the check CI relies on).

use pmx_archcheck::{check, judge, parse_debts, Finding, Limits};
use std::path::Path;

/// Writes `files` (path, text) under a temp workspace.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn limits() -> Limits {
    Limits {
        cli_total: 10,
        cli_file: 6,
        fn_lines: 4,
        fn_crates: vec!["a".into(), "pmx-cli".into()],
        cli_forbidden: vec!["pmx_msr".into()],
        crate_share: 100,
        ..Limits::default()
    }
}

fn cycles(f: &[Finding]) -> Vec<String> {
    f.iter()
        .filter(|f| matches!(f, Finding::Cycle { .. }))
        .map(|f| f.key())
        .collect()
}

const TOML: &str = "[package]\nname = \"x\"\n";

#[test]
fn a_use_each_way_between_siblings_is_a_cycle() {
    let t = tree(&[
        ("crates/a/Cargo.toml", TOML),
        ("crates/a/src/lib.rs", "mod x;\nmod y;\nmod z;\n"),
        ("crates/a/src/x.rs", "use crate::y::Y;\npub struct X;\n"),
        ("crates/a/src/y.rs", "pub struct Y(crate::x::X);\n"),
        // z uses both, nobody uses z: no cycle through it.
        ("crates/a/src/z.rs", "use super::{x::X, y::Y};\n"),
    ]);
    let f = check(t.path(), &limits()).unwrap().findings;
    assert_eq!(cycles(&f), ["cycle a crate::{x,y}"]);
}

#[test]
fn paths_in_macros_and_through_re_exports_count() {
    let t = tree(&[
        ("crates/a/Cargo.toml", TOML),
        ("crates/a/src/lib.rs", "mod x;\nmod y;\npub use y::Y;\n"),
        // `crate::Y` is y's type re-exported at the root.
        ("crates/a/src/x.rs", "pub fn f() -> crate::Y { todo!() }\n"),
        (
            "crates/a/src/y.rs",
            "pub struct Y;\nfn g() { println!(\"{}\", crate::x::f as usize); }\n",
        ),
    ]);
    let f = check(t.path(), &limits()).unwrap().findings;
    assert_eq!(cycles(&f), ["cycle a crate::{x,y}"]);
}

#[test]
fn siblings_deeper_in_the_tree_and_parent_child_links() {
    let t = tree(&[
        ("crates/a/Cargo.toml", TOML),
        ("crates/a/src/lib.rs", "mod stat;\n"),
        (
            "crates/a/src/stat/mod.rs",
            "mod open;\nmod read;\npub struct Row;\npub use open::Open;\n",
        ),
        // Child to parent and parent to child are not cycles...
        (
            "crates/a/src/stat/open.rs",
            "use super::Row;\npub struct Open;\n",
        ),
        // ...but two children of `stat` using each other are.
        (
            "crates/a/src/stat/read.rs",
            "use super::open::Open;\nmod inner { use super::super::Row; }\n",
        ),
    ]);
    let f = check(t.path(), &limits()).unwrap().findings;
    assert!(cycles(&f).is_empty(), "{f:?}");
    std::fs::write(
        t.path().join("crates/a/src/stat/open.rs"),
        "use super::Row;\npub struct Open;\nfn f() { let _ = self::super::read::inner; }\n",
    )
    .unwrap();
    let f = check(t.path(), &limits()).unwrap().findings;
    assert_eq!(cycles(&f), ["cycle a crate::stat::{open,read}"]);
}

#[test]
fn long_functions_are_measured_from_fn_to_the_closing_brace() {
    let t = tree(&[
        ("crates/a/Cargo.toml", TOML),
        (
            "crates/a/src/lib.rs",
            "/// doc\npub fn short() {\n    1;\n    2;\n}\n\
             struct S;\nimpl S {\n    fn long(&self) {\n        1;\n        2;\n        3;\n    }\n}\n",
        ),
        // Not a measured crate.
        ("crates/b/Cargo.toml", TOML),
        ("crates/b/src/lib.rs", "fn long() {\n1;\n2;\n3;\n4;\n5;\n}\n"),
    ]);
    let f = check(t.path(), &limits()).unwrap().findings;
    assert_eq!(
        f,
        [Finding::LongFn {
            path: "crates/a/src/lib.rs".into(),
            name: "S::long".into(),
            line: 8,
            lines: 5
        }]
    );
}

#[test]
fn the_cli_is_measured_in_lines_and_in_what_it_names() {
    let t = tree(&[
        ("crates/pmx-cli/Cargo.toml", TOML),
        ("crates/pmx-cli/src/main.rs", "mod msr;\nfn main() {}\n"),
        (
            "crates/pmx-cli/src/msr.rs",
            "use pmx_msr::Device;\n\n\n\n\nfn f() { pmx_msr::open(); }\n\n",
        ),
        // A second root ([[bin]]) no `mod` reaches.
        ("crates/pmx-cli/src/workload.rs", "fn main() {}\n\n\n"),
    ]);
    let f = check(t.path(), &limits()).unwrap();
    assert_eq!(f.cli_total, 12);
    let keys: Vec<String> = f.findings.iter().map(|f| f.key()).collect();
    assert_eq!(
        keys,
        [
            "cli-file crates/pmx-cli/src/msr.rs",
            "cli-total",
            "path crates/pmx-cli/src/msr.rs pmx_msr"
        ]
    );
    assert_eq!(f.findings[2].size(), 2);
}

#[test]
fn debts_allow_up_to_their_size_and_paid_debts_fail() {
    let findings = vec![
        Finding::CliTotal { lines: 100 },
        Finding::CliFile {
            path: "f.rs".into(),
            lines: 400,
        },
    ];
    let debts =
        parse_debts("# comment\n100 cli-total\n399 cli-file f.rs\n5 cycle x crate::{a,b}\n")
            .unwrap();
    let v = judge(&findings, &debts);
    assert_eq!(v.allowed, [Finding::CliTotal { lines: 100 }]);
    assert_eq!(v.violations.len(), 1, "{v:?}");
    assert!(v.violations[0].contains("grew past its recorded debt of 399"));
    assert_eq!(v.paid.len(), 1);
    assert!(!v.passed());
    assert!(parse_debts("x y").is_err());
}

/// The check CI runs: this workspace holds every limit, except for the
/// debts `debts.txt` records, and the record is exact.
#[test]
fn this_workspace_holds_its_limits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let figures = check(&root, &Limits::default()).unwrap();
    let debts = std::fs::read_to_string(root.join("crates/pmx-archcheck/debts.txt")).unwrap();
    let verdict = judge(&figures.findings, &parse_debts(&debts).unwrap());
    assert!(
        verdict.passed(),
        "breaches: {:#?}\npaid debts to remove: {:#?}\n(run `cargo run -p pmx-archcheck`)",
        verdict.violations,
        verdict.paid
    );
}

#[test]
fn a_crate_over_its_share_of_the_lines_is_a_finding() {
    let t = tree(&[
        ("crates/big/Cargo.toml", TOML),
        ("crates/big/src/lib.rs", "mod m;\n// 2\n// 3\n"),
        (
            "crates/big/src/m.rs",
            "// 1\n// 2\n// 3\n// 4\n// 5\n// 6\n",
        ),
        ("crates/small/Cargo.toml", TOML),
        ("crates/small/src/lib.rs", "// 1\n"),
        (
            "crates/small/tests/t.rs",
            "// not counted\n// at all\n// 3\n// 4\n",
        ),
    ]);
    let limits = Limits {
        crate_share: 85,
        ..limits()
    };
    let f = check(t.path(), &limits).unwrap();
    assert_eq!(f.crate_lines, vec![("big".into(), 9), ("small".into(), 1)]);
    let shares: Vec<String> = f.findings.iter().map(|f| f.to_string()).collect();
    assert_eq!(
        shares,
        ["crates/big/src holds 9 of the workspace's 10 source lines (90.0%)"]
    );
    let limits = Limits {
        crate_share: 90,
        ..limits
    };
    assert!(check(t.path(), &limits).unwrap().findings.is_empty());
}
