//! `pmx info`, run as a user would: on this machine and against the machine
//! fixtures of pmx-sys (through the hidden `--cpuid-file` and `--sysfs-root`
//! flags).

use crate::common::pmx;
use serde_json::Value;
use std::path::PathBuf;

fn stdout_of(args: &[&str]) -> String {
    let out = pmx(args);
    assert!(
        out.status.success(),
        "pmx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../pmx-sys/tests/fixtures")
        .join(name)
}

/// `pmx info` on a fixture: (text, JSON).
fn info_on(name: &str) -> (String, Value) {
    let dir = fixture_dir(name);
    let cpuid = dir.join("cpuid.txt");
    let root = dir.join("root");
    let base = [
        "info",
        "--cpuid-file",
        cpuid.to_str().unwrap(),
        "--sysfs-root",
        root.to_str().unwrap(),
    ];
    let text = stdout_of(&base);
    let mut json_args = base.to_vec();
    json_args.push("--json");
    let json = serde_json::from_str(&stdout_of(&json_args)).expect("valid JSON");
    (text, json)
}

/// The value printed after a row label, e.g. `row(text, "family")`.
fn row<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("  ")?.strip_prefix(label)?;
            rest.starts_with(' ').then(|| rest.trim())
        })
        .unwrap_or_else(|| panic!("no row {label:?} in:\n{text}"))
}

fn pmu_lines(text: &str) -> Vec<&str> {
    let section = text
        .split("Kernel PMUs")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    section
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .collect()
}

fn pmu_line<'a>(text: &'a str, name: &str) -> &'a str {
    pmu_lines(text)
        .into_iter()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no PMU line for {name} in:\n{text}"))
}

#[test]
fn this_machine_text_agrees_with_json() {
    let text = stdout_of(&["info"]);
    let json: Value = serde_json::from_str(&stdout_of(&["info", "--json"])).unwrap();
    for section in [
        "CPU\n",
        "PMU as CPUID describes it\n",
        "Kernel PMUs",
        "Topology\n",
        "Access\n",
        "Verdict\n",
    ] {
        assert!(
            text.contains(section),
            "section {section:?} missing:\n{text}"
        );
    }
    for key in [
        "cpu",
        "kernel_pmus",
        "topology",
        "access",
        "verdict",
        "problems",
    ] {
        assert!(json.get(key).is_some(), "JSON key {key}");
    }
    let summary = json["verdict"]["summary"].as_str().unwrap();
    assert!(text.contains(summary), "verdict line missing");

    let topo = &json["topology"];
    assert_eq!(
        row(&text, "CPUs"),
        format!(
            "{} online of {} ({})",
            topo["online_count"],
            topo["cpu_count"],
            topo["online"].as_str().unwrap()
        )
    );
    assert_eq!(row(&text, "packages"), topo["package_count"].to_string());
    assert_eq!(row(&text, "cores"), topo["core_count"].to_string());

    for pmu in json["kernel_pmus"].as_array().unwrap() {
        let name = pmu["name"].as_str().unwrap();
        let prefix = name.rsplit_once('_').map(|(p, _)| p).unwrap_or(name);
        assert!(
            pmu_lines(&text)
                .iter()
                .any(|l| l.trim_start().starts_with(prefix)),
            "PMU {name} not listed"
        );
    }

    if json["cpu"].is_null() {
        return; // not x86: nothing more to compare
    }
    let cpu = &json["cpu"];
    let family = cpu["cpu"]["family"].as_u64().unwrap();
    let model = cpu["cpu"]["model"].as_u64().unwrap();
    assert_eq!(row(&text, "family"), format!("{family} ({family:#x})"));
    assert_eq!(row(&text, "model"), format!("{model} ({model:#x})"));
    assert_eq!(row(&text, "--cpu key"), cpu["key"].as_str().unwrap());
    let hypervisor = &cpu["hypervisor"];
    if hypervisor.is_null() {
        assert!(row(&text, "hypervisor").starts_with("none"));
    } else {
        assert!(row(&text, "hypervisor").starts_with(hypervisor["name"].as_str().unwrap()));
    }

    // Facts about AMD CPUs, asserted only where the CPU says it is one.
    if cpu["vendor"] != "AuthenticAMD" {
        return;
    }
    assert_eq!(row(&text, "vendor"), "AMD (AuthenticAMD)");
    assert!(text.contains("PerfCtrExtCore"));
    if family == 25 && model == 0x11 {
        assert_eq!(row(&text, "family"), "25 (0x19)");
        assert_eq!(row(&text, "model"), "17 (0x11)");
        assert_eq!(row(&text, "microarchitecture"), "Zen 4 (zen4)");
    }
    let core_pmu = json["verdict"]["hardware_counters"].as_bool().unwrap();
    if !hypervisor.is_null() && !core_pmu {
        // The development VMs: a KVM guest with no virtual PMU.
        assert!(summary.starts_with("hardware counters are not exposed on this virtual machine"));
        assert!(row(&text, "counters").starts_with("none: CPUID clears PerfCtrExtCore"));
        for name in ["software", "msr", "breakpoint", "tracepoint", "uprobe"] {
            pmu_line(&text, name);
        }
        assert_eq!(
            pmu_line(&text, "software").split_whitespace().nth(2),
            Some("1")
        );
        assert_eq!(
            pmu_line(&text, "breakpoint").split_whitespace().nth(2),
            Some("5")
        );
        if hypervisor["name"] == "KVM" && family == 25 && model == 0x11 {
            assert_eq!(row(&text, "CPUs"), "2 online of 2 (0-1)");
            assert_eq!(row(&text, "packages"), "1");
        }
    }
}

