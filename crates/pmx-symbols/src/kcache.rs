//! The kernel-symbol cache: this machine's [`Kallsyms`] kept on disk in a
//! compact binary index, so that only the first report after a boot pays
//! for `/proc/kallsyms` (~120k lines that the kernel formats on every read).
//!
//! The file is `kallsyms.idx` in pmx's cache directory, which the caller
//! gives (`pmx_io::dirs::Dirs::cache`: `$XDG_CACHE_HOME/pmx`, else
//! `~/.cache/pmx`); delete it to force a rebuild. It is used
//! only when its key equals the running system's: the kernel's build-id
//! (`/sys/kernel/notes`), the boot id (`/proc/sys/kernel/random/boot_id`:
//! addresses move with KASLR at every boot) and a hash of the loaded
//! modules (name, size and address of each `/proc/modules` line: a module
//! loaded or unloaded changes the symbols). Writes go to a temporary file
//! in the same directory (mode 0600) renamed over the old one, so a reader
//! never sees half a file.
//!
//! **What is checked, and what it costs.** Before any symbol of the file
//! is used, the whole file is checked, through one open file descriptor:
//! magic, version, key, every length against the file's size, a checksum
//! of every byte, addresses in order, name ends in order and inside the
//! names, module numbers in range, names and module names ASCII (a table
//! with any other byte is not cached). A file that fails any check is
//! ignored and rewritten. The check reads the file in 64 KiB pieces into
//! one buffer; then the table is looked up in place through the same open
//! file (a binary search over its addresses), each 4 KiB page read once
//! when a lookup first needs it, so only the pages a report's lookups
//! touch become part of pmx's memory, not the whole index (4.7 MB here;
//! a memory map would not do: Linux 6.18 maps a whole 2 MiB folio of the
//! page cache at the first touch). What the check cannot cover: a
//! process that rewrites or cuts the file in place while pmx has it open
//! (pmx itself only ever replaces it by renaming) makes later lookups
//! give wrong names or none, never a panic (every access is
//! bounds-checked).
//!
//! Layout (little-endian): `PMXKSYM\0`, version u32, key length u32, the
//! key, counts (symbols n, modules m, name bytes, module-name bytes: u32
//! each), addresses `[u64; n]`, name ends `[u32; n]`, module numbers
//! `[u16; n]`, the names, the module names (each ended by `\n`), then a
//! u64 checksum of everything before it (four FNV-1a-like lanes over the
//! 8-byte words, folded; the tail bytes and the length mixed in).

use crate::kernel::{Blob, Kallsyms, Pages};
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"PMXKSYM\0";
/// Version 2: the four-lane checksum, ASCII names (1: one-lane checksum).
const VERSION: u32 = 2;
/// The cache file's name in the cache directory.
pub const FILE_NAME: &str = "kallsyms.idx";
/// The pieces the check reads the file in.
const PIECE: usize = 1 << 16;

/// Where the kernel symbols of a report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The on-disk cache (its key matched and it passed every check).
    Cache,
    /// `/proc/kallsyms` (the cache was missing, stale, corrupt or off).
    Proc,
}

/// The running system's key: kernel build-id, boot id, module list hash.
/// `None` when the boot id cannot be read (no cache then).
pub fn current_key() -> Option<Vec<u8>> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let build_id = crate::kernel::running_kernel_build_id().unwrap_or_default();
    Some(make_key(&build_id, boot.trim(), &modules))
}

/// The key of a kernel build-id, a boot id and `/proc/modules` text: of
/// each module line only the name, size and address count (its use
/// count and users change while it stays where it is).
pub fn make_key(build_id: &[u8], boot_id: &str, modules: &str) -> Vec<u8> {
    let mut m = Vec::new();
    for line in modules.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        for i in [0, 1, 5] {
            m.extend_from_slice(f.get(i).unwrap_or(&"").as_bytes());
            m.push(b' ');
        }
        m.push(b'\n');
    }
    let mut key = Vec::with_capacity(64);
    key.push(build_id.len().min(255) as u8);
    key.extend_from_slice(&build_id[..build_id.len().min(255)]);
    key.extend_from_slice(boot_id.as_bytes());
    key.push(0);
    key.extend_from_slice(&checksum(&m).to_le_bytes());
    key
}

