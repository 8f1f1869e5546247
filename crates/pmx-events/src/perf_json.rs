//! Linux perf's event tables (`tools/perf/pmu-events/arch/x86/` of the
//! kernel source): `mapfile.csv` plus one directory of JSON files per
//! microarchitecture (`amdzen1` … `amdzen5`). Read at run time from an
//! events directory, never compiled in.
//!
//! ## Layouts
//!
//! An events directory may hold Intel's layout (`mapfile.csv` naming
//! `/SKX/events/*.json` files), perf's (`x86/mapfile.csv` naming
//! directories: pmx's cache, or perf's `arch/` directory), or both;
//! [`layouts`] tells them apart by what the mapfiles list. A directory that
//! *is* perf's `x86/` (its `mapfile.csv` names directories) works too, as
//! does the `pmu-events/` directory above `arch/`.
//!
//! ## Choosing the tables
//!
//! `mapfile.csv` has the columns `Family-model, Version, Filename,
//! EventType`; `Family-model` is a POSIX extended regular expression over
//! perf's CPU key, family in decimal and model in upper-case hex without
//! leading zeros (`AuthenticAMD-26-2`). As perf does, a pattern with three
//! `-` must match the whole key with the stepping (`AuthenticAMD-26-2-1`),
//! any other must match the whole key without it; the first row that
//! matches wins ([`PerfMapfile::select`]).
//!
//! ## Encodings
//!
//! Core events (no `Unit`): PMU `cpu`, `attr.type` `PERF_TYPE_RAW`, and
//! `config = EventCode[7:0] | UMask << 8 | EdgeDetect << 18 | Invert << 23 |
//! CounterMask << 24 | EventCode[11:8] << 32` — AMD's `PERF_CTL` layout,
//! which is also perf's raw config on AMD.
//!
//! Uncore events name their unit, which perf maps to a PMU: `L3PMC` →
//! `amd_l3`, `DFPMC` → `amd_df`, `UMCPMC` → `amd_umc` (the kernel adds an
//! instance number, `amd_umc_0`). Their JSON fields are perf's format
//! terms (`EventCode` → `event`, `UMask` → `umask`, `EnAllCores` →
//! `enallcores`, `EnAllSlices` → `enallslices`, `SliceId` → `sliceid`,
//! `ThreadMask` → `threadmask`, `RdWrMask` → `rdwrmask`), placed by the
//! PMU's `format/*` in sysfs when this machine has the PMU, else by the
//! formats the kernel gives it for the family ([`kernel_format`]):
//! the data fabric's `event` is `config:0-7,32-37` and `umask`
//! `config:8-15,24-27` with PerfMonV2 (Zen 4 and 5), `config:0-7,32-35,59-60`
//! and `config:8-15` before; the L3's thread/slice fields moved with
//! family 19h. `attr.type` comes from sysfs at run time.

use crate::intel_json::Text;
use crate::{Counters, EventDef, EventSource, LoadError, Precise, SourceKind};
use pmx_model::cpu::CpuId;
use pmx_sys::pmu::{ConfigWord, FieldPlacement, KernelPmu};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where perf's x86 tables are looked for inside an events directory.
pub const X86_DIR: &str = "x86";

/// The kind of tables a directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Intel's perfmon repository: this directory has `mapfile.csv`.
    Intel(PathBuf),
    /// Linux perf's tables: this directory is perf's `x86/`.
    Perf(PathBuf),
}

/// The layouts `dir` holds, Intel's first: `dir/mapfile.csv` (Intel's when
/// it names `.json` files, perf's `x86/` when it names directories), then
/// `dir/x86/mapfile.csv`, `dir/arch/x86/mapfile.csv`.
pub fn layouts(dir: &Path) -> Vec<Layout> {
    let mut out = Vec::new();
    if let Some(intel) = mapfile_names_json(&dir.join("mapfile.csv")) {
        out.push(if intel {
            Layout::Intel(dir.to_path_buf())
        } else {
            Layout::Perf(dir.to_path_buf())
        });
    }
    for sub in [dir.join(X86_DIR), dir.join("arch").join(X86_DIR)] {
        if mapfile_names_json(&sub.join("mapfile.csv")) == Some(false) {
            out.push(Layout::Perf(sub));
        }
    }
    out
}

