//! Build ids: the `NT_GNU_BUILD_ID` note the linker puts in an ELF file
//! (`.note.gnu.build-id`), which perf.data lists for every mapped binary
//! so a later `perf report` can tell whether the file on disk is still the
//! one that ran.
//!
//! The note is found through the program headers (`PT_NOTE` segments), so
//! stripped files and the kernel's `/sys/kernel/notes` (bare notes, no ELF
//! header) both work. ELF32 and ELF64, either byte order.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// `PT_NOTE`.
const PT_NOTE: u32 = 4;
/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;
/// A note segment larger than this is not read (build ids sit in the
/// first small note segment of any real binary).
const MAX_NOTE_SEGMENT: u64 = 1 << 20;
/// Program headers beyond this count are ignored.
const MAX_PHDRS: u64 = 4096;
/// The longest build id the perf.data format can hold.
pub const MAX_BUILD_ID: usize = 20;

#[derive(Clone, Copy)]
struct Endian(bool);

impl Endian {
    fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        if self.0 {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        }
    }
    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.0 {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    }
    fn u64(self, b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        if self.0 {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        }
    }
}

/// The GNU build id in a block of ELF notes (`namesz, descsz, type, name,
/// desc`, each part 4-byte aligned), if there is one.
pub fn find_in_notes(notes: &[u8], little_endian: bool) -> Option<Vec<u8>> {
    let e = Endian(little_endian);
    let mut at = 0usize;
    let align = |n: usize| n.checked_add(3).map(|v| v & !3);
    while at + 12 <= notes.len() {
        let namesz = e.u32(&notes[at..]) as usize;
        let descsz = e.u32(&notes[at + 4..]) as usize;
        let kind = e.u32(&notes[at + 8..]);
        let name_at = at + 12;
        let desc_at = name_at.checked_add(align(namesz)?)?;
        let end = desc_at.checked_add(align(descsz)?)?;
        if desc_at.checked_add(descsz)? > notes.len() {
            return None;
        }
        let name = &notes[name_at..name_at + namesz.min(notes.len() - name_at)];
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" && descsz > 0 {
            return Some(notes[desc_at..desc_at + descsz].to_vec());
        }
        at = end;
    }
    None
}

/// Files whose build id [`of_elf_file_cached`] remembers at most (the
/// memory is emptied when full).
const MAX_REMEMBERED: usize = 8192;

#[cfg(test)]
thread_local! {
    /// Files [`of_elf_file_cached`] read on this thread.
    static READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// [`of_elf_file`], remembered for the process by the file's device,
/// inode, size and modification time: a session that ends every 30 s
/// (`pmx serve`'s profiles) lists the build ids of the same binaries
/// without reading their notes again, and a binary rebuilt at the same
/// path (another inode or mtime) is read again.
pub fn of_elf_file_cached(path: &Path) -> Option<Vec<u8>> {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::sync::{Mutex, OnceLock};
    type Key = (u64, u64, u64, i64, i64);
    static SEEN: OnceLock<Mutex<HashMap<Key, Option<Vec<u8>>>>> = OnceLock::new();
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() {
        return None;
    }
    let key = (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec());
    let seen = SEEN.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(id) = seen.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return id.clone();
    }
    #[cfg(test)]
    READS.with(|r| r.set(r.get() + 1));
    let id = of_elf_file(path);
    // Changed while read: not remembered.
    let again = std::fs::metadata(path).ok()?;
    if (again.ino(), again.size(), again.mtime(), again.mtime_nsec())
        == (key.1, key.2, key.3, key.4)
    {
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= MAX_REMEMBERED {
            seen.clear();
        }
        seen.insert(key, id.clone());
    }
    id
}

/// The build id of the file process `pid` maps at `addr`, read through
/// its `/proc/PID/map_files/START-END` link (root; the file may be
/// deleted or replaced at its path since), when that file's inode is
/// `ino`; `None` when the process is gone or the link cannot be read.
pub fn of_mapped_file(pid: u32, addr: u64, ino: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let link = pmx_symbols::map_files::covering(pid, addr)?;
    // metadata follows the link to the mapped file.
    if std::fs::metadata(&link).ok()?.ino() != ino {
        return None;
    }
    of_elf_file(&link)
}