/// This machine's kernel symbols: from the cache in `cache_dir` (pmx's
/// cache directory; `None`: no cache) when it is valid for the running
/// system, else from `/proc/kallsyms` (and the cache rewritten).
///
/// The table is also kept for the process with its key: a later load
/// (`pmx serve`'s next profile) while the key is the same (same kernel,
/// boot and modules) is a copy of it, without checking the file again.
pub fn load(cache_dir: Option<&Path>) -> (Kallsyms, Source) {
    static LAST: std::sync::Mutex<Option<(Vec<u8>, Kallsyms, Source)>> =
        std::sync::Mutex::new(None);
    let Some(key) = current_key() else {
        return (Kallsyms::load(), Source::Proc);
    };
    if let Some((k, table, source)) = &*LAST.lock().unwrap_or_else(|p| p.into_inner()) {
        if *k == key {
            return (table.clone(), *source);
        }
    }
    let (table, source) = load_with(cache_dir, &key, Kallsyms::load);
    if !table.is_empty() {
        *LAST.lock().unwrap_or_else(|p| p.into_inner()) = Some((key, table.clone(), source));
    }
    (table, source)
}

/// [`load`] with the directory, the key and the reader of
/// `/proc/kallsyms` given. An empty table (addresses hidden from this
/// user) is not cached.
pub fn load_with(
    dir: Option<&Path>,
    key: &[u8],
    read: impl FnOnce() -> Kallsyms,
) -> (Kallsyms, Source) {
    if let Some(dir) = dir {
        if let Ok(k) = open(&dir.join(FILE_NAME), key) {
            return (k, Source::Cache);
        }
    }
    let k = read();
    if let (Some(dir), false) = (dir, k.is_empty()) {
        // A cache that cannot be written only costs the next run time.
        if let Some(bytes) = encode(&k, key) {
            let _ = write_atomically(dir, &bytes);
        }
    }
    (k, Source::Proc)
}

/// Write `bytes` as the cache file: a temporary file renamed over it.
fn write_atomically(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_atomically(&dir.join(FILE_NAME), bytes)
}

/// Write `bytes` to `file` (mode 0600, its directory made) through a
/// temporary file beside it renamed over it, so that a reader sees the
/// old file or the new one, never a part; the temporary file is removed
/// on failure. pmx's caches are written this way.
pub(crate) fn write_file_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("cache");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        std::fs::rename(&tmp, file)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The cache file's bytes for `k` under `key`; `None` when a name or a
/// module name is not ASCII (such a table is not cached).
pub fn encode(k: &Kallsyms, key: &[u8]) -> Option<Vec<u8>> {
    let mods: String = k.modules.iter().map(|m| format!("{m}\n")).collect();
    let body = k.body();
    let names_len = body.len() - 14 * k.n;
    let ascii = |b: &[u8]| b.iter().all(|&c| c < 0x80);
    let module_ok = |m: &String| ascii(m.as_bytes()) && !m.contains('\n');
    if !ascii(&body[14 * k.n..]) || !k.modules.iter().all(module_ok) {
        return None;
    }
    let mut b = Vec::with_capacity(48 + key.len() + body.len() + mods.len());
    b.extend_from_slice(MAGIC);
    for v in [VERSION, key.len() as u32] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(key);
    for v in [k.n, k.modules.len(), names_len, mods.len()] {
        b.extend_from_slice(&(v as u32).to_le_bytes());
    }
    b.extend_from_slice(&body);
    b.extend_from_slice(mods.as_bytes());
    let sum = checksum(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    Some(b)
}

/// Read a cache file written for `key` from memory; why not, when it
/// cannot be used. The table keeps the bytes as they are.
pub fn decode(bytes: Vec<u8>, key: &[u8]) -> Result<Kallsyms, String> {
    let layout = check(bytes.len(), key, &mut |at, buf| {
        let src = at
            .checked_add(buf.len())
            .and_then(|end| bytes.get(at..end))
            .ok_or("the file is shorter than its counts say")?;
        buf.copy_from_slice(src);
        Ok(())
    })?;
    Ok(layout.table(Blob::Owned(bytes)))
}

/// Open the cache file at `path` written for `key`: checked whole (read
/// in pieces), then looked up in place, a page read at a time as lookups
/// need it; why not, when it cannot be used.
pub fn open(path: &Path, key: &[u8]) -> Result<Kallsyms, String> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let len = usize::try_from(len).map_err(|e| e.to_string())?;
    let layout = check(len, key, &mut |at, buf| {
        file.read_exact_at(buf, at as u64)
            .map_err(|e| e.to_string())
    })?;
    Ok(layout.table(Blob::File(Arc::new(Pages::new(file, len)))))
}

