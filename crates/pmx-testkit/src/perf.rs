//! The installed `perf`, for cross-checks: whether it is there, and
//! running one of its commands on a file.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `perf version` runs and succeeds.
pub fn available() -> bool {
    Command::new("perf")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// [`available`], or false after a `SKIP: [WHAT: ]perf is not installed`
/// line (`what` names what is skipped, when not the whole test).
pub fn require(what: &str) -> bool {
    let ok = available();
    if !ok && what.is_empty() {
        crate::skip("perf is not installed");
    } else if !ok {
        crate::skip(format_args!("{what}: perf is not installed"));
    }
    ok
}

/// `perf ARGS… -i FILE` with stdin closed, or the error of starting it.
/// The status is the caller's to check.
pub fn try_on_file(args: &[&str], file: &Path) -> std::io::Result<Output> {
    Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .stdin(Stdio::null())
        .output()
}

/// [`try_on_file`], panicking when perf cannot be started (check
/// [`available`] first).
pub fn on_file(args: &[&str], file: &Path) -> Output {
    try_on_file(args, file).unwrap_or_else(|e| panic!("run perf {}: {e}", args.join(" ")))
}

/// `perf record -q -e cpu-clock -F 5000 EXTRA… -o OUT -- PROGRAM`, stdin
/// closed: `Ok` when perf recorded, else why not (perf missing, or its
/// errors: no permission, no sampling here).
pub fn record_cpu_clock(extra: &[&str], out: &Path, program: &Path) -> Result<(), String> {
    let o = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "5000"])
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(program)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("perf: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "perf record failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}
