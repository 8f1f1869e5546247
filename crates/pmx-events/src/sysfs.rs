//! The kernel's own event aliases, from sysfs.
//!
//! Each PMU under `ROOT/sys/bus/event_source/devices/<pmu>/` has a `type`
//! (its `attr.type`), `format/*` (where each term goes, see
//! [`pmx_model::format`]) and `events/*` (aliases such as `cycles` →
//! `event=0x3c`, `tsc` → `event=0x00`, with optional `.scale` and `.unit`
//! companions). This source reads them all and places every alias through
//! its PMU's format, so `msr/tsc/` and `uncore_imc/cas_count_read/` resolve
//! to exact config words — only on the machine pmx runs on.

use crate::{Counters, EventDef, EventSource, Precise, Resolved, SourceKind};
use pmx_model::encoding::{is_core_pmu, PerfAttr};
use pmx_model::format::{ConfigWord, FormatField};
use pmx_model::spec::{closest, parse_spec, EventSpec, Span, SpecError, Term};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One PMU as sysfs describes it.
#[derive(Debug, Clone)]
pub struct SysfsPmu {
    /// Directory name (`cpu`, `msr`, `uncore_imc_0`).
    pub name: String,
    /// `attr.type`.
    pub perf_type: Option<u32>,
    /// Format fields by term name.
    pub formats: BTreeMap<String, FormatField>,
    /// Aliases: name → content (`event=0x3c`).
    pub aliases: BTreeMap<String, String>,
    /// `<alias>.scale` and `<alias>.unit` values.
    pub scales: BTreeMap<String, String>,
    /// `<alias>.unit` values.
    pub units: BTreeMap<String, String>,
    /// The directory.
    pub dir: PathBuf,
}

impl SysfsPmu {
    /// Place `terms` through this PMU's formats into config words.
    pub fn place(&self, text: &str, terms: &[Term]) -> Result<[u64; 3], SpecError> {
        let mut words = [0u64; 3];
        for t in terms {
            let key = t.key.as_str();
            let (word, v) = match key {
                "config" | "config1" | "config2" => {
                    let idx = match key {
                        "config" => 0,
                        "config1" => 1,
                        _ => 2,
                    };
                    (idx, t.number().unwrap_or(0))
                }
                _ => {
                    let Some(f) = self.formats.get(key) else {
                        let sugg = closest(key, self.formats.keys().map(|s| s.as_str()), 3);
                        return Err(SpecError::new(
                            text,
                            t.key_span,
                            format!("PMU '{}' has no term '{key}' (its format: {})", self.name, self.format_list()),
                        )
                        .with_suggestions(sugg));
                    };
                    let Some(n) = t.number() else {
                        return Err(SpecError::new(text, t.span, format!("'{key}' takes a number")));
                    };
                    let Some(bits) = f.place(n) else {
                        return Err(SpecError::new(
                            text,
                            t.span,
                            format!("{key} = {n:#x} does not fit {} (max {:#x})", f.describe(), f.max_value()),
                        ));
                    };
                    let idx = match f.word {
                        ConfigWord::Config => 0,
                        ConfigWord::Config1 => 1,
                        ConfigWord::Config2 | ConfigWord::Config3 => 2,
                    };
                    words[idx] = (words[idx] & !f.mask()) | bits;
                    continue;
                }
            };
            words[word] = v;
        }
        Ok(words)
    }

