//! `pmx merge`: combine `pmx stat --json` result files (one per rank or
//! host of a job) into one report: per event and metric the sum, min and
//! max (and who had them), mean and median, and the members that stand out.
//!
//! Members: with `--by rank` (default) each file is one member, named by
//! the rank it recorded (else its file name); with `--by host` the files of
//! one host are summed into one member first.
//!
//! Outliers, per event or metric with at least 3 members: a member stands
//! out when its robust z-score `|v − median| / (1.4826 × MAD)` is above
//! 3.5 (MAD: the median absolute deviation from the median; the rule of
//! Iglewicz and Hoaglin) *and* it differs from the median by more than
//! 10% — the second condition keeps a tight cluster (MAD near 0) from
//! flagging trivial differences. For plain counts (events without a unit)
//! the difference must also exceed the counting noise, `3·√(median + 1)`,
//! so one rank with 1 migration among ranks with none does not stand out
//! while one with 30 does.

mod stats;

use pmx_formats::read::rank::read_rank_file;
use pmx_formats::{ReadError, StatReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use stats::{stats, Stats};

/// What a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// Each file (rank) is one member.
    Rank,
    /// The files of one host are summed into one member.
    Host,
}

impl MemberKind {
    /// As `--by` spells it.
    pub fn word(self) -> &'static str {
        match self {
            MemberKind::Rank => "rank",
            MemberKind::Host => "host",
        }
    }
}

/// What to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Result files written by `pmx stat --json`.
    pub files: Vec<PathBuf>,
    /// What a member is.
    pub by: MemberKind,
}

/// Why the files could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A file could not be read, or is not a result file.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// `--by host` and a file records no host.
    #[error("--by host: {file} records no host (written by an older pmx?)")]
    NoHost {
        /// The file.
        file: String,
    },
}

/// An event count or a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueKind {
    /// An event's count.
    Event,
    /// A derived metric.
    Metric,
}

impl ValueKind {
    /// `event` or `metric`.
    pub fn word(self) -> &'static str {
        match self {
            ValueKind::Event => "event",
            ValueKind::Metric => "metric",
        }
    }
}

/// (kind, name, domain label).
pub type ValueKey = (ValueKind, String, String);

/// One member: a rank's file, or a host's files summed.
#[derive(Debug, Clone)]
pub struct Member {
    /// `rank 3`, `host n01`, or the file name.
    pub name: String,
    /// The host it ran on.
    pub host: Option<String>,
    /// Its rank.
    pub rank: Option<u64>,
    /// Its files.
    pub files: Vec<String>,
    /// Per value: the value and its unit.
    pub values: BTreeMap<ValueKey, (f64, String)>,
}

/// One event or metric over the members.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Which value.
    pub key: ValueKey,
    /// Its unit.
    pub unit: String,
    /// Over the members.
    pub stats: Stats,
}

/// The merged report.
#[derive(Debug, Clone)]
pub struct MergeReport {
    /// What a member is.
    pub by: MemberKind,
    /// Files read.
    pub files: usize,
    /// The members, ranks in order.
    pub members: Vec<Member>,
    /// Events first, then metrics, each in first-seen order.
    pub values: Vec<Merged>,
    /// Things the reader should know (a rank in two files).
    pub warnings: Vec<String>,
}

/// Read every file and merge them.
pub fn merge(opts: &MergeOptions) -> Result<MergeReport, MergeError> {
    let mut members: Vec<Member> = Vec::new();
    for f in &opts.files {
        members.push(member_of(f, &read_rank_file(f)?));
    }
    let mut warnings = Vec::new();
    match opts.by {
        MemberKind::Host => members = by_host(members)?,
        MemberKind::Rank => {
            warnings = duplicate_ranks(&members);
            members.sort_by_key(|m| (m.rank.is_none(), m.rank, m.name.clone()));
        }
    }
    let values = merged_values(&members);
    Ok(MergeReport {
        by: opts.by,
        files: opts.files.len(),
        members,
        values,
        warnings,
    })
}

/// One file's report as a member.
fn member_of(path: &Path, report: &StatReport) -> Member {
    let file = path.display().to_string();
    let rank = report.provenance.rank;
    let mut values = BTreeMap::new();
    for e in &report.rows {
        if let Some(value) = e.value {
            let key = (ValueKind::Event, e.event.clone(), e.domain.clone());
            values.insert(key, (value, e.unit.clone()));
        }
    }
    for m in &report.metrics {
        if let Some(value) = m.value {
            let key = (ValueKind::Metric, m.name.clone(), m.domain.clone());
            values.insert(key, (value, m.unit.clone()));
        }
    }
    let name = match rank {
        Some(r) => format!("rank {r}"),
        None => file.clone(),
    };
    Member {
        name,
        host: report.provenance.host.clone(),
        rank,
        files: vec![file],
        values,
    }
}

/// The members of each host summed into one.
fn by_host(members: Vec<Member>) -> Result<Vec<Member>, MergeError> {
    let mut hosts: BTreeMap<String, Member> = BTreeMap::new();
    for m in members {
        let h = m.host.clone().ok_or_else(|| MergeError::NoHost {
            file: m.files[0].clone(),
        })?;
        let entry = hosts.entry(h.clone()).or_insert_with(|| Member {
            name: format!("host {h}"),
            host: Some(h.clone()),
            rank: None,
            files: Vec::new(),
            values: BTreeMap::new(),
        });
        entry.files.extend(m.files);
        for (k, (v, unit)) in m.values {
            entry.values.entry(k).or_insert((0.0, unit)).0 += v;
        }
    }
    Ok(hosts.into_values().collect())
}

/// A warning for each rank that two files record.
fn duplicate_ranks(members: &[Member]) -> Vec<String> {
    let mut seen: BTreeMap<u64, String> = BTreeMap::new();
    let mut out = Vec::new();
    for m in members {
        if let Some(r) = m.rank {
            if let Some(other) = seen.insert(r, m.files[0].clone()) {
                out.push(format!("rank {r} appears in {other} and {}", m.files[0]));
            }
        }
    }
    out
}

/// Every (kind, name, domain) over the members, events first, each kind
/// in first-seen order.
fn merged_values(members: &[Member]) -> Vec<Merged> {
    let mut keys: Vec<ValueKey> = Vec::new();
    for m in members {
        for k in m.values.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort_by_key(|k| k.0 != ValueKind::Event);
    let mut out = Vec::new();
    for key in keys {
        let vals: Vec<(usize, f64)> = members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.values.get(&key).map(|(v, _)| (i, *v)))
            .collect();
        let unit = members
            .iter()
            .find_map(|m| m.values.get(&key).map(|(_, u)| u.clone()))
            .unwrap_or_default();
        let counts = key.0 == ValueKind::Event && unit.is_empty();
        if let Some(stats) = stats(&vals, counts) {
            out.push(Merged { key, unit, stats });
        }
    }
    out
}
