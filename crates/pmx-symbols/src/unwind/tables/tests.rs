//! Tables of this binary, of ld.so and its separate debug file, and of
//! crafted files whose unwind sections are `NOBITS`, empty or outside
//! the file.

use super::*;

#[test]
fn this_binary_has_eh_frame_hdr_and_a_bias() {
    let exe = std::env::current_exe().unwrap();
    let t = Tables::open(&exe, None).unwrap();
    assert!(t.sections.eh_frame_hdr.is_some() && t.has_cfi());
    // The first segment (offset 0) mapped at 0x5555_0000_0000 of a PIE
    // (vaddr 0) has that bias.
    let (off, _, vaddr) = t.segments[0];
    assert_eq!(off, 0);
    assert_eq!(t.bias(0x5555_0000_0000, 0), Some(0x5555_0000_0000 - vaddr));
    let e = Tables::open(&exe, Some(&[1, 2, 3])).err().unwrap();
    assert!(e.contains("differs"), "{e}");
    let e = Tables::open(Path::new("/dev/null"), None).err().unwrap();
    assert!(e.contains("not a regular file"), "{e}");
}

use pmx_testkit::elf::{self, Elf, Section, SHF_ALLOC, SHT_NOBITS, SHT_PROGBITS};

/// A separate debug file as `objcopy --only-keep-debug` makes it: the
/// build-id note, then the loaded sections as `NOBITS` (headers only,
/// sizes and addresses kept), with `.debug_frame` when given.
fn debug_file(id: &[u8], debug_frame: Option<Vec<u8>>) -> Vec<u8> {
    let mut e = Elf::new();
    e.add(
        Section::new(".note.gnu.build-id", elf::SHT_NOTE, elf::build_id_note(id))
            .at(0x238, SHF_ALLOC),
    );
    for (name, addr, size) in [
        (".text", 0x1060, 0x250b1),
        (".eh_frame_hdr", 0x2d018, 0x934),
        (".eh_frame", 0x2d950, 0x332c),
        (".got", 0x32fe8, 0x38),
    ] {
        e.add(
            Section::new(name, SHT_NOBITS, Vec::new())
                .at(addr, SHF_ALLOC)
                .claims(0x1000, size),
        );
    }
    if let Some(d) = debug_frame {
        e.add(Section::new(".debug_frame", SHT_PROGBITS, d));
    }
    e.bytes()
}

/// `DIR/xx/yyyy.debug` for `id`.
fn debug_path(dir: &Path, id: &[u8]) -> std::path::PathBuf {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(&hex[..2]).join(format!("{}.debug", &hex[2..]))
}

#[test]
fn nobits_unwind_sections_are_absent() {
    // Issue 29: `s.data()` of a NOBITS section is an empty slice outside
    // the mapped file; its pointer minus the file's wrapped around.
    let t = Tables::from_bytes(debug_file(&[7; 20], None), "debug").unwrap();
    assert!(!t.has_cfi());
    assert!(t.sections.text_svma.is_none() && t.sections.got_svma.is_none());
    assert!(t.sections.eh_frame.is_none() && t.sections.eh_frame_hdr.is_none());
}

#[test]
fn sections_outside_the_file_or_the_address_space_are_absent() {
    let mut e = elf::small(&[1; 20]);
    let len = e.bytes().len() as u64 + 0x1000;
    for (name, offset, size) in [
        (".eh_frame", len, 64),
        (".eh_frame_hdr", u64::MAX - 8, 16),
        (".got", 0, u64::MAX),
        (".debug_frame", 8, u64::MAX - 4),
    ] {
        e.add(Section::new(name, SHT_PROGBITS, vec![0; 16]).claims(offset, size));
    }
    let t = Tables::from_bytes(e.bytes(), "outside").unwrap();
    assert!(!t.has_cfi() && t.sections.got_svma.is_none());
    // In the file, but at the top of the address space: start + size
    // overflows (the range is then empty, the bytes still used).
    let mut e = elf::small(&[2; 20]);
    e.add(Section::new(".eh_frame", SHT_PROGBITS, vec![0; 64]).at(u64::MAX - 4, SHF_ALLOC));
    let t = Tables::from_bytes(e.bytes(), "top").unwrap();
    assert_eq!(t.sections.eh_frame_svma, Some(u64::MAX - 4..u64::MAX - 4));
    assert!(t.has_cfi());
}

