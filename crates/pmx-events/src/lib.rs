//! # pmx-events — the event database and the resolver
//!
//! Users name events the way their vendor does (`LONGEST_LAT_CACHE.MISS`,
//! AMD's `RETIRED_BRANCH_INSTRUCTIONS`, libpfm's `LONGEST_LAT_CACHE:MISS`,
//! the kernel's `cycles` or `L1-dcache-load-misses`). This crate turns such
//! names into exact encodings for a given CPU — the one pmx runs on or any
//! other named by its key (`GenuineIntel-6-55-4`) — and says where each
//! answer came from.
//!
//! ## Sources
//!
//! Every source implements [`EventSource`] and yields [`EventDef`]s that
//! carry their [`SourceKind`] and origin (file, sysfs path, libpfm PMU):
//!
//! - [`builtin`]: facts from the manuals and the kernel ABI — the kernel's
//!   generic hardware, cache and software events, Intel's architectural
//!   events and fixed counters.
//! - [`sysfs`]: the kernel's own aliases under
//!   `/sys/bus/event_source/devices/<pmu>/events`, placed with the PMU's
//!   `format/*` (only for the machine pmx runs on).
//! - [`intel_json`]: Intel's perfmon tables, chosen through `mapfile.csv`,
//!   from an events directory or built into pmx ([`tables::intel`]: every
//!   Intel platform's facts without Intel's descriptions, events of kind
//!   [`SourceKind::Builtin`]).
//! - [`perf_json`]: Linux perf's tables (`x86/mapfile.csv` + `amdzenN/`),
//!   the AMD Zen 1–5 events with their uncore (L3, data fabric, memory
//!   controller) PMUs.
//! - [`amd_builtin`]: pmx's built-in AMD Zen 1–5 core events (generated
//!   from libpfm4's MIT tables and AMD's published facts), parsed only for
//!   the CPU in question.
//! - [`libpfm`]: libpfm4, loaded at run time with `dlopen("libpfm.so.4")`.
//!   Its encoder fills a `perf_event_attr`: the one declaration of that
//!   struct, `pmx_perfdata::PerfEventAttr` (hence this crate's arrow down
//!   to `pmx-perfdata`, which depends on no pmx crate).
//!
//! [`fetch`] downloads Intel's tables and perf's (into an events
//! directory, atomically), for `pmx events fetch`.
//!
//! ## Resolution order
//!
//! [`Database::resolve`] tries, in order, and the first match wins:
//!
//! 1. a spec that *is* an encoding (`cpu/event=…/`, `r412e`) — no lookup;
//! 2. a `pmu/name/` spec — that PMU's sysfs alias;
//! 3. the kernel's generic and software events (`cycles`, `task-clock`) —
//!    perf users expect these names to mean what perf means;
//! 4. sysfs aliases of every PMU on this machine (`tsc` → `msr/tsc/`);
//! 5. the event tables for the CPU from the events directories: Intel's
//!    JSON tables on Intel CPUs (core first, then uncore), Linux perf's
//!    tables on the others (AMD); on Intel CPUs, when no directory has
//!    tables for the CPU, the tables built into pmx ([`tables`]);
//! 6. on AMD Zen 1–5, pmx's built-in table of the generation
//!    ([`amd_builtin`]): after the events directories, so a table there
//!    wins;
//! 7. libpfm4's tables for the CPU — an event that has the same encoding
//!    as one of step 5 is the same event (see [`Database::same_encoding`]);
//! 8. Intel's architectural events (`UNHALTED_CORE_CYCLES`, …).
//!
//! ## Events directories
//!
//! [`EventsDirDefault::resolve_all`]: every `--events-dir` given, in order,
//! else `$PMX_EVENTS_DIR`, else the cache (`~/.cache/pmx/events`); the
//! variable and the cache are values the caller reads at its edge and
//! passes in ([`LoadOptions::events_dir_default`]). Each may hold
//! Intel's layout, perf's, or both ([`perf_json::layouts`]); the first
//! directory with tables for the CPU is used, and it wins over the
//! built-in tables as a whole. [`Database::provenance`] says where a
//! definition came from and its version (built in, the cache, a
//! directory, libpfm4, sysfs), for `pmx explain`.
//!
//! Names match case-insensitively, with `.` and `:` between event and unit
//! mask interchangeable. Modifiers and terms typed after the name
//! (`:u`, `:c=1`, `:i`) apply on top of the found encoding. An unknown name
//! gets the three closest known names.

pub mod amd_builtin;
pub mod builtin;
pub mod fetch;
pub mod intel_json;
pub mod libpfm;
pub mod perf_json;
pub mod sysfs;
pub mod tables;

use pmx_model::cpu::{CpuId, Vendor};
use pmx_model::encoding::{
    apply_terms, encode_attr, encode_spec, is_core_pmu, Arch, EncodeOptions, Encoded, PerfAttr,
};
use pmx_model::spec::{
    closest, is_setting_term, Body, EventSpec, Span, SpecError, CONFIG_TERMS, SETTING_TERMS,
};
use serde::Serialize;
use std::path::PathBuf;

/// The warning for a table's entries a loader passed over (`what`: "not
/// used", "not understood"), naming the first; none when there are none.
pub(crate) fn skipped_warning(file: &str, skipped: &[String], what: &str) -> Option<String> {
    let first = skipped.first()?;
    let n = skipped.len();
    let plural = if n == 1 { "y" } else { "ies" };
    Some(format!("{file}: {n} entr{plural} {what} (first: {first})"))
}

