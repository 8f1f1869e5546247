//! perf's own shell tests (`../shared/data/linux-perf-tests/shell/*.sh`,
//! from Linux 6.1; those of commands out of pmx's scope, [`OUT_OF_SCOPE`],
//! left out), run twice: with Debian's perf, and
//! with pmx in perf's place (a temporary directory first on `PATH` holding
//! `perf`: the pmx binary, its perf personality, but for `perf bench`,
//! which stays perf's). A script that passes
//! with perf and not with pmx fails the test, unless it is listed in
//! [`BLOCKED`] with what it waits for; a listed script that passes with
//! pmx fails the test too (the list only shrinks). A `stat_all_*` script
//! that exits 0 without testing anything (its `perf list --raw-dump`
//! loop empty) does not count as a pass. The scripts run from a copy,
//! unchanged; the adaptations (docs/PERF-SUITE.md): pmx reads Linux
//! perf's event tables from `PMX_EVENTS_DIR`, where perf has them compiled
//! in; the scripts written for bash under a `#!/bin/sh` line
//! ([`BASH`]) run with bash, for both programs.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Scripts known to fail with pmx, each with what it needs (kept equal to
/// the table in docs/PERF-SUITE.md).
const BLOCKED: &[(&str, &str)] = &[];

/// Scripts of perf commands pmx does not implement, and why (kept equal
/// to the table in docs/PERF-SUITE.md).
const OUT_OF_SCOPE: &[(&str, &str)] = &[
    ("daemon.sh", "perf daemon: pmx runs no recording daemon"),
    ("lock_contention.sh", "perf lock: pmx has no lock analysis"),
    ("probe_vfs_getname.sh", "perf probe: pmx creates no probes"),
    (
        "record+probe_libc_inet_pton.sh",
        "perf probe: pmx creates no probes",
    ),
    (
        "record+script_probe_vfs_getname.sh",
        "perf probe: pmx creates no probes",
    ),
    (
        "trace+probe_vfs_getname.sh",
        "perf trace and probe: not pmx's",
    ),
    (
        "test_uprobe_from_different_cu.sh",
        "perf probe (uprobes): pmx creates no probes",
    ),
];

/// Scripts that use bash's syntax (`${id:0:2}`, `&>`) under `#!/bin/sh`
/// (dash on Debian, where they stop with "Bad substitution" whichever
/// program runs them): run with bash.
const BASH: &[&str] = &["buildid.sh"];

/// How long one script may run (perf's slowest here, stat+shadow_stat.sh,
/// takes about 3 s).
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Skip,
    Fail(i32),
    Timeout,
    /// Exit 0 having tested nothing: a `stat_all_*` loop over an empty
    /// list (no `Testing …` line).
    Vacuous,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Pass => write!(f, "pass"),
            Outcome::Skip => write!(f, "skip"),
            Outcome::Fail(c) => write!(f, "fail ({c})"),
            Outcome::Timeout => write!(f, "timeout"),
            Outcome::Vacuous => write!(f, "vacuous"),
        }
    }
}

/// Run `script` in `dir` with `path` as PATH and `events` as pmx's events
/// directory; its outcome and output.
fn run(dir: &Path, script: &str, path: &str, events: Option<&Path>) -> (Outcome, String) {
    let out = dir.join(format!("{script}.out"));
    let file = std::fs::File::create(&out).expect("output file");
    let mut cmd = if BASH.contains(&script) {
        let mut c = Command::new("bash");
        c.arg(dir.join(script));
        c
    } else {
        Command::new(dir.join(script))
    };
    match events {
        Some(e) => cmd.env("PMX_EVENTS_DIR", e),
        None => cmd.env_remove("PMX_EVENTS_DIR"),
    };
    let mut child = cmd
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("dup"))
        .stderr(file)
        .process_group(0)
        .spawn()
        .expect("run the script");
    let start = Instant::now();
    let outcome = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break match st.code() {
                Some(0) => Outcome::Pass,
                Some(2) => Outcome::Skip,
                Some(c) => Outcome::Fail(c),
                None => Outcome::Fail(-1),
            };
        }
        if start.elapsed() > TIMEOUT {
            // SAFETY: the script leads its own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break Outcome::Timeout;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let vacuous = script.starts_with("stat_all_") && !text.contains("Testing ");
    match outcome {
        Outcome::Pass if vacuous => (Outcome::Vacuous, text),
        o => (o, text),
    }
}

