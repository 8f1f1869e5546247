//! `pmx --version` names the commit pmx was built from: `PMX_VERSION` is
//! the crate version, then the commit and its date from git when the
//! source is a git checkout (`0.1.0 (1a2b3c4d5e6f 2026-11-27)`), else
//! `$PMX_BUILD_COMMIT` when a packager sets it, else the version alone.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=PMX_BUILD_COMMIT");
    let commit = git(&["log", "-1", "--format=%h %cs", "--abbrev=12", "HEAD"]).or_else(|| {
        std::env::var("PMX_BUILD_COMMIT")
            .ok()
            .filter(|c| !c.is_empty())
    });
    let full = match commit {
        Some(c) => format!("{version} ({c})"),
        None => version,
    };
    println!("cargo:rustc-env=PMX_VERSION={full}");
    // The released binary's size and start-up (docs/BENCHMARKS.md, issue
    // 43): relative relocations packed (RELR), identical functions folded
    // (lld's `--icf`, only when rustc links with its own lld), and `pmx`
    // linked position-dependent (`-no-pie`; glibc still shared, so libpfm4
    // is dlopen'ed): ld.so applies none of its ~29,000 relative relocations
    // and writes none of its pages, but its own code loses ASLR (libraries,
    // heap, stack keep it). With lld, the functions a short run executes
    // (startup.order, written by bench/startup_order.py) are placed side by
    // side: ~6 windows of text faulted in at start instead of ~47. Test
    // builds are linked as before.
    if std::env::var("PROFILE").is_ok_and(|p| p == "release") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        println!("cargo:rustc-link-arg-bin=pmx=-no-pie");
        if links_with_rust_lld() {
            println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
            let order = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
                .join("startup.order");
            println!("cargo:rerun-if-changed={}", order.display());
            println!("cargo:rustc-link-arg-bin=pmx=-Wl,--no-warn-symbol-ordering,--symbol-ordering-file={}", order.display());
        }
    }
    // Built again when HEAD moves: HEAD itself, the branch it names, and
    // the packed refs a `git gc` moves branches into.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// rustc links this target with its own lld: 1.90 or later on
/// x86_64-unknown-linux-gnu, with no linker named in the configuration
/// or the flags (GNU ld refuses `--icf`; an older rustc links with it).
fn links_with_rust_lld() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let own = var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUSTC_LINKER").is_empty()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link");
    let version = Command::new(var("RUSTC")).arg("-vV").output();
    let minor = version.ok().and_then(|o| {
        let text = String::from_utf8(o.stdout).ok()?;
        let release = text.lines().find_map(|l| l.strip_prefix("release: 1."))?;
        release.split('.').next()?.parse::<u32>().ok()
    });
    own && minor.is_some_and(|m| m >= 90)
}

/// One line of git's output, None when git is missing, fails (not a git
/// checkout) or prints nothing.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !line.is_empty()).then_some(line)
}