#[test]
fn skylake_client_fixture() {
    let (text, json) = info_on("skylake-client");
    assert_eq!(row(&text, "vendor"), "Intel (GenuineIntel)");
    assert_eq!(
        row(&text, "brand"),
        "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz"
    );
    assert_eq!(row(&text, "family"), "6 (0x6)");
    assert_eq!(row(&text, "model"), "94 (0x5e)");
    assert_eq!(row(&text, "stepping"), "3 (0x3)");
    assert_eq!(row(&text, "--cpu key"), "GenuineIntel-6-5E-3");
    assert_eq!(row(&text, "microarchitecture"), "Skylake (SKL)");
    assert_eq!(
        row(&text, "hypervisor"),
        "none (CPUID hypervisor bit clear)"
    );
    assert_eq!(row(&text, "version"), "4 (CPUID 0xA EAX[7:0])");
    assert_eq!(row(&text, "general-purpose"), "4 × 48 bits");
    assert_eq!(
        row(&text, "fixed"),
        "3 × 48 bits: 0 instructions retired, 1 core cycles, 2 reference cycles"
    );
    assert!(row(&text, "architectural events").starts_with("7 of 13 available"));
    assert!(text.contains("    yes LLC Misses                    0x2e/0x41"));
    assert!(text.contains("    no  Topdown Slots"));

    assert_eq!(
        pmu_line(&text, "cpu").trim(),
        "cpu                type 4, 27 event aliases, core PMU"
    );
    assert!(text
        .contains("event=config:0-7 umask=config:8-15 edge=config:18 pc=config:19 any=config:21"));
    assert!(text.contains("frontend=config1:0-23"));
    assert!(pmu_line(&text, "uncore_cbox_{0-3}").contains("types 11-14"));
    assert!(text.contains("caps     branches=32 max_precise=3 pmu_name=skylake"));

    assert_eq!(row(&text, "CPUs"), "8 online of 8 (0-7)");
    assert_eq!(row(&text, "cores"), "4");
    assert_eq!(row(&text, "packages"), "1");
    assert_eq!(
        row(&text, "SMT"),
        "on (2 threads per core; CPU 0 shares its core with 4)"
    );

    assert_eq!(row(&text, "user"), "euid 1000");
    assert_eq!(
        row(&text, "perf_event_paranoid"),
        "2: any user may count only user space of their own processes"
    );
    assert_eq!(row(&text, "CAP_PERFMON"), "no");
    assert_eq!(row(&text, "CAP_SYS_RAWIO"), "no");
    assert!(row(&text, "msr device").ends_with("opening it needs CAP_SYS_RAWIO"));
    assert!(row(&text, "rdpmc").starts_with("1 (user-space rdpmc allowed for tasks"));
    assert!(row(&text, "NMI watchdog").starts_with("on: holds one counter on every CPU"));
    assert_eq!(
        row(&text, "lockdown"),
        "integrity (the kernel refuses MSR writes)"
    );
    assert!(text.contains(
        "hardware counters are available through the `cpu` PMU (4 general-purpose counters of 48 bits and 3 fixed of 48 bits per CPU): you may count only user space of your own processes"
    ));
    assert!(text.contains("uncore_cbox_{0-3}"));

    assert_eq!(json["cpu"]["intel"]["version"], 4);
    assert_eq!(json["cpu"]["counters"]["general"], 4);
    assert_eq!(json["access"]["perf_event_paranoid"], 2);
    assert_eq!(json["topology"]["threads_per_core"], 2);
    assert_eq!(json["problems"].as_array().unwrap().len(), 0);
}

