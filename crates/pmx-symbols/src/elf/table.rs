//! A binary's symbol table as lookups use it, and its cache on disk.
//!
//! Reading a big binary's symbols (`cc1`: 29,000 dynamic symbols) and
//! demangling the ones a profile hits cost more than the rest of a report.
//! Both are kept per build id in the directory the binary was opened with
//! (pmx's `…/symbols`, [`super::ElfFile::open_with`]): the sorted table with its bounds, the raw
//! names, and the display names demangled so far in one style. A report
//! reads the file whole, looks up in place, demangles only names no
//! earlier run needed, and writes the file again (a temporary file
//! renamed over it) when it added some.
//!
//! Only binaries with a build id and at least [`MIN_CACHED`] symbols are
//! cached. The file records the rules' version, the style, a stamp of
//! the separate debug file (installing `libc6-dbg` changes the symbols)
//! and one of the pmx binary that wrote it (another build may name
//! differently): any difference, a bad length or an unsorted table and the
//! file is rebuilt. At most [`MAX_FILES`] files are kept (the oldest go first).

use super::{hex, Symbol};
use crate::demangle::{demangle_as, Demangle};
use std::path::{Path, PathBuf};

/// Binaries with fewer symbols are read directly each time.
pub const MIN_CACHED: usize = 2000;
/// Files kept in the cache directory.
pub const MAX_FILES: usize = 256;
/// Bumped whenever the symbol rules (bounds, PLT, choice among aliases,
/// demangling) change.
const RULES: u32 = 3;
const MAGIC: &[u8; 8] = b"PMXSYM\0\x01";
const HEADER: usize = 8 + 4 + 4 + 8 + 4 + 4;
const ENTRY: usize = 32;
const UNSET: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Entry {
    start: u64,
    end: u64,
    raw: (u32, u32),
    shown: (u32, u32),
}

/// The symbols of one binary: bounds, raw names, display names in
/// `style` as far as demangled.
pub(crate) struct Table {
    entries: Vec<Entry>,
    /// The names the table was made or read with: built to size and
    /// never grown (a big binary's raw names are tens of MB: growing
    /// them by one name would double the allocation).
    blob: Vec<u8>,
    /// Display names demangled since: their offsets count on from the
    /// end of `blob`, as in the file, where the two are written as one.
    added_names: Vec<u8>,
    style: Demangle,
    /// Names demangled since the table was read or built.
    added: usize,
    /// Where the table is cached, when it is.
    file: Option<PathBuf>,
    debug_stamp: u64,
    /// When this process last wrote the file.
    saved_at: Option<std::time::Instant>,
}

impl Table {
    /// The table of `symbols` (sorted by start).
    pub(crate) fn new(symbols: &[Symbol], style: Demangle) -> Table {
        let mut blob = Vec::with_capacity(symbols.iter().map(|s| s.name.len()).sum());
        let entries = symbols
            .iter()
            .map(|s| {
                let off = blob.len() as u32;
                blob.extend_from_slice(s.name.as_bytes());
                Entry {
                    start: s.start,
                    end: s.end,
                    raw: (off, s.name.len() as u32),
                    shown: (0, UNSET),
                }
            })
            .collect();
        Table {
            entries,
            blob,
            added_names: Vec::new(),
            style,
            added: 0,
            file: None,
            debug_stamp: 0,
            saved_at: None,
        }
    }

