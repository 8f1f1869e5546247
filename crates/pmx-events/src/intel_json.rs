//! Intel's perfmon event tables (the JSON files of `github.com/intel/perfmon`),
//! chosen for a CPU through `mapfile.csv`.
//!
//! ## Choosing the files
//!
//! `mapfile.csv` has the columns `Family-model, Version, Filename, EventType,
//! Core Type, Native Model ID, Core Role Name`. `Family-model` is a small
//! regular expression over perf's CPU key (`GenuineIntel-6-55-[01234]`,
//! `GenuineIntel-6-8F`, `GenuineIntel-6-9[7A]`); [`CpuPattern`] implements
//! the subset that occurs (literal text, `[...]` classes with ranges and
//! negation, `.`, `?`, `*`, `+`, `\` escapes, `^`/`$`). A row applies to a CPU
//! when its pattern matches the whole key with the stepping
//! (`GenuineIntel-6-55-4`) or the whole key without it (`GenuineIntel-6-55`),
//! which is how perf tells Skylake-SP (steppings 0–4) from Cascade Lake
//! (5–F) while model-only rows match every stepping.
//!
//! Loaded `EventType`s: `core` and `hybridcore` (events of the core PMU),
//! `uncore` and `uncore experimental`, `offcore` (the `*_matrix.json`
//! offcore-response bit tables, see [`OffcoreBit`]) and `fp_arith_inst` (the
//! `FP_ARITH_INST_RETIRED` unit-mask bits with their FLOP multipliers, see
//! [`FpArithBit`]). `metrics` and `retire latency` rows are other formats and
//! are not read here. Hybrid parts list one `hybridcore` file per core type;
//! the `Core Role Name` (or `Core Type`) picks the PMU: `Core` → `cpu_core`,
//! `Atom` → `cpu_atom`, `LowPower_Atom` → `cpu_lowpower` (Linux's names).
//!
//! ## Encodings
//!
//! Core events (PMU `cpu`, or the hybrid PMU of their file):
//! `config = EventCode | UMask << 8 | EdgeDetect << 18 | AnyThread << 21 |
//! Invert << 23 | CounterMask << 24 | Equal << 36 | UMaskExt << 40` — perf's
//! placement of `event`, `umask`, `edge`, `any`, `inv`, `cmask`, `eq` and
//! `umask2` (architectural PMU v6 puts the second unit mask in
//! `IA32_PERFEVTSELx` bits 40–47). Where Intel gives two event codes or unit
//! masks (`"0xB7, 0xBB"`: one per offcore-response MSR) the first one is
//! encoded and the others are noted. Fixed-counter events keep Intel's
//! pseudo-encoding (`INST_RETIRED.ANY` = 0x00/0x01 → `config` 0x100,
//! `CPU_CLK_UNHALTED.REF_TSC` = 0x00/0x03 → 0x300), as libpfm writes
//! them; a note says which fixed counter it is (the kernel's generic
//! `instructions`/`cycles`/`ref-cycles` reach the same counters on every
//! kernel).
//! When the event uses an auxiliary MSR (`MSRIndex` 0x1A6/0x1A7 offcore
//! response, 0x3F6 load-latency threshold, 0x3F7 frontend event, or any
//! other) `config1 = MSRValue`, which is where perf's `offcore_rsp`, `ldlat`
//! and `frontend` terms go. `attr.type` is `PERF_TYPE_RAW` (4) for `cpu` and
//! `cpu_core`; for `cpu_atom` and `cpu_lowpower` it comes from sysfs.
//!
//! Uncore events: the PMU is `uncore_` + the lower-cased `Unit` as Linux
//! names its boxes (see [`uncore_pmu_name`]; the kernel adds an instance
//! suffix, `uncore_cha_0` …), `attr.type` comes from sysfs, and
//! `config = EventCode | UMask << 8 | EdgeDetect << 18 | ExtSel << 21 |
//! Invert << 23 | CounterMask << 24 | UMaskExt << 32`, the layout of the
//! Intel uncore counter-control registers (`ExtSel` is the event-select
//! extension bit 21 of Jaketown/Ivytown/Haswell-EP boxes; `UMaskExt` holds
//! control-register bits 32 and up, which the kernel formats as `umask_ext`
//! on CHA/M2M/UPI and which already carry `ch_mask`/`fc_mask` in newer IIO
//! tables). The IIO port and function masks (`PortMask`, `FCMask`) are also
//! placed where the kernel's IIO format puts them: `ch_mask` at bit 36 and
//! `fc_mask` at bit 44 for Skylake-SP/Cascade Lake tables, at bit 48 for
//! every later one (the field grew to 12 bits with Ice Lake-SP). A CHA
//! `FILTER_VALUE` for filter 1 goes to `config1` bits 32–63 (filter 0: bits
//! 0–31), as the kernel splits the CHA filter MSRs. Free-running counters
//! have no event select: their PMU is `uncore_<unit>_free_running` and the
//! kernel's own sysfs alias should be used; they are marked in the notes.

use crate::tables::{DirFiles, TableFiles};
use crate::{Counters, EventDef, EventSource, LoadError, Precise, SourceKind};
use pmx_model::cpu::CpuId;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------
// mapfile.csv patterns

#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Char(char),
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Atom {
    fn matches(&self, c: char) -> bool {
        let c = c.to_ascii_uppercase();
        match self {
            Atom::Char(a) => a.to_ascii_uppercase() == c,
            Atom::Any => true,
            Atom::Class { negated, ranges } => {
                let hit = ranges.iter().any(|&(lo, hi)| {
                    let (lo, hi) = (lo.to_ascii_uppercase(), hi.to_ascii_uppercase());
                    lo <= c && c <= hi
                });
                hit != *negated
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

/// A `Family-model` pattern of `mapfile.csv`: the subset of POSIX extended
/// regular expressions the file uses — literal characters, `[...]` classes
/// (ranges `0-4`, negation `[^...]`), `.`, the quantifiers `?`, `*`, `+`,
/// `\` escapes and the anchors `^`/`$`. Matching is against the whole key
/// and ignores ASCII case (hex digits may be written either way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPattern {
    text: String,
    pieces: Vec<Piece>,
}

impl CpuPattern {
    /// Parse a pattern; groups, alternation and counted repetition are
    /// refused with a message (they do not occur in Intel's mapfile).
    pub fn parse(text: &str) -> Result<CpuPattern, String> {
        let chars: Vec<char> = text.trim().chars().collect();
        let mut pieces: Vec<Piece> = Vec::new();
        let mut i = 0;
        let mut quantifiable = false;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '^' if i == 0 => {
                    i += 1;
                    continue;
                }
                '$' if i + 1 == chars.len() => {
                    i += 1;
                    continue;
                }
                '?' | '*' | '+' => {
                    let last = match pieces.last_mut() {
                        Some(p) if quantifiable => p,
                        _ => return Err(format!("'{c}' at {i} follows nothing it can repeat")),
                    };
                    let (min, max) = match c {
                        '?' => (0, 1),
                        '*' => (0, usize::MAX),
                        _ => (1, usize::MAX),
                    };
                    last.min = min;
                    last.max = max;
                    quantifiable = false;
                    i += 1;
                    continue;
                }
                '(' | ')' | '|' | '{' | '}' => {
                    return Err(format!("'{c}' at {i} is not supported in CPU patterns"));
                }
                '\\' => {
                    let Some(&n) = chars.get(i + 1) else {
                        return Err("pattern ends with '\\'".to_string());
                    };
                    pieces.push(Piece {
                        atom: Atom::Char(n),
                        min: 1,
                        max: 1,
                    });
                    i += 2;
                }
                '.' => {
                    pieces.push(Piece {
                        atom: Atom::Any,
                        min: 1,
                        max: 1,
                    });
                    i += 1;
                }
                '[' => {
                    let (atom, next) = parse_class(&chars, i)?;
                    pieces.push(Piece {
                        atom,
                        min: 1,
                        max: 1,
                    });
                    i = next;
                }
                _ => {
                    pieces.push(Piece {
                        atom: Atom::Char(c),
                        min: 1,
                        max: 1,
                    });
                    i += 1;
                }
            }
            quantifiable = true;
        }
        Ok(CpuPattern {
            text: text.trim().to_string(),
            pieces,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Does the pattern match all of `key`?
    pub fn matches(&self, key: &str) -> bool {
        let key: Vec<char> = key.trim().chars().collect();
        match_pieces(&self.pieces, &key)
    }

    /// Does the pattern select `cpu`: its key with the stepping or, as a
    /// fallback, without it (model-only rows apply to every stepping).
    pub fn matches_cpu(&self, cpu: &CpuId) -> bool {
        self.matches(&cpu.to_string())
            || (cpu.stepping.is_some() && self.matches(&cpu.without_stepping().to_string()))
    }
}

impl fmt::Display for CpuPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_class(chars: &[char], open: usize) -> Result<(Atom, usize), String> {
    let mut i = open + 1;
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(format!("'[' at {open} is never closed"));
        };
        if c == ']' && !first {
            return Ok((Atom::Class { negated, ranges }, i + 1));
        }
        first = false;
        let lo = if c == '\\' {
            i += 1;
            *chars
                .get(i)
                .ok_or_else(|| "pattern ends inside a class".to_string())?
        } else {
            c
        };
        i += 1;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&n| n != ']') {
            let hi = chars[i + 1];
            if hi < lo {
                return Err(format!("range {lo}-{hi} is backwards"));
            }
            ranges.push((lo, hi));
            i += 2;
        } else {
            ranges.push((lo, lo));
        }
    }
}

fn match_pieces(pieces: &[Piece], s: &[char]) -> bool {
    let Some((p, rest)) = pieces.split_first() else {
        return s.is_empty();
    };
    // Longest run of characters this piece can take.
    let mut run = 0;
    while run < p.max && run < s.len() && p.atom.matches(s[run]) {
        run += 1;
    }
    if run < p.min {
        return false;
    }
    (p.min..=run).rev().any(|n| match_pieces(rest, &s[n..]))
}

// ---------------------------------------------------------------------------
// mapfile.csv rows

/// What a file listed in `mapfile.csv` holds (its `EventType` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileRole {
    /// Core events (`core`, `hybridcore`).
    Core,
    /// `FP_ARITH_INST_RETIRED` unit-mask bits (`fp_arith_inst`).
    FpArith,
    /// Offcore-response request/response bits (`offcore`, `*_matrix.json`).
    Offcore,
    /// Uncore events (`uncore`).
    Uncore,
    /// Uncore events Intel has not validated (`uncore experimental`).
    UncoreExperimental,
    /// Metric tables (`metrics`): not an event source.
    Metrics,
    /// Anything else (`retire latency`, future types): not read.
    Other,
}