#[test]
fn a_debug_file_does_not_look_for_its_own_debug_file() {
    // The binary has no CFI: its debug file (same build-id) is read, and
    // that file, with no CFI either, must not be looked up again (it
    // would find itself, for ever).
    let dir = tempfile::tempdir().unwrap();
    let id = [0xab; 20];
    let debug = debug_path(dir.path(), &id);
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    std::fs::write(&debug, debug_file(&id, None)).unwrap();
    let bin = dir.path().join("bin");
    std::fs::write(&bin, elf::small(&id).bytes()).unwrap();
    let dirname = dir.path().to_str().unwrap();
    let t = Tables::open_in(&bin, Some(&id), Some(dirname)).unwrap();
    assert!(!t.has_cfi());
    assert!(debug_frame_of_debug_file(dirname, &id).is_none());
}

#[test]
fn debug_frame_of_a_debug_file_and_of_every_prefix_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let id = [0x5c; 20];
    let debug = debug_path(dir.path(), &id);
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    let bin = dir.path().join("bin");
    std::fs::write(&bin, elf::small(&id).bytes()).unwrap();
    let dirname = dir.path().to_str().unwrap();
    let full = debug_file(&id, Some(vec![0x11; 40]));
    std::fs::write(&debug, &full).unwrap();
    let t = Tables::open_in(&bin, None, Some(dirname)).unwrap();
    assert_eq!(t.sections.debug_frame.as_deref(), Some(&[0x11; 40][..]));
    drop(t);
    // A truncated debug file: no CFI from it, and no panic. Each prefix
    // is a new file: truncating one that is mapped (here, or by another
    // test of this process reading /proc/self/maps) makes a read of its
    // pages past the new end a SIGBUS.
    for n in 0..full.len() {
        std::fs::remove_file(&debug).unwrap();
        std::fs::write(&debug, &full[..n]).unwrap();
        let t = Tables::open_in(&bin, None, Some(dirname)).unwrap();
        assert!(!t.has_cfi(), "prefix of {n} bytes");
    }
}

/// ld.so, its build-id and its separate debug file (libc6-dbg), or `None`
/// after a SKIP line.
fn ld_so_and_debug_file() -> Option<(Vec<u8>, Vec<u8>, std::path::PathBuf)> {
    let Some(ld) = [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.is_file()) else {
        pmx_testkit::skip("no ld-linux-x86-64.so.2 on this machine");
        return None;
    };
    let bytes = std::fs::read(ld).unwrap();
    let id = object::File::parse(&*bytes)
        .unwrap()
        .build_id()
        .unwrap()?
        .to_vec();
    let debug = debug_path(Path::new(DEBUG_DIR), &id);
    if !debug.is_file() {
        pmx_testkit::skip(format!(
            "{} is absent (Debian: apt-get install libc6-dbg)",
            debug.display()
        ));
        return None;
    }
    Some((bytes, id, debug))
}

#[test]
fn ld_so_with_libc6_dbg_debug_file() {
    let Some((bytes, id, debug)) = ld_so_and_debug_file() else {
        return;
    };
    // ld.so itself has .eh_frame and .eh_frame_hdr.
    let t = Tables::from_bytes(bytes.clone(), "ld.so").unwrap();
    assert!(t.sections.eh_frame_hdr.is_some() && t.has_cfi());
    // Its debug file keeps .text, .eh_frame and .eh_frame_hdr as NOBITS
    // (the panic of issue 29: "range start index 18446603505335287809").
    let d = Tables::open(&debug, Some(&id)).unwrap();
    assert!(d.sections.text_svma.is_none() && d.sections.eh_frame.is_none());
    assert!(d.sections.eh_frame_hdr.is_none());
    // The way report reaches it: a binary with that build-id and no CFI
    // of its own (ld.so with its CFI sections renamed away) takes its
    // CFI from the debug file, which has none.
    let mut stripped = bytes;
    let name = b".eh_frame";
    let mut i = 0;
    while let Some(at) = stripped[i..].windows(name.len()).position(|w| w == name) {
        stripped[i + at + 1] = b'x';
        i += at + name.len();
    }
    let t = Tables::from_bytes(stripped, "ld.so without CFI").unwrap();
    assert!(!t.has_cfi());
    assert!(t.sections.text_svma.is_some());
}
