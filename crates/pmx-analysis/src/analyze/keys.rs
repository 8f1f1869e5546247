//! Matching the events of a file to the inputs of metrics: by encoding,
//! so `r019c`, `cpu/event=0x9c,umask=0x01/` and
//! `IDQ_UOPS_NOT_DELIVERED.CORE` are one input. Names that do not resolve
//! (perf's `topdown-*` aliases, software events) are matched by
//! [`pmx_metrics::event_key`]. Modifiers (`:u`, `:k`, `:ppp`, `/u`,
//! `:G`…) are normalized away before matching ([`split_modifiers`]): a
//! file counted with `TOPDOWN.SLOTS:u` feeds the formulas that read
//! `TOPDOWN.SLOTS`, and the report shows the modifier.

use pmx_metrics::{event_key, EventRef};
use std::collections::HashMap;
use std::sync::Arc;

/// The matching key of an event: its encoding when the database resolves
/// it, else [`event_key`].
fn encoding_key(db: &pmx_events::Database, name: &str) -> Option<String> {
    let ek = event_key(name);
    if ek.starts_with("perf_metrics.") || ek == "topdown.slots" || ek == "duration_time" {
        return None;
    }
    let er = EventRef::new(name);
    if er.retire_latency {
        return None;
    }
    let text = er.spec("cpu").unwrap_or_else(|| name.to_string());
    let spec = pmx_model::spec::parse_spec(&text).ok()?;
    let r = db.try_resolve(&spec)?;
    let a = &r.attr;
    let pmu = if a.pmu.is_empty() {
        "cpu"
    } else {
        a.pmu.as_str()
    };
    // perf's generic events count on Intel's fixed counters: `cycles`,
    // `instructions` and `ref-cycles` are the same inputs as
    // CPU_CLK_UNHALTED.THREAD(_P), INST_RETIRED.ANY(_P) and
    // CPU_CLK_UNHALTED.REF_TSC.
    let mods = format!(
        "{}{}{}",
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv)
    );
    let generic = match (a.type_, a.config) {
        (Some(0), 0) => Some("cycles"),
        (Some(0), 1) => Some("instructions"),
        (Some(0), 9) => Some("ref-cycles"),
        (Some(4), c)
            if is_core(pmu)
                && db.target.cpu.vendor == pmx_model::cpu::Vendor::Intel
                && c >> 16 == 0
                && a.config1 == 0 =>
        {
            match c & 0xffff {
                0x0100 | 0x00c0 => Some("instructions"),
                0x0200 | 0x003c => Some("cycles"),
                0x0300 => Some("ref-cycles"),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(g) = generic {
        return Some(format!("gen:{g}:{mods}"));
    }
    Some(format!(
        "enc:{pmu}:{}:{:#x}:{:#x}:{:#x}:{}{}{}",
        a.type_.map(|t| t.to_string()).unwrap_or_default(),
        a.config,
        a.config1,
        a.config2,
        u8::from(a.exclude_user),
        u8::from(a.exclude_kernel),
        u8::from(a.exclude_hv),
    ))
}

fn is_core(pmu: &str) -> bool {
    pmu == "cpu" || pmu == "cpu_core" || pmu == "cpu_atom"
}

/// An event name without its modifiers, and the modifiers as written
/// (`TOPDOWN.SLOTS:u` → `TOPDOWN.SLOTS`, `u`; `cpu/cycles/ppp` →
/// `cpu/cycles/`, `ppp`): the suffix after the last `:` (or after the
/// closing `/`) is a modifier when pmx's spec parser reads the name with
/// and without it as the same event with different modifiers only.
/// Unit masks (`LONGEST_LAT_CACHE:MISS`) and terms (`:c=1`) stay.
pub fn split_modifiers(name: &str) -> (String, String) {
    use pmx_model::spec::{parse_spec, Modifiers};
    let Ok(full) = parse_spec(name) else {
        return (name.to_string(), String::new());
    };
    if full.modifiers == Modifiers::default() {
        return (name.to_string(), String::new());
    }
    let cuts = [name.rfind(':'), name.rfind('/').map(|i| i + 1)];
    for cut in cuts.into_iter().flatten() {
        let (base, mods) = name.split_at(cut);
        let base = base.strip_suffix(':').unwrap_or(base);
        let Ok(b) = parse_spec(base) else { continue };
        if b.modifiers == Modifiers::default()
            && b.body == full.body
            && b.pmu == full.pmu
            && b.terms == full.terms
            && !mods.is_empty()
        {
            return (base.to_string(), mods.trim_start_matches(':').to_string());
        }
    }
    (name.to_string(), String::new())
}

/// On a hybrid part, `cpu_core/topdown-retiring/` and `cpu_core/slots/`
/// are the P-core table's `PERF_METRICS.RETIRING` and `TOPDOWN.SLOTS`.
fn hybrid_topdown_key(name: &str) -> Option<String> {
    let pmu = ["cpu_core", "cpu_atom"]
        .into_iter()
        .find(|p| name.starts_with(&format!("{p}/")))?;
    let k = pmx_metrics::event_key_in(name, pmu);
    (k.starts_with("perf_metrics.") || k == "topdown.slots").then_some(k)
}

/// A key function over the names of the library and of the file.
pub fn key_fn<'a>(
    db: &pmx_events::Database,
    names: impl IntoIterator<Item = &'a str>,
) -> pmx_metrics::KeyFn {
    let mut map: HashMap<String, String> = HashMap::new();
    for n in names {
        if !map.contains_key(n) {
            let (base, _) = split_modifiers(n);
            let k = hybrid_topdown_key(&base)
                .or_else(|| encoding_key(db, &base))
                .unwrap_or_else(|| event_key(&base));
            map.insert(n.to_string(), k);
        }
    }
    let map = Arc::new(map);
    Arc::new(move |name: &str| {
        map.get(name)
            .cloned()
            .unwrap_or_else(|| event_key(&split_modifiers(name).0))
    })
}

#[cfg(test)]
mod tests {
    use super::split_modifiers;

    #[test]
    fn modifiers_come_off_and_unit_masks_and_terms_stay() {
        let s = |n: &str| {
            let (a, b) = split_modifiers(n);
            (a, b)
        };
        assert_eq!(s("TOPDOWN.SLOTS:u"), ("TOPDOWN.SLOTS".into(), "u".into()));
        assert_eq!(
            s("IDQ_UOPS_NOT_DELIVERED.CORE:u"),
            ("IDQ_UOPS_NOT_DELIVERED.CORE".into(), "u".into())
        );
        assert_eq!(s("cycles:ppp"), ("cycles".into(), "ppp".into()));
        assert_eq!(s("instructions:uk"), ("instructions".into(), "uk".into()));
        assert_eq!(s("cpu/cycles/u"), ("cpu/cycles/".into(), "u".into()));
        assert_eq!(
            s("cpu_core/topdown-retiring/k"),
            ("cpu_core/topdown-retiring/".into(), "k".into())
        );
        assert_eq!(
            s("LONGEST_LAT_CACHE:MISS"),
            ("LONGEST_LAT_CACHE:MISS".into(), String::new())
        );
        assert_eq!(s("cycles"), ("cycles".into(), String::new()));
        assert_eq!(
            s("cpu/event=0x3c,umask=0x0/"),
            ("cpu/event=0x3c,umask=0x0/".into(), String::new())
        );
    }
}
