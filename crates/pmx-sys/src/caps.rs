//! The PMU as CPUID describes it.
//!
//! [`PmuCaps::decode`] reads a handful of CPUID leaves and says who made the
//! CPU, what it is, whether it runs under a hypervisor, and what performance
//! counters the CPU (or the hypervisor's idea of it) advertises:
//!
//! - Intel: leaf 0xA, the *architectural performance monitoring* leaf —
//!   version, number and width of the general-purpose and fixed counters,
//!   and which architectural events exist ([`IntelArchPerfmon`]).
//! - AMD and Hygon: the counter-extension bits of leaf 0x8000_0001 ECX and,
//!   where present, leaf 0x8000_0022 (PerfMonV2) ([`AmdPerfmon`]). CPUs
//!   without either have the four legacy counters `PERF_CTL0..3`.
//!
//! A hypervisor that does not virtualize the PMU says so here: Intel guests
//! see leaf 0xA version 0, AMD guests of a Zen or Bulldozer-family CPU see the
//! core counter extension cleared although every such CPU has it.

use crate::cpuid::CpuidSource;
use pmx_model::cpu::{CpuId, Microarch, Vendor};
use serde::Serialize;

/// Leaf 1 ECX bit 31: the CPU runs under a hypervisor.
pub const HYPERVISOR_BIT: u32 = 1 << 31;

/// What CPUID says about the CPU and its performance counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuCaps {
    /// Vendor from leaf 0.
    pub vendor: Vendor,
    /// Vendor, display family, model and stepping from leaves 0 and 1.
    pub cpu: CpuId,
    /// perf's key for this CPU (`AuthenticAMD-25-11-1`), what `--cpu` takes.
    pub key: String,
    /// The microarchitecture, when pmx's tables know it.
    pub microarch: Option<Microarch>,
    /// The brand string of leaves 0x8000_0002..4, trimmed.
    pub brand: Option<String>,
    /// Highest basic leaf (leaf 0 EAX).
    pub max_leaf: u32,
    /// Highest extended leaf (leaf 0x8000_0000 EAX), 0 when absent.
    pub max_ext_leaf: u32,
    /// The hypervisor, when leaf 1 ECX bit 31 is set.
    pub hypervisor: Option<Hypervisor>,
    /// Intel hybrid part (leaf 7 EDX bit 15): the cores differ in their PMUs.
    pub hybrid: bool,
    /// Intel leaf 0xA, when the vendor is Intel and the leaf exists.
    pub intel: Option<IntelArchPerfmon>,
    /// AMD/Hygon counter features, when the vendor is AMD or Hygon.
    pub amd: Option<AmdPerfmon>,
    /// The core counters CPUID describes; `None` when it describes none.
    pub counters: Option<CoreCounters>,
    /// Why [`Self::counters`] is `None`, in plain words.
    pub no_counters_reason: Option<String>,
}

/// The hypervisor CPUID names in leaf 0x4000_0000.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hypervisor {
    /// The 12-byte signature, NULs and padding trimmed (`KVMKVMKVM`).
    pub signature: String,
    /// A readable name (`KVM`, `Hyper-V`, `VMware`, …), or the signature.
    pub name: String,
    /// Highest hypervisor leaf (leaf 0x4000_0000 EAX).
    pub max_leaf: u32,
}

/// The per-logical-CPU counters as CPUID describes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CoreCounters {
    /// General-purpose (programmable) counters per logical CPU.
    pub general: u32,
    /// Their width in bits.
    pub general_width: u32,
    /// Fixed-function counters (Intel; 0 on AMD).
    pub fixed: u32,
    /// Their width in bits (0 when there are none).
    pub fixed_width: u32,
    /// Where the numbers come from, e.g. `CPUID 0xA` or `PerfCtrExtCore`.
    pub source: &'static str,
}