    /// The cached table of the binary with `build_id`, else one built by
    /// `build` (and cached from then on when it is big enough).
    pub(crate) fn cached(
        dir: Option<&Path>,
        build_id: Option<&[u8]>,
        debug_stamp: u64,
        style: Demangle,
        build: impl FnOnce() -> Vec<Symbol>,
    ) -> Table {
        // The file is also this pmx's: another build may name differently.
        let debug_stamp = debug_stamp ^ tool_stamp();
        let file = build_id
            .filter(|id| !id.is_empty())
            .and_then(|id| Some(dir?.join(format!("{}.{}.sym", hex(id), style as u8))));
        if let Some(t) = file.as_deref().and_then(|f| read(f, style, debug_stamp)) {
            return Table {
                file,
                debug_stamp,
                ..t
            };
        }
        let symbols = build();
        let mut t = Table::new(&symbols, style);
        if symbols.len() >= MIN_CACHED {
            // Written once a name is shown (what a profile does), not
            // for a mere lookup.
            t.file = file;
            t.debug_stamp = debug_stamp;
        }
        t
    }

    /// Bytes of memory the table holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.blob.capacity()
            + self.added_names.capacity()
    }

    /// Number of symbols.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The index of the symbol containing `vaddr`.
    pub(crate) fn lookup(&self, vaddr: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.start <= vaddr);
        let e = self.entries.get(i.checked_sub(1)?)?;
        (vaddr < e.end).then_some(i - 1)
    }

    /// Symbol `i`'s bounds.
    pub(crate) fn bounds(&self, i: usize) -> (u64, u64) {
        let e = &self.entries[i];
        (e.start, e.end)
    }

    /// Symbol `i`'s raw name.
    pub(crate) fn raw(&self, i: usize) -> &str {
        let (off, len) = self.entries[i].raw;
        std::str::from_utf8(self.name_bytes(off, len)).unwrap_or("")
    }

    /// The name at `off` (counted over `blob` then `added_names`).
    fn name_bytes(&self, off: u32, len: u32) -> &[u8] {
        let (off, len) = (off as usize, len as usize);
        let (names, off) = match off.checked_sub(self.blob.len()) {
            Some(o) => (&self.added_names, o),
            None => (&self.blob, off),
        };
        names.get(off..off + len).unwrap_or(&[])
    }

    /// Symbol `i`'s name as shown: demangled in the table's style, once.
    pub(crate) fn shown(&mut self, i: usize) -> String {
        let (off, len) = self.entries[i].shown;
        if len != UNSET {
            return String::from_utf8_lossy(self.name_bytes(off, len)).into_owned();
        }
        let name = demangle_as(self.raw(i), self.style);
        let off = (self.blob.len() + self.added_names.len()) as u32;
        self.added_names.extend_from_slice(name.as_bytes());
        self.entries[i].shown = (off, name.len() as u32);
        self.added += 1;
        name
    }

    /// Every symbol with its raw name.
    pub(crate) fn symbols(&self) -> Vec<Symbol> {
        (0..self.entries.len())
            .map(|i| Symbol {
                start: self.entries[i].start,
                end: self.entries[i].end,
                name: self.raw(i).to_string(),
            })
            .collect()
    }

    /// [`Table::save`], unless this process wrote the file less than
    /// `interval` ago: a long-lived process (`pmx serve`, whose every
    /// profile ends a symbolizer) does not rewrite a big table each time.
    pub(crate) fn save_unless_within(&mut self, interval: std::time::Duration) {
        if self.saved_at.is_some_and(|t| t.elapsed() < interval) {
            return;
        }
        self.save();
    }

    /// Write the cache file when names were added (errors are ignored: a
    /// cache that cannot be written is only slower).
    pub(crate) fn save(&mut self) {
        let Some(file) = self.file.as_deref() else {
            return;
        };
        let names = self.blob.len() + self.added_names.len();
        if self.added == 0 || names > u32::MAX as usize / 2 {
            return;
        }
        let mut out = Vec::with_capacity(HEADER + self.entries.len() * ENTRY + names);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&RULES.to_le_bytes());
        out.extend_from_slice(&(self.style as u32).to_le_bytes());
        out.extend_from_slice(&self.debug_stamp.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(names as u32).to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.start.to_le_bytes());
            out.extend_from_slice(&e.end.to_le_bytes());
            for v in [e.raw.0, e.raw.1, e.shown.0, e.shown.1] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.blob);
        out.extend_from_slice(&self.added_names);
        if crate::kcache::write_file_atomically(file, &out).is_ok() {
            self.added = 0;
            self.saved_at = Some(std::time::Instant::now());
            prune(file.parent().unwrap_or(Path::new(".")), "sym");
        }
    }
}

