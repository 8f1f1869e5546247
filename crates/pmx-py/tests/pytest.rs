//! The Python package's tests (`python/tests`, pytest) against the
//! native module this build made: `libpmx_py.so` copied as
//! `pmx/_pmx.abi3.so` beside the package's Python files in a temporary
//! directory (no wheel build, no second compilation), then
//! `python3 -m pytest` with that directory first on the path. Skips with a
//! message without python3 or pytest; a pytest failure fails this test.

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn the_python_package_passes_its_pytest_suite() {
    let has_pytest = Command::new("python3")
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest {
        pmx_testkit::skip("no python3 with pytest (pip install pytest numpy)");
        return;
    }
    // This build's module: in deps/ beside the test binary (pmx-py is a
    // dev-dependency of itself, so `cargo test` just built it there with
    // this invocation's features), else the directory above (`cargo
    // build`'s).
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let candidates = [
        deps.join("libpmx_py.so"),
        deps.parent().unwrap().join("libpmx_py.so"),
    ];
    let Some(so) = candidates.iter().find(|p| p.exists()) else {
        pmx_testkit::skip(format_args!("{} not built", candidates[0].display()));
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pmx");
    std::fs::create_dir(&pkg).unwrap();
    for e in std::fs::read_dir(repo().join("python/pmx")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), pkg.join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(so, pkg.join("_pmx.abi3.so")).unwrap();
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(repo().join("python/tests"))
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PMX_EVENTS")
        .env_remove("PMX_REGIONS_OUT");
    if let Some(perfdata) = pmx_testkit::shared::shared_data("perfdata") {
        cmd.env("PMX_SHARED_DATA", perfdata.parent().unwrap());
    }
    let o = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    assert!(
        o.status.success(),
        "pytest failed:\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Not vacuous: the suite ran.
    assert!(out.contains(" passed"), "{out}");
}
