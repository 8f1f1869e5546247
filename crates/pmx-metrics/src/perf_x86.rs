//! Linux perf's x86 metric tables (AMD Zen 1–5): `x86/mapfile.csv` and the
//! `amdzenN/*.json` directories it names, read at run time from an events
//! directory.
//!
//! perf's mapfile maps a CPU key to a *directory*:
//! `AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),v1,amdzen3,core`. The
//! pattern is a POSIX extended regular expression over the key
//! `Vendor-Family-Model` (family in decimal, model in hex); as in perf, it
//! must match the whole key without the stepping (or the whole key with
//! it), the first matching row wins, and case is ignored. Every JSON file of
//! the directory is a list that may mix events and metrics; the metrics
//! (entries with a `MetricName`) are read with
//! [`crate::tables::parse_perf_format`], one table per file, so
//! `x86/amdzen4/pipeline.json` is the source of Zen 4's pipeline tree.
//!
//! The layout is told apart from Intel's by its contents: a `mapfile.csv`
//! (in the directory itself or in its `x86/`) whose selected row's
//! `Filename` is a directory.
//!
//! ## Thresholds of the pipeline tree
//!
//! AMD's tables define the tree (`PipelineL1`, `PipelineL2`,
//! `<parent>_group`) but no `MetricThreshold`. So that the tree flags nodes
//! and names a bottleneck as it does on Intel, [`pipeline_thresholds`] gives
//! each node without a threshold the one of its top-down counterpart
//! (Yasin's level 1 as Intel's tables carry it; Intel's level-2 nodes for
//! the children), with the parent's condition included as Intel's are:
//!
//! | node | over when | Intel's counterpart |
//! |---|---|---|
//! | `frontend_bound` | > 15 % | Frontend Bound |
//! | `bad_speculation` | > 15 % | Bad Speculation |
//! | `backend_bound` | > 20 % | Backend Bound |
//! | `retiring` | > 70 % | Retiring |
//! | `smt_contention` | (none) | — |
//! | frontend `…latency` / `…bandwidth` | > 10 % and parent | Fetch Latency / Bandwidth |
//! | bad speculation `…mispredicts` / `…restarts` | > 10 % and parent | Branch Mispredicts / Machine Clears |
//! | backend `…memory` | > 20 % and parent | Memory Bound |
//! | backend `…cpu` | > 10 % and parent | Core Bound |
//! | retiring `…fastpath` | > 60 % and parent | Light Operations |
//! | retiring `…microcode` | > 10 % and parent | Heavy Operations |
//!
//! Each such threshold says so ([`Threshold::supplied_by`]), and the tree's
//! report carries a note.

use crate::formula::{Dialect, Formula};
use crate::library::{MetricTable, Threshold};
use crate::tables::parse_perf_format;
use pmx_events::LoadError;
use pmx_model::cpu::CpuId;
use std::path::{Path, PathBuf};

