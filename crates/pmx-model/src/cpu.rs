//! CPU identity: who made the CPU, which family and model it is, and which
//! microarchitecture that means for its performance-monitoring unit.
//!
//! A [`CpuId`] is what perf calls the CPU's *key* and prints as
//! `vendor-family-model[-stepping]`: the CPUID vendor string, the display
//! family in decimal, the display model and the stepping in upper-case hex
//! (`GenuineIntel-6-55-4` is a Skylake-SP, `AuthenticAMD-25-11-1` a Zen 4
//! Genoa). The same key selects an event table in Intel's perfmon `mapfile.csv`
//! and in perf's `pmu-events`, and it is what `pmx --cpu` takes.
//!
//! [`CpuId::from_signature`] turns the raw CPUID leaf 1 EAX into display
//! family and model with the extended-family and extended-model rules each
//! vendor documents; [`CpuId::microarch`] names the microarchitecture from
//! built-in tables (Intel family 6 by model, Intel families 18 and 19, AMD and
//! Hygon by family and model range).
//!
//! Nothing here reads the machine; `pmx-sys` executes CPUID and hands the
//! values to this module.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The CPU vendor, as the 12-character CPUID leaf 0 vendor string names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// `HygonGenuine` (Hygon Dhyana, a licensed derivative of AMD Zen).
    Hygon,
    /// Any other vendor string, kept as read (e.g. `CentaurHauls`).
    Other(String),
}

impl Vendor {
    /// The CPUID vendor string for Intel.
    pub const INTEL_ID: &'static str = "GenuineIntel";
    /// The CPUID vendor string for AMD.
    pub const AMD_ID: &'static str = "AuthenticAMD";
    /// The CPUID vendor string for Hygon.
    pub const HYGON_ID: &'static str = "HygonGenuine";

    /// The vendor for a CPUID vendor string. Unknown strings become
    /// [`Vendor::Other`]; matching is exact, as CPUID is.
    pub fn from_cpuid_str(s: &str) -> Vendor {
        match s {
            Self::INTEL_ID => Vendor::Intel,
            Self::AMD_ID => Vendor::Amd,
            Self::HYGON_ID => Vendor::Hygon,
            other => Vendor::Other(other.to_string()),
        }
    }

    /// The CPUID vendor string (`GenuineIntel`, `AuthenticAMD`, …).
    pub fn cpuid_str(&self) -> &str {
        match self {
            Vendor::Intel => Self::INTEL_ID,
            Vendor::Amd => Self::AMD_ID,
            Vendor::Hygon => Self::HYGON_ID,
            Vendor::Other(s) => s,
        }
    }

    /// A short human name: `Intel`, `AMD`, `Hygon`, or the vendor string.
    pub fn name(&self) -> &str {
        match self {
            Vendor::Intel => "Intel",
            Vendor::Amd => "AMD",
            Vendor::Hygon => "Hygon",
            Vendor::Other(s) => s,
        }
    }

    /// True for vendors whose PMU follows AMD's design (AMD and Hygon).
    pub fn is_amd_like(&self) -> bool {
        matches!(self, Vendor::Amd | Vendor::Hygon)
    }
}

impl fmt::Display for Vendor {
    /// Writes the CPUID vendor string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cpuid_str())
    }
}

impl From<&str> for Vendor {
    fn from(s: &str) -> Vendor {
        Vendor::from_cpuid_str(s)
    }
}

impl Serialize for Vendor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.cpuid_str())
    }
}

impl<'de> Deserialize<'de> for Vendor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Vendor, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(Vendor::from_cpuid_str(&s))
    }
}

/// A CPU's identity: vendor, display family, display model and (optionally)
/// stepping.
///
/// `Display` and `FromStr` use perf's key form `vendor-family-model[-stepping]`
/// with the family in decimal and model and stepping in hex:
///
/// ```
/// use pmx_model::cpu::{CpuId, Vendor};
/// let skx: CpuId = "GenuineIntel-6-55-4".parse().unwrap();
/// assert_eq!((skx.vendor.clone(), skx.family, skx.model, skx.stepping), (Vendor::Intel, 6, 0x55, Some(4)));
/// assert_eq!(skx.to_string(), "GenuineIntel-6-55-4");
/// assert_eq!(skx.microarch().unwrap().code, "SKX");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CpuId {
    /// Who made the CPU.
    pub vendor: Vendor,
    /// Display family (base family plus extended family where it applies).
    pub family: u32,
    /// Display model (extended model in the high nibble where it applies).
    pub model: u32,
    /// Stepping, when known. Some tables (Skylake-SP versus Cascade Lake)
    /// need it.
    pub stepping: Option<u32>,
}