impl FileRole {
    /// The role for an `EventType` value (case-insensitive).
    pub fn from_event_type(s: &str) -> FileRole {
        match s.trim().to_ascii_lowercase().as_str() {
            "core" | "hybridcore" => FileRole::Core,
            "fp_arith_inst" => FileRole::FpArith,
            "offcore" => FileRole::Offcore,
            "uncore" => FileRole::Uncore,
            "uncore experimental" | "uncore_experimental" => FileRole::UncoreExperimental,
            "metrics" => FileRole::Metrics,
            _ => FileRole::Other,
        }
    }

    /// Does [`IntelJson::load`] read files of this role?
    pub fn is_loaded(self) -> bool {
        !matches!(self, FileRole::Metrics | FileRole::Other)
    }
}

/// One row of `mapfile.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRow {
    /// `Family-model`: the CPU pattern.
    pub family_model: String,
    /// `Version` of the file (`V1.37`).
    pub version: String,
    /// `Filename`, relative to the directory of `mapfile.csv`
    /// (`/SKX/events/skylakex_core.json`).
    pub filename: String,
    /// `EventType` (`core`, `hybridcore`, `uncore`, …).
    pub event_type: String,
    /// `Core Type` (`0x20` Atom, `0x40` Core on hybrid parts; empty otherwise).
    pub core_type: String,
    /// `Native Model ID`.
    pub native_model_id: String,
    /// `Core Role Name` (`Core`, `Atom`, `LowPower_Atom`).
    pub core_role: String,
}

impl MapRow {
    /// What the file holds.
    pub fn role(&self) -> FileRole {
        FileRole::from_event_type(&self.event_type)
    }

    /// The core PMU for a core file: `cpu`, or `cpu_core`/`cpu_atom`/
    /// `cpu_lowpower` for a hybrid part's per-core-type files. `None` for
    /// files that are not core event files.
    pub fn core_pmu(&self) -> Option<String> {
        if self.role() != FileRole::Core {
            return None;
        }
        let hybrid = self.event_type.trim().eq_ignore_ascii_case("hybridcore")
            || !self.core_role.trim().is_empty()
            || !self.core_type.trim().is_empty();
        if !hybrid {
            return Some("cpu".to_string());
        }
        // Prefer the role name; the brief form of the Core Type column may
        // also be a name, else Intel's CPUID.1A core-type code.
        for text in [self.core_role.trim(), self.core_type.trim()] {
            match text.to_ascii_lowercase().as_str() {
                "" => continue,
                "core" | "0x40" => return Some("cpu_core".to_string()),
                "atom" | "0x20" => return Some("cpu_atom".to_string()),
                "lowpower_atom" | "lowpower" => return Some("cpu_lowpower".to_string()),
                other if !other.starts_with("0x") => {
                    let clean: String = other
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                        .collect();
                    return Some(format!("cpu_{clean}"));
                }
                _ => continue,
            }
        }
        Some("cpu".to_string())
    }

    /// The file name without the leading `/`.
    pub fn relative_path(&self) -> &str {
        self.filename.trim().trim_start_matches(['/', '\\'])
    }
}

/// `mapfile.csv`: which files describe which CPU.
#[derive(Debug, Clone)]
pub struct Mapfile {
    path: PathBuf,
    rows: Vec<MapRow>,
    patterns: Vec<Result<CpuPattern, String>>,
}

impl Mapfile {
    /// Read `dir/mapfile.csv`.
    pub fn read(dir: &Path) -> Result<Mapfile, LoadError> {
        let path = dir.join("mapfile.csv");
        let text = std::fs::read(&path).map_err(|e| LoadError::Io {
            path: path.clone(),
            source: e,
        })?;
        let text = String::from_utf8_lossy(&text);
        Mapfile::parse(&text, &path)
    }

    /// The `mapfile.csv` of a built-in bundle ([`crate::tables`]).
    pub fn of_bundle(bundle: &crate::tables::Bundle) -> Result<Mapfile, LoadError> {
        Mapfile::parse(bundle.mapfile_text(), &bundle.display_path("mapfile.csv"))
    }

    /// Parse the text of a mapfile (`path` is used in messages). The header
    /// row names the columns; `Family-model`, `Filename` and `EventType`
    /// are required, the others may be missing.
    pub fn parse(text: &str, path: &Path) -> Result<Mapfile, LoadError> {
        let bad = |message: String| LoadError::Format {
            path: path.to_path_buf(),
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, header)) = lines.next() else {
            return Err(bad("empty mapfile".to_string()));
        };
        let header: Vec<String> = split_csv(header)
            .into_iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        let col = |name: &str| header.iter().position(|h| h == name);
        let (Some(c_fm), Some(c_file), Some(c_type)) =
            (col("family-model"), col("filename"), col("eventtype"))
        else {
            return Err(bad(format!(
                "header lacks Family-model, Filename or EventType columns: {}",
                header.join(",")
            )));
        };
        let c_ver = col("version");
        let c_core = col("core type");
        let c_native = col("native model id");
        let c_role = col("core role name");
        let mut rows = Vec::new();
        let mut patterns = Vec::new();
        for (n, line) in lines {
            let f = split_csv(line);
            let get = |c: Option<usize>| {
                c.and_then(|c| f.get(c))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            };
            let row = MapRow {
                family_model: get(Some(c_fm)),
                version: get(c_ver),
                filename: get(Some(c_file)),
                event_type: get(Some(c_type)),
                core_type: get(c_core),
                native_model_id: get(c_native),
                core_role: get(c_role),
            };
            if row.family_model.is_empty() || row.filename.is_empty() {
                return Err(bad(format!("line {}: no Family-model or Filename", n + 1)));
            }
            patterns.push(CpuPattern::parse(&row.family_model));
            rows.push(row);
        }
        Ok(Mapfile {
            path: path.to_path_buf(),
            rows,
            patterns,
        })
    }

    /// Where it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every row, in file order.
    pub fn rows(&self) -> &[MapRow] {
        &self.rows
    }

    /// The rows whose pattern selects `cpu`, in file order, each file once.
    /// Rows with a pattern [`CpuPattern`] cannot parse never match.
    pub fn select(&self, cpu: &CpuId) -> Vec<&MapRow> {
        let mut out: Vec<&MapRow> = Vec::new();
        for (row, pat) in self.rows.iter().zip(&self.patterns) {
            let Ok(pat) = pat else { continue };
            if pat.matches_cpu(cpu)
                && !out.iter().any(|r| {
                    r.relative_path() == row.relative_path() && r.core_pmu() == row.core_pmu()
                })
            {
                out.push(row);
            }
        }
        out
    }

    /// Patterns that would select `cpu` with some stepping 0–F (for a key
    /// given without the stepping, when only stepping-specific rows exist).
    pub fn stepping_candidates(&self, cpu: &CpuId) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in 0..16 {
            let c = CpuId {
                stepping: Some(s),
                ..cpu.clone()
            };
            for (row, pat) in self.rows.iter().zip(&self.patterns) {
                if let Ok(p) = pat {
                    if p.matches(&c.to_string()) && !out.contains(&row.family_model) {
                        out.push(row.family_model.clone());
                    }
                }
            }
        }
        out
    }

    /// Rows whose `Family-model` could not be parsed, with the reason.
    pub fn bad_patterns(&self) -> Vec<(&MapRow, &str)> {
        self.rows
            .iter()
            .zip(&self.patterns)
            .filter_map(|(r, p)| p.as_ref().err().map(|e| (r, e.as_str())))
            .collect()
    }
}

