//! The shared reference data (Intel perfmon tables, libpfm dumps, perf.data
//! recordings, …) sits beside the repository, in `shared/data`, or where
//! `$PMX_SHARED_DIR` says; it is not part of the repository, so the tests
//! that read it skip with a message when it is absent.

use std::path::PathBuf;

/// Where `shared/data/<sub>` is looked for, in order:
/// `$PMX_SHARED_DIR/data/<sub>`, `$PMX_SHARED_DIR/<sub>` (the variable
/// naming the data directory itself), then `shared/data/<sub>` beside the
/// repository.
pub fn candidates(sub: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(d) = std::env::var_os("PMX_SHARED_DIR").filter(|d| !d.is_empty()) {
        let d = PathBuf::from(d);
        out.push(d.join("data").join(sub));
        out.push(d.join(sub));
    }
    out.push(beside_repository().join(sub));
    out
}

/// `shared/data` beside the repository.
pub fn beside_repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// The first of [`candidates`] that exists, or `None` after a `SKIP: …`
/// line saying what is absent and where it was looked for.
pub fn shared_data(sub: &str) -> Option<PathBuf> {
    let found = candidates(sub).into_iter().find(|p| p.exists());
    if found.is_none() {
        crate::skip(format_args!(
            "shared data '{sub}' is absent (looked in $PMX_SHARED_DIR/data and {}; \
             the shared reference data sits beside the repository)",
            beside_repository().display()
        ));
    }
    found
}

/// The Intel perfmon tables (`intel-perfmon`, with its `mapfile.csv`), or
/// `None` after a `SKIP: …` line.
pub fn intel_perfmon() -> Option<PathBuf> {
    let mapfile = shared_data("intel-perfmon/mapfile.csv")?;
    mapfile.parent().map(PathBuf::from)
}

/// Linux perf's event and metric tables (`linux-perf-events`, holding
/// `x86/mapfile.csv` and `x86/amdzenN/`); `None` with one `SKIP:` line
/// when absent.
pub fn linux_perf_events() -> Option<PathBuf> {
    let dir = shared_data("linux-perf-events")?;
    if dir.join("x86/mapfile.csv").is_file() {
        Some(dir)
    } else {
        crate::skip(format!("no x86/mapfile.csv in {}", dir.display()));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_beside_the_repository_is_looked_for_last() {
        let c = candidates("x");
        assert_eq!(c.last(), Some(&beside_repository().join("x")));
        assert!(shared_data("surely-not-here").is_none());
    }
}