impl CpuId {
    /// A CPU identity from its parts.
    pub fn new(vendor: Vendor, family: u32, model: u32, stepping: Option<u32>) -> CpuId {
        CpuId {
            vendor,
            family,
            model,
            stepping,
        }
    }

    /// Compute display family, model and stepping from the CPUID leaf 1 EAX
    /// "signature".
    ///
    /// EAX holds stepping in bits 3:0, model 7:4, family 11:8, extended model
    /// 19:16 and extended family 27:20. Intel (SDM vol. 2, CPUID): the display
    /// family is `family + extended family` only when the family is 0xF; the
    /// display model is `extended model << 4 | model` when the family is 6 or
    /// 0xF. AMD and Hygon (APM vol. 3, CPUID Fn0000_0001_EAX): both the
    /// extended family and the extended model apply only when the base family
    /// is 0xF. Other vendors follow the Intel rules.
    pub fn from_signature(vendor: Vendor, leaf1_eax: u32) -> CpuId {
        let stepping = leaf1_eax & 0xF;
        let base_model = (leaf1_eax >> 4) & 0xF;
        let base_family = (leaf1_eax >> 8) & 0xF;
        let ext_model = (leaf1_eax >> 16) & 0xF;
        let ext_family = (leaf1_eax >> 20) & 0xFF;
        let family = if base_family == 0xF {
            base_family + ext_family
        } else {
            base_family
        };
        let uses_ext_model = if vendor.is_amd_like() {
            base_family == 0xF
        } else {
            base_family == 0x6 || base_family == 0xF
        };
        let model = if uses_ext_model {
            (ext_model << 4) | base_model
        } else {
            base_model
        };
        CpuId {
            vendor,
            family,
            model,
            stepping: Some(stepping),
        }
    }

    /// The same identity without the stepping (the key most event tables use).
    pub fn without_stepping(&self) -> CpuId {
        CpuId {
            stepping: None,
            ..self.clone()
        }
    }

    /// The microarchitecture, from the built-in tables; `None` for CPUs they
    /// do not know (including every vendor but Intel, AMD and Hygon).
    pub fn microarch(&self) -> Option<Microarch> {
        match self.vendor {
            Vendor::Intel => intel_microarch(self.family, self.model, self.stepping),
            Vendor::Amd => amd_microarch(self.family, self.model),
            Vendor::Hygon => hygon_microarch(self.family),
            Vendor::Other(_) => None,
        }
    }
}

impl fmt::Display for CpuId {
    /// Writes perf's key: `GenuineIntel-6-55-4`, `AuthenticAMD-25-11-1`,
    /// `GenuineIntel-6-8F` (no stepping).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{:X}", self.vendor, self.family, self.model)?;
        if let Some(stepping) = self.stepping {
            write!(f, "-{stepping:X}")?;
        }
        Ok(())
    }
}

/// Why a CPU key did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU key {input:?}: {problem} (expected vendor-family-model[-stepping], family in decimal, model and stepping in hex, e.g. GenuineIntel-6-55-4)")]
pub struct CpuIdParseError {
    /// The text that was parsed.
    pub input: String,
    /// What is wrong with it.
    pub problem: CpuIdProblem,
}

/// The specific fault in a CPU key; see [`CpuIdParseError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuIdProblem {
    /// Nothing was given.
    #[error("it is empty")]
    Empty,
    /// The vendor part is empty.
    #[error("the vendor is missing")]
    MissingVendor,
    /// Fewer than three `-`-separated parts.
    #[error("the {0} is missing")]
    Missing(&'static str),
    /// More than four parts.
    #[error("it has {0} parts separated by '-', at most 4 are allowed")]
    TooManyParts(usize),
    /// A number did not parse.
    #[error("{field} {text:?} is not a {radix} number")]
    BadNumber {
        /// `family`, `model` or `stepping`.
        field: &'static str,
        /// The offending text.
        text: String,
        /// `decimal` or `hexadecimal`.
        radix: &'static str,
    },
}

impl FromStr for CpuId {
    type Err = CpuIdParseError;

