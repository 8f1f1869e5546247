//! Broken and odd ELF files, written byte by byte (`pmx_testkit::elf`),
//! fed to the symbol code ([`ElfFile`]: symbols, lookups, file offsets,
//! DWARF lines and inline frames) and to the unwind tables
//! ([`probe_bytes`]): `NOBITS` and empty sections, sections and section
//! headers outside the file, overlapping symbols, symbols and segments
//! whose end overflows, relocations naming symbols that do not exist,
//! truncated files and debug files, an empty file. Each gives an error or
//! a sane result, never a panic (issue 29, item 6).

use pmx_symbols::demangle::demangle;
use pmx_symbols::elf::ElfFile;
use pmx_symbols::unwind::probe::{probe_bytes, probe_file};
use pmx_symbols::Demangle;
use pmx_testkit::elf::{
    self, Elf, Section, Segment, Sym, E_SHNUM, E_SHOFF, R_X86_64_JUMP_SLOT, SHF_ALLOC,
    SHF_EXECINSTR, SHT_DYNSYM, SHT_NOBITS, SHT_PROGBITS, SHT_RELA, SHT_STRTAB, SHT_SYMTAB,
};
use std::path::Path;

/// Addresses worth asking about in any file.
const ODD: [u64; 8] = [0, 1, 0xfff, 0x1000, 0x100f, u64::MAX, u64::MAX - 1, 1 << 63];

/// Everything the report asks of a binary, at the odd addresses and at
/// each symbol's start, middle, last byte and end. `Err` when the symbol
/// code refused the file; a broken invariant panics.
fn check(bytes: &[u8], name: &str) -> Result<usize, String> {
    let mut addresses = ODD.to_vec();
    let mut f = ElfFile::from_bytes(bytes, name);
    if let Ok(f) = &f {
        for s in f.symbols() {
            assert!(s.start <= s.end, "{name}: {} ends before it starts", s.name);
            addresses.extend([
                s.start,
                s.start + (s.end - s.start) / 2,
                s.end.wrapping_sub(1),
                s.end,
            ]);
        }
        let starts: Vec<u64> = f.symbols().iter().map(|s| s.start).collect();
        assert!(
            starts.windows(2).all(|w| w[0] <= w[1]),
            "{name}: symbols not sorted"
        );
    }
    if let Ok(f) = &mut f {
        for &a in &addresses {
            if let Some(i) = f.lookup(a) {
                let s = &f.symbols()[i];
                assert!(
                    s.start <= a && a < s.end,
                    "{name}: lookup({a:#x}) gave {s:?}"
                );
                demangle(&s.name);
            }
            f.offset_to_vaddr(a);
            f.vaddr_to_offset(a);
            f.line(a);
            f.inlined(a, Demangle::Short);
        }
    }
    let _ = probe_bytes(bytes.to_vec(), name, &addresses);
    f.map(|f| f.symbol_count())
}

#[test]
fn a_well_formed_small_file_has_its_two_functions() {
    let b = elf::small(&[1; 20]).bytes();
    assert_eq!(check(&b, "small"), Ok(2));
    let f = ElfFile::from_bytes(&b, "small").unwrap();
    assert_eq!(f.symbols()[f.lookup(0x1010).unwrap()].name, "g");
    assert_eq!(f.lookup(0x1040), None);
}

