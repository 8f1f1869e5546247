//! The events pmx knows for a CPU (`pmx list`) and how events resolve
//! (`pmx explain`).
//!
//! [`list`] loads the database and gathers each source's events that
//! match a name pattern, sorted by PMU and name; [`explain`] resolves each
//! spec and adds, for the kernel's generic events, what this machine's
//! kernel maps them to. Both return values; `pmx-output` renders them.

use crate::database::{self, Database, DatabaseError, DatabaseOptions};
use pmx_model::cpu::CpuId;
use pmx_model::spec::{parse_spec, SpecError};

pub use pmx_events::{Counters, EventDef, Precise, Resolved, SourceKind, Target};

/// What `pmx list` is asked for.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only names matching this pattern ([`matches()`]).
    pub pattern: Option<String>,
    /// Only this source.
    pub source: Option<SourceKind>,
    /// Include deprecated events.
    pub deprecated: bool,
    /// The CPU and its event tables.
    pub database: DatabaseOptions,
}

/// The events of one source that matched.
#[derive(Debug, Clone)]
pub struct ListSection {
    /// The source.
    pub kind: SourceKind,
    /// What the source is (file, library version…).
    pub description: String,
    /// Its matching events, by PMU then name; never empty.
    pub events: Vec<EventDef>,
}

/// The outcome of [`list`].
#[derive(Debug, Clone)]
pub struct Listing {
    /// The CPU listed for, and whether it is this machine.
    pub target: Target,
    /// One section per source with matching events, in resolution order.
    pub sections: Vec<ListSection>,
    /// Sources (of those asked for) that could not be loaded, and why.
    pub unavailable: Vec<(SourceKind, String)>,
}

impl Listing {
    /// How many events are listed.
    pub fn shown(&self) -> usize {
        self.sections.iter().map(|s| s.events.len()).sum()
    }
}

/// Does `name` match the user's pattern? Case does not matter, '.' and
/// ':' are the same; '*' and '?' are wildcards over the whole name,
/// otherwise the pattern may appear anywhere in it.
pub fn matches(pattern: &str, name: &str) -> bool {
    let p = pmx_events::name_key(pattern);
    let n = pmx_events::name_key(name);
    if !p.contains('*') && !p.contains('?') {
        return n.contains(&p);
    }
    glob(p.as_bytes(), n.as_bytes())
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard match with backtracking on the last '*'.
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Load the database and list its events.
pub fn list(opts: &ListOptions) -> Result<Listing, DatabaseError> {
    let db = database::load(&opts.database)?;
    Ok(list_in(&db, opts))
}

/// List the events of a loaded database (`opts.database` is not used).
pub fn list_in(db: &Database, opts: &ListOptions) -> Listing {
    let wanted = |k: SourceKind| opts.source.is_none_or(|o| o == k);
    let mut sections = Vec::new();
    for src in db.sources() {
        if !wanted(src.kind()) {
            continue;
        }
        let mut events: Vec<EventDef> = src
            .events()
            .into_iter()
            .filter(|e| opts.deprecated || !e.deprecated)
            .filter(|e| opts.pattern.as_deref().is_none_or(|p| matches(p, &e.name)))
            .collect();
        if events.is_empty() {
            continue;
        }
        events.sort_by(|a, b| a.pmu.cmp(&b.pmu).then_with(|| a.name.cmp(&b.name)));
        sections.push(ListSection {
            kind: src.kind(),
            description: src.describe(),
            events,
        });
    }
    let tables = [
        SourceKind::PerfJson,
        SourceKind::IntelJson,
        SourceKind::Builtin,
    ];
    merge_same_encodings(db, &mut sections, SourceKind::AmdBuiltin, &tables);
    let tables = [tables[0], tables[1], tables[2], SourceKind::AmdBuiltin];
    merge_same_encodings(db, &mut sections, SourceKind::Libpfm, &tables);
    Listing {
        target: db.target.clone(),
        sections,
        unavailable: db
            .unavailable
            .iter()
            .filter(|(k, _)| wanted(*k))
            .cloned()
            .collect(),
    }
}

/// An event of pmx's built-in AMD table or of libpfm4 with the encoding
/// of an event of a table searched before it (perf's or Intel's; for
/// libpfm4 also the built-in AMD table) is the same event: it is listed
/// once, under the first table's name, which names the others in
/// [`EventDef::also`] (a name it already has is not repeated).
fn merge_same_encodings(
    db: &Database,
    sections: &mut Vec<ListSection>,
    from: SourceKind,
    into: &[SourceKind],
) {
    let Some(mut src_at) = sections.iter().position(|s| s.kind == from) else {
        return;
    };
    type Key = (String, Option<u32>, u64, u64, u64);
    let key =
        |e: &EventDef| -> Key { (e.pmu.clone(), e.perf_type, e.config, e.config1, e.config2) };
    let mut by_key: std::collections::HashMap<Key, (SourceKind, EventDef)> =
        std::collections::HashMap::new();
    let mut described: Vec<(SourceKind, String)> = Vec::new();
    for s in db.sources().iter().filter(|s| into.contains(&s.kind())) {
        described.push((s.kind(), s.describe()));
        for e in s.events() {
            by_key.entry(key(&e)).or_insert((s.kind(), e));
        }
    }
    let label = pmx_events::source_label(from);
    let mut moved: Vec<(SourceKind, EventDef)> = Vec::new();
    for e in std::mem::take(&mut sections[src_at].events) {
        let Some((kind, t)) = by_key.get(&key(&e)) else {
            sections[src_at].events.push(e);
            continue;
        };
        let also = (!e.name.eq_ignore_ascii_case(&t.name)).then(|| format!("{label} {}", e.name));
        let at = match moved
            .iter()
            .position(|(k, m)| k == kind && m.name == t.name && m.pmu == t.pmu)
        {
            Some(i) => i,
            None => {
                moved.push((*kind, t.clone()));
                moved.len() - 1
            }
        };
        moved[at].1.also.extend(also);
    }
    for (kind, m) in moved {
        let at = match sections.iter().position(|s| s.kind == kind) {
            Some(i) => i,
            None => {
                let description = described
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, d)| d.clone())
                    .unwrap_or_default();
                sections.insert(
                    src_at,
                    ListSection {
                        kind,
                        description,
                        events: Vec::new(),
                    },
                );
                src_at += 1;
                src_at - 1
            }
        };
        let evs = &mut sections[at].events;
        match evs.iter_mut().find(|e| e.name == m.name && e.pmu == m.pmu) {
            Some(e) => {
                for a in m.also {
                    if !e.also.contains(&a) {
                        e.also.push(a);
                    }
                }
            }
            None => evs.push(m),
        }
    }
    for s in sections.iter_mut() {
        s.events
            .sort_by(|a, b| a.pmu.cmp(&b.pmu).then_with(|| a.name.cmp(&b.name)));
    }
    sections.retain(|s| !s.events.is_empty());
}