/// The CPU's identity from leaves 0 and 1 alone (the cheap part of
/// [`PmuCaps::decode`]); `None` without CPUID.
pub fn cpu_id(source: &dyn CpuidSource) -> Option<CpuId> {
    identify(source).map(|(cpu, _, _)| cpu)
}

/// Vendor and signature, the highest basic leaf, and leaf 1's registers.
fn identify(source: &dyn CpuidSource) -> Option<(CpuId, u32, [u32; 4])> {
    if !source.available() {
        return None;
    }
    let [max_leaf, b, c, d] = source.cpuid(0, 0);
    let vendor = Vendor::from_cpuid_str(&regs_to_string(&[b, d, c]));
    let leaf1 = if max_leaf >= 1 {
        source.cpuid(1, 0)
    } else {
        [0; 4]
    };
    Some((CpuId::from_signature(vendor, leaf1[0]), max_leaf, leaf1))
}

impl PmuCaps {
    /// Decode CPUID from `source`; `None` when the source has no CPUID (the
    /// machine is not x86).
    pub fn decode(source: &dyn CpuidSource) -> Option<PmuCaps> {
        let (cpu, max_leaf, leaf1) = identify(source)?;
        let vendor = cpu.vendor.clone();
        let max_ext_leaf = match source.cpuid(0x8000_0000, 0)[0] {
            m if m & 0xFFFF_0000 == 0x8000_0000 => m,
            _ => 0,
        };
        let brand = (max_ext_leaf >= 0x8000_0004)
            .then(|| {
                let mut regs = Vec::with_capacity(12);
                for leaf in 0x8000_0002..=0x8000_0004 {
                    regs.extend(source.cpuid(leaf, 0));
                }
                regs_to_string(&regs)
            })
            .filter(|s| !s.is_empty());
        let hypervisor = (leaf1[2] & HYPERVISOR_BIT != 0).then(|| {
            let [max, b, c, d] = source.cpuid(0x4000_0000, 0);
            let signature = regs_to_string(&[b, c, d]);
            Hypervisor {
                name: hypervisor_name(&signature),
                signature,
                max_leaf: max,
            }
        });
        let hybrid =
            vendor == Vendor::Intel && max_leaf >= 7 && source.cpuid(7, 0)[3] & (1 << 15) != 0;

        let mut intel = None;
        let mut amd = None;
        let (counters, no_counters_reason) = match &vendor {
            Vendor::Intel => {
                if max_leaf >= 0xA {
                    let pm = IntelArchPerfmon::decode(source.cpuid(0xA, 0));
                    let result = pm.counters();
                    intel = Some(pm);
                    result
                } else {
                    (
                        None,
                        Some(format!(
                            "CPUID has no leaf 0xA (highest basic leaf is {max_leaf:#x})"
                        )),
                    )
                }
            }
            Vendor::Amd | Vendor::Hygon => {
                let ext1 = if max_ext_leaf >= 0x8000_0001 {
                    source.cpuid(0x8000_0001, 0)
                } else {
                    [0; 4]
                };
                let ext22 = (max_ext_leaf >= 0x8000_0022).then(|| source.cpuid(0x8000_0022, 0));
                let mut pm = AmdPerfmon::decode(ext1[2], ext22);
                if pm.ibs && max_ext_leaf >= 0x8000_001B {
                    // Bit 0 (IBSFFV) says the flags are valid.
                    let eax = source.cpuid(0x8000_001B, 0)[0];
                    pm.ibs_features = (eax & 1 != 0).then_some(IbsFeatures { eax });
                }
                let result = pm.counters(cpu.family);
                amd = Some(pm);
                result
            }
            Vendor::Other(name) => (
                None,
                Some(format!("pmx does not decode the PMU of {name:?} CPUs")),
            ),
        };
        Some(PmuCaps {
            key: cpu.to_string(),
            microarch: cpu.microarch(),
            vendor,
            cpu,
            brand,
            max_leaf,
            max_ext_leaf,
            hypervisor,
            hybrid,
            intel,
            amd,
            counters,
            no_counters_reason,
        })
    }
}

