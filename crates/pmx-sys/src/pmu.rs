//! The kernel's PMUs: `/sys/bus/event_source/devices/*`.
//!
//! Every PMU the kernel registered — the core PMU (`cpu`, or `cpu_core` and
//! `cpu_atom` on hybrid Intel parts), uncore boxes, RAPL (`power`), `msr`,
//! and the software-ish ones (`software`, `tracepoint`, `breakpoint`,
//! `kprobe`, `uprobe`) — has a directory there with:
//!
//! - `type`: the number to put in `perf_event_attr.type`;
//! - `format/<field>`: where a named field goes in `config`, `config1`, …
//!   (`config:0-7,32-35`), parsed into a [`FieldPlacement`];
//! - `events/<alias>`: the kernel's own event aliases (`event=0x3c`), with
//!   optional `.unit`, `.scale`, `.per-pkg` and `.snapshot` companions;
//! - `cpumask` or `cpus`: the CPUs to open the PMU's events on (uncore: one
//!   per package; hybrid: the CPUs of that core type);
//! - `caps/<name>`: capabilities (`max_precise`, `pmu_name`, `branches`, …).

use crate::root::{parse_i64, Problem, SysRoot};
use pmx_model::topology::parse_cpu_list;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Where the kernel lists its PMUs, relative to the root.
pub const PMU_DIR: &str = "sys/bus/event_source/devices";

/// The names of core PMUs on x86: `cpu`, and on hybrid parts `cpu_core` and
/// `cpu_atom`.
pub const CORE_PMU_NAMES: [&str; 3] = ["cpu", "cpu_core", "cpu_atom"];

/// One PMU the kernel registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelPmu {
    /// Directory name (`cpu`, `uncore_imc_0`, `msr`, …).
    pub name: String,
    /// The `type` file: the value for `perf_event_attr.type`.
    #[serde(rename = "type")]
    pub type_id: Option<u32>,
    /// The `format/` fields, sorted by name.
    pub format: Vec<FormatField>,
    /// The `events/` aliases, sorted by name.
    pub events: Vec<EventAlias>,
    /// The `cpumask` (or `cpus`) list, when the PMU has one.
    pub cpumask: Option<Vec<u32>>,
    /// The `caps/` files and their contents.
    pub caps: BTreeMap<String, String>,
}

impl KernelPmu {
    /// Whether this is a core PMU (`cpu`, `cpu_core`, `cpu_atom`).
    pub fn is_core(&self) -> bool {
        CORE_PMU_NAMES.contains(&self.name.as_str())
    }

    /// The format field called `name`.
    pub fn format_field(&self, name: &str) -> Option<&FormatField> {
        self.format.iter().find(|f| f.name == name)
    }

    /// The event alias called `name`.
    pub fn event(&self, name: &str) -> Option<&EventAlias> {
        self.events.iter().find(|e| e.name == name)
    }
}

/// One `format/<name>` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatField {
    /// The field name (`event`, `umask`, `ldlat`, …).
    pub name: String,
    /// The file's contents as the kernel wrote them.
    pub raw: String,
    /// The parsed placement; `None` when the contents did not parse (the
    /// problem is recorded in the report).
    pub placement: Option<FieldPlacement>,
}

/// Which `perf_event_attr` word a format field lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3`.
    Config3,
}

impl ConfigWord {
    /// The name the kernel uses.
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
}

/// Where a format field's bits go: `config:0-7,32-35` is the low 8 bits of
/// the value in config bits 0–7 and the next 4 in bits 32–35.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPlacement {
    /// The attr word.
    pub word: ConfigWord,
    /// Inclusive bit ranges `(low, high)`, in the order written.
    pub ranges: Vec<(u8, u8)>,
}

/// A format placement that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad format {input:?}: {problem} (expected e.g. config:0-7,32-35)")]
pub struct FormatError {
    /// The text.
    pub input: String,
    /// What is wrong.
    pub problem: String,
}

