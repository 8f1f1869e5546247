//! Crafted ELF64 (x86-64, little-endian) files, written byte by byte, for
//! the tests that feed the symbol and unwind code broken or odd binaries:
//! `SHT_NOBITS` and empty sections, section headers that point outside
//! the file, symbols whose sizes overflow, relocations naming symbols
//! that do not exist. Nothing is checked or fixed up: what a test asks
//! for is what the file says.
//!
//! Layout written by [`Elf::bytes`]: the ELF header, the program headers,
//! each section's data (8-byte aligned, in order; nothing for `NOBITS`),
//! the section-name table, then the section headers. Section `i` of
//! [`Elf::sections`] has index `i + 1` (index 0 is the null section).

/// `SHT_PROGBITS`.
pub const SHT_PROGBITS: u32 = 1;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;
/// `SHT_STRTAB`.
pub const SHT_STRTAB: u32 = 3;
/// `SHT_RELA`.
pub const SHT_RELA: u32 = 4;
/// `SHT_NOTE`.
pub const SHT_NOTE: u32 = 7;
/// `SHT_NOBITS`.
pub const SHT_NOBITS: u32 = 8;
/// `SHT_DYNSYM`.
pub const SHT_DYNSYM: u32 = 11;
/// `SHF_ALLOC`.
pub const SHF_ALLOC: u64 = 2;
/// `SHF_EXECINSTR`.
pub const SHF_EXECINSTR: u64 = 4;
/// `STT_FUNC`.
pub const STT_FUNC: u8 = 2;
/// `STB_GLOBAL` (shifted into `st_info`'s high nibble by [`Sym`]).
pub const STB_GLOBAL: u8 = 1;
/// `R_X86_64_JUMP_SLOT`.
pub const R_X86_64_JUMP_SLOT: u32 = 7;
/// Where the ELF header keeps `e_shoff` (u64).
pub const E_SHOFF: usize = 0x28;
/// Where the ELF header keeps `e_shnum` (u16).
pub const E_SHNUM: usize = 0x3c;
/// Where the ELF header keeps `e_shstrndx` (u16).
pub const E_SHSTRNDX: usize = 0x3e;

/// One section.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Name (`.text`, …).
    pub name: String,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// The bytes written to the file (none are written for `NOBITS`).
    pub data: Vec<u8>,
    /// `sh_link`.
    pub link: u32,
    /// `sh_info`.
    pub info: u32,
    /// `sh_entsize`.
    pub entsize: u64,
    /// `sh_offset` to write instead of where the data went.
    pub offset: Option<u64>,
    /// `sh_size` to write instead of the data's length.
    pub size: Option<u64>,
}

impl Section {
    /// A section of type `kind` holding `data`.
    pub fn new(name: &str, kind: u32, data: Vec<u8>) -> Section {
        Section {
            name: name.to_string(),
            kind,
            data,
            ..Section::default()
        }
    }

    /// With `sh_addr` and `sh_flags`.
    pub fn at(mut self, addr: u64, flags: u64) -> Section {
        self.addr = addr;
        self.flags = flags;
        self
    }

    /// With `sh_link`, `sh_info` and `sh_entsize`.
    pub fn linked(mut self, link: u32, info: u32, entsize: u64) -> Section {
        self.link = link;
        self.info = info;
        self.entsize = entsize;
        self
    }

    /// With a header that says `offset` and `size`, whatever the data.
    pub fn claims(mut self, offset: u64, size: u64) -> Section {
        self.offset = Some(offset);
        self.size = Some(size);
        self
    }
}