/// Which pmx binary this is (its size and modification time, hashed,
/// once): a table cached by another build is not this build's.
pub(super) fn tool_stamp() -> u64 {
    static STAMP: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *STAMP.get_or_init(|| {
        std::env::current_exe()
            .and_then(std::fs::metadata)
            .map_or(0, |m| super::stamp(&m).rotate_left(17))
    })
}

/// A cached table, when the file is whole, of these rules, this style and
/// this debug file.
fn read(file: &Path, style: Demangle, debug_stamp: u64) -> Option<Table> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > 1 << 31 {
        return None;
    }
    let mut bytes = std::fs::read(file).ok()?;
    let u32_at = |i: usize| Some(u32::from_le_bytes(bytes.get(i..i + 4)?.try_into().ok()?));
    let u64_at = |i: usize| Some(u64::from_le_bytes(bytes.get(i..i + 8)?.try_into().ok()?));
    if bytes.get(..8)? != MAGIC
        || u32_at(8)? != RULES
        || u32_at(12)? != style as u32
        || u64_at(16)? != debug_stamp
    {
        return None;
    }
    let (n, blob_len) = (u32_at(24)? as usize, u32_at(28)? as usize);
    let blob_at = HEADER.checked_add(n.checked_mul(ENTRY)?)?;
    if bytes.len() != blob_at.checked_add(blob_len)? {
        return None;
    }
    let within = |(off, len): (u32, u32)| {
        (off as usize)
            .checked_add(len as usize)
            .is_some_and(|e| e <= blob_len)
    };
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let at = HEADER + i * ENTRY;
        let e = Entry {
            start: u64_at(at)?,
            end: u64_at(at + 8)?,
            raw: (u32_at(at + 16)?, u32_at(at + 20)?),
            shown: (u32_at(at + 24)?, u32_at(at + 28)?),
        };
        let sorted = entries.last().is_none_or(|p: &Entry| p.start < e.start);
        if !sorted || e.end <= e.start || !within(e.raw) || (e.shown.1 != UNSET && !within(e.shown))
        {
            return None;
        }
        entries.push(e);
    }
    bytes.drain(..blob_at);
    bytes.shrink_to_fit();
    Some(Table {
        entries,
        blob: bytes,
        added_names: Vec::new(),
        style,
        added: 0,
        file: None,
        debug_stamp,
        saved_at: None,
    })
}

