//! The build-id cache in perf's layout, shared with perf: a copy of each
//! binary a recording touched, so a report still names its functions
//! after the binary was rebuilt or removed.
//!
//! ```text
//! DIR/<absolute path of the binary>/<build id in hex>/elf      the copy
//! DIR/.build-id/<first 2 hex digits>/<the rest>                 a symlink:
//!     ../../<absolute path of the binary>/<build id in hex>
//! ```
//!
//! `DIR` is given by the caller: `PERF_BUILDID_DIR` when set (perf's
//! `--buildid-dir` sets it), else `~/.debug`, as perf
//! (`pmx_io::dirs::Dirs::buildid`, read at the edge). [`add`] copies a binary in (`perf
//! buildid-cache -a`), [`list`] lists the cache (`-l`), [`remove`] takes
//! a binary's entry out (`-r`), [`lookup`] finds the copy of a build id
//! (report, script and annotate read it when the file on disk is gone or
//! has another build id), [`add_recorded`] caches the binaries a
//! recording's BUILD_ID feature lists (perf record's post-processing).

use crate::elf::hex;
use std::io;
use std::path::{Path, PathBuf};

/// The GNU build id of the ELF file at `path`.
pub fn build_id_of(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the map is read-only and dropped before returning; a file
    // changed underneath can only give wrong bytes, not unsafety in Rust
    // code that copies them out.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let obj = object::File::parse(&*map).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// The symlink of `id` under `.build-id` (an id shorter than two hex
/// digits, as a damaged file's empty one, gives a path that never
/// exists rather than a panic).
fn link_of(dir: &Path, id: &str) -> PathBuf {
    let (head, tail) = id.split_at(id.len().min(2));
    dir.join(".build-id").join(head).join(tail)
}

/// Copy the binary at `path` into the cache of `dir`; its build id.
/// A binary already cached is left as it is.
pub fn add(dir: &Path, path: &Path) -> io::Result<Vec<u8>> {
    let abs = std::fs::canonicalize(path)?;
    let id = build_id_of(&abs).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: no build id (not an ELF file with a .note.gnu.build-id)",
                path.display()
            ),
        )
    })?;
    let h = hex(&id);
    let rel = abs.strip_prefix("/").unwrap_or(&abs).join(&h);
    let entry = dir.join(&rel);
    if !entry.join("elf").exists() {
        std::fs::create_dir_all(&entry)?;
        let tmp = entry.join(".elf.tmp");
        std::fs::copy(&abs, &tmp)?;
        std::fs::rename(&tmp, entry.join("elf"))?;
    }
    let link = link_of(dir, &h);
    if std::fs::symlink_metadata(&link).is_err() {
        std::fs::create_dir_all(link.parent().expect("under .build-id"))?;
        std::os::unix::fs::symlink(Path::new("../..").join(&rel), &link)?;
    }
    Ok(id)
}

/// Every cached binary of `dir`: its build id (hex) and path, in the
/// order of the build ids.
pub fn list(dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let top = dir.join(".build-id");
    let Ok(heads) = std::fs::read_dir(&top) else {
        return Ok(out);
    };
    for head in heads.flatten() {
        let Ok(rest) = std::fs::read_dir(head.path()) else {
            continue;
        };
        for e in rest.flatten() {
            let id = format!(
                "{}{}",
                head.file_name().to_string_lossy(),
                e.file_name().to_string_lossy()
            );
            let Ok(target) = std::fs::read_link(e.path()) else {
                continue;
            };
            // ../../<path>/<id>: the binary's path.
            let path = target.strip_prefix("../..").unwrap_or(&target);
            let path = Path::new("/").join(path.parent().unwrap_or(path));
            out.push((id, path));
        }
    }
    out.sort();
    Ok(out)
}

/// Take the binary at `path` (its build id now) out of the cache of
/// `dir`; false when it was not in it.
pub fn remove(dir: &Path, path: &Path) -> io::Result<bool> {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let Some(id) = build_id_of(&abs) else {
        return Ok(false);
    };
    let h = hex(&id);
    let link = link_of(dir, &h);
    let had = std::fs::symlink_metadata(&link).is_ok();
    let _ = std::fs::remove_file(&link);
    let entry = dir.join(abs.strip_prefix("/").unwrap_or(&abs)).join(&h);
    if entry.exists() {
        std::fs::remove_dir_all(&entry)?;
    }
    Ok(had)
}

