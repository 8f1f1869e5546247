//! PLT entries named `NAME@plt`, as perf names them.
//!
//! A call from a binary to a function of another binary goes through a
//! stub in the procedure linkage table: `.plt` (lazy binding: each entry
//! jumps through its GOT slot, pushes its relocation index and jumps to
//! the resolver stub PLT0), `.plt.sec` (the IBT/CET layout: the indirect
//! jump moves to a second table, `.plt` keeps the lazy part), and
//! `.plt.got` (functions whose address is also taken: a jump through a
//! `GLOB_DAT` slot of `.rela.dyn`). No symbol table names these stubs, so
//! time spent in them would be credited to whatever symbol comes before.
//!
//! On x86-64 each entry is decoded: `jmp *disp32(%rip)` (optionally after
//! `endbr64` and a `bnd` prefix) names the GOT slot it jumps through, and
//! the relocation of that slot names the function; an IBT `.plt` entry
//! (`endbr64; push $index; …`) names its `.rela.plt` index. An
//! `IRELATIVE` slot (an IFUNC of this binary) is named after the IFUNC
//! symbol at the relocation's addend, else `*ABS*+0xADDEND` as objdump
//! writes it. PLT0 is named `.plt`. Other architectures follow perf 6.1's
//! rule: the entries of `.plt` after a fixed header, in `.rela.plt`
//! order (AArch64: a 32-byte header, 16-byte entries).

use super::Symbol;
use object::{Architecture, Object, ObjectSection, ObjectSymbol, ObjectSymbolTable};
use rustc_hash::FxHashMap as HashMap;

/// `R_X86_64_GLOB_DAT`, `R_X86_64_JUMP_SLOT`, `R_X86_64_IRELATIVE`
/// (the same numbers as AArch64's `R_AARCH64_GLOB_DAT` 1025 … do not
/// collide: AArch64 is handled by index, not by slot).
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
const R_X86_64_IRELATIVE: u32 = 37;

/// One `Elf64_Rela`: the slot it patches, the symbol index, the type,
/// the addend.
#[derive(Clone, Copy)]
struct Rela {
    offset: u64,
    sym: u32,
    kind: u32,
    addend: i64,
}

/// The entries of a RELA section's bytes (little-endian ELF64); a
/// partial trailing entry is ignored.
fn relas(data: &[u8]) -> Vec<Rela> {
    data.chunks_exact(24)
        .map(|e| {
            let word = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().expect("8 bytes"));
            let info = word(8);
            Rela {
                offset: word(0),
                sym: (info >> 32) as u32,
                kind: info as u32,
                addend: word(16) as i64,
            }
        })
        .collect()
}

/// The PLT symbols of `obj`, sorted by start; empty when it has no PLT
/// or no dynamic symbols (a static binary), or is not a 64-bit
/// little-endian ELF of an architecture handled here.
pub(super) fn symbols(obj: &object::File<'_>) -> Vec<Symbol> {
    if !obj.is_little_endian() || !obj.is_64() {
        return Vec::new();
    }
    let Some(dynsym) = obj.dynamic_symbol_table() else {
        return Vec::new();
    };
    let dyn_name = |index: u32| -> Option<String> {
        let s = dynsym
            .symbol_by_index(object::SymbolIndex(index as usize))
            .ok()?;
        s.name().ok().filter(|n| !n.is_empty()).map(str::to_string)
    };
    let section = |name: &str| {
        obj.section_by_name(name)
            // A separate debug file's sections are NOBITS: no bytes.
            .and_then(|s| Some((s.address(), s.data().ok().filter(|d| !d.is_empty())?)))
    };
    let rela_plt = obj
        .section_by_name(".rela.plt")
        .and_then(|s| s.data().ok())
        .map(relas)
        .unwrap_or_default();
    let mut out = Vec::new();
    match obj.architecture() {
        Architecture::X86_64 => {
            let rela_dyn = obj
                .section_by_name(".rela.dyn")
                .and_then(|s| s.data().ok())
                .map(relas)
                .unwrap_or_default();
            let ifuncs = ifunc_names(obj);
            let name_of = |r: &Rela| -> Option<String> {
                match r.kind {
                    R_X86_64_JUMP_SLOT | R_X86_64_GLOB_DAT if r.sym != 0 => dyn_name(r.sym),
                    R_X86_64_IRELATIVE => Some(
                        ifuncs
                            .get(&(r.addend as u64))
                            .cloned()
                            .unwrap_or_else(|| format!("*ABS*+{:#x}", r.addend)),
                    ),
                    _ => None,
                }
            };
            let slots: HashMap<u64, Rela> = rela_plt
                .iter()
                .chain(rela_dyn.iter())
                .filter(|r| r.kind != 0)
                .map(|r| (r.offset, *r))
                .collect();
            let by_slot = |got: u64| slots.get(&got).and_then(name_of);
            let by_index = |i: u32| rela_plt.get(i as usize).and_then(name_of);
            if let Some((addr, bytes)) = section(".plt") {
                x86_table(&mut out, addr, bytes, 16, true, &by_slot, &by_index);
            }
            if let Some((addr, bytes)) = section(".plt.sec") {
                x86_table(&mut out, addr, bytes, 16, false, &by_slot, &by_index);
            }
            if let Some((addr, bytes)) = section(".plt.got") {
                // 8-byte entries (`jmp *slot; xchg %ax,%ax`), 16 with IBT.
                let size = if bytes.starts_with(&ENDBR64) { 16 } else { 8 };
                x86_table(&mut out, addr, bytes, size, false, &by_slot, &by_index);
            }
        }
        Architecture::Aarch64 => {
            if let Some((addr, bytes)) = section(".plt") {
                let (header, entry) = (32u64, 16u64);
                let mut start = addr + header;
                for r in &rela_plt {
                    let end = start + entry;
                    if end > addr + bytes.len() as u64 {
                        break;
                    }
                    if let Some(name) = (r.sym != 0).then(|| dyn_name(r.sym)).flatten() {
                        out.push(plt_symbol(start, end, &name));
                    }
                    start = end;
                }
            }
        }
        _ => {}
    }
    out.sort_by_key(|s| s.start);
    out.dedup_by_key(|s| s.start);
    out
}

