//! The session end to end on fixture msr devices.

use super::*;
use crate::stat::EventStatus;
use pmx_events::Database;
use pmx_model::encoding::Arch;
use pmx_sys::SysRoot;
use std::time::Duration;

/// Register `address` of `cpu` in a fixture device (byte 8·N).
fn reg(root: &Path, cpu: u32, address: u32) -> u64 {
    pmx_testkit::msr::get(&root.join("dev"), cpu, address)
}

fn set_reg(root: &Path, cpu: u32, address: u32, value: u64) {
    pmx_testkit::msr::set(&root.join("dev"), cpu, address, value);
}

/// Two CPUs in one package, msr fixture files, `/proc` with the NMI
/// watchdog off and no other process.
fn machine() -> pmx_testkit::msr::Machine {
    let m = pmx_testkit::msr::Machine::new(2, 2);
    m.nmi_watchdog_off();
    m
}

const PMC0: u32 = 0xC1;
const EVTSEL0: u32 = 0x186;
const GLOBAL_CTRL: u32 = 0x38F;
const RAPL_UNIT: u32 = 0x606;
const PKG_ENERGY: u32 = 0x611;
/// 1/16384 J energy units.
const JOULE: u64 = 16384;

/// (event, cpu, value) of an instance.
type Value = (usize, i32, u64);

fn skylake_sp(root: &Path, events: &str) -> MsrStat {
    let target = pmx_events::Target {
        cpu: "GenuineIntel-6-55-4".parse().unwrap(),
        host: false,
    };
    let db = Database::load(
        target.clone(),
        &pmx_events::LoadOptions {
            events_dir: None,
            sysfs_root: Some(root.to_path_buf()),
            no_libpfm: true,
            ..Default::default()
        },
    );
    let groups = crate::parse_event_list(events).unwrap();
    let sys = SysRoot::new(root);
    let topology = pmx_sys::topology::read_topology(&sys, &mut Vec::new());
    let pmu = pmu_counters(&target, Arch::Intel);
    MsrStat::new(&groups, Some(&db), Arch::Intel, &[0, 1], &pmu, &topology).unwrap()
}

fn options(root: &Path) -> MsrRunOptions {
    MsrRunOptions {
        root: MsrRoot::new(root.join("dev")).with_sysfs(root.join("sys")),
        sys: SysRoot::new(root),
        interval: Some(Duration::from_millis(5)),
        interval_count: Some(3),
        ..MsrRunOptions::new()
    }
}

#[test]
fn a_session_counts_intervals_and_energy_and_restores() {
    let dir = machine();
    let root = dir.path();
    set_reg(root, 0, RAPL_UNIT, 0x000A_0E03);
    set_reg(root, 0, PKG_ENERGY, 0xffff_f000);
    let mut stat = skylake_sp(root, "r00c0,energy-pkg");
    assert_eq!(
        stat.plan
            .events
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["r00c0", "energy-pkg", "power-pkg"]
    );
    // Each tick advances PMC0 on both CPUs by 100·k and the package
    // energy by k joules (wrapping at 32 bits): the next interval must
    // see exactly that.
    let mut seen: Vec<(u64, bool, Vec<Value>)> = Vec::new();
    let outcome = run_with(&mut stat, &options(root), &mut |t| {
        let k = t.index;
        seen.push((
            t.index,
            t.last,
            t.instances
                .iter()
                .filter(|i| i.event != 2)
                .map(|i| (i.event, i.cpu, i.count.value))
                .collect(),
        ));
        assert!(t.instances.iter().all(|i| i.count.enabled > 0
            && i.count.enabled == t.instances[0].count.enabled
            && i.count.running == i.count.enabled));
        assert!(t.status.iter().all(|s| *s == EventStatus::Counted));
        for cpu in 0..2 {
            set_reg(root, cpu, PMC0, reg(root, cpu, PMC0) + 100 * k);
        }
        let e = reg(root, 0, PKG_ENERGY);
        set_reg(root, 0, PKG_ENERGY, (e + k * JOULE) & 0xffff_ffff);
    })
    .unwrap();
    let want = |k: u64| vec![(0, 0, 100 * k), (0, 1, 100 * k), (1, 0, k * JOULE)];
    assert_eq!(
        seen,
        vec![
            (1, false, want(0)),
            (2, false, want(1)),
            (3, false, want(2)),
        ]
    );
    // The third tick's advance falls after the last interval and is
    // in the totals (the final read).
    let totals: Vec<Value> = outcome
        .run
        .instances
        .iter()
        .filter(|i| i.event != 2)
        .map(|i| (i.event, i.cpu, i.count.value))
        .collect();
    assert_eq!(totals, want(6));
    assert_eq!(stat.plan.events[1].scale, 1.0 / JOULE as f64);
    assert!(outcome.restore_error.is_none());
    assert!(!outcome.run.interrupted && outcome.run.exit.is_none());
    assert!(
        outcome.notes[0].contains("programmed and put back"),
        "{:?}",
        outcome.notes
    );
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.starts_with("energy: package 0 (cpu 0): 6.000000 J")),
        "{:?}",
        outcome.notes
    );
    for cpu in 0..2 {
        assert_eq!(reg(root, cpu, EVTSEL0), 0, "cpu {cpu}");
        assert_eq!(reg(root, cpu, GLOBAL_CTRL), 0, "cpu {cpu}");
    }
}