/// A `PT_LOAD` program header.
#[derive(Debug, Clone, Copy, Default)]
pub struct Segment {
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_flags` (1 X, 2 W, 4 R).
    pub flags: u32,
}

/// A whole file: its type, segments and sections.
#[derive(Debug, Clone)]
pub struct Elf {
    /// `e_type`: 2 an executable, 3 a shared object (or PIE), 1 relocatable.
    pub e_type: u16,
    /// `PT_LOAD` segments.
    pub segments: Vec<Segment>,
    /// Sections, in index order from 1.
    pub sections: Vec<Section>,
}

impl Default for Elf {
    fn default() -> Elf {
        Elf::new()
    }
}

impl Elf {
    /// A shared object without segments or sections.
    pub fn new() -> Elf {
        Elf {
            e_type: 3,
            segments: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// Add a section; returns its index.
    pub fn add(&mut self, s: Section) -> u32 {
        self.sections.push(s);
        self.sections.len() as u32
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let phoff = 64u64;
        let mut out = vec![0u8; 64 + 56 * self.segments.len()];
        let mut placed = Vec::new();
        for s in &self.sections {
            align8(&mut out);
            placed.push(out.len() as u64);
            if s.kind != SHT_NOBITS {
                out.extend_from_slice(&s.data);
            }
        }
        let mut shstrtab = vec![0u8];
        let mut names = Vec::new();
        for s in self
            .sections
            .iter()
            .map(|s| s.name.as_str())
            .chain([".shstrtab"])
        {
            names.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(s.as_bytes());
            shstrtab.push(0);
        }
        align8(&mut out);
        let shstr_off = out.len() as u64;
        out.extend_from_slice(&shstrtab);
        align8(&mut out);
        let shoff = out.len() as u64;
        out.extend_from_slice(&[0u8; 64]);
        for (i, s) in self.sections.iter().enumerate() {
            let h = Shdr {
                name: names[i],
                kind: s.kind,
                flags: s.flags,
                addr: s.addr,
                offset: s.offset.unwrap_or(placed[i]),
                size: s.size.unwrap_or(s.data.len() as u64),
                link: s.link,
                info: s.info,
                entsize: s.entsize,
            };
            h.write(&mut out);
        }
        let shstr = Shdr {
            name: names[self.sections.len()],
            kind: SHT_STRTAB,
            offset: shstr_off,
            size: shstrtab.len() as u64,
            ..Shdr::default()
        };
        shstr.write(&mut out);
        let shnum = self.sections.len() as u16 + 2;
        self.header(&mut out[..64], phoff, shoff, shnum);
        for (i, p) in self.segments.iter().enumerate() {
            let at = 64 + 56 * i;
            let h = &mut out[at..at + 56];
            put(h, 0, &1u32.to_le_bytes());
            put(h, 4, &p.flags.to_le_bytes());
            put(h, 8, &p.offset.to_le_bytes());
            put(h, 16, &p.vaddr.to_le_bytes());
            put(h, 24, &p.vaddr.to_le_bytes());
            put(h, 32, &p.filesz.to_le_bytes());
            put(h, 40, &p.memsz.to_le_bytes());
            put(h, 48, &0x1000u64.to_le_bytes());
        }
        out
    }

    fn header(&self, h: &mut [u8], phoff: u64, shoff: u64, shnum: u16) {
        put(h, 0, &[0x7f, b'E', b'L', b'F', 2, 1, 1]);
        put(h, 16, &self.e_type.to_le_bytes());
        put(h, 18, &62u16.to_le_bytes());
        put(h, 20, &1u32.to_le_bytes());
        let phoff = if self.segments.is_empty() { 0 } else { phoff };
        put(h, 32, &phoff.to_le_bytes());
        put(h, E_SHOFF, &shoff.to_le_bytes());
        put(h, 52, &64u16.to_le_bytes());
        put(h, 54, &56u16.to_le_bytes());
        put(h, 56, &(self.segments.len() as u16).to_le_bytes());
        put(h, 58, &64u16.to_le_bytes());
        put(h, E_SHNUM, &shnum.to_le_bytes());
        put(h, E_SHSTRNDX, &(shnum - 1).to_le_bytes());
    }
}

#[derive(Default)]
struct Shdr {
    name: u32,
    kind: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    entsize: u64,
}

impl Shdr {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.addr.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.link.to_le_bytes());
        out.extend_from_slice(&self.info.to_le_bytes());
        out.extend_from_slice(&8u64.to_le_bytes());
        out.extend_from_slice(&self.entsize.to_le_bytes());
    }
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn align8(out: &mut Vec<u8>) {
    while out.len() % 8 != 0 {
        out.push(0);
    }
}

/// A symbol for [`symbols`].
#[derive(Debug, Clone)]
pub struct Sym {
    /// Name.
    pub name: String,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_info`: bind << 4 | type.
    pub info: u8,
    /// `st_shndx`.
    pub shndx: u16,
}

