//! Which CPU a file of counts is read as, when `--cpu` does not say: what
//! the file names (`# cpu:`, pmx's document, perf's `cpu_id`), perf's
//! hybrid PMU names (`cpu_core/…/`: an Intel hybrid part), this machine
//! when every event of the file resolves here, else the event tables
//! (Intel's perfmon, perf's AMD Zen tables) of the CPUs that have every
//! event of the file this machine does not know.

use super::keys::split_modifiers;
use pmx_count::database::{load, DatabaseError, DatabaseOptions};
use pmx_events::Database;
use pmx_formats::StatReport;
use std::path::Path;

/// The CPU a file is read as, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuChoice {
    /// The file names it.
    File(String),
    /// perf's hybrid PMU names: Alder Lake's id (Raptor Lake shares its
    /// tables).
    Hybrid(String),
    /// Every event resolves on this machine.
    ThisMachine,
    /// The first CPU whose event tables have every named event the file
    /// has; the events; how many other CPUs have them too.
    Tables {
        /// The CPU.
        cpu: String,
        /// The events that told.
        events: Vec<String>,
        /// Other CPUs with all of them.
        others: usize,
    },
    /// Nothing tells: the events this machine does not know.
    Unknown(Vec<String>),
}

impl CpuChoice {
    /// One line saying which CPU and why (`None` when the file said).
    pub fn note(&self, this: &str) -> Option<String> {
        match self {
            CpuChoice::File(_) => None,
            CpuChoice::Hybrid(c) => Some(format!(
                "CPU {c} (Alder Lake): the file has perf's hybrid cpu_core/cpu_atom rows; --cpu ID for another hybrid part"
            )),
            CpuChoice::ThisMachine => Some(format!(
                "CPU {this} (this machine): the file does not say and every event of it is known here; --cpu ID to read it as another"
            )),
            CpuChoice::Tables { cpu, events, others } => Some(format!(
                "CPU {cpu}: the event tables of that CPU have {}{}; --cpu ID to read it as another",
                events.join(", "),
                if *others > 0 {
                    format!(" ({others} other CPUs have them too)")
                } else {
                    String::new()
                }
            )),
            CpuChoice::Unknown(_) => None,
        }
    }
}

/// Why no database could be chosen for a file. Both are the user's to
/// fix (`--cpu`, `--events-dir`).
#[derive(Debug, thiserror::Error)]
pub enum ChooseError {
    /// The options do not load (a bad `--cpu`, an unreadable directory).
    #[error(transparent)]
    Database(#[from] DatabaseError),
    /// Nothing in the file or the tables tells the CPU.
    #[error("{file}: the file does not say which CPU it was counted on{why}: give --cpu ID (e.g. GenuineIntel-6-5E-3)")]
    Unknown {
        /// The file, as given.
        file: String,
        /// The events nothing here knows, as a parenthesis (or empty).
        why: String,
    },
}

/// The database to read `report` (from `file`) with: `opts.cpu` when
/// given, else the CPU [`choose`] finds (this machine's database from
/// `opts`, the tables of its events directories), with the one line that
/// says which and why.
pub fn database(
    report: &StatReport,
    opts: &DatabaseOptions,
    file: &Path,
) -> Result<(Database, Option<String>), ChooseError> {
    if opts.cpu.is_some() {
        return Ok((load(opts)?, None));
    }
    let host = load(opts).ok();
    let mut dirs: Vec<std::path::PathBuf> = opts.events_dir.iter().cloned().collect();
    dirs.extend(opts.more_events_dirs.iter().cloned());
    if dirs.is_empty() {
        dirs.extend(opts.events_dir_default.resolve(None));
    }
    let refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let choice = choose(report, host.as_ref(), &refs);
    let this = host.as_ref().map(|d| d.target.cpu.to_string());
    let note = choice.note(this.as_deref().unwrap_or("?"));
    match (choice, host) {
        (CpuChoice::ThisMachine, Some(db)) => Ok((db, note)),
        (CpuChoice::File(c) | CpuChoice::Hybrid(c) | CpuChoice::Tables { cpu: c, .. }, _) => {
            let opts = DatabaseOptions {
                cpu: Some(c),
                ..opts.clone()
            };
            Ok((load(&opts)?, note))
        }
        (other, _) => {
            let why = match other {
                CpuChoice::Unknown(events) if !events.is_empty() => format!(
                    " (events not known here nor in the event tables: {})",
                    events.join(", ")
                ),
                _ => String::new(),
            };
            Err(ChooseError::Unknown {
                file: file.display().to_string(),
                why,
            })
        }
    }
}

/// Software and tool events perf prints, known on every machine.
fn everywhere(name: &str) -> bool {
    let n = name.trim_end_matches('/');
    matches!(
        n,
        "duration_time" | "user_time" | "system_time" | "task-clock" | "cpu-clock"
    ) || n.starts_with("topdown-")
        || n.starts_with("slots")
}

/// Choose the CPU for `report` (no `--cpu`): `host` is this machine's
/// database, `dirs` the event tables to search.
pub fn choose(report: &StatReport, host: Option<&Database>, dirs: &[&Path]) -> CpuChoice {
    if let Some(c) = &report.provenance.cpu {
        return CpuChoice::File(c.clone());
    }
    if report
        .rows
        .iter()
        .any(|r| super::printed::core_type(&r.event).is_some())
    {
        return CpuChoice::Hybrid("GenuineIntel-6-97".into());
    }
    let mut unknown: Vec<String> = Vec::new();
    for r in &report.rows {
        let (base, _) = split_modifiers(&r.event);
        if everywhere(&base) || unknown.contains(&base) {
            continue;
        }
        let known = host.is_some_and(|db| {
            pmx_model::spec::parse_spec(&base)
                .ok()
                .is_some_and(|s| db.try_resolve(&s).is_some())
        });
        if !known {
            unknown.push(base);
        }
    }
    if unknown.is_empty() && host.is_some() {
        return CpuChoice::ThisMachine;
    }
    let named: Vec<String> = unknown
        .iter()
        .filter(|e| !e.contains('/') && !e.contains('='))
        .cloned()
        .collect();
    if named.is_empty() {
        return CpuChoice::Unknown(unknown);
    }
    let mut found: Vec<String> = Vec::new();
    for d in dirs {
        found.extend(intel_cpus_with(d, &named));
        found.extend(amd_cpus_with(d, &named));
    }
    found.dedup();
    match found.first() {
        Some(cpu) => CpuChoice::Tables {
            cpu: cpu.clone(),
            events: named,
            others: found.len() - 1,
        },
        None => CpuChoice::Unknown(unknown),
    }
}

/// Does the JSON text of an event table name every event?
fn has_all(text: &str, names: &[String]) -> bool {
    names.iter().all(|n| {
        let n = n.replace(':', ".");
        text.contains(&format!("\"{n}\"")) || text.contains(&format!("\"{}\"", n.to_uppercase()))
    })
}

/// The first alternative of a mapfile pattern (`GenuineIntel-6-9[7A]` →
/// `GenuineIntel-6-97`, `GenuineIntel-6-(97|9A)` → `GenuineIntel-6-97`).
fn first_of(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                if let Some(f) = chars.next() {
                    out.push(f);
                }
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                }
            }
            '(' => {
                let mut depth = 1;
                let mut taking = true;
                for c in chars.by_ref() {
                    match c {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        '|' if depth == 1 => taking = false,
                        c if taking && c.is_ascii_alphanumeric() => out.push(c),
                        _ => {}
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '-' => out.push(c),
            _ => {}
        }
    }
    out
}

