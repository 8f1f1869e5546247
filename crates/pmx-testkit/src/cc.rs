//! Small C programs for tests, compiled with the system's `cc`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `cc --version` runs.
pub fn available() -> bool {
    Command::new("cc").arg("--version").output().is_ok()
}

/// Write `source` to `DIR/NAME.c` and compile it to `DIR/NAME` with
/// `flags`: the program, or why not (no compiler, or its errors).
pub fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Result<PathBuf, String> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).map_err(|e| format!("write {}: {e}", src.display()))?;
    let bin = dir.join(name);
    let o = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| format!("no C compiler (cc: {e})"))?;
    if o.status.success() {
        Ok(bin)
    } else {
        Err(format!("cc failed: {}", String::from_utf8_lossy(&o.stderr)))
    }
}

/// [`available`], or false after a `SKIP: no C compiler (cc)` line.
pub fn require() -> bool {
    let ok = available();
    if !ok {
        crate::skip("no C compiler (cc)");
    }
    ok
}

/// The repository's root (where `include/pmx.h` and `examples/c` are).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// pmx's C library `name` (`libpmx.a`, `libpmx.so`) as this build made
/// it, next to the running test binary (in its `deps/` or the directory
/// above), or `None` after a `SKIP: … not built` line.
pub fn built_library(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let target = deps.parent().unwrap();
    let found = [deps.join(name), target.join(name)]
        .into_iter()
        .find(|p| p.exists());
    if found.is_none() {
        crate::skip(format_args!("{} not built", target.join(name).display()));
    }
    found
}

/// [`built_library`] for pmx-capi's own tests: pmx-capi is a
/// dev-dependency of itself (and of pmx-cli), so `cargo test` built
/// `libpmx.a` and `libpmx.so` into `deps/` beside the test binary, fresh
/// and with the features of the same invocation (`cargo test` builds no
/// cdylib or staticlib of a package that nothing depends on).
pub fn built_capi(name: &str) -> Option<PathBuf> {
    built_library(name)
}

/// Build a C program against pmx's C API: `cc FLAGS… -I include INPUTS…
/// -lpthread -ldl -lm -o OUT` (inputs are sources, libraries and linker
/// flags, in order). `None` after a `SKIP` line when there is no C
/// compiler; panics with cc's messages when the build fails.
pub fn build_with_pmx(flags: &[&str], inputs: &[&str], out: &Path) -> Option<()> {
    let o = Command::new("cc")
        .args(flags)
        .arg("-I")
        .arg(repo().join("include"))
        .args(inputs)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .output();
    let Ok(o) = o else {
        crate::skip("no C compiler (cc)");
        return None;
    };
    assert!(
        o.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(())
}
