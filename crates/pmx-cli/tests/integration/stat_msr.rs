//! `pmx stat --backend msr` through the real binary, on fixture msr files
//! (register N at byte 8·N of a sparse `cpuN/msr`), a fixture sysfs (4
//! CPUs in 2 packages) and a simulated PMU.
//!
//! The simulated PMU is a test thread that polls the fixture files and
//! advances only the counters whose enable bits pmx set (EN in the event
//! select or the fixed counter's field, and the counter's bit in
//! IA32_PERF_GLOBAL_CTRL) by known amounts per step, plus the package
//! energy counters. It steps only while the measured command runs: the
//! command announces itself with a file and waits until the simulator says
//! it is done, and pmx reads the counters a last time after the command
//! ended. So every step happens while pmx counts, and pmx's totals must
//! equal exactly what the simulator records it added, however slow the
//! machine is.

use crate::common::msr_pmu::{
    files, get, put, snapshot, CPU, CPUS, EVTSEL0, FIXED_CTR0, FIXED_CTRL, GLOBAL_CTRL, PMC0,
};
use crate::common::{stderr, PMX};
use pmx_testkit::msr::Machine;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const RAPL_UNIT: u32 = 0x606;
const PKG_ENERGY: u32 = 0x611;
/// PU 3, ESU 14 (1/16384 J), TU 10: a typical Intel value.
const RAPL_UNIT_VALUE: u64 = 0x000A_0E03;
const JOULE: u64 = 16384;

/// The fixture machine (common's 4 CPUs in 2 packages) with
/// `proc/sys/kernel/nmi_watchdog` (0), and `sync/` for the command and
/// the simulator.
fn machine() -> Machine {
    let m = crate::common::four_cpu_msr_machine();
    m.nmi_watchdog_off();
    std::fs::create_dir_all(m.path().join("sync")).unwrap();
    for cpu in 0..CPUS {
        m.set(cpu, RAPL_UNIT, RAPL_UNIT_VALUE);
    }
    m
}

/// What the `pmx stat` tests do with the fixture machine.
trait StatFixture {
    fn sync(&self) -> PathBuf;
    fn files(&self) -> Vec<File>;
    fn snapshot(&self) -> BTreeMap<(u32, u32), u64>;
    fn dirty(&self);
    fn args(&self, extra: &[&str]) -> Vec<String>;
    fn pmx(&self, extra: &[&str]) -> Output;
    fn waiter(&self) -> Vec<String>;
}

impl StatFixture for Machine {
    fn sync(&self) -> PathBuf {
        self.path().join("sync")
    }

    fn files(&self) -> Vec<File> {
        files(self)
    }

    /// Every catalogue register on every CPU.
    fn snapshot(&self) -> BTreeMap<(u32, u32), u64> {
        snapshot(self)
    }

    /// Values "someone" left before pmx: plenty of bits to put back, but
    /// nothing that counts on the counters pmx uses.
    fn dirty(&self) {
        for cpu in 0..CPUS {
            let c = u64::from(cpu);
            self.set(cpu, PMC0, 0x1234_5678 + c);
            self.set(cpu, FIXED_CTR0, 0x0bad_cafe_0000 + c);
            self.set(cpu, EVTSEL0, 0x0012_00c4); // no EN
            self.set(cpu, FIXED_CTRL, 0x300); // fixed counter 2's field
            self.set(cpu, GLOBAL_CTRL, 0x8); // PMC3, whose select lacks EN
            self.set(cpu, EVTSEL0 + 3, 0x03_003c);
        }
        // Package 0's energy counter wraps at 2^32 during the run.
        self.set(0, PKG_ENERGY, 0xffff_f000);
        self.set(2, PKG_ENERGY, 0x10);
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "stat".into(),
            "--backend".into(),
            "msr".into(),
            "--msr-root".into(),
            self.dev().display().to_string(),
            "--sysfs-root".into(),
            self.path().display().to_string(),
            "--cpu".into(),
            CPU.into(),
            "--no-libpfm".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    fn pmx(&self, extra: &[&str]) -> Output {
        Command::new(PMX)
            .args(self.args(extra))
            .output()
            .expect("run pmx")
    }

    /// The command the simulator steps under: announces itself, waits
    /// until the simulator is done.
    fn waiter(&self) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            r#"touch "$0/started"; while [ ! -e "$0/done" ]; do sleep 0.002; done"#.into(),
            self.sync().display().to_string(),
        ]
    }
}

