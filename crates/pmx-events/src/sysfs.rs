//! The kernel's own event aliases, from sysfs.
//!
//! Each PMU under `ROOT/sys/bus/event_source/devices/<pmu>/` has a `type`
//! (its `attr.type`), `format/*` (where each term goes, see
//! [`pmx_sys::pmu`]) and `events/*` (aliases such as `cycles` →
//! `event=0x3c`, `tsc` → `event=0x00`, with optional `.scale` and `.unit`
//! companions). This source reads them all and places every alias through
//! its PMU's format, so `msr/tsc/` and `uncore_imc/cas_count_read/` resolve
//! to exact config words — only on the machine pmx runs on.
//!
//! A PMU the kernel registers only as numbered boxes (`uncore_imc_0` …
//! `uncore_imc_5`, `amd_umc_0` …) is named by its base as perf names it:
//! [`SysfsEvents::boxes`] lists the boxes of `uncore_imc`, in box order, and
//! [`box_base`] splits a box's name; [`Database::resolve_boxes`](crate::Database::resolve_boxes)
//! resolves an event on each.

use crate::{Counters, EventDef, EventSource, Precise, Resolved, SourceKind};
use pmx_model::encoding::{is_core_pmu, PerfAttr};
use pmx_model::spec::{closest, parse_spec, EventSpec, SpecError, Term};
use pmx_sys::pmu::{read_pmus, ConfigWord, KernelPmu, PMU_DIR};
use pmx_sys::SysRoot;
use std::path::{Path, PathBuf};

/// Place `terms` through a PMU's formats into `[config, config1, config2]`.
pub fn place_terms(pmu: &KernelPmu, text: &str, terms: &[Term]) -> Result<[u64; 3], SpecError> {
    let mut words = [0u64; 3];
    for t in terms {
        let key = t.key.as_str();
        if pmx_model::spec::is_setting_term(key) {
            continue;
        }
        let whole = match key {
            "config" => Some(0),
            "config1" => Some(1),
            "config2" => Some(2),
            _ => None,
        };
        if let Some(idx) = whole {
            words[idx] = t.number().unwrap_or(0);
            continue;
        }
        let Some(placement) = pmu.format_field(key).and_then(|f| f.placement.as_ref()) else {
            let names: Vec<&str> = pmu.format.iter().map(|f| f.name.as_str()).collect();
            let list = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            return Err(SpecError::new(
                text,
                t.key_span,
                format!(
                    "PMU '{}' has no term '{key}' (its format: {list})",
                    pmu.name
                ),
            )
            .with_suggestions(closest(key, names.iter().copied(), 3)));
        };
        let Some(n) = t.number() else {
            return Err(SpecError::new(
                text,
                t.span,
                format!("'{key}' takes a number"),
            ));
        };
        let Some(bits) = placement.place(n) else {
            return Err(SpecError::new(
                text,
                t.span,
                format!(
                    "{key} = {n:#x} does not fit {placement} (max {:#x})",
                    placement.max_value()
                ),
            ));
        };
        let idx = match placement.word {
            ConfigWord::Config => 0,
            ConfigWord::Config1 => 1,
            ConfigWord::Config2 | ConfigWord::Config3 => 2,
        };
        words[idx] = (words[idx] & !placement.mask()) | bits;
    }
    Ok(words)
}

/// Every PMU's aliases on this machine, read from sysfs on first use (a
/// name the kernel's generic events resolve never reads sysfs).
pub struct SysfsEvents {
    root: PathBuf,
    loaded: std::sync::OnceLock<Loaded>,
}

/// What sysfs said, once read.
struct Loaded {
    pmus: Vec<KernelPmu>,
    events: Vec<EventDef>,
}

impl SysfsEvents {
    /// Every PMU under `root/sys/bus/event_source/devices`, read when first
    /// asked for. Missing or unreadable pieces are skipped: a machine may
    /// expose few PMUs.
    pub fn load(root: &Path) -> SysfsEvents {
        SysfsEvents {
            root: root.to_path_buf(),
            loaded: std::sync::OnceLock::new(),
        }
    }

    fn loaded(&self) -> &Loaded {
        self.loaded.get_or_init(|| {
            let root = &self.root;
            let mut problems = Vec::new();
            let mut pmus = read_pmus(&SysRoot::new(root), &mut problems);
            // The core PMU first, so its aliases win ties.
            pmus.sort_by_key(|p| (!is_core_pmu(&p.name), p.name.clone()));
            let mut events = Vec::new();
            for p in &pmus {
                for alias in &p.events {
                    events.push(alias_def(root, p, alias));
                }
            }
            Loaded { pmus, events }
        })
    }

    /// The PMUs read.
    pub fn pmus(&self) -> &[KernelPmu] {
        &self.loaded().pmus
    }

    /// A PMU by name.
    pub fn pmu(&self, name: &str) -> Option<&KernelPmu> {
        self.loaded().pmus.iter().find(|p| p.name == name)
    }

    /// The numbered boxes of `name` when the kernel has no PMU of that
    /// very name: `uncore_imc` → `uncore_imc_0`, `uncore_imc_1` … in box
    /// order (not `uncore_imc_free_running_0`, whose base is another).
    /// Empty when `name` is a PMU itself or has no boxes.
    pub fn boxes(&self, name: &str) -> Vec<&KernelPmu> {
        if name.is_empty() || self.pmu(name).is_some() {
            return Vec::new();
        }
        let mut out: Vec<(u32, &KernelPmu)> = self
            .pmus()
            .iter()
            .filter_map(|p| match box_base(&p.name) {
                Some((base, n)) if base == name => Some((n, p)),
                _ => None,
            })
            .collect();
        out.sort_by_key(|(n, _)| *n);
        out.into_iter().map(|(_, p)| p).collect()
    }