/// Bytes of registers in order, little-endian, up to the first NUL, trimmed.
fn regs_to_string(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

fn hypervisor_name(signature: &str) -> String {
    match signature {
        "KVMKVMKVM" => "KVM",
        "Linux KVM Hv" => "KVM (Hyper-V interface)",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "bhyve bhyve" => "bhyve",
        "lrpepyh  vr" | "prl hyperv" => "Parallels",
        "ACRNACRNACRN" => "ACRN",
        "VBoxVBoxVBox" => "VirtualBox",
        "" => "unknown (no signature)",
        other => other,
    }
    .to_string()
}

/// An architectural performance event (Intel SDM vol. 3, "Pre-defined
/// Architectural Performance Events"); CPUID 0xA EBX bit *n* clear means
/// event *n* exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchEvent {
    /// UnHalted Core Cycles, 0x3C/0x00.
    CoreCycles,
    /// Instructions Retired, 0xC0/0x00.
    InstructionsRetired,
    /// UnHalted Reference Cycles, 0x3C/0x01.
    ReferenceCycles,
    /// LLC Reference, 0x2E/0x4F.
    LlcReferences,
    /// LLC Misses, 0x2E/0x41.
    LlcMisses,
    /// Branch Instruction Retired, 0xC4/0x00.
    BranchInstructions,
    /// Branch Misses Retired, 0xC5/0x00.
    BranchMisses,
    /// Topdown Slots, 0xA4/0x01.
    TopdownSlots,
    /// Topdown Backend Bound, 0xA4/0x02.
    TopdownBackendBound,
    /// Topdown Bad Speculation, 0x73/0x00.
    TopdownBadSpeculation,
    /// Topdown Frontend Bound, 0x9C/0x01.
    TopdownFrontendBound,
    /// Topdown Retiring, 0xC2/0x02.
    TopdownRetiring,
    /// LBR Inserts, 0xE4/0x01.
    LbrInserts,
}

impl ArchEvent {
    /// All architectural events, in CPUID 0xA EBX bit order.
    pub const ALL: [ArchEvent; 13] = [
        ArchEvent::CoreCycles,
        ArchEvent::InstructionsRetired,
        ArchEvent::ReferenceCycles,
        ArchEvent::LlcReferences,
        ArchEvent::LlcMisses,
        ArchEvent::BranchInstructions,
        ArchEvent::BranchMisses,
        ArchEvent::TopdownSlots,
        ArchEvent::TopdownBackendBound,
        ArchEvent::TopdownBadSpeculation,
        ArchEvent::TopdownFrontendBound,
        ArchEvent::TopdownRetiring,
        ArchEvent::LbrInserts,
    ];

    /// The EBX bit that reports this event as unavailable.
    pub fn bit(self) -> u32 {
        ArchEvent::ALL.iter().position(|&e| e == self).unwrap_or(0) as u32
    }