/// A POSIX extended regular expression of the subset perf's mapfiles use:
/// literals, `.`, `[...]` (ranges, negation, `[:xdigit:]`, `[:digit:]`,
/// `[:alpha:]`, `[:alnum:]`), groups with `|`, the quantifiers `?`, `*`,
/// `+`, `\` escapes, `^`/`$` at the ends. Matching is against a whole key
/// and ignores ASCII case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ere {
    alts: Vec<Vec<Piece>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Char(char),
    Any,
    Class(bool, Vec<(char, char)>),
    Group(Vec<Vec<Piece>>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

impl Ere {
    /// Parse a pattern; a malformed one is an error naming the position.
    pub fn parse(text: &str) -> Result<Ere, String> {
        let chars: Vec<char> = text.trim().chars().collect();
        let mut i = 0;
        if chars.first() == Some(&'^') {
            i = 1;
        }
        let end = if chars.len() > i && chars.last() == Some(&'$') {
            chars.len() - 1
        } else {
            chars.len()
        };
        let alts = parse_alts(&chars[..end], &mut i)?;
        if i != end {
            return Err(format!("unbalanced ')' at {i}"));
        }
        Ok(Ere { alts })
    }

    /// Does the pattern match all of `key`?
    pub fn matches(&self, key: &str) -> bool {
        let s: Vec<char> = key.trim().chars().map(|c| c.to_ascii_lowercase()).collect();
        let atom = Atom::Group(self.alts.clone());
        let whole = [Piece {
            atom,
            min: 1,
            max: 1,
        }];
        match_seq(&whole, &s, 0, &mut |j| j == s.len())
    }
}

fn parse_alts(c: &[char], i: &mut usize) -> Result<Vec<Vec<Piece>>, String> {
    let mut alts: Vec<Vec<Piece>> = vec![Vec::new()];
    while *i < c.len() {
        let ch = c[*i];
        let atom = match ch {
            ')' => break,
            '|' => {
                alts.push(Vec::new());
                *i += 1;
                continue;
            }
            '?' | '*' | '+' => {
                let Some(p) = alts.last_mut().and_then(|a| a.last_mut()) else {
                    return Err(format!("'{ch}' at {} follows nothing it can repeat", *i));
                };
                let (min, max) = match ch {
                    '?' => (0, 1),
                    '*' => (0, usize::MAX),
                    _ => (1, usize::MAX),
                };
                (p.min, p.max) = (p.min.min(min), max);
                *i += 1;
                continue;
            }
            '(' => {
                let open = *i;
                *i += 1;
                let inner = parse_alts(c, i)?;
                if c.get(*i) != Some(&')') {
                    return Err(format!("'(' at {open} is never closed"));
                }
                *i += 1;
                Atom::Group(inner)
            }
            '[' => parse_class(c, i)?,
            '.' => {
                *i += 1;
                Atom::Any
            }
            '\\' => {
                let n = *c.get(*i + 1).ok_or("pattern ends with '\\'")?;
                *i += 2;
                Atom::Char(n.to_ascii_lowercase())
            }
            _ => {
                *i += 1;
                Atom::Char(ch.to_ascii_lowercase())
            }
        };
        alts.last_mut().expect("one alternative").push(Piece {
            atom,
            min: 1,
            max: 1,
        });
    }
    Ok(alts)
}

fn parse_class(c: &[char], i: &mut usize) -> Result<Atom, String> {
    let open = *i;
    *i += 1;
    let negated = c.get(*i) == Some(&'^');
    if negated {
        *i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&ch) = c.get(*i) else {
            return Err(format!("'[' at {open} is never closed"));
        };
        if ch == ']' && !first {
            *i += 1;
            return Ok(Atom::Class(negated, ranges));
        }
        first = false;
        if ch == '[' && c.get(*i + 1) == Some(&':') {
            let rest: String = c[*i + 2..].iter().collect();
            let Some(end) = rest.find(":]") else {
                return Err(format!("'[:' at {} is never closed", *i));
            };
            match &rest[..end] {
                "xdigit" => ranges.extend([('0', '9'), ('a', 'f')]),
                "digit" => ranges.push(('0', '9')),
                "alpha" => ranges.push(('a', 'z')),
                "alnum" => ranges.extend([('0', '9'), ('a', 'z')]),
                other => return Err(format!("unknown class [:{other}:]")),
            }
            *i += 2 + end + 2;
            continue;
        }
        let lo = ch.to_ascii_lowercase();
        *i += 1;
        if c.get(*i) == Some(&'-') && c.get(*i + 1).is_some_and(|&n| n != ']') {
            let hi = c[*i + 1].to_ascii_lowercase();
            if hi < lo {
                return Err(format!("range {lo}-{hi} is backwards"));
            }
            ranges.push((lo, hi));
            *i += 2;
        } else {
            ranges.push((lo, lo));
        }
    }
}

/// Match `pieces` against `s` from `at`; `k` is called with each end
/// position reached (backtracking until it accepts).
fn match_seq(pieces: &[Piece], s: &[char], at: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let Some((p, rest)) = pieces.split_first() else {
        return k(at);
    };
    match_rep(p, 0, rest, s, at, k)
}

fn match_rep(
    p: &Piece,
    done: usize,
    rest: &[Piece],
    s: &[char],
    at: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    // Greedy: one more repetition first, then stop here.
    if done < p.max
        && match_atom(&p.atom, s, at, &mut |j| {
            j > at && match_rep(p, done + 1, rest, s, j, k)
        })
    {
        return true;
    }
    done >= p.min && match_seq(rest, s, at, k)
}