/// Turn a table file name from a mapfile or a listing (`/SKX/events/skylakex_core.json`) into a
/// path relative to the events directory (`SKX/events/skylakex_core.json`).
/// Refuses anything that could leave the directory or is not a plain name:
/// `..`, `.`, empty parts, and characters outside `A-Z a-z 0-9 . _ + -`.
pub fn relative_path(filename: &str) -> Result<String, String> {
    let rel = filename.trim().trim_start_matches('/');
    let ok = !rel.is_empty()
        && rel.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        });
    if ok {
        Ok(rel.to_string())
    } else {
        Err(format!(
            "refusing file name {filename:?}: not a plain path inside the repository"
        ))
    }
}

/// `attr.type` values of the kernel ABI.
pub use pmx_model::encoding::perf_type;

/// Where an event definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// The spec itself was an encoding.
    Spec,
    /// The kernel's generic and software events.
    Kernel,
    /// sysfs aliases.
    Sysfs,
    /// Intel perfmon JSON.
    IntelJson,
    /// Linux perf's JSON tables (AMD).
    PerfJson,
    /// Event tables built into pmx (Intel's perfmon facts, AMD Zen), used
    /// when no events directory has tables for the CPU.
    Builtin,
    /// libpfm4.
    Libpfm,
    /// Intel architectural events and fixed counters (SDM).
    Architectural,
    /// pmx's built-in AMD Zen tables ([`amd_builtin`]).
    AmdBuiltin,
}

impl SourceKind {
    /// The name used by `--source`.
    pub fn cli_name(self) -> &'static str {
        match self {
            SourceKind::Spec => "spec",
            SourceKind::Kernel => "kernel",
            SourceKind::Sysfs => "sysfs",
            SourceKind::IntelJson => "intel-json",
            SourceKind::PerfJson => "perf-json",
            SourceKind::Builtin => "builtin",
            SourceKind::Libpfm => "libpfm",
            SourceKind::Architectural => "arch",
            SourceKind::AmdBuiltin => "builtin-amd",
        }
    }

    /// Parse a `--source` name.
    pub fn from_cli_name(s: &str) -> Option<SourceKind> {
        [
            SourceKind::Kernel,
            SourceKind::Sysfs,
            SourceKind::IntelJson,
            SourceKind::PerfJson,
            SourceKind::Builtin,
            SourceKind::Libpfm,
            SourceKind::Architectural,
            SourceKind::AmdBuiltin,
        ]
        .into_iter()
        .find(|k| {
            k.cli_name().eq_ignore_ascii_case(s)
                || (s == "json" && *k == SourceKind::IntelJson)
                || (s == "perf" && *k == SourceKind::PerfJson)
        })
    }
}

/// Which counters may hold an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Counters {
    /// Any general-purpose counter.
    AnyGp,
    /// Only these general-purpose counters.
    Gp {
        /// Counter indices.
        list: Vec<u8>,
    },
    /// A fixed counter (and, when `gp` is not empty, also these
    /// general-purpose counters).
    Fixed {
        /// Fixed counter index.
        index: u8,
        /// General-purpose alternatives.
        gp: Vec<u8>,
    },
    /// Not a core counter: the kernel or another PMU counts it.
    NotCore,
    /// The source does not say.
    Unknown,
}

impl Counters {
    /// Parse Intel's `Counter` column: `0,1,2,3`, `Fixed counter 1`,
    /// `0-3`, `0,1,2,3,4,5,6,7`, `Fixed counter 0,1,...`.
    pub fn parse_intel(s: &str) -> Counters {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix("Fixed counter") {
            let idx = rest
                .trim()
                .split(',')
                .next()
                .and_then(|x| x.trim().parse().ok());
            return match idx {
                Some(i) => Counters::Fixed {
                    index: i,
                    gp: Vec::new(),
                },
                None => Counters::Unknown,
            };
        }
        let mut list = Vec::new();
        for part in t.split(',') {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            if let Some((a, b)) = p.split_once('-') {
                match (a.trim().parse::<u8>(), b.trim().parse::<u8>()) {
                    (Ok(a), Ok(b)) if a <= b => list.extend(a..=b),
                    _ => return Counters::Unknown,
                }
            } else if let Ok(n) = p.parse() {
                list.push(n);
            } else {
                return Counters::Unknown;
            }
        }
        if list.is_empty() {
            Counters::Unknown
        } else {
            Counters::Gp { list }
        }
    }

    /// Plain words: "general-purpose 0–3 only", "fixed counter 1".
    pub fn describe(&self) -> String {
        fn ranges(list: &[u8]) -> String {
            let mut out: Vec<String> = Vec::new();
            let mut i = 0;
            while i < list.len() {
                let mut j = i;
                while j + 1 < list.len() && list[j + 1] == list[j] + 1 {
                    j += 1;
                }
                if j > i {
                    out.push(format!("{}–{}", list[i], list[j]));
                } else {
                    out.push(list[i].to_string());
                }
                i = j + 1;
            }
            out.join(", ")
        }
        match self {
            Counters::AnyGp => "any general-purpose counter".to_string(),
            Counters::Gp { list } => format!("general-purpose {} only", ranges(list)),
            Counters::Fixed { index, gp } if gp.is_empty() => format!("fixed counter {index}"),
            Counters::Fixed { index, gp } => {
                format!("fixed counter {index}, or general-purpose {}", ranges(gp))
            }
            Counters::NotCore => "not a core counter".to_string(),
            Counters::Unknown => "not stated by the source".to_string(),
        }
    }
}

