//! The one loader of a binary's symbols: which file to read for a
//! recorded path, and what to say when there is none.
//!
//! The file at the recorded path is read, unless the path no longer
//! leads to the file that was mapped:
//!
//! - **deleted** (`PATH (deleted)` in the maps: a package upgraded under
//!   a running service, a program removed and rebuilt), or
//! - **replaced** (an MMAP2 record's inode differs from the file's at the
//!   path now: `cargo build`/`make` or a package manager wrote a new file
//!   and renamed it over the old one after the mapping was recorded; the
//!   recording made on this machine, no `--symfs`).
//!
//! Then, while a process that maps it lives, the mapped file itself is
//! read through `/proc/PID/map_files/START-END` (root, the kernel's
//! rule): the link covering the address whose inode is the recorded one
//! (or, without a recorded inode, whose target is the deleted path, the
//! build id checked when the recording has one). A link found by its
//! inode is the mapped file itself: a build id listed for the path is
//! not compared, it may have been read from the replacement (perf and
//! `pmx record` read them by path at the end of a recording).
//!
//! Failing that — and for a file on disk of another build than the
//! recording's — the build-id cache's copy (`~/.debug`) is read when the
//! recording has a build id, and otherwise the binary is *unnamed*: its
//! addresses stay addresses, with one warning naming why
//! ([`Symbolizer::unnamed`]), never the functions of another file.

use super::{hex, DsoId, Symbolizer};
use crate::elf::ElfFile;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// How a `/proc/PID/map_files` link was matched to a binary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Matched {
    /// Its inode is the one the recording saw: the mapped file itself.
    Inode,
    /// Its target is the recorded (deleted) path.
    Name,
}

impl Symbolizer {
    /// Read binary `dso`'s symbols, once. `at` is a (pid, address) that
    /// a mapping of it covers, when known: where to look for the mapped
    /// file when the path no longer leads to it.
    pub(super) fn load(&mut self, dso: DsoId, at: Option<(u32, u64)>) {
        let d = &mut self.dsos[dso as usize];
        if d.tried {
            return;
        }
        d.tried = true;
        if d.path == "[vdso]" {
            self.load_vdso(dso);
            return;
        }
        if d.path.starts_with('[')
            || d.path.starts_with("//")
            || d.path.is_empty()
            || d.path.starts_with("/memfd:")
        {
            return;
        }
        let deleted = d.path.ends_with(" (deleted)");
        let replaced = if deleted { None } else { self.replaced(dso) };
        if deleted || replaced.is_some() {
            let link = at.and_then(|(pid, addr)| self.mapped_link(dso, pid, addr));
            if let Some((link, how)) = link {
                self.load_mapped(dso, link, how);
                return;
            }
        }
        if deleted {
            let why = "deleted since it was mapped, and no process that maps it is left to read \
                       it from (/proc/PID/map_files, as root, while the program runs)";
            self.fall_back(dso, why.to_string());
            return;
        }
        match replaced {
            Some(why) if self.dsos[dso as usize].expected_build_id.is_none() => {
                self.unnamed.push((dso, why));
            }
            _ => self.load_path(dso),
        }
    }

    /// Why the file at `dso`'s path is not the one its MMAP2 record saw
    /// (another inode now), when the recording was made here; `None`
    /// when it is, when there is no file, or nothing to compare.
    fn replaced(&self, dso: DsoId) -> Option<String> {
        let d = &self.dsos[dso as usize];
        let want = d.inode?;
        if self.root.is_some() || !self.here {
            return None;
        }
        let now = std::fs::metadata(&d.path).ok()?.ino();
        (now != want.ino).then(|| {
            format!(
                "replaced since it was mapped (inode {} then, {now} now: rebuilt or upgraded) \
                 and no process that maps the old file is left to read it from \
                 (/proc/PID/map_files, as root, while the program runs)",
                want.ino
            )
        })
    }

    /// The `/proc/PID/map_files/START-END` link of process `pid`'s
    /// mapping covering `addr` that is `dso`'s file: by the recorded
    /// inode, else by the recorded (deleted) path.
    fn mapped_link(&self, dso: DsoId, pid: u32, addr: u64) -> Option<(PathBuf, Matched)> {
        if self.root.is_some() || pid == 0 || pid == u32::MAX {
            return None;
        }
        let d = &self.dsos[dso as usize];
        let covering = crate::map_files::covering(pid, addr)?;
        match d.inode {
            // metadata follows the link to the mapped file.
            Some(want) => std::fs::metadata(&covering)
                .is_ok_and(|m| m.ino() == want.ino)
                .then_some((covering, Matched::Inode)),
            None => std::fs::read_link(&covering)
                .is_ok_and(|t| t.as_os_str() == d.path.as_str())
                .then_some((covering, Matched::Name)),
        }
    }