/// A counter of the simulated PMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ctr {
    General(u32),
    Fixed(u32),
}

/// Per step: general-purpose counter i advances by 1000·(i+1); fixed
/// counter i by 3000·(cpu+1) + i.
fn amount(cpu: u32, c: Ctr) -> u64 {
    match c {
        Ctr::General(i) => 1000 * (u64::from(i) + 1),
        Ctr::Fixed(i) => 3000 * (u64::from(cpu) + 1) + u64::from(i),
    }
}

/// Energy units per step, per package: 1/4 J and 1/8 J.
const ENERGY_STEP: [u64; 2] = [JOULE / 4, JOULE / 8];

/// What the simulator did.
#[derive(Debug, Default)]
struct Record {
    steps: u64,
    /// Added per (cpu, counter), only while enabled.
    added: BTreeMap<(u32, Ctr), u64>,
    /// Energy units added per package.
    energy: [u64; 2],
}

/// Run the simulated PMU: wait for the command's `started`, make `steps`
/// steps about 1 ms apart, then write `done`. Gives up when `stop` is set.
fn simulate(m: &Machine, steps: u64, stop: Arc<AtomicBool>) -> JoinHandle<Record> {
    let files = m.files();
    let sync = m.sync();
    std::thread::spawn(move || {
        let mut rec = Record::default();
        while !sync.join("started").exists() {
            if stop.load(Ordering::SeqCst) {
                return rec;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mask48 = (1u64 << 48) - 1;
        for _ in 0..steps {
            for (cpu, f) in files.iter().enumerate() {
                let cpu = cpu as u32;
                let global = get(f, GLOBAL_CTRL);
                let mut bump = |address: u32, c: Ctr| {
                    let by = amount(cpu, c);
                    put(f, address, get(f, address).wrapping_add(by) & mask48);
                    *rec.added.entry((cpu, c)).or_default() += by;
                };
                for i in 0..8 {
                    if get(f, EVTSEL0 + i) & (1 << 22) != 0 && global & (1 << i) != 0 {
                        bump(PMC0 + i, Ctr::General(i));
                    }
                }
                let fixed = get(f, FIXED_CTRL);
                for i in 0..4 {
                    if (fixed >> (4 * i)) & 0x3 != 0 && global & (1 << (32 + i)) != 0 {
                        bump(FIXED_CTR0 + i, Ctr::Fixed(i));
                    }
                }
            }
            // Package energy lives in the package's first CPU's file.
            for (p, &cpu) in [0usize, 2].iter().enumerate() {
                let f = &files[cpu];
                let v = get(f, PKG_ENERGY);
                let low = (v as u32).wrapping_add(ENERGY_STEP[p] as u32);
                put(f, PKG_ENERGY, (v & !0xffff_ffff) | u64::from(low));
                rec.energy[p] += ENERGY_STEP[p];
            }
            rec.steps += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
        File::create(sync.join("done")).unwrap();
        rec
    })
}

/// Run pmx with `extra` and the waiting command while the simulator makes
/// `steps` steps.
fn run_simulated(m: &Machine, extra: &[&str], steps: u64) -> (Output, Record) {
    let stop = Arc::new(AtomicBool::new(false));
    let sim = simulate(m, steps, stop.clone());
    let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    a.push("--".into());
    a.extend(m.waiter());
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let out = m.pmx(&refs);
    stop.store(true, Ordering::SeqCst);
    let rec = sim.join().unwrap();
    (out, rec)
}

/// The snapshot after a run must equal the one before, except the energy
/// counters the simulator advanced (pmx only reads them).
fn assert_restored(m: &Machine, before: &BTreeMap<(u32, u32), u64>) {
    let mut after = m.snapshot();
    let mut before = before.clone();
    for cpu in 0..CPUS {
        after.remove(&(cpu, PKG_ENERGY));
        before.remove(&(cpu, PKG_ENERGY));
    }
    let diff: Vec<String> = before
        .iter()
        .filter(|(k, v)| after.get(k) != Some(v))
        .map(|((cpu, a), v)| {
            format!(
                "cpu {cpu} {a:#x}: {v:#x} before, {:#x} after",
                after.get(&(*cpu, *a)).copied().unwrap_or(0)
            )
        })
        .collect();
    assert!(
        diff.is_empty(),
        "registers not restored:\n{}",
        diff.join("\n")
    );
}

/// A CSV row of the output as its fields.
fn fields(line: &str) -> Vec<String> {
    line.split(',').map(str::to_string).collect()
}

#[test]
fn intervals_per_cpu_add_up_to_exactly_what_the_pmu_counted() {
    let m = machine();
    m.dirty();
    let before = m.snapshot();
    let out_file = m.path().join("out.csv");
    let out_path = out_file.display().to_string();
    let steps = 60;
    let (o, rec) = run_simulated(
        &m,
        &[
            "-a",
            "-A",
            "-I",
            "15",
            "-x,",
            "-o",
            &out_path,
            "-e",
            "instructions,branches,energy-pkg",
        ],
        steps,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rec.steps, steps);
    let text = std::fs::read_to_string(&out_file).unwrap();

    // Interval rows: time,domain,value,unit,event,status,running_pct,raw,…
    let mut sums: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut rows_per: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut last_time = 0.0f64;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let f = fields(l);
        assert_eq!(f.len(), 12, "{l}");
        let time: f64 = f[0].parse().unwrap();
        assert!(time >= last_time, "{text}");
        last_time = time;
        assert_eq!(f[5], "counted", "{l}");
        assert_eq!(f[6], "100.00", "{l}");
        assert_eq!(f[8], f[9], "enabled = running: {l}");
        let key = (f[1].clone(), f[4].clone());
        *sums.entry(key.clone()).or_default() += f[7].parse::<u64>().unwrap();
        *rows_per.entry(key).or_default() += 1;
    }
    // Totals: comments after the intervals, domain,value,unit,event,…,raw.
    let mut totals: BTreeMap<(String, String), (f64, u64)> = BTreeMap::new();
    for l in text.lines().filter_map(|l| l.strip_prefix("# ")) {
        let f = fields(l);
        if f.len() < 7 {
            continue;
        }
        totals.insert(
            (f[0].clone(), f[3].clone()),
            (f[1].parse().unwrap(), f[6].parse().unwrap()),
        );
    }

    // Core counters: one row per CPU per interval, and exact totals.
    for cpu in 0..CPUS {
        let d = format!("CPU{cpu}");
        for (event, ctr) in [
            ("instructions", Ctr::Fixed(0)),
            ("branches", Ctr::General(0)),
        ] {
            let key = (d.clone(), event.to_string());
            let added = rec.added.get(&(cpu, ctr)).copied().unwrap_or(0);
            assert_eq!(added, steps * amount(cpu, ctr), "{event} on {d}");
            assert_eq!(totals.get(&key).map(|t| t.1), Some(added), "{text}");
            assert_eq!(sums.get(&key), Some(&added), "{text}");
            assert!(rows_per[&key] >= 1);
        }
    }
    // Nothing else counted.
    let others: Vec<_> = rec
        .added
        .keys()
        .filter(|(_, c)| *c != Ctr::Fixed(0) && *c != Ctr::General(0))
        .collect();
    assert!(others.is_empty(), "{others:?}");
    // Every CPU has the same number of interval rows per event.
    let counts: Vec<usize> = rows_per
        .iter()
        .filter(|((_, e), _)| e != "energy-pkg")
        .map(|(_, n)| *n)
        .collect();
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{rows_per:?}");

    // Energy: once per package, reported under the CPU that reads it, in
    // joules, the 32-bit wrap of package 0 handled.
    for (p, cpu) in [(0usize, 0u32), (1, 2)] {
        let key = (format!("CPU{cpu}"), "energy-pkg".to_string());
        let (joules, raw) = totals[&key];
        assert_eq!(raw, rec.energy[p], "{text}");
        assert_eq!(raw, steps * ENERGY_STEP[p]);
        assert!((joules - raw as f64 / JOULE as f64).abs() < 1e-9, "{text}");
        assert_eq!(sums[&key], raw);
    }
    for cpu in [1, 3] {
        let key = (format!("CPU{cpu}"), "energy-pkg".to_string());
        assert!(!totals.contains_key(&key), "{text}");
        assert!(!sums.contains_key(&key), "{text}");
    }
    assert_ne!(m.get(0, PKG_ENERGY), before[&(0, PKG_ENERGY)]);
    assert_restored(&m, &before);
}

#[test]
fn totals_as_json_per_socket_and_as_a_table() {
    let m = machine();
    m.dirty();
    let before = m.snapshot();
    let out_file = m.path().join("out.json");
    let out_path = out_file.display().to_string();
    let steps = 20;
    let (o, rec) = run_simulated(
        &m,
        &[
            "-a",
            "--per-socket",
            "--json",
            "-o",
            &out_path,
            "-e",
            "instructions,cpu/event=0xc4,umask=0x0/,power/energy-pkg/",
        ],
        steps,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let rows = v["events"].as_array().unwrap();
    let raw = |event: &str, package: u64| -> u64 {
        rows.iter()
            .find(|r| r["event"] == event && r["domain"]["package"] == package)
            .unwrap_or_else(|| panic!("no {event} for S{package}: {v}"))["raw"]
            .as_u64()
            .unwrap()
    };
    for p in 0..2u32 {
        let cpus = [2 * p, 2 * p + 1];
        let expect = |c: Ctr| -> u64 { cpus.iter().map(|&cpu| rec.added[&(cpu, c)]).sum() };
        assert_eq!(raw("instructions", p.into()), expect(Ctr::Fixed(0)));
        assert_eq!(
            raw("cpu/event=0xc4,umask=0x0/", p.into()),
            expect(Ctr::General(0))
        );
        assert_eq!(raw("power/energy-pkg/", p.into()), rec.energy[p as usize]);
    }
    let energy = rows
        .iter()
        .find(|r| r["event"] == "power/energy-pkg/" && r["domain"]["package"] == 1)
        .unwrap();
    assert_eq!(energy["unit"], "J");
    assert_eq!(energy["value"].as_f64(), Some(steps as f64 / 8.0));
    // Power over the run: the package's joules over the elapsed time.
    let power = rows
        .iter()
        .find(|r| r["event"] == "power-pkg" && r["domain"]["package"] == 1)
        .unwrap_or_else(|| panic!("no power-pkg row: {v}"));
    assert_eq!(power["unit"], "W");
    let watts = power["value"].as_f64().unwrap();
    let expect = steps as f64 / 8.0 / v["elapsed_s"].as_f64().unwrap();
    assert!(
        (watts - expect).abs() <= expect * 1e-3 + 1e-6,
        "{watts} W vs {expect} W"
    );
    assert_eq!(v["exit"]["code"], 0);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes[0].starts_with("counted through the msr devices (--backend msr)"),
        "{notes:?}"
    );
    assert!(notes
        .iter()
        .any(|n| n.starts_with("energy: package 1 (cpu 2): 2.500000 J")));
    assert_restored(&m, &before);

    // The readable table, on stderr.
    std::fs::remove_file(m.sync().join("started")).unwrap();
    std::fs::remove_file(m.sync().join("done")).unwrap();
    let (o, rec) = run_simulated(&m, &["-C", "0,1", "-e", "instructions"], 5);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let total: u64 = (0..2).map(|cpu| rec.added[&(cpu, Ctr::Fixed(0))]).sum();
    assert!(
        err.contains(&format!("{} ", pmx_output::group_digits(total))),
        "{err}"
    );
    assert!(
        err.contains("Performance counter stats for CPUs 0-1 while running 'sh"),
        "{err}"
    );
    assert!(err.contains("counted through the msr devices"), "{err}");
    assert_restored(&m, &before);
}

#[test]
fn a_busy_counter_is_refused_unless_forced() {
    let m = machine();
    m.dirty();
    // Someone enabled PMC0 on CPU 1 (its event select has no EN, so the
    // simulator does not advance it).
    m.set(1, GLOBAL_CTRL, 0x1);
    let before = m.snapshot();
    let o = m.pmx(&["-a", "-e", "branches", "--duration", "0.05"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "pmx: the counters are in use (cpu 1: IA32_PERF_GLOBAL_CTRL = 0x1 already enables PMC0_EN)"
        ),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(m.snapshot(), before, "nothing written");

    let (o, rec) = run_simulated(&m, &["-a", "-e", "branches", "-x,", "--force"], 10);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let total: u64 = (0..CPUS).map(|c| rec.added[&(c, Ctr::General(0))]).sum();
    let err = stderr(&o);
    let row = err
        .lines()
        .map(fields)
        .find(|f| f.get(3).map(String::as_str) == Some("branches"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(row[6], total.to_string(), "{err}");
    assert_restored(&m, &before);
}

#[test]
fn the_nmi_watchdog_and_open_perf_events_mean_the_counters_are_in_use() {
    let m = machine();
    let before = m.snapshot();
    let watchdog = m.path().join("proc/sys/kernel/nmi_watchdog");
    std::fs::write(&watchdog, "1\n").unwrap();
    let o = m.pmx(&["-a", "-e", "instructions", "--duration", "0.05"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("kernel.nmi_watchdog = 1"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(m.snapshot(), before);

    std::fs::write(&watchdog, "0\n").unwrap();
    let fd = m.path().join("proc/4242/fd");
    std::fs::create_dir_all(&fd).unwrap();
    std::os::unix::fs::symlink("anon_inode:[perf_event]", fd.join("3")).unwrap();
    std::os::unix::fs::symlink("/dev/null", fd.join("4")).unwrap();
    std::fs::write(m.path().join("proc/4242/comm"), "perf\n").unwrap();
    let quiet = m.path().join("proc/77/fd");
    std::fs::create_dir_all(&quiet).unwrap();
    std::os::unix::fs::symlink("/dev/null", quiet.join("0")).unwrap();
    let o = m.pmx(&["-a", "-e", "instructions", "--duration", "0.05"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("perf events are open in process 4242 (perf)"),
        "{err}"
    );
    assert_eq!(m.snapshot(), before);

    let o = m.pmx(&[
        "-a",
        "-e",
        "instructions",
        "--duration",
        "0.05",
        "--force",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("--force: perf events are open in process 4242 (perf)"),
        "{v}"
    );
    assert_eq!(m.snapshot(), before);
}

#[test]
fn without_the_msr_driver_it_fails_in_one_sentence() {
    if Path::new("/dev/cpu/0/msr").exists() {
        pmx_testkit::skip("this machine has the msr driver loaded");
        return;
    }
    let o = Command::new(PMX)
        .args([
            "stat",
            "--backend",
            "msr",
            "-a",
            "-e",
            "instructions",
            "--duration",
            "0.1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "pmx: /dev/cpu/0/msr: not found — load the msr driver (modprobe msr) or use --backend perf\n"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn what_the_msr_backend_cannot_do_is_a_usage_error() {
    let m = machine();
    let before = m.snapshot();
    for (args, says) in [
        (
            &["-p", "1", "-e", "instructions"][..],
            "--backend msr counts CPUs, not tasks",
        ),
        (
            &["-e", "instructions", "--", "true"][..],
            "give -a or -C LIST",
        ),
        (&["-a", "-e", "task-clock"][..], "counted by the kernel"),
        (
            &["-a", "-e", "r00c4,r00c5,r003c,r412e,r4f2e"][..],
            "does not multiplex",
        ),
        (&["-a", "-r", "3", "-e", "instructions"][..], "-r"),
    ] {
        let o = m.pmx(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with("pmx: "), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(m.snapshot(), before);
}

#[test]
fn the_exit_status_is_the_commands() {
    let m = machine();
    m.dirty();
    let before = m.snapshot();
    let o = m.pmx(&[
        "-C",
        "0",
        "-e",
        "instructions",
        "-x,",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(",instructions,counted,"),
        "{}",
        stderr(&o)
    );
    assert_restored(&m, &before);

    let o = m.pmx(&[
        "-C",
        "0",
        "-e",
        "instructions",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]);
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
    assert_restored(&m, &before);

    let o = m.pmx(&[
        "-C",
        "0",
        "-e",
        "instructions",
        "--",
        "/nonexistent/pmx-test",
    ]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "pmx stat: cannot run '/nonexistent/pmx-test': command not found\n"
    );
    assert_restored(&m, &before);
}

/// Start pmx, wait until it has programmed CPU 0, signal it.
fn signalled(m: &Machine, extra: &[&str], sig: i32) -> Output {
    let child = Command::new(PMX)
        .args(m.args(extra))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while m.get(0, GLOBAL_CTRL) & (1 << 32) == 0 {
        assert!(Instant::now() < deadline, "pmx never programmed the PMU");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    child.wait_with_output().unwrap()
}

#[test]
fn sigint_and_sigterm_end_the_count_print_it_and_restore() {
    let m = machine();
    m.dirty();
    let before = m.snapshot();
    // No command: counts until Ctrl-C.
    let o = signalled(&m, &["-a", "-e", "instructions", "-x,"], libc::SIGINT);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(",instructions,counted,"),
        "{}",
        stderr(&o)
    );
    assert_restored(&m, &before);

    // With a command: pmx passes SIGTERM on and reports how it ended.
    let o = signalled(
        &m,
        &["-C", "0", "-e", "instructions", "--", "sleep", "30"],
        libc::SIGTERM,
    );
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("interrupted"), "{err}");
    assert!(err.contains("instructions"), "{err}");
    assert_restored(&m, &before);
}

#[test]
fn metrics_from_msr_counts() {
    let m = machine();
    m.dirty();
    let before = m.snapshot();
    let out_file = m.path().join("ipc.json");
    let out_path = out_file.display().to_string();
    let (o, rec) = run_simulated(&m, &["-C", "0", "-M", "IPC", "--json", "-o", &out_path], 10);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let ipc = &v["metrics"][0];
    assert_eq!(ipc["name"], "IPC", "{v}");
    // IPC's inputs land on fixed counters 0 (instructions) and 1 (cycles).
    let expect = rec.added[&(0, Ctr::Fixed(0))] as f64 / rec.added[&(0, Ctr::Fixed(1))] as f64;
    let got = ipc["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no IPC value: {v}"));
    assert!((got - expect).abs() < 1e-9, "IPC {got}, simulated {expect}");
    assert_restored(&m, &before);
}

#[test]
fn metrics_per_interval_from_msr_counts() {
    let m = machine();
    m.dirty();
    let (o, rec) = run_simulated(&m, &["-C", "0", "-M", "IPC", "-I", "15", "-x,"], 10);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stderr(&o);
    let lines: Vec<Vec<String>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty() && !l.starts_with("pmx"))
        .map(fields)
        .collect();
    // Every interval that counted cycles has an IPC line equal to its
    // instructions / cycles (the simulator's fixed-counter steps are fixed).
    let expect = rec.added[&(0, Ctr::Fixed(0))] as f64 / rec.added[&(0, Ctr::Fixed(1))] as f64;
    let ipc: Vec<f64> = lines
        .iter()
        .filter(|r| r.get(4).map(String::as_str) == Some("IPC") && r[5] == "metric")
        .map(|r| r[2].parse().unwrap())
        .collect();
    assert!(!ipc.is_empty(), "{text}");
    for v in ipc {
        assert!((v - expect).abs() < 1e-5, "interval IPC {v} vs {expect}");
    }
}