impl Sym {
    /// A global function of section `shndx`.
    pub fn func(name: &str, value: u64, size: u64, shndx: u16) -> Sym {
        Sym {
            name: name.to_string(),
            value,
            size,
            info: STB_GLOBAL << 4 | STT_FUNC,
            shndx,
        }
    }
}

/// A symbol table (`.symtab` or `.dynsym`, the null symbol first) and its
/// string table. Link the table to the string table's index, entsize 24.
pub fn symbols(syms: &[Sym]) -> (Vec<u8>, Vec<u8>) {
    let mut tab = vec![0u8; 24];
    let mut strtab = vec![0u8];
    for s in syms {
        tab.extend_from_slice(&(strtab.len() as u32).to_le_bytes());
        strtab.extend_from_slice(s.name.as_bytes());
        strtab.push(0);
        tab.push(s.info);
        tab.push(0);
        tab.extend_from_slice(&s.shndx.to_le_bytes());
        tab.extend_from_slice(&s.value.to_le_bytes());
        tab.extend_from_slice(&s.size.to_le_bytes());
    }
    (tab, strtab)
}

/// `Elf64_Rela` entries: (offset, symbol index, type, addend); entsize 24.
pub fn relas(entries: &[(u64, u32, u32, i64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(offset, sym, kind, addend) in entries {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(u64::from(sym) << 32 | u64::from(kind)).to_le_bytes());
        out.extend_from_slice(&addend.to_le_bytes());
    }
    out
}

/// A `.note.gnu.build-id` section's data for `id`.
pub fn build_id_note(id: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&4u32.to_le_bytes());
    out.extend_from_slice(&(id.len() as u32).to_le_bytes());
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(b"GNU\0");
    out.extend_from_slice(id);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

/// A small well-formed shared object: `.text` at 0x1000 (64 bytes of
/// `ret`) with functions `f` [0x1000, 0x1010) and `g` [0x1010, 0x1040)
/// in `.symtab`, a build-id note of `id`, and one `PT_LOAD` covering the
/// file at address 0.
pub fn small(id: &[u8]) -> Elf {
    let mut e = Elf::new();
    e.add(Section::new(".note.gnu.build-id", SHT_NOTE, build_id_note(id)).at(0x200, SHF_ALLOC));
    let text = e.add(
        Section::new(".text", SHT_PROGBITS, vec![0xc3; 64]).at(0x1000, SHF_ALLOC | SHF_EXECINSTR),
    );
    let (tab, strtab) = symbols(&[
        Sym::func("f", 0x1000, 0x10, text as u16),
        Sym::func("g", 0x1010, 0x30, text as u16),
    ]);
    let strndx = e.sections.len() as u32 + 2;
    e.add(Section::new(".symtab", SHT_SYMTAB, tab).linked(strndx, 1, 24));
    e.add(Section::new(".strtab", SHT_STRTAB, strtab));
    e.segments.push(Segment {
        offset: 0,
        filesz: 0x2000,
        vaddr: 0,
        memsz: 0x2000,
        flags: 5,
    });
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_sections_land_where_they_say() {
        let b = small(&[1, 2, 3, 4]).bytes();
        assert_eq!(&b[..4], b"\x7fELF");
        let shoff = u64::from_le_bytes(b[E_SHOFF..E_SHOFF + 8].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes([b[E_SHNUM], b[E_SHNUM + 1]]) as usize;
        assert_eq!(shnum, 6);
        assert_eq!(b.len(), shoff + 64 * shnum);
        // .text (index 2): its offset holds the 64 `ret`s.
        let h = &b[shoff + 128..shoff + 192];
        let off = u64::from_le_bytes(h[24..32].try_into().unwrap()) as usize;
        assert_eq!(&b[off..off + 64], &[0xc3; 64][..]);
    }
}
