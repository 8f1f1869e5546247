//! What a shell offers after `-e`/`--event` and `-M`/`--metrics`: the names
//! `pmx list --raw-dump` prints for this CPU ([`crate::catalog::raw_dump`]),
//! matched against the word being typed.
//!
//! The word is a list: `-e task-clock,page-f` completes the last element
//! (`task-clock,page-faults`), and so does an element after a group's
//! `{`. Event names are every event of the database plus the kernel PMUs'
//! aliases written `pmu/alias/` (as perf's bash completion offers them);
//! metric names are the metrics and metric groups of the CPU's library.
//! Names match without case, as the resolver matches them. A word whose
//! last element already carries a modifier (`cycles:u`) or terms
//! (`cpu/event=0x3c/`) gets nothing: there is no name left to complete.

use crate::catalog::raw_dump;
use crate::database::{self, DatabaseOptions};

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// Event names (`-e`, `--event`, `pmx explain EVENT`).
    Events,
    /// Metric and metric-group names (`-M`, `--metrics`).
    Metrics,
}

/// The full words the shell may put in place of `current`: its list
/// prefix kept, the last element completed to each known name that starts
/// with it (without case). This CPU's database from the default events
/// directories; nothing when it cannot be loaded.
pub fn complete(kind: NameKind, current: &str) -> Vec<String> {
    let opts = DatabaseOptions {
        events_dir_default: crate::events_dirs::from_env(),
        ..Default::default()
    };
    let Ok(db) = database::load(&opts) else {
        return Vec::new();
    };
    let dir = opts.events_dir_default.resolve(None);
    let names = |k: &str| raw_dump(k, &db, dir.as_deref()).unwrap_or_default();
    let known = match kind {
        NameKind::Events => [names("events"), names("pmu")].concat(),
        NameKind::Metrics => [names("metrics"), names("metricgroups")].concat(),
    };
    candidates(current, &known)
}

/// [`complete`] over a given list of names (pure; for tests and callers
/// that hold the names already).
pub fn candidates(current: &str, known: &[String]) -> Vec<String> {
    let cut = current.rfind([',', '{']).map_or(0, |i| i + 1);
    let (prefix, last) = current.split_at(cut);
    if last.contains(':') || last.contains('=') {
        return Vec::new();
    }
    let last = last.to_ascii_lowercase();
    let mut out: Vec<String> = known
        .iter()
        .filter(|n| n.to_ascii_lowercase().starts_with(&last))
        .map(|n| format!("{prefix}{n}"))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        [
            "task-clock",
            "page-faults",
            "cycles",
            "msr/tsc/",
            "LONGEST_LAT_CACHE.MISS",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn the_last_element_of_a_list_is_completed() {
        assert_eq!(candidates("task-c", &names()), ["task-clock"]);
        assert_eq!(
            candidates("task-clock,page-f", &names()),
            ["task-clock,page-faults"]
        );
        assert_eq!(candidates("{cyc", &names()), ["{cycles"]);
        assert_eq!(candidates("ms", &names()), ["msr/tsc/"]);
        assert_eq!(candidates("longest", &names()), ["LONGEST_LAT_CACHE.MISS"]);
        assert_eq!(candidates("", &names()).len(), 5);
    }

    #[test]
    fn modifiers_and_terms_end_the_name() {
        assert!(candidates("cycles:u", &names()).is_empty());
        assert!(candidates("cpu/event=0x3c", &names()).is_empty());
    }
}