fn match_atom(a: &Atom, s: &[char], at: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let one = |ok: bool, k: &mut dyn FnMut(usize) -> bool| ok && k(at + 1);
    match (a, s.get(at)) {
        (Atom::Group(alts), _) => alts.iter().any(|alt| match_seq(alt, s, at, k)),
        (_, None) => false,
        (Atom::Char(c), Some(x)) => one(c == x, k),
        (Atom::Any, Some(_)) => k(at + 1),
        (Atom::Class(neg, ranges), Some(x)) => {
            let inside = ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(x));
            one(inside != *neg, k)
        }
    }
}

/// One row of perf's `mapfile.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMapRow {
    /// The CPU pattern as written.
    pub pattern: String,
    /// The table version (`v1`).
    pub version: String,
    /// The directory, relative to the mapfile's (`amdzen4`).
    pub dir: String,
    /// `core` (the only type perf's x86 mapfile has).
    pub kind: String,
}

/// The directory holding perf's x86 mapfile under `events_dir`: `x86/`
/// when it has one, else the directory itself.
fn perf_root(events_dir: &Path) -> Option<PathBuf> {
    [events_dir.join("x86"), events_dir.to_path_buf()]
        .into_iter()
        .find(|d| d.join("mapfile.csv").is_file())
}

/// The row of perf's mapfile in `root` that selects `cpu` (first match, as
/// perf), when its directory exists: perf's layout. `None` for Intel's
/// layout (rows name files) or when no row selects the CPU.
pub fn select_dir(root: &Path, cpu: &CpuId) -> Result<Option<PerfMapRow>, LoadError> {
    let path = root.join("mapfile.csv");
    let bytes = std::fs::read(&path).map_err(|e| LoadError::Io {
        path: path.clone(),
        source: e,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let keys = [cpu.without_stepping().to_string(), cpu.to_string()];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 3 || f[0].eq_ignore_ascii_case("family-model") || f[0].starts_with('#') {
            continue;
        }
        let Ok(re) = Ere::parse(f[0]) else { continue };
        if keys.iter().any(|k| re.matches(k)) {
            let row = PerfMapRow {
                pattern: f[0].to_string(),
                version: f[1].to_string(),
                dir: f[2].trim_start_matches('/').to_string(),
                kind: f.get(3).unwrap_or(&"").to_string(),
            };
            return Ok(root.join(&row.dir).is_dir().then_some(row));
        }
    }
    Ok(None)
}

/// perf's metric tables for `cpu` under `events_dir` (`x86/mapfile.csv` and
/// the directory it selects): one table per JSON file that has metrics, in
/// file-name order, origins relative to `events_dir`. No perf layout, or no
/// row for the CPU: an empty list. An unreadable or malformed file is an
/// error.
pub fn load_perf_x86_tables(events_dir: &Path, cpu: &CpuId) -> Result<Vec<MetricTable>, LoadError> {
    let Some(root) = perf_root(events_dir) else {
        return Ok(Vec::new());
    };
    let Some(row) = select_dir(&root, cpu)? else {
        return Ok(Vec::new());
    };
    let dir = root.join(&row.dir);
    let io = |path: &Path, e: std::io::Error| LoadError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    let mut tables = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
        // Most files hold events only; skip them without parsing.
        if !bytes.windows(12).any(|w| w == b"\"MetricName\"") {
            continue;
        }
        let origin = path
            .strip_prefix(events_dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let mut t = parse_perf_format(&bytes, &origin).map_err(|message| LoadError::Format {
            path: path.clone(),
            message,
        })?;
        t.source.version = Some(row.version.clone()).filter(|v| !v.is_empty());
        pipeline_thresholds(&mut t);
        if !t.metrics.is_empty() {
            tables.push(t);
        }
    }
    Ok(tables)
}

/// Who supplies the pipeline tree's thresholds ([`Threshold::supplied_by`]).
pub const PIPELINE_THRESHOLDS_BY: &str = "pmx's, after Intel's for the matching top-down \
     categories (AMD's tables define none)";

/// The share over which a pipeline node is flagged: level 1 by name,
/// level 2 by parent and a word of the name.
fn pipeline_limit(name: &str, parent: Option<&str>) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    let Some(p) = parent else {
        return match n.as_str() {
            "frontend_bound" | "bad_speculation" => Some(0.15),
            "backend_bound" => Some(0.20),
            "retiring" => Some(0.70),
            _ => None,
        };
    };
    let has = |w: &str| n.contains(w);
    match p.to_ascii_lowercase().as_str() {
        "frontend_bound" if has("latency") || has("bandwidth") => Some(0.10),
        "bad_speculation" if has("mispredict") || has("restart") => Some(0.10),
        "backend_bound" if has("memory") => Some(0.20),
        "backend_bound" if has("cpu") => Some(0.10),
        "retiring" if has("fastpath") => Some(0.60),
        "retiring" if has("microcode") => Some(0.10),
        _ => None,
    }
}