/// Where a checked file's tables are.
struct Layout {
    base: usize,
    n: usize,
    modules: Vec<String>,
}

impl Layout {
    fn table(self, blob: Blob) -> Kallsyms {
        Kallsyms {
            blob,
            base: self.base,
            n: self.n,
            modules: self.modules,
        }
    }
}

/// Reads `buf.len()` bytes at an offset of the file being checked.
type ReadAt<'a> = dyn FnMut(usize, &mut [u8]) -> Result<(), String> + 'a;

/// Check a cache file of `len` bytes for `key` (see the module's page),
/// reading it through `read_at` in pieces of at most [`PIECE`] bytes.
fn check(len: usize, key: &[u8], read_at: &mut ReadAt<'_>) -> Result<Layout, String> {
    if len < 8 + 8 + 8 {
        return Err("not a pmx kernel-symbol cache".into());
    }
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let mut head = [0u8; 16];
    read_at(0, &mut head)?;
    if &head[..8] != MAGIC {
        return Err("not a pmx kernel-symbol cache".into());
    }
    if word(&head, 8) != VERSION {
        return Err("another version".into());
    }
    let key_len = word(&head, 12) as usize;
    if key_len != key.len() || 16 + key_len + 16 + 8 > len {
        return Err("written for another boot, kernel or module list".into());
    }
    let mut header = vec![0u8; 16 + key_len + 16];
    read_at(0, &mut header)?;
    if &header[16..16 + key_len] != key {
        return Err("written for another boot, kernel or module list".into());
    }
    let at = 16 + key_len;
    let [n, m, names_len, mods_len] = [0, 4, 8, 12].map(|i| word(&header, at + i) as usize);
    let base = at + 16;
    let names_at = n.checked_mul(14).and_then(|x| x.checked_add(base));
    let total = [names_len, mods_len, 8]
        .iter()
        .try_fold(names_at.ok_or("implausible count")?, |a, &x| {
            a.checked_add(x)
        });
    if total != Some(len) {
        return Err("the file's size does not match its counts".into());
    }
    if mods_len > 1 << 20 {
        // Read whole below; real module lists take a few KiB.
        return Err("implausible count".into());
    }
    let mut sum = Checksum::new();
    sum.update(&header);
    let mut pieces = Pieces {
        read_at,
        sum: &mut sum,
        buf: Vec::new(),
    };
    let tables_ok = pieces.tables(base, n, m, names_len)?;
    let mut mods = vec![0u8; mods_len];
    read_at(len - 8 - mods_len, &mut mods)?;
    sum.update(&mods);
    let mut stored = [0u8; 8];
    read_at(len - 8, &mut stored)?;
    if sum.finish().to_le_bytes() != stored {
        return Err("checksum mismatch".into());
    }
    let mods = std::str::from_utf8(&mods).ok().filter(|m| m.is_ascii());
    let modules: Vec<String> = mods
        .map(|m| m.split_terminator('\n').map(str::to_string).collect())
        .unwrap_or_default();
    let mods_ok = mods.is_some_and(|t| t.is_empty() || t.ends_with('\n')) && modules.len() == m;
    if !tables_ok || !mods_ok {
        return Err("inconsistent tables".into());
    }
    Ok(Layout { base, n, modules })
}

/// The tables of a file being checked, read piece by piece into one
/// buffer, each piece added to the checksum.
struct Pieces<'a, 'r> {
    read_at: &'a mut ReadAt<'r>,
    sum: &'a mut Checksum,
    buf: Vec<u8>,
}

