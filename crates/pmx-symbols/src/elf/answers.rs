//! The DWARF answers of a binary kept across runs: the source lines and
//! inline chains pmx looked up in it, by address, so that the next report
//! of the same build asks its DWARF nothing it asked before.
//!
//! A `--call-graph dwarf` profile ends every chain in the C library, whose
//! inline frames come from `libc6-dbg`'s debug file: 10 MB of DWARF
//! zlib-compressed, read one unit at a time (`lazy`), but a unit deep in
//! `.debug_info` still costs inflating the stream up to it (one sample in
//! `__libc_fork` is most of such a report's time). The answers are few
//! (one per distinct address asked) and small; kept beside the binary's
//! symbol table (pmx's `…/symbols`, [`super::ElfFile::open_with`]) as
//! `BUILDID.dwarf`, they are read at the first line or inline lookup, and
//! the file is written again (a temporary file renamed over it) when the
//! run added answers. A binary opened without that directory keeps
//! nothing, in memory or on disk.
//!
//! **Trust.** The file records the rules' version, the binary's build id,
//! a stamp of its size (a stripped copy keeps the build id) and of its
//! separate debug file (installing or updating `libc6-dbg` changes the
//! answers), one of the pmx binary that wrote it,
//! every length, and an FNV-1a checksum of its entries. Any difference,
//! a bad length, a string that is not UTF-8 or a wrong checksum and the
//! file is ignored: the answers are looked up again and the file
//! rewritten. Only binaries with a build id are kept; a file holds at
//! most [`MAX_BYTES`] of answers (those past it are not kept, the oldest
//! stay), and the directory at most [`super::table::MAX_FILES`] such
//! files (the oldest go first).
//!
//! Layout (little-endian): `PMXDWA\0\x01`, rules u32, stamp u64, build-id
//! length u32 and the id, entries n u32, their bytes u32, their checksum
//! u64, then the entries by address: address u64, kind u8 (0: line,
//! 1 + [`Demangle`] as u8: an inline chain in that style), then for a line
//! a flag u8 (1: known) with, when known, the line u32 and the file; for a
//! chain, its length u32 and its names. A string is its length u32 and
//! its bytes.

use crate::demangle::Demangle;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// Bytes of answers a file keeps at most.
pub const MAX_BYTES: usize = 4 << 20;
/// Bumped whenever what a line or inline lookup answers changes.
const RULES: u32 = 1;
const MAGIC: &[u8; 8] = b"PMXDWA\0\x01";
/// The file name's ending.
pub(super) const EXT: &str = "dwarf";
/// A line answer's kind.
const LINE: u8 = 0;

/// One answer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Line(Option<(String, u32)>),
    Chain(Vec<String>),
}

impl Answer {
    /// Its bytes in the file (the entry's address and kind included).
    fn encoded_len(&self) -> usize {
        9 + match self {
            Answer::Line(None) => 1,
            Answer::Line(Some((f, _))) => 1 + 4 + 4 + f.len(),
            Answer::Chain(names) => 4 + names.iter().map(|n| 4 + n.len()).sum::<usize>(),
        }
    }
}

/// The kind byte of an inline chain in `style`.
fn chain_kind(style: Demangle) -> u8 {
    1 + style as u8
}

/// Answers by address and kind.
type ByAddress = HashMap<(u64, u8), Answer>;

/// A binary's answers: those read from its file, then those added.
pub(super) struct Answers {
    map: ByAddress,
    /// Where they are kept (`None`: nowhere; nothing is recorded).
    file: Option<PathBuf>,
    build_id: Vec<u8>,
    stamp: u64,
    /// Their bytes in the file.
    bytes: usize,
    /// Answers added since read or written.
    added: usize,
    /// When this process last wrote the file.
    saved_at: Option<std::time::Instant>,
}

