//! Test fixtures: a directory of sparse `cpuN/msr` files and a simulated
//! PMU that advances only the counters whose enable bits are set.

#![allow(dead_code)]

use pmx_model::encoding::{Arch, Encoded, PerfAttr};
use pmx_model::topology::{LogicalCpu, Topology};
use pmx_msr::{generic_hardware_event, MsrEvent, MsrRoot};
use pmx_testkit::msr;
use std::path::{Path, PathBuf};

/// `cpuN/msr` files under a temporary directory.
pub struct Fixture {
    _dir: Option<tempfile::TempDir>,
    pub path: PathBuf,
    pub cpus: Vec<u32>,
}

impl Fixture {
    /// `cpus` CPUs, every register 0.
    pub fn new(cpus: u32) -> Fixture {
        let dir = msr::msr_files(cpus);
        let path = dir.path().to_path_buf();
        Fixture {
            _dir: Some(dir),
            path,
            cpus: (0..cpus).collect(),
        }
    }

    /// The fixture another process made at `path`.
    pub fn existing(path: &Path, cpus: u32) -> Fixture {
        Fixture {
            _dir: None,
            path: path.to_path_buf(),
            cpus: (0..cpus).collect(),
        }
    }

    pub fn root(&self) -> MsrRoot {
        MsrRoot::new(&self.path)
    }

    pub fn get(&self, cpu: u32, address: u32) -> u64 {
        msr::get(&self.path, cpu, address)
    }

    pub fn set(&self, cpu: u32, address: u32, value: u64) {
        msr::set(&self.path, cpu, address, value);
    }

    /// The value of every listed register on every CPU.
    pub fn snapshot(&self, addresses: &[u32]) -> Vec<(u32, u32, u64)> {
        let mut out = Vec::new();
        for &cpu in &self.cpus {
            for &a in addresses {
                out.push((cpu, a, self.get(cpu, a)));
            }
        }
        out
    }
}

/// Every address of the catalogue.
pub fn all_catalogue_addresses() -> Vec<u32> {
    pmx_msr::catalogue::CATALOGUE
        .iter()
        .flat_map(|d| (0..d.count).map(move |i| d.address(i)))
        .collect()
}

/// A simulated PMU over a fixture.
pub struct SimPmu<'a> {
    pub fx: &'a Fixture,
    pub arch: Arch,
    pub general: u32,
    pub fixed: u32,
    pub width: u32,
    /// AMD: a global control register gates the counters.
    pub perfmon_v2: bool,
    /// Package of each CPU (for the uncore).
    pub packages: Vec<u32>,
}

/// A counter, for [`SimPmu::step`]'s amounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctr {
    General(u32),
    Fixed(u32),
    CBox(u32, u32),
}