/// Split one CSV line (double quotes protect commas; `""` is a quote).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches(['\r', '\n']).chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

// ---------------------------------------------------------------------------
// JSON entries

/// A JSON scalar read as text: strings as they are, numbers and booleans
/// formatted, `null` and structured values as absent.
#[derive(Debug, Default, Clone)]
pub(crate) struct Text<'a>(Option<Cow<'a, str>>);

impl Text<'_> {
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    /// The value when it is meaningful (not `null`, `na`, `none`).
    fn meaningful(&self) -> Option<&str> {
        self.get()
            .filter(|s| !matches!(s.to_ascii_lowercase().as_str(), "null" | "na" | "none"))
    }
    pub(crate) fn num(&self) -> Option<u64> {
        self.get().and_then(parse_num)
    }
    pub(crate) fn flag(&self) -> bool {
        self.num().is_some_and(|v| v != 0)
    }
    fn list(&self) -> Vec<u64> {
        self.get()
            .map(|s| s.split(',').filter_map(parse_num).collect())
            .unwrap_or_default()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number, boolean or null")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text<'a>, E> {
                if v.fract() == 0.0 && v >= 0.0 && v < u64::MAX as f64 {
                    Ok(Text(Some(Cow::Owned((v as u64).to_string()))))
                } else {
                    Ok(Text(Some(Cow::Owned(v.to_string()))))
                }
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(if v { "1" } else { "0" }))))
            }
            fn visit_none<E: de::Error>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Text<'a>, D2::Error> {
                Text::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One object of a table's `Events` array: an event, an offcore matrix
/// bit, or an FP_ARITH bit. Unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawEntry<'a> {
    #[serde(rename = "EventName", borrow)]
    event_name: Text<'a>,
    #[serde(rename = "EventCode", borrow)]
    event_code: Text<'a>,
    #[serde(rename = "UMask", borrow)]
    umask: Text<'a>,
    #[serde(rename = "UMaskExt", borrow)]
    umask_ext: Text<'a>,
    #[serde(rename = "CounterMask", borrow)]
    counter_mask: Text<'a>,
    #[serde(rename = "Invert", borrow)]
    invert: Text<'a>,
    #[serde(rename = "EdgeDetect", borrow)]
    edge: Text<'a>,
    #[serde(rename = "AnyThread", borrow)]
    any_thread: Text<'a>,
    #[serde(rename = "Equal", borrow)]
    equal: Text<'a>,
    #[serde(rename = "MSRIndex", borrow)]
    msr_index: Text<'a>,
    #[serde(rename = "MSRValue", borrow)]
    msr_value: Text<'a>,
    #[serde(rename = "PEBS", borrow)]
    pebs: Text<'a>,
    #[serde(rename = "Precise", borrow)]
    precise: Text<'a>,
    #[serde(rename = "PDISTCounter", borrow)]
    pdist_counter: Text<'a>,
    #[serde(rename = "Data_LA", borrow)]
    data_la: Text<'a>,
    #[serde(rename = "L1_Hit_Indication", borrow)]
    l1_hit: Text<'a>,
    #[serde(rename = "TakenAlone", borrow)]
    taken_alone: Text<'a>,
    #[serde(rename = "Deprecated", borrow)]
    deprecated: Text<'a>,
    #[serde(rename = "Experimental", borrow)]
    experimental: Text<'a>,
    #[serde(rename = "BriefDescription", borrow)]
    brief: Text<'a>,
    #[serde(rename = "PublicDescription", borrow)]
    public: Text<'a>,
    #[serde(rename = "SampleAfterValue", borrow)]
    sample_after: Text<'a>,
    #[serde(rename = "Counter", borrow)]
    counter: Text<'a>,
    #[serde(rename = "CounterHTOff", borrow)]
    counter_ht_off: Text<'a>,
    #[serde(rename = "Errata", borrow)]
    errata: Text<'a>,
    #[serde(rename = "Unit", borrow)]
    unit: Text<'a>,
    #[serde(rename = "CounterType", borrow)]
    counter_type: Text<'a>,
    #[serde(rename = "PortMask", borrow)]
    port_mask: Text<'a>,
    #[serde(rename = "FCMask", borrow)]
    fc_mask: Text<'a>,
    #[serde(rename = "ExtSel", borrow)]
    ext_sel: Text<'a>,
    #[serde(rename = "Filter", borrow)]
    filter: Text<'a>,
    #[serde(rename = "FILTER_VALUE", borrow)]
    filter_value: Text<'a>,
    #[serde(rename = "MATRIX_REQUEST", borrow)]
    matrix_request: Text<'a>,
    #[serde(rename = "MATRIX_RESPONSE", borrow)]
    matrix_response: Text<'a>,
    #[serde(rename = "MATRIX_VALUE", borrow)]
    matrix_value: Text<'a>,
    #[serde(rename = "MATRIX_REGISTER", borrow)]
    matrix_register: Text<'a>,
    #[serde(rename = "DESCRIPTION", borrow)]
    matrix_description: Text<'a>,
    #[serde(rename = "BitName", borrow)]
    bit_name: Text<'a>,
    #[serde(rename = "BitIndex", borrow)]
    bit_index: Text<'a>,
    #[serde(rename = "FlopsMultiplier", borrow)]
    flops: Text<'a>,
    #[serde(rename = "Description", borrow)]
    description: Text<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawFile<'a> {
    #[serde(rename = "Header")]
    header: Option<serde_json::Value>,
    #[serde(rename = "Events", borrow)]
    events: Vec<RawEntry<'a>>,
}

/// Parse `0x2E`, `0XB7`, `46`, ` 0x0001 ` (surrounding blanks allowed).
fn parse_num(s: &str) -> Option<u64> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

// ---------------------------------------------------------------------------
// Parsed tables

/// One bit group of an offcore-response matrix (`*_matrix.json`): a request
/// type or a response type, and its value in the offcore-response MSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffcoreBit {
    /// The request type (`DEMAND_DATA_RD`), when this is a request row.
    pub request: Option<String>,
    /// The response type (`L3_HIT.ANY_RESPONSE`), when this is a response row.
    pub response: Option<String>,
    /// `MATRIX_VALUE` as Intel writes it: request bits as they are, response
    /// bits counted from MSR bit 16.
    pub value: u64,
    /// `MATRIX_REGISTER`: which offcore-response MSRs (0 = 0x1A6, 1 = 0x1A7).
    pub registers: String,
    /// Intel's description.
    pub description: String,
}

impl OffcoreBit {
    /// The bits this row sets in the offcore-response MSR (responses are
    /// shifted up to bit 16).
    pub fn msr_bits(&self) -> u64 {
        if self.request.is_some() {
            self.value
        } else {
            self.value << 16
        }
    }
}

/// One unit-mask bit of `FP_ARITH_INST_RETIRED` (`*_fp_arith_inst.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FpArithBit {
    /// `BitName` (`SCALAR_DOUBLE`, `512BIT_PACKED_SINGLE`).
    pub name: String,
    /// `BitIndex`: the unit-mask bit.
    pub bit: u8,
    /// `FlopsMultiplier`: floating-point operations per count.
    pub flops: u32,
    /// Intel's description.
    pub description: String,
}