    /// Parse `vendor-family-model[-stepping]`. Model and stepping may carry a
    /// `0x` prefix; surrounding whitespace is ignored.
    fn from_str(s: &str) -> Result<CpuId, CpuIdParseError> {
        let input = s.trim();
        let err = |problem| CpuIdParseError {
            input: s.to_string(),
            problem,
        };
        if input.is_empty() {
            return Err(err(CpuIdProblem::Empty));
        }
        let parts: Vec<&str> = input.split('-').collect();
        if parts.len() > 4 {
            return Err(err(CpuIdProblem::TooManyParts(parts.len())));
        }
        let vendor = parts[0].trim();
        if vendor.is_empty() {
            return Err(err(CpuIdProblem::MissingVendor));
        }
        let family_text = parts.get(1).ok_or(err(CpuIdProblem::Missing("family")))?;
        let model_text = parts.get(2).ok_or(err(CpuIdProblem::Missing("model")))?;
        let family = parse_number(family_text, 10).ok_or_else(|| {
            err(CpuIdProblem::BadNumber {
                field: "family",
                text: family_text.to_string(),
                radix: "decimal",
            })
        })?;
        let model = parse_number(model_text, 16).ok_or_else(|| {
            err(CpuIdProblem::BadNumber {
                field: "model",
                text: model_text.to_string(),
                radix: "hexadecimal",
            })
        })?;
        let stepping = match parts.get(3) {
            None => None,
            Some(text) => Some(parse_number(text, 16).ok_or_else(|| {
                err(CpuIdProblem::BadNumber {
                    field: "stepping",
                    text: text.to_string(),
                    radix: "hexadecimal",
                })
            })?),
        };
        Ok(CpuId {
            vendor: Vendor::from_cpuid_str(vendor),
            family,
            model,
            stepping,
        })
    }
}

fn parse_number(text: &str, radix: u32) -> Option<u32> {
    let text = text.trim();
    let digits = if radix == 16 {
        text.strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text)
    } else {
        text
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

/// What kind of cores a microarchitecture has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreKind {
    /// Big cores only (Intel Core/Xeon P-cores, all AMD cores).
    Big,
    /// Small cores only (Intel Atom and E-core-only parts).
    Small,
    /// A mix of big and small cores with different PMUs (Intel hybrid
    /// client parts: the kernel shows `cpu_core` and `cpu_atom` PMUs).
    Hybrid,
    /// Intel Xeon Phi many-core parts.
    ManyCore,
}

/// A named microarchitecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Microarch {
    /// The name people use: `Skylake-SP`, `Alder Lake`, `Zen 4`.
    pub name: &'static str,
    /// A short code for event tables. Intel: the platform directory of
    /// Intel's perfmon repository and `mapfile.csv` (`SKX`, `ICL`, `SPR`,
    /// `ADL`), or Intel's usual abbreviation for parts that repository does
    /// not cover (`CNL`, `LKF`, `CORE2`). AMD: the core generation for Zen
    /// (`zen1` … `zen5`, matching perf's `amdzenN` tables) and `famXXh` for
    /// older families.
    pub code: &'static str,
    /// Big, small, hybrid or many-core.
    pub kind: CoreKind,
    /// True for server (Xeon, EPYC, Opteron-class) parts.
    pub server: bool,
}

const fn arch(name: &'static str, code: &'static str, kind: CoreKind, server: bool) -> Microarch {
    Microarch {
        name,
        code,
        kind,
        server,
    }
}

use CoreKind::{Big, Hybrid, ManyCore, Small};

