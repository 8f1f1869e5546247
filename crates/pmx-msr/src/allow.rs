//! The write allow-list: only the vendor's PMU control and counter
//! registers, and only their known writable bits.
//!
//! A write to any other MSR can change clocks, voltages, memory types or
//! security settings; a reserved bit set in a PMU register makes `wrmsr`
//! fault. [`check`] refuses both before anything reaches the device, and
//! says which register or which bits. `pmx msr write --unsafe` skips it.

use crate::catalogue::{arch_name, CounterClass, CounterWidths, Msr, Register, Role, Writable};
use pmx_model::encoding::Arch;
use serde::Serialize;

/// What the allow-list knows of the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WritePolicy {
    /// The CPU's vendor; `None` (unknown) refuses every vendor-specific
    /// register.
    pub vendor: Option<Arch>,
    /// Counter widths, for the writable bits of counters.
    pub widths: CounterWidths,
    /// General-purpose counters the CPU has, when known.
    pub general: Option<u32>,
    /// Fixed counters the CPU has, when known.
    pub fixed: Option<u32>,
}

impl WritePolicy {
    /// A policy for `vendor` with default widths and unknown counter counts.
    pub fn for_vendor(vendor: Option<Arch>) -> WritePolicy {
        WritePolicy {
            vendor,
            widths: CounterWidths::default(),
            general: None,
            fixed: None,
        }
    }
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not a PMU register pmx knows.
    #[error("MSR {address:#x} is not a PMU register pmx knows; writes are limited to the vendor's performance-monitoring control and counter registers")]
    NotPmu {
        /// The address.
        address: u32,
    },
    /// The other vendor's register, or the vendor is unknown.
    #[error("{name} is an {} register, and this CPU is {}", arch_name(*.register_vendor), .cpu_vendor.map(arch_name).unwrap_or("of unknown vendor"))]
    OtherVendor {
        /// The register.
        name: String,
        /// Its vendor.
        register_vendor: Arch,
        /// The CPU's, when known.
        cpu_vendor: Option<Arch>,
    },
    /// pmx does not write this register.
    #[error("{name} is not writable through pmx: {why}")]
    ReadOnly {
        /// The register.
        name: String,
        /// What it is.
        why: &'static str,
    },
    /// The CPU does not have this counter.
    #[error("{name} does not exist here: CPUID reports {available} {what} counter{}", if *.available == 1 { "" } else { "s" })]
    CounterAbsent {
        /// The register.
        name: String,
        /// How many exist.
        available: u32,
        /// `general-purpose` or `fixed`.
        what: &'static str,
    },
    /// The value sets bits that are not writable.
    #[error("{value:#x} sets bits {bits:#x} of {name} that are not writable ({})", fields.join(", "))]
    Bits {
        /// The register.
        name: String,
        /// The value.
        value: u64,
        /// The offending bits.
        bits: u64,
        /// The fields they fall in.
        fields: Vec<String>,
    },
}

/// Which counter family a register programs or is, for counting how many
/// the CPU has.
fn counter_family(msr: &Msr) -> Option<CounterClass> {
    match msr.def.template {
        "IA32_PMCx" | "IA32_A_PMCx" | "IA32_PERFEVTSELx" | "PERF_CTL_EXTx" | "PERF_CTR_EXTx" => {
            Some(CounterClass::General)
        }
        "IA32_FIXED_CTRx" => Some(CounterClass::Fixed),
        _ => None,
    }
}

