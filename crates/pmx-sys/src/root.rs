//! The file-system root pmx reads the machine from.
//!
//! All kernel files (`sys/…`, `proc/…`, `dev/…`) are read relative to a
//! [`SysRoot`], `/` by default; tests point it at a fixture directory that
//! holds a small copy of those trees.
//!
//! A missing file is not an error: it means the kernel (or this kernel
//! version, or this machine) does not offer that fact, and the reader returns
//! `None`. Anything else that goes wrong — a file that cannot be read, text
//! that does not parse — is recorded as a [`Problem`] and the fact is treated
//! as unknown, so one odd file never stops the report.

use serde::Serialize;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Something that looked wrong while reading the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, relative to the root (e.g. `sys/devices/system/cpu/online`).
    pub path: String,
    /// What was wrong with it.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Where the kernel's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl Default for SysRoot {
    fn default() -> SysRoot {
        SysRoot::host()
    }
}

impl SysRoot {
    /// The running system (`/`).
    pub fn host() -> SysRoot {
        SysRoot::new("/")
    }

    /// A root directory holding `sys/`, `proc/` and `dev/` trees.
    pub fn new(root: impl Into<PathBuf>) -> SysRoot {
        SysRoot { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The full path of `rel` (a path relative to the root, `/`-separated).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Whether `rel` exists (following symlinks).
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The contents of `rel` with surrounding whitespace trimmed; `None` when
    /// the file does not exist or cannot be read (the latter is recorded).
    pub fn read(&self, rel: &str, problems: &mut Vec<Problem>) -> Option<String> {
        match std::fs::read(self.path(rel)) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).trim().to_string()),
            Err(e) if is_absent(&e) => None,
            Err(e) => {
                problems.push(Problem {
                    path: rel.to_string(),
                    message: format!("cannot read: {e}"),
                });
                None
            }
        }
    }

    /// `rel` parsed with `parse`; unparsable contents are recorded as a
    /// problem naming `what` was expected.
    pub fn read_parsed<T>(
        &self,
        rel: &str,
        what: &str,
        problems: &mut Vec<Problem>,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.read(rel, problems)?;
        let value = parse(&text);
        if value.is_none() {
            problems.push(Problem {
                path: rel.to_string(),
                message: format!("{text:?} is not {what}"),
            });
        }
        value
    }

    /// The names in directory `rel`, sorted; empty when it does not exist.
    pub fn list(&self, rel: &str, problems: &mut Vec<Problem>) -> Vec<String> {
        let entries = match std::fs::read_dir(self.path(rel)) {
            Ok(entries) => entries,
            Err(e) if is_absent(&e) => return Vec::new(),
            Err(e) => {
                problems.push(Problem {
                    path: rel.to_string(),
                    message: format!("cannot list: {e}"),
                });
                return Vec::new();
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn is_absent(e: &std::io::Error) -> bool {
    // ENOTDIR: a path component is a file; ENODEV/ENXIO/EINVAL: some sysfs
    // attributes exist but have nothing to say on this machine.
    matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
        || matches!(e.raw_os_error(), Some(19) | Some(6) | Some(22))
}

/// Parse a decimal integer, allowing surrounding whitespace.
pub(crate) fn parse_i64(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_absent_not_problems() {
        let root = SysRoot::new("/nonexistent-pmx-root");
        let mut problems = Vec::new();
        assert_eq!(
            root.read("sys/devices/system/cpu/online", &mut problems),
            None
        );
        assert!(root
            .list("sys/bus/event_source/devices", &mut problems)
            .is_empty());
        assert!(problems.is_empty());
        assert_eq!(
            root.path("/proc/self/status"),
            PathBuf::from("/nonexistent-pmx-root/proc/self/status")
        );
    }

    #[test]
    fn unparsable_contents_are_problems() {
        let dir = std::env::temp_dir().join(format!("pmx-root-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.join("proc/sys/kernel/perf_event_paranoid"), "two\n").unwrap();
        std::fs::write(dir.join("proc/sys/kernel/nmi_watchdog"), " 1 \n").unwrap();
        let root = SysRoot::new(&dir);
        let mut problems = Vec::new();
        let p = root.read_parsed(
            "proc/sys/kernel/perf_event_paranoid",
            "a number",
            &mut problems,
            parse_i64,
        );
        assert_eq!(p, None);
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0].to_string(),
            "proc/sys/kernel/perf_event_paranoid: \"two\" is not a number"
        );
        let w = root.read_parsed(
            "proc/sys/kernel/nmi_watchdog",
            "a number",
            &mut problems,
            parse_i64,
        );
        assert_eq!(w, Some(1));
        // A directory read as a file is a problem, not a panic.
        assert_eq!(root.read("proc/sys", &mut problems), None);
        assert_eq!(problems.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