impl Answers {
    /// The answers kept in `dir` for the binary with `build_id`, whose
    /// separate debug file has `debug_stamp`; empty when the file is
    /// missing, damaged or another build's (it is then rewritten once
    /// answers are added). Nothing is kept without a directory or a
    /// build id.
    pub(super) fn open(dir: Option<&Path>, build_id: Option<&[u8]>, debug_stamp: u64) -> Answers {
        let build_id = build_id.filter(|id| !id.is_empty()).unwrap_or_default();
        let stamp = debug_stamp ^ super::table::tool_stamp().rotate_left(7);
        let file = dir
            .filter(|_| !build_id.is_empty())
            .map(|d| d.join(format!("{}.{EXT}", super::hex(build_id))));
        let mut a = Answers {
            map: HashMap::default(),
            file,
            build_id: build_id.to_vec(),
            stamp,
            bytes: 0,
            added: 0,
            saved_at: None,
        };
        if let Some(f) = &a.file {
            if let Some((map, bytes)) = read(f, &a.build_id, stamp) {
                (a.map, a.bytes) = (map, bytes);
            }
        }
        a
    }

    /// Whether answers are kept at all.
    pub(super) fn kept(&self) -> bool {
        self.file.is_some()
    }

    /// Bytes of memory the answers hold (an estimate).
    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes + self.map.capacity() * (16 + std::mem::size_of::<Answer>())
    }

    /// The line answer at `vaddr`, when known.
    pub(super) fn line(&self, vaddr: u64) -> Option<Option<(String, u32)>> {
        match self.map.get(&(vaddr, LINE))? {
            Answer::Line(l) => Some(l.clone()),
            Answer::Chain(_) => None,
        }
    }

    /// The inline chain at `vaddr` in `style`, when known.
    pub(super) fn chain(&self, vaddr: u64, style: Demangle) -> Option<Vec<String>> {
        match self.map.get(&(vaddr, chain_kind(style)))? {
            Answer::Chain(c) => Some(c.clone()),
            Answer::Line(_) => None,
        }
    }

    /// Keep the line answer at `vaddr`; returns the bytes it holds.
    pub(super) fn add_line(&mut self, vaddr: u64, line: &Option<(String, u32)>) -> usize {
        self.add(vaddr, LINE, Answer::Line(line.clone()))
    }

    /// Keep the inline chain at `vaddr` in `style`; returns the bytes it
    /// holds.
    pub(super) fn add_chain(&mut self, vaddr: u64, style: Demangle, chain: &[String]) -> usize {
        self.add(vaddr, chain_kind(style), Answer::Chain(chain.to_vec()))
    }

    fn add(&mut self, vaddr: u64, kind: u8, answer: Answer) -> usize {
        let len = answer.encoded_len();
        if !self.kept() || self.bytes + len > MAX_BYTES || self.map.contains_key(&(vaddr, kind)) {
            return 0;
        }
        self.map.insert((vaddr, kind), answer);
        self.bytes += len;
        self.added += 1;
        len + 16 + std::mem::size_of::<Answer>()
    }

    /// [`Answers::save`], unless this process wrote the file less than
    /// `interval` ago (a long-lived `pmx serve`).
    pub(super) fn save_unless_within(&mut self, interval: std::time::Duration) {
        if self.saved_at.is_some_and(|t| t.elapsed() < interval) {
            return;
        }
        self.save();
    }

    /// Write the file when answers were added (errors are ignored: a cache
    /// that cannot be written is only slower).
    pub(super) fn save(&mut self) {
        let Some(file) = self.file.as_deref() else {
            return;
        };
        if self.added == 0 {
            return;
        }
        let mut keys: Vec<&(u64, u8)> = self.map.keys().collect();
        keys.sort_unstable();
        let mut body = Vec::with_capacity(self.bytes);
        for k in keys {
            encode(&mut body, *k, &self.map[k]);
        }
        let mut out = Vec::with_capacity(body.len() + 48 + self.build_id.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&RULES.to_le_bytes());
        out.extend_from_slice(&self.stamp.to_le_bytes());
        out.extend_from_slice(&(self.build_id.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.build_id);
        out.extend_from_slice(&(self.map.len() as u32).to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&crate::fnv1a(&body).to_le_bytes());
        out.extend_from_slice(&body);
        if crate::kcache::write_file_atomically(file, &out).is_ok() {
            self.added = 0;
            self.saved_at = Some(std::time::Instant::now());
            super::table::prune(file.parent().unwrap_or(Path::new(".")), EXT);
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn encode(out: &mut Vec<u8>, (vaddr, kind): (u64, u8), answer: &Answer) {
    out.extend_from_slice(&vaddr.to_le_bytes());
    out.push(kind);
    match answer {
        Answer::Line(None) => out.push(0),
        Answer::Line(Some((file, line))) => {
            out.push(1);
            out.extend_from_slice(&line.to_le_bytes());
            put_str(out, file);
        }
        Answer::Chain(names) => {
            out.extend_from_slice(&(names.len() as u32).to_le_bytes());
            for n in names {
                put_str(out, n);
            }
        }
    }
}

/// Reads a file's fields in order, every length checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(b)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        Some(std::str::from_utf8(self.take(n)?).ok()?.to_string())
    }
}

/// The answers of `file` and their bytes, when it is whole, of these
/// rules, this build and this debug file.
fn read(file: &Path, build_id: &[u8], stamp: u64) -> Option<(ByAddress, usize)> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > (MAX_BYTES + 4096) as u64 {
        return None;
    }
    let bytes = std::fs::read(file).ok()?;
    let mut c = Cursor {
        bytes: &bytes,
        at: 0,
    };
    if c.take(8)? != MAGIC || c.u32()? != RULES || c.u64()? != stamp {
        return None;
    }
    let id_len = c.u32()? as usize;
    if c.take(id_len)? != build_id {
        return None;
    }
    let (n, body_len, sum) = (c.u32()? as usize, c.u32()? as usize, c.u64()?);
    let body = c.take(body_len)?;
    if c.at != bytes.len() || body_len > MAX_BYTES || crate::fnv1a(body) != sum {
        return None;
    }
    let mut c = Cursor { bytes: body, at: 0 };
    let mut map = HashMap::default();
    map.reserve(n.min(body_len / 10));
    let mut last = None;
    for _ in 0..n {
        let key = (c.u64()?, c.u8()?);
        let answer = match key.1 {
            LINE => match c.u8()? {
                0 => Answer::Line(None),
                1 => {
                    let line = c.u32()?;
                    Answer::Line(Some((c.str()?, line)))
                }
                _ => return None,
            },
            k if k <= chain_kind(Demangle::None) => {
                let names = c.u32()? as usize;
                if names > body_len / 4 {
                    return None;
                }
                Answer::Chain((0..names).map(|_| c.str()).collect::<Option<_>>()?)
            }
            _ => return None,
        };
        // In order, each once.
        if last.is_some_and(|l| l >= key) {
            return None;
        }
        last = Some(key);
        map.insert(key, answer);
    }
    (c.at == body.len()).then_some((map, body_len))
}

