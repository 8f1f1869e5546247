//! Every fixture machine decodes to the facts it was written (or captured)
//! with. See `tests/fixtures/README.md` for where the values come from.

use pmx_model::cpu::{CoreKind, Vendor};
use pmx_model::topology::CoreKey;
use pmx_sys::caps::ArchEvent;
use pmx_sys::pmu::ConfigWord;
use pmx_sys::{MachineReport, RecordedCpuid, SysRoot};
use std::path::PathBuf;

fn fixture(name: &str) -> MachineReport {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let cpuid = RecordedCpuid::from_file(&dir.join("cpuid.txt")).unwrap();
    let report = MachineReport::gather(&cpuid, &SysRoot::new(dir.join("root")));
    assert!(report.problems.is_empty(), "{name}: {:?}", report.problems);
    report
}

fn pmu_names(report: &MachineReport) -> Vec<&str> {
    report.kernel_pmus.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn skylake_client() {
    let r = fixture("skylake-client");
    let cpu = r.cpu.as_ref().unwrap();
    assert_eq!(cpu.key, "GenuineIntel-6-5E-3");
    assert_eq!(cpu.vendor, Vendor::Intel);
    assert_eq!(
        cpu.brand.as_deref(),
        Some("Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz")
    );
    let arch = cpu.microarch.unwrap();
    assert_eq!(
        (arch.name, arch.code, arch.kind, arch.server),
        ("Skylake", "SKL", CoreKind::Big, false)
    );
    assert!(cpu.hypervisor.is_none() && !cpu.hybrid && cpu.amd.is_none());

    let pm = cpu.intel.as_ref().unwrap();
    assert_eq!((pm.version, pm.gp_counters, pm.gp_width), (4, 4, 48));
    assert_eq!(
        (pm.fixed_counters, pm.fixed_width, pm.fixed_mask),
        (3, 48, None)
    );
    assert_eq!(pm.events_length, 7);
    assert_eq!(pm.available_events(), ArchEvent::ALL[..7].to_vec());
    let c = cpu.counters.unwrap();
    assert_eq!(
        (c.general, c.general_width, c.fixed, c.fixed_width),
        (4, 48, 3, 48)
    );

    let core = r.pmu("cpu").unwrap();
    assert!(core.is_core());
    assert_eq!(core.type_id, Some(4));
    let names: Vec<&str> = core.format.iter().map(|f| f.name.as_str()).collect();
    for field in [
        "event",
        "umask",
        "edge",
        "pc",
        "any",
        "inv",
        "cmask",
        "in_tx",
        "in_tx_cp",
        "ldlat",
        "offcore_rsp",
        "frontend",
    ] {
        assert!(names.contains(&field), "cpu/format/{field}");
    }
    let cmask = core
        .format_field("cmask")
        .unwrap()
        .placement
        .clone()
        .unwrap();
    assert_eq!(
        (cmask.word, cmask.ranges.clone()),
        (ConfigWord::Config, vec![(24, 31)])
    );
    let ldlat = core
        .format_field("ldlat")
        .unwrap()
        .placement
        .clone()
        .unwrap();
    assert_eq!((ldlat.word, ldlat.width()), (ConfigWord::Config1, 16));
    assert_eq!(core.events.len(), 27);
    assert_eq!(
        core.event("cache-misses").unwrap().value,
        "event=0x2e,umask=0x41"
    );
    assert_eq!(
        core.event("topdown-total-slots").unwrap().scale.as_deref(),
        Some("2")
    );
    assert_eq!(
        core.caps.get("pmu_name").map(String::as_str),
        Some("skylake")
    );
    assert_eq!(core.caps.get("max_precise").map(String::as_str), Some("3"));
    assert_eq!(core.cpumask, None);

    let names = pmu_names(&r);
    for name in [
        "uncore_cbox_0",
        "uncore_cbox_3",
        "uncore_arb",
        "uncore_imc",
        "power",
        "msr",
        "intel_pt",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let imc = r.pmu("uncore_imc").unwrap();
    let reads = imc.event("data_reads").unwrap();
    assert_eq!(
        (reads.unit.as_deref(), reads.scale.as_deref()),
        (Some("MiB"), Some("6.103515625e-5"))
    );
    assert_eq!(imc.cpumask, Some(vec![0]));
    let cbox = r.pmu("uncore_cbox_0").unwrap();
    assert_eq!(
        cbox.format_field("cmask")
            .unwrap()
            .placement
            .as_ref()
            .unwrap()
            .width(),
        5
    );
    assert_eq!(
        r.pmu("cstate_core").unwrap().cpumask,
        Some(vec![0, 1, 2, 3])
    );
    assert_eq!(
        r.pmu("intel_pt")
            .unwrap()
            .caps
            .get("psb_cyc")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        r.pmu("power")
            .unwrap()
            .event("energy-pkg")
            .unwrap()
            .unit
            .as_deref(),
        Some("Joules")
    );

    let t = &r.topology;
    assert_eq!(
        (t.cpu_count, t.online_count, t.core_count, t.package_count),
        (8, 8, 4, 1)
    );
    assert_eq!(t.threads_per_core, Some(2));
    assert_eq!(t.online, "0-7");
    assert_eq!(t.topology.siblings_of(1), Some(vec![1, 5]));

    let a = &r.access;
    assert_eq!(
        (a.perf_event_paranoid, a.nmi_watchdog, a.euid),
        (Some(2), Some(true), Some(1000))
    );
    assert_eq!(
        (a.cap_perfmon, a.cap_sys_admin, a.cap_sys_rawio),
        (Some(false), Some(false), Some(false))
    );
    assert_eq!(a.msr_devices, (0..8).collect::<Vec<_>>());
    assert!(
        !a.may_use_msr_device(),
        "msr devices exist but CAP_SYS_RAWIO is missing"
    );
    assert_eq!(
        a.rdpmc.as_ref().map(|r| (r.pmu.as_str(), r.value)),
        Some(("cpu", 1))
    );
    assert_eq!(a.lockdown.as_deref(), Some("integrity"));
    assert!(a.msr_writes_locked_down());

    let v = &r.verdict;
    assert!(v.hardware_counters);
    assert_eq!(v.core_pmus, vec!["cpu"]);
    assert!(v.summary.starts_with(
        "hardware counters are available through the `cpu` PMU (4 general-purpose counters of 48 bits and 3 fixed of 48 bits per CPU): you may count only user space of your own processes (perf_event_paranoid=2"
    ), "{}", v.summary);
    assert!(
        v.summary.contains("the NMI watchdog holds one counter"),
        "{}",
        v.summary
    );
    assert!(v.restricted_pmus.contains(&"uncore_imc".to_string()));
    assert!(v.usable_pmus.contains(&"intel_pt".to_string()));
}

#[test]
fn skylake_sp_two_sockets() {
    let r = fixture("skylake-sp-2s");
    let cpu = r.cpu.as_ref().unwrap();
    assert_eq!(cpu.key, "GenuineIntel-6-55-4");
    assert_eq!(
        cpu.brand.as_deref(),
        Some("Intel(R) Xeon(R) Silver 4110 CPU @ 2.10GHz")
    );
    let arch = cpu.microarch.unwrap();
    assert_eq!(
        (arch.name, arch.code, arch.server),
        ("Skylake-SP", "SKX", true)
    );
    let pm = cpu.intel.as_ref().unwrap();
    assert_eq!((pm.version, pm.gp_counters, pm.fixed_counters), (4, 4, 3));

    let names = pmu_names(&r);
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("uncore_cha_"))
            .count(),
        8
    );
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("uncore_imc_"))
            .count(),
        6
    );
    let cha = r.pmu("uncore_cha_3").unwrap();
    assert_eq!(cha.cpumask, Some(vec![0, 8]), "one CPU per package");
    let opc = cha
        .format_field("filter_opc_0")
        .unwrap()
        .placement
        .clone()
        .unwrap();
    assert_eq!(
        (opc.word, opc.ranges.clone()),
        (ConfigWord::Config1, vec![(41, 50)])
    );
    let cas = r
        .pmu("uncore_imc_0")
        .unwrap()
        .event("cas_count_read")
        .unwrap();
    assert_eq!(cas.value, "event=0x04,umask=0x03");

    let t = &r.topology;
    assert_eq!(
        (
            t.cpu_count,
            t.core_count,
            t.package_count,
            t.threads_per_core
        ),
        (32, 16, 2, Some(2))
    );
    assert_eq!(t.topology.packages(), vec![0, 1]);
    assert_eq!(
        t.topology.cpus_in_package(1),
        [8..16, 24..32].into_iter().flatten().collect::<Vec<u32>>()
    );
    assert_eq!(t.topology.siblings_of(9), Some(vec![9, 25]));
    assert_eq!(t.topology.package_leaders(), vec![(0, 0), (1, 8)]);
    // Core ids repeat across packages and have gaps: (package, die, core) names a core.
    assert!(t.topology.cores().contains(&CoreKey {
        package: 1,
        die: 0,
        core: 10
    }));
    assert!(!t.topology.cores().iter().any(|k| k.core == 5));

    let a = &r.access;
    assert_eq!((a.is_root(), a.nmi_watchdog), (Some(true), Some(false)));
    assert!(a.perfmon_capable() && a.may_use_msr_device() && !a.msr_writes_locked_down());
    assert_eq!(a.msr_devices.len(), 32);
    assert_eq!(a.lockdown, None);

    let v = &r.verdict;
    assert!(v.hardware_counters && v.restricted_pmus.is_empty());
    assert_eq!(
        v.summary,
        "hardware counters are available through the `cpu` PMU (4 general-purpose counters of 48 bits and 3 fixed of 48 bits per CPU): you may count user and kernel space, per task and CPU-wide"
    );
}