#[test]
fn nobits_and_empty_sections() {
    let mut e = Elf::new();
    let text = e.add(
        Section::new(".text", SHT_NOBITS, Vec::new())
            .at(0x1000, SHF_ALLOC | SHF_EXECINSTR)
            .claims(0x40, 0x1000),
    );
    let (tab, strtab) = elf::symbols(&[
        Sym::func("in_nobits", 0x1000, 0x10, text as u16),
        Sym::func("label", 0x1010, 0, text as u16),
    ]);
    e.add(Section::new(".symtab", SHT_SYMTAB, tab).linked(3, 1, 24));
    e.add(Section::new(".strtab", SHT_STRTAB, strtab));
    for name in [
        ".eh_frame",
        ".eh_frame_hdr",
        ".debug_frame",
        ".debug_info",
        ".debug_line",
    ] {
        e.add(Section::new(name, SHT_PROGBITS, Vec::new()));
    }
    assert_eq!(check(&e.bytes(), "nobits text"), Ok(2));
    // The symbol and string tables themselves NOBITS or empty.
    for (kind, data) in [(SHT_NOBITS, false), (SHT_SYMTAB, false), (SHT_SYMTAB, true)] {
        let mut e2 = e.clone();
        e2.sections[1].kind = kind;
        if !data {
            e2.sections[1].data.clear();
        }
        e2.sections[2].data.clear();
        let _ = check(&e2.bytes(), "nobits symtab");
    }
}

#[test]
fn sections_outside_the_file() {
    let base = elf::small(&[2; 20]);
    let len = base.bytes().len() as u64;
    for (i, offset, size) in [
        (1, len + 0x100, 0x40),
        (2, u64::MAX - 0x10, 0x40),
        (2, 0, u64::MAX),
        (3, 0x40, len),
        (3, len, u64::MAX - len + 1),
        (4, u64::MAX, u64::MAX),
    ] {
        let mut e = base.clone();
        e.sections[i - 1].offset = Some(offset);
        e.sections[i - 1].size = Some(size);
        for name in [".eh_frame", ".debug_line", ".debug_info"] {
            e.add(Section::new(name, SHT_PROGBITS, vec![0; 8]).claims(offset, size));
        }
        let _ = check(&e.bytes(), "outside");
    }
}

#[test]
fn overlapping_symbols_and_aliases() {
    let mut e = elf::small(&[3; 20]);
    let (tab, strtab) = elf::symbols(&[
        Sym::func("outer", 0x1000, 0x100, 2),
        Sym::func("inner", 0x1010, 0x10, 2),
        Sym::func("alias", 0x1000, 0x100, 2),
        Sym::func("zero_at_outer", 0x1000, 0, 2),
        Sym::func("zero", 0x1050, 0, 2),
        Sym::func("zero_too", 0x1050, 0, 2),
        Sym::func("last_zero", 0x2000, 0, 2),
    ]);
    e.sections[2].data = tab;
    e.sections[3].data = strtab;
    let n = check(&e.bytes(), "overlapping").unwrap();
    // One symbol per start address; `zero` (0x1050) is a label inside
    // `outer` and names nothing of its own.
    assert_eq!(
        n, 3,
        "one symbol per start address, no label inside a function"
    );
    let f = ElfFile::from_bytes(&e.bytes(), "overlapping").unwrap();
    for a in 0xff0..0x2010 {
        if let Some(i) = f.lookup(a) {
            let s = &f.symbols()[i];
            assert!(s.start <= a && a < s.end, "{a:#x} in {s:?}");
        }
    }
}

#[test]
fn symbols_whose_end_overflows() {
    let mut e = elf::small(&[4; 20]);
    let (tab, strtab) = elf::symbols(&[
        Sym::func("huge", 0x1000, u64::MAX, 2),
        Sym::func("near_top", u64::MAX - 0x10, 0x100, 2),
        Sym::func("at_top", u64::MAX, 0, 2),
    ]);
    e.sections[2].data = tab;
    e.sections[3].data = strtab;
    let n = check(&e.bytes(), "overflowing symbols").unwrap();
    assert_eq!(n, 3);
    let f = ElfFile::from_bytes(&e.bytes(), "overflowing symbols").unwrap();
    let near = f.lookup(u64::MAX - 1).map(|i| f.symbols()[i].name.as_str());
    assert_eq!(near, Some("near_top"));
    assert_eq!(
        f.lookup(0x2000).map(|i| f.symbols()[i].name.as_str()),
        Some("huge")
    );
}