#[cfg(test)]
mod tests {
    use super::super::{hex, ElfFile};
    use crate::Demangle;
    use std::path::{Path, PathBuf};

    // A C program with functions inlined into others (lazy.rs's tests').
    use super::super::lazy::tests::SOURCE;

    type Seen = Vec<(u64, Option<(String, u32)>, Vec<String>, Vec<String>)>;

    /// The line and inline chains (two styles) of every function
    /// symbol's start, middle and last byte.
    fn answers(f: &ElfFile) -> Seen {
        let addrs: Vec<u64> = (f.symbols().iter())
            .flat_map(|s| [s.start, s.start + (s.end - s.start) / 2, s.end - 1])
            .collect();
        (addrs.into_iter())
            .map(|a| {
                let short = f.inline_chain(a, Demangle::Short);
                (a, f.line(a), short, f.inline_chain(a, Demangle::None))
            })
            .collect()
    }

    /// `f`'s answers, then the answers kept written (as when the
    /// symbolizer ends).
    fn run(path: &Path, cache: &Path) -> Seen {
        let f = ElfFile::open_with(path, Some(cache.to_path_buf())).unwrap();
        let seen = answers(&f);
        f.save_table();
        seen
    }

    /// A copy of `bin` (same build id, same size) whose DWARF sections
    /// are zeroed: it answers nothing from itself.
    fn wiped(bin: &Path, out: &Path) -> PathBuf {
        use object::{Object, ObjectSection};
        let mut bytes = std::fs::read(bin).unwrap();
        let ranges: Vec<(usize, usize)> = {
            let obj = object::File::parse(&bytes[..]).unwrap();
            (obj.sections())
                .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
                .filter_map(|s| s.compressed_file_range().ok())
                .map(|r| (r.offset as usize, r.compressed_size as usize))
                .collect()
        };
        assert!(!ranges.is_empty(), "no DWARF sections");
        for (at, len) in ranges {
            bytes[at..at + len].fill(0);
        }
        std::fs::write(out, &bytes).unwrap();
        out.to_path_buf()
    }