#[test]
fn a_command_runs_pinned_and_its_exit_is_kept() {
    let dir = machine();
    let root = dir.path();
    let mut stat = skylake_sp(root, "instructions");
    let opts = MsrRunOptions {
        command: vec!["sh".into(), "-c".into(), "exit 3".into()],
        pin: Some(vec![1]),
        interval: None,
        interval_count: None,
        ..options(root)
    };
    let outcome = run_with(&mut stat, &opts, &mut |_| panic!("no intervals")).unwrap();
    assert_eq!(outcome.run.exit.map(|e| e.shell_code()), Some(3));
    let missing = MsrRunOptions {
        command: vec!["/nonexistent/pmx-test-command".into()],
        ..opts
    };
    match run_with(&mut stat, &missing, &mut |_| {}) {
        Err(Error::Exec { cmd, reason }) => {
            assert_eq!(cmd, "/nonexistent/pmx-test-command");
            assert_eq!(reason, "command not found");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reg(root, 1, GLOBAL_CTRL), 0);
}

#[test]
fn counters_in_use_are_refused_before_anything_is_written() {
    let dir = machine();
    let root = dir.path();
    std::fs::write(root.join("proc/sys/kernel/nmi_watchdog"), "1\n").unwrap();
    let mut stat = skylake_sp(root, "r00c0");
    let opts = MsrRunOptions {
        interval: None,
        interval_count: None,
        duration: Some(Duration::from_millis(1)),
        ..options(root)
    };
    match stat.start(&opts) {
        Err(e @ Error::InUse(_)) => assert!(e.to_string().contains("nmi_watchdog = 1")),
        other => panic!("{other:?}"),
    }
    assert_eq!(reg(root, 0, EVTSEL0), 0);
    let forced = MsrRunOptions {
        force: true,
        ..opts
    };
    let outcome = run_with(&mut stat, &forced, &mut |_| {}).unwrap();
    assert!(
        outcome.notes[0].starts_with("--force: the NMI watchdog is on"),
        "{:?}",
        outcome.notes
    );
    assert_eq!(reg(root, 0, EVTSEL0), 0);
}

#[test]
fn device_errors_in_one_sentence_pointing_at_the_perf_backend() {
    let gone = || MsrError::DriverNotLoaded {
        path: "/dev/cpu/0/msr".into(),
    };
    let want =
        "/dev/cpu/0/msr: not found — load the msr driver (modprobe msr) or use --backend perf";
    assert_eq!(device_message(&gone()), want);
    assert_eq!(Error::Device(gone()).message(), want);
    let read = Error::Read(gone());
    assert_eq!(read.message(), format!("reading the counters: {want}"));
    assert!(!read.is_bad_input());
}