/// Intel family 6 models. Sources: Intel SDM vol. 4 (model numbers per
/// processor family), Intel's perfmon `mapfile.csv` (platform codes).
const INTEL_FAMILY_6: &[(u32, Microarch)] = &[
    // Core 2 (before Nehalem; architectural PMU version 2).
    (0x0F, arch("Merom", "CORE2", Big, false)),
    (0x16, arch("Merom", "CORE2", Big, false)),
    (0x17, arch("Penryn", "CORE2", Big, false)),
    (0x1D, arch("Dunnington", "CORE2", Big, true)),
    // Nehalem and Westmere.
    (0x1A, arch("Nehalem-EP", "NHM-EP", Big, true)),
    (0x1E, arch("Nehalem", "NHM-EP", Big, false)),
    (0x1F, arch("Nehalem", "NHM-EP", Big, false)),
    (0x2E, arch("Nehalem-EX", "NHM-EX", Big, true)),
    (0x25, arch("Westmere", "WSM-EP-SP", Big, false)),
    (0x2C, arch("Westmere-EP", "WSM-EP-DP", Big, true)),
    (0x2F, arch("Westmere-EX", "WSM-EX", Big, true)),
    // Sandy Bridge, Ivy Bridge.
    (0x2A, arch("Sandy Bridge", "SNB", Big, false)),
    (0x2D, arch("Sandy Bridge-EP", "JKT", Big, true)),
    (0x3A, arch("Ivy Bridge", "IVB", Big, false)),
    (0x3E, arch("Ivy Bridge-EP", "IVT", Big, true)),
    // Haswell, Broadwell.
    (0x3C, arch("Haswell", "HSW", Big, false)),
    (0x45, arch("Haswell", "HSW", Big, false)),
    (0x46, arch("Haswell", "HSW", Big, false)),
    (0x3F, arch("Haswell-EP", "HSX", Big, true)),
    (0x3D, arch("Broadwell", "BDW", Big, false)),
    (0x47, arch("Broadwell", "BDW", Big, false)),
    (0x4F, arch("Broadwell-EP", "BDX", Big, true)),
    (0x56, arch("Broadwell-DE", "BDW-DE", Big, true)),
    // Skylake client and its derivatives.
    (0x4E, arch("Skylake", "SKL", Big, false)),
    (0x5E, arch("Skylake", "SKL", Big, false)),
    (0x8E, arch("Kaby Lake", "SKL", Big, false)),
    (0x9E, arch("Kaby Lake", "SKL", Big, false)),
    (0xA5, arch("Comet Lake", "SKL", Big, false)),
    (0xA6, arch("Comet Lake", "SKL", Big, false)),
    (0x66, arch("Cannon Lake", "CNL", Big, false)),
    // (0x55 Skylake-SP / Cascade Lake / Cooper Lake depends on the stepping.)
    // Ice Lake and later client cores.
    (0x7D, arch("Ice Lake", "ICL", Big, false)),
    (0x7E, arch("Ice Lake", "ICL", Big, false)),
    (0x9D, arch("Ice Lake NNP-I", "ICL", Big, false)),
    (0xA7, arch("Rocket Lake", "RKL", Big, false)),
    (0x8C, arch("Tiger Lake", "TGL", Big, false)),
    (0x8D, arch("Tiger Lake", "TGL", Big, false)),
    (0x8A, arch("Lakefield", "LKF", Hybrid, false)),
    (0x97, arch("Alder Lake", "ADL", Hybrid, false)),
    (0x9A, arch("Alder Lake", "ADL", Hybrid, false)),
    (0xB7, arch("Raptor Lake", "ADL", Hybrid, false)),
    (0xBA, arch("Raptor Lake", "ADL", Hybrid, false)),
    (0xBF, arch("Raptor Lake", "ADL", Hybrid, false)),
    (0xD7, arch("Bartlett Lake", "ADL", Big, false)),
    (0xAA, arch("Meteor Lake", "MTL", Hybrid, false)),
    (0xAC, arch("Meteor Lake", "MTL", Hybrid, false)),
    (0xB5, arch("Arrow Lake-U", "MTL", Hybrid, false)),
    (0xC5, arch("Arrow Lake-H", "ARL", Hybrid, false)),
    (0xC6, arch("Arrow Lake", "ARL", Hybrid, false)),
    (0xBD, arch("Lunar Lake", "LNL", Hybrid, false)),
    (0xCC, arch("Panther Lake", "PTL", Hybrid, false)),
    (0xD5, arch("Wildcat Lake", "PTL", Hybrid, false)),
    (0xE5, arch("Panther Lake", "PTL", Hybrid, false)),
    // Server (Xeon) parts from Ice Lake on.
    (0x6A, arch("Ice Lake-SP", "ICX", Big, true)),
    (0x6C, arch("Ice Lake-D", "ICX", Big, true)),
    (0x8F, arch("Sapphire Rapids", "SPR", Big, true)),
    (0xCF, arch("Emerald Rapids", "EMR", Big, true)),
    (0xAD, arch("Granite Rapids", "GNR", Big, true)),
    (0xAE, arch("Granite Rapids-D", "GNR", Big, true)),
    // Atom and E-core-only parts.
    (0x1C, arch("Bonnell", "BNL", Small, false)),
    (0x26, arch("Bonnell", "BNL", Small, false)),
    (0x27, arch("Saltwell", "BNL", Small, false)),
    (0x35, arch("Saltwell", "BNL", Small, false)),
    (0x36, arch("Saltwell", "BNL", Small, false)),
    (0x37, arch("Silvermont", "SLM", Small, false)),
    (0x4A, arch("Silvermont", "SLM", Small, false)),
    (0x4D, arch("Silvermont", "SLM", Small, true)),
    (0x5D, arch("Silvermont", "SLM", Small, false)),
    (0x4C, arch("Airmont", "SLM", Small, false)),
    (0x5A, arch("Airmont", "SLM", Small, false)),
    (0x75, arch("Airmont", "SLM", Small, false)),
    (0x5C, arch("Goldmont", "GLM", Small, false)),
    (0x5F, arch("Goldmont", "GLM", Small, true)),
    (0x7A, arch("Goldmont Plus", "GLP", Small, false)),
    (0x86, arch("Tremont (Snow Ridge)", "SNR", Small, true)),
    (0x96, arch("Tremont (Elkhart Lake)", "EHL", Small, false)),
    (0x9C, arch("Tremont (Jasper Lake)", "EHL", Small, false)),
    (0xBE, arch("Gracemont (Alder Lake-N)", "ADL", Small, false)),
    (0xAF, arch("Sierra Forest", "SRF", Small, true)),
    (0xB6, arch("Grand Ridge", "GRR", Small, true)),
    (0xDD, arch("Clearwater Forest", "CWF", Small, true)),
    // Xeon Phi.
    (0x57, arch("Knights Landing", "KNL", ManyCore, true)),
    (0x85, arch("Knights Mill", "KNL", ManyCore, true)),
];

