//! Sessions against a simulated PMU on fixture files: exact deltas,
//! wrap-around, scope, refusal when busy, and bit-for-bit restore after a
//! normal run and after a panic.

use crate::common::*;
use pmx_model::encoding::Arch;
use pmx_model::topology::Topology;
use pmx_msr::{
    plan, DomainId, EnergyMeter, Mode, MsrDevice, MsrError, MsrEvent, PmuCounters, Session,
    SessionOptions, Signals,
};

fn quiet() -> SessionOptions {
    SessionOptions {
        force: false,
        signals: Signals::Ignore,
    }
}

fn intel_session(
    fx: &Fixture,
    events: &[MsrEvent],
    opts: &SessionOptions,
) -> Result<Session, MsrError> {
    let pmu = PmuCounters::assumed(Arch::Intel, None);
    let p = plan(events, &fx.cpus, &pmu, &Topology::default())?;
    let dev = MsrDevice::open(&fx.root(), &p.cpus_touched(), Mode::ReadWrite)?;
    Session::start(dev, p, opts)
}

#[test]
fn deltas_are_exact_and_only_enabled_counters_advance() {
    let fx = Fixture::new(2);
    let sim = SimPmu::intel(&fx);
    let mut s = intel_session(&fx, &worked_example(), &quiet()).unwrap();

    // Programmed as planned, on both CPUs.
    for cpu in 0..2 {
        assert_eq!(fx.get(cpu, 0x186), 0x41412e);
        assert_eq!(fx.get(cpu, 0x38d), 0x3);
        assert_eq!(fx.get(cpu, 0x38f), (1 << 32) | 1);
    }
    // Known amounts: PMC0 on cpu c gets 100·(c+1) per step, FIXED_CTR0
    // 7000·(c+1); PMC1 (never enabled) would get 1e9.
    let amount = |cpu: u32, c: Ctr| -> u64 {
        let k = cpu as u64 + 1;
        match c {
            Ctr::General(0) => 100 * k,
            Ctr::Fixed(0) => 7000 * k,
            _ => 1_000_000_000,
        }
    };
    for round in 1..=3u64 {
        for _ in 0..round {
            sim.step(amount);
        }
        let r = s.read().unwrap();
        assert_eq!(r.len(), 4, "two events on two CPUs");
        for x in &r {
            let k = x.slot.cpu as u64 + 1;
            let per_step = if x.slot.event == 0 { 100 * k } else { 7000 * k };
            assert_eq!(x.delta, per_step * round, "{x:?}");
            assert_eq!(x.total, per_step * round * (round + 1) / 2);
            assert_eq!(x.slot.domain, DomainId::Cpu { cpu: x.slot.cpu });
        }
    }
    assert_eq!(fx.get(0, 0xc2), 0, "PMC1 was never enabled");
    assert_eq!(fx.get(1, 0x30a), 0, "FIXED_CTR1 was never enabled");
}

#[test]
fn a_counter_wrapping_at_48_bits_gives_the_exact_delta() {
    let fx = Fixture::new(1);
    let sim = SimPmu::intel(&fx);
    let mut s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
    let near = (1u64 << 48) - 100;
    sim.step(|_, c| if c == Ctr::General(0) { near } else { 1 });
    let r = s.read().unwrap();
    assert_eq!((r[0].raw, r[0].delta), (near, near));
    sim.step(|_, c| if c == Ctr::General(0) { 250 } else { 1 });
    let r = s.read().unwrap();
    assert_eq!(r[0].raw, 150, "the counter wrapped");
    assert_eq!(r[0].delta, 250);
    assert_eq!(r[0].total, near + 250);
    assert_eq!(r[1].total, 2);
}

#[test]
fn the_counter_width_comes_from_the_pmu() {
    let fx = Fixture::new(1);
    let mut sim = SimPmu::intel(&fx);
    sim.width = 40;
    let mut pmu = PmuCounters::assumed(Arch::Intel, None);
    pmu.widths.general = 40;
    pmu.widths.fixed = 40;
    let p = plan(&worked_example(), &[0], &pmu, &Topology::default()).unwrap();
    let dev = MsrDevice::open(&fx.root(), &[0], Mode::ReadWrite).unwrap();
    let mut s = Session::start(dev, p, &quiet()).unwrap();
    sim.step(|_, _| (1 << 40) - 1);
    assert_eq!(s.read().unwrap()[0].delta, (1 << 40) - 1);
    sim.step(|_, _| 11);
    let r = s.read().unwrap();
    assert_eq!(r[0].raw, 10, "wrapped at 2^40");
    assert_eq!(r[0].delta, 11);
    assert_eq!(r[0].total, (1 << 40) + 10);
}