/// Precise (skid-free) sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precise {
    /// No precise form.
    No,
    /// Intel PEBS (the JSON's `PEBS` value: 1 precise, 2 precise with
    /// extra records/precise distribution).
    Pebs(u8),
    /// AMD IBS (op sampling).
    Ibs,
    /// The source does not say.
    Unknown,
}

/// One event as a source defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventDef {
    /// The name as the source spells it (`LONGEST_LAT_CACHE.MISS`).
    pub name: String,
    /// The PMU that counts it (`cpu`, `software`, `msr`, `uncore_cha`…).
    pub pmu: String,
    /// Which source.
    pub source: SourceKind,
    /// Where in the source: file, sysfs path, libpfm PMU.
    pub origin: String,
    /// `attr.type` when fixed by the ABI; `None` when it comes from the
    /// PMU's sysfs `type` at run time.
    #[serde(rename = "type")]
    pub perf_type: Option<u32>,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1`.
    pub config1: u64,
    /// `attr.config2`.
    pub config2: u64,
    /// One line (or more) of description.
    pub description: String,
    /// Which counters may hold it.
    pub counters: Counters,
    /// Precise form.
    pub precise: Precise,
    /// Deprecated by its source.
    pub deprecated: bool,
    /// The source's suggested sample-after value.
    pub sample_after: Option<u64>,
    /// Anything else worth knowing (errata, what the kernel maps it to).
    pub notes: Vec<String>,
    /// The encoding in the source's own terms (`event=0x29,umask=0x01`),
    /// when the source has such a form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terms: Option<String>,
    /// The same encoding under other names, with their source
    /// (`libpfm4 LS_DISPATCH:LD_DISPATCH`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
}

impl EventDef {
    /// A definition with the given identity and encoding; the rest empty.
    pub fn new(name: &str, pmu: &str, source: SourceKind, origin: &str) -> EventDef {
        EventDef {
            name: name.to_string(),
            pmu: pmu.to_string(),
            source,
            origin: origin.to_string(),
            perf_type: None,
            config: 0,
            config1: 0,
            config2: 0,
            description: String::new(),
            counters: Counters::Unknown,
            precise: Precise::Unknown,
            deprecated: false,
            sample_after: None,
            notes: Vec::new(),
            terms: None,
            also: Vec::new(),
        }
    }

    /// Does this event live on the core PMU (so it has a register view)?
    pub fn is_core(&self) -> bool {
        is_core_pmu(&self.pmu) && self.perf_type.is_none_or(|t| t == perf_type::RAW)
    }
}

/// The lookup key of a name: lower case, `:` → `.`.
pub fn name_key(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(':', ".")
}

/// `pmx_model::spec::closest(word, keys, n)` for lower-case keys, the same
/// answer found with less work (thousands of names for one misspelt name,
/// in a debug build's `pmx analyze` most of its time): `closest` keeps a
/// key at most half the longer length of edits away (at least one), and
/// once `n` keys are kept, a key further away than the `n`th cannot be
/// one of them. Within that limit, a key whose length differs by more is
/// not compared (each edit changes the length by one at most), and a
/// comparison stops at the first row of the distance table over it (a
/// row's least value never falls in the next).
fn closest_keys<'a>(word: &str, keys: impl Iterator<Item = &'a str>, n: usize) -> Vec<String> {
    let w: Vec<char> = word.chars().collect();
    // The best so far, by (distance, key), each key once.
    let mut best: Vec<(usize, &str)> = Vec::new();
    for c in keys {
        let mut limit = (c.len().max(word.len()) / 2).max(1);
        if best.len() == n {
            limit = limit.min(best[n - 1].0);
        }
        let Some(d) = pmx_model::spec::distance_within(&w, c, limit) else {
            continue;
        };
        if let Err(at) = best.binary_search(&(d, c)) {
            best.insert(at, (d, c));
            best.truncate(n);
        }
    }
    best.into_iter().map(|(_, c)| c.to_string()).collect()
}

/// A source of event definitions.
pub trait EventSource {
    /// Which kind of source this is.
    fn kind(&self) -> SourceKind;
    /// Where it reads from, for messages (`SKX/events/skylakex_core.json`).
    fn describe(&self) -> String;
    /// Every event it knows, in its own order.
    fn events(&self) -> Vec<EventDef>;
    /// The event with this name (given as typed; match case-insensitively
    /// with `.`/`:` interchangeable), or `None`.
    fn find(&self, name: &str) -> Option<EventDef>;
    /// Every name it knows, for suggestions.
    fn names(&self) -> Vec<String> {
        self.events().into_iter().map(|e| e.name).collect()
    }
    /// Where `def` (one of its events) came from and its version, for
    /// `pmx explain` (`built in: intel/perfmon 6dadedf3aa48,
    /// SKX/events/skylakex_core.json V1.37`); `None` when the kind says
    /// it all.
    fn provenance(&self, _def: &EventDef) -> Option<String> {
        None
    }
}

impl<T: EventSource + ?Sized> EventSource for std::sync::Arc<T> {
    fn kind(&self) -> SourceKind {
        (**self).kind()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn events(&self) -> Vec<EventDef> {
        (**self).events()
    }
    fn find(&self, name: &str) -> Option<EventDef> {
        (**self).find(name)
    }
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn provenance(&self, def: &EventDef) -> Option<String> {
        (**self).provenance(def)
    }
}

/// Problems loading a source.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What happened.
        source: std::io::Error,
    },
    /// A malformed file.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// What pmx resolves for: the CPU, its vendor's register layout, and
