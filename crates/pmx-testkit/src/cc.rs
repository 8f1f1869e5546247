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