#[test]
fn skylake_sp_fixture() {
    let (text, json) = info_on("skylake-sp-2s");
    assert_eq!(row(&text, "--cpu key"), "GenuineIntel-6-55-4");
    assert_eq!(row(&text, "microarchitecture"), "Skylake-SP (SKX)");
    assert!(pmu_line(&text, "uncore_cha_{0-7}").contains("types 12-19"));
    assert!(pmu_line(&text, "uncore_imc_{0-5}").contains("3 event aliases"));
    assert!(text.contains("filter_opc_0=config1:41-50"));
    assert!(text.contains("    cpumask  0,8\n"));
    assert_eq!(row(&text, "CPUs"), "32 online of 32 (0-31)");
    assert_eq!(row(&text, "cores"), "16");
    assert_eq!(row(&text, "packages"), "2");
    assert_eq!(row(&text, "  package 1"), "CPUs 8-15,24-31");
    assert_eq!(row(&text, "user"), "root (euid 0)");
    assert_eq!(
        row(&text, "msr device"),
        "present on CPUs 0-31 (/dev/cpu/N/msr)"
    );
    assert_eq!(row(&text, "NMI watchdog"), "off");
    assert_eq!(json["topology"]["package_count"], 2);
    assert_eq!(json["cpu"]["microarch"]["code"], "SKX");
    assert_eq!(json["verdict"]["hardware_counters"], true);
}

#[test]
fn zen2_fixture() {
    let (text, json) = info_on("zen2-epyc");
    assert_eq!(row(&text, "vendor"), "AMD (AuthenticAMD)");
    assert_eq!(row(&text, "brand"), "AMD EPYC 7232P 8-Core Processor");
    assert_eq!(row(&text, "family"), "23 (0x17)");
    assert_eq!(row(&text, "model"), "49 (0x31)");
    assert_eq!(row(&text, "--cpu key"), "AuthenticAMD-23-31-0");
    assert_eq!(row(&text, "microarchitecture"), "Zen 2 (zen2)");
    assert_eq!(
        row(&text, "counters"),
        "6 general-purpose × 48 bits per CPU (from PerfCtrExtCore)"
    );
    assert_eq!(
        row(&text, "PerfCtrExtCore"),
        "yes (6 core counters at 0xC0010200)"
    );
    assert_eq!(
        row(&text, "IBS"),
        "yes (no valid feature flags in CPUID 0x8000001B)"
    );
    assert_eq!(row(&text, "PerfMonV2"), "no (no CPUID leaf 0x80000022)");
    // Zen 2 has no PerfMonV2 to miss; everything else is there.
    assert!(
        text.contains("Hidden PMU features\n  nothing: CPUID and the kernel's PMUs show every PMU feature a Zen 2 has"),
        "{text}"
    );
    assert!(text.contains("event=config:0-7,32-35"));
    for name in ["amd_df", "amd_l3", "ibs_fetch", "ibs_op", "msr", "power"] {
        pmu_line(&text, name);
    }
    assert!(text.contains("    cpumask  0,2,4,6\n"));
    assert_eq!(row(&text, "CAP_PERFMON"), "yes");
    assert_eq!(row(&text, "CAP_SYS_ADMIN"), "no");
    assert_eq!(
        row(&text, "perf scope"),
        "per task, user space and kernel; CPU-wide"
    );
    assert!(row(&text, "msr device").starts_with("absent"));
    assert_eq!(json["cpu"]["amd"]["core_ext"], true);
    assert_eq!(json["access"]["cap_perfmon"], true);
}