    /// Resolve `pmu/terms/` for a PMU that is not the core one.
    pub fn place_spec(&self, spec: &EventSpec, pmu: &str) -> Option<Result<Resolved, SpecError>> {
        let p = self.pmu(pmu)?;
        // `software/r1a/`: the raw config, under any `config=` term.
        let raw = match spec.body {
            pmx_model::spec::Body::Raw { config, .. } => config,
            _ => 0,
        };
        Some(place_terms(p, &spec.text, &spec.terms).map(|w| {
            let mut attr = PerfAttr {
                pmu: pmu.to_string(),
                type_: p.type_id,
                config: if spec.term("config").is_some() {
                    w[0]
                } else {
                    w[0] | raw
                },
                config1: w[1],
                config2: w[2],
                ..PerfAttr::default()
            };
            attr.apply_modifiers(&spec.modifiers);
            if let Ok(s) = spec.settings() {
                attr.apply_settings(&s);
            }
            Resolved {
                spec: spec.text.clone(),
                def: None,
                source: SourceKind::Sysfs,
                attr,
                register: None,
            }
        }))
    }
}

/// A box's base and number: `uncore_imc_3` → `("uncore_imc", 3)`; `None`
/// for a name without a `_N` suffix.
pub fn box_base(pmu: &str) -> Option<(&str, u32)> {
    let (base, n) = pmu.rsplit_once('_')?;
    if base.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, n.parse().ok()?))
}

fn alias_def(root: &Path, p: &KernelPmu, alias: &pmx_sys::pmu::EventAlias) -> EventDef {
    let name = &alias.name;
    let content = &alias.value;
    let origin = root
        .join(PMU_DIR)
        .join(&p.name)
        .join("events")
        .join(name)
        .display()
        .to_string();
    let mut d = EventDef::new(name, &p.name, SourceKind::Sysfs, &origin);
    d.perf_type = p.type_id;
    d.counters = if is_core_pmu(&p.name) {
        Counters::Unknown
    } else {
        Counters::NotCore
    };
    d.precise = Precise::Unknown;
    d.description = format!("kernel alias {}/{name}/ = {content}", p.name);
    // The alias content is the terms of `pmu/…/`.
    let as_spec = format!("{}/{}/", p.name, content);
    match parse_spec(&as_spec) {
        Ok(spec) => match place_terms(p, &as_spec, &spec.terms) {
            Ok(w) => {
                d.config = w[0];
                d.config1 = w[1];
                d.config2 = w[2];
            }
            Err(e) => d
                .notes
                .push(format!("could not place the alias: {}", e.message)),
        },
        Err(e) => d
            .notes
            .push(format!("could not parse the alias: {}", e.message)),
    }
    if let Some(s) = &alias.scale {
        d.notes.push(format!("scale {s}"));
    }
    if let Some(u) = &alias.unit {
        d.notes.push(format!("unit {u}"));
    }
    if alias.per_pkg {
        d.notes.push("counted once per package".to_string());
    }
    d
}

impl EventSource for SysfsEvents {
    fn kind(&self) -> SourceKind {
        SourceKind::Sysfs
    }
    fn describe(&self) -> String {
        format!("{}", self.root.join(PMU_DIR).display())
    }
    fn provenance(&self, def: &EventDef) -> Option<String> {
        Some(format!("sysfs: this machine's kernel, {}", def.origin))
    }
    fn events(&self) -> Vec<EventDef> {
        self.loaded().events.clone()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        let n = name.trim();
        let events = &self.loaded().events;
        if let Some((pmu, alias)) = n.split_once('/') {
            return events
                .iter()
                .find(|e| e.pmu == pmu && e.name.eq_ignore_ascii_case(alias))
                .cloned();
        }
        events
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(n))
            .cloned()
    }
    fn names(&self) -> Vec<String> {
        self.loaded()
            .events
            .iter()
            .map(|e| format!("{}/{}/", e.pmu, e.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_is_a_base_and_a_number() {
        assert_eq!(box_base("uncore_imc_3"), Some(("uncore_imc", 3)));
        assert_eq!(
            box_base("uncore_imc_free_running_0"),
            Some(("uncore_imc_free_running", 0))
        );
        for not_a_box in ["uncore_imc", "cpu_core", "msr", "_3", "amd_umc_"] {
            assert_eq!(box_base(not_a_box), None, "{not_a_box}");
        }
    }

    /// Boxes in number order (10 after 2), not another base's, and none
    /// for a PMU that exists by that very name.
    #[test]
    fn boxes_of_a_base() {
        let root = std::env::temp_dir().join(format!("pmx-sysfs-boxes-{}", std::process::id()));
        let dev = root.join(PMU_DIR);
        for p in [
            "uncore_imc_10",
            "uncore_imc_2",
            "uncore_imc_free_running_0",
            "msr",
        ] {
            std::fs::create_dir_all(dev.join(p)).unwrap();
            std::fs::write(dev.join(p).join("type"), "30\n").unwrap();
        }
        let sys = SysfsEvents::load(&root);
        let names: Vec<&str> = sys
            .boxes("uncore_imc")
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["uncore_imc_2", "uncore_imc_10"]);
        assert!(sys.boxes("msr").is_empty() && sys.boxes("uncore_cha").is_empty());
        let _ = std::fs::remove_dir_all(root);
    }
}
