//! `Counters` with the MSR backend on a simulated device (fixture files,
//! register N at byte 8·N) for a Skylake-SP: the session programs the
//! counters, the test advances them, reads give the deltas while enabled
//! (wrap-around at 48 bits included), and dropping restores every register.

use pmx::{Backend, CountTarget, Counters, MsrOptions};
use pmx_model::count::Count;
use pmx_testkit::msr;
use std::path::Path;

const IA32_PMC0: u32 = 0xC1;
const IA32_PERFEVTSEL0: u32 = 0x186;
const IA32_FIXED_CTR0: u32 = 0x309;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;

fn get(root: &Path, cpu: u32, address: u32) -> u64 {
    msr::get(&root.join("dev"), cpu, address)
}

fn set(root: &Path, cpu: u32, address: u32, value: u64) {
    msr::set(&root.join("dev"), cpu, address, value);
}

#[test]
fn msr_backend_counts_what_the_simulated_pmu_advances() {
    let dir = msr::Machine::new(2, 2);
    let root = dir.path();
    let mut c = Counters::builder()
        .events("r00c0,instructions,page-faults")
        .cpu("GenuineIntel-6-55-4".parse().unwrap())
        .target(CountTarget::Cpus(vec![0, 1]))
        .backend(Backend::Msr(MsrOptions {
            root: Some(root.join("dev")),
            sysfs: Some(root.to_path_buf()),
            force: false,
        }))
        .open()
        .unwrap();
    // Programmed on both CPUs: PMC0 counts event 0xC0, fixed counter 0
    // instructions, both enabled globally.
    for cpu in 0..2 {
        let sel = get(root, cpu, IA32_PERFEVTSEL0);
        assert_eq!(sel & 0xFF, 0xC0, "cpu {cpu}: {sel:#x}");
        assert_ne!(sel & (1 << 22), 0, "EN");
        assert_ne!(get(root, cpu, IA32_FIXED_CTR_CTRL) & 0xF, 0);
        let global = get(root, cpu, IA32_PERF_GLOBAL_CTRL);
        assert_eq!(global & (1 | 1 << 32), 1 | 1 << 32, "{global:#x}");
    }
    // The software event cannot be programmed: kept with its reason.
    let ev = c.events();
    assert!(
        matches!(&ev[2].status, pmx::stat::EventStatus::NotSupported(w) if w.as_str().contains("kernel")),
        "{:?}",
        ev[2]
    );
    // Counts before enable are not kept.
    set(root, 0, IA32_PMC0, 700);
    set(root, 1, IA32_FIXED_CTR0, 0xFFFF_FFFF_FFF0);
    c.enable().unwrap();
    set(root, 0, IA32_PMC0, 700 + 1000);
    set(root, 1, IA32_PMC0, 500);
    set(root, 1, IA32_FIXED_CTR0, 0x10); // wrapped: +0x20
    let r = c.read().unwrap();
    assert_eq!(r[0].count.value, 1500);
    assert_eq!(r[1].count.value, 0x20);
    assert_eq!(r[2].scaled(), None);
    assert_eq!(r[0].count.enabled, r[0].count.running);
    c.disable().unwrap();
    set(root, 0, IA32_PMC0, 10_000);
    let mut counts = [Count::default(); 3];
    c.read_into(&mut counts).unwrap();
    assert_eq!(counts[0].value, 1500, "disabled: not counted");
    c.reset().unwrap();
    c.read_into(&mut counts).unwrap();
    assert_eq!(counts[0].value, 0);
    drop(c);
    // Every register back as it was.
    for cpu in 0..2 {
        assert_eq!(get(root, cpu, IA32_PERFEVTSEL0), 0);
        assert_eq!(get(root, cpu, IA32_FIXED_CTR_CTRL), 0);
        assert_eq!(get(root, cpu, IA32_PERF_GLOBAL_CTRL), 0);
    }
}

#[test]
fn msr_backend_needs_cpus() {
    let e = Counters::builder()
        .events("instructions")
        .backend(Backend::Msr(MsrOptions::default()))
        .open()
        .unwrap_err();
    assert!(e.to_string().contains("CountTarget::Cpus"), "{e}");
}