#[test]
fn kvm_zen4_guest_fixture() {
    let (text, json) = info_on("kvm-zen4-guest");
    assert_eq!(row(&text, "vendor"), "AMD (AuthenticAMD)");
    assert_eq!(row(&text, "family"), "25 (0x19)");
    assert_eq!(row(&text, "model"), "17 (0x11)");
    assert_eq!(row(&text, "microarchitecture"), "Zen 4 (zen4)");
    assert_eq!(row(&text, "hypervisor"), "KVM (signature \"KVMKVMKVM\")");
    assert!(row(&text, "counters").starts_with("none: CPUID clears PerfCtrExtCore"));
    let names: Vec<&str> = pmu_lines(&text)
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["breakpoint", "msr", "software", "tracepoint", "uprobe"]
    );
    assert_eq!(row(&text, "CPUs"), "2 online of 2 (0-1)");
    assert_eq!(row(&text, "packages"), "1");
    assert_eq!(row(&text, "SMT"), "off (1 thread per core)");
    assert_eq!(
        text.lines().last().unwrap().trim(),
        "hardware counters are not exposed on this virtual machine (no `cpu` PMU in sysfs, CPUID reports no PMU): software, msr, breakpoint, tracepoint and uprobe events work"
    );
    assert_eq!(json["verdict"]["hardware_counters"], false);
    // What KVM hides, feature by feature (the fixture's CPUID clears every
    // PMU bit and has no leaf 0x80000022).
    let hidden: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Hidden PMU features")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        hidden,
        [
            "  PerfCtrExtCore (6 core counters): every Zen 4 has it, but the hypervisor (KVM) clears it (CPUID 0x80000001 ECX bit 23)",
            "  PerfCtrExtDF (data-fabric counters): every Zen 4 has it, but the hypervisor (KVM) clears it (CPUID 0x80000001 ECX bit 24)",
            "  PerfCtrExtLLC (L3 counters): every Zen 4 has it, but the hypervisor (KVM) clears it (CPUID 0x80000001 ECX bit 28)",
            "  IBS (instruction-based sampling): every Zen 4 has it, but the hypervisor (KVM) clears it (CPUID 0x80000001 ECX bit 10)",
            "  PerfMonV2 (global control, UMC counters): every Zen 4 has it, but the hypervisor (KVM) clears it (CPUID 0x80000022 EAX bit 0)",
        ]
    );
    assert_eq!(json["hidden"].as_array().unwrap().len(), 5);
}

/// Zen 4 and Zen 5 bare metal (composed fixtures: which CPUID bit comes
/// from where is written in their cpuid.txt): the microarchitecture from
/// family/model, six counters from PerfMonV2's NumPerfCtrCore, the DF and
/// UMC counts, the LBR stack, the IBS flags by name, nothing hidden.
#[test]
fn zen4_and_zen5_fixtures() {
    for (name, key, arch, umc, ibs) in [
        (
            "zen4-epyc",
            "AuthenticAMD-25-61-2",
            "Zen 4 (zen4)",
            8,
            "yes (CPUID 0x8000001B EAX=0xbff): IBSFFV FetchSam OpSam RdWrOpCnt OpCnt BrnTrgt OpCntExt RipInvalidChk OpBrnFuse IbsFetchCtlExtd IbsL3MissFiltering",
        ),
        (
            "zen5-epyc",
            "AuthenticAMD-26-2-1",
            "Zen 5 (zen5)",
            48,
            "yes (CPUID 0x8000001B EAX=0x1bff): IBSFFV FetchSam OpSam RdWrOpCnt OpCnt BrnTrgt OpCntExt RipInvalidChk OpBrnFuse IbsFetchCtlExtd IbsL3MissFiltering IbsOpLdLat",
        ),
    ] {
        let (text, json) = info_on(name);
        assert_eq!(row(&text, "--cpu key"), key);
        assert_eq!(row(&text, "microarchitecture"), arch);
        assert_eq!(row(&text, "hypervisor"), "none (CPUID hypervisor bit clear)");
        assert_eq!(
            row(&text, "counters"),
            "6 general-purpose × 48 bits per CPU (from CPUID 0x80000022 NumPerfCtrCore)"
        );
        assert_eq!(row(&text, "PerfCtrExtDF/NB"), "yes");
        assert_eq!(row(&text, "PerfCtrExtLLC"), "yes");
        assert_eq!(row(&text, "IBS"), ibs);
        assert_eq!(
            row(&text, "PerfMonV2"),
            format!("yes: 6 core, 16 DF, {umc} UMC counters, LBR stack of 16")
        );
        for pmu in ["amd_df", "amd_l3", "amd_umc_0", "ibs_fetch", "ibs_op"] {
            pmu_line(&text, pmu);
        }
        let zen = &arch[..5];
        assert!(
            text.contains(&format!("Hidden PMU features\n  nothing: CPUID and the kernel's PMUs show every PMU feature a {zen} has")),
            "{text}"
        );
        assert_eq!(json["cpu"]["amd"]["ibs_features"]["eax"], if umc == 8 { 0xbff } else { 0x1bff });
        assert_eq!(json["hidden"], serde_json::json!([]));
    }
}