fn intel_microarch(family: u32, model: u32, stepping: Option<u32>) -> Option<Microarch> {
    match family {
        6 if model == 0x55 => Some(match stepping {
            // mapfile.csv: steppings 0-4 are SKX, 5-F CLX.
            Some(0..=4) => arch("Skylake-SP", "SKX", Big, true),
            Some(5..=9) => arch("Cascade Lake", "CLX", Big, true),
            Some(_) => arch("Cooper Lake", "CLX", Big, true),
            None => arch("Skylake-SP or Cascade Lake", "SKX", Big, true),
        }),
        6 => INTEL_FAMILY_6
            .iter()
            .find(|(m, _)| *m == model)
            .map(|(_, a)| *a),
        15 => Some(arch("NetBurst", "P4", Big, false)),
        18 if model == 0x01 || model == 0x03 => Some(arch("Nova Lake", "NVL", Hybrid, false)),
        19 if model == 0x01 => Some(arch("Diamond Rapids", "DMR", Big, true)),
        _ => None,
    }
}

fn amd_microarch(family: u32, model: u32) -> Option<Microarch> {
    let a = match (family, model) {
        (0x0F, _) => arch("K8", "k8", Big, false),
        (0x10, _) => arch("K10", "fam10h", Big, false),
        (0x11, _) => arch("K8 (Griffin)", "fam11h", Big, false),
        (0x12, _) => arch("K10 (Llano)", "fam12h", Big, false),
        (0x14, _) => arch("Bobcat", "fam14h", Big, false),
        (0x15, 0x00..=0x01) => arch("Bulldozer", "fam15h", Big, false),
        (0x15, 0x02..=0x1F) => arch("Piledriver", "fam15h", Big, false),
        (0x15, 0x30..=0x3F) => arch("Steamroller", "fam15h", Big, false),
        (0x15, 0x60..=0x7F) => arch("Excavator", "fam15h", Big, false),
        (0x16, 0x00..=0x0F) => arch("Jaguar", "fam16h", Big, false),
        (0x16, 0x30..=0x3F) => arch("Puma", "fam16h", Big, false),
        // Family 17h: Zen (Naples/Summit Ridge 01h, Raven Ridge 11h, Dali 20h),
        // Zen+ (Pinnacle Ridge 08h, Picasso 18h), Zen 2 from 30h on (Rome 31h,
        // Renoir 60h, Matisse 71h, Van Gogh 90h, Mendocino A0h).
        (0x17, 0x00..=0x07 | 0x10..=0x17 | 0x20..=0x2F) => arch("Zen", "zen1", Big, false),
        (0x17, 0x08..=0x0F | 0x18..=0x1F) => arch("Zen+", "zen1", Big, false),
        (0x17, 0x30..=0xFF) => arch("Zen 2", "zen2", Big, false),
        // Family 19h: Zen 3 (Milan 01h, Vermeer 21h, Cezanne 50h), Zen 3+
        // (Rembrandt 44h), Zen 4 (Genoa 11h, Raphael 61h, Phoenix 74h, Bergamo
        // A0h).
        (0x19, 0x40..=0x4F) => arch("Zen 3+", "zen3", Big, false),
        (0x19, 0x00..=0x0F | 0x20..=0x5F) => arch("Zen 3", "zen3", Big, false),
        (0x19, 0xA0..=0xAF) => arch("Zen 4c", "zen4", Big, false),
        (0x19, 0x10..=0x1F | 0x60..=0x9F) => arch("Zen 4", "zen4", Big, false),
        // Family 1Ah: Zen 5 (Turin 02h/11h, Strix Point 24h, Granite Ridge 44h,
        // Krackan 60h, Strix Halo 70h); later ranges are Zen 6.
        (0x1A, 0x00..=0x4F | 0x60..=0x7F) => arch("Zen 5", "zen5", Big, false),
        (0x1A, 0x50..=0x5F | 0x80..=0xAF | 0xC0..=0xCF) => arch("Zen 6", "zen6", Big, false),
        _ => return None,
    };
    // Which parts are EPYC/Opteron is a question of the product, not the
    // family/model; only a few ranges are server-only.
    let server = matches!(
        (family, model),
        (0x17, 0x01 | 0x31) | (0x19, 0x01 | 0x10..=0x1F | 0xA0..=0xAF) | (0x1A, 0x00..=0x1F)
    );
    Some(Microarch { server, ..a })
}