#[test]
fn normal_end_restores_every_register_bit_for_bit() {
    let fx = Fixture::new(2);
    dirty_intel(&fx);
    let sim = SimPmu::intel(&fx);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    {
        let mut s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
        assert_ne!(fx.snapshot(&addresses), before, "programmed");
        sim.step(|_, _| 12345);
        s.read().unwrap();
        let touched: Vec<(u32, u32)> = s.saved().iter().map(|r| (r.cpu, r.address)).collect();
        assert_eq!(touched.len(), 10, "5 registers on 2 CPUs: {touched:?}");
        s.restore().unwrap();
        assert_eq!(fx.snapshot(&addresses), before);
        // Dropping after an explicit restore writes nothing new.
        fx.set(0, 0x38f, 0x8);
    }
    assert_eq!(fx.get(0, 0x38f), 0x8);
}

#[test]
fn drop_restores() {
    let fx = Fixture::new(2);
    dirty_intel(&fx);
    let sim = SimPmu::intel(&fx);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let mut s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
    sim.step(|_, _| 3);
    s.read().unwrap();
    drop(s);
    assert_eq!(fx.snapshot(&addresses), before);
}

#[test]
fn a_panic_restores_every_register_bit_for_bit() {
    let fx = Fixture::new(2);
    dirty_intel(&fx);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
        let sim = SimPmu::intel(&fx);
        sim.step(|_, _| 99);
        s.read().unwrap();
        assert_eq!(fx.get(1, 0x38f), (1 << 32) | 1);
        panic!("forced panic while counting");
    }));
    assert!(result.is_err());
    assert_eq!(fx.snapshot(&addresses), before);
}

#[test]
fn counters_in_use_are_refused_unless_forced() {
    let fx = Fixture::new(2);
    // Someone counts on PMC0 of cpu 1 (EN set) ...
    fx.set(1, 0x186, 0x43_00c0);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let e = intel_session(&fx, &worked_example(), &quiet()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("cpu 1: IA32_PERFEVTSEL0 = 0x4300c0 has EN set"),
        "{msg}"
    );
    assert_eq!(fx.snapshot(&addresses), before, "nothing written");
    // ... and the global control already enables FIXED_CTR0 on cpu 0.
    fx.set(1, 0x186, 0);
    fx.set(0, 0x38f, 1 << 32);
    let before = fx.snapshot(&addresses);
    let e = intel_session(&fx, &worked_example(), &quiet()).unwrap_err();
    assert!(
        e.to_string().contains("already enables FIXED_CTR0_EN"),
        "{e}"
    );
    // Fixed counter 0 enabled in the fixed control.
    fx.set(0, 0x38f, 0);
    fx.set(0, 0x38d, 0x2);
    let e = intel_session(&fx, &worked_example(), &quiet()).unwrap_err();
    assert!(e.to_string().contains("fixed counter 0"), "{e}");
    fx.set(0, 0x38d, 0);
    fx.set(0, 0x38f, 1 << 32);
    // Forced: programs, and gives the owner its registers back.
    let forced = SessionOptions {
        force: true,
        ..quiet()
    };
    let s = intel_session(&fx, &worked_example(), &forced).unwrap();
    assert_eq!(fx.get(0, 0x38f), (1 << 32) | 1);
    drop(s);
    assert_eq!(fx.snapshot(&addresses), before);
}

#[test]
fn amd_with_perfmon_v2() {
    let fx = Fixture::new(2);
    let sim = SimPmu::amd(&fx, true);
    for &cpu in &fx.cpus {
        fx.set(cpu, 0xC000_0301, 0x20); // counter 5 enabled by someone
        fx.set(cpu, 0xC001_020A, 0x1_0000_0076); // without En
        fx.set(cpu, 0xC001_0201, 0xffff_0000_1111);
    }
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let mut pmu = PmuCounters::assumed(Arch::Amd, Some(0x19));
    pmu.global_control = true;
    let events = vec![
        MsrEvent::new("cycles", generic(Arch::Amd, 0)),
        MsrEvent::new("r4e1", encode("cpu/event=0x4e1,umask=0xf7/u", Arch::Amd)),
    ];
    let p = plan(&events, &fx.cpus, &pmu, &Topology::default()).unwrap();
    let dev = MsrDevice::open(&fx.root(), &p.cpus_touched(), Mode::ReadWrite).unwrap();
    let mut s = Session::start(dev, p, &quiet()).unwrap();
    assert_eq!(fx.get(0, 0xC000_0301), 0b11);
    assert_eq!(fx.get(1, 0xC001_0202), 0x4_0041_f7e1);
    sim.step(|cpu, c| match c {
        Ctr::General(i) => (cpu as u64 + 1) * (i as u64 + 10),
        _ => 0,
    });
    let r = s.read().unwrap();
    let got: Vec<(u32, usize, u64)> = r
        .iter()
        .map(|x| (x.slot.cpu, x.slot.event, x.delta))
        .collect();
    assert_eq!(got, vec![(0, 0, 10), (0, 1, 11), (1, 0, 20), (1, 1, 22)]);
    drop(s);
    assert_eq!(fx.snapshot(&addresses), before);
}

