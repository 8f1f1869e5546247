//! `pmx check --backend msr` on a fixture machine (sparse `cpuN/msr`
//! files, a 4-CPU sysfs) with a simulated PMU, through the library's
//! `check::run` with a runner of our own, in a process of its own (this
//! binary re-run with `--exact`: the msr session installs its signal
//! handlers while it counts): the runner announces the
//! kernel and its size in a file and waits; the simulator then adds, to
//! each counter pmx enabled, what that kernel would count for the event
//! programmed in its select register (plus a start-up count the same at
//! both sizes), and lets the runner end. pmx reads after the command
//! ended, so every step happens while it counts: no timing is involved.
//! A row passes only when check programmed the right event on the right
//! CPU and read its delta back; the registers are put back afterwards.
//! The cache rows program the kernel's Skylake-SP encodings of its
//! generic cache events (`MEM_INST_RETIRED.ALL_LOADS`, `L1D.REPLACEMENT`;
//! `LLC-load-misses`: `OFFCORE_RESPONSE_0` with its filter in
//! `MSR_OFFCORE_RSP_0`, which the simulator counts only with the kernel's
//! filter value there).

use crate::common::msr_pmu::{
    files, get, put, snapshot, CPU, CPUS, EVTSEL0, FIXED_CTR0, FIXED_CTRL, GLOBAL_CTRL, PMC0,
};
use pmx::check::{Backend, CheckOptions};
use pmx_testkit::msr::Machine;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a process's start-up adds to every counter, at both sizes.
const START_UP: u64 = 123_457;

/// The fixture: `dev/cpu` is the directory of `cpuN/msr` (a link to
/// `dev`), no NMI watchdog, `sync/` for the runner and the simulator.
fn machine() -> Machine {
    let m = Machine::new(CPUS, 2);
    m.nmi_watchdog_off();
    std::os::unix::fs::symlink(".", m.dev().join("cpu")).unwrap();
    std::fs::create_dir_all(m.path().join("sync")).unwrap();
    m
}

/// What the kernel `words` (its name, arguments and size) counts for a
/// general-purpose counter programmed with (event, umask); `None` for
/// fixed counter 0 (instructions). `branch_extra`: branches the loop
/// makes beyond one per iteration, per million.
fn counts(words: &[&str], event: Option<(u64, u64)>, branch_extra: u64) -> u64 {
    let size: u64 = words.last().unwrap().parse().unwrap();
    let fma_umask = |w: &str| match w {
        "scalar" => 0x01,
        "sse" => 0x04,
        "avx2" => 0x10,
        _ => 0x40,
    };
    let ops = pmx::kernels::fma::ACCUMULATORS * 2;
    START_UP
        + match (words[0], event) {
            ("loop", None) => 2 * size,
            ("loop", Some((0xc4, 0x00))) => size + size / 1_000_000 * branch_extra,
            ("loop", Some((0xc4, 0x20))) => size,
            ("fma", Some((0xc7, u))) if u == fma_umask(words[1]) => ops * size,
            ("chase", Some((0xd0, 0x81))) => size,
            ("chase", Some((0x51, 0x01))) => size / 1000,
            // OFFCORE_RESPONSE_0 with the LLC-miss filter (else `simulate`
            // passes no event): every load of the far chase misses.
            ("chase", Some((0xb7, 0x01))) => size,
            _ => 0,
        }
}

/// `MSR_OFFCORE_RSP_0`, and the kernel's `LLC-load-misses` filter on
/// Skylake-SP (`skl_hw_cache_extra_regs`).
const OFFCORE_RSP_0: u32 = 0x1a6;
const LLC_MISS_FILTER: u64 = 0x3f_fc02_0001;

/// What the simulator saw: the CPUs whose counters were enabled, the
/// runs.
#[derive(Debug, Default)]
struct Seen {
    cpus: BTreeSet<u32>,
    runs: Vec<String>,
}