/// Everything one JSON table holds.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The header's `Version`, when present.
    pub version: Option<String>,
    /// Events, in file order.
    pub events: Vec<EventDef>,
    /// Offcore matrix rows (matrix files only).
    pub offcore_bits: Vec<OffcoreBit>,
    /// FP_ARITH bits (`fp_arith_inst` files only).
    pub fp_arith_bits: Vec<FpArithBit>,
    /// Entries that could not be used, with the reason.
    pub skipped: Vec<String>,
}

/// How to read a table.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// PMU name for core events (`cpu`, `cpu_core`, `cpu_atom`, …).
    pub core_pmu: String,
    /// `EventDef::origin` of every event (default: the file's path).
    pub origin: Option<String>,
    /// The file is an `uncore experimental` table (noted on each event).
    pub experimental: bool,
}

impl Default for ParseOptions {
    fn default() -> ParseOptions {
        ParseOptions {
            core_pmu: "cpu".to_string(),
            origin: None,
            experimental: false,
        }
    }
}

/// Parse one events JSON file with the default options (core PMU `cpu`;
/// files whose name contains `experimental` are marked so) and return its
/// events. Matrix and FP_ARITH files yield no events.
pub fn parse_file(path: &Path) -> Result<Vec<EventDef>, LoadError> {
    let experimental = path.file_name().is_some_and(|n| {
        n.to_string_lossy()
            .to_ascii_lowercase()
            .contains("experimental")
    });
    parse_table(
        path,
        &ParseOptions {
            experimental,
            ..ParseOptions::default()
        },
    )
    .map(|t| t.events)
}

/// Read and parse one JSON table.
pub fn parse_table(path: &Path, opts: &ParseOptions) -> Result<Table, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let origin = opts
        .origin
        .clone()
        .unwrap_or_else(|| path.display().to_string());
    let opts = ParseOptions {
        origin: Some(origin),
        ..opts.clone()
    };
    parse_bytes(&bytes, &opts).map_err(|message| LoadError::Format {
        path: path.to_path_buf(),
        message,
    })
}

/// Parse the bytes of one JSON table: either `{"Header": …, "Events": […]}`
/// or a bare array of entries. Malformed JSON is an error; entries that are
/// not usable (no name, no event code) are listed in [`Table::skipped`].
pub fn parse_bytes(bytes: &[u8], opts: &ParseOptions) -> Result<Table, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let (header, entries) = match first {
        Some(b'{') => {
            let f: RawFile = serde_json::from_slice(bytes)
                .map_err(|e| format!("not an Intel event table: {e}"))?;
            (f.header, f.events)
        }
        Some(b'[') => {
            let v: Vec<RawEntry> = serde_json::from_slice(bytes)
                .map_err(|e| format!("not an Intel event table: {e}"))?;
            (None, v)
        }
        _ => return Err("not an Intel event table: expected a JSON object or array".to_string()),
    };
    let origin = opts.origin.as_deref().unwrap_or("");
    let mut table = Table {
        version: header
            .as_ref()
            .and_then(|h| h.get("Version"))
            .and_then(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            }),
        ..Table::default()
    };
    let iio_fc_shift = iio_fc_mask_shift(origin);
    for (i, e) in entries.iter().enumerate() {
        if let Some(name) = e.event_name.get() {
            let built = if e.unit.get().is_some() {
                uncore_event(e, name, origin, opts.experimental, iio_fc_shift)
            } else {
                core_event(e, name, &opts.core_pmu, origin)
            };
            match built {
                Ok(def) => table.events.push(def),
                Err(why) => table.skipped.push(format!("{name}: {why}")),
            }
        } else if e.matrix_request.get().is_some() || e.matrix_response.get().is_some() {
            match offcore_bit(e) {
                Some(b) => table.offcore_bits.push(b),
                None => table
                    .skipped
                    .push(format!("entry {i}: offcore matrix row without a value")),
            }
        } else if let Some(name) = e.bit_name.get() {
            match (e.bit_index.num(), e.flops.num()) {
                // Intel's Skylake-SP file repeats its first six bits.
                (Some(bit), _) if table.fp_arith_bits.iter().any(|b| u64::from(b.bit) == bit) => {}
                (Some(bit), flops) if bit < 64 => table.fp_arith_bits.push(FpArithBit {
                    name: name.to_string(),
                    bit: bit as u8,
                    flops: flops.and_then(|f| u32::try_from(f).ok()).unwrap_or(1),
                    description: e.description.get().unwrap_or_default().to_string(),
                }),
                _ => table
                    .skipped
                    .push(format!("{name}: FP_ARITH bit without a usable BitIndex")),
            }
        } else {
            table.skipped.push(format!("entry {i}: no EventName"));
        }
    }
    Ok(table)
}

fn offcore_bit(e: &RawEntry<'_>) -> Option<OffcoreBit> {
    let named = |t: &Text<'_>| t.meaningful().map(str::to_string);
    let request = named(&e.matrix_request);
    let response = if request.is_some() {
        None
    } else {
        named(&e.matrix_response)
    };
    if request.is_none() && response.is_none() {
        return None;
    }
    Some(OffcoreBit {
        request,
        response,
        value: e.matrix_value.num()?,
        registers: e.matrix_register.get().unwrap_or_default().to_string(),
        description: e.matrix_description.get().unwrap_or_default().to_string(),
    })
}

/// Where the IIO `fc_mask` field starts: bit 44 in the kernel's Skylake-SP
/// (and Cascade Lake) IIO format, bit 48 from Ice Lake-SP on.
fn iio_fc_mask_shift(origin: &str) -> u32 {
    let o = origin.to_ascii_lowercase();
    let file = o.rsplit(['/', '\\']).next().unwrap_or(&o);
    if file.starts_with("skylakex") || file.starts_with("cascadelakex") {
        44
    } else {
        48
    }
}

fn description(e: &RawEntry<'_>) -> String {
    let brief = e.brief.get().unwrap_or_default();
    match e.public.get() {
        Some(p) if !brief.is_empty() && p != brief => format!("{brief}\n{p}"),
        Some(p) if brief.is_empty() => p.to_string(),
        _ => brief.to_string(),
    }
}

