//! Odd, missing and corrupt inputs never panic: they become unknown facts
//! and recorded problems.

use pmx_sys::{CpuidSource, MachineReport, PmuCaps, RecordedCpuid, SysRoot};
use std::path::{Path, PathBuf};

struct TempRoot(PathBuf);

impl TempRoot {
    fn new(tag: &str) -> TempRoot {
        let dir = std::env::temp_dir().join(format!("pmx-sys-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempRoot(dir)
    }

    fn write(&self, rel: &str, contents: &[u8]) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn an_empty_root_gives_unknowns_and_no_problems() {
    let root = TempRoot::new("empty");
    let r = MachineReport::gather(&RecordedCpuid::new(), &SysRoot::new(root.path()));
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(r.kernel_pmus.is_empty());
    assert_eq!(r.topology.cpu_count, 0);
    assert_eq!(r.topology.threads_per_core, None);
    assert_eq!(r.access.perf_event_paranoid, None);
    assert_eq!(r.access.euid, None);
    assert!(!r.verdict.hardware_counters);
    assert_eq!(
        r.verdict.summary,
        "hardware counters are not available (no `cpu` PMU in sysfs, CPUID reports no PMU): no PMU is usable"
    );
}

#[test]
fn corrupt_files_become_problems() {
    let root = TempRoot::new("corrupt");
    let pmu = "sys/bus/event_source/devices/cpu";
    root.write(&format!("{pmu}/type"), b"four\n");
    root.write(&format!("{pmu}/format/event"), b"config:0-99\n");
    root.write(&format!("{pmu}/format/umask"), b"bogus");
    root.write(&format!("{pmu}/format/edge"), b"config:18\n");
    root.write(&format!("{pmu}/events/orphan.scale"), b"2\n");
    root.write(&format!("{pmu}/events/bar"), b"event=0x1\xff\n");
    root.write(&format!("{pmu}/events/bar.unit"), b"MiB\n");
    root.write(&format!("{pmu}/events/bar.per-pkg"), b"1\n");
    root.write(&format!("{pmu}/cpumask"), b"0-\n");
    root.write(&format!("{pmu}/caps"), b"not a directory\n");
    root.write(&format!("{pmu}/rdpmc"), b"x\n");
    root.write("sys/bus/event_source/devices/plainfile", b"");
    root.write("sys/devices/system/cpu/online", b"0-1,\n");
    root.write("sys/devices/system/cpu/cpu0/topology/core_id", b"abc\n");
    root.write(
        "sys/devices/system/cpu/cpu0/topology/physical_package_id",
        b"-1\n",
    );
    root.write(
        "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
        b"zz\n",
    );
    root.write("sys/devices/system/cpu/cpu1/online", b"0\n");
    root.write("sys/devices/system/cpu/cpufreq/policy0", b"");
    root.write("sys/devices/system/cpu/cpuX/online", b"1\n");
    root.write("proc/sys/kernel/perf_event_paranoid", b"");
    root.write("proc/sys/kernel/nmi_watchdog", b"\x00\x01\x02");
    root.write("proc/self/status", b"Name: x\nUid: nobody\nCapEff: zz\n");
    root.write("dev/cpu/abc/msr", b"");
    root.write("dev/cpu/0", b"a file, not a directory");
    root.write("sys/kernel/security/lockdown", b"\n");

    let r = MachineReport::gather(&RecordedCpuid::new(), &SysRoot::new(root.path()));
    let problem_paths: Vec<&str> = r.problems.iter().map(|p| p.path.as_str()).collect();
    for expected in [
        "sys/bus/event_source/devices/cpu/type",
        "sys/bus/event_source/devices/cpu/format/event",
        "sys/bus/event_source/devices/cpu/format/umask",
        "sys/bus/event_source/devices/cpu/cpumask",
        "sys/bus/event_source/devices/cpu/rdpmc",
        "sys/devices/system/cpu/online",
        "sys/devices/system/cpu/cpu0/topology/core_id",
        "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
        "proc/sys/kernel/perf_event_paranoid",
        "proc/sys/kernel/nmi_watchdog",
        "proc/self/status",
    ] {
        assert!(
            problem_paths.contains(&expected),
            "{expected} not in {problem_paths:?}"
        );
    }

    let cpu = r.pmu("cpu").unwrap();
    assert_eq!(cpu.type_id, None);
    assert_eq!(cpu.format.len(), 3);
    assert!(cpu.format_field("event").unwrap().placement.is_none());
    assert!(cpu.format_field("edge").unwrap().placement.is_some());
    assert_eq!(cpu.events.len(), 1, "the orphan .scale is not an alias");
    let bar = cpu.event("bar").unwrap();
    assert_eq!((bar.unit.as_deref(), bar.per_pkg), (Some("MiB"), true));
    assert!(bar.value.starts_with("event=0x1"));
    assert_eq!(cpu.cpumask, None);
    assert!(cpu.caps.is_empty());
    let plain = r.pmu("plainfile").unwrap();
    assert_eq!(plain.type_id, None);

    // cpu0 and cpu1 exist as directories; "cpuX" and "cpufreq" are not CPUs.
    assert_eq!(r.topology.cpu_count, 2);
    let cpu0 = r.topology.topology.cpu(0).unwrap();
    assert_eq!(
        (cpu0.core, cpu0.package, cpu0.siblings.clone()),
        (None, None, vec![])
    );
    // With the online list unreadable, cpu1's own `online` file decides.
    assert!(cpu0.online);
    assert!(!r.topology.topology.cpu(1).unwrap().online);

    assert_eq!(r.access.perf_event_paranoid, None);
    assert_eq!(r.access.nmi_watchdog, None);
    assert_eq!((r.access.euid, r.access.cap_eff), (None, None));
    assert!(r.access.msr_devices.is_empty());
    assert_eq!(r.access.rdpmc, None);
    assert_eq!(r.access.lockdown.as_deref(), Some(""));
    // The core PMU directory exists, so the kernel does expose counters.
    assert!(r.verdict.hardware_counters);
    serde_json::to_string(&r).unwrap();
}

/// A small deterministic generator, so the test needs no extra crates.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
}

struct RandomCpuid(std::cell::RefCell<Lcg>);

impl CpuidSource for RandomCpuid {
    fn cpuid(&self, _leaf: u32, _subleaf: u32) -> [u32; 4] {
        let mut g = self.0.borrow_mut();
        [g.next(), g.next(), g.next(), g.next()]
    }
}

#[test]
fn any_cpuid_values_decode_without_panicking() {
    for seed in 0..2000u64 {
        let source = RandomCpuid(std::cell::RefCell::new(Lcg(seed)));
        let caps = PmuCaps::decode(&source).unwrap();
        assert!(caps
            .key
            .ends_with(&format!("-{:X}", caps.cpu.stepping.unwrap())));
        if let Some(c) = caps.counters {
            assert!(c.general <= 255 && c.fixed <= 32);
        }
    }
    // Random answers with a real vendor string exercise the vendor paths.
    for (seed, vendor) in [
        (1u64, "GenuineIntel"),
        (2, "AuthenticAMD"),
        (3, "HygonGenuine"),
    ] {
        let mut g = Lcg(seed);
        for _ in 0..500 {
            let mut rec = RecordedCpuid::new();
            let b = vendor.as_bytes();
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            rec.insert(0, 0, [g.next() % 0x30, w(0), w(8), w(4)]);
            for leaf in [
                1,
                7,
                0xA,
                0x4000_0000,
                0x8000_0001,
                0x8000_0002,
                0x8000_0022,
            ] {
                rec.insert(leaf, 0, [g.next(), g.next(), g.next(), g.next()]);
            }
            rec.insert(0x8000_0000, 0, [0x8000_0000 | (g.next() % 0x40), 0, 0, 0]);
            let caps = PmuCaps::decode(&rec).unwrap();
            assert_eq!(caps.vendor.cpuid_str(), vendor);
            assert_eq!(caps.key.parse::<pmx_model::cpu::CpuId>().unwrap(), caps.cpu);
        }
    }
}
