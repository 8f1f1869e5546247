//! What this machine hides of its AMD PMU: the performance-monitoring
//! features its microarchitecture has but CPUID clears (what a hypervisor
//! that does not virtualize them does), and the features CPUID shows but
//! the kernel registered no PMU for.
//!
//! What every part has, from AMD's Processor Programming References (CPUID
//! chapter) and APM vol. 3 (CPUID Fn8000_0001_ECX, Fn8000_0022):
//!
//! - every Zen (family 17h and later): PerfCtrExtCore (ECX bit 23, six
//!   core counters), PerfCtrExtDF (bit 24, data-fabric counters, the
//!   kernel's `amd_df`), PerfCtrExtLLC (bit 28, L3 counters, `amd_l3`) and
//!   IBS (bit 10, `ibs_fetch`/`ibs_op`);
//! - Zen 4 and Zen 5: PerfMonV2 (leaf 0x8000_0022 EAX bit 0: global
//!   control and status, the counter counts in EBX).

use crate::caps::PmuCaps;
use crate::pmu::KernelPmu;
use serde::Serialize;

/// One feature and where it goes missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenFeature {
    /// The feature (`PerfCtrExtLLC (L3 counters)`).
    pub feature: String,
    /// Why it counts as hidden, in words.
    pub why: String,
}

/// A feature: its name, whether CPUID shows it, the kernel PMUs that
/// serve it (any one of them present counts).
struct Feature<'a> {
    name: &'a str,
    cpuid_bit: &'a str,
    shown: bool,
    pmus: &'a [&'a str],
}

/// The AMD features `caps` hides or the kernel does not serve, for a Zen
/// (family 17h and later); empty for other CPUs and when nothing is
/// missing.
pub fn amd_hidden(caps: &PmuCaps, pmus: &[KernelPmu]) -> Vec<HiddenFeature> {
    let Some(amd) = &caps.amd else {
        return Vec::new();
    };
    if caps.cpu.family < 0x17 {
        return Vec::new();
    }
    let zen = caps.microarch.as_ref().map_or_else(
        || format!("family {:#x}", caps.cpu.family),
        |m| m.name.to_string(),
    );
    let by = match &caps.hypervisor {
        Some(h) => format!("the hypervisor ({})", h.name),
        None => "CPUID".to_string(),
    };
    let has_pmu = |names: &[&str]| {
        pmus.iter().any(|p| {
            names
                .iter()
                .any(|n| p.name == *n || p.name.strip_prefix(n).is_some_and(|s| s.starts_with('_')))
        })
    };
    let mut features = vec![
        Feature {
            name: "PerfCtrExtCore (6 core counters)",
            cpuid_bit: "0x80000001 ECX bit 23",
            shown: amd.core_ext,
            pmus: &["cpu"],
        },
        Feature {
            name: "PerfCtrExtDF (data-fabric counters)",
            cpuid_bit: "0x80000001 ECX bit 24",
            shown: amd.nb_ext,
            pmus: &["amd_df"],
        },
        Feature {
            name: "PerfCtrExtLLC (L3 counters)",
            cpuid_bit: "0x80000001 ECX bit 28",
            shown: amd.llc_ext,
            pmus: &["amd_l3"],
        },
        Feature {
            name: "IBS (instruction-based sampling)",
            cpuid_bit: "0x80000001 ECX bit 10",
            shown: amd.ibs,
            pmus: &["ibs_op", "ibs_fetch"],
        },
    ];
    let v2_expected = caps
        .microarch
        .as_ref()
        .is_some_and(|m| matches!(m.code, "zen4" | "zen5"));
    if v2_expected {
        features.push(Feature {
            name: "PerfMonV2 (global control, UMC counters)",
            cpuid_bit: "0x80000022 EAX bit 0",
            shown: amd.perfmon_v2(),
            pmus: &[],
        });
    }
    let mut out = Vec::new();
    for f in features {
        if !f.shown {
            out.push(HiddenFeature {
                feature: f.name.to_string(),
                why: format!(
                    "every {zen} has it, but {by} clears it (CPUID {})",
                    f.cpuid_bit
                ),
            });
        } else if !f.pmus.is_empty() && !has_pmu(f.pmus) {
            out.push(HiddenFeature {
                feature: f.name.to_string(),
                why: format!(
                    "CPUID shows it, but the kernel registered no {} PMU (driver not loaded, or the kernel too old for this CPU)",
                    f.pmus.join("/")
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::RecordedCpuid;
    use crate::root::SysRoot;

    fn zen4() -> (PmuCaps, Vec<KernelPmu>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zen4-epyc");
        let cpuid = RecordedCpuid::from_file(&dir.join("cpuid.txt")).unwrap();
        let caps = PmuCaps::decode(&cpuid).unwrap();
        let pmus = crate::pmu::read_pmus(&SysRoot::new(dir.join("root")), &mut Vec::new());
        (caps, pmus)
    }

    #[test]
    fn a_kernel_without_the_l3_driver_is_named() {
        let (caps, mut pmus) = zen4();
        assert!(amd_hidden(&caps, &pmus).is_empty());
        pmus.retain(|p| p.name != "amd_l3");
        let h = amd_hidden(&caps, &pmus);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].feature, "PerfCtrExtLLC (L3 counters)");
        assert!(
            h[0].why
                .starts_with("CPUID shows it, but the kernel registered no amd_l3 PMU"),
            "{}",
            h[0].why
        );
        // IBS is served by either of its PMUs.
        pmus.retain(|p| p.name != "ibs_fetch");
        assert_eq!(amd_hidden(&caps, &pmus).len(), 1);
    }

    #[test]
    fn cleared_bits_are_hidden_by_cpuid_on_bare_metal() {
        let (mut caps, pmus) = zen4();
        if let Some(a) = caps.amd.as_mut() {
            a.llc_ext = false;
            a.ext_perfmon = None;
        }
        let h: Vec<String> = amd_hidden(&caps, &pmus)
            .into_iter()
            .map(|h| format!("{}: {}", h.feature, h.why))
            .collect();
        assert_eq!(
            h,
            [
                "PerfCtrExtLLC (L3 counters): every Zen 4 has it, but CPUID clears it (CPUID 0x80000001 ECX bit 28)",
                "PerfMonV2 (global control, UMC counters): every Zen 4 has it, but CPUID clears it (CPUID 0x80000022 EAX bit 0)",
            ]
        );
    }
}