impl FromStr for FieldPlacement {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<FieldPlacement, FormatError> {
        let input = s.trim();
        let err = |problem: String| FormatError {
            input: input.to_string(),
            problem,
        };
        let (word, bits) = input
            .split_once(':')
            .ok_or_else(|| err("no ':' between the word and the bits".into()))?;
        let word = match word.trim() {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            "config3" => ConfigWord::Config3,
            other => return Err(err(format!("unknown word {other:?}"))),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let part = part.trim();
            let bit = |t: &str| -> Result<u8, FormatError> {
                match t.trim().parse::<u8>() {
                    Ok(b) if b < 64 => Ok(b),
                    _ => Err(err(format!("{t:?} is not a bit number 0-63"))),
                }
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (bit(a)?, bit(b)?),
                None => {
                    let b = bit(part)?;
                    (b, b)
                }
            };
            if hi < lo {
                return Err(err(format!("range {lo}-{hi} runs backwards")));
            }
            ranges.push((lo, hi));
        }
        let placement = FieldPlacement { word, ranges };
        let total: u32 = placement
            .ranges
            .iter()
            .map(|(l, h)| u32::from(h - l) + 1)
            .sum();
        if total != placement.mask().count_ones() {
            return Err(err("ranges overlap".into()));
        }
        Ok(placement)
    }
}