    /// The SDM's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            ArchEvent::CoreCycles => "UnHalted Core Cycles",
            ArchEvent::InstructionsRetired => "Instructions Retired",
            ArchEvent::ReferenceCycles => "UnHalted Reference Cycles",
            ArchEvent::LlcReferences => "LLC References",
            ArchEvent::LlcMisses => "LLC Misses",
            ArchEvent::BranchInstructions => "Branch Instructions Retired",
            ArchEvent::BranchMisses => "Branch Misses Retired",
            ArchEvent::TopdownSlots => "Topdown Slots",
            ArchEvent::TopdownBackendBound => "Topdown Backend Bound",
            ArchEvent::TopdownBadSpeculation => "Topdown Bad Speculation",
            ArchEvent::TopdownFrontendBound => "Topdown Frontend Bound",
            ArchEvent::TopdownRetiring => "Topdown Retiring",
            ArchEvent::LbrInserts => "LBR Inserts",
        }
    }

    /// `(event select, unit mask)` of the event.
    pub fn encoding(self) -> (u8, u8) {
        match self {
            ArchEvent::CoreCycles => (0x3C, 0x00),
            ArchEvent::InstructionsRetired => (0xC0, 0x00),
            ArchEvent::ReferenceCycles => (0x3C, 0x01),
            ArchEvent::LlcReferences => (0x2E, 0x4F),
            ArchEvent::LlcMisses => (0x2E, 0x41),
            ArchEvent::BranchInstructions => (0xC4, 0x00),
            ArchEvent::BranchMisses => (0xC5, 0x00),
            ArchEvent::TopdownSlots => (0xA4, 0x01),
            ArchEvent::TopdownBackendBound => (0xA4, 0x02),
            ArchEvent::TopdownBadSpeculation => (0x73, 0x00),
            ArchEvent::TopdownFrontendBound => (0x9C, 0x01),
            ArchEvent::TopdownRetiring => (0xC2, 0x02),
            ArchEvent::LbrInserts => (0xE4, 0x01),
        }
    }
}

/// Whether one architectural event exists on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchEventSupport {
    /// The event.
    pub event: ArchEvent,
    /// True when the EBX bit vector covers the event and its bit is clear.
    pub available: bool,
}

/// Intel CPUID leaf 0xA: architectural performance monitoring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntelArchPerfmon {
    /// EAX 7:0, the architectural PMU version (0: none).
    pub version: u32,
    /// EAX 15:8, general-purpose counters per logical CPU.
    pub gp_counters: u32,
    /// EAX 23:16, their width in bits.
    pub gp_width: u32,
    /// EAX 31:24, how many bits of the EBX event vector are valid.
    pub events_length: u32,
    /// EBX: bit *n* set means architectural event *n* is *not* available.
    pub events_unavailable: u32,
    /// Each known architectural event and whether it is available.
    pub events: Vec<ArchEventSupport>,
    /// EDX 4:0, contiguous fixed counters (version 2 and later).
    pub fixed_counters: u32,
    /// EDX 12:5, their width in bits (version 2 and later).
    pub fixed_width: u32,
    /// ECX, a bit mask of supported fixed counters (version 5 and later).
    pub fixed_mask: Option<u32>,
    /// EDX bit 15: the AnyThread bit is deprecated (reserved) on this PMU.
    pub any_thread_deprecated: bool,
    /// The raw `[eax, ebx, ecx, edx]`.
    pub raw: [u32; 4],
}

impl IntelArchPerfmon {
    /// Decode leaf 0xA's registers.
    pub fn decode(regs: [u32; 4]) -> IntelArchPerfmon {
        let [eax, ebx, ecx, edx] = regs;
        let version = eax & 0xFF;
        let events_length = (eax >> 24) & 0xFF;
        let events = ArchEvent::ALL
            .iter()
            .map(|&event| {
                let bit = event.bit();
                ArchEventSupport {
                    event,
                    available: version > 0 && bit < events_length && ebx & (1 << bit) == 0,
                }
            })
            .collect();
        let (fixed_counters, fixed_width) = if version >= 2 {
            (edx & 0x1F, (edx >> 5) & 0xFF)
        } else {
            (0, 0)
        };
        IntelArchPerfmon {
            version,
            gp_counters: (eax >> 8) & 0xFF,
            gp_width: (eax >> 16) & 0xFF,
            events_length,
            events_unavailable: ebx,
            events,
            fixed_counters,
            fixed_width,
            fixed_mask: (version >= 5).then_some(ecx),
            any_thread_deprecated: version >= 2 && edx & (1 << 15) != 0,
            raw: regs,
        }
    }

    /// Whether fixed counter `index` exists: below the contiguous count, or
    /// set in the version-5 mask.
    pub fn fixed_counter_supported(&self, index: u32) -> bool {
        index < self.fixed_counters
            || (index < 32 && self.fixed_mask.is_some_and(|m| m & (1 << index) != 0))
    }

