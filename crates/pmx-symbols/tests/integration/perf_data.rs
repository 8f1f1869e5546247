//! perf 6.1's data symbols (`symbol_daddr` under perf's name) on Debian's
//! libc: a `.bss` object placed through its load segment (the section
//! header's offset of `.bss` is 0x18 off there), and of objects at one
//! address the one perf's `choose_best_symbol` keeps.

use object::read::elf::{ElfFile64, SectionHeader};
use object::{Object, ObjectSection, ObjectSegment};
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
