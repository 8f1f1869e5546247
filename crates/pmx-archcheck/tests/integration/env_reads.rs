//! The rule "the environment is read at the edge" (`pmx_archcheck::env`):
//! read sites are found in code, macro arguments and `use`, named by their
//! function, and judged against the allow-list.

use pmx_archcheck::env::{allowed, env_reads};
use pmx_archcheck::{check, Finding, Limits};
use std::path::Path;

// Built at run time from pieces, so this file reads no variable itself
// and the rule's own scan of the tree is not fooled by a literal.
fn source() -> String {
    let e = "env";
    format!(
        "use std::{e}::{{self, var_os}};
        fn top() -> bool {{ std::{e}::var(\"A\").is_ok() || var_os(\"B\").is_some() }}
        struct Config;
        impl Config {{
            fn from_env() -> Option<String> {{
                let f = |k: &str| {e}::var(k).ok();
                f(\"C\").or_else(|| std::{e}::vars().next().map(|(k, _)| k))
            }}
            fn other() {{ println!(\"{{:?}}\", std::{e}::var_os(\"D\")); }}
        }}
        fn quiet() {{ let _ = std::{e}::args(); let _ = env!(\"CARGO_PKG_NAME\"); }}
        // std::{e}::var(\"in a comment\")
        fn in_string() -> &'static str {{ \"std::{e}::var\" }}
        "
    )
}

#[test]
fn read_sites_are_found_and_named() {
    let sites = env_reads("crates/x/src/lib.rs", &source()).unwrap();
    assert_eq!(
        sites,
        vec![
            ("(top level)".to_string(), 1),
            ("top".to_string(), 1),
            ("Config::from_env".to_string(), 2),
            ("Config::other".to_string(), 1),
        ]
    );
}

#[test]
fn the_allow_list_matches_dirs_files_and_functions() {
    let list: Vec<String> = [
        "crates/cli/src/",
        "crates/a/src/edge.rs",
        "crates/b/src/lib.rs Config::from_env",
    ]
    .map(String::from)
    .to_vec();
    assert!(allowed(&list, "crates/cli/src/deep/x.rs", "any"));
    assert!(allowed(&list, "crates/a/src/edge.rs", "any"));
    assert!(!allowed(&list, "crates/a/src/other.rs", "any"));
    assert!(allowed(&list, "crates/b/src/lib.rs", "Config::from_env"));
    assert!(!allowed(&list, "crates/b/src/lib.rs", "Config::other"));
    assert!(!allowed(&list, "crates/cli-extra/src/x.rs", "any"));
}

#[test]
fn a_library_read_outside_the_list_is_a_breach() {
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("crates/lib-a");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(krate.join("Cargo.toml"), "[package]\nname = \"lib-a\"\n").unwrap();
    std::fs::write(krate.join("src/lib.rs"), source()).unwrap();
    let mut limits = Limits {
        env_sites: vec!["crates/lib-a/src/lib.rs Config::from_env".to_string()],
        ..Limits::default()
    };
    let keys = |limits: &Limits| -> Vec<String> {
        let figures = check(dir.path(), limits).unwrap();
        (figures.findings.iter())
            .filter(|f| matches!(f, Finding::EnvRead { .. }))
            .map(|f| format!("{} {}", f.size(), f.key()))
            .collect()
    };
    assert_eq!(
        keys(&limits),
        [
            "1 env crates/lib-a/src/lib.rs (top level)",
            "1 env crates/lib-a/src/lib.rs top",
            "1 env crates/lib-a/src/lib.rs Config::other",
        ]
    );
    limits.env_sites = vec!["crates/lib-a/src/".to_string()];
    assert!(keys(&limits).is_empty());
}

#[test]
fn the_workspace_reads_the_environment_only_at_the_allowed_sites() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let figures = check(&root, &Limits::default()).unwrap();
    let reads: Vec<String> = (figures.findings.iter())
        .filter(|f| matches!(f, Finding::EnvRead { .. }))
        .map(|f| f.to_string())
        .collect();
    assert!(reads.is_empty(), "{reads:#?}");
}