impl<'a> SimPmu<'a> {
    pub fn intel(fx: &'a Fixture) -> SimPmu<'a> {
        SimPmu {
            fx,
            arch: Arch::Intel,
            general: 4,
            fixed: 3,
            width: 48,
            perfmon_v2: false,
            packages: fx.cpus.iter().map(|_| 0).collect(),
        }
    }

    pub fn amd(fx: &'a Fixture, perfmon_v2: bool) -> SimPmu<'a> {
        SimPmu {
            fx,
            arch: Arch::Amd,
            general: 6,
            fixed: 0,
            width: 48,
            perfmon_v2,
            packages: fx.cpus.iter().map(|_| 0).collect(),
        }
    }

    fn bump(&self, cpu: u32, address: u32, by: u64) {
        let mask = (1u64 << self.width) - 1;
        let v = self.fx.get(cpu, address);
        self.fx.set(cpu, address, v.wrapping_add(by) & mask);
    }

    /// Advance every enabled counter on every CPU by `amount(cpu, counter)`.
    pub fn step(&self, amount: impl Fn(u32, Ctr) -> u64) {
        for &cpu in &self.fx.cpus {
            match self.arch {
                Arch::Intel => {
                    let global = self.fx.get(cpu, 0x38f);
                    for i in 0..self.general {
                        let sel = self.fx.get(cpu, 0x186 + i);
                        if sel & (1 << 22) != 0 && global & (1 << i) != 0 {
                            self.bump(cpu, 0xc1 + i, amount(cpu, Ctr::General(i)));
                        }
                    }
                    let fixed = self.fx.get(cpu, 0x38d);
                    for i in 0..self.fixed {
                        if (fixed >> (4 * i)) & 0x3 != 0 && global & (1 << (32 + i)) != 0 {
                            self.bump(cpu, 0x309 + i, amount(cpu, Ctr::Fixed(i)));
                        }
                    }
                }
                Arch::Amd => {
                    let global = self.fx.get(cpu, 0xC000_0301);
                    for i in 0..self.general {
                        let ctl = self.fx.get(cpu, 0xC001_0200 + 2 * i);
                        let on =
                            ctl & (1 << 22) != 0 && (!self.perfmon_v2 || global & (1 << i) != 0);
                        if on {
                            self.bump(cpu, 0xC001_0201 + 2 * i, amount(cpu, Ctr::General(i)));
                        }
                    }
                }
            }
        }
        if self.arch == Arch::Intel {
            self.step_uncore(&amount);
        }
    }

    /// Client uncore: a package-scope register lives in the file of the
    /// package's first CPU (the one pmx must use); the other CPUs' files
    /// are left alone, so a read through them shows up as a wrong value.
    fn step_uncore(&self, amount: &impl Fn(u32, Ctr) -> u64) {
        let mut packages = self.packages.clone();
        packages.sort_unstable();
        packages.dedup();
        for p in packages {
            let Some(first) = self
                .fx
                .cpus
                .iter()
                .copied()
                .find(|&c| self.packages[c as usize] == p)
            else {
                continue;
            };
            if self.fx.get(first, 0xE01) & (1 << 29) == 0 {
                continue;
            }
            for cbox in 0..4 {
                for k in 0..2 {
                    let sel = self.fx.get(first, 0x700 + 0x10 * cbox + k);
                    if sel & (1 << 22) == 0 {
                        continue;
                    }
                    let ctr = 0x706 + 0x10 * cbox + k;
                    let v = (self.fx.get(first, ctr) + amount(first, Ctr::CBox(cbox, k)))
                        & ((1u64 << 44) - 1);
                    self.fx.set(first, ctr, v);
                }
            }
        }
    }
}

/// Two packages of two CPUs each (cpus 0,1 in package 0; 2,3 in 1).
pub fn two_packages() -> Topology {
    Topology::new(vec![
        LogicalCpu::new(0, 0, 0, 0),
        LogicalCpu::new(1, 0, 0, 1),
        LogicalCpu::new(2, 1, 0, 0),
        LogicalCpu::new(3, 1, 0, 1),
    ])
}

pub use pmx_testkit::events::encode;

pub fn generic(arch: Arch, config: u64) -> Encoded {
    let attr = PerfAttr {
        type_: Some(0),
        config,
        ..PerfAttr::default()
    };
    generic_hardware_event(arch, config, &attr).unwrap()
}

/// The worked example: LLC misses in user mode, and instructions.
pub fn worked_example() -> Vec<MsrEvent> {
    vec![
        MsrEvent::new(
            "cpu/event=0x2e,umask=0x41/u",
            encode("cpu/event=0x2e,umask=0x41/u", Arch::Intel),
        ),
        MsrEvent::new("instructions", generic(Arch::Intel, 1)),
    ]
}

/// Skylake's `LLC-loads` filter (the kernel's `skl_hw_cache_extra_regs`).
pub const LLC_LOADS_FILTER: u64 = 0x3f_c001_0001;

/// An `OFFCORE_RESPONSE_0` event with that filter (for `MSR_OFFCORE_RSP_0`).
pub fn offcore_event() -> MsrEvent {
    let spec = format!("cpu/event=0xb7,umask=0x1,offcore_rsp={LLC_LOADS_FILTER:#x}/");
    MsrEvent::new(spec.clone(), encode(&spec, Arch::Intel))
}

/// Values "someone" left in the registers before pmx: nothing that counts
/// on the counters pmx uses, but plenty of bits to put back.
pub fn dirty_intel(fx: &Fixture) {
    for &cpu in &fx.cpus {
        let c = cpu as u64;
        fx.set(cpu, 0xc1, 0x1234_5678 + c);
        fx.set(cpu, 0x309, 0xdead_beef + c);
        fx.set(cpu, 0x186, 0x0012_00c4); // OS|USR-less junk without EN
        fx.set(cpu, 0x38d, 0x300); // fixed counter 2 enabled elsewhere
        fx.set(cpu, 0x38f, 0x8 | (1 << 34)); // PMC3 and FIXED_CTR2 enabled
        fx.set(cpu, 0x189, 0x43_003c); // PMC3 counting cycles for someone
        fx.set(cpu, 0x1a6, 0x8_0004 + c); // someone's offcore filters
        fx.set(cpu, 0x1a7, 0x1_0008);
    }
}