    #[test]
    fn a_second_run_answers_from_the_kept_answers_and_damaged_ones_are_rebuilt() {
        if !pmx_testkit::cc::require() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("symbols");
        let flags = ["-g", "-O2", "-gz", "-Wl,--build-id"];
        let bin = pmx_testkit::cc::compile(dir.path(), "inl", SOURCE, &flags).unwrap();
        let plain = answers(&ElfFile::open(&bin).unwrap());
        assert!(plain.iter().any(|s| s.2.len() > 1), "no inline frames");
        assert!(plain.iter().any(|s| s.1.is_some()), "no lines");
        // Without a directory nothing is kept.
        assert!(!cache.exists());

        // The first run looks the answers up and keeps them.
        assert_eq!(run(&bin, &cache), plain);
        let id = ElfFile::open(&bin).unwrap().build_id().map(hex).unwrap();
        let kept = cache.join(format!("{id}.dwarf"));
        let good = std::fs::read(&kept).expect("the answers kept");

        // The second run answers from them: a copy whose DWARF is gone
        // answers nothing by itself, everything with them.
        let blank = wiped(&bin, &dir.path().join("wiped"));
        let nothing = answers(&ElfFile::open(&blank).unwrap());
        assert!(nothing.iter().all(|s| s.1.is_none() && s.2.is_empty()));
        assert_eq!(run(&blank, &cache), plain);
        assert_eq!(std::fs::read(&kept).unwrap(), good, "rewritten");

        // Damaged, truncated or another binary's: ignored (the answers
        // are the DWARF's), and written again whole.
        let other = pmx_testkit::cc::compile(
            dir.path(),
            "other",
            "int main(void) { return 3; }\n",
            &flags,
        )
        .unwrap();
        run(&other, &cache);
        let other_id = ElfFile::open(&other).unwrap().build_id().map(hex).unwrap();
        let foreign = std::fs::read(cache.join(format!("{other_id}.dwarf")));
        // `sq` renamed `Sq`.
        let mut flipped = good.clone();
        let sq = (flipped.windows(6))
            .position(|w| w == b"\x02\0\0\0sq")
            .expect("sq kept");
        flipped[sq + 4] = b'S';
        let mut forged = flipped.clone();
        let sum_at = 32 + id.len() / 2;
        let sum = crate::fnv1a(&forged[sum_at + 8..]);
        forged[sum_at..sum_at + 8].copy_from_slice(&sum.to_le_bytes());
        let damaged = [
            ("truncated", good[..good.len() - 7].to_vec()),
            ("empty", Vec::new()),
            ("a name changed", flipped),
            (
                "another binary's",
                foreign.expect("the other's kept answers"),
            ),
        ];
        for (what, bytes) in damaged {
            std::fs::write(&kept, &bytes).unwrap();
            assert_eq!(run(&bin, &cache), plain, "{what}: not ignored");
            assert_eq!(std::fs::read(&kept).unwrap(), good, "{what}: not rebuilt");
        }
        // With its checksum fixed, a changed name is what is answered:
        // the file, not the DWARF, answered above.
        std::fs::write(&kept, &forged).unwrap();
        let from_file = run(&blank, &cache);
        assert!(from_file.iter().any(|s| s.2.iter().any(|n| n == "Sq")));
        assert_eq!(from_file.len(), plain.len());
    }
}
