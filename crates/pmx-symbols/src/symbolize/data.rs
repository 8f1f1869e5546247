//! A data address by name: the object (a binary's `STT_OBJECT` symbol)
//! holding it, else what memory it is (a binary's unnamed data, the heap,
//! a stack, anonymous memory). A binary's `.bss` past its file's last page
//! is mapped anonymous right after the binary's writable mapping: an
//! address there is looked up in that binary. The type and field an
//! access touches: [`Symbolizer::data_type`], from DWARF
//! ([`crate::elf::types`]).

use super::{DsoId, Map, Symbolizer};
use crate::demangle::demangle_as;
use crate::elf::types::{TypeAt, TypeSpot};

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

/// perf 6.1's symbol of a data address (its `symbol_daddr`): the function
/// or the object of the mapped binary's table covering the address's
/// place in the file ([`Symbolizer::perf_data_symbol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PerfDataSymbol {
    /// The binary.
    pub dso: DsoId,
    /// The symbol's index in the binary's function table, or in its data
    /// table (`object`).
    pub index: u32,
    /// A data object (perf prints `NAME+0xOFF`), not a function.
    pub object: bool,
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

    /// The symbol perf 6.1 names user data address `addr` of process `pid`
    /// by, and the address's offset in it (0 for a function, whose name
    /// perf prints alone): perf looks the address's place in a file's
    /// mapping up in the binary's one table of functions and objects
    /// (each at its place in the file through its load segment, `.bss`
    /// following `.data` as in memory: [`crate::elf::ElfFile::perf_vaddr`]);
    /// anonymous memory, the heap and stacks have none.
    pub fn perf_data_symbol(&mut self, pid: u32, addr: u64) -> Option<(PerfDataSymbol, u64)> {
        let (start, _, pgoff, dso) = self.mapping(pid, addr)?;
        if special(&self.dsos[dso as usize].path).is_some() {
            return None;
        }
        let d = &self.dsos[dso as usize];
        if !d.tried && d.elf.is_none() && self.dso_file(dso).is_some_and(|p| !is_elf(&p)) {
            return None;
        }
        self.load(dso, Some((pid, addr)));
        let elf = self.dsos[dso as usize].elf.as_ref()?;
        let offset = (addr.wrapping_sub(start)).wrapping_add(pgoff);
        let vaddr = elf.perf_vaddr(offset)?;
        if let Some(i) = elf.lookup_as(vaddr, self.options.demangle) {
            let s = PerfDataSymbol {
                dso,
                index: i as u32,
                object: false,
            };
            return Some((s, 0));
        }
        let t = elf.data_symbols();
        let i = t.lookup_perf(vaddr)?;
        let s = PerfDataSymbol {
            dso,
            index: i as u32,
            object: true,
        };
        Some((s, vaddr - t.bounds(i).0))
    }

    /// The name of a [`PerfDataSymbol`], demangled as the symbolizer
    /// shows names.
    pub fn perf_data_symbol_name(&self, s: PerfDataSymbol) -> String {
        let Some(elf) = self.dsos.get(s.dso as usize).and_then(|d| d.elf.as_ref()) else {
            return String::new();
        };
        let i = s.index as usize;
        match s.object {
            true if i < elf.data_symbols().len() => {
                demangle_as(elf.data_symbols().perf_name(i), self.options.demangle)
            }
            true => String::new(),
            false => elf.shown_name(i, self.options.demangle),
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
        let (dso, spot) = (self.global_type_spot(pid, addr))
            .or_else(|| self.register_type_spot(pid, ip, base?))?;
        self.type_at_spot(dso, spot)
    }

    /// [`Symbolizer::data_type`]'s first case as a spot: the global
    /// variable of the binary holding data address `addr`.
    pub fn global_type_spot(&mut self, pid: u32, addr: u64) -> Option<(DsoId, TypeSpot)> {
        let (DataObject::Symbol { dso, .. } | DataObject::Binary(dso)) =
            self.data_object(pid, addr)
        else {
            return None;
        };
        let bias = self.load_bias(pid, dso, addr)?;
        let elf = self.dsos[dso as usize].elf.as_ref()?;
        let spot = elf.data_types()?.global_spot(addr.wrapping_sub(bias))?;
        Some((dso, spot))
    }

    /// [`Symbolizer::data_type`]'s second case as a spot: the pointer in
    /// the base register (`base`: DWARF number, displacement) at `ip`.
    /// It depends on the instruction alone: a caller may keep it per `ip`.
    pub fn register_type_spot(
        &mut self,
        pid: u32,
        ip: u64,
        (reg, disp): (u16, i64),
    ) -> Option<(DsoId, TypeSpot)> {
        let (dso, pc) = self.user_vaddr(pid, ip)?;
        let elf = self.dsos[dso as usize].elf.as_ref()?;
        Some((dso, elf.data_types()?.register_spot(pc, reg, disp)?))
    }

    /// The type and field of a spot of binary `dso`.
    pub fn type_at_spot(&self, dso: DsoId, spot: TypeSpot) -> Option<TypeAt> {
        let elf = self.dsos.get(dso as usize)?.elf.as_ref()?;
        elf.data_types()?.name_spot(spot)
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
