//! A binary's data symbols: its objects (`STT_OBJECT` and common
//! symbols) with their sizes, from `.data`, `.bss`, `.rodata` and the
//! other allocated sections, kept apart from the function table so the
//! text path reads and holds nothing more. Read on first use
//! ([`super::ElfFile::data_symbols`]).

use object::{Object, ObjectSymbol, SymbolKind};

/// One binary's data objects, sorted by start, each `[start, end)` in the
/// ELF's virtual addresses (an object of size 0 names no byte in
/// [`DataSymbols::lookup`]; perf's lookup stretches it,
/// [`DataSymbols::lookup_perf`]).
#[derive(Debug, Default)]
pub struct DataSymbols {
    /// (start, end, name offset, name length).
    entries: Vec<(u64, u64, u32, u32)>,
    names: String,
}

impl DataSymbols {
    /// The objects of `.symtab`, else of `.dynsym`.
    pub(crate) fn read(obj: &object::File<'_>) -> DataSymbols {
        let mut found = objects(obj.symbols());
        if found.is_empty() {
            found = objects(obj.dynamic_symbols());
        }
        // One object per start: the bigger first, then a global before a
        // local, then the table's order (a stable sort).
        found.sort_by_key(|&(start, size, local, _)| (start, std::cmp::Reverse(size), local));
        found.dedup_by_key(|o| o.0);
        let mut t = DataSymbols {
            entries: Vec::with_capacity(found.len()),
            names: String::with_capacity(found.iter().map(|o| o.3.len()).sum()),
        };
        for (start, size, _, name) in found {
            let off = t.names.len() as u32;
            t.names.push_str(name);
            t.entries
                .push((start, start.saturating_add(size), off, name.len() as u32));
        }
        t
    }

    /// How many objects.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No objects.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The object holding `vaddr`: the last one starting at or before it,
    /// when its size reaches it (objects may nest: an inner one shadows
    /// the outer one only where it starts last).
    pub fn lookup(&self, vaddr: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.0 <= vaddr);
        let i = i.checked_sub(1)?;
        (vaddr < self.entries[i].1).then_some(i)
    }

    /// The object perf 6.1 names `vaddr` by: the one holding it, else an
    /// object of size 0 before it and no other (perf stretches such a
    /// symbol to the next one).
    pub fn lookup_perf(&self, vaddr: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.0 <= vaddr);
        let i = i.checked_sub(1)?;
        let (start, end, _, _) = self.entries[i];
        let next = self.entries.get(i + 1).map_or(u64::MAX, |e| e.0);
        (vaddr < end || (start == end && vaddr < next)).then_some(i)
    }

    /// Object `i`'s raw (mangled) name.
    pub fn name(&self, i: usize) -> &str {
        let (_, _, off, len) = self.entries[i];
        self.names
            .get(off as usize..(off + len) as usize)
            .unwrap_or("")
    }

    /// Object `i`'s start and end.
    pub fn bounds(&self, i: usize) -> (u64, u64) {
        (self.entries[i].0, self.entries[i].1)
    }

    /// Bytes of heap the table holds.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * 24 + self.names.capacity()
    }
}

/// (start, size, local, name) of the named, defined objects of a table.
fn objects<'d: 'f, 'f>(
    it: impl Iterator<Item = object::Symbol<'d, 'f>>,
) -> Vec<(u64, u64, bool, &'d str)> {
    it.filter(|s| s.kind() == SymbolKind::Data && !s.is_undefined())
        .filter_map(|s| {
            let name = s.name().ok().filter(|n| !n.is_empty())?;
            Some((s.address(), s.size(), !s.is_global(), name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    static TABLE: [u64; 3] = [1, 2, 3];

    #[test]
    fn this_binarys_static_is_found_with_its_size() {
        let exe = std::env::current_exe().unwrap();
        let f = super::super::ElfFile::open(&exe).unwrap();
        let d = f.data_symbols();
        assert!(!d.is_empty());
        let i = (0..d.len())
            .find(|&i| d.name(i).contains("TABLE"))
            .expect("the test's static");
        let (start, end) = d.bounds(i);
        assert_eq!(end - start, 24);
        assert_eq!(d.lookup(start + 23), Some(i));
        assert_ne!(d.lookup(end), Some(i));
        assert_eq!(std::hint::black_box(&TABLE).len(), 3);
    }
}
