//! perf 6.1's data symbols (`symbol_daddr` under perf's name) on Debian's
//! libc: a `.bss` object placed through its load segment (the section
//! header's offset of `.bss` is 0x18 off there), and of objects at one
//! address the one perf's `choose_best_symbol` keeps; no object of a
//! section that takes no memory (`.gnu.warning.*`).

use object::read::elf::{ElfFile64, SectionHeader};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use pmx_symbols::elf::ElfFile;
use std::path::Path;

const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

#[test]
fn bss_objects_through_their_segment_and_aliases_as_perf_keeps_them() {
    let (Ok(bytes), Ok(elf)) = (std::fs::read(LIBC), ElfFile::open(Path::new(LIBC))) else {
        eprintln!("skipped: no {LIBC}");
        return;
    };
    let obj = ElfFile64::<object::Endianness>::parse(&*bytes).unwrap();
    let bss = obj.section_by_name(".bss").unwrap();
    let t = elf.data_symbols();
    let i = (0..t.len())
        .find(|&i| t.name(i).starts_with("__pthread_keys"))
        .expect("libc's __pthread_keys");
    let (start, end) = t.bounds(i);
    assert!(bss.address() <= start && end <= bss.address() + bss.size());
    let seg = (obj.segments())
        .find(|s| s.address() <= start && start < s.address() + s.size())
        .unwrap();
    let bias = seg.address() - seg.file_range().0;
    let bss_off = bss.elf_section_header().sh_offset(obj.endian());
    if bss.address().wrapping_sub(bss_off) == bias {
        eprintln!("skipped: this libc's .bss is where its segment puts it");
        return;
    }
    // The place in the file of 0xa78 into the object (as a mapping's
    // offset gives it) is the object's 0xa78th byte, as perf says.
    let offset = start + 0xa78 - bias;
    assert_eq!(elf.perf_vaddr(offset), Some(start + 0xa78));
    assert_eq!(t.lookup_perf(start + 0xa78), Some(i));
    // `_sys_errlist@…` and `sys_errlist@…` share an address: perf keeps
    // the name with fewer leading underscores.
    let a = (0..t.len())
        .find(|&i| t.name(i).starts_with("_sys_errlist@"))
        .expect("libc's _sys_errlist");
    assert!(
        t.perf_name(a).starts_with("sys_errlist@"),
        "{}",
        t.perf_name(a)
    );
}

/// libc's `__evoke_link_warning_*` objects (in its separate debug file's
/// `.symtab`) sit at address 0 of `.gnu.warning.*` sections, which take
/// no memory when libc runs (no `SHF_ALLOC`): perf 6.1 names no data
/// there (`perf report --mem-mode` prints an access to libc's first
/// bytes as its address), and neither do pmx's data symbols.
#[test]
fn objects_of_sections_not_in_memory_name_no_data() {
    let Ok(elf) = ElfFile::open(Path::new(LIBC)) else {
        eprintln!("skipped: no {LIBC}");
        return;
    };
    let id = pmx_symbols::elf::hex(elf.build_id().expect("libc's build-id"));
    let debug = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    let Ok(bytes) = std::fs::read(&debug) else {
        eprintln!("skipped: no {debug} (libc6-dbg)");
        return;
    };
    let obj = ElfFile64::<object::Endianness>::parse(&*bytes).unwrap();
    let warnings = (obj.symbols())
        .filter(|s| {
            s.name()
                .is_ok_and(|n| n.starts_with("__evoke_link_warning_"))
        })
        .filter(|s| s.address() == 0)
        .count();
    if warnings == 0 {
        eprintln!("skipped: {debug} has no __evoke_link_warning_ objects");
        return;
    }
    let t = elf.data_symbols();
    assert!(t.len() > 100, "libc's objects: {}", t.len());
    let named = (0..t.len())
        .find(|&i| t.name(i).starts_with("__evoke") || t.perf_name(i).starts_with("__evoke"));
    assert_eq!(named.map(|i| t.name(i)), None);
    for vaddr in [0, 8, 0x20, 0x48] {
        assert_eq!(t.lookup_perf(vaddr), None, "{vaddr:#x}");
        assert_eq!(t.lookup(vaddr), None, "{vaddr:#x}");
    }
}