impl fmt::Display for FieldPlacement {
    /// Writes the kernel's form, `config:0-7,32-35`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.word.name())?;
        for (i, (lo, hi)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl Serialize for FieldPlacement {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl FieldPlacement {
    /// The bits of the word the field occupies.
    pub fn mask(&self) -> u64 {
        self.ranges.iter().fold(0u64, |m, &(lo, hi)| {
            m | ((u64::MAX >> (63 - hi)) & (u64::MAX << lo))
        })
    }

    /// How many bits the field has.
    pub fn width(&self) -> u32 {
        self.mask().count_ones()
    }

    /// The largest value the field holds.
    pub fn max_value(&self) -> u64 {
        match self.width() {
            64 => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// Spread `value` over the field's bits, lowest value bit into the
    /// lowest field bit (how perf fills a format); `None` when `value` does
    /// not fit.
    pub fn place(&self, value: u64) -> Option<u64> {
        if value > self.max_value() {
            return None;
        }
        let mut out = 0u64;
        let mut v = value;
        for bit in 0..64 {
            if self.mask() & (1 << bit) != 0 {
                out |= (v & 1) << bit;
                v >>= 1;
            }
        }
        Some(out)
    }

    /// Gather the field's value back out of a word (inverse of [`Self::place`]).
    pub fn extract(&self, word: u64) -> u64 {
        let mut out = 0u64;
        let mut shift = 0;
        for bit in 0..64 {
            if self.mask() & (1 << bit) != 0 {
                out |= ((word >> bit) & 1) << shift;
                shift += 1;
            }
        }
        out
    }
}

/// One `events/<name>` alias.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventAlias {
    /// The alias (`cpu-cycles`, `cas_count_read`, …).
    pub name: String,
    /// Its terms as the kernel wrote them (`event=0x3c,umask=0x01`).
    pub value: String,
    /// `<name>.unit` (`MiB`, `Joules`), when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `<name>.scale` (`6.103515625e-5`), when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    /// `<name>.per-pkg`: count once per package.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_pkg: bool,
    /// `<name>.snapshot`: the value is a snapshot, not a running count.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub snapshot: bool,
}

const ALIAS_SUFFIXES: [&str; 4] = [".unit", ".scale", ".per-pkg", ".snapshot"];

/// Read every PMU under `sys/bus/event_source/devices`, sorted by name.
pub fn read_pmus(root: &SysRoot, problems: &mut Vec<Problem>) -> Vec<KernelPmu> {
    root.list(PMU_DIR, problems)
        .into_iter()
        .map(|name| read_pmu(root, &name, problems))
        .collect()
}

/// Read one PMU by name.
pub fn read_pmu(root: &SysRoot, name: &str, problems: &mut Vec<Problem>) -> KernelPmu {
    let dir = format!("{PMU_DIR}/{name}");
    let type_id = root.read_parsed(&format!("{dir}/type"), "a PMU type number", problems, |t| {
        t.parse::<u32>().ok()
    });

    let format = root
        .list(&format!("{dir}/format"), problems)
        .into_iter()
        .filter_map(|field| {
            let path = format!("{dir}/format/{field}");
            let raw = root.read(&path, problems)?;
            let placement = match raw.parse::<FieldPlacement>() {
                Ok(p) => Some(p),
                Err(e) => {
                    problems.push(Problem {
                        path,
                        message: e.to_string(),
                    });
                    None
                }
            };
            Some(FormatField {
                name: field,
                raw,
                placement,
            })
        })
        .collect();

    let event_files = root.list(&format!("{dir}/events"), problems);
    let events = event_files
        .iter()
        .filter(|f| !ALIAS_SUFFIXES.iter().any(|s| f.ends_with(s)))
        .filter_map(|alias| {
            let base = format!("{dir}/events/{alias}");
            let value = root.read(&base, problems)?;
            let has = |suffix: &str| event_files.contains(&format!("{alias}{suffix}"));
            let companion = |suffix: &str, problems: &mut Vec<Problem>| {
                if has(suffix) {
                    root.read(&format!("{base}{suffix}"), problems)
                } else {
                    None
                }
            };
            let unit = companion(".unit", problems);
            let scale = companion(".scale", problems);
            let flag = |suffix: &str, problems: &mut Vec<Problem>| {
                companion(suffix, problems).is_some_and(|v| !matches!(parse_i64(&v), Some(0)))
            };
            let per_pkg = flag(".per-pkg", problems);
            let snapshot = flag(".snapshot", problems);
            Some(EventAlias {
                name: alias.clone(),
                value,
                unit,
                scale,
                per_pkg,
                snapshot,
            })
        })
        .collect();

    let cpumask = ["cpumask", "cpus"].iter().find_map(|file| {
        let path = format!("{dir}/{file}");
        let text = root.read(&path, problems)?;
        match parse_cpu_list(&text) {
            Ok(cpus) => Some(cpus),
            Err(e) => {
                problems.push(Problem {
                    path,
                    message: e.to_string(),
                });
                None
            }
        }
    });

    let caps = root
        .list(&format!("{dir}/caps"), problems)
        .into_iter()
        .filter_map(|cap| {
            let value = root.read(&format!("{dir}/caps/{cap}"), problems)?;
            Some((cap, value))
        })
        .collect();

    KernelPmu {
        name: name.to_string(),
        type_id,
        format,
        events,
        cpumask,
        caps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(s: &str) -> FieldPlacement {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn placements_parse_and_print() {
        let amd_event = placement("config:0-7,32-35");
        assert_eq!(amd_event.word, ConfigWord::Config);
        assert_eq!(amd_event.ranges, vec![(0, 7), (32, 35)]);
        assert_eq!(amd_event.width(), 12);
        assert_eq!(amd_event.mask(), 0xF_0000_00FF);
        assert_eq!(amd_event.to_string(), "config:0-7,32-35");
        let ldlat = placement("config1:0-15\n");
        assert_eq!((ldlat.word, ldlat.width()), (ConfigWord::Config1, 16));
        let edge = placement("config:18");
        assert_eq!(
            (edge.mask(), edge.to_string()),
            (1 << 18, "config:18".to_string())
        );
        assert_eq!(placement("config:0-63").max_value(), u64::MAX);
        assert_eq!(placement("config2:63").mask(), 1 << 63);
        assert_eq!(placement("config3:0-1").word, ConfigWord::Config3);
    }

    #[test]
    fn placing_values_follows_the_bits() {
        let amd_event = placement("config:0-7,32-35");
        // Event 0x4E1 → low byte 0xE1 in 0-7, high nibble 4 in 32-35.
        assert_eq!(amd_event.place(0x4E1), Some(0x4_0000_00E1));
        assert_eq!(amd_event.extract(0x4_0000_F7E1), 0x4E1);
        assert_eq!(amd_event.place(0x1000), None, "13 bits do not fit in 12");
        let umask = placement("config:8-15");
        assert_eq!(umask.place(0x41), Some(0x4100));
        assert_eq!(placement("config:0-63").place(u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn bad_placements_explain_themselves() {
        for (text, problem) in [
            ("config", "no ':'"),
            ("confog:0-7", "unknown word"),
            ("config:0-64", "not a bit number 0-63"),
            ("config:7-0", "runs backwards"),
            ("config:", "not a bit number"),
            ("config:0-7,4", "overlap"),
            ("config:a", "not a bit number"),
        ] {
            let err = text.parse::<FieldPlacement>().unwrap_err().to_string();
            assert!(err.contains(problem), "{text}: {err}");
            assert!(err.contains("expected e.g. config:0-7,32-35"), "{err}");
        }
    }
}