#[test]
fn zen2_epyc() {
    let r = fixture("zen2-epyc");
    let cpu = r.cpu.as_ref().unwrap();
    assert_eq!(cpu.key, "AuthenticAMD-23-31-0");
    assert_eq!(cpu.vendor, Vendor::Amd);
    assert_eq!(
        cpu.brand.as_deref(),
        Some("AMD EPYC 7232P 8-Core Processor"),
        "trailing spaces trimmed"
    );
    let arch = cpu.microarch.unwrap();
    assert_eq!((arch.name, arch.code), ("Zen 2", "zen2"));
    assert!(cpu.intel.is_none());
    let amd = cpu.amd.as_ref().unwrap();
    assert!(amd.core_ext && amd.nb_ext && amd.llc_ext && amd.ibs);
    assert_eq!(amd.ext_perfmon, None, "Rome has no leaf 0x80000022");
    assert!(!amd.perfmon_v2());
    let c = cpu.counters.unwrap();
    assert_eq!(
        (c.general, c.general_width, c.fixed, c.source),
        (6, 48, 0, "PerfCtrExtCore")
    );

    let core = r.pmu("cpu").unwrap();
    let event = core
        .format_field("event")
        .unwrap()
        .placement
        .clone()
        .unwrap();
    assert_eq!(event.ranges, vec![(0, 7), (32, 35)]);
    assert_eq!(event.place(0x4E1), Some(0x4_0000_00E1));
    assert_eq!(core.event("cpu-cycles").unwrap().value, "event=0x76");
    let df = r.pmu("amd_df").unwrap();
    assert_eq!(
        df.format_field("event")
            .unwrap()
            .placement
            .as_ref()
            .unwrap()
            .width(),
        14
    );
    assert_eq!(r.pmu("amd_l3").unwrap().cpumask, Some(vec![0, 2, 4, 6]));
    for name in ["ibs_fetch", "ibs_op", "msr", "power"] {
        assert!(r.pmu(name).is_some(), "{name}");
    }
    assert!(r.pmu("msr").unwrap().event("irperf").is_some());

    let t = &r.topology;
    assert_eq!(
        (
            t.cpu_count,
            t.core_count,
            t.package_count,
            t.threads_per_core
        ),
        (16, 8, 1, Some(2))
    );
    assert_eq!(t.topology.siblings_of(2), Some(vec![2, 10]));

    let a = &r.access;
    assert_eq!(
        (a.euid, a.cap_perfmon, a.cap_sys_admin),
        (Some(1000), Some(true), Some(false))
    );
    assert!(a.perfmon_capable() && a.may_count_system_wide() && a.may_probe());
    assert!(a.msr_devices.is_empty() && !a.may_use_msr_device());

    let v = &r.verdict;
    assert!(v.hardware_counters);
    assert!(v.summary.starts_with(
        "hardware counters are available through the `cpu` PMU (6 general-purpose counters of 48 bits per CPU): you may count user and kernel space, per task and CPU-wide"
    ), "{}", v.summary);
}