    /// The indices of the fixed counters that exist.
    pub fn fixed_counter_indices(&self) -> Vec<u32> {
        (0..32)
            .filter(|&i| self.fixed_counter_supported(i))
            .collect()
    }

    /// The architectural events that are available.
    pub fn available_events(&self) -> Vec<ArchEvent> {
        self.events
            .iter()
            .filter(|e| e.available)
            .map(|e| e.event)
            .collect()
    }

    fn counters(&self) -> (Option<CoreCounters>, Option<String>) {
        if self.version == 0 {
            return (
                None,
                Some("CPUID leaf 0xA reports architectural PMU version 0 (no PMU)".to_string()),
            );
        }
        if self.gp_counters == 0 && self.fixed_counter_indices().is_empty() {
            return (None, Some("CPUID leaf 0xA reports no counters".to_string()));
        }
        let fixed = self.fixed_counter_indices().len() as u32;
        (
            Some(CoreCounters {
                general: self.gp_counters,
                general_width: self.gp_width,
                fixed,
                fixed_width: if fixed > 0 { self.fixed_width } else { 0 },
                source: "CPUID 0xA",
            }),
            None,
        )
    }
}

/// The name of Intel fixed counter `index` (SDM: 0 instructions retired,
/// 1 unhalted core cycles, 2 unhalted reference cycles, 3 topdown slots).
pub fn fixed_counter_name(index: u32) -> &'static str {
    match index {
        0 => "instructions retired",
        1 => "core cycles",
        2 => "reference cycles",
        3 => "topdown slots",
        _ => "model-specific",
    }
}

/// AMD's performance-monitoring features (AMD and Hygon CPUs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmdPerfmon {
    /// 0x8000_0001 ECX bit 23 PerfCtrExtCore: six core counters at
    /// `0xC001_0200` (CTL) / `0xC001_0201` (CTR), stride 2.
    pub core_ext: bool,
    /// ECX bit 24 PerfCtrExtNB (family 15h/16h northbridge) / PerfCtrExtDF
    /// (Zen data fabric): four NB/DF counters at `0xC001_0240`.
    pub nb_ext: bool,
    /// ECX bit 28 PerfCtrExtLLC (Zen L3) / PerfCtrExtL2I (family 16h L2):
    /// counters at `0xC001_0230`.
    pub llc_ext: bool,
    /// ECX bit 10: instruction-based sampling.
    pub ibs: bool,
    /// Leaf 0x8000_0022, when the CPU has it.
    pub ext_perfmon: Option<AmdExtPerfmon>,
    /// Leaf 0x8000_001B EAX (IBS feature flags), when IBS is set and the
    /// leaf's IBSFFV bit says the flags are valid.
    pub ibs_features: Option<IbsFeatures>,
}

/// AMD CPUID leaf 0x8000_001B EAX: what instruction-based sampling can do
/// (AMD APM vol. 3, "CPUID Fn8000_001B_EAX Instruction-Based Sampling
/// Capabilities"; the bits as Linux names them in `IBS_CAPS_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IbsFeatures {
    /// The register as read.
    pub eax: u32,
}

/// The IBS feature bits pmx names: (bit, APM name, meaning).
pub const IBS_FEATURE_BITS: &[(u32, &str, &str)] = &[
    (0, "IBSFFV", "feature flags valid"),
    (1, "FetchSam", "fetch sampling"),
    (2, "OpSam", "op sampling"),
    (3, "RdWrOpCnt", "read/write of op counter"),
    (4, "OpCnt", "op counting mode (dispatched ops)"),
    (5, "BrnTrgt", "branch target address"),
    (6, "OpCntExt", "27-bit op counter"),
    (7, "RipInvalidChk", "invalid RIP indication"),
    (8, "OpBrnFuse", "fused branch micro-op indication"),
    (9, "IbsFetchCtlExtd", "fetch control extended MSR"),
    (10, "IbsOpData4", "op data 4 MSR"),
    (
        11,
        "IbsL3MissFiltering",
        "L3-miss filtering and Zen 4 extensions",
    ),
    (12, "IbsOpLdLat", "load-latency filtering"),
    (19, "IbsOpDtlbPgSize", "DTLB page size"),
];