    fn format_list(&self) -> String {
        if self.formats.is_empty() {
            return "none".to_string();
        }
        self.formats.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

/// Every PMU's aliases on this machine.
pub struct SysfsEvents {
    root: PathBuf,
    pmus: Vec<SysfsPmu>,
    events: Vec<EventDef>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

impl SysfsEvents {
    /// Read every PMU under `root/sys/bus/event_source/devices`. Missing or
    /// unreadable pieces are skipped: a machine may expose few PMUs.
    pub fn load(root: &Path) -> SysfsEvents {
        let devices = root.join("sys/bus/event_source/devices");
        let mut pmus = Vec::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(&devices)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        for dir in names {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            let perf_type = read_trim(&dir.join("type")).and_then(|t| t.parse().ok());
            let mut formats = BTreeMap::new();
            if let Ok(rd) = std::fs::read_dir(dir.join("format")) {
                for e in rd.filter_map(|e| e.ok()) {
                    let fname = e.file_name().to_string_lossy().into_owned();
                    if let Some(text) = read_trim(&e.path()) {
                        if let Ok(f) = FormatField::parse(&fname, &text) {
                            formats.insert(fname, f);
                        }
                    }
                }
            }
            let mut aliases = BTreeMap::new();
            let mut scales = BTreeMap::new();
            let mut units = BTreeMap::new();
            if let Ok(rd) = std::fs::read_dir(dir.join("events")) {
                for e in rd.filter_map(|e| e.ok()) {
                    let fname = e.file_name().to_string_lossy().into_owned();
                    let Some(text) = read_trim(&e.path()) else { continue };
                    if let Some(base) = fname.strip_suffix(".scale") {
                        scales.insert(base.to_string(), text);
                    } else if let Some(base) = fname.strip_suffix(".unit") {
                        units.insert(base.to_string(), text);
                    } else if fname.ends_with(".per-pkg") || fname.ends_with(".snapshot") {
                        continue;
                    } else {
                        aliases.insert(fname, text);
                    }
                }
            }
            pmus.push(SysfsPmu { name, perf_type, formats, aliases, scales, units, dir });
        }
        // The core PMU first, so its aliases win ties.
        pmus.sort_by_key(|p| (!is_core_pmu(&p.name), p.name.clone()));
        let mut events = Vec::new();
        for p in &pmus {
            for (alias, content) in &p.aliases {
                if let Some(d) = alias_def(p, alias, content) {
                    events.push(d);
                }
            }
        }
        SysfsEvents { root: root.to_path_buf(), pmus, events }
    }

    /// The PMUs read.
    pub fn pmus(&self) -> &[SysfsPmu] {
        &self.pmus
    }

    /// A PMU by name.
    pub fn pmu(&self, name: &str) -> Option<&SysfsPmu> {
        self.pmus.iter().find(|p| p.name == name)
    }

    /// Resolve `pmu/terms/` for a PMU that is not the core one.
    pub fn place_spec(&self, spec: &EventSpec, pmu: &str) -> Option<Result<Resolved, SpecError>> {
        let p = self.pmu(pmu)?;
        Some(p.place(&spec.text, &spec.terms).map(|w| {
            let mut attr = PerfAttr {
                pmu: pmu.to_string(),
                type_: p.perf_type,
                config: w[0],
                config1: w[1],
                config2: w[2],
                ..PerfAttr::default()
            };
            attr.apply_modifiers(&spec.modifiers);
            Resolved { spec: spec.text.clone(), def: None, source: SourceKind::Sysfs, attr, register: None }
        }))
    }
}

fn alias_def(p: &SysfsPmu, alias: &str, content: &str) -> Option<EventDef> {
    let origin = p.dir.join("events").join(alias).display().to_string();
    let mut d = EventDef::new(alias, &p.name, SourceKind::Sysfs, &origin);
    d.perf_type = p.perf_type;
    d.counters = if is_core_pmu(&p.name) { Counters::Unknown } else { Counters::NotCore };
    d.precise = Precise::Unknown;
    d.description = format!("kernel alias {}/{alias}/ = {content}", p.name);
    // Parse the alias content as the terms of `pmu/…/`.
    let as_spec = format!("{}/{}/", p.name, content);
    match parse_spec(&as_spec) {
        Ok(spec) => match p.place(&as_spec, &spec.terms) {
            Ok(w) => {
                d.config = w[0];
                d.config1 = w[1];
                d.config2 = w[2];
            }
            Err(e) => d.notes.push(format!("could not place the alias: {}", e.message)),
        },
        Err(e) => d.notes.push(format!("could not parse the alias: {}", e.message)),
    }
    if let Some(s) = p.scales.get(alias) {
        d.notes.push(format!("scale {s}"));
    }
    if let Some(u) = p.units.get(alias) {
        d.notes.push(format!("unit {u}"));
    }
    Some(d)
}

impl EventSource for SysfsEvents {
    fn kind(&self) -> SourceKind {
        SourceKind::Sysfs
    }
    fn describe(&self) -> String {
        format!("{}", self.root.join("sys/bus/event_source/devices").display())
    }
    fn events(&self) -> Vec<EventDef> {
        self.events.clone()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        let n = name.trim();
        if let Some((pmu, alias)) = n.split_once('/') {
            return self
                .events
                .iter()
                .find(|e| e.pmu == pmu && e.name.eq_ignore_ascii_case(alias))
                .cloned();
        }
        self.events.iter().find(|e| e.name.eq_ignore_ascii_case(n)).cloned()
    }
    fn names(&self) -> Vec<String> {
        self.events.iter().map(|e| format!("{}/{}/", e.pmu, e.name)).collect()
    }
}

/// A span covering the whole of `text`.
pub fn whole(text: &str) -> Span {
    Span::new(0, text.len().max(1))
}