#[test]
fn kvm_zen4_guest_captured_from_the_development_vm() {
    let r = fixture("kvm-zen4-guest");
    let cpu = r.cpu.as_ref().unwrap();
    assert_eq!(cpu.key, "AuthenticAMD-25-11-1");
    assert_eq!(
        (cpu.cpu.family, cpu.cpu.model, cpu.cpu.stepping),
        (0x19, 0x11, Some(1))
    );
    assert_eq!(cpu.microarch.unwrap().name, "Zen 4");
    assert_eq!(cpu.brand.as_deref(), Some("AMD EPYC"));
    let hv = cpu.hypervisor.as_ref().unwrap();
    assert_eq!(
        (hv.signature.as_str(), hv.name.as_str()),
        ("KVMKVMKVM", "KVM")
    );
    let amd = cpu.amd.as_ref().unwrap();
    assert!(
        !amd.core_ext,
        "CPUID 0x80000001 ECX bit 23 is clear in this guest"
    );
    assert_eq!(cpu.counters, None);
    assert!(cpu
        .no_counters_reason
        .as_ref()
        .unwrap()
        .contains("PerfCtrExtCore"));

    assert_eq!(
        pmu_names(&r),
        vec!["breakpoint", "msr", "software", "tracepoint", "uprobe"]
    );
    let types: Vec<Option<u32>> = r.kernel_pmus.iter().map(|p| p.type_id).collect();
    assert_eq!(types, vec![Some(5), Some(9), Some(1), Some(2), Some(8)]);
    assert_eq!(
        r.pmu("msr").unwrap().event("tsc").unwrap().value,
        "event=0x00"
    );
    assert_eq!(r.pmu("uprobe").unwrap().format.len(), 2);

    let t = &r.topology;
    assert_eq!(
        (t.cpu_count, t.online_count, t.core_count, t.package_count),
        (2, 2, 2, 1)
    );
    assert_eq!(t.threads_per_core, Some(1));

    let a = &r.access;
    assert!(a.msr_devices.is_empty(), "dev/cpu/N holds only cpuid");
    assert_eq!(a.rdpmc, None);
    assert_eq!(
        r.verdict.summary,
        "hardware counters are not exposed on this virtual machine (no `cpu` PMU in sysfs, CPUID reports no PMU): software, msr, breakpoint, tracepoint and uprobe events work"
    );
}

#[test]
fn reports_serialize_to_json() {
    for name in [
        "skylake-client",
        "skylake-sp-2s",
        "zen2-epyc",
        "kvm-zen4-guest",
    ] {
        let r = fixture(name);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["cpu"]["key"],
            r.cpu.as_ref().unwrap().key.as_str(),
            "{name}"
        );
        assert!(json["verdict"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("hardware counters"));
        assert_eq!(
            json["topology"]["cpus"].as_array().unwrap().len(),
            r.topology.cpu_count
        );
        assert!(
            json["kernel_pmus"][0]["type"].is_u64(),
            "{name}: `type` key"
        );
    }
    let r = serde_json::to_value(fixture("zen2-epyc")).unwrap();
    assert_eq!(r["cpu"]["cpu"]["vendor"], "AuthenticAMD");
    let cpu_pmu = r["kernel_pmus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "cpu")
        .unwrap();
    let event = cpu_pmu["format"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "event")
        .unwrap();
    assert_eq!(event["placement"], "config:0-7,32-35");
}