impl IbsFeatures {
    /// The APM names of the bits set, in bit order (bits pmx does not
    /// name as `bit N`).
    pub fn names(&self) -> Vec<String> {
        (0..32)
            .filter(|b| self.eax & (1 << b) != 0)
            .map(|b| {
                IBS_FEATURE_BITS
                    .iter()
                    .find(|(bit, _, _)| *bit == b)
                    .map_or_else(|| format!("bit {b}"), |(_, name, _)| name.to_string())
            })
            .collect()
    }

    /// Fetch sampling and op sampling (bits 1 and 2).
    pub fn fetch_and_op(&self) -> (bool, bool) {
        (self.eax & 2 != 0, self.eax & 4 != 0)
    }
}

/// AMD CPUID leaf 0x8000_0022: extended performance monitoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AmdExtPerfmon {
    /// EAX bit 0 PerfMonV2: global control/status MSRs.
    pub perfmon_v2: bool,
    /// EAX bit 1 LbrStack.
    pub lbr_stack: bool,
    /// EAX bit 2 LbrAndPmcFreeze.
    pub lbr_pmc_freeze: bool,
    /// EBX 3:0 NumPerfCtrCore.
    pub core_counters: u32,
    /// EBX 9:4 LbrV2StackSz.
    pub lbr_v2_stack_size: u32,
    /// EBX 15:10 NumPerfCtrNB (data fabric counters).
    pub nb_counters: u32,
    /// EBX 21:16 NumPerfCtrUmc (memory controller counters).
    pub umc_counters: u32,
}

/// Width of every AMD core counter since K8.
pub const AMD_COUNTER_WIDTH: u32 = 48;
/// Core counters on AMD CPUs without the core counter extension.
pub const AMD_LEGACY_COUNTERS: u32 = 4;
/// Core counters with PerfCtrExtCore.
pub const AMD_EXT_CORE_COUNTERS: u32 = 6;

impl AmdPerfmon {
    /// Decode from leaf 0x8000_0001 ECX and, when present, the registers of
    /// leaf 0x8000_0022.
    pub fn decode(ext1_ecx: u32, ext22: Option<[u32; 4]>) -> AmdPerfmon {
        AmdPerfmon {
            core_ext: ext1_ecx & (1 << 23) != 0,
            nb_ext: ext1_ecx & (1 << 24) != 0,
            llc_ext: ext1_ecx & (1 << 28) != 0,
            ibs: ext1_ecx & (1 << 10) != 0,
            ext_perfmon: ext22.map(|[eax, ebx, _, _]| AmdExtPerfmon {
                perfmon_v2: eax & 1 != 0,
                lbr_stack: eax & 2 != 0,
                lbr_pmc_freeze: eax & 4 != 0,
                core_counters: ebx & 0xF,
                lbr_v2_stack_size: (ebx >> 4) & 0x3F,
                nb_counters: (ebx >> 10) & 0x3F,
                umc_counters: (ebx >> 16) & 0x3F,
            }),
            ibs_features: None,
        }
    }

    /// Whether the CPU has PerfMonV2 (global control and status MSRs).
    pub fn perfmon_v2(&self) -> bool {
        self.ext_perfmon.is_some_and(|e| e.perfmon_v2)
    }