/// Intel's perfmon layout: `mapfile.csv` rows naming core event files.
fn intel_cpus_with(dir: &Path, names: &[String]) -> Vec<String> {
    let Ok(map) = std::fs::read_to_string(dir.join("mapfile.csv")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in map.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 4
            || !matches!(f[3], "core" | "hybridcore")
            || !f[0].starts_with("GenuineIntel")
        {
            continue;
        }
        let path = dir.join(f[2].trim_start_matches('/'));
        if let Ok(text) = std::fs::read_to_string(&path) {
            if has_all(&text, names) {
                out.push(first_of(f[0]));
            }
        }
    }
    out
}

/// perf's x86 layout: `x86/amdzenN/*.json`, one CPU id per generation.
fn amd_cpus_with(dir: &Path, names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (zen, cpu) in [
        ("amdzen1", "AuthenticAMD-23-1"),
        ("amdzen2", "AuthenticAMD-23-31"),
        ("amdzen3", "AuthenticAMD-25-1"),
        ("amdzen4", "AuthenticAMD-25-11"),
        ("amdzen5", "AuthenticAMD-26-2"),
    ] {
        let Ok(rd) = std::fs::read_dir(dir.join("x86").join(zen)) else {
            continue;
        };
        let text: String = rd
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect();
        if has_all(&text, names) {
            out.push(cpu.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapfile_patterns_give_their_first_cpu() {
        assert_eq!(first_of("GenuineIntel-6-9[7A]"), "GenuineIntel-6-97");
        assert_eq!(first_of("GenuineIntel-6-(97|9A|B7)"), "GenuineIntel-6-97");
        assert_eq!(first_of("GenuineIntel-6-55-[01234]"), "GenuineIntel-6-55-0");
        assert_eq!(first_of("GenuineIntel-6-2E"), "GenuineIntel-6-2E");
    }

    #[test]
    fn the_file_and_hybrid_names_tell_first() {
        let mut r = StatReport::default();
        r.rows
            .push(pmx_formats::ReportRow::new("cpu_atom/cycles/", ""));
        assert_eq!(
            choose(&r, None, &[]),
            CpuChoice::Hybrid("GenuineIntel-6-97".into())
        );
        r.provenance.cpu = Some("GenuineIntel-6-55-4".into());
        assert_eq!(
            choose(&r, None, &[]),
            CpuChoice::File("GenuineIntel-6-55-4".into())
        );
    }
}