#[test]
fn segments_whose_end_overflows() {
    let mut e = elf::small(&[5; 20]);
    e.segments = vec![
        Segment {
            offset: u64::MAX - 0x10,
            filesz: 0x100,
            vaddr: 0x1000,
            memsz: 0x100,
            flags: 5,
        },
        Segment {
            offset: 0x100,
            filesz: 0x100,
            vaddr: u64::MAX - 0x10,
            memsz: 0x100,
            flags: 5,
        },
        Segment {
            offset: 0,
            filesz: u64::MAX,
            vaddr: 0x40_0000,
            memsz: u64::MAX,
            flags: 5,
        },
    ];
    assert_eq!(check(&e.bytes(), "overflowing segments"), Ok(2));
    let f = ElfFile::from_bytes(&e.bytes(), "overflowing segments").unwrap();
    assert_eq!(f.offset_to_vaddr(0x10), Some(0x40_0010));
    assert_eq!(
        f.offset_to_vaddr(0x1f0),
        None,
        "past the top of the address space"
    );
}

#[test]
fn section_header_table_outside_the_file() {
    let good = elf::small(&[6; 20]).bytes();
    for shoff in [
        good.len() as u64,
        good.len() as u64 + 0x1000,
        u64::MAX - 0x20,
        u64::MAX,
    ] {
        let mut b = good.clone();
        b[E_SHOFF..E_SHOFF + 8].copy_from_slice(&shoff.to_le_bytes());
        let _ = check(&b, "shoff");
    }
    for shnum in [0u16, 1, 0xff00, 0xffff] {
        let mut b = good.clone();
        b[E_SHNUM..E_SHNUM + 2].copy_from_slice(&shnum.to_le_bytes());
        let _ = check(&b, "shnum");
    }
}

#[test]
fn plt_relocations_naming_symbols_that_do_not_exist() {
    let mut e = elf::small(&[7; 20]);
    let (dynsym, dynstr) = elf::symbols(&[Sym::func("puts", 0, 0, 0)]);
    let dynsym_i = e.add(Section::new(".dynsym", SHT_DYNSYM, dynsym).at(0x300, SHF_ALLOC));
    e.sections[dynsym_i as usize - 1].link = dynsym_i + 1;
    e.sections[dynsym_i as usize - 1].entsize = 24;
    e.add(Section::new(".dynstr", SHT_STRTAB, dynstr).at(0x400, SHF_ALLOC));
    let plt = e.add(
        Section::new(".plt", SHT_PROGBITS, vec![0xcc; 0x40])
            .at(0x1800, SHF_ALLOC | SHF_EXECINSTR)
            .linked(0, 0, 16),
    );
    let relas = elf::relas(&[
        (0x3000, 1, R_X86_64_JUMP_SLOT, 0),
        (0x3008, 1000, R_X86_64_JUMP_SLOT, 0),
        (0x3010, u32::MAX, R_X86_64_JUMP_SLOT, 0),
        (u64::MAX, 0, R_X86_64_JUMP_SLOT, -1),
    ]);
    let rela = e.add(
        Section::new(".rela.plt", SHT_RELA, relas)
            .at(0x500, SHF_ALLOC)
            .linked(dynsym_i, plt, 24),
    );
    let _ = check(&e.bytes(), "plt");
    // The same with the links broken, the PLT huge or NOBITS, the
    // relocations' entry size 0.
    let variants: [&dyn Fn(&mut Elf); 5] = [
        &|e| e.sections[rela as usize - 1].link = 999,
        &|e| e.sections[rela as usize - 1].info = 999,
        &|e| e.sections[plt as usize - 1].size = Some(u64::MAX),
        &|e| e.sections[plt as usize - 1].kind = SHT_NOBITS,
        &|e| e.sections[rela as usize - 1].entsize = 0,
    ];
    for v in variants {
        let mut e2 = e.clone();
        v(&mut e2);
        let _ = check(&e2.bytes(), "plt variant");
    }
}

