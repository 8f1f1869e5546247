//! Event names as metric formulas write them, and the key that makes two
//! spellings of one event the same input.
//!
//! Formulas name events in many ways: Intel's tables (`INST_RETIRED.ANY`,
//! `ICACHE_16B.IFDATA_STALL:c1:e1`, `TOPDOWN.SLOTS:perf_metrics`,
//! `PERF_METRICS.RETIRING`), perf's JSON (`cpu@INST_RETIRED.ANY@`,
//! `topdown-retiring`, `cha@UNC_CHA_TOR_INSERTS.IA_MISS,config1=0x40433@`),
//! libpfm4 (`LONGEST_LAT_CACHE:MISS`, `DATA_CACHE_REFILLS:L2_SHARED:L2_OWNED`)
//! and users (`cycles:u`, `r412e`). [`event_key`] folds the spellings that
//! certainly mean the same counter onto one key; [`crate::Inputs`] matches
//! readings to formula inputs through it (or through a key function the
//! caller gives, e.g. one that resolves names to encodings, so that `r3c`
//! and `CPU_CLK_UNHALTED.THREAD_P` meet too).

use serde::Serialize;

/// perf's `topdown-*` events and the `PERF_METRICS` fields Intel's tables
/// name for them (Ice Lake and newer: the fixed `TOPDOWN.SLOTS` counter plus
/// the `PERF_METRICS` MSR).
pub const TOPDOWN_ALIASES: &[(&str, &str)] = &[
    ("topdown-retiring", "perf_metrics.retiring"),
    ("topdown-bad-spec", "perf_metrics.bad_speculation"),
    ("topdown-fe-bound", "perf_metrics.frontend_bound"),
    ("topdown-be-bound", "perf_metrics.backend_bound"),
    ("topdown-heavy-ops", "perf_metrics.heavy_operations"),
    ("topdown-br-mispredict", "perf_metrics.branch_mispredicts"),
    ("topdown-fetch-lat", "perf_metrics.fetch_latency"),
    ("topdown-mem-bound", "perf_metrics.memory_bound"),
    ("slots", "topdown.slots"),
    ("topdown-slots", "topdown.slots"),
];

/// One `:`-separated modifier of an event name, in canonical form.
fn canonical_modifier(m: &str) -> Option<String> {
    let m = m.trim();
    if m.is_empty() {
        return None;
    }
    if m == "R" || m.eq_ignore_ascii_case("retire_latency") {
        return Some("retire_latency".into());
    }
    let l = m.to_ascii_lowercase();
    match l.as_str() {
        // Intel's pseudo-modifier: the slots counter read with PERF_METRICS.
        "perf_metrics" => return None,
        "sup" => return Some("k".into()),
        "user" => return Some("u".into()),
        _ => {}
    }
    // Intel `c1`, `e1`, `i1`, `eq1`; libpfm `c=1`, `e`, `i`; perf terms.
    for (short, long, canon) in [
        ("c", "cmask", "c"),
        ("e", "edge", "e"),
        ("i", "inv", "i"),
        ("eq", "eq", "eq"),
    ] {
        for prefix in [long, short] {
            if let Some(rest) = l.strip_prefix(prefix) {
                let v = rest.strip_prefix('=').unwrap_or(rest);
                if v.is_empty() && canon != "c" {
                    return Some(format!("{canon}=1"));
                }
                if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                    let n: u64 = v.parse().unwrap_or(0);
                    if n == 0 && canon != "c" {
                        return None;
                    }
                    return Some(format!("{canon}={n}"));
                }
            }
        }
    }
    Some(l)
}

/// The matching key of an event name: lower case; `:` and `.` between event
/// and unit mask alike; perf's `pmu@NAME@` read as `pmu/NAME/`; `cpu/NAME/`
/// the same as `NAME`; modifiers in canonical form (`:c1` = `:c=1`,
/// `:e` = `:e1` = `:e=1`, `:SUP` = `:k`, `:USER` = `:u`); Intel's
/// `:perf_metrics` dropped; perf's `topdown-*` events and `slots` the same as
/// Intel's `PERF_METRICS.*` and `TOPDOWN.SLOTS`.
///
/// Modifier order matters (`:u:c=1` ≠ `:c=1:u`) only when written in a
/// different order; pmx writes them in the order given.
pub fn event_key(name: &str) -> String {
    event_key_in(name, "cpu")
}