/// What `pmx explain` is asked for.
#[derive(Debug, Clone, Default)]
pub struct ExplainOptions {
    /// The events as typed: names, `pmu/alias/`, or encodings.
    pub events: Vec<String>,
    /// The CPU and its event tables.
    pub database: DatabaseOptions,
}

/// One event resolved, with everything pmx knows of it.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The resolution: source, definition, perf attr, register.
    pub resolved: Resolved,
    /// For a kernel generic event: what this machine's kernel says the
    /// core PMU maps it to (`cpu/cycles/ = event=0x3c`).
    pub kernel_mapping: Option<String>,
    /// Where the definition came from and its version (built in, the
    /// cache, a directory, libpfm4, sysfs): [`Database::provenance`].
    pub provenance: Option<String>,
}

/// The outcome of [`explain`].
#[derive(Debug, Clone)]
pub struct ExplainReport {
    /// The CPU resolved for.
    pub cpu: CpuId,
    /// Per event, in the order given: the explanation or why it does not
    /// resolve.
    pub entries: Vec<Result<Explanation, SpecError>>,
}

impl ExplainReport {
    /// How many events did not resolve.
    pub fn failed(&self) -> usize {
        self.entries.iter().filter(|e| e.is_err()).count()
    }
}

/// Load the database and explain each event.
pub fn explain(opts: &ExplainOptions) -> Result<ExplainReport, DatabaseError> {
    let db = database::load(&opts.database)?;
    Ok(explain_in(&db, &opts.events))
}

/// Explain each event against a loaded database.
pub fn explain_in(db: &Database, events: &[String]) -> ExplainReport {
    let entries = events
        .iter()
        .map(|text| {
            let mut resolved = parse_spec(text).and_then(|s| db.resolve(&s))?;
            if let Some(d) = resolved.def.as_mut() {
                d.also = db.same_encoding(d);
            }
            Ok(Explanation {
                kernel_mapping: kernel_mapping(db, &resolved),
                provenance: resolved.def.as_ref().and_then(|d| db.provenance(d)),
                resolved,
            })
        })
        .collect();
    ExplainReport {
        cpu: db.target.cpu.clone(),
        entries,
    }
}