/// Give the nodes of an AMD pipeline tree (metrics in a `PipelineLn`
/// group) that have no threshold pmx's (see the module's table); values
/// are fractions, so the limits are too.
pub fn pipeline_thresholds(table: &mut MetricTable) {
    let limits: Vec<(String, Option<f64>)> = table
        .metrics
        .iter()
        .map(|m| {
            let node = m.groups.iter().any(|g| g.starts_with("PipelineL"));
            let limit = node
                .then(|| pipeline_limit(&m.name, m.parent.as_deref()))
                .flatten();
            (m.name.clone(), limit)
        })
        .collect();
    let limit_of = |name: &str| {
        limits
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, l)| *l)
    };
    for m in &mut table.metrics {
        if m.threshold.is_some() {
            continue;
        }
        let Some(own) = limit_of(&m.name) else {
            continue;
        };
        let mut text = format!("{} > {own}", m.name);
        if let Some(p) = &m.parent {
            match limit_of(p) {
                Some(pl) => text.push_str(&format!(" & {p} > {pl}")),
                None => continue,
            }
        }
        match Formula::parse(&text, Dialect::Perf) {
            Ok(formula) => {
                m.threshold = Some(Threshold {
                    formula,
                    issues: Vec::new(),
                    supplied_by: Some(PIPELINE_THRESHOLDS_BY.to_string()),
                })
            }
            Err(e) => table.warnings.push(format!("{}: threshold: {e}", m.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_patterns() {
        let zen3 = Ere::parse("AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]])").unwrap();
        for k in [
            "AuthenticAMD-25-21",
            "AuthenticAMD-25-1",
            "AuthenticAMD-25-5f",
        ] {
            assert!(zen3.matches(k), "{k}");
        }
        for k in [
            "AuthenticAMD-25-11",
            "AuthenticAMD-25-61",
            "AuthenticAMD-25-A0",
        ] {
            assert!(!zen3.matches(k), "{k}");
        }
        let zen1 = Ere::parse("AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])").unwrap();
        assert!(zen1.matches("AuthenticAMD-23-1"));
        assert!(zen1.matches("AuthenticAMD-23-2F"));
        assert!(!zen1.matches("AuthenticAMD-23-31"));
        let any = Ere::parse("AuthenticAMD-26-[[:xdigit:]]+").unwrap();
        assert!(any.matches("AuthenticAMD-26-2"));
        assert!(!any.matches("AuthenticAMD-26-"));
        assert!(!any.matches("AuthenticAMD-26-2-1"));
        let intel = Ere::parse("GenuineIntel-6-(97|9A|B7|BA|BF)").unwrap();
        assert!(intel.matches("GenuineIntel-6-9a"));
        assert!(!intel.matches("GenuineIntel-6-9"));
        assert!(Ere::parse("a(b").is_err());
        assert!(Ere::parse("a)b").is_err());
        assert!(Ere::parse("+a").is_err());
        assert!(Ere::parse("[[:nope:]]").is_err());
        assert!(Ere::parse("a(b|c)?d").unwrap().matches("ad"));
        assert!(Ere::parse("a(b|c)*d").unwrap().matches("abcbd"));
    }
}