fn hex_list(v: &[u64]) -> String {
    v.iter()
        .map(|x| format!("{x:#x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn core_event(e: &RawEntry<'_>, name: &str, pmu: &str, origin: &str) -> Result<EventDef, String> {
    let codes = e.event_code.list();
    let Some(&code) = codes.first() else {
        return Err(format!(
            "no usable EventCode ({:?})",
            e.event_code.get().unwrap_or("missing")
        ));
    };
    let mut d = EventDef::new(name, pmu, SourceKind::IntelJson, origin);
    d.perf_type = if pmu == "cpu" || pmu == "cpu_core" {
        Some(crate::perf_type::RAW)
    } else {
        None
    };
    if code > 0xff {
        d.notes.push(format!(
            "event code {code:#x} is wider than the 8-bit event select; bits above 7 dropped"
        ));
    }
    if codes.len() > 1 {
        d.notes.push(format!(
            "Intel lists event codes {}: pmx encodes the first; the others select the next auxiliary MSR of the pair",
            hex_list(&codes)
        ));
    }
    let umasks = e.umask.list();
    let umask = umasks.first().copied().unwrap_or(0);
    if umask > 0xff {
        d.notes.push(format!(
            "unit mask {umask:#x} is wider than 8 bits; bits above 7 dropped"
        ));
    }
    if umasks.len() > 1 {
        d.notes.push(format!(
            "Intel lists unit masks {}: pmx encodes the first",
            hex_list(&umasks)
        ));
    }
    let cmask = e.counter_mask.num().unwrap_or(0);
    if cmask > 0xff {
        d.notes.push(format!(
            "counter mask {cmask} is wider than 8 bits; bits above 7 dropped"
        ));
    }
    let umask2 = e.umask_ext.num().unwrap_or(0);
    if umask2 > 0xff {
        d.notes.push(format!(
            "UMaskExt {umask2:#x} is wider than the 8-bit UMASK2 field; bits above 7 dropped"
        ));
    }
    d.config = (code & 0xff)
        | (umask & 0xff) << 8
        | u64::from(e.edge.flag()) << 18
        | u64::from(e.any_thread.flag()) << 21
        | u64::from(e.invert.flag()) << 23
        | (cmask & 0xff) << 24
        | u64::from(e.equal.flag()) << 36
        | (umask2 & 0xff) << 40;

    let msrs: Vec<u64> = e.msr_index.list().into_iter().filter(|&m| m != 0).collect();
    if !msrs.is_empty() {
        d.config1 = e.msr_value.num().unwrap_or(0);
        let what = match msrs[0] {
            0x1a6 | 0x1a7 => "offcore response (MSR_OFFCORE_RSP_x, perf's offcore_rsp)",
            0x3f6 => "load-latency threshold (MSR_PEBS_LD_LAT_THRESHOLD, perf's ldlat)",
            0x3f7 => "frontend event selection (MSR_PEBS_FRONTEND, perf's frontend)",
            _ => "auxiliary MSR",
        };
        d.notes.push(format!(
            "config1 {:#x} goes to MSR {}: {what}",
            d.config1,
            hex_list(&msrs)
        ));
    }

    d.counters = match e.counter.get() {
        Some(c) => Counters::parse_intel(c),
        None => Counters::Unknown,
    };
    if let Counters::Fixed { index, .. } = d.counters {
        d.notes.push(format!(
            "counted by fixed counter {index}; config is Intel's pseudo-encoding for it (event {code:#04x}, umask {umask:#04x}), which only kernels that know it for this PMU place on that counter: the kernel's generic event (instructions, cycles, ref-cycles) works everywhere"
        ));
    }
    if let (Some(ht), Some(c)) = (e.counter_ht_off.get(), e.counter.get()) {
        if ht != c {
            d.notes.push(format!(
                "with Hyper-Threading off: {}",
                Counters::parse_intel(ht).describe()
            ));
        }
    }
    d.precise = precise(e);
    d.deprecated = e.deprecated.flag();
    d.sample_after = e.sample_after.num();
    d.description = description(e);
    if e.taken_alone.flag() {
        d.notes.push("Intel marks it TakenAlone: do not count it together with another event using the same auxiliary resource".to_string());
    }
    if e.data_la.flag() {
        d.notes
            .push("PEBS records carry the data linear address".to_string());
    }
    if e.l1_hit.flag() {
        d.notes
            .push("PEBS records carry an L1-hit indication".to_string());
    }
    if let Some(errata) = e.errata.meaningful().filter(|s| *s != "0") {
        d.notes.push(format!("errata: {errata}"));
    }
    if e.experimental.flag() {
        d.notes
            .push("experimental: not validated by Intel".to_string());
    }
    Ok(d)
}

fn precise(e: &RawEntry<'_>) -> Precise {
    if let Some(p) = e.pebs.num() {
        return match p {
            0 => Precise::No,
            n => Precise::Pebs(n.min(u8::MAX as u64) as u8),
        };
    }
    match e.precise.num() {
        Some(0) => Precise::No,
        Some(_) => {
            let pdist = e
                .pdist_counter
                .meaningful()
                .is_some_and(|s| s.split(',').any(|c| parse_num(c).is_some()));
            if pdist || e.data_la.flag() {
                Precise::Pebs(2)
            } else {
                Precise::Pebs(1)
            }
        }
        None => Precise::Unknown,
    }
}

/// Linux's PMU name (without the instance suffix) for an uncore `Unit` of
/// Intel's tables: `CHA` → `uncore_cha`, `iMC` → `uncore_imc`, `CBO` →
/// `uncore_cbox`, `QPI LL` → `uncore_qpi`, `UPI LL` → `uncore_upi`, `SBO` →
/// `uncore_sbox`, `NCU` → `uncore_clock`, `iMC_DCLK` → `uncore_imc`; any
/// other unit is lower-cased with blanks as `_`. Free-running counters live
/// on `<name>_free_running`.
pub fn uncore_pmu_name(unit: &str, free_running: bool) -> String {
    let lower = unit.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let box_name = match lower.as_str() {
        "cbo" => "cbox".to_string(),
        "hac_cbo" => "hac_cbox".to_string(),
        "qpi_ll" => "qpi".to_string(),
        "upi_ll" => "upi".to_string(),
        "sbo" => "sbox".to_string(),
        "ncu" => "clock".to_string(),
        "imc_dclk" => "imc".to_string(),
        _ => lower,
    };
    if free_running {
        format!("uncore_{box_name}_free_running")
    } else {
        format!("uncore_{box_name}")
    }
}

fn uncore_event(
    e: &RawEntry<'_>,
    name: &str,
    origin: &str,
    experimental: bool,
    iio_fc_shift: u32,
) -> Result<EventDef, String> {
    let unit = e.unit.get().unwrap_or_default();
    let kind = e
        .counter_type
        .get()
        .unwrap_or_default()
        .to_ascii_uppercase();
    let free_running = kind == "FREERUN";
    let pmu = uncore_pmu_name(unit, free_running);
    let mut d = EventDef::new(name, &pmu, SourceKind::IntelJson, origin);
    d.perf_type = None;
    d.counters = Counters::NotCore;
    d.precise = Precise::No;
    let codes = e.event_code.list();
    let code = match codes.first() {
        Some(&c) => c,
        None if free_running => 0,
        None => {
            return Err(format!(
                "no usable EventCode ({:?})",
                e.event_code.get().unwrap_or("missing")
            ))
        }
    };
    if codes.len() > 1 {
        d.notes.push(format!(
            "Intel lists event codes {}: pmx encodes the first",
            hex_list(&codes)
        ));
    }
    let umask = e.umask.list().first().copied().unwrap_or(0);
    let umask_ext = e.umask_ext.num().unwrap_or(0);
    let cmask = e.counter_mask.num().unwrap_or(0);
    let mut config = (code & 0xff)
        | (umask & 0xff) << 8
        | u64::from(e.edge.flag()) << 18
        | u64::from(e.ext_sel.flag()) << 21
        | u64::from(e.invert.flag()) << 23
        | (cmask & 0xff) << 24;
    if code > 0xff || umask > 0xff || cmask > 0xff {
        d.notes.push(
            "event code, unit mask or threshold wider than 8 bits: high bits dropped".to_string(),
        );
    }
    if umask_ext != 0 {
        config |= (umask_ext & 0xffff_ffff) << 32;
        d.notes.push(format!("UMaskExt {umask_ext:#x} is placed at config bits 32 and up (control register bits 32+, the kernel's umask_ext)"));
    }
    let ch_mask = e.port_mask.num().unwrap_or(0);
    let fc_mask = e.fc_mask.num().unwrap_or(0);
    if ch_mask != 0 || fc_mask != 0 {
        let ch_width = if iio_fc_shift == 44 { 0xff } else { 0xfff };
        config |= (ch_mask & ch_width) << 36 | (fc_mask & 0x7) << iio_fc_shift;
        d.notes.push(format!(
            "ch_mask {ch_mask:#x} at config bit 36, fc_mask {fc_mask:#x} at config bit {iio_fc_shift} (the kernel's IIO format)"
        ));
    }
    d.config = config;
    let filter = e.filter.meaningful();
    if let Some(fv) = e.filter_value.num().filter(|&v| v != 0) {
        let second = filter.is_some_and(|f| f.to_ascii_lowercase().contains("filter1"));
        d.config1 = if second { fv << 32 } else { fv };
        d.notes.push(format!(
            "FILTER_VALUE {fv:#x} for {}: config1 {:#x}",
            filter.unwrap_or("the box filter"),
            d.config1
        ));
    } else if let Some(f) = filter {
        d.notes.push(format!(
            "can be refined with the box filter {f} (set it with the PMU's filter terms)"
        ));
    }
    match kind.as_str() {
        "FREERUN" => d.notes.push(format!(
            "free-running counter {} of the box: no event select; use the kernel's alias on {pmu}",
            e.counter.get().unwrap_or("?")
        )),
        "FIXED" => d
            .notes
            .push("counted by the box's fixed counter".to_string()),
        _ if e
            .counter
            .get()
            .is_some_and(|c| c.eq_ignore_ascii_case("fixed")) =>
        {
            d.notes
                .push("counted by the box's fixed counter".to_string())
        }
        _ => {}
    }
    if let Some(c) = e.counter.get().filter(|c| !c.eq_ignore_ascii_case("fixed")) {
        if kind != "FREERUN" {
            d.notes.push(format!("box counters: {c}"));
        }
    }
    d.deprecated = e.deprecated.flag();
    d.sample_after = e.sample_after.num();
    d.description = description(e);
    if experimental || e.experimental.flag() {
        d.notes
            .push("from Intel's experimental uncore table: not validated by Intel".to_string());
    }
    Ok(d)
}

// ---------------------------------------------------------------------------
// The source

/// One file [`IntelJson`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedFile {
    /// Path relative to the events directory (`SKX/events/skylakex_core.json`).
    pub path: String,
    /// What it holds.
    pub role: FileRole,
    /// The mapfile's version (`V1.37`).
    pub version: String,
    /// The core PMU of a core file.
    pub pmu: Option<String>,
    /// How many events (or bits, for matrix and FP_ARITH files) it gave.
    pub entries: usize,
}

/// Intel's event tables for one CPU.
pub struct IntelJson {
    kind: SourceKind,
    provenance: String,
    cpu_key: String,
    files: Vec<LoadedFile>,
    events: Vec<EventDef>,
    index: HashMap<String, Vec<usize>>,
    offcore_bits: Vec<OffcoreBit>,
    fp_arith_bits: Vec<FpArithBit>,
    warnings: Vec<String>,
}

fn pmu_rank(pmu: Option<&str>) -> u8 {
    match pmu {
        Some("cpu") | Some("cpu_core") => 0,
        Some("cpu_atom") => 1,
        Some("cpu_lowpower") => 2,
        _ => 3,
    }
}

fn role_rank(role: FileRole) -> u8 {
    match role {
        FileRole::Core => 0,
        FileRole::FpArith => 1,
        FileRole::Offcore => 2,
        FileRole::Uncore => 3,
        FileRole::UncoreExperimental => 4,
        FileRole::Metrics | FileRole::Other => 5,
    }
}

impl IntelJson {
    /// Load the tables `mapfile.csv` in `dir` names for `cpu`: core files
    /// first (`cpu`/`cpu_core`, then `cpu_atom`, `cpu_lowpower`), then
    /// uncore, then experimental uncore. A core file that cannot be read is
    /// an error; any other unreadable file is skipped and reported by
    /// [`IntelJson::warnings`].
    pub fn load(dir: &Path, cpu: &CpuId) -> Result<IntelJson, LoadError> {
        let map = Mapfile::read(dir)?;
        let mut out = IntelJson::load_files(&DirFiles(dir), &map, cpu)?;
        out.provenance = format!("directory {}", dir.display());
        Ok(out)
    }

    /// Intel's tables built into pmx ([`crate::tables::intel`]) for `cpu`:
    /// the same loading as [`IntelJson::load`], its events of kind
    /// [`SourceKind::Builtin`] and without Intel's descriptions.
    pub fn built_in(cpu: &CpuId) -> Result<IntelJson, LoadError> {
        let bundle = crate::tables::intel().map_err(|e| LoadError::Format {
            path: PathBuf::from("built-in tables"),
            message: e.to_string(),
        })?;
        let mut out = IntelJson::load_files(bundle, &Mapfile::of_bundle(bundle)?, cpu)?;
        out.kind = SourceKind::Builtin;
        for e in &mut out.events {
            e.source = SourceKind::Builtin;
            // No description to show: `pmx list` shows the encoding.
            e.terms = e.terms.take().or_else(|| Some(encoding_terms(e)));
        }
        out.provenance = format!(
            "built in: intel/perfmon {}",
            crate::tables::short_commit(bundle.commit())
        );
        Ok(out)
    }

    /// Set where the tables were found, for [`EventSource::provenance`]
    /// (`cache /root/.cache/pmx/events`, `directory /opt/perfmon`).
    pub fn set_provenance(&mut self, text: String) {
        self.provenance = text;
    }

    /// Load the tables `map` names for `cpu` from `files` (a directory or
    /// a built-in bundle): [`IntelJson::load`]'s rules.
    pub fn load_files(
        files: &dyn TableFiles,
        map: &Mapfile,
        cpu: &CpuId,
    ) -> Result<IntelJson, LoadError> {
        let mut rows = map.select(cpu);
        if rows.is_empty() {
            let candidates = if cpu.stepping.is_none() {
                map.stepping_candidates(cpu)
            } else {
                Vec::new()
            };
            let message = if candidates.is_empty() {
                format!("no event tables for {cpu}")
            } else {
                format!(
                    "the tables for {cpu} depend on the stepping ({}): give the full key, e.g. {cpu}-{:X}",
                    candidates.join(", "),
                    first_stepping(map, cpu).unwrap_or(0)
                )
            };
            return Err(LoadError::Format {
                path: map.path().to_path_buf(),
                message,
            });
        }
        rows.sort_by_key(|r| (role_rank(r.role()), pmu_rank(r.core_pmu().as_deref())));

        let mut out = IntelJson {
            kind: SourceKind::IntelJson,
            provenance: String::new(),
            cpu_key: cpu.to_string(),
            files: Vec::new(),
            events: Vec::new(),
            index: HashMap::new(),
            offcore_bits: Vec::new(),
            fp_arith_bits: Vec::new(),
            warnings: Vec::new(),
        };
        let jobs: Vec<(&MapRow, String, ParseOptions)> = rows
            .into_iter()
            .filter(|r| r.role().is_loaded())
            .map(|row| {
                let rel = row.relative_path().to_string();
                let opts = ParseOptions {
                    core_pmu: row.core_pmu().unwrap_or_else(|| "cpu".to_string()),
                    origin: Some(rel.clone()),
                    experimental: row.role() == FileRole::UncoreExperimental,
                };
                (row, rel, opts)
            })
            .collect();
        // The files are independent: parse them side by side.
        let results: Vec<Result<Table, LoadError>> = std::thread::scope(|s| {
            // A file whose thread cannot be started is parsed here instead.
            let handles: Vec<_> = jobs
                .iter()
                .map(|(_, rel, opts)| {
                    std::thread::Builder::new()
                        .name("pmx-intel-json".to_string())
                        .spawn_scoped(s, move || parse_in(files, rel, opts))
                        .ok()
                })
                .collect();
            handles
                .into_iter()
                .zip(&jobs)
                .map(|(h, (_, rel, opts))| match h {
                    Some(h) => h.join().unwrap_or_else(|_| {
                        Err(LoadError::Format {
                            path: files.display_path(rel),
                            message: "the parser panicked".to_string(),
                        })
                    }),
                    None => parse_in(files, rel, opts),
                })
                .collect()
        });
        for ((row, rel, _), result) in jobs.into_iter().zip(results) {
            let role = row.role();
            let table = match result {
                Ok(t) => t,
                Err(e) if role == FileRole::Core => return Err(e),
                Err(e) => {
                    out.warnings.push(format!("skipped: {e}"));
                    continue;
                }
            };
            out.warnings.extend(crate::skipped_warning(
                &rel,
                &table.skipped,
                "not understood",
            ));
            let entries = table.events.len() + table.offcore_bits.len() + table.fp_arith_bits.len();
            out.events.extend(table.events);
            out.offcore_bits.extend(table.offcore_bits);
            out.fp_arith_bits.extend(table.fp_arith_bits);
            out.files.push(LoadedFile {
                path: rel,
                role,
                version: row.version.clone(),
                pmu: row.core_pmu(),
                entries,
            });
        }
        for (row, why) in map.bad_patterns() {
            out.warnings.push(format!(
                "mapfile.csv: pattern {:?} ignored: {why}",
                row.family_model
            ));
        }
        out.build_index();
        Ok(out)
    }

    fn build_index(&mut self) {
        self.index.clear();
        self.index.reserve(self.events.len());
        for (i, e) in self.events.iter().enumerate() {
            self.index
                .entry(crate::name_key(&e.name))
                .or_default()
                .push(i);
        }
    }

    /// The CPU key the tables were chosen for.
    pub fn cpu_key(&self) -> &str {
        &self.cpu_key
    }

    /// The files read, in load order.
    pub fn files(&self) -> &[LoadedFile] {
        &self.files
    }

    /// Files skipped and entries not understood.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many events were loaded.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when no event was loaded.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The loaded events, without copying them.
    pub fn events_ref(&self) -> &[EventDef] {
        &self.events
    }

    /// The offcore-response matrix rows (older cores only).
    pub fn offcore_bits(&self) -> &[OffcoreBit] {
        &self.offcore_bits
    }

    /// The offcore-response MSR value for a request and a response type of
    /// the matrix (`DEMAND_DATA_RD`, `L3_HIT.NO_SNOOP_NEEDED`), matched
    /// case-insensitively.
    pub fn offcore_value(&self, request: &str, response: &str) -> Option<u64> {
        let req = self.offcore_bits.iter().find(|b| {
            b.request
                .as_deref()
                .is_some_and(|r| r.eq_ignore_ascii_case(request))
        })?;
        let resp = self.offcore_bits.iter().find(|b| {
            b.response
                .as_deref()
                .is_some_and(|r| r.eq_ignore_ascii_case(response))
        })?;
        Some(req.msr_bits() | resp.msr_bits())
    }

    /// The FP_ARITH_INST_RETIRED bits with their FLOP multipliers.
    pub fn fp_arith_bits(&self) -> &[FpArithBit] {
        &self.fp_arith_bits
    }

    /// Every definition of `name`: on hybrid parts one per core PMU. The
    /// name may carry a PMU (`cpu_atom/INST_RETIRED.ANY/`), which keeps
    /// only that PMU's definition (an uncore PMU may carry its instance
    /// suffix: `uncore_cha_0/…/`).
    pub fn find_all(&self, name: &str) -> Vec<EventDef> {
        self.lookup(name).map(|i| self.events[i].clone()).collect()
    }

    fn lookup<'a>(&'a self, name: &str) -> impl Iterator<Item = usize> + 'a {
        let t = name.trim();
        let (pmu, ev) = match t.split_once('/') {
            Some((p, rest)) => (
                Some(p.trim().to_ascii_lowercase()),
                rest.trim_end_matches('/'),
            ),
            None => (None, t),
        };
        let hits: &[usize] = self
            .index
            .get(&crate::name_key(ev))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        hits.iter().copied().filter(move |&i| match &pmu {
            None => true,
            Some(p) => {
                let have = &self.events[i].pmu;
                have == p || strip_instance(p) == have
            }
        })
    }
}

