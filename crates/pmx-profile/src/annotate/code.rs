//! The machine code of a binary: its executable sections, its
//! architecture, and the names of its PLT entries (`puts@plt`, found by
//! decoding the entry's `jmp *SLOT(%rip)` and naming the dynamic
//! relocation of that GOT slot, as objdump does).

use super::disasm::plt_slot;
use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget, SectionKind,
    SymbolKind,
};
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

/// The named code and data symbols: (address, local, name).
fn labels<'d>(it: impl Iterator<Item = object::Symbol<'d, 'd>>) -> Vec<(u64, bool, String)> {
    it.filter(|s| {
        matches!(
            s.kind(),
            SymbolKind::Text | SymbolKind::Data | SymbolKind::Unknown
        )
    })
    .filter(|s| s.address() != 0 && !s.is_undefined())
    .filter_map(|s| Some((s.address(), !s.is_global(), s.name().ok()?.to_string())))
    .filter(|(_, _, n)| !n.is_empty())
    .collect()
}

/// A binary's code.
pub struct Binary {
    arch: object::Architecture,
    /// Executable sections: (name, address, bytes).
    sections: Vec<(String, u64, Vec<u8>)>,
    /// GOT slot → the dynamic symbol relocated there.
    got: HashMap<u64, String>,
    /// Every named code and data symbol of `.symtab`, by address (one
    /// per address: global before local), for RIP-relative operands.
    labels: Vec<(u64, String)>,
}

impl Binary {
    /// Read `path`'s executable sections. Errors name the file.
    pub fn open(path: &Path) -> Result<Binary, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Binary::parse(&bytes, &path.display().to_string())
    }

    /// Index an ELF image in memory; `name` is used in errors.
    pub fn parse(bytes: &[u8], name: &str) -> Result<Binary, String> {
        let obj =
            object::File::parse(bytes).map_err(|e| format!("{name}: not an ELF file: {e}"))?;
        let sections = obj
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| {
                let data = s.data().ok()?;
                Some((s.name().ok()?.to_string(), s.address(), data.to_vec()))
            })
            .collect();
        let mut got = HashMap::default();
        if let (Some(relocs), Some(dynsyms)) =
            (obj.dynamic_relocations(), obj.dynamic_symbol_table())
        {
            for (slot, r) in relocs {
                if let RelocationTarget::Symbol(i) = r.target() {
                    if let Some(name) = dynsyms.symbol_by_index(i).ok().and_then(|s| s.name().ok())
                    {
                        if !name.is_empty() {
                            got.insert(slot, name.to_string());
                        }
                    }
                }
            }
        }
        let mut ranked = labels(obj.symbols());
        if ranked.is_empty() {
            ranked = labels(obj.dynamic_symbols());
        }
        ranked.sort();
        ranked.dedup_by_key(|(a, _, _)| *a);
        Ok(Binary {
            arch: obj.architecture(),
            sections,
            got,
            labels: ranked.into_iter().map(|(a, _, n)| (a, n)).collect(),
        })
    }

    /// Whether the code is x86-64.
    pub fn is_x86_64(&self) -> bool {
        self.arch == object::Architecture::X86_64
    }

    /// The architecture's name, for messages.
    pub fn arch_name(&self) -> String {
        format!("{:?}", self.arch).to_ascii_lowercase()
    }

    /// The bytes of `[start, end)`, when one executable section holds them.
    pub fn code(&self, start: u64, end: u64) -> Option<&[u8]> {
        self.sections.iter().find_map(|(_, addr, data)| {
            let from = start.checked_sub(*addr)? as usize;
            let to = end.checked_sub(*addr)? as usize;
            (to <= data.len() && from <= to).then(|| &data[from..to])
        })
    }

    /// `symbol` or `symbol+0xOFF` for `addr`: the nearest symbol at or
    /// before it, as objdump names a RIP-relative operand.
    pub fn data_label(&self, addr: u64) -> Option<String> {
        let i = self
            .labels
            .partition_point(|(a, _)| *a <= addr)
            .checked_sub(1)?;
        let (start, name) = &self.labels[i];
        Some(match addr - start {
            0 => name.clone(),
            off => format!("{name}+{off:#x}"),
        })
    }

    /// `name@plt` for the PLT entry at `addr`.
    pub fn plt_name(&self, addr: u64) -> Option<String> {
        let (_, base, data) = self
            .sections
            .iter()
            .filter(|(n, _, _)| n.starts_with(".plt"))
            .find(|(_, a, d)| addr >= *a && addr < a + d.len() as u64)?;
        let from = (addr - base) as usize;
        let slot = plt_slot(&data[from..data.len().min(from + 32)], addr)?;
        self.got.get(&slot).map(|n| format!("{n}@plt"))
    }
}