/// The first `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A private copy of perf's shell tests (the originals are read-only and
/// shared).
fn copy_tests(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read the tests") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tests(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn perf_shell_tests_pass_with_pmx_as_perf() {
    let Some(shell) = pmx_testkit::shared::shared_data("linux-perf-tests/shell") else {
        return;
    };
    if !pmx_testkit::perf::require("perf's shell tests") {
        return;
    }
    // perf 6.1 has Linux perf's event tables compiled in; pmx reads the
    // same tables at run time (what `pmx events fetch` puts in its cache).
    let Some(events) = pmx_testkit::shared::linux_perf_events() else {
        return;
    };
    let mut scripts: Vec<String> = std::fs::read_dir(&shell)
        .expect("read the tests")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sh") && !OUT_OF_SCOPE.iter().any(|o| o.0 == n))
        .collect();
    scripts.sort();
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // `perf` → pmx (its perf personality), but `perf bench`, a workload
    // generator pmx does not implement, left to perf.
    let as_perf = tmp.path().join("pmx-as-perf");
    std::fs::create_dir(&as_perf).expect("mkdir");
    std::os::unix::fs::symlink(common::PMX, as_perf.join("perf")).expect("symlink");
    let system_perf = which("perf").expect("perf is installed");
    let wrapper = format!(
        "#!/bin/sh\nif [ \"$1\" = bench ]; then exec {} \"$@\"; fi\nexec {} \"$@\"\n",
        system_perf.display(),
        as_perf.join("perf").display()
    );
    std::fs::write(bin.join("perf"), wrapper).expect("write the wrapper");
    let exec = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(bin.join("perf"), exec).expect("chmod");
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let pmx_path = format!("{}:{system_path}", bin.display());
    let mut jobs: Vec<(String, bool, PathBuf, String)> = Vec::new();
    for (mode, path) in [("perf", &system_path), ("pmx", &pmx_path)] {
        let dir = tmp.path().join(mode);
        std::fs::create_dir(&dir).expect("mkdir");
        copy_tests(&shell, &dir);
        for s in &scripts {
            jobs.push((s.clone(), mode == "pmx", dir.clone(), path.clone()));
        }
    }
    let results = Arc::new(Mutex::new(Vec::new()));
    let queue = Arc::new(Mutex::new(jobs));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, results, events) = (queue.clone(), results.clone(), events.clone());
            std::thread::spawn(move || loop {
                let Some((script, pmx, dir, path)) = queue.lock().unwrap().pop() else {
                    return;
                };
                let tables = pmx.then_some(events.as_path());
                let (outcome, output) = run(&dir, &script, &path, tables);
                results.lock().unwrap().push((script, pmx, outcome, output));
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let results = results.lock().unwrap();
    let find = |s: &str, pmx: bool| {
        results
            .iter()
            .find(|r| r.0 == s && r.1 == pmx)
            .map(|r| (r.2, r.3.clone()))
            .expect("every script ran")
    };
    println!("{:<28} {:<10} {:<10} blocked on", "script", "perf", "pmx");
    let mut problems = Vec::new();
    for s in &scripts {
        let ((perf, _), (pmx, pmx_out)) = (find(s, false), find(s, true));
        let blocked = BLOCKED.iter().find(|b| b.0 == s).map(|b| b.1);
        let (p, x) = (perf.to_string(), pmx.to_string());
        println!("{s:<28} {p:<10} {x:<10} {}", blocked.unwrap_or(""));
        match (perf == Outcome::Pass, pmx == Outcome::Pass, blocked) {
            (true, false, None) => problems.push(format!(
                "{s} passes with perf but not with pmx ({pmx}):\n{pmx_out}"
            )),
            (_, true, Some(_)) => problems.push(format!(
                "{s} passes with pmx now: take it off BLOCKED and docs/PERF-SUITE.md"
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
