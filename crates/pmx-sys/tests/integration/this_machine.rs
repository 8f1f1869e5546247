//! The real machine, read the real way. These checks hold on any Linux box;
//! facts about a particular CPU are asserted only when CPUID says it is that
//! CPU.

use pmx_model::cpu::{CpuId, Vendor};
use pmx_sys::{MachineReport, NativeCpuid, PmuCaps};
use std::collections::HashMap;

/// `/proc/cpuinfo`'s first processor block as key → value.
fn cpuinfo() -> Option<HashMap<String, String>> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let block = text.split("\n\n").next()?;
    Some(
        block
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
    )
}

#[test]
fn cpuid_agrees_with_proc_cpuinfo() {
    let Some(caps) = PmuCaps::decode(&NativeCpuid) else {
        pmx_testkit::skip("no CPUID on this architecture");
        return;
    };
    let Some(info) = cpuinfo() else {
        pmx_testkit::skip("no /proc/cpuinfo");
        return;
    };
    let num = |k: &str| info.get(k).and_then(|v| v.parse::<u32>().ok());
    assert_eq!(
        info.get("vendor_id").map(String::as_str),
        Some(caps.vendor.cpuid_str())
    );
    assert_eq!(num("cpu family"), Some(caps.cpu.family));
    assert_eq!(num("model"), Some(caps.cpu.model));
    assert_eq!(num("stepping"), caps.cpu.stepping);
    // The key round-trips through its text form.
    assert_eq!(caps.key.parse::<CpuId>().unwrap(), caps.cpu);
    // The kernel's `hypervisor` flag is CPUID leaf 1 ECX bit 31.
    let flags = info.get("flags").cloned().unwrap_or_default();
    let kernel_says_vm = flags.split_whitespace().any(|f| f == "hypervisor");
    assert_eq!(caps.hypervisor.is_some(), kernel_says_vm);
    if let Some(brand) = &caps.brand {
        assert_eq!(info.get("model name"), Some(brand));
    }
}

#[test]
fn report_of_this_machine_is_consistent() {
    let r = MachineReport::this_machine();
    assert!(r.problems.is_empty(), "{:?}", r.problems);

    let t = &r.topology;
    assert!(t.online_count >= 1 && t.online_count <= t.cpu_count);
    assert!(t.package_count >= 1 && t.core_count >= t.package_count);
    assert!(t.core_count <= t.online_count);
    let threads = t.threads_per_core.unwrap();
    assert!(t.core_count * threads >= t.online_count);
    for cpu in t.topology.online_cpus() {
        assert!(t.topology.siblings_of(cpu).unwrap().contains(&cpu));
    }

    if std::path::Path::new("/sys/bus/event_source/devices").exists() {
        for (name, ty) in [("software", 1), ("tracepoint", 2)] {
            let pmu = r.pmu(name).unwrap_or_else(|| panic!("no {name} PMU"));
            assert_eq!(pmu.type_id, Some(ty), "{name}");
        }
        if let Some(bp) = r.pmu("breakpoint") {
            assert_eq!(bp.type_id, Some(5));
        }
        for pmu in &r.kernel_pmus {
            assert!(pmu.type_id.is_some(), "{} has a type", pmu.name);
            for f in &pmu.format {
                assert!(
                    f.placement.is_some(),
                    "{}/format/{}: {:?}",
                    pmu.name,
                    f.name,
                    f.raw
                );
            }
        }
    }
    let has_core_pmu = r.kernel_pmus.iter().any(|p| p.is_core());
    assert_eq!(r.verdict.hardware_counters, has_core_pmu);
    assert!(r.verdict.usable_pmus.iter().all(|n| r.pmu(n).is_some()));
    assert!(r.verdict.summary.starts_with("hardware counters are"));

    // The effective uid is the owner of /proc/self.
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = std::fs::metadata("/proc/self") {
        assert_eq!(r.access.euid, Some(meta.uid()));
    }
    if r.access.euid == Some(0) && r.access.cap_sys_admin == Some(true) {
        assert!(r.access.perfmon_capable());
    }
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    assert_eq!(r.access.perf_event_paranoid, paranoid);
    let msr_present =
        (0..t.cpu_count).any(|n| std::path::Path::new(&format!("/dev/cpu/{n}/msr")).exists());
    assert_eq!(!r.access.msr_devices.is_empty(), msr_present);

    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"verdict\""));
}

/// Facts that follow from CPUID on AMD machines (this project's development
/// VMs are KVM guests on Zen 4 without a virtual PMU).
#[test]
fn amd_specific_facts_when_the_cpu_is_amd() {
    let Some(caps) = PmuCaps::decode(&NativeCpuid) else {
        return;
    };
    if caps.vendor != Vendor::Amd {
        pmx_testkit::skip(format_args!("vendor is {}", caps.vendor));
        return;
    }
    let amd = caps.amd.as_ref().expect("AMD CPUs get AMD PMU facts");
    assert!(caps.intel.is_none());
    if caps.cpu.family >= 0x17 {
        let arch = caps
            .microarch
            .expect("every Zen family/model is in the table");
        assert!(arch.name.starts_with("Zen"), "{}", arch.name);
    }
    if caps.cpu.family == 0x19 && caps.cpu.model == 0x11 {
        assert_eq!(caps.microarch.unwrap().name, "Zen 4");
        assert_eq!(caps.microarch.unwrap().code, "zen4");
    }
    match caps.counters {
        Some(c) => assert_eq!(c.general_width, 48),
        None => assert!(!amd.core_ext && caps.cpu.family >= 0x15),
    }
    let r = MachineReport::this_machine();
    if caps.hypervisor.is_some() && !r.verdict.hardware_counters {
        assert!(
            r.verdict.summary.starts_with(
                "hardware counters are not exposed on this virtual machine (no `cpu` PMU in sysfs"
            ),
            "{}",
            r.verdict.summary
        );
        if caps.counters.is_none() {
            assert!(r.verdict.summary.contains("CPUID reports no PMU"));
        }
    }
}