/// whether it is the machine pmx runs on (only then do sysfs aliases apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The CPU.
    pub cpu: CpuId,
    /// True when `cpu` is this machine's CPU.
    pub host: bool,
}

impl Target {
    /// The register layout for this CPU, when it is x86.
    pub fn arch(&self) -> Option<Arch> {
        match self.cpu.vendor {
            Vendor::Intel => Some(Arch::Intel),
            Vendor::Amd | Vendor::Hygon => Some(Arch::Amd),
            Vendor::Other(_) => None,
        }
    }
}

/// Options for loading the database.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Events directory (Intel's perfmon tables, Linux perf's tables or
    /// both); `None` and `more_events_dirs` empty: `events_dir_default`.
    pub events_dir: Option<PathBuf>,
    /// Further events directories (`--events-dir` given more than once),
    /// searched after `events_dir`.
    pub more_events_dirs: Vec<PathBuf>,
    /// Root for sysfs (tests); `/` by default.
    pub sysfs_root: Option<PathBuf>,
    /// Skip libpfm4 even when it is installed.
    pub no_libpfm: bool,
    /// Where the tables are when no directory is given (`$PMX_EVENTS_DIR`,
    /// the cache); also how the cache is told apart in provenance.
    pub events_dir_default: EventsDirDefault,
}

/// Where the events directory is when no `--events-dir` is given:
/// `$PMX_EVENTS_DIR`, else the `events` directory of pmx's cache (the one
/// rule of [`pmx_io::dirs::Dirs`]: `$XDG_CACHE_HOME/pmx/events`, else
/// `~/.cache/pmx/events`). A value: the environment is read at the edge
/// (the CLI, `pmx::events_dirs::from_env` for the embedding API) and
/// passed down; [`EventsDirDefault::resolve`] is the rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsDirDefault {
    /// `$PMX_EVENTS_DIR` when set and not empty.
    pub env: Option<PathBuf>,
    /// pmx's cache's `events` directory, when there is a cache.
    pub cache: Option<PathBuf>,
}

impl EventsDirDefault {
    /// The default for a `PMX_EVENTS_DIR` value (`None` or empty: unset)
    /// and pmx's directories.
    pub fn new(pmx_events_dir: Option<std::ffi::OsString>, dirs: &pmx_io::dirs::Dirs) -> Self {
        EventsDirDefault {
            env: pmx_events_dir.filter(|d| !d.is_empty()).map(PathBuf::from),
            cache: dirs.cache_sub("events"),
        }
    }

    /// Where Intel's tables are looked for: `flag` (`--events-dir`), then
    /// `PMX_EVENTS_DIR`, then the cache.
    pub fn resolve(&self, flag: Option<PathBuf>) -> Option<PathBuf> {
        flag.or_else(|| self.env.clone())
            .or_else(|| self.cache.clone())
    }

    /// The events directories to search, in order: `flags` when any is
    /// given, else `PMX_EVENTS_DIR`, else the cache.
    pub fn resolve_all(&self, flags: &[PathBuf]) -> Vec<PathBuf> {
        if !flags.is_empty() {
            return flags.to_vec();
        }
        self.resolve(None).into_iter().collect()
    }
}

/// The loaded sources for one target, in resolution order.
pub struct Database {
    /// What it resolves for.
    pub target: Target,
    sources: Vec<Box<dyn EventSource>>,
    sysfs: Option<std::sync::Arc<sysfs::SysfsEvents>>,
    events_dirs: Vec<PathBuf>,
    /// Sources that could not be loaded, and why (shown by `list`/`explain`).
    pub unavailable: Vec<(SourceKind, String)>,
}

/// Do two definitions encode the same event (PMU, type and config words)?
pub fn same_encoding(a: &EventDef, b: &EventDef) -> bool {
    a.pmu == b.pmu
        && a.perf_type == b.perf_type
        && (a.config, a.config1, a.config2) == (b.config, b.config1, b.config2)
}

/// How a source is named beside an event name (`libpfm4`, `perf`).
pub fn source_label(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Libpfm => "libpfm4",
        SourceKind::PerfJson => "perf",
        SourceKind::IntelJson => "Intel",
        SourceKind::AmdBuiltin => "built-in",
        SourceKind::Builtin => "built-in",
        other => other.cli_name(),
    }
}

/// An event resolved to its encoding, with both views.
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    /// The spec as typed.
    pub spec: String,
    /// The definition found (none when the spec was an encoding).
    pub def: Option<EventDef>,
    /// The source that answered.
    pub source: SourceKind,
    /// The attr for `perf_event_open(2)`, modifiers applied.
    pub attr: PerfAttr,
    /// The control-register view, for core-PMU events on x86.
    pub register: Option<Encoded>,
}