/// For a kernel generic event, what sysfs says the core PMU maps it to.
fn kernel_mapping(db: &Database, r: &Resolved) -> Option<String> {
    let def = r.def.as_ref()?;
    if def.source != SourceKind::Kernel {
        return None;
    }
    let sys = db.sysfs()?;
    ["cpu", "cpu_core", "cpu_atom"].iter().find_map(|pmu| {
        let p = sys.pmu(pmu)?;
        let alias = p.event(&def.name)?;
        Some(format!(
            "this machine's kernel says {pmu}/{}/ = {}",
            def.name, alias.value
        ))
    })
}

/// What `perf list --raw-dump KIND` prints, from `db` (and Intel's
/// tables in `events_dir`): `pmu`, the kernel PMUs' sysfs events as
/// `pmu/event/`; `metrics` and `metricgroups`, the names and groups of the
/// CPU's metric library (what `pmx stat -M` accepts; LIKWID's groups by
/// their group names only); `events` (no kind),
/// every event name. `None` for another kind.
pub fn raw_dump(
    kind: &str,
    db: &Database,
    events_dir: Option<&std::path::Path>,
) -> Option<Vec<String>> {
    let events = |only: Option<SourceKind>| {
        let opts = ListOptions {
            source: only,
            ..ListOptions::default()
        };
        list_in(db, &opts)
            .sections
            .into_iter()
            .flat_map(|s| s.events)
    };
    let lib = || pmx_metrics::Library::for_cpu(Some(&db.target.cpu), events_dir);
    let mut names: Vec<String> = match kind {
        "pmu" => events(Some(SourceKind::Sysfs))
            .map(|e| format!("{}/{}/", e.pmu, e.name))
            .collect(),
        // LIKWID's metric names have spaces (`Memory bandwidth [MBytes/s]`):
        // perf's listing, which scripts split on spaces, names their groups.
        "metrics" => {
            let lib = lib();
            lib.iter()
                .filter(|(id, _)| lib.source_of(*id).kind != pmx_metrics::SourceKind::Groups)
                .map(|(_, m)| m.name.clone())
                .collect()
        }
        "metricgroups" => lib().groups(),
        "events" => events(None).map(|e| e.name).collect(),
        _ => return None,
    };
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches("lat_cache", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("longest_lat_cache:miss", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("L*MISS", "LONGEST_LAT_CACHE.MISS"));
        assert!(!matches("L*REF", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("?ycles", "cycles"));
    }

    fn skylake_sp() -> DatabaseOptions {
        DatabaseOptions {
            cpu: Some("GenuineIntel-6-55-4".into()),
            no_libpfm: true,
            ..Default::default()
        }
    }

    #[test]
    fn the_kernel_source_lists_matching_events_sorted() {
        let listing = list(&ListOptions {
            pattern: Some("*cycles".into()),
            source: Some(SourceKind::Kernel),
            database: skylake_sp(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(listing.target.cpu.to_string(), "GenuineIntel-6-55-4");
        assert_eq!(listing.sections.len(), 1);
        let s = &listing.sections[0];
        assert_eq!(s.kind, SourceKind::Kernel);
        let names: Vec<&str> = s.events.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"cycles"), "{names:?}");
        assert!(names.iter().all(|n| n.ends_with("cycles")), "{names:?}");
        let keys: Vec<(&str, &str)> = s
            .events
            .iter()
            .map(|e| (e.pmu.as_str(), e.name.as_str()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(listing.shown(), s.events.len());
        assert!(listing
            .unavailable
            .iter()
            .all(|(k, _)| *k == SourceKind::Kernel));
    }

    #[test]
    fn explain_keeps_order_and_failures() {
        let db = database::load(&skylake_sp()).unwrap();
        let events = [
            "cycles".to_string(),
            "cpu/event=0x2e,umask=0x41/u".to_string(),
            "no-such-event".to_string(),
        ];
        let report = explain_in(&db, &events);
        assert_eq!(report.cpu.to_string(), "GenuineIntel-6-55-4");
        assert_eq!(report.failed(), 1);
        let first = report.entries[0].as_ref().unwrap();
        assert_eq!(first.resolved.source, SourceKind::Kernel);
        let second = report.entries[1].as_ref().unwrap();
        assert_eq!(second.resolved.source, SourceKind::Spec);
        assert_eq!(second.resolved.attr.config & 0xffff, 0x412e);
        assert!(second.resolved.attr.exclude_kernel);
        assert!(second.kernel_mapping.is_none());
        assert!(report.entries[2].is_err());
    }
}
