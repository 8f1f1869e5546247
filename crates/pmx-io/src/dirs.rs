//! Where pmx keeps what outlives a run: the one rule for its cache and
//! configuration directories, and perf's build-id cache.
//!
//! The environment is read once, at the edge (the CLI, the C and Python
//! entry points), into a [`Dirs`] value that is passed down as an
//! option; the libraries never read `HOME` or `XDG_*` themselves.
//! [`Dirs::from_vars`] takes the lookup as a closure, so the rules are
//! tested without touching the process environment.
//!
//! The rules (the XDG Base Directory specification's: a relative
//! `XDG_*` value is ignored):
//!
//! | directory | from |
//! |---|---|
//! | cache | `$XDG_CACHE_HOME/pmx` when absolute, else `$HOME/.cache/pmx` |
//! | config | `$XDG_CONFIG_HOME/pmx` when absolute, else `$HOME/.config/pmx` |
//! | build-id cache (perf's) | `$PERF_BUILDID_DIR` when set, else `$HOME/.debug` (`/.debug` without a home) |
//!
//! A `HOME` that is empty or relative gives no cache and no config
//! directory (`None`): callers then keep nothing on disk.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// pmx's directories, resolved once from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirs {
    /// pmx's cache (`…/pmx`): event tables, kernel symbol indexes,
    /// symbol tables. `None` when the environment names none.
    pub cache: Option<PathBuf>,
    /// pmx's configuration (`…/pmx`). `None` when the environment names none.
    pub config: Option<PathBuf>,
    /// perf's build-id cache (`~/.debug` layout), shared with perf.
    pub buildid: PathBuf,
}

impl Dirs {
    /// The directories of this process's environment (call at the edge).
    pub fn from_env() -> Dirs {
        Dirs::from_vars(|k| std::env::var_os(k))
    }

    /// The directories for an environment given as a lookup.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Dirs {
        let set = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = set("HOME");
        let base = |xdg: &str, fallback: &str| -> Option<PathBuf> {
            if let Some(x) = set(xdg).filter(|p| p.is_absolute()) {
                return Some(x.join("pmx"));
            }
            let home = home.as_ref().filter(|h| h.is_absolute())?;
            Some(home.join(fallback).join("pmx"))
        };
        let buildid = set("PERF_BUILDID_DIR").unwrap_or_else(|| {
            home.as_deref()
                .unwrap_or_else(|| Path::new("/"))
                .join(".debug")
        });
        Dirs {
            cache: base("XDG_CACHE_HOME", ".cache"),
            config: base("XDG_CONFIG_HOME", ".config"),
            buildid,
        }
    }

    /// A subdirectory of the cache (`events`, `symbols`, `kallsyms` …).
    pub fn cache_sub(&self, name: &str) -> Option<PathBuf> {
        self.cache.as_ref().map(|c| c.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(vars: &[(&str, &str)]) -> Dirs {
        Dirs::from_vars(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn xdg_when_absolute_else_home() {
        let d = dirs(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]);
        assert_eq!(d.cache.as_deref(), Some(Path::new("/x/pmx")));
        assert_eq!(d.config.as_deref(), Some(Path::new("/h/.config/pmx")));
        let d = dirs(&[("HOME", "/h"), ("XDG_CACHE_HOME", "rel")]);
        assert_eq!(d.cache.as_deref(), Some(Path::new("/h/.cache/pmx")));
        assert_eq!(
            d.cache_sub("events").unwrap(),
            Path::new("/h/.cache/pmx/events")
        );
    }

    #[test]
    fn no_home_no_cache_but_a_buildid_dir() {
        let d = dirs(&[]);
        assert_eq!((d.cache, d.config), (None, None));
        assert_eq!(d.buildid, Path::new("/.debug"));
        let d = dirs(&[("HOME", "rel"), ("PERF_BUILDID_DIR", "/b")]);
        assert_eq!(d.cache, None);
        assert_eq!(d.buildid, Path::new("/b"));
    }
}