/// `perf buildid-cache`'s work in one call: add `add`, take out
/// `remove`, then with `list` list the cache, writing to `out` as it goes
/// (with `verbose`, a line per binary added or removed, as perf's `-v`).
/// An error names the binary it was about.
pub fn run(
    dir: &Path,
    add_paths: &[PathBuf],
    remove_paths: &[PathBuf],
    list_all: bool,
    verbose: bool,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let named = |p: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    for p in add_paths {
        let id = add(dir, p).map_err(|e| named(p, e))?;
        if verbose {
            writeln!(out, "Adding {} {}: Ok", hex(&id), p.display())?;
        }
    }
    for p in remove_paths {
        let had = match remove(dir, p).map_err(|e| named(p, e))? {
            true => "Ok",
            false => "not cached",
        };
        if verbose {
            writeln!(out, "Removing {}: {had}", p.display())?;
        }
    }
    if list_all {
        for (id, path) in list(dir)? {
            writeln!(out, "{id} {}", path.display())?;
        }
    }
    Ok(())
}

/// The cached copy of the binary with build id `id` in `dir`, if there is one.
/// A 20-byte id padded with zeros (perf's form of an md5 id) is also
/// looked up without the padding.
pub fn lookup(dir: &Path, id: &[u8]) -> Option<PathBuf> {
    let trimmed = match id.iter().rposition(|&b| b != 0) {
        Some(end) if id.len() == 20 && end < 16 => &id[..16],
        _ => id,
    };
    [id, trimmed].into_iter().find_map(|id| {
        if id.is_empty() {
            return None;
        }
        let elf = link_of(dir, &hex(id)).join("elf");
        elf.is_file().then_some(elf)
    })
}

/// The file to read for the binary recorded at `path` with build id
/// `id`: `path` when it is that build (or no id was recorded), else the
/// copy in the cache at `dir` when there is one, else `path`.
pub fn resolve(dir: &Path, path: &Path, id: Option<&[u8]>) -> PathBuf {
    let Some(id) = id else {
        return path.to_path_buf();
    };
    let same = |have: Vec<u8>| id.starts_with(&have) && id[have.len()..].iter().all(|&b| b == 0);
    if build_id_of(path).is_some_and(same) {
        return path.to_path_buf();
    }
    lookup(dir, id).unwrap_or_else(|| path.to_path_buf())
}

/// perf record's post-processing: cache every user-space binary of the
/// BUILD_ID entries of the recording at `file` (those still on disk with
/// the recorded build id). Returns how many were added or already there.
/// Anything but a regular file (a FIFO, a device) is left alone.
pub fn add_recorded(dir: &Path, file: &Path) -> Result<usize, pmx_perfdata::Error> {
    if !file.is_file() {
        return Ok(0);
    }
    let r = pmx_perfdata::Reader::open(file)?;
    let mut n = 0;
    for e in &r.features().build_ids {
        let p = Path::new(&e.filename);
        if e.filename.starts_with('[') || !p.is_absolute() {
            continue;
        }
        // perf pads a shorter (md5) build id to 20 bytes with zeros.
        let same = |id: Vec<u8>| {
            e.build_id.starts_with(&id) && e.build_id[id.len()..].iter().all(|&b| b == 0)
        };
        if build_id_of(p).is_some_and(same) && add(dir, p).is_ok() {
            n += 1;
        }
    }
    Ok(n)
}

/// After `record` wrote `output`: cache its binaries in `dir` unless
/// `skip`; a warning when that failed.
pub fn after_record(dir: &Path, output: &Path, skip: bool) -> Option<String> {
    let r = (!skip).then(|| add_recorded(dir, output))?;
    r.err()
        .map(|e| format!("build-id cache {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_short_build_id_is_looked_up_without_a_panic() {
        let dir = Path::new("/nonexistent-pmx-buildid");
        assert_eq!(lookup(dir, &[]), None);
        assert_eq!(lookup(dir, &[0xab]), None);
        assert_eq!(
            resolve(dir, Path::new("/bin/true"), Some(&[])),
            Path::new("/bin/true")
        );
        assert_eq!(link_of(dir, "a"), dir.join(".build-id/a"));
    }

    #[test]
    fn add_list_lookup_remove_in_perfs_layout() {
        let Ok(bin) = std::fs::canonicalize("/bin/true") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let id = add(dir.path(), &bin).expect("/bin/true has a build id");
        let h = hex(&id);
        // The symlink perf reads, relative, to the copy's directory.
        let link = dir.path().join(".build-id").join(&h[..2]).join(&h[2..]);
        let target = std::fs::read_link(&link).unwrap();
        assert!(target.starts_with("../.."), "{}", target.display());
        let copy = lookup(dir.path(), &id).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&bin).unwrap());
        assert_eq!(
            add(dir.path(), &bin).unwrap(),
            id,
            "adding again is harmless"
        );
        assert_eq!(list(dir.path()).unwrap(), vec![(h.clone(), bin.clone())]);
        assert_eq!(
            resolve(dir.path(), &bin, Some(&id)),
            bin,
            "the file on disk is that build"
        );
        assert!(remove(dir.path(), &bin).unwrap());
        assert_eq!(lookup(dir.path(), &id), None);
        assert!(list(dir.path()).unwrap().is_empty());
    }
}
