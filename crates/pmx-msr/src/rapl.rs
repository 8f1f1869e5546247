//! RAPL energy: package energy counters in joules, per package.
//!
//! The unit register (Intel `MSR_RAPL_POWER_UNIT` 0x606, AMD
//! `RAPL_PWR_UNIT` 0xC001_0299) gives the energy status unit in bits 12:8:
//! one count is 1/2^ESU joule (Intel client parts: ESU 14, 61 µJ; AMD Zen:
//! ESU 16, 15.3 µJ). The energy register (Intel `MSR_PKG_ENERGY_STATUS`
//! 0x611, AMD `PKG_ENERGY_STAT` 0xC001_029B) is a 32-bit counter of those
//! units that wraps — at a few hundred watts within minutes — so deltas are
//! taken modulo 2^32 and must be read more often than one wrap.
//!
//! Both registers are package-scope: [`EnergyMeter`] reads them once per
//! package, from one CPU of it ([`crate::scope`]).

use crate::device::MsrDevice;
use crate::error::MsrError;
use crate::scope::{domains, Domain};
use crate::Scope;
use pmx_model::encoding::Arch;
use pmx_model::topology::Topology;
use serde::Serialize;
use std::time::Duration;

/// The RAPL unit and package-energy registers of a vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RaplRegisters {
    /// The unit register.
    pub unit: u32,
    /// The package energy-status register.
    pub package_energy: u32,
}

impl RaplRegisters {
    /// Intel 0x606/0x611, AMD 0xC001_0299/0xC001_029B.
    pub fn of(arch: Arch) -> RaplRegisters {
        match arch {
            Arch::Intel => RaplRegisters {
                unit: 0x606,
                package_energy: 0x611,
            },
            Arch::Amd => RaplRegisters {
                unit: 0xC001_0299,
                package_energy: 0xC001_029B,
            },
        }
    }
}

/// The decoded unit register.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RaplUnits {
    /// The raw register.
    pub raw: u64,
    /// Watts per power unit (1/2^PU, bits 3:0).
    pub power_watts: f64,
    /// Joules per energy unit (1/2^ESU, bits 12:8).
    pub energy_joules: f64,
    /// Seconds per time unit (1/2^TU, bits 19:16).
    pub time_seconds: f64,
}

impl RaplUnits {
    /// Decode a unit register value.
    pub fn decode(raw: u64) -> RaplUnits {
        let pu = (raw & 0xf) as i32;
        let esu = ((raw >> 8) & 0x1f) as i32;
        let tu = ((raw >> 16) & 0xf) as i32;
        RaplUnits {
            raw,
            power_watts: 0.5f64.powi(pu),
            energy_joules: 0.5f64.powi(esu),
            time_seconds: 0.5f64.powi(tu),
        }
    }

    /// Joules in `counts` energy units.
    pub fn joules(&self, counts: u64) -> f64 {
        counts as f64 * self.energy_joules
    }
}

/// Energy units consumed between two reads of a 32-bit energy register.
pub fn energy_delta(previous: u64, now: u64) -> u64 {
    (now as u32).wrapping_sub(previous as u32) as u64
}

/// Average power over `interval`.
pub fn watts(joules: f64, interval: Duration) -> f64 {
    let s = interval.as_secs_f64();
    if s > 0.0 {
        joules / s
    } else {
        0.0
    }
}

/// Package energy since the previous sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergySample {
    /// The package (with the CPU read and the selected CPUs in it).
    pub domain: Domain,
    /// The register's raw value.
    pub raw: u64,
    /// Joules since the previous sample.
    pub joules: f64,
    /// Joules since the meter started.
    pub total_joules: f64,
}

/// Reads package energy once per package.
#[derive(Debug, Clone)]
pub struct EnergyMeter {
    registers: RaplRegisters,
    domains: Vec<Domain>,
    units: Vec<RaplUnits>,
    last: Vec<u64>,
    totals: Vec<f64>,
}

impl EnergyMeter {
    /// Read the units and the first energy values for the packages of
    /// `cpus`. The device must have the domains' CPUs open.
    pub fn start(
        device: &MsrDevice,
        arch: Arch,
        cpus: &[u32],
        topology: &Topology,
    ) -> Result<EnergyMeter, MsrError> {
        let registers = RaplRegisters::of(arch);
        let domains = domains(Scope::Package, cpus, topology);
        let mut units = Vec::with_capacity(domains.len());
        let mut last = Vec::with_capacity(domains.len());
        for d in &domains {
            units.push(RaplUnits::decode(device.read(d.cpu, registers.unit)?));
            last.push(device.read(d.cpu, registers.package_energy)? & 0xffff_ffff);
        }
        let totals = vec![0.0; domains.len()];
        Ok(EnergyMeter {
            registers,
            domains,
            units,
            last,
            totals,
        })
    }

    /// The packages measured, and the CPU each is read from.
    pub fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// The units of each package.
    pub fn units(&self) -> &[RaplUnits] {
        &self.units
    }

    /// Joules per package since the previous sample (32-bit wrap handled).
    pub fn sample(&mut self, device: &MsrDevice) -> Result<Vec<EnergySample>, MsrError> {
        let mut out = Vec::with_capacity(self.domains.len());
        for (i, d) in self.domains.iter().enumerate() {
            let raw = device.read(d.cpu, self.registers.package_energy)? & 0xffff_ffff;
            let joules = self.units[i].joules(energy_delta(self.last[i], raw));
            self.last[i] = raw;
            self.totals[i] += joules;
            out.push(EnergySample {
                domain: d.clone(),
                raw,
                joules,
                total_joules: self.totals[i],
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_wrap() {
        // A typical Intel client value: PU 3, ESU 14, TU 10.
        let u = RaplUnits::decode(0x000A_0E03);
        assert_eq!(u.power_watts, 0.125);
        assert_eq!(u.energy_joules, 1.0 / 16384.0);
        assert_eq!(u.time_seconds, 1.0 / 1024.0);
        assert_eq!(u.joules(16384), 1.0);
        assert_eq!(energy_delta(0xffff_fff0, 0x10), 0x20);
        assert_eq!(energy_delta(5, 5), 0);
        assert_eq!(watts(10.0, Duration::from_millis(500)), 20.0);
        assert_eq!(watts(10.0, Duration::ZERO), 0.0);
    }
}