#[test]
fn every_prefix_of_a_small_file() {
    let b = elf::small(&[8; 20]).bytes();
    for n in 0..b.len() {
        let _ = check(&b[..n], "prefix");
    }
}

#[test]
fn spread_of_prefixes_of_a_compiled_program() {
    if !pmx_testkit::cc::require() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = "#include <stdio.h>\nstatic int sq(int x) { return x * x; }\n\
               int main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", sq(argc)); return 0; }\n";
    let bin = pmx_testkit::cc::compile(dir.path(), "p", src, &["-g", "-O1"]).unwrap();
    let b = std::fs::read(&bin).unwrap();
    let full = check(&b, "compiled").unwrap();
    assert!(full > 0);
    // Every prefix through the headers, then every 7th byte, and the last
    // 512 (where the section headers are).
    let cut: Vec<usize> = (0..b.len().min(1024))
        .chain((1024..b.len()).step_by(7))
        .chain(b.len().saturating_sub(512)..b.len())
        .collect();
    for n in cut {
        let _ = check(&b[..n], "compiled prefix");
    }
}

#[test]
fn empty_and_tiny_files_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("empty", &b""[..]), ("magic", b"\x7fELF"), ("one", b"\x7f")] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = ElfFile::open(&p).unwrap_err();
        assert!(e.contains(name), "{e}");
        assert!(probe_file(&p, &ODD).is_err());
    }
    assert!(ElfFile::from_bytes(b"", "empty").is_err());
    assert!(probe_bytes(Vec::new(), "empty", &ODD).is_err());
}

#[test]
fn last_address_asks_dwarf_for_nothing() {
    // addr2line looks up [addr, addr + 1): u64::MAX overflowed.
    let exe = std::env::current_exe().unwrap();
    let f = ElfFile::open(&exe).unwrap();
    let main = f
        .symbols()
        .iter()
        .find(|s| demangle(&s.name).contains("last_address_asks_dwarf_for_nothing"))
        .map(|s| s.start)
        .unwrap();
    assert!(f.line(main).is_some(), "this test binary has line tables");
    assert_eq!(f.line(u64::MAX), None);
    assert!(f.inlined(u64::MAX, Demangle::Short).is_empty());
}

#[test]
fn debug_file_found_by_build_id_truncated_at_every_length() {
    let dir = tempfile::tempdir().unwrap();
    let id = [0x9e; 20];
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let debug = dir
        .path()
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    let bin = dir.path().join("bin");
    std::fs::write(&bin, elf::small(&id).bytes()).unwrap();
    // The debug file: more symbols than the binary (so it is preferred),
    // its code NOBITS.
    let mut d = elf::small(&id);
    d.sections[1].kind = SHT_NOBITS;
    let (tab, strtab) = elf::symbols(&[
        Sym::func("f", 0x1000, 0x10, 2),
        Sym::func("g", 0x1010, 0x30, 2),
        Sym::func("static_h", 0x1040, 0x10, 2),
    ]);
    d.sections[2].data = tab;
    d.sections[3].data = strtab;
    let full = d.bytes();
    std::fs::write(&debug, &full).unwrap();
    let f = ElfFile::open_in(&bin, dir.path()).unwrap();
    assert_eq!(f.symbol_count(), 3, "the debug file's symbols");
    drop(f);
    for n in 0..full.len() {
        // A new file per prefix: a mapped file truncated is a SIGBUS.
        std::fs::remove_file(&debug).unwrap();
        std::fs::write(&debug, &full[..n]).unwrap();
        let f = ElfFile::open_in(&bin, dir.path()).unwrap();
        assert!(f.symbol_count() >= 2, "prefix {n}");
        for a in ODD {
            f.lookup(a);
            f.line(a);
        }
    }
    assert!(Path::new(&debug).exists());
}