    /// Read `dso` through its mapped file's link.
    fn load_mapped(&mut self, dso: DsoId, link: PathBuf, how: Matched) {
        let (elf, file) = match self.options.binaries.open(&link) {
            Ok(opened) => opened,
            Err(e) => {
                let why = format!("its mapped file could not be read ({e})");
                self.fall_back(dso, why);
                return;
            }
        };
        if how == Matched::Name {
            if let Some(why) = self.other_build(dso, &elf, "the mapped file") {
                self.fall_back(dso, why);
                return;
            }
        }
        let d = &mut self.dsos[dso as usize];
        d.file = Some(file);
        d.elf = Some(elf);
        d.mapped = Some(link);
    }

    /// Read `dso` from its path (under `--symfs`).
    fn load_path(&mut self, dso: DsoId) {
        let d = &self.dsos[dso as usize];
        let path = match &self.root {
            Some(r) => r.join(d.path.trim_start_matches('/')),
            None => PathBuf::from(&d.path),
        };
        match self.options.binaries.open(&path) {
            Ok((elf, file)) => {
                self.dsos[dso as usize].file = Some(file);
                match self.other_build(dso, &elf, "the file on disk") {
                    Some(why) => self.fall_back(dso, why),
                    None => self.dsos[dso as usize].elf = Some(elf),
                }
            }
            Err(e) => {
                let why = if path.exists() {
                    e.strip_prefix(&format!("{}: ", path.display()))
                        .unwrap_or(&e)
                        .to_string()
                } else if self.root.is_some() {
                    format!("not found (as {})", path.display())
                } else {
                    "not found".to_string()
                };
                self.fall_back(dso, why);
            }
        }
    }

    /// Why `elf` (`what`: the file on disk, the mapped file) is not the
    /// build the recording saw, when it has a build id for `dso`.
    fn other_build(&self, dso: DsoId, elf: &ElfFile, what: &str) -> Option<String> {
        let want = self.dsos[dso as usize].expected_build_id.as_ref()?;
        let have = elf.build_id()?;
        (want.as_slice() != have).then(|| {
            format!(
                "{what} differs from the one recorded (build-id {} recorded, {} {})",
                hex(want),
                hex(have),
                if what == "the file on disk" {
                    "on disk"
                } else {
                    "mapped"
                }
            )
        })
    }

    /// The build-id cache's copy of `dso` (`~/.debug`, by the recorded
    /// build id) when there is one; else `dso` is unnamed, for `why`.
    fn fall_back(&mut self, dso: DsoId, why: String) {
        // No build-id cache directory given: no copy to look for.
        let dir = &self.options.dirs.buildid;
        let cached = (self.dsos[dso as usize].expected_build_id.as_deref())
            .filter(|_| !dir.as_os_str().is_empty())
            .and_then(|id| crate::buildid_cache::lookup(dir, id))
            .and_then(|c| self.options.binaries.open(&c).ok());
        match cached {
            Some((elf, _)) => self.dsos[dso as usize].elf = Some(elf),
            None => self.unnamed.push((dso, why)),
        }
    }

    /// The `/proc/PID/map_files/START-END` link `dso` was read through
    /// (deleted or replaced since it was mapped), while it exists.
    pub fn mapped_file(&self, dso: DsoId) -> Option<PathBuf> {
        let link = self.dsos[dso as usize].mapped.as_ref()?;
        link.exists().then(|| link.clone())
    }

    /// The file of binary `dso` to read code and tables from: the mapped
    /// file's link when it was read through one and the process still
    /// lives, the path (under `--symfs`) when it leads to the mapped
    /// file, else `None` (`[vdso]`, `//anon`, a deleted or replaced file).
    pub fn dso_file(&self, dso: DsoId) -> Option<PathBuf> {
        let d = &self.dsos[dso as usize];
        if let Some(link) = &d.mapped {
            return link.exists().then(|| link.clone());
        }
        let p = &d.path;
        if p.starts_with('[') || p.starts_with("//") || p.is_empty() || p.contains(" (deleted)") {
            return None;
        }
        if self.replaced(dso).is_some() {
            return None;
        }
        Some(match &self.root {
            Some(r) => r.join(p.trim_start_matches('/')),
            None => PathBuf::from(p),
        })
    }
}