/// The terms any event takes, whatever its PMU: perf's setting terms
/// (applied by [`PerfAttr::apply_settings`]) and the whole config words
/// (`config=`, `config1=` … as perf sets them on a generic event). Any
/// other term is an error naming the ones allowed.
fn apply_any_event_terms(
    spec: &EventSpec,
    event: &str,
    pmu: &str,
    attr: &mut PerfAttr,
) -> Result<(), SpecError> {
    for t in &spec.terms {
        if is_setting_term(&t.key) {
            continue;
        }
        let word = match t.key.as_str() {
            "config" => &mut attr.config,
            "config1" => &mut attr.config1,
            "config2" => &mut attr.config2,
            "config3" => &mut attr.config3,
            _ => {
                let valid: Vec<&str> = CONFIG_TERMS.iter().chain(SETTING_TERMS).copied().collect();
                return Err(SpecError::new(
                    &spec.text,
                    t.key_span,
                    format!(
                        "unknown term '{}' for {event} (a {pmu} event takes: {})",
                        t.key,
                        valid.join(", ")
                    ),
                )
                .with_suggestions(closest(&t.key, valid, 3)));
            }
        };
        *word = t.number().ok_or_else(|| {
            SpecError::new(&spec.text, t.span, format!("'{}' takes a number", t.key))
        })?;
    }
    Ok(())
}

impl Database {
    /// A database over the given sources (in resolution order).
    pub fn from_sources(target: Target, sources: Vec<Box<dyn EventSource>>) -> Database {
        Database {
            target,
            sources,
            sysfs: None,
            events_dirs: Vec::new(),
            unavailable: Vec::new(),
        }
    }

    /// The same database with `dirs` as [`Database::events_dirs`] (where
    /// the metric library looks for tables).
    pub fn with_events_dirs(mut self, dirs: Vec<PathBuf>) -> Database {
        self.events_dirs = dirs;
        self
    }

    /// The cheap database: the kernel's generic and software events and
    /// the sysfs aliases under `sysfs_root` (`/` on the host), without
    /// Intel's tables or libpfm4. Most `-e` lists resolve with it; load the
    /// full one ([`Database::load`]) when a name does not.
    pub fn light(target: Target, sysfs_root: &std::path::Path) -> Database {
        let mut db = Database::from_sources(
            target.clone(),
            vec![Box::new(builtin::KernelEvents::new(&target)) as Box<dyn EventSource>],
        );
        db.set_sysfs(std::sync::Arc::new(sysfs::SysfsEvents::load(sysfs_root)));
        db
    }

    /// Load every source that applies to `target`.
    pub fn load(target: Target, opts: &LoadOptions) -> Database {
        let flags: Vec<PathBuf> = opts
            .events_dir
            .iter()
            .chain(&opts.more_events_dirs)
            .cloned()
            .collect();
        let dirs = opts.events_dir_default.resolve_all(&flags);
        let mut db = Database {
            target: target.clone(),
            sources: Vec::new(),
            sysfs: None,
            events_dirs: dirs.clone(),
            unavailable: Vec::new(),
        };
        db.sources
            .push(Box::new(builtin::KernelEvents::new(&target)));
        if target.host {
            let root = opts
                .sysfs_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"));
            db.set_sysfs(std::sync::Arc::new(sysfs::SysfsEvents::load(&root)));
        }
        if target.cpu.vendor == Vendor::Intel {
            db.load_intel_tables(&dirs, opts.events_dir_default.cache.as_deref());
        } else if dirs.is_empty() {
            db.unavailable.push((
                SourceKind::PerfJson,
                "no events directory: give --events-dir or set PMX_EVENTS_DIR".to_string(),
            ));
        } else {
            db.load_perf_tables(&dirs, opts.events_dir_default.cache.as_deref());
        }
        // AMD's built-in tables: the hook (see `amd_builtin`).
        if let Some(src) = amd_builtin::AmdBuiltin::for_cpu(&target.cpu) {
            match src {
                Ok(src) => db.sources.push(Box::new(src)),
                Err(e) => db.unavailable.push((amd_builtin::SOURCE_KIND, e)),
            }
        }
        if !opts.no_libpfm {
            match libpfm::Libpfm::load(&target.cpu) {
                Ok(src) => db.sources.push(Box::new(src)),
                Err(e) => db.unavailable.push((SourceKind::Libpfm, e)),
            }
        }
        if target.cpu.vendor == Vendor::Intel {
            db.sources
                .push(Box::new(builtin::Architectural::new(&target)));
        }
        db
    }