impl Pieces<'_, '_> {
    /// Whether addresses are in order, name ends in order and ending at
    /// `names_len`, module numbers at most `m` and the names ASCII.
    fn tables(
        &mut self,
        base: usize,
        n: usize,
        m: usize,
        names_len: usize,
    ) -> Result<bool, String> {
        let mut prev = 0u64;
        let mut ok = true;
        self.each(base, 8 * n, 8, &mut |p| {
            for w in p.chunks_exact(8) {
                let a = u64::from_le_bytes(w.try_into().expect("8"));
                ok &= prev <= a;
                prev = a;
            }
        })?;
        let mut end = 0usize;
        self.each(base + 8 * n, 4 * n, 4, &mut |p| {
            for w in p.chunks_exact(4) {
                let e = u32::from_le_bytes(w.try_into().expect("4")) as usize;
                ok &= end <= e && e <= names_len;
                end = e;
            }
        })?;
        ok &= end == names_len;
        self.each(base + 12 * n, 2 * n, 2, &mut |p| {
            let numbers = p.chunks_exact(2).map(|w| u16::from_le_bytes([w[0], w[1]]));
            ok &= numbers.max().unwrap_or(0) as usize <= m;
        })?;
        self.each(base + 14 * n, names_len, 1, &mut |p| ok &= p.is_ascii())?;
        Ok(ok)
    }

    /// Read `len` bytes from `from` in pieces (whole elements of `elem`
    /// bytes), add each to the checksum and give it to `f`.
    fn each(
        &mut self,
        from: usize,
        len: usize,
        elem: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), String> {
        let step = PIECE / elem * elem;
        self.buf.resize(step.min(len), 0);
        let mut done = 0;
        while done < len {
            let piece = &mut self.buf[..step.min(len - done)];
            (self.read_at)(from + done, piece)?;
            self.sum.update(piece);
            f(piece);
            done += piece.len();
        }
        Ok(())
    }
}

/// A 64-bit checksum fed in pieces: four lanes over the 8-byte words
/// (word k in lane k mod 4), each step `h = (h ^ w) * P; h ^= h >> 29` —
/// a bijection of the lane, so changing any one word changes the result
/// —, the lanes then folded the same way, the tail bytes and the length
/// mixed in. Four independent lanes run about four times faster than one.
struct Checksum {
    lanes: [u64; 4],
    held: [u8; 32],
    n_held: usize,
    len: u64,
}

const PRIME: u64 = 0x0000_0100_0000_01b3;
const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

impl Checksum {
    fn new() -> Checksum {
        Checksum {
            lanes: [OFFSET, OFFSET ^ 1, OFFSET ^ 2, OFFSET ^ 3],
            held: [0; 32],
            n_held: 0,
            len: 0,
        }
    }

    fn update(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        if self.n_held > 0 {
            let take = (32 - self.n_held).min(b.len());
            self.held[self.n_held..self.n_held + take].copy_from_slice(&b[..take]);
            self.n_held += take;
            b = &b[take..];
            if self.n_held < 32 {
                return;
            }
            let block = self.held;
            self.block(&block);
            self.n_held = 0;
        }
        let mut blocks = b.chunks_exact(32);
        for block in &mut blocks {
            self.block(block.try_into().expect("32"));
        }
        let rest = blocks.remainder();
        self.held[..rest.len()].copy_from_slice(rest);
        self.n_held = rest.len();
    }

    #[inline]
    fn block(&mut self, b: &[u8; 32]) {
        for (lane, w) in self.lanes.iter_mut().zip(b.chunks_exact(8)) {
            let h = (*lane ^ u64::from_le_bytes(w.try_into().expect("8"))).wrapping_mul(PRIME);
            *lane = h ^ (h >> 29);
        }
    }

    fn finish(&self) -> u64 {
        let mut h = OFFSET;
        for &lane in &self.lanes {
            h = (h ^ lane).wrapping_mul(PRIME);
            h ^= h >> 29;
        }
        for &x in &self.held[..self.n_held] {
            h = (h ^ x as u64).wrapping_mul(PRIME);
        }
        h ^ self.len
    }
}