fn hygon_microarch(family: u32) -> Option<Microarch> {
    (family == 0x18).then_some(arch("Dhyana", "zen1", Big, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> CpuId {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn vendor_strings_round_trip() {
        for s in [
            "GenuineIntel",
            "AuthenticAMD",
            "HygonGenuine",
            "CentaurHauls",
        ] {
            assert_eq!(Vendor::from_cpuid_str(s).cpuid_str(), s);
        }
        assert_eq!(Vendor::from("GenuineIntel"), Vendor::Intel);
        assert_eq!(Vendor::from("AuthenticAMD"), Vendor::Amd);
        assert_eq!(Vendor::from("HygonGenuine"), Vendor::Hygon);
        assert_eq!(
            Vendor::from("  Shanghai  "),
            Vendor::Other("  Shanghai  ".into())
        );
        assert_eq!(Vendor::Amd.name(), "AMD");
        assert!(Vendor::Hygon.is_amd_like() && !Vendor::Intel.is_amd_like());
    }

    #[test]
    fn keys_parse_and_print() {
        for (text, vendor, family, model, stepping) in [
            ("AuthenticAMD-25-11-1", Vendor::Amd, 25, 0x11, Some(1)),
            ("GenuineIntel-6-55-4", Vendor::Intel, 6, 0x55, Some(4)),
            ("GenuineIntel-6-8F", Vendor::Intel, 6, 0x8F, None),
            ("AuthenticAMD-16-2", Vendor::Amd, 16, 2, None),
            ("AuthenticAMD-23-31-0", Vendor::Amd, 23, 0x31, Some(0)),
            ("HygonGenuine-24-0-1", Vendor::Hygon, 24, 0, Some(1)),
            ("GenuineIntel-18-1", Vendor::Intel, 18, 1, None),
        ] {
            let id = key(text);
            assert_eq!(id, CpuId::new(vendor, family, model, stepping), "{text}");
            assert_eq!(id.to_string(), text);
        }
    }

    #[test]
    fn keys_accept_lower_case_and_0x() {
        let id = key(" GenuineIntel-6-0x8f-0xa ");
        assert_eq!((id.model, id.stepping), (0x8F, Some(0xA)));
        assert_eq!(id.to_string(), "GenuineIntel-6-8F-A");
        assert_eq!(key("GenuineIntel-6-8f").to_string(), "GenuineIntel-6-8F");
    }

    #[test]
    fn bad_keys_say_what_is_wrong() {
        let cases: &[(&str, CpuIdProblem)] = &[
            ("", CpuIdProblem::Empty),
            ("   ", CpuIdProblem::Empty),
            ("-6-55", CpuIdProblem::MissingVendor),
            ("GenuineIntel", CpuIdProblem::Missing("family")),
            ("GenuineIntel-6", CpuIdProblem::Missing("model")),
            ("GenuineIntel-6-55-4-1", CpuIdProblem::TooManyParts(5)),
            (
                "GenuineIntel-0x6-55",
                CpuIdProblem::BadNumber {
                    field: "family",
                    text: "0x6".into(),
                    radix: "decimal",
                },
            ),
            (
                "GenuineIntel-6-5G",
                CpuIdProblem::BadNumber {
                    field: "model",
                    text: "5G".into(),
                    radix: "hexadecimal",
                },
            ),
            (
                "GenuineIntel-6-",
                CpuIdProblem::BadNumber {
                    field: "model",
                    text: "".into(),
                    radix: "hexadecimal",
                },
            ),
            (
                "GenuineIntel-6-55-x",
                CpuIdProblem::BadNumber {
                    field: "stepping",
                    text: "x".into(),
                    radix: "hexadecimal",
                },
            ),
            (
                "GenuineIntel-99999999999-55",
                CpuIdProblem::BadNumber {
                    field: "family",
                    text: "99999999999".into(),
                    radix: "decimal",
                },
            ),
        ];
        for (text, problem) in cases {
            let err = text.parse::<CpuId>().unwrap_err();
            assert_eq!(&err.problem, problem, "{text:?}");
            let message = err.to_string();
            assert!(
                message.contains("expected vendor-family-model"),
                "{message}"
            );
        }
        let message = "GenuineIntel-6-5G"
            .parse::<CpuId>()
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("model \"5G\" is not a hexadecimal number"),
            "{message}"
        );
    }

    #[test]
    fn signatures_follow_each_vendors_rules() {
        // Skylake-SP stepping 4: ext model 5, family 6, model 5, stepping 4.
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0005_0654).to_string(),
            "GenuineIntel-6-55-4"
        );
        // i7-6700.
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0005_06E3).to_string(),
            "GenuineIntel-6-5E-3"
        );
        // Sapphire Rapids E5 stepping 8.
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0008_06F8).to_string(),
            "GenuineIntel-6-8F-8"
        );
        // Pentium 4 Prescott: family 0xF, ext family 0, model 3 (ext model counts).
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0000_0F34).to_string(),
            "GenuineIntel-15-3-4"
        );
        // Nova Lake: base family 0xF + ext family 3 = 18.
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0030_0F11).to_string(),
            "GenuineIntel-18-1-1"
        );
        // Intel family 5 (Pentium MMX): ext model ignored.
        assert_eq!(
            CpuId::from_signature(Vendor::Intel, 0x0001_0543).to_string(),
            "GenuineIntel-5-4-3"
        );
        // Zen 4 Genoa (this project's development VM): 0x00A10F11.
        assert_eq!(
            CpuId::from_signature(Vendor::Amd, 0x00A1_0F11).to_string(),
            "AuthenticAMD-25-11-1"
        );
        // Zen 2 Rome.
        assert_eq!(
            CpuId::from_signature(Vendor::Amd, 0x0083_0F10).to_string(),
            "AuthenticAMD-23-31-0"
        );
        // Barcelona B3: family 0xF + 1, model 2.
        assert_eq!(
            CpuId::from_signature(Vendor::Amd, 0x0010_0F23).to_string(),
            "AuthenticAMD-16-2-3"
        );
        // AMD with base family 6 (Athlon): the extended model does not apply.
        assert_eq!(
            CpuId::from_signature(Vendor::Amd, 0x0001_0681).to_string(),
            "AuthenticAMD-6-8-1"
        );
        // Hygon Dhyana: family 0xF + 9 = 0x18.
        assert_eq!(
            CpuId::from_signature(Vendor::Hygon, 0x0090_0F01).to_string(),
            "HygonGenuine-24-0-1"
        );
    }

    #[test]
    fn intel_microarchitectures() {
        let cases = [
            ("GenuineIntel-6-1A", "Nehalem-EP", "NHM-EP"),
            ("GenuineIntel-6-2E", "Nehalem-EX", "NHM-EX"),
            ("GenuineIntel-6-2C", "Westmere-EP", "WSM-EP-DP"),
            ("GenuineIntel-6-2A", "Sandy Bridge", "SNB"),
            ("GenuineIntel-6-2D", "Sandy Bridge-EP", "JKT"),
            ("GenuineIntel-6-3F", "Haswell-EP", "HSX"),
            ("GenuineIntel-6-4F", "Broadwell-EP", "BDX"),
            ("GenuineIntel-6-5E-3", "Skylake", "SKL"),
            ("GenuineIntel-6-9E", "Kaby Lake", "SKL"),
            ("GenuineIntel-6-55-4", "Skylake-SP", "SKX"),
            ("GenuineIntel-6-55-7", "Cascade Lake", "CLX"),
            ("GenuineIntel-6-55-B", "Cooper Lake", "CLX"),
            ("GenuineIntel-6-55", "Skylake-SP or Cascade Lake", "SKX"),
            ("GenuineIntel-6-7E", "Ice Lake", "ICL"),
            ("GenuineIntel-6-6A", "Ice Lake-SP", "ICX"),
            ("GenuineIntel-6-8F", "Sapphire Rapids", "SPR"),
            ("GenuineIntel-6-CF", "Emerald Rapids", "EMR"),
            ("GenuineIntel-6-AD", "Granite Rapids", "GNR"),
            ("GenuineIntel-6-97", "Alder Lake", "ADL"),
            ("GenuineIntel-6-B7", "Raptor Lake", "ADL"),
            ("GenuineIntel-6-AA", "Meteor Lake", "MTL"),
            ("GenuineIntel-6-C6", "Arrow Lake", "ARL"),
            ("GenuineIntel-6-BD", "Lunar Lake", "LNL"),
            ("GenuineIntel-6-CC", "Panther Lake", "PTL"),
            ("GenuineIntel-6-5C", "Goldmont", "GLM"),
            ("GenuineIntel-6-7A", "Goldmont Plus", "GLP"),
            ("GenuineIntel-6-86", "Tremont (Snow Ridge)", "SNR"),
            ("GenuineIntel-6-AF", "Sierra Forest", "SRF"),
            ("GenuineIntel-6-DD", "Clearwater Forest", "CWF"),
            ("GenuineIntel-6-57", "Knights Landing", "KNL"),
            ("GenuineIntel-18-1", "Nova Lake", "NVL"),
        ];
        for (text, name, code) in cases {
            let a = key(text)
                .microarch()
                .unwrap_or_else(|| panic!("{text}: no microarch"));
            assert_eq!((a.name, a.code), (name, code), "{text}");
        }
        let adl = key("GenuineIntel-6-97").microarch().unwrap();
        assert_eq!(adl.kind, CoreKind::Hybrid);
        assert!(key("GenuineIntel-6-8F").microarch().unwrap().server);
        assert_eq!(
            key("GenuineIntel-6-AF").microarch().unwrap().kind,
            CoreKind::Small
        );
        assert_eq!(key("GenuineIntel-6-FE").microarch(), None);
        assert_eq!(key("GenuineIntel-7-1").microarch(), None);
    }

    /// Every key in Intel's perfmon `mapfile.csv` (the copy in the shared
    /// data directory beside the repository) maps to the platform directory
    /// the mapfile names.
    #[test]
    fn intel_codes_match_perfmon_mapfile() {
        let Some(path) = pmx_testkit::shared::shared_data("intel-perfmon/mapfile.csv") else {
            return;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let mut checked = 0;
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split(',').collect();
            let (Some(key_col), Some(file)) = (cols.first(), cols.get(2)) else {
                continue;
            };
            let code = file.trim_start_matches('/').split('/').next().unwrap_or("");
            // Stepping patterns look like `GenuineIntel-6-55-[01234]`.
            let keys: Vec<String> = match key_col.split_once('[') {
                Some((head, tail)) => tail
                    .trim_end_matches(']')
                    .chars()
                    .map(|c| format!("{head}{c}"))
                    .collect(),
                None => vec![key_col.to_string()],
            };
            for k in keys {
                let id = key(&k);
                assert_eq!(id.microarch().map(|a| a.code), Some(code), "{k}");
                checked += 1;
            }
        }
        assert!(checked > 200, "only {checked} mapfile rows checked");
    }

    #[test]
    fn amd_microarchitectures() {
        let cases = [
            ("AuthenticAMD-15-5", "K8", "k8"),
            ("AuthenticAMD-16-2", "K10", "fam10h"),
            ("AuthenticAMD-18-1", "K10 (Llano)", "fam12h"),
            ("AuthenticAMD-20-2", "Bobcat", "fam14h"),
            ("AuthenticAMD-21-1", "Bulldozer", "fam15h"),
            ("AuthenticAMD-21-2", "Piledriver", "fam15h"),
            ("AuthenticAMD-21-13", "Piledriver", "fam15h"),
            ("AuthenticAMD-21-30", "Steamroller", "fam15h"),
            ("AuthenticAMD-21-60", "Excavator", "fam15h"),
            ("AuthenticAMD-22-0", "Jaguar", "fam16h"),
            ("AuthenticAMD-22-30", "Puma", "fam16h"),
            ("AuthenticAMD-23-1", "Zen", "zen1"),
            ("AuthenticAMD-23-8", "Zen+", "zen1"),
            ("AuthenticAMD-23-11", "Zen", "zen1"),
            ("AuthenticAMD-23-18", "Zen+", "zen1"),
            ("AuthenticAMD-23-31-0", "Zen 2", "zen2"),
            ("AuthenticAMD-23-71", "Zen 2", "zen2"),
            ("AuthenticAMD-25-1", "Zen 3", "zen3"),
            ("AuthenticAMD-25-21", "Zen 3", "zen3"),
            ("AuthenticAMD-25-44", "Zen 3+", "zen3"),
            ("AuthenticAMD-25-50", "Zen 3", "zen3"),
            ("AuthenticAMD-25-11-1", "Zen 4", "zen4"),
            ("AuthenticAMD-25-61", "Zen 4", "zen4"),
            ("AuthenticAMD-25-74", "Zen 4", "zen4"),
            ("AuthenticAMD-25-A0", "Zen 4c", "zen4"),
            ("AuthenticAMD-26-2", "Zen 5", "zen5"),
            ("AuthenticAMD-26-44", "Zen 5", "zen5"),
            ("HygonGenuine-24-0-1", "Dhyana", "zen1"),
        ];
        for (text, name, code) in cases {
            let a = key(text)
                .microarch()
                .unwrap_or_else(|| panic!("{text}: no microarch"));
            assert_eq!((a.name, a.code), (name, code), "{text}");
        }
        assert!(key("AuthenticAMD-25-11-1").microarch().unwrap().server);
        assert!(!key("AuthenticAMD-25-61").microarch().unwrap().server);
        assert_eq!(
            key("AuthenticAMD-24-0").microarch(),
            None,
            "family 18h is Hygon's"
        );
        assert_eq!(key("AuthenticAMD-21-40").microarch(), None);
        assert_eq!(key("HygonGenuine-23-1").microarch(), None);
        assert_eq!(key("CentaurHauls-6-F").microarch(), None);
    }

    #[test]
    fn without_stepping_drops_only_the_stepping() {
        let id = key("GenuineIntel-6-55-4");
        assert_eq!(id.without_stepping().to_string(), "GenuineIntel-6-55");
        assert_eq!(id.without_stepping().vendor, Vendor::Intel);
    }
}