/// An event's encoding as perf's terms: `event=0xd1,umask=0x20` and the
/// other fields set (`cmask=1`, `inv`, `edge`, `any`, `config1=0x…`) for a
/// core event, the config words for another PMU's.
fn encoding_terms(e: &EventDef) -> String {
    let c = e.config;
    let mut t = Vec::new();
    if e.is_core() {
        t.push(format!("event={:#x}", c & 0xff));
        t.push(format!("umask={:#x}", (c >> 8) & 0xff));
        for (bit, name) in [(18, "edge"), (21, "any"), (23, "inv")] {
            if c >> bit & 1 == 1 {
                t.push(name.to_string());
            }
        }
        if (c >> 24) & 0xff != 0 {
            t.push(format!("cmask={:#x}", (c >> 24) & 0xff));
        }
        if c >> 32 != 0 {
            t.push(format!("config={c:#x}"));
        }
    } else {
        t.push(format!("config={c:#x}"));
    }
    if e.config1 != 0 {
        t.push(format!("config1={:#x}", e.config1));
    }
    if e.config2 != 0 {
        t.push(format!("config2={:#x}", e.config2));
    }
    t.join(",")
}

/// Read and parse the table `rel` of `files`.
fn parse_in(files: &dyn TableFiles, rel: &str, opts: &ParseOptions) -> Result<Table, LoadError> {
    let bytes = files.read(rel)?;
    parse_bytes(&bytes, opts).map_err(|message| LoadError::Format {
        path: files.display_path(rel),
        message,
    })
}