/// Keep the newest [`MAX_FILES`] files of `dir` ending in `.EXT` (the
/// tables, `sym`; the DWARF answers, `dwarf`).
pub(super) fn prune(dir: &Path, ext: &str) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_str().unwrap_or("");
            name.strip_suffix(ext).is_some_and(|n| n.ends_with('.'))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= MAX_FILES {
        return;
    }
    files.sort();
    for (_, f) in &files[..files.len() - MAX_FILES] {
        let _ = std::fs::remove_file(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbols(n: usize) -> Vec<Symbol> {
        (0..n)
            .map(|i| Symbol {
                start: 0x1000 + 0x10 * i as u64,
                end: 0x1008 + 0x10 * i as u64,
                name: format!("_ZN3foo4bar{i}Ev"),
            })
            .collect()
    }

    #[test]
    fn written_then_read_and_refused_when_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.0.sym");
        let syms = symbols(3000);
        let mut t = Table::new(&syms, Demangle::Short);
        (t.file, t.debug_stamp) = (Some(file.clone()), 7);
        assert_eq!(t.lookup(0x1004), Some(0));
        assert_eq!(t.lookup(0x1009), None);
        assert_eq!(t.lookup(0xfff), None);
        assert_eq!(t.shown(5), "foo::bar5");
        t.save();
        let mut back = read(&file, Demangle::Short, 7).expect("read back");
        assert_eq!(back.len(), 3000);
        assert_eq!(back.entries[5].shown.1, 9, "the demangled name is kept");
        assert_eq!(back.shown(5), "foo::bar5");
        assert_eq!(back.raw(2999), "_ZN3foo4bar2999Ev");
        assert_eq!(back.symbols(), syms);
        // Another style, another debug file: not this file.
        assert!(read(&file, Demangle::Full, 7).is_none());
        assert!(read(&file, Demangle::Short, 8).is_none());
        // Damaged: cut, a flipped length, an unsorted table.
        let bytes = std::fs::read(&file).unwrap();
        for cut in [0, 7, HEADER, HEADER + 31, bytes.len() - 1] {
            std::fs::write(&file, &bytes[..cut]).unwrap();
            assert!(read(&file, Demangle::Short, 7).is_none(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        bad[HEADER + 20] = 0xff; // raw length of entry 0
        bad[HEADER + 21] = 0xff;
        std::fs::write(&file, &bad).unwrap();
        assert!(read(&file, Demangle::Short, 7).is_none());
        let mut bad = bytes.clone();
        bad[HEADER + ENTRY..HEADER + ENTRY + 8].copy_from_slice(&0u64.to_le_bytes());
        std::fs::write(&file, &bad).unwrap();
        assert!(read(&file, Demangle::Short, 7).is_none());
    }

    #[test]
    fn a_table_written_lately_is_not_written_again_within_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("y.0.sym");
        let mut t = Table::new(&symbols(2500), Demangle::Short);
        (t.file, t.debug_stamp) = (Some(file.clone()), 3);
        t.shown(1);
        t.save_unless_within(std::time::Duration::from_secs(300));
        let first = std::fs::read(&file).expect("written the first time");
        t.shown(2);
        t.save_unless_within(std::time::Duration::from_secs(300));
        assert_eq!(std::fs::read(&file).unwrap(), first, "not within 300 s");
        t.save();
        let back = read(&file, Demangle::Short, 3).unwrap();
        assert_eq!(back.entries[2].shown.1, 9, "written when asked");
    }

    #[test]
    fn a_demangled_name_costs_its_length_not_a_copy_of_every_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("z.0.sym");
        let mut t = Table::new(&symbols(100_000), Demangle::Short);
        (t.file, t.debug_stamp) = (Some(file.clone()), 5);
        let before = t.heap_bytes();
        assert_eq!(t.shown(7), "foo::bar7");
        let grown = t.heap_bytes() - before;
        assert!(grown < 4096, "one name grew the table by {grown} bytes");
        // Written and read back, the added name and the raw ones are where
        // they were; a name added after the read goes after them again.
        t.save();
        let mut back = read(&file, Demangle::Short, 5).unwrap();
        assert_eq!(back.shown(7), "foo::bar7");
        assert_eq!(back.raw(99_999), "_ZN3foo4bar99999Ev");
        let before = back.heap_bytes();
        assert_eq!(back.shown(9), "foo::bar9");
        assert!(back.heap_bytes() - before < 4096);
        back.file = Some(file.clone());
        back.save();
        let mut again = read(&file, Demangle::Short, 5).unwrap();
        assert_eq!(again.entries[9].shown.1, 9);
        assert_eq!(again.shown(9), "foo::bar9");
        assert_eq!(again.shown(7), "foo::bar7");
    }

    #[test]
    fn the_directory_keeps_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_FILES + 5 {
            std::fs::write(dir.path().join(format!("{i}.0.sym")), b"x").unwrap();
        }
        std::fs::write(dir.path().join("other"), b"x").unwrap();
        prune(dir.path(), "sym");
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, MAX_FILES + 1);
    }
}