/// `Some(true)` when the mapfile's `Filename` column names `.json` files
/// (Intel's), `Some(false)` when it names directories (perf's), `None` when
/// there is no readable mapfile with rows.
fn mapfile_names_json(path: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()?
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let col = header.iter().position(|h| h == "filename")?;
    let mut any = false;
    for l in lines {
        let Some(f) = split_row(l).get(col).map(|s| s.trim().to_string()) else {
            continue;
        };
        if f.is_empty() {
            continue;
        }
        if f.to_ascii_lowercase().ends_with(".json") || f.contains('/') {
            return Some(true);
        }
        any = true;
    }
    any.then_some(false)
}

/// Split a mapfile row: perf's patterns hold commas only inside `(...)`,
/// `[...]` or `{...}`, so a comma at depth 0 separates columns.
fn split_row(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut paren, mut bracket, mut brace) = (0i32, 0i32, 0i32);
    let mut escaped = false;
    for c in line.trim_end_matches(['\r', '\n']).chars() {
        if escaped {
            cur.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '(' if bracket == 0 => paren += 1,
            ')' if bracket == 0 => paren -= 1,
            '[' => bracket += 1,
            ']' if bracket > 0 => bracket -= 1,
            '{' if bracket == 0 => brace += 1,
            '}' if bracket == 0 => brace -= 1,
            ',' if paren <= 0 && bracket == 0 && brace <= 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// One row of perf's `mapfile.csv`.
#[derive(Debug, Clone)]
pub struct PerfMapRow {
    /// The CPU pattern as written.
    pub family_model: String,
    /// `Version` (`v1`).
    pub version: String,
    /// The directory of the tables (`amdzen5`).
    pub dir: String,
    /// `EventType` (`core`).
    pub event_type: String,
    pattern: Result<regex::Regex, String>,
    full: bool,
}

impl PerfMapRow {
    /// Does this row select `cpu` (perf's rule, see the module page)?
    pub fn matches(&self, cpu: &CpuId) -> bool {
        let Ok(re) = &self.pattern else {
            return false;
        };
        if self.full {
            cpu.stepping.is_some() && re.is_match(&cpu.to_string())
        } else {
            re.is_match(&cpu.without_stepping().to_string())
        }
    }
}

/// perf's `x86/mapfile.csv`.
#[derive(Debug, Clone)]
pub struct PerfMapfile {
    path: PathBuf,
    rows: Vec<PerfMapRow>,
}

impl PerfMapfile {
    /// Read `x86_dir/mapfile.csv`.
    pub fn read(x86_dir: &Path) -> Result<PerfMapfile, LoadError> {
        let path = x86_dir.join("mapfile.csv");
        let text = std::fs::read(&path).map_err(|e| LoadError::Io {
            path: path.clone(),
            source: e,
        })?;
        PerfMapfile::parse(&String::from_utf8_lossy(&text), &path)
    }

    /// Parse the text of a mapfile (`path` for messages).
    pub fn parse(text: &str, path: &Path) -> Result<PerfMapfile, LoadError> {
        let bad = |message: String| LoadError::Format {
            path: path.to_path_buf(),
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let (_, header) = lines.next().ok_or_else(|| bad("empty mapfile".into()))?;
        let header: Vec<String> = header
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        let col = |n: &str| header.iter().position(|h| h == n);
        let (Some(c_fm), Some(c_file)) = (col("family-model"), col("filename")) else {
            return Err(bad(format!(
                "header lacks Family-model or Filename: {}",
                header.join(",")
            )));
        };
        let (c_ver, c_type) = (col("version"), col("eventtype"));
        let mut rows = Vec::new();
        for (n, line) in lines {
            let f = split_row(line);
            let get = |c: Option<usize>| {
                c.and_then(|c| f.get(c))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            };
            let family_model = get(Some(c_fm));
            let dir = get(Some(c_file));
            if family_model.is_empty() || dir.is_empty() {
                return Err(bad(format!("line {}: no Family-model or Filename", n + 1)));
            }
            let pattern = regex::Regex::new(&format!("^(?:{family_model})$"))
                .map_err(|e| format!("{family_model:?}: {e}"));
            let full = family_model.matches('-').count() == 3;
            rows.push(PerfMapRow {
                family_model,
                version: get(c_ver),
                dir,
                event_type: get(c_type),
                pattern,
                full,
            });
        }
        Ok(PerfMapfile {
            path: path.to_path_buf(),
            rows,
        })
    }

    /// Where it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every row.
    pub fn rows(&self) -> &[PerfMapRow] {
        &self.rows
    }

    /// The first `core` row that selects `cpu`.
    pub fn select(&self, cpu: &CpuId) -> Option<&PerfMapRow> {
        self.rows.iter().find(|r| {
            (r.event_type.is_empty() || r.event_type.eq_ignore_ascii_case("core")) && r.matches(cpu)
        })
    }

    /// Rows whose pattern is not a regular expression, with the reason.
    pub fn bad_patterns(&self) -> Vec<(&PerfMapRow, &str)> {
        self.rows
            .iter()
            .filter_map(|r| r.pattern.as_ref().err().map(|e| (r, e.as_str())))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Uncore PMUs and their formats

/// The kernel's PMU for a perf `Unit` (`L3PMC` → `amd_l3`).
pub fn unit_pmu(unit: &str) -> Option<&'static str> {
    match unit.trim().to_ascii_uppercase().as_str() {
        "L3PMC" => Some("amd_l3"),
        "DFPMC" => Some("amd_df"),
        "UMCPMC" => Some("amd_umc"),
        _ => None,
    }
}

/// The format the kernel (`arch/x86/events/amd/uncore.c`) gives an AMD
/// uncore PMU's `term` on a CPU of `family`; `perfmon_v2` for CPUs with
/// PerfMonV2 (Zen 4 and later). `None` for a term the PMU does not have.
pub fn kernel_format(pmu: &str, term: &str, family: u32, perfmon_v2: bool) -> Option<&'static str> {
    let f19 = family >= 0x19;
    Some(match (pmu, term) {
        ("amd_df", "event") if perfmon_v2 => "config:0-7,32-37",
        ("amd_df", "event") => "config:0-7,32-35,59-60",
        ("amd_df", "umask") if perfmon_v2 => "config:8-15,24-27",
        ("amd_df", "umask") => "config:8-15",
        ("amd_l3", "event") => "config:0-7",
        ("amd_l3", "umask") => "config:8-15",
        ("amd_l3", "slicemask") if !f19 => "config:48-51",
        ("amd_l3", "threadmask") if !f19 => "config:56-63",
        ("amd_l3", "coreid") if f19 => "config:42-44",
        ("amd_l3", "enallslices") if f19 => "config:46",
        ("amd_l3", "enallcores") if f19 => "config:47",
        ("amd_l3", "sliceid") if f19 => "config:48-50",
        ("amd_l3", "threadmask") if f19 => "config:56-57",
        ("amd_umc", "event") => "config:0-7",
        ("amd_umc", "rdwrmask") => "config:8-9",
        _ => return None,
    })
}

/// Where uncore terms go: this machine's sysfs formats when it has the PMU,
/// else the kernel's formats for the family.
#[derive(Debug, Clone, Default)]
pub struct UncoreFormats {
    /// This machine's AMD uncore PMUs (`amd_l3`, `amd_df`, `amd_umc_0` …).
    pub host: Vec<KernelPmu>,
}

impl UncoreFormats {
    fn placement(
        &self,
        pmu: &str,
        term: &str,
        family: u32,
        v2: bool,
    ) -> Option<(FieldPlacement, bool)> {
        let host = self.host.iter().find(|p| {
            p.name == pmu || p.name.strip_prefix(pmu).is_some_and(|s| s.starts_with('_'))
        });
        if let Some(p) = host {
            if let Some(f) = p.format_field(term).and_then(|f| f.placement.clone()) {
                return Some((f, true));
            }
        }
        kernel_format(pmu, term, family, v2)
            .and_then(|t| t.parse().ok())
            .map(|f| (f, false))
    }
}

// ---------------------------------------------------------------------------
// JSON entries

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawEntry<'a> {
    #[serde(rename = "EventName", borrow)]
    event_name: Text<'a>,
    #[serde(rename = "EventCode", borrow)]
    event_code: Text<'a>,
    #[serde(rename = "UMask", borrow)]
    umask: Text<'a>,
    #[serde(rename = "EdgeDetect", borrow)]
    edge: Text<'a>,
    #[serde(rename = "Invert", borrow)]
    invert: Text<'a>,
    #[serde(rename = "CounterMask", borrow)]
    cmask: Text<'a>,
    #[serde(rename = "Unit", borrow)]
    unit: Text<'a>,
    #[serde(rename = "PerPkg", borrow)]
    per_pkg: Text<'a>,
    #[serde(rename = "EnAllCores", borrow)]
    en_all_cores: Text<'a>,
    #[serde(rename = "EnAllSlices", borrow)]
    en_all_slices: Text<'a>,
    #[serde(rename = "SliceId", borrow)]
    slice_id: Text<'a>,
    #[serde(rename = "ThreadMask", borrow)]
    thread_mask: Text<'a>,
    #[serde(rename = "RdWrMask", borrow)]
    rdwr_mask: Text<'a>,
    #[serde(rename = "Deprecated", borrow)]
    deprecated: Text<'a>,
    #[serde(rename = "BriefDescription", borrow)]
    brief: Text<'a>,
    #[serde(rename = "PublicDescription", borrow)]
    public: Text<'a>,
    #[serde(rename = "SampleAfterValue", borrow)]
    sample_after: Text<'a>,
    #[serde(rename = "MetricName", borrow)]
    metric_name: Text<'a>,
}

/// What one file gave.
#[derive(Debug, Clone, Default)]
pub struct PerfTable {
    /// Events, in file order.
    pub events: Vec<EventDef>,
    /// How many metric entries the file holds (not read here).
    pub metrics: usize,
    /// Entries that could not be used, with the reason.
    pub skipped: Vec<String>,
}

/// How [`parse_bytes`] encodes uncore events.
#[derive(Debug, Clone)]
pub struct ParseContext<'a> {
    /// `EventDef::origin` (`amdzen5/load-store.json`).
    pub origin: String,
    /// The CPU family (decides the kernel's uncore formats).
    pub family: u32,
    /// The CPU has PerfMonV2 (the data fabric's wider fields).
    pub perfmon_v2: bool,
    /// Where uncore terms go.
    pub formats: &'a UncoreFormats,
}

/// Parse one JSON file of perf's tables: a list of events and metrics.
pub fn parse_bytes(bytes: &[u8], ctx: &ParseContext<'_>) -> Result<PerfTable, String> {
    let entries: Vec<RawEntry<'_>> =
        serde_json::from_slice(bytes).map_err(|e| format!("not a list of events: {e}"))?;
    let mut out = PerfTable::default();
    for (i, e) in entries.iter().enumerate() {
        if e.metric_name.get().is_some() {
            out.metrics += 1;
            continue;
        }
        let Some(name) = e.event_name.get() else {
            out.skipped.push(format!("entry {i}: no EventName"));
            continue;
        };
        match event(e, name, ctx) {
            Ok(d) => out.events.push(d),
            Err(why) => out.skipped.push(format!("{name}: {why}")),
        }
    }
    Ok(out)
}

fn description(e: &RawEntry<'_>) -> String {
    let brief = e.brief.get().unwrap_or_default();
    match e.public.get() {
        Some(p) if !brief.is_empty() && p != brief => format!("{brief}\n{p}"),
        Some(p) if brief.is_empty() => p.to_string(),
        _ => brief.to_string(),
    }
}

fn event(e: &RawEntry<'_>, name: &str, ctx: &ParseContext<'_>) -> Result<EventDef, String> {
    let code = e.event_code.num().ok_or_else(|| {
        format!(
            "no usable EventCode ({:?})",
            e.event_code.get().unwrap_or("missing")
        )
    })?;
    let unit = e.unit.get();
    let mut d = match unit {
        None => core_event(e, name, code, &ctx.origin)?,
        Some(u) => uncore_event(e, name, u, code, ctx)?,
    };
    d.description = description(e);
    d.deprecated = e.deprecated.flag();
    d.sample_after = e.sample_after.num();
    Ok(d)
}

fn core_event(e: &RawEntry<'_>, name: &str, code: u64, origin: &str) -> Result<EventDef, String> {
    let umask = e.umask.num().unwrap_or(0);
    let cmask = e.cmask.num().unwrap_or(0);
    if code > 0xfff {
        return Err(format!(
            "event code {code:#x} is wider than AMD's 12-bit event select"
        ));
    }
    if umask > 0xff {
        return Err(format!("unit mask {umask:#x} is wider than 8 bits"));
    }
    if cmask > 0xff {
        return Err(format!("counter mask {cmask} is wider than 8 bits"));
    }
    let mut d = EventDef::new(name, "cpu", SourceKind::PerfJson, origin);
    d.perf_type = Some(crate::perf_type::RAW);
    d.config = (code & 0xff)
        | umask << 8
        | u64::from(e.edge.flag()) << 18
        | u64::from(e.invert.flag()) << 23
        | cmask << 24
        | (code >> 8) << 32;
    d.counters = Counters::AnyGp;
    d.precise = Precise::No;
    let mut terms = vec![format!("event={code:#x}")];
    if e.umask.get().is_some() {
        terms.push(format!("umask={umask:#04x}"));
    }
    if e.edge.flag() {
        terms.push("edge=1".into());
    }
    if e.invert.flag() {
        terms.push("inv=1".into());
    }
    if cmask != 0 {
        terms.push(format!("cmask={cmask:#x}"));
    }
    d.terms = Some(terms.join(","));
    if code > 0xff {
        d.notes.push(format!(
            "event code {code:#x}: bits 11:8 ({:#x}) go to the extended event select, PERF_CTL bits 35:32",
            code >> 8
        ));
    }
    Ok(d)
}

fn uncore_event(
    e: &RawEntry<'_>,
    name: &str,
    unit: &str,
    code: u64,
    ctx: &ParseContext<'_>,
) -> Result<EventDef, String> {
    let pmu = unit_pmu(unit).ok_or_else(|| format!("unknown Unit {unit:?}"))?;
    let mut d = EventDef::new(name, pmu, SourceKind::PerfJson, &ctx.origin);
    d.perf_type = None;
    d.counters = Counters::NotCore;
    d.precise = Precise::No;
    let mut fields: Vec<(&str, u64)> = vec![("event", code)];
    for (term, v) in [
        ("umask", &e.umask),
        ("rdwrmask", &e.rdwr_mask),
        ("enallcores", &e.en_all_cores),
        ("enallslices", &e.en_all_slices),
        ("sliceid", &e.slice_id),
        ("threadmask", &e.thread_mask),
    ] {
        if let Some(n) = v.num() {
            fields.push((term, n));
        }
    }
    if e.edge.flag() || e.invert.flag() || e.cmask.num().is_some_and(|c| c != 0) {
        return Err(format!("{pmu} has no edge, invert or counter-mask field"));
    }
    let mut words = [0u64; 3];
    let mut from_sysfs = false;
    for (term, value) in &fields {
        let Some((placement, host)) = ctx.formats.placement(pmu, term, ctx.family, ctx.perfmon_v2)
        else {
            return Err(format!("{pmu} has no format field '{term}'"));
        };
        from_sysfs |= host;
        let bits = placement
            .place(*value)
            .ok_or_else(|| format!("{term}={value:#x} does not fit {placement}"))?;
        let idx = match placement.word {
            ConfigWord::Config => 0,
            ConfigWord::Config1 => 1,
            ConfigWord::Config2 | ConfigWord::Config3 => 2,
        };
        words[idx] |= bits;
    }
    [d.config, d.config1, d.config2] = words;
    d.terms = Some(
        fields
            .iter()
            .map(|(t, v)| format!("{t}={v:#04x}"))
            .collect::<Vec<_>>()
            .join(","),
    );
    d.notes.push(if from_sysfs {
        format!("placed by this machine's {pmu} format in sysfs")
    } else {
        format!(
            "placed by the kernel's {pmu} format for family {:#x}",
            ctx.family
        )
    });
    match pmu {
        "amd_l3" => d.notes.push(
            "counted by the L3 of each core complex (CCX), shared by its cores; \
             without a thread mask the kernel counts every core and slice"
                .into(),
        ),
        "amd_df" => d
            .notes
            .push("counted by the data fabric, one per package".into()),
        _ => d.notes.push(
            "counted by each memory controller (amd_umc_0, amd_umc_1, …), one set per package"
                .into(),
        ),
    }
    if e.per_pkg.flag() && pmu != "amd_df" {
        d.notes.push("perf counts it once per package".into());
    }
    Ok(d)
}

// ---------------------------------------------------------------------------
// The source

/// perf's tables for one CPU.
pub struct PerfJson {
    cpu_key: String,
    x86_dir: PathBuf,
    /// Where the tables were found, for [`EventSource::provenance`]:
    /// `directory` (given) or `cache` (pmx's, `pmx events fetch`'s).
    pub place: &'static str,
    table: String,
    version: String,
    files: Vec<(String, usize)>,
    events: Vec<EventDef>,
    index: HashMap<String, usize>,
    metrics: usize,
    warnings: Vec<String>,
}

impl PerfJson {
    /// Load the tables perf's `x86_dir/mapfile.csv` names for `cpu`: every
    /// `*.json` of the chosen directory, in name order. Uncore terms are
    /// placed by `formats`.
    pub fn load(
        x86_dir: &Path,
        cpu: &CpuId,
        formats: &UncoreFormats,
    ) -> Result<PerfJson, LoadError> {
        let map = PerfMapfile::read(x86_dir)?;
        let Some(row) = map.select(cpu) else {
            return Err(LoadError::Format {
                path: map.path().to_path_buf(),
                message: format!("no event tables for {cpu}"),
            });
        };
        let dir_name = crate::relative_path(&row.dir).map_err(|m| LoadError::Format {
            path: map.path().to_path_buf(),
            message: m,
        })?;
        let dir = x86_dir.join(&dir_name);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| LoadError::Io {
                path: dir.clone(),
                source: e,
            })?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        names.sort();
        let mut out = PerfJson {
            cpu_key: cpu.to_string(),
            x86_dir: x86_dir.to_path_buf(),
            place: "directory",
            table: dir_name.clone(),
            version: row.version.clone(),
            files: Vec::new(),
            events: Vec::new(),
            index: HashMap::new(),
            metrics: 0,
            warnings: Vec::new(),
        };
        for (r, why) in map.bad_patterns() {
            out.warnings.push(format!(
                "mapfile.csv: pattern {:?} ignored: {why}",
                r.family_model
            ));
        }
        let v2 = cpu.family >= 0x1a || (cpu.family == 0x19 && dir_name != "amdzen3");
        for n in names {
            let path = dir.join(&n);
            let bytes = std::fs::read(&path).map_err(|e| LoadError::Io {
                path: path.clone(),
                source: e,
            })?;
            let ctx = ParseContext {
                origin: format!("{dir_name}/{n}"),
                family: cpu.family,
                perfmon_v2: v2,
                formats,
            };
            let table = match parse_bytes(&bytes, &ctx) {
                Ok(t) => t,
                Err(m) => {
                    out.warnings.push(format!("{dir_name}/{n} skipped: {m}"));
                    continue;
                }
            };
            let file = format!("{dir_name}/{n}");
            out.warnings
                .extend(crate::skipped_warning(&file, &table.skipped, "not used"));
            out.metrics += table.metrics;
            out.files.push((n, table.events.len()));
            out.events.extend(table.events);
        }
        if out.events.is_empty() {
            return Err(LoadError::Format {
                path: dir,
                message: "no events in the tables".into(),
            });
        }
        for (i, e) in out.events.iter().enumerate() {
            out.index.entry(crate::name_key(&e.name)).or_insert(i);
        }
        Ok(out)
    }

    /// The directory chosen (`amdzen5`).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// perf's `x86/` directory the tables were read from.
    pub fn x86_dir(&self) -> &Path {
        &self.x86_dir
    }

    /// The files read and how many events each gave.
    pub fn files(&self) -> &[(String, usize)] {
        &self.files
    }

    /// Metric entries seen (read by `pmx-metrics`, not here).
    pub fn metric_entries(&self) -> usize {
        self.metrics
    }

    /// Entries and files not used, and why.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The loaded events, without copying them.
    pub fn events_ref(&self) -> &[EventDef] {
        &self.events
    }

    fn lookup(&self, name: &str) -> Option<&EventDef> {
        let t = name.trim();
        let (pmu, ev) = match t.split_once('/') {
            Some((p, rest)) => (
                Some(p.trim().to_ascii_lowercase()),
                rest.trim_end_matches('/'),
            ),
            None => (None, t),
        };
        let d = &self.events[*self.index.get(&crate::name_key(ev))?];
        match pmu {
            Some(p)
                if p != d.pmu
                    && !p
                        .strip_prefix(d.pmu.as_str())
                        .is_some_and(|s| s.starts_with('_')) =>
            {
                None
            }
            _ => Some(d),
        }
    }
}