#[test]
fn uncore_counters_are_programmed_and_read_once_per_package() {
    let fx = Fixture::new(4);
    let mut sim = SimPmu::intel(&fx);
    sim.packages = vec![0, 0, 1, 1];
    let topo = two_packages();
    let pmu = PmuCounters::assumed(Arch::Intel, None);
    let events = vec![
        MsrEvent::new("instructions", generic(Arch::Intel, 1)),
        MsrEvent::new(
            "uncore_cbox_1/event=0x22,umask=0x41/",
            encode("uncore_cbox_1/event=0x22,umask=0x41/", Arch::Intel),
        ),
    ];
    // The second CPU of each package holds junk in the shared counter's
    // place: a reading from it would be a bug.
    fx.set(1, 0x716, 0x7777);
    fx.set(3, 0x716, 0x7777);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let p = plan(&events, &fx.cpus, &pmu, &topo).unwrap();
    // The uncore writes go to cpu 0 and cpu 2 only.
    let uncore_cpus: Vec<u32> = p
        .writes
        .iter()
        .filter(|w| w.scope == pmx_msr::Scope::Package)
        .map(|w| w.cpu)
        .collect();
    assert_eq!(uncore_cpus, vec![0, 2, 0, 2, 0, 2]);
    let dev = MsrDevice::open(&fx.root(), &p.cpus_touched(), Mode::ReadWrite).unwrap();
    let mut s = Session::start(dev, p, &quiet()).unwrap();
    assert_eq!(fx.get(0, 0x710), 0x40_4122);
    assert_eq!(fx.get(0, 0xE01), (1 << 29) | 0x1f);
    assert_eq!(
        fx.get(1, 0xE01),
        0,
        "not written on the second CPU of the package"
    );
    sim.step(|cpu, c| match c {
        Ctr::CBox(1, 0) => 1000 + cpu as u64, // package 0 → 1000, package 1 → 1002
        Ctr::Fixed(0) => 1,
        _ => 0,
    });
    let r = s.read().unwrap();
    let uncore: Vec<(DomainId, u32, u64)> = r
        .iter()
        .filter(|x| x.slot.event == 1)
        .map(|x| (x.slot.domain, x.slot.cpu, x.delta))
        .collect();
    assert_eq!(
        uncore,
        vec![
            (DomainId::Package { package: 0 }, 0, 1000),
            (DomainId::Package { package: 1 }, 2, 1002)
        ],
        "one reading per package, none per CPU"
    );
    assert_eq!(r.iter().filter(|x| x.slot.event == 0).count(), 4);
    drop(s);
    assert_eq!(fx.snapshot(&addresses), before);
}

#[test]
fn rapl_energy_once_per_package_with_the_32_bit_wrap() {
    let fx = Fixture::new(4);
    let topo = two_packages();
    for cpu in [0, 2] {
        fx.set(cpu, 0x606, 0x000A_0E03); // ESU 14: 1/16384 J
    }
    fx.set(0, 0x611, 0xffff_c000); // 16384 units below the wrap
    fx.set(2, 0x611, 100);
    // CPUs 1 and 3 hold junk: reading them would be a bug.
    fx.set(1, 0x611, 0x5555);
    fx.set(3, 0x611, 0x5555);
    let dev = MsrDevice::open(&fx.root(), &[0, 2], Mode::Read).unwrap();
    let mut m = EnergyMeter::start(&dev, Arch::Intel, &fx.cpus, &topo).unwrap();
    assert_eq!(m.domains().len(), 2);
    fx.set(0, 0x611, 0x4000); // wrapped: 2·16384 units later
    fx.set(2, 0x611, 100 + 16384 * 3);
    let s = m.sample(&dev).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].domain.id, DomainId::Package { package: 0 });
    assert_eq!(s[0].joules, 2.0);
    assert_eq!(s[1].joules, 3.0);
    assert_eq!(s[1].domain.cpus, vec![2, 3]);
}