/// Answer each run of the runner until `stop`.
fn simulate(m: &Machine, branch_extra: u64, stop: Arc<AtomicBool>) -> JoinHandle<Seen> {
    let files = files(m);
    let sync = m.path().join("sync");
    std::thread::spawn(move || {
        let mut seen = Seen::default();
        let started = sync.join("started");
        while !stop.load(Ordering::SeqCst) {
            let Ok(text) = std::fs::read_to_string(&started) else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            std::fs::remove_file(&started).unwrap();
            let words: Vec<&str> = text.split_whitespace().collect();
            for (cpu, f) in files.iter().enumerate() {
                let global = get(f, GLOBAL_CTRL);
                let mut bump = |address: u32, by: u64| {
                    put(
                        f,
                        address,
                        get(f, address).wrapping_add(by) & ((1 << 48) - 1),
                    );
                    seen.cpus.insert(cpu as u32);
                };
                for i in 0..8 {
                    let sel = get(f, EVTSEL0 + i);
                    if sel & (1 << 22) != 0 && global & (1 << i) != 0 {
                        let ev = (sel & 0xff, (sel >> 8) & 0xff);
                        let filtered =
                            ev != (0xb7, 0x01) || get(f, OFFCORE_RSP_0) == LLC_MISS_FILTER;
                        let ev = if filtered { ev } else { (0, 0) };
                        bump(PMC0 + i, counts(&words, Some(ev), branch_extra));
                    }
                }
                let fixed = get(f, FIXED_CTRL);
                if fixed & 0x3 != 0 && global & (1 << 32) != 0 {
                    bump(FIXED_CTR0, counts(&words, None, branch_extra));
                }
            }
            seen.runs.push(text.trim().to_string());
            File::create(sync.join("done")).unwrap();
        }
        seen
    })
}

/// The runner: announces its arguments (kernel, arguments, size), waits
/// for the simulator's answer.
fn runner(sync: &Path) -> Vec<String> {
    let d = sync.display();
    let script = format!(
        r#"echo "$*" > "{d}/started.tmp"; mv "{d}/started.tmp" "{d}/started"; while [ ! -e "{d}/done" ]; do sleep 0.002; done; rm "{d}/done""#
    );
    vec!["sh".into(), "-c".into(), script, "runner".into()]
}

/// Set in the child: the fixture's root, a tab, the rows.
const CHILD: &str = "PMX_TEST_CHECK_MSR_CHILD";

/// The child: `check::run` on the fixture, its report as JSON after
/// `REPORT `. A no-op in the ordinary run.
#[test]
fn child_check() {
    let Some(spec) = std::env::var_os(CHILD) else {
        return;
    };
    let spec = spec.to_string_lossy().into_owned();
    let (root, rows) = spec.split_once('\t').unwrap();
    let root = PathBuf::from(root);
    let opts = CheckOptions {
        runner: runner(&root.join("sync")),
        backend: Backend::Msr,
        events: vec![rows.into()],
        database: pmx::DatabaseOptions {
            cpu: Some(CPU.into()),
            no_libpfm: true,
            ..Default::default()
        },
        root,
        ..Default::default()
    };
    let report = pmx::check::run(&opts).expect("check runs");
    println!("REPORT {}", serde_json::to_string(&report).unwrap());
}

/// Check `rows` on the fixture in the child while the simulator answers.
fn check(m: &Machine, rows: &str, branch_extra: u64) -> (Value, Seen) {
    let stop = Arc::new(AtomicBool::new(false));
    let sim = simulate(m, branch_extra, stop.clone());
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{module}::child_check")])
        .args(["--test-threads=1", "-q", "--nocapture"])
        .env(CHILD, format!("{}\t{rows}", m.path().display()))
        .output()
        .unwrap();
    stop.store(true, Ordering::SeqCst);
    let seen = sim.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.strip_prefix("REPORT "));
    let line = line.unwrap_or_else(|| panic!("{text}{}", String::from_utf8_lossy(&out.stderr)));
    (serde_json::from_str(line).unwrap(), seen)
}

