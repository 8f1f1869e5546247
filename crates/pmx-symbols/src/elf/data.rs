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
    /// Where perf keeps another of the objects starting there (perf's
    /// `choose_best_symbol`): entry → (end, name offset, name length).
    perf: std::collections::HashMap<u32, (u64, u32, u32)>,
}

/// An object of a symbol table: start, size, binding, name.
struct Found<'d> {
    start: u64,
    size: u64,
    binding: Binding,
    name: &'d str,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Binding {
    Global,
    Weak,
    Local,
}

/// Whether perf's `choose_best_symbol` keeps `b` over `a` (`a` earlier in
/// the table): a sized one over one of size 0, not weak over weak, global
/// over not global, fewer leading underscores, a longer name; else `a`.
fn perf_prefers(a: &Found<'_>, b: &Found<'_>) -> bool {
    if (a.size == 0) != (b.size == 0) {
        return a.size == 0;
    }
    let weak = |f: &Found<'_>| f.binding == Binding::Weak;
    if weak(a) != weak(b) {
        return weak(a);
    }
    let global = |f: &Found<'_>| f.binding == Binding::Global;
    if global(a) != global(b) {
        return global(b);
    }
    let under = |f: &Found<'_>| f.name.len() - f.name.trim_start_matches('_').len();
    if under(a) != under(b) {
        return under(a) > under(b);
    }
    b.name.len() > a.name.len()
}

impl DataSymbols {
    /// The objects of `.symtab`, else of `.dynsym`.
    pub(crate) fn read(obj: &object::File<'_>) -> DataSymbols {
        let mut found = objects(obj, obj.symbols());
        if found.is_empty() {
            found = objects(obj, obj.dynamic_symbols());
        }
        // By start, in the table's order (a stable sort); one object per
        // start: the bigger first, then a global before a local, then the
        // table's order; perf's choice kept beside where it differs.
        found.sort_by_key(|f| f.start);
        let mut t = DataSymbols {
            entries: Vec::with_capacity(found.len()),
            names: String::with_capacity(found.iter().map(|f| f.name.len()).sum()),
            perf: Default::default(),
        };
        for group in found.chunk_by(|a, b| a.start == b.start) {
            let local = |f: &Found<'_>| f.binding == Binding::Local;
            let ours = (group.iter())
                .min_by_key(|f| (std::cmp::Reverse(f.size), local(f)))
                .unwrap_or(&group[0]);
            let mut perf = &group[0];
            for f in &group[1..] {
                if perf_prefers(perf, f) {
                    perf = f;
                }
            }
            let mut put = |f: &Found<'_>| {
                let off = t.names.len() as u32;
                t.names.push_str(f.name);
                (f.start.saturating_add(f.size), off, f.name.len() as u32)
            };
            let (end, off, len) = put(ours);
            if !std::ptr::eq(ours, perf) {
                let alias = put(perf);
                t.perf.insert(t.entries.len() as u32, alias);
            }
            t.entries.push((ours.start, end, off, len));
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
        let start = self.entries[i].0;
        let end = self
            .perf
            .get(&(i as u32))
            .map_or(self.entries[i].1, |p| p.0);
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

    /// The raw name perf gives object `i` (of objects at one start, the
    /// one perf's `choose_best_symbol` keeps).
    pub fn perf_name(&self, i: usize) -> &str {
        let Some(&(_, off, len)) = self.perf.get(&(i as u32)) else {
            return self.name(i);
        };
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
        self.entries.capacity() * 24 + self.names.capacity() + self.perf.len() * 32
    }
}

/// Whether symbol `s` of `obj` is in a section that takes memory when the
/// binary runs (`SHF_ALLOC`): not libc's `__evoke_link_warning_*`, whose
/// `.gnu.warning.*` sections only tell the linker what to warn about,
/// each at address 0; perf 6.1 leaves them out too.
fn allocated(obj: &object::File<'_>, s: &object::Symbol<'_, '_>) -> bool {
    use object::{ObjectSection, SectionFlags, SymbolSection};
    let SymbolSection::Section(i) = s.section() else {
        return true;
    };
    match obj.section_by_index(i).map(|sec| sec.flags()) {
        Ok(SectionFlags::Elf { sh_flags }) => sh_flags & u64::from(object::elf::SHF_ALLOC) != 0,
        _ => true,
    }
}

/// (start, size, local, name) of the named, defined objects of a table
/// that take memory ([`allocated`]).
fn objects<'d: 'f, 'f>(
    obj: &object::File<'d>,
    it: impl Iterator<Item = object::Symbol<'d, 'f>>,
) -> Vec<Found<'d>> {
    // Absolute symbols (a library's version names, `GLIBC_PRIVATE`) hold
    // no data: perf leaves them out too.
    it.filter(|s| s.kind() == SymbolKind::Data && !s.is_undefined())
        .filter(|s| s.section() != object::SymbolSection::Absolute)
        .filter(|s| allocated(obj, s))
        .filter_map(|s| {
            let name = s.name().ok().filter(|n| !n.is_empty())?;
            let binding = match (s.is_global(), s.is_weak()) {
                (false, _) => Binding::Local,
                (true, true) => Binding::Weak,
                (true, false) => Binding::Global,
            };
            Some(Found {
                start: s.address(),
                size: s.size(),
                binding,
                name,
            })
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