/// The checksum of `b` in one piece.
fn checksum(b: &[u8]) -> u64 {
    let mut c = Checksum::new();
    c.update(b);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000000 T _stext\nffffffff81000100 t do_one\n\
                        ffffffffc0000000 t mod_fn\t[kvm]\nffffffffc0001000 t other\t[kvm_amd]\n";

    #[test]
    fn round_trip_and_lookups_match_the_text() {
        let k = Kallsyms::parse(TEXT);
        let key = make_key(
            &[1, 2, 3],
            "boot-a",
            "kvm 1000 2 - Live 0xffffffffc0000000\n",
        );
        let back = decode(encode(&k, &key).unwrap(), &key).unwrap();
        assert_eq!(back, k);
        let s = back.symbol(back.lookup(0xffffffffc0001010).unwrap());
        assert_eq!((&*s.name, s.module), ("other", Some("kvm_amd")));
    }

    #[test]
    fn stale_or_corrupt_files_are_refused() {
        let k = Kallsyms::parse(TEXT);
        let mods = "kvm 1000 2 - Live 0xffffffffc0000000\n";
        let key = make_key(&[1, 2, 3], "boot-a", mods);
        let bytes = encode(&k, &key).unwrap();
        // Another boot, kernel or module list: another key.
        for other in [
            make_key(&[1, 2, 3], "boot-b", mods),
            make_key(&[9, 2, 3], "boot-a", mods),
            make_key(
                &[1, 2, 3],
                "boot-a",
                "kvm 1000 2 - Live 0xffffffffc0100000\n",
            ),
        ] {
            assert!(decode(bytes.clone(), &other)
                .unwrap_err()
                .contains("another boot"));
        }
        // Use counts are not part of the key.
        assert_eq!(
            key,
            make_key(
                &[1, 2, 3],
                "boot-a",
                "kvm 1000 5 x, Live 0xffffffffc0000000\n"
            )
        );
        // Any flipped byte, and any cut, is caught.
        for i in (0..bytes.len()).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(b, &key).is_err(), "byte {i}");
        }
        for n in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(bytes[..n].to_vec(), &key).is_err(), "cut at {n}");
        }
        // A file with a valid checksum but inconsistent tables.
        let bad = Kallsyms::from_parts(&[2, 1], &[1, 2], &[0, 0], "ab", Vec::new());
        let err = decode(encode(&bad, &key).unwrap(), &key).unwrap_err();
        assert!(err.contains("inconsistent"), "{err}");
        let bad = Kallsyms::from_parts(&[1, 2], &[1, 2], &[0, 3], "ab", vec!["m".into()]);
        let err = decode(encode(&bad, &key).unwrap(), &key).unwrap_err();
        assert!(err.contains("inconsistent"), "{err}");
    }

    #[test]
    fn the_cache_is_written_then_used_and_rebuilt_when_stale() {
        let dir = std::env::temp_dir().join(format!("pmx-kcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = make_key(&[7], "boot", "");
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Kallsyms::parse(TEXT)
        };
        let (a, s1) = load_with(Some(&dir), &key, read);
        let (b, s2) = load_with(Some(&dir), &key, read);
        assert_eq!((s1, s2, reads.get()), (Source::Proc, Source::Cache, 1));
        assert_eq!(a, b);
        // Garbage in the file: ignored, read again and rewritten.
        std::fs::write(dir.join(FILE_NAME), b"PMXKSYM\0garbage garbage garbage").unwrap();
        let (_, s3) = load_with(Some(&dir), &key, read);
        let (_, s4) = load_with(Some(&dir), &key, read);
        assert_eq!((s3, s4, reads.get()), (Source::Proc, Source::Cache, 2));
        // Another boot: rebuilt.
        let (_, s5) = load_with(Some(&dir), &make_key(&[7], "boot2", ""), read);
        assert_eq!((s5, reads.get()), (Source::Proc, 3));
        // No temporary file is left behind; an empty table is not cached.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
        std::fs::remove_dir_all(&dir).unwrap();
        let (_, s6) = load_with(Some(&dir), &key, Kallsyms::default);
        assert_eq!(s6, Source::Proc);
        assert!(!dir.exists());
    }

    /// A table large enough that the check reads its addresses, name
    /// ends and names in several pieces.
    fn large() -> Kallsyms {
        let n = 20_000;
        let starts: Vec<u64> = (0..n)
            .map(|i| 0xffff_ffff_8100_0000 + 64 * i as u64)
            .collect();
        let mut names = String::new();
        let mut ends = Vec::new();
        for i in 0..n {
            names.push_str(&format!("function_number_{i}"));
            ends.push(names.len() as u32);
        }
        let module: Vec<u16> = (0..n).map(|i| (i % 3) as u16).collect();
        Kallsyms::from_parts(
            &starts,
            &ends,
            &module,
            &names,
            vec!["a".into(), "b".into()],
        )
    }

    #[test]
    fn a_large_index_is_checked_in_pieces_then_mapped() {
        let k = large();
        let key = make_key(&[5], "boot", "");
        let bytes = encode(&k, &key).unwrap();
        assert!(bytes.len() > 4 * PIECE, "{} bytes", bytes.len());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, &bytes).unwrap();
        let mapped = open(&path, &key).unwrap();
        assert_eq!(mapped.len(), 20_000);
        let s = mapped.symbol(
            mapped
                .lookup(0xffff_ffff_8100_0000 + 64 * 12_345 + 7)
                .unwrap(),
        );
        assert_eq!((&*s.name, s.module), ("function_number_12345", None));
        let s = mapped.symbol(mapped.lookup(0xffff_ffff_8100_0000 + 64 * 19_999).unwrap());
        assert_eq!((&*s.name, s.module), ("function_number_19999", Some("a")));
        // Two lookups read a few pages of the file, not the whole table.
        let Blob::File(pages) = &mapped.blob else {
            panic!("not looked up in the file: {:?}", mapped.blob);
        };
        assert!(
            pages.read() <= 32,
            "{} of {} pages read",
            pages.read(),
            bytes.len() / 4096
        );
        assert_eq!(mapped, k);
        // A flipped byte anywhere (every region, several pieces of each)
        // and a cut are caught before anything is looked up.
        for i in (0..bytes.len()).step_by(16_411).chain([bytes.len() - 1]) {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            std::fs::write(&path, &b).unwrap();
            assert!(open(&path, &key).is_err(), "byte {i}");
        }
        std::fs::write(&path, &bytes[..bytes.len() - 8]).unwrap();
        assert!(open(&path, &key).is_err());
        // Rebuilt from the reader, then used from the file again.
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            large()
        };
        let (_, s1) = load_with(Some(dir.path()), &key, read);
        let (again, s2) = load_with(Some(dir.path()), &key, read);
        assert_eq!((s1, s2, reads.get()), (Source::Proc, Source::Cache, 1));
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(again, k);
    }

    #[test]
    fn the_checksum_does_not_depend_on_the_pieces() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = checksum(&data);
        for cuts in [
            &[1usize, 2, 3][..],
            &[31, 32, 33],
            &[64, 500, 999],
            &[0, 1000],
        ] {
            let mut c = Checksum::new();
            let mut from = 0;
            for &cut in cuts.iter().chain([&1000]) {
                c.update(&data[from..cut.max(from)]);
                from = cut.max(from);
            }
            assert_eq!(c.finish(), whole, "{cuts:?}");
        }
        assert_ne!(checksum(&data[..999]), whole);
    }

    #[test]
    fn a_table_with_names_that_are_not_ascii_is_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let key = make_key(&[7], "boot", "");
        let text = "ffffffff81000000 T caf\u{e9}\n";
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Kallsyms::parse(text)
        };
        let (a, s1) = load_with(Some(dir.path()), &key, read);
        let (_, s2) = load_with(Some(dir.path()), &key, read);
        assert_eq!((s1, s2, reads.get()), (Source::Proc, Source::Proc, 2));
        assert_eq!(a.symbol(0).name, "caf\u{e9}");
        assert!(!dir.path().join(FILE_NAME).exists());
    }

    #[test]
    fn this_machine_from_the_cache_equals_proc_kallsyms() {
        let (Some(key), fresh) = (current_key(), Kallsyms::load()) else {
            eprintln!("skipped: no boot id here");
            return;
        };
        if fresh.is_empty() {
            eprintln!("skipped: /proc/kallsyms has no addresses here");
            return;
        }
        let dir = std::env::temp_dir().join(format!("pmx-kcache-here-{}", std::process::id()));
        let (_, s1) = load_with(Some(&dir), &key, Kallsyms::load);
        let (cached, s2) = load_with(Some(&dir), &key, || unreachable!("read again"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((s1, s2), (Source::Proc, Source::Cache));
        assert_eq!(cached, fresh);
    }
}
