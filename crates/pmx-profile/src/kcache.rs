//! The kernel-symbol cache: this machine's [`Kallsyms`] kept on disk in a
//! compact binary index, so that only the first report after a boot pays
//! for `/proc/kallsyms` (~120k lines that the kernel formats on every read).
//!
//! The file is `$XDG_CACHE_HOME/pmx/kallsyms.idx` (else
//! `~/.cache/pmx/kallsyms.idx`); delete it to force a rebuild. It is used
//! only when its key equals the running system's: the kernel's build-id
//! (`/sys/kernel/notes`), the boot id (`/proc/sys/kernel/random/boot_id`:
//! addresses move with KASLR at every boot) and a hash of the loaded
//! modules (name, size and address of each `/proc/modules` line: a module
//! loaded or unloaded changes the symbols). Nothing in it is trusted
//! blindly: magic, version, key, every length against the file's size, a
//! checksum of the whole file, addresses in order, name ends in order and
//! on character boundaries, module numbers in range. A file that fails any
//! check is ignored and rewritten. Writes go to a temporary file in the
//! same directory (mode 0600) renamed over the old one, so a reader never
//! sees half a file.
//!
//! Layout (little-endian): `PMXKSYM\0`, version u32, key length u32, the
//! key, counts (symbols n, modules m, name bytes, module-name bytes: u32
//! each), addresses `[u64; n]`, name ends `[u32; n]`, module numbers
//! `[u16; n]`, the names, the module names (each ended by `\n`), then a
//! u64 checksum of everything before it.

use crate::kernel::Kallsyms;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"PMXKSYM\0";
const VERSION: u32 = 1;
/// The cache file's name in the cache directory.
pub const FILE_NAME: &str = "kallsyms.idx";

/// Where the kernel symbols of a report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The on-disk cache (its key matched and it passed every check).
    Cache,
    /// `/proc/kallsyms` (the cache was missing, stale, corrupt or off).
    Proc,
}

/// pmx's cache directory: `$XDG_CACHE_HOME/pmx` when that is an absolute
/// path, else `$HOME/.cache/pmx`; `None` when neither is set.
pub fn cache_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from);
    if let Some(x) = xdg.filter(|p| p.is_absolute()) {
        return Some(x.join("pmx"));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    home.is_absolute().then(|| home.join(".cache").join("pmx"))
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

/// This machine's kernel symbols: from the cache when it is valid for the
/// running system, else from `/proc/kallsyms` (and the cache rewritten).
pub fn load() -> (Kallsyms, Source) {
    match current_key() {
        Some(key) => load_with(cache_dir().as_deref(), &key, Kallsyms::load),
        None => (Kallsyms::load(), Source::Proc),
    }
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
        if let Ok(bytes) = std::fs::read(dir.join(FILE_NAME)) {
            if let Ok(k) = decode(bytes, key) {
                return (k, Source::Cache);
            }
        }
    }
    let k = read();
    if let (Some(dir), false) = (dir, k.is_empty()) {
        // A cache that cannot be written only costs the next run time.
        let _ = write_atomically(dir, &encode(&k, key));
    }
    (k, Source::Proc)
}

/// Write `bytes` as the cache file: a temporary file renamed over it.
fn write_atomically(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        std::fs::rename(&tmp, dir.join(FILE_NAME))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The cache file's bytes for `k` under `key`.
pub fn encode(k: &Kallsyms, key: &[u8]) -> Vec<u8> {
    let mods: String = k.modules.iter().map(|m| format!("{m}\n")).collect();
    let body = k.body();
    let mut b = Vec::with_capacity(48 + key.len() + body.len() + mods.len());
    b.extend_from_slice(MAGIC);
    for v in [VERSION, key.len() as u32] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(key);
    let names_len = body.len() - 14 * k.n;
    for v in [k.n, k.modules.len(), names_len, mods.len()] {
        b.extend_from_slice(&(v as u32).to_le_bytes());
    }
    b.extend_from_slice(body);
    b.extend_from_slice(mods.as_bytes());
    let sum = checksum(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// Read a cache file written for `key`; why not, when it cannot be used.
/// The table keeps the file's bytes as they are.
pub fn decode(bytes: Vec<u8>, key: &[u8]) -> Result<Kallsyms, String> {
    if bytes.len() < 8 + 8 + 8 || &bytes[..8] != MAGIC {
        return Err("not a pmx kernel-symbol cache".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body).to_le_bytes() != sum {
        return Err("checksum mismatch".into());
    }
    let word = |at: usize| -> Result<usize, String> {
        let b = body
            .get(at..at + 4)
            .ok_or("the file is shorter than its counts say")?;
        Ok(u32::from_le_bytes(b.try_into().expect("4")) as usize)
    };
    if word(8)? != VERSION as usize {
        return Err("another version".into());
    }
    let key_len = word(12)?;
    if body.get(16..16 + key_len) != Some(key) {
        return Err("written for another boot, kernel or module list".into());
    }
    let at = 16 + key_len;
    let (n, m, names_len, mods_len) = (word(at)?, word(at + 4)?, word(at + 8)?, word(at + 12)?);
    let base = at + 16;
    let names_at = n
        .checked_mul(14)
        .and_then(|x| x.checked_add(base))
        .ok_or("implausible count")?;
    let total = [names_len, mods_len]
        .iter()
        .try_fold(names_at, |a, &x| a.checked_add(x));
    if total != Some(body.len()) {
        return Err("the file's size does not match its counts".into());
    }
    std::str::from_utf8(&body[names_at..names_at + names_len]).map_err(|e| e.to_string())?;
    let mods = std::str::from_utf8(&body[names_at + names_len..]).map_err(|e| e.to_string())?;
    let modules: Vec<String> = mods.split_terminator('\n').map(str::to_string).collect();
    let k = Kallsyms {
        blob: bytes,
        base,
        n,
        modules,
    };
    let names = std::str::from_utf8(&k.blob[names_at..names_at + names_len]).unwrap_or("");
    let sorted = (1..n).all(|i| k.start(i - 1) <= k.start(i));
    let ends_ok = (1..n).all(|i| k.name_end(i - 1) <= k.name_end(i))
        && (n == 0 || k.name_end(n - 1) == names_len)
        && (0..n).all(|i| names.is_char_boundary(k.name_end(i)));
    let modules_ok = k.modules.len() == m && (0..n).all(|i| k.module_number(i) as usize <= m);
    if !sorted || !ends_ok || !modules_ok {
        return Err("inconsistent tables".into());
    }
    Ok(k)
}

/// A 64-bit checksum of `b` (FNV-1a over 8-byte words, then the tail).
fn checksum(b: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("8"))).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(PRIME);
    }
    h ^ b.len() as u64
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
        let back = decode(encode(&k, &key), &key).unwrap();
        assert_eq!(back, k);
        let s = back.symbol(back.lookup(0xffffffffc0001010).unwrap());
        assert_eq!((s.name, s.module), ("other", Some("kvm_amd")));
    }

    #[test]
    fn stale_or_corrupt_files_are_refused() {
        let k = Kallsyms::parse(TEXT);
        let mods = "kvm 1000 2 - Live 0xffffffffc0000000\n";
        let key = make_key(&[1, 2, 3], "boot-a", mods);
        let bytes = encode(&k, &key);
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
        let err = decode(encode(&bad, &key), &key).unwrap_err();
        assert!(err.contains("inconsistent"), "{err}");
        let bad = Kallsyms::from_parts(&[1, 2], &[1, 2], &[0, 3], "ab", vec!["m".into()]);
        let err = decode(encode(&bad, &key), &key).unwrap_err();
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