/// [`event_key`] where `core_pmu/NAME/` (as well as `cpu/NAME/`) means the
/// same as `NAME`: on a hybrid part, perf writes `cpu_core/topdown-retiring/`
/// for what Intel's P-core table calls `PERF_METRICS.RETIRING`.
pub fn event_key_in(name: &str, core_pmu: &str) -> String {
    let is_default_pmu = |p: &str| p == "cpu" || p.is_empty() || p.eq_ignore_ascii_case(core_pmu);
    let mut s = name.trim().to_string();
    // perf: pmu@body@rest → pmu/body/rest
    if let Some(a) = s.find('@') {
        if let Some(b) = s[a + 1..].find('@') {
            let b = a + 1 + b;
            s = format!("{}/{}/{}", &s[..a], &s[a + 1..b], &s[b + 1..]);
        }
    }
    if let Some((pmu, rest)) = s.split_once('/') {
        if let Some((body, mods)) = rest.split_once('/') {
            let pmu_l = pmu.to_ascii_lowercase();
            let simple = !body.contains('=') && !body.contains(',') && !body.is_empty();
            if simple {
                let mods = mods.trim_start_matches(':');
                let inner = if mods.is_empty() {
                    event_key_in(body, core_pmu)
                } else {
                    // perf modifier letters after the slash: cpu/x/uk
                    let m: Vec<String> = if mods.contains(':') {
                        mods.split(':').map(str::to_string).collect()
                    } else {
                        mods.chars().map(|c| c.to_string()).collect()
                    };
                    event_key_in(&format!("{body}:{}", m.join(":")), core_pmu)
                };
                return if is_default_pmu(&pmu_l) {
                    inner
                } else {
                    format!("{pmu_l}/{inner}")
                };
            }
            return format!(
                "{pmu_l}/{}/{}",
                body.to_ascii_lowercase(),
                mods.to_ascii_lowercase()
            );
        }
    }
    let mut parts = s.split(':');
    let base = parts.next().unwrap_or("").to_ascii_lowercase();
    let base = TOPDOWN_ALIASES
        .iter()
        .find(|(a, _)| *a == base)
        .map(|(_, b)| b.to_string())
        .unwrap_or(base);
    let mut key = base;
    for m in parts.filter_map(canonical_modifier) {
        key.push('.');
        key.push_str(&m);
    }
    key
}

/// Is this name a retire-latency value (`EVENT:retire_latency` in Intel's
/// tables, `EVENT:R` in perf's) rather than a count?
pub fn is_retire_latency(name: &str) -> bool {
    name.rsplit(':')
        .next()
        .is_some_and(|m| m == "R" || m.eq_ignore_ascii_case("retire_latency"))
        && name.contains(':')
}

/// The event name without a retire-latency modifier.
pub fn strip_retire_latency(name: &str) -> &str {
    if is_retire_latency(name) {
        name.rsplit_once(':').map(|(a, _)| a).unwrap_or(name)
    } else {
        name
    }
}

/// An event a library's formulas refer to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventRef {
    /// The name as the (first) formula wrote it, unescaped; perf's
    /// `pmu@NAME@` is shown as `pmu/NAME/`.
    pub name: String,
    /// [`event_key`] of the name.
    pub key: String,
    /// A retire-latency value, not a count: sampled (perf `:R`) or taken
    /// from Intel's published means.
    pub retire_latency: bool,
}

impl EventRef {
    /// The event for a name as a formula writes it.
    pub fn new(name: &str) -> EventRef {
        EventRef {
            name: display_name(name),
            key: event_key(name),
            retire_latency: is_retire_latency(name),
        }
    }

    /// An event spec for `pmx_model::spec::parse_spec` that counts this
    /// event, for the core PMU `pmu` (`cpu`, `cpu_core`…); `None` for a
    /// retire-latency value, which is sampled, not counted.
    ///
    /// Intel's modifiers become perf terms (`:c1:e1` → `cmask=1,edge=1`,
    /// `:u0x30` → `umask=0x30`, `:opc=0x182` → `filter_opc=0x182`,
    /// `:filter1=X`/`:ocr_msr_val=X` → `config1=X`, `:SUP` → `k`, `:USER` →
    /// `u`); an event without terms stays a plain name (`INST_RETIRED.ANY:u`).
    /// Intel's `:perf_metrics` and `:one_unit` say how to read the event,
    /// not what to count, and are dropped.
    pub fn spec(&self, pmu: &str) -> Option<String> {
        if self.retire_latency {
            return None;
        }
        if self.name.contains('/') {
            return Some(self.name.clone());
        }
        let mut parts = self.name.split(':');
        let base = parts.next().unwrap_or("").to_string();
        let mut terms: Vec<String> = Vec::new();
        let mut mods = String::new();
        let mut named: Vec<String> = Vec::new();
        for m in parts {
            let l = m.to_ascii_lowercase();
            match l.as_str() {
                "perf_metrics" | "one_unit" | "" => continue,
                "sup" | "k" => {
                    mods.push('k');
                    continue;
                }
                "user" | "u" => {
                    mods.push('u');
                    continue;
                }
                "percore" => {
                    terms.push("percore".into());
                    continue;
                }
                _ => {}
            }
            if let Some((k, v)) = l.split_once('=') {
                let key = match k {
                    "c" | "cmask" => "cmask",
                    "e" | "edge" => "edge",
                    "i" | "inv" => "inv",
                    "opc" => "filter_opc",
                    "tid" => "filter_tid",
                    "filter1" | "ocr_msr_val" | "config1" => "config1",
                    other => other,
                };
                terms.push(format!("{key}={v}"));
                continue;
            }
            let intel = [("eq", "eq"), ("c", "cmask"), ("e", "edge"), ("i", "inv")]
                .iter()
                .find_map(|(p, key)| {
                    l.strip_prefix(p)
                        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                        .map(|v| format!("{key}={v}"))
                });
            if let Some(t) = intel {
                terms.push(t);
                continue;
            }
            if let Some(v) = l.strip_prefix('u').filter(|v| v.starts_with("0x")) {
                terms.push(format!("umask={v}"));
                continue;
            }
            // A libpfm unit mask (DATA_CACHE_REFILLS:L2_SHARED) or a
            // modifier spelled out.
            named.push(m.to_string());
        }
        let name = if named.is_empty() {
            base
        } else {
            format!("{base}:{}", named.join(":"))
        };
        if terms.is_empty() {
            return Some(if mods.is_empty() {
                name
            } else {
                format!("{name}:{mods}")
            });
        }
        Some(format!("{pmu}/{name},{}/{mods}", terms.join(",")))
    }
}

