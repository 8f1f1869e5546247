//! A data address by name: the object (a binary's `STT_OBJECT` symbol)
//! holding it, else what memory it is (a binary's unnamed data, the heap,
//! a stack, anonymous memory). A binary's `.bss` past its file's last page
//! is mapped anonymous right after the binary's writable mapping: an
//! address there is looked up in that binary. The type and field an
//! access touches: [`Symbolizer::data_type`], from DWARF
//! ([`crate::elf::types`]).

use super::{DsoId, Map, Symbolizer};
use crate::demangle::demangle_as;
use crate::elf::types::TypeAt;

/// What a data address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataObject {
    /// Object `index` of binary `dso`'s data table
    /// ([`Symbolizer::data_symbol`] names it).
    Symbol {
        /// The binary.
        dso: DsoId,
        /// The object's index in the binary's data table.
        index: u32,
    },
    /// A binary's memory no object covers (or a binary not read).
    Binary(DsoId),
    /// The heap (`[heap]`).
    Heap,
    /// A stack (`[stack]`).
    Stack,
    /// Anonymous memory of no binary.
    Anon,
    /// No mapping covers the address.
    Unmapped,
}

/// How the maps name memory that is no file's.
fn special(path: &str) -> Option<DataObject> {
    if path.starts_with("[heap") {
        Some(DataObject::Heap)
    } else if path.starts_with("[stack") {
        Some(DataObject::Stack)
    } else if super::is_anon(path) || path.starts_with("//") {
        Some(DataObject::Anon)
    } else {
        None
    }
}

impl Symbolizer {
    /// The data object of user address `addr` in process `pid` (anonymous
    /// memory after a binary's mapping is the binary's where one of its
    /// objects covers the address, else anonymous).
    pub fn data_object(&mut self, pid: u32, addr: u64) -> DataObject {
        let maps = self.maps(pid);
        let i = maps.partition_point(|m| m.start <= addr);
        let Some(m) = i.checked_sub(1).map(|i| maps[i]).filter(|m| addr < m.end) else {
            return DataObject::Unmapped;
        };
        let (mut owner, mut fallback) = (m.dso, DataObject::Binary(m.dso));
        if let Some(kind) = special(&self.dsos[m.dso as usize].path) {
            // `.bss` past the file: anonymous, right after the binary.
            let prev = (i >= 2).then(|| maps[i - 2]).filter(|p| p.end == m.start);
            match prev.filter(|p| special(&self.dsos[p.dso as usize].path).is_none()) {
                Some(p) if kind == DataObject::Anon => (owner, fallback) = (p.dso, kind),
                _ => return kind,
            }
        }
        let Some(bias) = self.load_bias(pid, owner, addr) else {
            return fallback;
        };
        let elf = self.dsos[owner as usize].elf.as_ref();
        let index = elf.and_then(|e| e.data_symbols().lookup(addr.wrapping_sub(bias)));
        match index {
            Some(index) => DataObject::Symbol {
                dso: owner,
                index: index as u32,
            },
            None => fallback,
        }
    }

    /// The type and field that a user access of process `pid` touches:
    /// the global variable holding data address `addr`, else the pointer
    /// variable that DWARF places in the instruction's base register
    /// (`base`: its DWARF number and the operand's displacement) at `ip`.
    /// `None`: DWARF does not say.
    pub fn data_type(
        &mut self,
        pid: u32,
        ip: u64,
        addr: u64,
        base: Option<(u16, i64)>,
    ) -> Option<TypeAt> {
        if let DataObject::Symbol { dso, .. } | DataObject::Binary(dso) =
            self.data_object(pid, addr)
        {
            let bias = self.load_bias(pid, dso, addr);
            let elf = self.dsos[dso as usize].elf.clone();
            let global = bias.and_then(|b| elf?.data_types()?.global(addr.wrapping_sub(b)));
            if global.is_some() {
                return global;
            }
        }
        let (reg, disp) = base?;
        let (dso, pc) = self.user_vaddr(pid, ip)?;
        let elf = self.dsos[dso as usize].elf.clone()?;
        elf.data_types()?.through_register(pc, reg, disp)
    }

    /// Up to `len` bytes of the binary's code at user address `ip` of
    /// process `pid` (an instruction's, to decode).
    pub fn user_code(&mut self, pid: u32, ip: u64, len: usize) -> Option<Vec<u8>> {
        let (dso, pc) = self.user_vaddr(pid, ip)?;
        let elf = self.dsos[dso as usize].elf.as_ref()?;
        elf.bytes_at(pc, len).map(<[u8]>::to_vec)
    }

    /// Binary `dso`'s load bias in process `pid` (its ELF virtual address
    /// plus the bias is the process's address), from its mapping of the
    /// lowest file offset: that offset's segment is the first one, with
    /// no other segment sharing its page.
    fn load_bias(&mut self, pid: u32, dso: DsoId, addr: u64) -> Option<u64> {
        let first: Map = *(self.maps(pid).iter())
            .filter(|m| m.dso == dso)
            .min_by_key(|m| m.pgoff)?;
        // A mapped file that is no binary (a data file, `ld.so.cache`)
        // is not read as one: no warning that it has no symbols.
        let d = &self.dsos[dso as usize];
        if !d.tried && d.elf.is_none() && self.dso_file(dso).is_some_and(|p| !is_elf(&p)) {
            return None;
        }
        self.load(dso, Some((pid, addr)));
        let elf = self.dsos[dso as usize].elf.as_ref()?;
        let vaddr = elf.offset_to_vaddr(first.pgoff)?;
        Some(first.start.wrapping_sub(vaddr))
    }

    /// The name (demangled as the symbolizer shows names), start and size
    /// of object `index` of binary `dso`'s data table.
    pub fn data_symbol(&self, dso: DsoId, index: u32) -> Option<(String, u64, u64)> {
        let elf = self.dsos.get(dso as usize)?.elf.as_ref()?;
        let t = elf.data_symbols();
        let i = index as usize;
        if i >= t.len() {
            return None;
        }
        let (start, end) = t.bounds(i);
        let name = demangle_as(t.name(i), self.options.demangle);
        Some((name, start, end - start))
    }
}

/// Whether the file at `path` starts as an ELF file does.
fn is_elf(path: &std::path::Path) -> bool {
    use std::io::Read;
    // Only a regular file is opened (a FIFO would block the open).
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    read.is_ok() && magic == *b"\x7fELF"
}
