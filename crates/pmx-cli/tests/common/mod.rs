//! What the command-line tests share: running the `pmx` binary of this
//! build, and the msr fixture machine. The helpers that are not
//! pmx-cli's own come from `pmx_testkit`.

#![allow(dead_code)] // Each test target uses a different part.

pub mod msr_pmu;

use pmx_testkit::msr::Machine;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// The `pmx` binary of this build.
pub const PMX: &str = env!("CARGO_BIN_EXE_pmx");

/// `pmx ARGS…`, its output captured and stdin closed, with
/// `$PMX_EVENTS_DIR` unset so that the event data is what the test says.
pub fn pmx(args: &[&str]) -> Output {
    Command::new(PMX)
        .args(args)
        .env_remove("PMX_EVENTS_DIR")
        .output()
        .expect("run pmx")
}

/// A file of `tests/data/analyze/` (perf's and pmx's stat outputs).
pub fn analyze_data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/analyze")
        .join(name)
}

/// A process's stdout as text.
pub fn stdout(o: &Output) -> String {
    pmx_testkit::text(&o.stdout)
}

/// A process's stderr as text.
pub fn stderr(o: &Output) -> String {
    pmx_testkit::text(&o.stderr)
}

/// A fixture machine root with `dev/cpuN/msr` sparse files and
/// `sys/devices/system/cpu` for 4 CPUs in 2 packages (cpus 0,1 → package
/// 0; 2,3 → package 1). Register N lives at byte 8·N of each file.
pub fn four_cpu_msr_machine() -> Machine {
    Machine::new(4, 2)
}

/// `pmx stat -I MS FORM -a -A -e task-clock,context-switches -o FILE`,
/// spawned with stderr captured: every CPU's software counters at
/// intervals, until interrupted.
pub fn spawn_system_intervals(ms: &str, form: &str, file: &Path) -> Child {
    let events = "task-clock,context-switches";
    Command::new(PMX)
        .args(["stat", "-I", ms, form, "-a", "-A", "-e", events, "-o"])
        .arg(file)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pmx")
}