/// How an event name is shown: perf's `pmu@NAME@` as `pmu/NAME/`.
fn display_name(name: &str) -> String {
    let s = name.trim();
    if let Some(a) = s.find('@') {
        if let Some(b) = s[a + 1..].find('@') {
            let b = a + 1 + b;
            return format!("{}/{}/{}", &s[..a], &s[a + 1..b], &s[b + 1..]);
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fold_spellings() {
        let same = |a: &str, b: &str| assert_eq!(event_key(a), event_key(b), "{a} vs {b}");
        same("LONGEST_LAT_CACHE.MISS", "longest_lat_cache:miss");
        same("cpu@INST_RETIRED.ANY@", "INST_RETIRED.ANY");
        same("cpu/INST_RETIRED.ANY/", "inst_retired.any");
        same("cpu/cycles/u", "cycles:u");
        same("TOPDOWN.SLOTS:perf_metrics", "slots");
        same("PERF_METRICS.FRONTEND_BOUND", "topdown-fe-bound");
        same("cpu@topdown-retiring@", "PERF_METRICS.RETIRING");
        same(
            "ICACHE_16B.IFDATA_STALL:c1:e1",
            "ICACHE_16B.IFDATA_STALL:c=1:e",
        );
        same(
            "IDQ.MITE_UOPS:c8:i1:eq1",
            "IDQ.MITE_UOPS:cmask=8:inv=1:eq=1",
        );
        same(
            "CPU_CLK_UNHALTED.THREAD_P:SUP",
            "CPU_CLK_UNHALTED.THREAD_P:k",
        );
        same("X:USER", "x:u");
        let differ = |a: &str, b: &str| assert_ne!(event_key(a), event_key(b), "{a} vs {b}");
        differ("cycles", "cycles:u");
        differ("cpu_core/topdown-retiring/", "topdown-retiring");
        differ("ICACHE_16B.IFDATA_STALL:c1", "ICACHE_16B.IFDATA_STALL");
        assert_eq!(
            event_key("cpu_core@topdown-retiring@"),
            "cpu_core/perf_metrics.retiring"
        );
        assert_eq!(
            event_key(r"cha@UNC_CHA_TOR_INSERTS.IA_MISS,config1=0x40433@"),
            "cha/unc_cha_tor_inserts.ia_miss,config1=0x40433/"
        );
    }

    #[test]
    fn retire_latency() {
        assert!(is_retire_latency(
            "MEM_LOAD_L3_HIT_RETIRED.XSNP_FWD:retire_latency"
        ));
        assert!(is_retire_latency("MEM_INST_RETIRED.LOCK_LOADS:R"));
        assert!(!is_retire_latency("RETIRE_LATENCY"));
        assert_eq!(strip_retire_latency("A.B:R"), "A.B");
        assert!(EventRef::new("A.B:R").spec("cpu").is_none());
    }

    #[test]
    fn specs_for_intel_names() {
        let s = |n: &str| EventRef::new(n).spec("cpu").unwrap();
        assert_eq!(s("INST_RETIRED.ANY"), "INST_RETIRED.ANY");
        assert_eq!(s("TOPDOWN.SLOTS:perf_metrics"), "TOPDOWN.SLOTS");
        assert_eq!(
            s("CPU_CLK_UNHALTED.THREAD_P:SUP"),
            "CPU_CLK_UNHALTED.THREAD_P:k"
        );
        assert_eq!(
            s("ICACHE_16B.IFDATA_STALL:c1:e1"),
            "cpu/ICACHE_16B.IFDATA_STALL,cmask=1,edge=1/"
        );
        assert_eq!(
            s("FP_ARITH_OPS_RETIRED.VECTOR:u0x30"),
            "cpu/FP_ARITH_OPS_RETIRED.VECTOR,umask=0x30/"
        );
        assert_eq!(
            s("UNC_CHA_TOR_INSERTS.IA_MISS:filter1=0x12D40433"),
            "cpu/UNC_CHA_TOR_INSERTS.IA_MISS,config1=0x12d40433/"
        );
        assert_eq!(
            s("DATA_CACHE_REFILLS:L2_SHARED:L2_EXCLUSIVE"),
            "DATA_CACHE_REFILLS:L2_SHARED:L2_EXCLUSIVE"
        );
        assert_eq!(s("cpu@X@"), "cpu/X/");
    }
}