    /// Intel's tables from the first directory that has them for the CPU
    /// (a single directory is read as Intel's layout, as it always was),
    /// else the tables built into pmx ([`tables::intel`]).
    fn load_intel_tables(&mut self, dirs: &[PathBuf], cache: Option<&std::path::Path>) {
        let mut errors = Vec::new();
        for dir in dirs {
            let intel = dirs.len() == 1
                || perf_json::layouts(dir)
                    .iter()
                    .any(|l| matches!(l, perf_json::Layout::Intel(_)));
            if !intel {
                errors.push(format!(
                    "{}: no Intel perfmon tables (mapfile.csv)",
                    dir.display()
                ));
                continue;
            }
            match intel_json::IntelJson::load(dir, &self.target.cpu) {
                Ok(mut src) => {
                    if cache == Some(dir.as_path()) {
                        src.set_provenance(format!("cache {}", dir.display()));
                    }
                    self.sources.push(Box::new(src));
                    return;
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        match intel_json::IntelJson::built_in(&self.target.cpu) {
            Ok(src) => self.sources.push(Box::new(src)),
            Err(e) => {
                if dirs.is_empty() {
                    errors.push(
                        "no events directory: give --events-dir or set PMX_EVENTS_DIR".to_string(),
                    );
                }
                errors.push(format!("built-in tables: {e}"));
                self.unavailable
                    .push((SourceKind::IntelJson, errors.join("; ")));
            }
        }
    }

    /// Linux perf's tables from the first directory that has them for the
    /// CPU; uncore terms placed by this machine's PMU formats when it is
    /// the host.
    fn load_perf_tables(&mut self, dirs: &[PathBuf], cache: Option<&std::path::Path>) {
        let formats = perf_json::UncoreFormats {
            host: match &self.sysfs {
                Some(s) if self.target.host => s
                    .pmus()
                    .iter()
                    .filter(|p| p.name.starts_with("amd_"))
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            },
        };
        let mut errors = Vec::new();
        for dir in dirs {
            let perf: Vec<PathBuf> = perf_json::layouts(dir)
                .into_iter()
                .filter_map(|l| match l {
                    perf_json::Layout::Perf(p) => Some(p),
                    perf_json::Layout::Intel(_) => None,
                })
                .collect();
            if perf.is_empty() {
                errors.push(format!(
                    "{}: no Linux perf tables (x86/mapfile.csv; 'pmx events fetch' puts them there)",
                    dir.display()
                ));
            }
            for x86 in perf {
                match perf_json::PerfJson::load(&x86, &self.target.cpu, &formats) {
                    Ok(mut src) => {
                        if cache == Some(dir.as_path()) {
                            src.place = "cache";
                        }
                        self.sources.push(Box::new(src));
                        return;
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
        self.unavailable
            .push((SourceKind::PerfJson, errors.join("; ")));
    }

    /// The events directories searched, in order (every `--events-dir`,
    /// else `$PMX_EVENTS_DIR`, else the cache: [`EventsDirDefault`]);
    /// the metric library reads the same list.
    pub fn events_dirs(&self) -> &[PathBuf] {
        &self.events_dirs
    }

    /// Other names of `def`'s encoding in the other loaded sources (same
    /// PMU, type and config words): `libpfm4 LS_DISPATCH:LD_DISPATCH`.
    pub fn same_encoding(&self, def: &EventDef) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.sources {
            if s.kind() == def.source
                || !matches!(
                    s.kind(),
                    SourceKind::Libpfm
                        | SourceKind::PerfJson
                        | SourceKind::IntelJson
                        | SourceKind::AmdBuiltin
                        | SourceKind::Builtin
                )
            {
                continue;
            }
            for e in s.events() {
                let name = format!("{} {}", source_label(s.kind()), e.name);
                if same_encoding(&e, def) && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// The sysfs source, when resolving for this machine.
    pub fn sysfs(&self) -> Option<&sysfs::SysfsEvents> {
        self.sysfs.as_deref()
    }

    /// Use `sys` for sysfs aliases and `pmu/terms/` placement; it joins the
    /// resolution order right after the kernel's generic events.
    pub fn set_sysfs(&mut self, sys: std::sync::Arc<sysfs::SysfsEvents>) {
        self.sources.retain(|s| s.kind() != SourceKind::Sysfs);
        let at = self
            .sources
            .iter()
            .take_while(|s| s.kind() == SourceKind::Kernel)
            .count();
        self.sources.insert(at, Box::new(sys.clone()));
        self.sysfs = Some(sys);
    }

    /// Add a source at the end of the resolution order.
    pub fn push_source(&mut self, source: Box<dyn EventSource>) {
        self.sources.push(source);
    }

    /// The loaded sources.
    pub fn sources(&self) -> &[Box<dyn EventSource>] {
        &self.sources
    }

    /// Where `def` came from, with its version ([`EventSource::provenance`]
    /// of the loaded source of its kind).
    pub fn provenance(&self, def: &EventDef) -> Option<String> {
        self.sources
            .iter()
            .filter(|s| s.kind() == def.source)
            .find_map(|s| s.provenance(def))
    }

    /// Find a name in the sources, first match wins.
    pub fn find(&self, name: &str) -> Option<EventDef> {
        self.sources.iter().find_map(|s| s.find(name))
    }

    /// Up to three known names closest to `name`.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let names: Vec<String> = self.sources.iter().flat_map(|s| s.names()).collect();
        let key = name_key(name);
        // Compare in key space so '.' and ':' do not count as edits.
        let keys: Vec<(String, &String)> = names.iter().map(|n| (name_key(n), n)).collect();
        let best = closest_keys(&key, keys.iter().map(|(k, _)| k.as_str()), 3);
        let mut out: Vec<String> = Vec::new();
        for b in best {
            if let Some((_, n)) = keys.iter().find(|(k, _)| *k == b) {
                if !out.contains(n) {
                    out.push((*n).clone());
                }
            }
        }
        out
    }

    /// Resolve a parsed spec to an encoding.
    pub fn resolve(&self, spec: &EventSpec) -> Result<Resolved, SpecError> {
        self.resolve_as(spec, true)
    }

    /// [`Database::resolve`] for a caller that only asks what a spec
    /// resolves to, if anything: an unknown name costs no close matches
    /// (which compare it with every name the sources know; `pmx analyze`
    /// tries each event of a file this way).
    pub fn try_resolve(&self, spec: &EventSpec) -> Option<Resolved> {
        self.resolve_as(spec, false).ok()
    }

    /// An event of a PMU the kernel registers only as numbered boxes,
    /// resolved on each box, as perf opens it on every box (and sums
    /// them): `uncore_imc/cas_count_read/` or `uncore_imc/event=0x4/` on
    /// `uncore_imc_0` …, a table's `UNC_M_CAS_COUNT.RD` (PMU `uncore_imc`)
    /// the same, a bare sysfs alias (`cas_count_read`) on every box of its
    /// PMU that has it. Each [`Resolved`] names its box in `attr.pmu`, with
    /// the box's `type`. `Ok(None)`: not such an event (or a name that
    /// does not resolve: [`Database::resolve`] says why); an error: the
    /// spec resolves on none of the boxes.
    pub fn resolve_boxes(&self, spec: &EventSpec) -> Result<Option<Vec<Resolved>>, SpecError> {
        let Some(sys) = self.sysfs.as_deref() else {
            return Ok(None);
        };
        let on = |pmu: &str| {
            let mut s = spec.clone();
            s.pmu = Some(pmu.to_string());
            self.resolve(&s)
        };
        if let Some(pmu) = spec.pmu.as_deref().filter(|p| !is_core_pmu(p)) {
            let boxes = sys.boxes(pmu);
            if boxes.is_empty() {
                return Ok(None);
            }
            let (mut out, mut first_error) = (Vec::new(), None);
            for b in boxes {
                match on(&b.name) {
                    Ok(r) => out.push(r),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            return match (out.is_empty(), first_error) {
                (true, Some(e)) => Err(e),
                _ => Ok(Some(out)),
            };
        }
        let Ok(r) = self.resolve_as(spec, false) else {
            return Ok(None);
        };
        // The kernel's generic events never read sysfs.
        let generic = r.attr.type_.is_some_and(|t| t <= perf_type::BREAKPOINT);
        if generic && r.source != SourceKind::Sysfs {
            return Ok(None);
        }
        if sys.pmu(&r.attr.pmu).is_none() {
            let boxes = sys.boxes(&r.attr.pmu);
            let each = boxes.iter().map(|b| {
                let mut x = r.clone();
                x.attr.pmu = b.name.clone();
                x.attr.type_ = b.type_id;
                x
            });
            return Ok(Some(each.collect()).filter(|v: &Vec<Resolved>| !v.is_empty()));
        }
        let alias = r.def.as_ref().filter(|d| d.source == SourceKind::Sysfs);
        let (Some(def), None) = (alias, spec.pmu.as_ref()) else {
            return Ok(None);
        };
        let Some((base, _)) = sysfs::box_base(&def.pmu) else {
            return Ok(None);
        };
        let has = |b: &&pmx_sys::pmu::KernelPmu| {
            b.events
                .iter()
                .any(|e| e.name.eq_ignore_ascii_case(&def.name))
        };
        let boxes: Vec<_> = sys.boxes(base).into_iter().filter(has).collect();
        if boxes.len() < 2 {
            return Ok(None);
        }
        boxes
            .iter()
            .map(|b| on(&b.name))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// [`Database::resolve`], an unknown name's error with close matches
    /// when `suggest`.
    fn resolve_as(&self, spec: &EventSpec, suggest: bool) -> Result<Resolved, SpecError> {
        let arch = self.target.arch();
        spec.settings()?;
        match &spec.body {
            Body::Numeric { type_, config } if *type_ != perf_type::RAW => {
                self.resolve_numeric(spec, *type_, *config)
            }
            Body::Terms | Body::Raw { .. } | Body::Numeric { .. } => {
                let pmu = spec.pmu.as_deref().unwrap_or("cpu");
                if is_core_pmu(pmu) {
                    let Some(arch) = arch else {
                        return Err(SpecError::new(
                            &spec.text,
                            Span::new(0, spec.text.len()),
                            format!(
                                "{} is not an x86 CPU: pmx has no core register layout for it",
                                self.target.cpu
                            ),
                        ));
                    };
                    let enc = encode_spec(
                        spec,
                        EncodeOptions {
                            arch,
                            sampling: false,
                        },
                    )?;
                    return Ok(Resolved {
                        spec: spec.text.clone(),
                        def: None,
                        source: SourceKind::Spec,
                        attr: enc.attr.clone(),
                        register: Some(enc),
                    });
                }
                // Terms for another PMU: placed by its sysfs format.
                let placed = self.sysfs.as_ref().and_then(|s| s.place_spec(spec, pmu));
                match placed {
                    Some(r) => r,
                    None => {
                        let why = if self.target.host {
                            format!("no PMU '{pmu}' on this machine (see 'pmx info' for the kernel's PMUs)")
                        } else {
                            format!("PMU '{pmu}': its format comes from sysfs, which only describes this machine, not {}", self.target.cpu)
                        };
                        Err(SpecError::new(&spec.text, Span::new(0, pmu.len()), why))
                    }
                }
            }
            Body::Breakpoint { .. } => Err(SpecError::new(
                &spec.text,
                Span::new(0, 3),
                "breakpoints (mem:) are counted by pmx stat, not resolved to a counter encoding",
            )),
            Body::Named { parts, spans } => {
                let name = parts.join(":");
                let span = Span::new(spans[0].start, spans.last().map(|s| s.end).unwrap_or(1));
                let def = match &spec.pmu {
                    Some(pmu) if !is_core_pmu(pmu) || self.target.host => self
                        .sources
                        .iter()
                        .filter(|s| s.kind() == SourceKind::Sysfs)
                        .find_map(|s| s.find(&format!("{pmu}/{name}")))
                        .or_else(|| {
                            if is_core_pmu(pmu) {
                                self.find(&name)
                            } else {
                                None
                            }
                        }),
                    _ => self.find(&name),
                };
                let Some(def) = def else {
                    let sugg = if suggest {
                        self.suggest(&name)
                    } else {
                        Vec::new()
                    };
                    let mut msg = format!("unknown event '{name}' for {}", self.target.cpu);
                    if !self.unavailable.is_empty() {
                        let why: Vec<String> = self
                            .unavailable
                            .iter()
                            .map(|(k, w)| format!("{}: {w}", k.cli_name()))
                            .collect();
                        msg.push_str(&format!(" (sources not loaded: {})", why.join("; ")));
                    }
                    return Err(SpecError::new(&spec.text, span, msg).with_suggestions(sugg));
                };
                self.apply(spec, def)
            }
        }
    }

    /// perf's numeric form `TYPE:CONFIG` for a type other than the core
    /// PMU's: the attr as typed, the PMU named from the type (sysfs knows
    /// the dynamic ones).
    fn resolve_numeric(
        &self,
        spec: &EventSpec,
        type_: u32,
        config: u64,
    ) -> Result<Resolved, SpecError> {
        let pmu = match type_ {
            perf_type::HARDWARE | perf_type::HW_CACHE => "cpu".to_string(),
            perf_type::SOFTWARE => "software".to_string(),
            perf_type::TRACEPOINT => "tracepoint".to_string(),
            perf_type::BREAKPOINT => "breakpoint".to_string(),
            t => self
                .sysfs
                .as_ref()
                .and_then(|s| s.pmus().iter().find(|p| p.type_id == Some(t)))
                .map(|p| p.name.clone())
                .unwrap_or_else(|| format!("type {t}")),
        };
        let mut attr = PerfAttr {
            pmu: pmu.clone(),
            type_: Some(type_),
            config,
            ..PerfAttr::default()
        };
        let name = spec
            .text
            .split(['/', ':'])
            .take(2)
            .collect::<Vec<_>>()
            .join(":");
        apply_any_event_terms(spec, &name, &pmu, &mut attr)?;
        attr.apply_settings(&spec.settings()?);
        attr.apply_modifiers(&spec.modifiers);
        Ok(Resolved {
            spec: spec.text.clone(),
            def: None,
            source: SourceKind::Spec,
            attr,
            register: None,
        })
    }

    /// Apply the spec's terms and modifiers to a found definition.
    pub fn apply(&self, spec: &EventSpec, def: EventDef) -> Result<Resolved, SpecError> {
        let mut attr = PerfAttr {
            pmu: def.pmu.clone(),
            type_: def.perf_type,
            config: def.config,
            config1: def.config1,
            config2: def.config2,
            ..PerfAttr::default()
        };
        let core = def.is_core();
        match (core, self.target.arch()) {
            (true, Some(arch)) => {
                apply_terms(&spec.text, &spec.terms, arch, &mut attr)?;
            }
            _ => apply_any_event_terms(spec, &def.name, &def.pmu, &mut attr)?,
        }
        attr.apply_settings(&spec.settings()?);
        attr.apply_modifiers(&spec.modifiers);
        let register = match (core, self.target.arch()) {
            (true, Some(arch)) => {
                let mut notes = Vec::new();
                let enc = encode_attr(attr.clone(), arch.core_layout(), arch, false, &mut notes);
                attr = enc.attr.clone();
                Some(enc)
            }
            _ => None,
        };
        Ok(Resolved {
            spec: spec.text.clone(),
            source: def.source,
            def: Some(def),
            attr,
            register,
        })
    }
}

#[cfg(test)]
mod events_dir_default_tests {
    use super::EventsDirDefault;
    use pmx_io::dirs::Dirs;
    use std::path::PathBuf;

    fn dirs(pmx_events_dir: Option<&str>) -> EventsDirDefault {
        let home = Dirs::from_vars(|k| (k == "HOME").then(|| "/h".into()));
        EventsDirDefault::new(pmx_events_dir.map(Into::into), &home)
    }

    #[test]
    fn the_flag_then_the_variable_then_the_cache() {
        let cache = PathBuf::from("/h/.cache/pmx/events");
        let flag = PathBuf::from("/flag");
        assert_eq!(dirs(Some("/env")).resolve(Some(flag.clone())), Some(flag));
        assert_eq!(dirs(Some("/env")).resolve(None), Some("/env".into()));
        assert_eq!(dirs(Some("")).resolve(None), Some(cache.clone()));
        assert_eq!(dirs(None).resolve(None), Some(cache.clone()));
        assert_eq!(dirs(None).resolve_all(&[]), vec![cache]);
        let flags = vec![PathBuf::from("/a"), PathBuf::from("/b")];
        assert_eq!(dirs(Some("/env")).resolve_all(&flags), flags);
        assert_eq!(EventsDirDefault::default().resolve(None), None);
    }
}

#[cfg(test)]
mod suggest_tests {
    use super::closest_keys;
    use pmx_model::spec::distance_within;

    #[test]
    fn distances_past_the_limit_are_not_given() {
        let w: Vec<char> = "cycles".chars().collect();
        assert_eq!(distance_within(&w, "cycels", 2), Some(2));
        assert_eq!(distance_within(&w, "cycels", 1), None);
        // Too far off in length: no comparison at all.
        assert_eq!(distance_within(&w, "cyclesabcdefg", 6), None);
        assert_eq!(distance_within(&w, "cyclesabcdef", 6), Some(6));
    }

    #[test]
    fn closest_keys_answers_as_closest() {
        let keys = ["cycles", "cycle", "cpu-cycles", "bycles", "cycles", "xyzzy"];
        for word in ["cycels", "cycle", "x", "cpu_cycle"] {
            assert_eq!(
                closest_keys(word, keys.into_iter(), 3),
                pmx_model::spec::closest(word, keys, 3),
                "{word}"
            );
        }
    }
}