impl EventSource for PerfJson {
    fn kind(&self) -> SourceKind {
        SourceKind::PerfJson
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "Linux perf's tables for {}: {}/{} {} ({} events in {} files)",
            self.cpu_key,
            self.x86_dir.display(),
            self.table,
            self.version,
            self.events.len(),
            self.files.len()
        );
        if !self.warnings.is_empty() {
            s.push_str(&format!(" [{} warning(s)]", self.warnings.len()));
        }
        s
    }

    fn provenance(&self, def: &EventDef) -> Option<String> {
        let dir = self.x86_dir.display();
        let place = self.place;
        Some(format!("{place} {dir}, {} {}", def.origin, self.version))
    }

    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }

    fn find(&self, name: &str) -> Option<EventDef> {
        self.lookup(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.events.iter().map(|e| e.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> CpuId {
        s.parse().unwrap()
    }

    const MAP: &str = "Family-model,Version,Filename,EventType\n\
        GenuineIntel-6-55-[01234],v1.3,skylakex,core\n\
        AuthenticAMD-23-([12][0-9A-F]|[0-9A-F]),v2,amdzen1,core\n\
        AuthenticAMD-23-[[:xdigit:]]+,v1,amdzen2,core\n\
        AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),v1,amdzen3,core\n\
        AuthenticAMD-25-[[:xdigit:]]+,v1,amdzen4,core\n\
        AuthenticAMD-26-[[:xdigit:]]+,v1,amdzen5,core\n";

    #[test]
    fn perf_rule_selects_the_first_matching_row() {
        let m = PerfMapfile::parse(MAP, Path::new("mapfile.csv")).unwrap();
        let pick = |k: &str| m.select(&key(k)).map(|r| r.dir.as_str());
        assert_eq!(pick("AuthenticAMD-26-2-1"), Some("amdzen5"));
        assert_eq!(pick("AuthenticAMD-26-2"), Some("amdzen5"));
        assert_eq!(pick("AuthenticAMD-23-1-2"), Some("amdzen1"));
        assert_eq!(pick("AuthenticAMD-23-2F-0"), Some("amdzen1"));
        assert_eq!(pick("AuthenticAMD-23-31-0"), Some("amdzen2"));
        assert_eq!(pick("AuthenticAMD-25-1-1"), Some("amdzen3"));
        assert_eq!(pick("AuthenticAMD-25-50-0"), Some("amdzen3"));
        assert_eq!(pick("AuthenticAMD-25-11-1"), Some("amdzen4"));
        assert_eq!(pick("AuthenticAMD-25-61-2"), Some("amdzen4"));
        // Full patterns need the stepping.
        assert_eq!(pick("GenuineIntel-6-55-4"), Some("skylakex"));
        assert_eq!(pick("GenuineIntel-6-55-7"), None);
        assert_eq!(pick("GenuineIntel-6-55"), None);
        assert_eq!(pick("AuthenticAMD-24-1-1"), None);
    }

    #[test]
    fn rows_split_outside_groups_and_bad_patterns_are_reported() {
        assert_eq!(
            split_row("a-(1|2),v1,d,core"),
            ["a-(1|2)", "v1", "d", "core"]
        );
        assert_eq!(split_row("a-[,],v1,d"), ["a-[,]", "v1", "d"]);
        let m = PerfMapfile::parse(
            "Family-model,Version,Filename,EventType\nAuthenticAMD-26-(,v1,x,core\n",
            Path::new("m"),
        );
        // An unclosed group swallows the rest: no Filename.
        assert!(m.is_err());
        let m = PerfMapfile::parse(
            "Family-model,Version,Filename,EventType\nAuthenticAMD-26-[z-a],v1,x,core\n",
            Path::new("m"),
        )
        .unwrap();
        assert_eq!(m.bad_patterns().len(), 1);
        assert!(m.select(&key("AuthenticAMD-26-2-1")).is_none());
        assert!(PerfMapfile::parse("", Path::new("m")).is_err());
        assert!(PerfMapfile::parse("x,y\n", Path::new("m")).is_err());
    }

    fn ctx(family: u32, v2: bool, formats: &UncoreFormats) -> ParseContext<'_> {
        ParseContext {
            origin: "t.json".into(),
            family,
            perfmon_v2: v2,
            formats,
        }
    }

    #[test]
    fn core_and_uncore_encodings() {
        let f = UncoreFormats::default();
        let json = br#"[
          {"EventName": "a", "EventCode": "0x4e1", "UMask": "0xf7"},
          {"EventName": "b", "EventCode": "0xc0", "EdgeDetect": "1", "Invert": "1", "CounterMask": "0x8"},
          {"EventName": "df", "EventCode": "0x7c7", "UMask": "0x7fe", "PerPkg": "1", "Unit": "DFPMC"},
          {"EventName": "l3", "EventCode": "0xac", "UMask": "0x01", "EnAllCores": "0x1",
           "EnAllSlices": "0x1", "SliceId": "0x3", "ThreadMask": "0x3", "Unit": "L3PMC"},
          {"EventName": "umc", "EventCode": "0x05", "RdWrMask": "0x2", "Unit": "UMCPMC"},
          {"MetricName": "m", "MetricExpr": "a / b"},
          {"EventName": "wide", "EventCode": "0x1000"},
          {"EventName": "odd", "EventCode": "0x1", "Unit": "XYZ"},
          {"BriefDescription": "nameless"}
        ]"#;
        let t = parse_bytes(json, &ctx(0x19, true, &f)).unwrap();
        assert_eq!(t.metrics, 1);
        assert_eq!(t.skipped.len(), 3, "{:?}", t.skipped);
        let e = &t.events;
        assert_eq!(e[0].config, 0x4_0000_f7e1);
        assert_eq!(e[0].terms.as_deref(), Some("event=0x4e1,umask=0xf7"));
        assert_eq!(e[1].config, 0xc0 | 1 << 18 | 1 << 23 | 8 << 24);
        assert_eq!(e[2].pmu, "amd_df");
        // PerfMonV2: event bits 11:8 at config 35:32, umask 11:8 at 27:24.
        assert_eq!(e[2].config, 0x7_0700_fec7);
        assert_eq!(e[3].pmu, "amd_l3");
        assert_eq!(
            e[3].config,
            0xac | 0x01 << 8 | 1 << 47 | 1 << 46 | 3 << 48 | 3 << 56
        );
        assert_eq!((e[4].pmu.as_str(), e[4].config), ("amd_umc", 0x205));
        // Before PerfMonV2 the data fabric's umask has 8 bits.
        let t = parse_bytes(json, &ctx(0x17, false, &f)).unwrap();
        assert!(
            t.skipped.iter().any(|s| s.starts_with("df: umask=0x7fe")),
            "{:?}",
            t.skipped
        );
        for bad in [&b""[..], b"{}", b"[1]", b"nope"] {
            assert!(parse_bytes(bad, &ctx(0x19, true, &f)).is_err());
        }
    }

    #[test]
    fn layouts_are_told_apart_by_content() {
        let base = std::env::temp_dir().join(format!("pmx-perf-layouts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("x86")).unwrap();
        std::fs::write(
            base.join("mapfile.csv"),
            "Family-model,Version,Filename,EventType\nGenuineIntel-6-55,V1,/SKX/events/a.json,core\n",
        )
        .unwrap();
        std::fs::write(base.join("x86/mapfile.csv"), MAP).unwrap();
        assert_eq!(
            layouts(&base),
            [Layout::Intel(base.clone()), Layout::Perf(base.join("x86"))]
        );
        assert_eq!(layouts(&base.join("x86")), [Layout::Perf(base.join("x86"))]);
        assert!(layouts(&base.join("nonexistent")).is_empty());
        let _ = std::fs::remove_dir_all(&base);
    }
}