fn first_stepping(map: &Mapfile, cpu: &CpuId) -> Option<u32> {
    (0..16).find(|&s| {
        !map.select(&CpuId {
            stepping: Some(s),
            ..cpu.clone()
        })
        .is_empty()
    })
}

/// `uncore_cha_12` → `uncore_cha`.
fn strip_instance(pmu: &str) -> &str {
    match pmu.rsplit_once('_') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => pmu,
    }
}

impl EventSource for IntelJson {
    fn kind(&self) -> SourceKind {
        self.kind
    }

    fn provenance(&self, def: &EventDef) -> Option<String> {
        let file = self.files.iter().find(|f| f.path == def.origin);
        Some(match file.map(|f| f.version.as_str()) {
            Some(v) if !v.is_empty() => format!("{}, {} {v}", self.provenance, def.origin),
            _ => format!("{}, {}", self.provenance, def.origin),
        })
    }

    fn describe(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                let what = match (f.role, &f.pmu) {
                    (FileRole::Core, Some(p)) => format!("{p}, {} events", f.entries),
                    (FileRole::Offcore, _) => format!("{} offcore matrix rows", f.entries),
                    (FileRole::FpArith, _) => format!("{} FP_ARITH bits", f.entries),
                    _ => format!("{} events", f.entries),
                };
                if f.version.is_empty() {
                    format!("{} ({what})", f.path)
                } else {
                    format!("{} {} ({what})", f.path, f.version)
                }
            })
            .collect();
        let what = if self.kind == SourceKind::Builtin {
            "Intel perfmon tables built in (without descriptions: 'pmx events fetch' brings them)"
        } else {
            "Intel perfmon JSON"
        };
        let mut s = format!("{what} for {}: {}", self.cpu_key, files.join(", "));
        if !self.warnings.is_empty() {
            s.push_str(&format!(" [{} warning(s)]", self.warnings.len()));
        }
        s
    }

    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }

    fn find(&self, name: &str) -> Option<EventDef> {
        self.lookup(name).next().map(|i| self.events[i].clone())
    }

    fn names(&self) -> Vec<String> {
        self.events.iter().map(|e| e.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> CpuPattern {
        CpuPattern::parse(s).unwrap()
    }

    #[test]
    fn patterns() {
        assert!(pat("GenuineIntel-6-55-[01234]").matches("GenuineIntel-6-55-4"));
        assert!(!pat("GenuineIntel-6-55-[01234]").matches("GenuineIntel-6-55-7"));
        assert!(!pat("GenuineIntel-6-55-[01234]").matches("GenuineIntel-6-55"));
        assert!(pat("GenuineIntel-6-55-[56789ABCDEF]").matches("GenuineIntel-6-55-b"));
        assert!(pat("GenuineIntel-6-9[7A]").matches("GenuineIntel-6-9A"));
        assert!(!pat("GenuineIntel-6-9[7A]").matches("GenuineIntel-6-9B"));
        assert!(pat("GenuineIntel-6-5[^0-4]").matches("GenuineIntel-6-55"));
        assert!(!pat("GenuineIntel-6-5[^0-4]").matches("GenuineIntel-6-53"));
        assert!(pat("^GenuineIntel-6-8.$").matches("GenuineIntel-6-8F"));
        assert!(pat("GenuineIntel-6-8F-?[0-9A-F]*").matches("GenuineIntel-6-8F"));
        assert!(pat("GenuineIntel-6-8F-?[0-9A-F]*").matches("GenuineIntel-6-8F-3"));
        assert!(pat("GenuineIntel-6-[0-9]+").matches("GenuineIntel-6-55"));
        assert!(pat(r"GenuineIntel-6-5\.").matches("GenuineIntel-6-5."));
        assert!(pat("GenuineIntel-6-[]A]").matches("GenuineIntel-6-]"));
        for bad in [
            "GenuineIntel-6-(55|56)",
            "[abc",
            "*x",
            "a\\",
            "x{2}",
            "[z-a]",
        ] {
            assert!(CpuPattern::parse(bad).is_err(), "{bad}");
        }
        let skx: CpuId = "GenuineIntel-6-55-4".parse().unwrap();
        assert!(pat("GenuineIntel-6-55").matches_cpu(&skx));
        assert!(pat("GenuineIntel-6-55-[01234]").matches_cpu(&skx));
        assert!(!pat("GenuineIntel-6-5").matches_cpu(&skx));
    }

    #[test]
    fn csv_and_roles() {
        assert_eq!(
            split_csv(r#"a,"b,c",,"d""e""#),
            vec!["a", "b,c", "", "d\"e"]
        );
        let text =
            "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
                    GenuineIntel-6-9[7A],V1,/ADL/events/a_core.json,hybridcore,0x20,0x1,Atom\n\
                    GenuineIntel-6-9[7A],V1,/ADL/events/g_core.json,hybridcore,0x40,0x1,Core\n\
                    GenuineIntel-6-9[7A],V1,/ADL/events/u.json,uncore,,,\n";
        let m = Mapfile::parse(text, Path::new("mapfile.csv")).unwrap();
        let cpu: CpuId = "GenuineIntel-6-9A-3".parse().unwrap();
        let rows = m.select(&cpu);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].core_pmu().as_deref(), Some("cpu_atom"));
        assert_eq!(rows[1].core_pmu().as_deref(), Some("cpu_core"));
        assert_eq!(rows[2].core_pmu(), None);
        assert_eq!(rows[2].role(), FileRole::Uncore);
        assert_eq!(rows[0].relative_path(), "ADL/events/a_core.json");
        assert!(Mapfile::parse("", Path::new("m")).is_err());
        assert!(Mapfile::parse("a,b\n", Path::new("m")).is_err());
    }

    #[test]
    fn core_encoding() {
        let json = br#"{"Header": {"Version": "1.0"}, "Events": [
            {"EventCode": "0x2E", "UMask": "0x41", "EventName": "LONGEST_LAT_CACHE.MISS",
             "Counter": "0,1,2,3", "SampleAfterValue": "100003", "PEBS": "0"},
            {"EventCode": "0xB7, 0xBB", "UMask": "0x01", "EventName": "OFFCORE_RESPONSE.X",
             "MSRIndex": "0x1a6,0x1a7", "MSRValue": "0x3F803C0001", "Counter": "0,1,2,3"},
            {"EventCode": 163, "UMask": 20, "CounterMask": 20, "Invert": 1, "EdgeDetect": true,
             "AnyThread": "1", "EventName": "X.Y", "UMaskExt": "0x3", "Equal": "1"},
            {"EventCode": "0x00", "UMask": "0x03", "EventName": "CPU_CLK_UNHALTED.REF_TSC",
             "Counter": "Fixed counter 2", "Precise": "0"},
            {"EventCode": "0xcd", "UMask": "0x01", "EventName": "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4",
             "MSRIndex": "0x3F6", "MSRValue": "0x4", "Precise": "1", "Data_LA": "1"},
            {"EventName": "NO.CODE"},
            {"UMask": "0x1"}
        ]}"#;
        let t = parse_bytes(json, &ParseOptions::default()).unwrap();
        assert_eq!(t.version.as_deref(), Some("1.0"));
        assert_eq!(t.events.len(), 5);
        assert_eq!(t.skipped.len(), 2);
        let e = &t.events;
        assert_eq!(e[0].config, 0x412e);
        assert_eq!(
            e[0].counters,
            Counters::Gp {
                list: vec![0, 1, 2, 3]
            }
        );
        assert_eq!(e[0].precise, Precise::No);
        assert_eq!(e[0].sample_after, Some(100003));
        assert_eq!(e[0].perf_type, Some(4));
        assert_eq!((e[1].config, e[1].config1), (0x1b7, 0x3F803C0001));
        assert!(e[1].notes.iter().any(|n| n.contains("0xbb")));
        assert_eq!(
            e[2].config,
            0xa3 | 0x14 << 8 | 1 << 18 | 1 << 21 | 1 << 23 | 20 << 24 | 1 << 36 | 3 << 40
        );
        assert_eq!(e[3].config, 0x300);
        assert_eq!(
            e[3].counters,
            Counters::Fixed {
                index: 2,
                gp: vec![]
            }
        );
        assert_eq!(
            (e[4].config, e[4].config1, e[4].precise),
            (0x1cd, 4, Precise::Pebs(2))
        );
    }

    #[test]
    fn uncore_encoding() {
        let json = br#"[
            {"Unit": "CHA", "EventCode": "0x35", "UMask": "0x01", "UMaskExt": "0x0C001FFE",
             "EventName": "UNC_CHA_TOR_INSERTS.IA", "Counter": "0,1,2,3"},
            {"Unit": "IIO", "EventCode": "0x83", "UMask": "0x04", "PortMask": "0x01", "FCMask": "0x07",
             "EventName": "UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0"},
            {"Unit": "CHA", "EventCode": "0x34", "UMask": "0x21", "Filter": "Filter1",
             "FILTER_VALUE": "0x40033", "EventName": "UNC_CHA_LLC_LOOKUP.X"},
            {"Unit": "QPI LL", "EventCode": "0x02", "UMask": "0x08", "ExtSel": "1", "EventName": "UNC_Q_X"},
            {"Unit": "iMC", "EventCode": "0x00", "UMask": "0x00", "CounterType": "FREERUN",
             "Counter": "0", "EventName": "UNC_MC0_RDCAS_COUNT_FREERUN"}
        ]"#;
        let t = parse_bytes(json, &ParseOptions::default()).unwrap();
        let e = &t.events;
        assert_eq!(e[0].pmu, "uncore_cha");
        assert_eq!(e[0].config, 0x0C00_1FFE_0000_0135);
        assert_eq!(e[0].perf_type, None);
        assert_eq!(e[0].counters, Counters::NotCore);
        assert_eq!(e[1].config, 0x83 | 0x04 << 8 | 1 << 36 | 7 << 48);
        assert_eq!(e[2].config1, 0x40033 << 32);
        assert_eq!(
            (e[3].pmu.as_str(), e[3].config),
            ("uncore_qpi", 0x0802 | 1 << 21)
        );
        assert_eq!(e[4].pmu, "uncore_imc_free_running");
        let skx = ParseOptions {
            origin: Some("SKX/events/skylakex_uncore.json".into()),
            ..ParseOptions::default()
        };
        let t = parse_bytes(json, &skx).unwrap();
        assert_eq!(t.events[1].config, 0x83 | 0x04 << 8 | 1 << 36 | 7 << 44);
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let o = ParseOptions::default();
        for bad in [
            &b""[..],
            b"nope",
            b"{",
            b"[1, 2]",
            b"{\"Events\": 3}",
            b"{\"Events\": [{\"EventName\": \"A\", \"EventName\": \"B\"}]}",
            b"\xff\xfe",
        ] {
            assert!(
                parse_bytes(bad, &o).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // Odd but well-formed values are tolerated.
        let ok = br#"{"Events": [{"EventName": "A.B", "EventCode": "0xzz"},
                       {"EventName": "C.D", "EventCode": [1], "UMask": {"x": 1}},
                       {"EventName": "E.F", "EventCode": "0x10", "UMask": null, "Counter": "FIXED",
                        "CounterMask": "99999", "MSRIndex": "0x1a6", "MSRValue": "junk"}],
                       "Header": 7}"#;
        let t = parse_bytes(ok, &o).unwrap();
        assert_eq!(t.events.len(), 1);
        assert_eq!(t.skipped.len(), 2);
        assert_eq!(t.events[0].config, 0x10 | 0x9f << 24);
        assert_eq!(t.events[0].counters, Counters::Unknown);
    }

    #[test]
    fn matrix_and_fp_bits() {
        let json = br#"[
            {"MATRIX_REQUEST": "DEMAND_DATA_RD", "MATRIX_RESPONSE": "Null", "MATRIX_VALUE": "0x0001 ", "MATRIX_REGISTER": "0,1", "DESCRIPTION": "d"},
            {"MATRIX_REQUEST": "Null", "MATRIX_RESPONSE": "L3_HIT.NO_SNOOP_NEEDED", "MATRIX_VALUE": "0x01003c", "MATRIX_REGISTER": "0,1", "DESCRIPTION": "r"},
            {"BitName": "SCALAR_DOUBLE", "BitIndex": "0", "FlopsMultiplier": "1", "Description": "x"}
        ]"#;
        let t = parse_bytes(json, &ParseOptions::default()).unwrap();
        assert_eq!(t.offcore_bits.len(), 2);
        assert_eq!(
            t.offcore_bits[0].msr_bits() | t.offcore_bits[1].msr_bits(),
            0x1003C0001
        );
        assert_eq!(t.fp_arith_bits[0].bit, 0);
        assert!(t.skipped.is_empty());
    }

    #[test]
    fn uncore_names() {
        assert_eq!(uncore_pmu_name("CHA", false), "uncore_cha");
        assert_eq!(uncore_pmu_name("iMC", false), "uncore_imc");
        assert_eq!(uncore_pmu_name("CBO", false), "uncore_cbox");
        assert_eq!(uncore_pmu_name("UPI LL", false), "uncore_upi");
        assert_eq!(uncore_pmu_name("M2PCIe", false), "uncore_m2pcie");
        assert_eq!(uncore_pmu_name("IIO", true), "uncore_iio_free_running");
        assert_eq!(strip_instance("uncore_cha_12"), "uncore_cha");
        assert_eq!(strip_instance("cpu_core"), "cpu_core");
    }
}