/// May `value` be written to `register` under `policy`?
pub fn check(register: &Register, value: u64, policy: &WritePolicy) -> Result<(), Refusal> {
    let Some(msr) = register.msr else {
        return Err(Refusal::NotPmu {
            address: register.address,
        });
    };
    let name = msr.name();
    if let Some(rv) = msr.def.vendor {
        if policy.vendor != Some(rv) {
            return Err(Refusal::OtherVendor {
                name,
                register_vendor: rv,
                cpu_vendor: policy.vendor,
            });
        }
    }
    if msr.def.writable == Writable::No
        || matches!(
            msr.def.role,
            Role::Status | Role::Info | Role::Energy | Role::Clock
        )
    {
        return Err(Refusal::ReadOnly {
            name,
            why: msr.def.doc,
        });
    }
    match counter_family(&msr) {
        Some(CounterClass::General) => {
            if let Some(n) = policy.general.filter(|&n| msr.index >= n) {
                return Err(Refusal::CounterAbsent {
                    name,
                    available: n,
                    what: "general-purpose",
                });
            }
        }
        Some(CounterClass::Fixed) => {
            if let Some(n) = policy.fixed.filter(|&n| msr.index >= n) {
                return Err(Refusal::CounterAbsent {
                    name,
                    available: n,
                    what: "fixed",
                });
            }
        }
        _ => {}
    }
    let bad = value & !msr.writable_mask(&policy.widths);
    if bad != 0 {
        let mut fields = msr.fields_in(bad);
        if fields.is_empty() {
            fields.push(format!(
                "above the counter width of {} bits",
                64 - msr.writable_mask(&policy.widths).leading_zeros()
            ));
        }
        return Err(Refusal::Bits {
            name,
            value,
            bits: bad,
            fields,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::resolve;

    fn intel() -> WritePolicy {
        WritePolicy {
            general: Some(4),
            fixed: Some(3),
            ..WritePolicy::for_vendor(Some(Arch::Intel))
        }
    }

    fn try_write(name: &str, value: u64, p: &WritePolicy) -> Result<(), Refusal> {
        check(&resolve(name, p.vendor).unwrap(), value, p)
    }

    #[test]
    fn pmu_registers_with_writable_bits_pass() {
        let p = intel();
        try_write("IA32_PERFEVTSEL0", 0x41412e, &p).unwrap();
        try_write("0x38f", 0x1_0000_0001, &p).unwrap();
        try_write("0x38d", 0x3, &p).unwrap();
        try_write("IA32_PMC3", (1 << 48) - 1, &p).unwrap();
        try_write("MSR_UNC_PERF_GLOBAL_CTRL", 0x2000_001f, &p).unwrap();
        // The offcore-response filters: bits 37:0.
        try_write("MSR_OFFCORE_RSP_0", 0x3f_fc02_0001, &p).unwrap();
        try_write("0x1a7", 0x3f_ffff_ffff, &p).unwrap();
    }

    #[test]
    fn offcore_filters_and_pebs_qualifiers() {
        let p = intel();
        let e = try_write("MSR_OFFCORE_RSP_1", 1 << 38, &p).unwrap_err();
        assert!(e.to_string().contains("reserved bits 63:38"), "{e}");
        for name in ["MSR_PEBS_LD_LAT_THRESHOLD", "0x3f7"] {
            let e = try_write(name, 3, &p).unwrap_err();
            assert!(matches!(e, Refusal::ReadOnly { .. }), "{name}: {e}");
            assert!(e.to_string().contains("PEBS"), "{e}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        let p = intel();
        // Not a PMU register (IA32_MISC_ENABLE).
        assert!(matches!(
            try_write("0x1a0", 0, &p),
            Err(Refusal::NotPmu { address: 0x1a0 })
        ));
        assert!(matches!(
            try_write("IA32_PERF_GLOBAL_STATUS", 0, &p),
            Err(Refusal::ReadOnly { .. })
        ));
        assert!(matches!(
            try_write("MSR_PKG_ENERGY_STATUS", 0, &p),
            Err(Refusal::ReadOnly { .. })
        ));
        assert!(matches!(
            try_write("IA32_PEBS_ENABLE", 1, &p),
            Err(Refusal::ReadOnly { .. })
        ));
        assert!(matches!(
            try_write("IA32_PERFEVTSEL5", 0, &p),
            Err(Refusal::CounterAbsent { available: 4, .. })
        ));
        let e = try_write("IA32_PERFEVTSEL0", 1 << 50, &p).unwrap_err();
        assert!(e.to_string().contains("reserved bits 63:48"), "{e}");
        let e = try_write("IA32_PMC0", 1 << 48, &p).unwrap_err();
        assert!(e.to_string().contains("48 bits"), "{e}");
        // An AMD register on an Intel CPU, by address: unknown there.
        assert!(matches!(
            try_write("0xc0010000", 0, &p),
            Err(Refusal::NotPmu { .. })
        ));
        // Unknown vendor: vendor-specific registers are refused.
        let unknown = WritePolicy::for_vendor(None);
        assert!(matches!(
            try_write("IA32_PERFEVTSEL0", 0, &unknown),
            Err(Refusal::OtherVendor { .. })
        ));
    }

    #[test]
    fn amd_registers() {
        let p = WritePolicy {
            general: Some(6),
            ..WritePolicy::for_vendor(Some(Arch::Amd))
        };
        try_write("PERF_CTL0", 0x4_0043_f7e1, &p).unwrap();
        try_write("PERF_CTL_EXT5", 0x43_0076, &p).unwrap();
        try_write("PERF_CNTR_GLOBAL_CTL", 0x3f, &p).unwrap();
        assert!(try_write("PERF_CNTR_GLOBAL_CTL", 0x40, &p).is_err());
        assert!(try_write("PKG_ENERGY_STAT", 0, &p).is_err());
    }
}