/// The build id of the ELF file at `path`; `None` when the file cannot be
/// read, is not ELF, or has no build-id note.
pub fn of_elf_file(path: &Path) -> Option<Vec<u8>> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut ident = [0u8; 64];
    f.read_exact(&mut ident).ok()?;
    if &ident[..4] != b"\x7fELF" {
        return None;
    }
    let is64 = match ident[4] {
        1 => false,
        2 => true,
        _ => return None,
    };
    let le = match ident[5] {
        1 => true,
        2 => false,
        _ => return None,
    };
    let e = Endian(le);
    let (phoff, phentsize, phnum) = if is64 {
        (
            e.u64(&ident[32..]),
            e.u16(&ident[54..]),
            e.u16(&ident[56..]),
        )
    } else {
        (
            u64::from(e.u32(&ident[28..])),
            e.u16(&ident[42..]),
            e.u16(&ident[44..]),
        )
    };
    let phentsize = u64::from(phentsize);
    let phnum = u64::from(phnum).min(MAX_PHDRS);
    let need = if is64 { 56 } else { 32 };
    if phentsize < need || phoff == 0 {
        return None;
    }
    let mut table = vec![0u8; usize::try_from(phentsize * phnum).ok()?];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    for ph in table.chunks_exact(phentsize as usize) {
        if e.u32(ph) != PT_NOTE {
            continue;
        }
        let (offset, size) = if is64 {
            (e.u64(&ph[8..]), e.u64(&ph[32..]))
        } else {
            (u64::from(e.u32(&ph[4..])), u64::from(e.u32(&ph[16..])))
        };
        if size == 0 || size > MAX_NOTE_SEGMENT {
            continue;
        }
        let mut notes = vec![0u8; size as usize];
        if f.seek(SeekFrom::Start(offset)).is_err() || f.read_exact(&mut notes).is_err() {
            continue;
        }
        if let Some(id) = find_in_notes(&notes, le) {
            return Some(id);
        }
    }
    None
}

/// The running kernel's build id, from `/sys/kernel/notes`.
pub fn of_running_kernel() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    find_in_notes(&notes, cfg!(target_endian = "little"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_le_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(name);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v.extend_from_slice(desc);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    /// The remembered build id is the file's, and a file replaced at the
    /// same path (another inode) is read again.
    #[test]
    fn remembered_ids_follow_a_replaced_file() {
        let (Some(a), Some(b)) = (
            Some(std::env::current_exe().unwrap()),
            ["/bin/true", "/usr/bin/true"]
                .into_iter()
                .map(Path::new)
                .find(|p| of_elf_file(p).is_some()),
        ) else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("pmx-buildid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bin");
        std::fs::copy(&a, &path).unwrap();
        let first = of_elf_file_cached(&path);
        assert!(first.is_some());
        assert_eq!(first, of_elf_file(&a));
        let reads = READS.with(|r| r.get());
        assert_eq!(of_elf_file_cached(&path), first, "remembered");
        assert_eq!(READS.with(|r| r.get()), reads, "not read again");
        // Replaced (a new file renamed over it, as a linker or package does).
        let tmp = dir.join("bin.new");
        std::fs::copy(b, &tmp).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let second = of_elf_file_cached(&path);
        assert_eq!(READS.with(|r| r.get()), reads + 1, "read again");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(second, of_elf_file(b));
        assert_ne!(second, first);
    }

    #[test]
    fn finds_the_gnu_note_after_others() {
        let mut notes = note(b"Xen\0", 1, &[1, 2, 3]);
        notes.extend(note(b"GNU\0", 1, &[0; 16])); // ABI tag, not a build id
        notes.extend(note(b"GNU\0", 3, &[0xab; 20]));
        assert_eq!(find_in_notes(&notes, true), Some(vec![0xab; 20]));
        assert_eq!(find_in_notes(&notes[..notes.len() - 4], true), None);
        assert_eq!(find_in_notes(&[], true), None);
    }

    #[test]
    fn truncated_or_huge_sizes_do_not_panic() {
        let mut bad = Vec::new();
        bad.extend_from_slice(&u32::MAX.to_le_bytes());
        bad.extend_from_slice(&u32::MAX.to_le_bytes());
        bad.extend_from_slice(&3u32.to_le_bytes());
        assert_eq!(find_in_notes(&bad, true), None);
    }

    /// The test binary itself: Rust's linker invocation on Linux asks for
    /// a build id (`--build-id`), and so does Debian's toolchain; what
    /// matters is that reading a real ELF file agrees with `readelf`.
    #[test]
    fn reads_a_real_binary_like_readelf() {
        let exe = std::env::current_exe().unwrap();
        let ours = of_elf_file(&exe);
        let out = std::process::Command::new("readelf")
            .args(["-n", exe.to_str().unwrap()])
            .output();
        let Ok(out) = out else {
            eprintln!("skipped: readelf is not installed");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
            .map(|h| h.trim().to_string());
        let hex = ours.map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
        assert_eq!(hex, theirs);
        assert_eq!(of_elf_file(Path::new("/proc/self/status")), None);
    }
}