    /// The core counters this implies for a CPU of display family `family`.
    ///
    /// Every family 15h CPU and every Zen (family 17h and later) implements
    /// PerfCtrExtCore, so on those families a clear bit means the CPUID seen
    /// here hides it — what a hypervisor that does not virtualize the PMU
    /// does — and no counters are reported.
    fn counters(&self, family: u32) -> (Option<CoreCounters>, Option<String>) {
        let counters = |general, source| CoreCounters {
            general,
            general_width: AMD_COUNTER_WIDTH,
            fixed: 0,
            fixed_width: 0,
            source,
        };
        if let Some(ext) = self.ext_perfmon.filter(|e| e.perfmon_v2) {
            if ext.core_counters > 0 {
                return (
                    Some(counters(
                        ext.core_counters,
                        "CPUID 0x80000022 NumPerfCtrCore",
                    )),
                    None,
                );
            }
        }
        if self.core_ext {
            return (
                Some(counters(AMD_EXT_CORE_COUNTERS, "PerfCtrExtCore")),
                None,
            );
        }
        if family == 0x15 || family >= 0x17 {
            return (
                None,
                Some(format!(
                    "CPUID clears PerfCtrExtCore (0x80000001 ECX bit 23), which every family {family:#x} CPU sets: the PMU is hidden"
                )),
            );
        }
        (
            Some(counters(AMD_LEGACY_COUNTERS, "legacy PERF_CTL0-3")),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::RecordedCpuid;

    fn vendor_regs(vendor: &str) -> [u32; 3] {
        let b = vendor.as_bytes();
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        // EBX, EDX, ECX order.
        [word(0), word(8), word(4)]
    }

    fn machine(vendor: &str, max_leaf: u32, eax1: u32, ecx1: u32) -> RecordedCpuid {
        let [b, c, d] = vendor_regs(vendor);
        let mut rec = RecordedCpuid::new();
        rec.insert(0, 0, [max_leaf, b, c, d]);
        rec.insert(1, 0, [eax1, 0, ecx1, 0]);
        rec
    }

    #[test]
    fn intel_leaf_0xa_v4() {
        let pm = IntelArchPerfmon::decode([0x0730_0404, 0, 0, 0x603]);
        assert_eq!((pm.version, pm.gp_counters, pm.gp_width), (4, 4, 48));
        assert_eq!((pm.fixed_counters, pm.fixed_width), (3, 48));
        assert_eq!(pm.events_length, 7);
        assert_eq!(pm.available_events().len(), 7);
        assert!(!pm.events[ArchEvent::TopdownSlots.bit() as usize].available);
        assert_eq!(pm.fixed_mask, None);
        assert_eq!(pm.fixed_counter_indices(), vec![0, 1, 2]);
    }

    #[test]
    fn intel_unavailable_events_and_fixed_mask() {
        // v5, 8 GP x 48, 8-bit vector with LLC misses (bit 4) and slots (7)
        // unavailable, 4 contiguous fixed counters plus counter 5 in ECX.
        let pm = IntelArchPerfmon::decode([0x0830_0805, 0x90, 0b10_0000, 0x8000 | (48 << 5) | 4]);
        let available = pm.available_events();
        assert!(!available.contains(&ArchEvent::LlcMisses));
        assert!(!available.contains(&ArchEvent::TopdownSlots));
        assert!(available.contains(&ArchEvent::BranchMisses));
        assert!(pm.any_thread_deprecated);
        assert_eq!(pm.fixed_counter_indices(), vec![0, 1, 2, 3, 5]);
        assert_eq!(pm.counters().0.unwrap().fixed, 5);
        assert_eq!(ArchEvent::LlcMisses.encoding(), (0x2E, 0x41));
        assert_eq!(ArchEvent::TopdownSlots.bit(), 7);
    }

    #[test]
    fn intel_version_0_means_no_pmu() {
        let mut rec = machine("GenuineIntel", 0xD, 0x0005_0654, HYPERVISOR_BIT);
        rec.insert(0x4000_0000, 0, [0x4000_0001, 0x4b4d564b, 0x564b4d56, 0x4d]);
        let caps = PmuCaps::decode(&rec).unwrap();
        assert_eq!(caps.key, "GenuineIntel-6-55-4");
        assert_eq!(caps.hypervisor.as_ref().unwrap().name, "KVM");
        assert_eq!(caps.intel.as_ref().unwrap().version, 0);
        assert_eq!(caps.counters, None);
        assert!(caps.no_counters_reason.unwrap().contains("version 0"));
        assert!(caps.intel.unwrap().available_events().is_empty());
    }

    #[test]
    fn amd_counter_sources() {
        let legacy = AmdPerfmon::decode(0, None);
        assert_eq!(legacy.counters(0x10).0.unwrap().general, 4);
        assert_eq!(legacy.counters(0x14).0.unwrap().general_width, 48);
        assert!(
            legacy.counters(0x19).0.is_none(),
            "Zen without PerfCtrExtCore is hidden"
        );
        assert!(legacy.counters(0x15).0.is_none());
        let ext = AmdPerfmon::decode((1 << 23) | (1 << 24) | (1 << 28), None);
        assert!(ext.core_ext && ext.nb_ext && ext.llc_ext && !ext.ibs);
        assert_eq!(ext.counters(0x17).0.unwrap().general, 6);
        // Zen 4: PerfMonV2, LBR stack of 16, 6 core, 16 DF, 4 UMC counters.
        let v2 = AmdPerfmon::decode(
            1 << 23,
            Some([0b111, 6 | (16 << 4) | (16 << 10) | (4 << 16), 0, 0]),
        );
        let e = v2.ext_perfmon.unwrap();
        assert!(e.perfmon_v2 && e.lbr_stack && e.lbr_pmc_freeze && v2.perfmon_v2());
        assert_eq!(
            (
                e.core_counters,
                e.lbr_v2_stack_size,
                e.nb_counters,
                e.umc_counters
            ),
            (6, 16, 16, 4)
        );
        let c = v2.counters(0x19).0.unwrap();
        assert_eq!(
            (c.general, c.source),
            (6, "CPUID 0x80000022 NumPerfCtrCore")
        );
    }

    #[test]
    fn brand_vendor_and_hypervisor_strings() {
        let mut rec = machine("AuthenticAMD", 0x10, 0x00A1_0F11, HYPERVISOR_BIT);
        rec.insert(0x8000_0000, 0, [0x8000_0004, 0, 0, 0]);
        let brand = b"AMD EPYC 9454 48-Core Processor                 ";
        let mut words = brand
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        for leaf in 0x8000_0002..=0x8000_0004 {
            let regs = [(); 4].map(|_| words.next().unwrap());
            rec.insert(leaf, 0, regs);
        }
        let caps = PmuCaps::decode(&rec).unwrap();
        assert_eq!(caps.vendor, Vendor::Amd);
        assert_eq!(
            caps.brand.as_deref(),
            Some("AMD EPYC 9454 48-Core Processor")
        );
        assert_eq!(caps.microarch.unwrap().code, "zen4");
        let hv = caps.hypervisor.unwrap();
        assert_eq!(
            (hv.signature.as_str(), hv.name.as_str()),
            ("", "unknown (no signature)")
        );
        assert!(caps.counters.is_none());
        assert!(caps.amd.unwrap().ext_perfmon.is_none());
    }

    #[test]
    fn no_cpuid_no_caps() {
        struct NoCpuid;
        impl CpuidSource for NoCpuid {
            fn cpuid(&self, _: u32, _: u32) -> [u32; 4] {
                [0; 4]
            }
            fn available(&self) -> bool {
                false
            }
        }
        assert_eq!(PmuCaps::decode(&NoCpuid), None);
        // An empty recording decodes to an unknown vendor with nothing else.
        let caps = PmuCaps::decode(&RecordedCpuid::new()).unwrap();
        assert_eq!(caps.vendor, Vendor::Other(String::new()));
        assert!(caps.counters.is_none() && caps.brand.is_none() && caps.hypervisor.is_none());
    }
}
