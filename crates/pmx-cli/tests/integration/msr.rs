//! `pmx msr read|write|plan` through the real binary, on fixture msr files
//! (register N at byte 8·N of a sparse `cpuN/msr`) and a fixture sysfs.

use crate::common::{pmx, stderr, stdout};
use pmx_testkit::msr::Machine;
use std::path::Path;
use std::process::Output;

/// `pmx msr` on the fixture machine.
trait MsrCommand {
    fn pmx(&self, args: &[&str]) -> Output;
}

impl MsrCommand for Machine {
    /// `pmx msr <args> --msr-root DEV --sysfs-root ROOT --arch intel`.
    fn pmx(&self, args: &[&str]) -> Output {
        let mut a: Vec<String> = vec!["msr".into()];
        a.extend(args.iter().map(|s| s.to_string()));
        a.extend([
            "--msr-root".to_string(),
            self.dev().display().to_string(),
            "--sysfs-root".to_string(),
            self.path().display().to_string(),
        ]);
        if a[1] != "plan" {
            a.extend(["--arch".to_string(), "intel".to_string()]);
        }
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        pmx(&refs)
    }
}

#[test]
fn read_without_the_msr_driver_fails_in_one_sentence() {
    if Path::new("/dev/cpu/0/msr").exists() {
        pmx_testkit::skip("this machine has the msr driver loaded");
        return;
    }
    let o = pmx(&["msr", "read", "0x10"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "pmx: /dev/cpu/0/msr: not found — load the msr driver (modprobe msr)\n"
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn read_per_cpu_with_field_and_decode() {
    let m = crate::common::four_cpu_msr_machine();
    m.set(0, 0x38f, 0x7_0000_000f);
    m.set(1, 0x38f, 0x1_0000_0001);
    let o = m.pmx(&["read", "IA32_PERF_GLOBAL_CTRL", "-c", "0,1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "cpu 0  IA32_PERF_GLOBAL_CTRL (0x38f) = 0x000000070000000f\n\
         cpu 1  IA32_PERF_GLOBAL_CTRL (0x38f) = 0x0000000100000001\n"
    );
    let o = m.pmx(&["read", "0x38f", "--field", "34:32"]);
    assert_eq!(
        stdout(&o),
        "cpu 0  IA32_PERF_GLOBAL_CTRL (0x38f) = 0x7 (bits 34:32)\n"
    );
    let o = m.pmx(&["read", "ia32_perf_global_ctrl", "-c", "1", "--decode"]);
    let out = stdout(&o);
    assert!(out.contains("PMC0_EN"), "{out}");
    assert!(out.contains("FIXED_CTR0_EN"), "{out}");
    let o = m.pmx(&["read", "0x10", "--decode"]);
    assert!(stdout(&o).contains("no field layout"), "{}", stdout(&o));
}

#[test]
fn package_registers_are_read_once_per_package() {
    let m = crate::common::four_cpu_msr_machine();
    for cpu in 0..4 {
        m.set(cpu, 0x606, 0x000A_0E03); // 1/16384 J
    }
    m.set(0, 0x611, 16384 * 3);
    m.set(2, 0x611, 16384 / 2);
    // The second CPU of each package: a read there would show this.
    m.set(1, 0x611, 0x5555);
    m.set(3, 0x611, 0x5555);
    let o = m.pmx(&["read", "MSR_PKG_ENERGY_STATUS", "-a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "package 0 (cpu 0)  MSR_PKG_ENERGY_STATUS (0x611) = 0x000000000000c000  (3.000000 J)\n\
         package 1 (cpu 2)  MSR_PKG_ENERGY_STATUS (0x611) = 0x0000000000002000  (0.500000 J)\n"
    );
    let o = m.pmx(&["read", "MSR_PKG_ENERGY_STATUS", "-c", "3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["cpu"], 3);
    assert_eq!(v["domain"]["package"], 1);
    // Thread-scope registers: every CPU.
    let o = m.pmx(&["read", "0x10", "-a"]);
    assert_eq!(stdout(&o).lines().count(), 4);
}

#[test]
fn write_inside_the_allow_list() {
    let m = crate::common::four_cpu_msr_machine();
    let o = m.pmx(&["write", "IA32_PERFEVTSEL0", "0x41412e", "-c", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "cpu 1  IA32_PERFEVTSEL0 (0x186): 0x0 → 0x41412e\n"
    );
    assert_eq!(m.get(1, 0x186), 0x41412e);
    assert_eq!(m.get(0, 0x186), 0);
    // Package scope: once per package.
    let o = m.pmx(&["write", "MSR_UNC_PERF_GLOBAL_CTRL", "0x2000001f", "-a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    assert_eq!(m.get(2, 0xE01), 0x2000_001f);
    assert_eq!(m.get(3, 0xE01), 0);
}

#[test]
fn writes_outside_the_allow_list_are_refused() {
    let m = crate::common::four_cpu_msr_machine();
    m.set(0, 0x1a0, 0x850089);
    let o = m.pmx(&["write", "0x1a0", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "pmx: refusing to write: MSR 0x1a0 is not a PMU register pmx knows; writes are limited to the vendor's performance-monitoring control and counter registers (--unsafe writes anyway)\n"
    );
    assert_eq!(m.get(0, 0x1a0), 0x850089);

    let o = m.pmx(&["write", "IA32_PERFEVTSEL0", "0x1000000041412e"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("reserved bits 63:48"), "{}", stderr(&o));
    let o = m.pmx(&["write", "IA32_PERF_GLOBAL_STATUS", "0"]);
    assert!(
        stderr(&o).contains("not writable through pmx"),
        "{}",
        stderr(&o)
    );
    assert_eq!(m.get(0, 0x186), 0);

    let o = m.pmx(&["write", "0x1a0", "0", "--unsafe"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("pmx: WARNING: --unsafe:"),
        "{}",
        stderr(&o)
    );
    assert_eq!(m.get(0, 0x1a0), 0);
}

#[test]
fn bad_input_is_a_usage_error() {
    let m = crate::common::four_cpu_msr_machine();
    let o = m.pmx(&["read", "IA32_PERF_GLOBAL_CTLR"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean IA32_PERF_GLOBAL_CTRL"),
        "{}",
        stderr(&o)
    );
    let o = m.pmx(&["read", "0x38f", "--field", "3:9"]);
    assert_eq!(o.status.code(), Some(2));
    let o = m.pmx(&["read", "PERF_CTL0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("PERF_CTL0 is an AMD register; this CPU is Intel"));
    let o = m.pmx(&["write", "0x186", "banana"]);
    assert_eq!(o.status.code(), Some(2));
    let o = m.pmx(&["read", "0x10", "-c", "9"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("CPU 9 has no msr device"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plan_for_the_worked_example() {
    let m = crate::common::four_cpu_msr_machine();
    m.set(0, 0x38f, 0x8);
    let o = m.pmx(&[
        "plan",
        "-e",
        "cpu/event=0x2e,umask=0x41/u,instructions",
        "-c",
        "0",
        "--cpu",
        "GenuineIntel-6-5E-3",
        "--no-libpfm",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // The writes, in order: counters zeroed, the event select, the fixed
    // control (FC0 OS+USR), global control last (bits 0 and 32).
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let table: Vec<(&str, &str, &str, &str)> =
        rows.iter().map(|r| (r[1], r[2], r[3], r[4])).collect();
    assert_eq!(
        table,
        vec![
            ("0xc1", "IA32_PMC0", "0x0", "0x0"),
            ("0x309", "IA32_FIXED_CTR0", "0x0", "0x0"),
            ("0x186", "IA32_PERFEVTSEL0", "0x0", "0x41412e"),
            ("0x38d", "IA32_FIXED_CTR_CTRL", "0x0", "0x3"),
            ("0x38f", "IA32_PERF_GLOBAL_CTRL", "0x8", "0x100000001"),
        ],
        "{out}"
    );
    assert!(
        out.contains("EventSelect=0x2e UMASK=0x41 USR=1 EN=1"),
        "{out}"
    );
    assert!(out.contains("FC0_OS=1 FC0_USR=1"), "{out}");
    assert!(out.contains("PMC0_EN=1 FIXED_CTR0_EN=1"), "{out}");
    // No side effects.
    assert_eq!(m.get(0, 0x186), 0);
    assert_eq!(m.get(0, 0x38f), 0x8);
}

#[test]
fn plan_refuses_what_the_msr_backend_cannot_count() {
    let m = crate::common::four_cpu_msr_machine();
    let base = ["-c", "0", "--cpu", "GenuineIntel-6-5E-3", "--no-libpfm"];
    let mut a = vec!["plan", "-e", "task-clock"];
    a.extend(base);
    let o = m.pmx(&a);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("counted by the kernel"),
        "{}",
        stderr(&o)
    );
    let mut a = vec!["plan", "-e", "r00c4,r00c5,r003c,r412e,r4f2e"];
    a.extend(base);
    let o = m.pmx(&a);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not multiplex"), "{}", stderr(&o));
}

/// `pmx msr plan` for an AMD CPU with perf's tables: the table of writes
/// (address, register, old, new) and the restore order's registers.
fn amd_plan(m: &Machine, cpu: &str, events: &str) -> Option<(Vec<[String; 4]>, Vec<String>)> {
    let dir = pmx_testkit::shared::linux_perf_events()?;
    let dir = dir.display().to_string();
    let o = m.pmx(&[
        "plan",
        "-e",
        events,
        "-c",
        "0",
        "--cpu",
        cpu,
        "--events-dir",
        &dir,
        "--no-libpfm",
    ]);
    assert!(o.status.success(), "{cpu}: {}", stderr(&o));
    let out = stdout(&o);
    let writes = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            let r: Vec<&str> = l.split_whitespace().collect();
            [r[1], r[2], r[3], r[4]].map(String::from)
        })
        .collect();
    let restore = out
        .lines()
        .filter(|l| l.trim_start().starts_with('r') && l.contains("0xc0"))
        .map(|l| {
            let r: Vec<&str> = l.split_whitespace().collect();
            format!("{} {}", r[1], r[3])
        })
        .collect();
    Some((writes, restore))
}

fn rows(v: &[(&str, &str, &str, &str)]) -> Vec<[String; 4]> {
    v.iter()
        .map(|(a, n, o, w)| [a, n, o, w].map(|s| s.to_string()))
        .collect()
}

/// Zen 3 has no PerfMonV2: the six extension counters, no global control.
/// Zen 4 and Zen 5 do (AMD APM vol. 2 "Performance Monitor Counters";
/// CPUID 0x80000022 EAX bit 0): the plan ends with PerfCntrGlobalCtl
/// (0xC0000301) enabling counters 0 and 1, and the restore clears it first
/// and puts its old value back last. PERF_CTL values by hand from perf's
/// tables: EventSelect[7:0] | UnitMask << 8 | USR (16) | OS (17) | En (22)
/// | EventSelect[11:8] << 32.
#[test]
fn amd_plans_use_global_control_from_zen_4_on() {
    let m = crate::common::four_cpu_msr_machine();
    // Linux keeps every PerfMonV2 enable bit set while idle.
    m.set(0, 0xC000_0301, 0x3f);
    // Zen 3: ex_ret_instr = 0xc0; ic_tag_hit_miss.instruction_cache_miss
    // = EventCode 0x18e, UMask 0x18 (amdzen3/cache.json).
    let Some((w, restore)) = amd_plan(
        &m,
        "AuthenticAMD-25-1-1",
        "ex_ret_instr,ic_tag_hit_miss.instruction_cache_miss",
    ) else {
        return;
    };
    let zen34 = [
        ("0xc0010201", "PERF_CTR_EXT0", "0x0", "0x0"),
        ("0xc0010203", "PERF_CTR_EXT1", "0x0", "0x0"),
        ("0xc0010200", "PERF_CTL_EXT0", "0x0", "0x4300c0"),
        ("0xc0010202", "PERF_CTL_EXT1", "0x0", "0x10043188e"),
    ];
    assert_eq!(w, rows(&zen34));
    assert!(!restore.iter().any(|r| r.contains("GLOBAL")), "{restore:?}");
    // Zen 4 (family 0x19 model 0x11, Genoa): the same events, then the
    // global enable of counters 0 and 1 over the old 0x3f.
    let (w, restore) = amd_plan(
        &m,
        "AuthenticAMD-25-11-1",
        "ex_ret_instr,ic_tag_hit_miss.instruction_cache_miss",
    )
    .unwrap();
    let mut zen4 = zen34.to_vec();
    zen4.push(("0xc0000301", "PERF_CNTR_GLOBAL_CTL", "0x3f", "0x3"));
    assert_eq!(w, rows(&zen4));
    assert_eq!(
        restore,
        [
            "0xc0000301 0x0",
            "0xc0010202 0x0",
            "0xc0010200 0x0",
            "0xc0010203 0x0",
            "0xc0010201 0x0",
            "0xc0000301 0x3f",
        ]
    );
    // Zen 5 (family 0x1a model 2, Turin): de_no_dispatch_per_slot.
    // backend_stalls = EventCode 0x1a0, UMask 0x1e (amdzen5/pipeline.json).
    let (w, _) = amd_plan(
        &m,
        "AuthenticAMD-26-2-1",
        "ex_ret_instr,de_no_dispatch_per_slot.backend_stalls",
    )
    .unwrap();
    assert_eq!(
        w,
        rows(&[
            ("0xc0010201", "PERF_CTR_EXT0", "0x0", "0x0"),
            ("0xc0010203", "PERF_CTR_EXT1", "0x0", "0x0"),
            ("0xc0010200", "PERF_CTL_EXT0", "0x0", "0x4300c0"),
            ("0xc0010202", "PERF_CTL_EXT1", "0x0", "0x100431ea0"),
            ("0xc0000301", "PERF_CNTR_GLOBAL_CTL", "0x3f", "0x3"),
        ])
    );
    // Nothing was written.
    assert_eq!(m.get(0, 0xC000_0301), 0x3f);
    assert_eq!(m.get(0, 0xC001_0200), 0);
}