const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// Name the `size`-byte entries of one x86-64 PLT table at `addr`; with
/// `header`, the first entry is PLT0 (named `.plt`).
fn x86_table(
    out: &mut Vec<Symbol>,
    addr: u64,
    bytes: &[u8],
    size: usize,
    header: bool,
    by_slot: &dyn Fn(u64) -> Option<String>,
    by_index: &dyn Fn(u32) -> Option<String>,
) {
    for (i, entry) in bytes.chunks_exact(size).enumerate() {
        let start = addr + (i * size) as u64;
        let end = start + size as u64;
        if header && i == 0 {
            out.push(Symbol {
                start,
                end,
                name: ".plt".to_string(),
            });
            continue;
        }
        let name = match decode_x86(entry, start) {
            Some(Target::Slot(got)) => by_slot(got),
            Some(Target::Index(index)) => by_index(index),
            None => None,
        };
        if let Some(name) = name {
            out.push(plt_symbol(start, end, &name));
        }
    }
}

fn plt_symbol(start: u64, end: u64, name: &str) -> Symbol {
    Symbol {
        start,
        end,
        name: format!("{name}@plt"),
    }
}

/// What an x86-64 PLT entry leads to.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// `jmp *SLOT(%rip)`: the GOT slot's address.
    Slot(u64),
    /// `push $INDEX` (a lazy IBT entry): the `.rela.plt` index.
    Index(u32),
}

/// Decode the first instructions of an entry at address `at`.
fn decode_x86(entry: &[u8], at: u64) -> Option<Target> {
    let mut i = if entry.starts_with(&ENDBR64) { 4 } else { 0 };
    if entry.get(i) == Some(&0xf2) {
        i += 1; // bnd
    }
    match entry.get(i..i + 6)? {
        [0xff, 0x25, d @ ..] => {
            let disp = i32::from_le_bytes(d.try_into().ok()?);
            let next = at.checked_add(i as u64 + 6)?;
            Some(Target::Slot(next.wrapping_add(disp as i64 as u64)))
        }
        [0x68, d @ .., _] => Some(Target::Index(u32::from_le_bytes(d.try_into().ok()?))),
        _ => None,
    }
}

/// IFUNC symbols of the binary by address (the resolver's address, which
/// an `IRELATIVE` relocation's addend names).
fn ifunc_names(obj: &object::File<'_>) -> HashMap<u64, String> {
    let mut out = HashMap::default();
    for s in obj.symbols().chain(obj.dynamic_symbols()) {
        let ifunc = match s.flags() {
            object::SymbolFlags::Elf { st_info, .. } => st_info & 0xf == 10, // STT_GNU_IFUNC
            _ => false,
        };
        if ifunc {
            if let Ok(name) = s.name() {
                if !name.is_empty() {
                    out.entry(s.address()).or_insert_with(|| name.to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_x86_entry_forms() {
        // jmp *0x4fc2(%rip) at 0x1040: the slot is 0x1046 + 0x4fc2.
        let lazy = [
            0xff, 0x25, 0xc2, 0x4f, 0, 0, 0x68, 1, 0, 0, 0, 0xe9, 0, 0, 0, 0,
        ];
        assert_eq!(decode_x86(&lazy, 0x1040), Some(Target::Slot(0x6008)));
        // endbr64; bnd jmp *0x2fe2(%rip) (.plt.sec) at 0x1060.
        let sec = [
            0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xe2, 0x2f, 0, 0, 0x0f, 0x1f, 0x44, 0, 0,
        ];
        assert_eq!(
            decode_x86(&sec, 0x1060),
            Some(Target::Slot(0x106b + 0x2fe2))
        );
        // endbr64; push $3; bnd jmp PLT0 (an IBT .plt entry).
        let ibt = [
            0xf3, 0x0f, 0x1e, 0xfa, 0x68, 3, 0, 0, 0, 0xf2, 0xe9, 0, 0, 0, 0, 0x90,
        ];
        assert_eq!(decode_x86(&ibt, 0x1030), Some(Target::Index(3)));
        // A negative displacement.
        let back = [0xff, 0x25, 0xf0, 0xff, 0xff, 0xff, 0x66, 0x90];
        assert_eq!(decode_x86(&back, 0x2000), Some(Target::Slot(0x1ff6)));
        // Anything else, and short entries, name nothing.
        assert_eq!(decode_x86(&[0x90; 16], 0), None);
        assert_eq!(decode_x86(&[0xff, 0x25, 0], 0), None);
        assert_eq!(
            decode_x86(&[0xff, 0x25, 0xff, 0xff, 0xff, 0x7f], u64::MAX - 2),
            None
        );
    }

    #[test]
    fn relas_ignore_a_partial_entry() {
        let mut data = Vec::new();
        data.extend_from_slice(&0x6008u64.to_le_bytes());
        data.extend_from_slice(&((5u64 << 32) | 7).to_le_bytes());
        data.extend_from_slice(&0i64.to_le_bytes());
        data.extend_from_slice(&[1, 2, 3]);
        let r = relas(&data);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].offset, r[0].sym, r[0].kind), (0x6008, 5, 7));
    }
}