fn row<'a>(r: &'a Value, id: &str) -> &'a Value {
    let rows = r["rows"].as_array().unwrap();
    rows.iter()
        .find(|x| x["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {r}"))
}

fn reason(x: &Value) -> &str {
    x["reason"].as_str().unwrap_or_default()
}

#[test]
fn hardware_rows_count_through_the_msr_devices_and_pass() {
    let m = machine();
    for cpu in 0..CPUS {
        m.set(cpu, OFFCORE_RSP_0, 0x8_0004); // someone's filter, put back after
    }
    let before = snapshot(&m);
    let (r, seen) = check(
        &m,
        "page-faults,instructions,branches,taken-branches,L1-dcache-loads,L1-dcache-load-misses,LLC-load-misses,fp-scalar",
        0,
    );
    assert_eq!(r["backend"], "msr");
    let pf = row(&r, "page-faults");
    assert_eq!(pf["status"], "skipped");
    assert!(reason(pf).contains("kernel's own counts"), "{pf}");
    let fp_ops = (pmx::kernels::fma::ACCUMULATORS * 2 * 10_000_000) as f64;
    for (id, exact) in [
        ("instructions", 20_000_000.0),
        ("branches", 10_000_000.0),
        ("taken-branches", 10_000_000.0),
        ("fp-scalar", fp_ops),
        ("L1-dcache-loads", 10_000_000.0),
        ("L1-dcache-load-misses", 10_000.0),
        ("LLC-load-misses", 1_000_000.0),
    ] {
        let x = row(&r, id);
        assert_eq!(x["status"], "pass", "{x}");
        assert_eq!(x["measured"].as_f64(), Some(exact), "{x}");
        let rounds = u64::from(pmx::check::MIN_ROUNDS);
        assert_eq!(x["tries"].as_u64(), Some(rounds), "{x}");
    }
    // Only the measured CPU (the first online one) was programmed; every
    // size of the seven rows that ran, twice.
    assert_eq!(seen.cpus, BTreeSet::from([0]), "{seen:?}");
    assert!(seen.runs.contains(&"loop 1000000".to_string()), "{seen:?}");
    assert!(seen.runs.contains(&"loop 11000000".to_string()), "{seen:?}");
    assert_eq!(seen.runs.len(), 7 * 2 * 2, "{seen:?}");
    let far = seen.runs.iter().filter(|r| r.ends_with(" 100000"));
    assert_eq!(far.count(), 2, "the LLC row's chase: {seen:?}");
    let after = snapshot(&m);
    let counter =
        |a: u32| (PMC0..PMC0 + 8).contains(&a) || (FIXED_CTR0..FIXED_CTR0 + 4).contains(&a);
    let changed: Vec<_> = before
        .iter()
        .filter(|(k, v)| after.get(k) != Some(v) && !counter(k.1))
        .collect();
    assert!(
        changed.is_empty(),
        "control registers put back: {changed:?}"
    );
}

#[test]
fn a_count_one_percent_off_fails_and_what_cannot_be_programmed_says_why() {
    let m = machine();
    let (r, _) = check(&m, "branches,instructions", 10_000);
    let b = row(&r, "branches");
    assert_eq!(b["status"], "fail", "{b}");
    assert_eq!(b["measured"].as_f64(), Some(10_100_000.0), "{b}");
    let rounds = u64::from(pmx::check::ROUNDS);
    assert_eq!(b["tries"].as_u64(), Some(rounds), "{b}");
    assert_eq!(row(&r, "instructions")["status"], "pass");
    // Busy counters: someone left PMC0 enabled, so the session refuses.
    for cpu in 0..CPUS {
        m.set(cpu, EVTSEL0, 0x0040_00c4);
        m.set(cpu, GLOBAL_CTRL, 0x1);
    }
    let (r, seen) = check(&m, "branches", 0);
    let b = row(&r, "branches");
    assert_eq!(b["status"], "skipped", "{b}");
    assert!(
        reason(b).starts_with("not counted through the msr devices: "),
        "{b}"
    );
    assert!(seen.runs.is_empty(), "{seen:?}");
}