#[test]
fn full_width_writes_restore_counters_through_the_alias() {
    let fx = Fixture::new(1);
    fx.set(0, 0x345, 1 << 13);
    fx.set(0, 0xc1, 0x1_2345_6789);
    let s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
    assert!(s.notes().is_empty());
    drop(s);
    assert_eq!(
        fx.get(0, 0x4c1),
        0x1_2345_6789,
        "restored through IA32_A_PMC0"
    );

    let fx = Fixture::new(1);
    fx.set(0, 0xc1, 0x1_2345_6789);
    let s = intel_session(&fx, &worked_example(), &quiet()).unwrap();
    assert!(s.notes()[0].contains("bits 31:0"), "{:?}", s.notes());
}

/// Linux keeps every PerfMonV2 enable bit set while its PMU is enabled,
/// counting or not (arch/x86/events/amd/core.c, amd_pmu_v2_enable_all):
/// PerfCntrGlobalCtl = 0x3f alone does not mean the counters are in use;
/// an event select with En set does. The old 0x3f comes back at the end.
#[test]
fn amd_idle_global_enable_bits_are_not_busy() {
    let fx = Fixture::new(1);
    fx.set(0, 0xC000_0301, 0x3f);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let mut pmu = PmuCounters::assumed(Arch::Amd, Some(0x1a));
    pmu.global_control = true;
    let events = vec![MsrEvent::new("cycles", generic(Arch::Amd, 0))];
    let start = || {
        let p = plan(&events, &fx.cpus, &pmu, &Topology::default()).unwrap();
        let dev = MsrDevice::open(&fx.root(), &p.cpus_touched(), Mode::ReadWrite).unwrap();
        Session::start(dev, p, &quiet())
    };
    let s = start().unwrap();
    assert_eq!(fx.get(0, 0xC000_0301), 0b1);
    drop(s);
    assert_eq!(fx.snapshot(&addresses), before);
    // Someone's event on counter 0 (En, bit 22, set): refused.
    fx.set(0, 0xC001_0200, 0x43_0076);
    let e = start().unwrap_err();
    assert!(
        e.to_string()
            .contains("PERF_CTL_EXT0 = 0x430076 has EN set"),
        "{e}"
    );
}

/// `OFFCORE_RESPONSE_0/1` through the simulated PMU: the counts depend on
/// the filter in each event's `MSR_OFFCORE_RSP_x` (the simulation counts
/// 10 × the filter's request bits), so they come out right only if the
/// session programmed the filters; both are put back bit for bit, and a
/// session that started after another had left a filter counts with its
/// own.
#[test]
fn offcore_filters_are_programmed_counted_with_and_restored() {
    let fx = Fixture::new(2);
    dirty_intel(&fx);
    let addresses = all_catalogue_addresses();
    let before = fx.snapshot(&addresses);
    let events = vec![
        offcore_event(),
        MsrEvent::new(
            "o1",
            encode(
                "cpu/event=0xbb,umask=0x1,offcore_rsp=0x3fc0010002/",
                Arch::Intel,
            ),
        ),
    ];
    let sim = SimPmu::intel(&fx);
    {
        let mut s = intel_session(&fx, &events, &quiet()).unwrap();
        for cpu in 0..2 {
            assert_eq!(fx.get(cpu, 0x1a6), LLC_LOADS_FILTER);
            assert_eq!(fx.get(cpu, 0x1a7), 0x3fc0010002);
            assert_eq!(fx.get(cpu, 0x186) & 0xffff, 0x01b7);
            assert_eq!(fx.get(cpu, 0x187) & 0xffff, 0x01bb);
        }
        let by_filter = |cpu: u32, c: Ctr| -> u64 {
            match c {
                Ctr::General(i @ (0 | 1)) => 10 * (fx.get(cpu, 0x1a6 + i) & 0xffff),
                _ => 0,
            }
        };
        sim.step(by_filter);
        sim.step(by_filter);
        let r = s.read().unwrap();
        let deltas: Vec<(usize, u32, u64)> = r
            .iter()
            .map(|x| (x.slot.event, x.slot.cpu, x.delta))
            .collect();
        assert_eq!(deltas, [(0, 0, 20), (1, 0, 40), (0, 1, 20), (1, 1, 40)]);
    }
    assert_eq!(fx.snapshot(&addresses), before, "filters and all restored");
    // A third offcore event is refused before anything is touched.
    let mut three = events.clone();
    three.push(MsrEvent::new(
        "o2",
        encode("cpu/event=0xb7,umask=0x1,offcore_rsp=0x10004/", Arch::Intel),
    ));
    let e = intel_session(&fx, &three, &quiet()).unwrap_err();
    assert!(
        e.to_string().contains("MSR_OFFCORE_RSP_0 already holds"),
        "{e}"
    );
    assert_eq!(fx.snapshot(&addresses), before);
}
