//! `pmx::msr::MsrSession` (what the C API's `pmx_msr_*` wraps) and
//! `MsrHandle::open_with` on a simulated 4-CPU, 2-package Skylake-SP
//! (fixture files, register N at byte 8·N): registers read by name,
//! an event list programmed as `pmx msr plan` plans it, the counters'
//! deltas, every register put back by `restore`, and a handle's CPUs
//! folded into its scope's domains.

use pmx::msr::{MsrSession, MsrSessionOptions, Scope};
use pmx::recorder::{Handle, MsrHandle};
use pmx_testkit::msr::Machine;

const IA32_TSC: u32 = 0x10;
const IA32_PMC0: u32 = 0xC1;
const IA32_PERFEVTSEL0: u32 = 0x186;
const IA32_FIXED_CTR_CTRL: u32 = 0x38D;

fn options(m: &Machine) -> MsrSessionOptions {
    MsrSessionOptions {
        cpus: None,
        msr_root: Some(m.dev()),
        sysfs_root: Some(m.path().to_path_buf()),
        cpu: Some("GenuineIntel-6-55-4".parse().unwrap()),
        force: false,
        events_dir_default: pmx::events_dirs::from_env(),
    }
}

#[test]
fn a_session_reads_programs_and_restores() {
    let m = Machine::new(4, 2);
    m.nmi_watchdog_off();
    m.set(1, IA32_TSC, 0x1234_5678);
    // A value without EN (not in use): restored as it was.
    m.set(0, IA32_PERFEVTSEL0, 0x11);
    let mut s = MsrSession::open(&options(&m)).unwrap();
    assert_eq!(s.cpus(), [0, 1, 2, 3]);
    assert_eq!(s.read("IA32_TIME_STAMP_COUNTER", 1).unwrap(), 0x1234_5678);
    assert_eq!(s.read("0x10", 1).unwrap(), 0x1234_5678);
    assert!(s.read("IA32_NOPE", 0).is_err());
    assert!(s.read_counters().unwrap().is_empty(), "nothing programmed");

    let plan = s.program("r00c0,instructions").unwrap();
    assert!(!plan.slots.is_empty());
    for cpu in 0..4 {
        let sel = m.get(cpu, IA32_PERFEVTSEL0);
        // Event 0xC0, USR, OS, EN.
        assert_eq!(sel & 0xFF, 0xC0, "cpu {cpu}: {sel:#x}");
        assert_eq!(
            sel & (1 << 16 | 1 << 17 | 1 << 22),
            1 << 16 | 1 << 17 | 1 << 22
        );
        assert_ne!(m.get(cpu, IA32_FIXED_CTR_CTRL) & 0xF, 0, "cpu {cpu}");
    }
    m.set(2, IA32_PMC0, 777);
    let r = s.read_counters().unwrap();
    let pmc = r
        .iter()
        .find(|r| r.slot.cpu == 2 && r.raw == 777)
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(pmc.delta, 777);
    s.restore().unwrap();
    assert_eq!(m.get(0, IA32_PERFEVTSEL0), 0x11);
    for cpu in 1..4 {
        assert_eq!(m.get(cpu, IA32_PERFEVTSEL0), 0, "cpu {cpu}");
        assert_eq!(m.get(cpu, IA32_FIXED_CTR_CTRL), 0, "cpu {cpu}");
    }
    // A bad event: the resolver's reason.
    let e = s.program("no-such-event").unwrap_err().to_string();
    assert!(e.contains("no-such-event"), "{e}");
}

#[test]
fn a_handle_is_read_once_per_domain_of_its_scope() {
    let m = Machine::new(4, 2);
    let opts = options(&m);
    let cpus = |scope| {
        MsrHandle::open_with("IA32_TIME_STAMP_COUNTER", scope, &opts)
            .unwrap()
            .cpus()
            .to_vec()
    };
    assert_eq!(cpus(Scope::Thread), [0, 1, 2, 3]);
    // One thread a core: every CPU is its own core.
    assert_eq!(cpus(Scope::Core), [0, 1, 2, 3]);
    assert_eq!(cpus(Scope::Package), [0, 2]);
    let mut h = MsrHandle::open_with("IA32_TIME_STAMP_COUNTER", Scope::Package, &opts).unwrap();
    m.set(2, IA32_TSC, 99);
    let mut v = [0u64; 2];
    h.read(&mut v).unwrap();
    assert_eq!(v, [0, 99]);
    assert_eq!(h.width(), 64);
}

#[test]
fn without_the_driver_the_session_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let e = MsrSession::open(&MsrSessionOptions {
        cpus: Some("0".into()),
        msr_root: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.ends_with("not found — load the msr driver (modprobe msr)"),
        "{e}"
    );
}