/// This machine, when it is a KVM guest without a PMU (the development
/// VM): `pmx info` says plainly what the hypervisor hides.
#[test]
fn this_vm_says_what_kvm_hides() {
    let text = stdout_of(&["info"]);
    let guest = row(&text, "hypervisor").starts_with("KVM")
        && text.contains("AuthenticAMD")
        && row(&text, "counters").starts_with("none");
    if !guest {
        pmx_testkit::skip("this machine is not an AMD KVM guest without a PMU");
        return;
    }
    assert!(
        text.contains("PerfCtrExtCore (6 core counters): every Zen"),
        "{text}"
    );
    assert!(
        text.contains("but the hypervisor (KVM) clears it (CPUID 0x80000001 ECX bit 23)"),
        "{text}"
    );
    assert!(
        text.contains("hardware counters are not exposed on this virtual machine"),
        "{text}"
    );
}

#[test]
fn test_flags_are_hidden_from_help() {
    let help = stdout_of(&["info", "--help"]);
    assert!(help.contains("--json"));
    for hidden in ["--sysfs-root", "--cpuid-file", "--dump-cpuid"] {
        assert!(!help.contains(hidden), "{hidden} shows in help:\n{help}");
    }
}

#[test]
fn bad_cpuid_file_fails_with_its_name() {
    let out = pmx(&["info", "--cpuid-file", "/nonexistent/cpuid.txt"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/cpuid.txt"), "{err}");

    let dir = std::env::temp_dir().join(format!("pmx-info-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("cpuid.txt");
    std::fs::write(&bad, "0 0 1 2 3\n").unwrap();
    let out = pmx(&["info", "--cpuid-file", bad.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cpuid.txt:1: 5 fields, 6 expected"), "{err}");
}

#[test]
fn empty_root_still_reports() {
    let dir = fixture_dir("skylake-client");
    let cpuid = dir.join("cpuid.txt");
    let text = stdout_of(&[
        "info",
        "--cpuid-file",
        cpuid.to_str().unwrap(),
        "--sysfs-root",
        "/nonexistent-pmx-root",
    ]);
    assert!(text.contains("Kernel PMUs (0 in /sys/bus/event_source/devices)"));
    assert_eq!(
        row(&text, "perf_event_paranoid"),
        "unknown (no /proc/sys/kernel/perf_event_paranoid)"
    );
    assert_eq!(row(&text, "user"), "unknown");
    assert!(text.contains(
        "hardware counters are not available (no `cpu` PMU in sysfs, although CPUID describes 7 counters)"
    ));
}

#[test]
fn dump_cpuid_round_trips() {
    let cpuid = fixture_dir("zen2-epyc").join("cpuid.txt");
    let dumped = stdout_of(&[
        "info",
        "--dump-cpuid",
        "--cpuid-file",
        cpuid.to_str().unwrap(),
    ]);
    assert!(dumped.starts_with("# leaf"));
    assert!(dumped.contains("80000001  0        00830f10 40000000 75c237ff 2fd3fbff"));
    // This machine's own dump is in the same format.
    let own = stdout_of(&["info", "--dump-cpuid"]);
    assert!(own.starts_with("# leaf"));
}
