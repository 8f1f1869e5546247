//! One ELF binary's symbols: the function symbols of `.symtab` (else
//! `.dynsym`), the load segments that turn a file offset into a virtual
//! address, its GNU build-id, and DWARF line info on demand (one unit at
//! a time, `lazy`; the answers kept across runs, `answers`); its data
//! objects ([`data`]) in a table of their own, read only when asked for.

mod answers;
pub mod cache;
pub mod data;
mod held;
mod lazy;
mod plt;
mod table;
pub mod types;

use crate::demangle::{demangle_as, Demangle};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use table::Table;

/// A function symbol: `[start, end)` in the ELF's virtual addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The raw (mangled) name.
    pub name: String,
}

/// A loaded ELF file. It can be shared between threads (a
/// [`cache::BinaryCache`] hands out `Arc<ElfFile>`s): what is read on
/// demand — the symbol table, the names demangled so far (one table per
/// [`Demangle`] style asked for), the DWARF line tables — is behind a lock.
pub struct ElfFile {
    /// The binary.
    map: Arc<memmap2::Mmap>,
    /// The map is a file's (its pages can be given back to the page
    /// cache once the tables are read), not an image copied into memory.
    file_backed: bool,
    /// Its separate debug file (symbols of a stripped binary, lines).
    debug: Option<Arc<memmap2::Mmap>>,
    /// Which debug file: its size and modification time, hashed.
    debug_stamp: u64,
    /// The symbol table of each demangling style (by `Demangle as
    /// usize`), read (or taken from the on-disk cache) on first use.
    tables: [OnceLock<Mutex<Table>>; 3],
    /// Where symbol tables are kept on disk (`None`: nowhere).
    table_dir: Option<PathBuf>,
    /// Every symbol with its raw name, made on first use of [`ElfFile::symbols`].
    symbols: OnceLock<Vec<Symbol>>,
    /// The data objects, read on first use of [`ElfFile::data_symbols`].
    data: OnceLock<data::DataSymbols>,
    /// The DWARF variables' types, read on first use of [`ElfFile::data_types`].
    types: OnceLock<Option<types::DataTypes>>,
    /// Load segments: (file offset, file size, vaddr, size in memory).
    segments: Vec<(u64, u64, u64, u64)>,
    /// Allocated sections but TLS ones: (file offset, size, vaddr, no
    /// bits in the file), where perf places a symbol no segment holds
    /// ([`ElfFile::perf_vaddr`]).
    sections: Vec<(u64, u64, u64, bool)>,
    build_id: Option<Vec<u8>>,
    lines: Mutex<Option<Option<LineTable>>>,
    /// The DWARF read one unit at a time (`lazy`), made on the first
    /// line or inline lookup; the whole-file `lines` only for what it
    /// cannot answer.
    units: Mutex<Option<Option<lazy::Units>>>,
    /// The line and inline answers kept across runs (with the symbol
    /// tables, when they are kept on disk), read on the first lookup.
    answers: OnceLock<Mutex<answers::Answers>>,
    /// Bytes of memory the tables read so far hold (an estimate, for the
    /// cache's bound).
    held: AtomicUsize,
}

/// A DWARF section's bytes: a range of the mapped file when the section
/// is stored uncompressed (no copy: the pages are the file's, read as
/// the lookups need them), else the decompressed bytes.
#[derive(Clone)]
struct Bytes {
    held: Held,
    start: usize,
    len: usize,
}

#[derive(Clone)]
enum Held {
    Map(Arc<memmap2::Mmap>),
    Owned(Arc<[u8]>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let all: &[u8] = match &self.held {
            Held::Map(m) => m,
            Held::Owned(o) => o,
        };
        &all[self.start..self.start + self.len]
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.len)
    }
}

// SAFETY: the bytes live in an `Arc`'d mapping or slice: moving or
// cloning a `Bytes` does not move them.
unsafe impl gimli::StableDeref for Bytes {}
// SAFETY: as above; a clone points at the same bytes.
unsafe impl gimli::CloneStableDeref for Bytes {}

type Reader = gimli::EndianReader<gimli::RunTimeEndian, Bytes>;
type Dwarf = gimli::Dwarf<Reader>;

struct LineTable {
    ctx: addr2line::Context<Reader>,
    /// Which units' lines and functions addr2line has parsed, and what
    /// that costs ([`ElfFile::held_bytes`] counts it).
    units: held::Units,
}

impl std::fmt::Debug for ElfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfFile")
            .field("build_id", &self.build_id)
            .field("debug_file", &self.debug.is_some())
            .finish()
    }
}

impl Drop for ElfFile {
    fn drop(&mut self) {
        for t in self.tables.iter_mut().filter_map(OnceLock::get_mut) {
            t.get_mut().unwrap_or_else(|p| p.into_inner()).save();
        }
        if let Some(a) = self.answers.get_mut() {
            a.get_mut().unwrap_or_else(|p| p.into_inner()).save();
        }
    }
}

/// A table this process wrote is written again at most this often by
/// [`ElfFile::save_table`] (when the binary is dropped, always).
const SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);

impl ElfFile {
    /// Open and index `path`. Errors name the file and the problem. When
    /// the distribution's separate debug file exists
    /// (`/usr/lib/debug/.build-id/xx/yyyy.debug`, by build-id), its symbols
    /// and line info are used: it has the static functions a stripped
    /// binary lacks.
    pub fn open(path: &Path) -> Result<ElfFile, String> {
        ElfFile::open_in(path, Path::new(DEBUG_DIR))
    }

    /// [`ElfFile::open`], its symbol tables kept on disk under `tables`
    /// (pmx's `…/symbols`) when given: a big binary's table is read from
    /// there, and written there once names were demangled.
    pub fn open_with(path: &Path, tables: Option<PathBuf>) -> Result<ElfFile, String> {
        let mut f = ElfFile::open(path)?;
        f.table_dir = tables;
        Ok(f)
    }

    /// [`ElfFile::open`], with the separate debug file looked up under
    /// `debug_dir` (`DIR/xx/yyyy.debug`) instead of
    /// `/usr/lib/debug/.build-id`.
    pub fn open_in(path: &Path, debug_dir: &Path) -> Result<ElfFile, String> {
        let map = Arc::new(map_file(path)?);
        let mut f = ElfFile::from_map(map, &path.display().to_string(), debug_dir)?;
        f.file_backed = true;
        Ok(f)
    }

    /// Index an ELF image held in memory (the vDSO); `name` is used in
    /// error messages. The separate debug file is used as in [`ElfFile::open`].
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<ElfFile, String> {
        if bytes.is_empty() {
            return Err(format!("{name}: empty ELF image"));
        }
        let mut m = memmap2::MmapMut::map_anon(bytes.len()).map_err(|e| format!("{name}: {e}"))?;
        m.copy_from_slice(bytes);
        let map = Arc::new(m.make_read_only().map_err(|e| format!("{name}: {e}"))?);
        ElfFile::from_map(map, name, Path::new(DEBUG_DIR))
    }

    fn from_map(map: Arc<memmap2::Mmap>, name: &str, debug_dir: &Path) -> Result<ElfFile, String> {
        let (segments, build_id) = {
            let obj = object::File::parse(&map[..])
                .map_err(|e| format!("{name}: not an ELF file: {e}"))?;
            let segments = obj
                .segments()
                .filter_map(|s| {
                    let (off, size) = s.file_range();
                    let mem = s.size();
                    (size.max(mem) > 0).then_some((off, size, s.address(), mem))
                })
                .collect();
            (segments, obj.build_id().ok().flatten().map(|b| b.to_vec()))
        };
        let sections = alloc_sections(&map[..]);
        let (mut debug, mut debug_stamp) = (None, 0);
        if let Some(id) = build_id.as_deref().filter(|id| id.len() > 1) {
            let hexid = hex(id);
            let path = debug_dir
                .join(&hexid[..2])
                .join(format!("{}.debug", &hexid[2..]));
            if let Ok(dmap) = map_file(&path) {
                if object::File::parse(&*dmap).is_ok() {
                    debug_stamp = std::fs::metadata(&path).map_or(1, |m| stamp(&m));
                    debug = Some(Arc::new(dmap));
                }
            }
        }
        Ok(ElfFile {
            map,
            file_backed: false,
            debug,
            debug_stamp,
            tables: Default::default(),
            table_dir: None,
            symbols: OnceLock::new(),
            data: OnceLock::new(),
            types: OnceLock::new(),
            segments,
            sections,
            build_id,
            lines: Mutex::new(None),
            units: Mutex::new(None),
            answers: OnceLock::new(),
            held: AtomicUsize::new(0),
        })
    }

    /// The symbol table with names shown in `style`: from the on-disk
    /// cache when it holds this build, else read. Reading it touches the
    /// symbol and string sections of the mapped file: those pages are
    /// given back afterwards (the table is a copy), so a binary held for
    /// its symbols costs its table, not the file's pages.
    fn table(&self, style: Demangle) -> std::sync::MutexGuard<'_, Table> {
        let t = self.tables[style as usize].get_or_init(|| {
            let dir = self.table_dir.as_deref();
            let t = Table::cached(dir, self.build_id(), self.debug_stamp, style, || {
                self.read_symbols()
            });
            self.held.fetch_add(t.heap_bytes(), Ordering::Relaxed);
            self.release_pages();
            Mutex::new(t)
        });
        t.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A symbol table for what every style shares (bounds, raw names):
    /// the first one read, else the short style's.
    fn any_table(&self) -> std::sync::MutexGuard<'_, Table> {
        let style = [Demangle::Short, Demangle::Full, Demangle::None]
            .into_iter()
            .find(|&s| self.tables[s as usize].get().is_some())
            .unwrap_or_default();
        self.table(style)
    }

    /// Give the mapped files' pages back to the page cache (they are read
    /// again from the file if needed).
    fn release_pages(&self) {
        if !self.file_backed {
            return;
        }
        for m in std::iter::once(&self.map).chain(self.debug.as_ref()) {
            let m: &memmap2::Mmap = m;
            // SAFETY: a read-only shared mapping of a file: dropped pages
            // are read from the file again on the next access, nothing
            // written is lost.
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// Write the symbol table's on-disk cache when names were demangled
    /// since it was read (the symbolizer does so when it ends; a binary
    /// shared by the process-wide cache outlives it). A table this
    /// process wrote less than 5 minutes ago is left for later (or for
    /// when the binary is dropped).
    pub fn save_table(&self) {
        for t in self.tables.iter().filter_map(OnceLock::get) {
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            t.save_unless_within(SAVE_INTERVAL);
        }
        if let Some(a) = self.answers.get() {
            let mut a = a.lock().unwrap_or_else(|p| p.into_inner());
            a.save_unless_within(SAVE_INTERVAL);
        }
    }

    /// Bytes of memory the tables read so far hold: the symbol table and
    /// names, decompressed DWARF sections (or their parts, `lazy`), and
    /// what addr2line's contexts hold — one unit's, made when a lookup
    /// first asks it, or the whole file's, made when a unit alone cannot
    /// answer (every unit's header, file table and abbreviations, counted
    /// from the DWARF), then each unit's line rows and functions once a
    /// lookup parsed them (from the unit's sizes). An estimate that `tests/line_memory.rs` keeps
    /// within 1.5× of the heap really held, either way.
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed) + self.map.len().min(1 << 16)
    }

    /// The function symbols and PLT entries of the binary, or of its
    /// debug file when that has more.
    fn read_symbols(&self) -> Vec<Symbol> {
        let Ok(obj) = object::File::parse(&self.map[..]) else {
            return Vec::new();
        };
        // The PLT is read from the binary itself: a separate debug file's
        // `.plt` and relocations are NOBITS.
        let plt = plt::symbols(&obj);
        let symbols = function_symbols(&obj, &plt);
        let debug = self
            .debug
            .as_deref()
            .and_then(|d| object::File::parse(&d[..]).ok());
        match debug.map(|d| function_symbols(&d, &plt)) {
            Some(dsyms) if dsyms.len() > symbols.len() => dsyms,
            _ => symbols,
        }
    }

    /// The data objects (`STT_OBJECT`, with sizes) of the binary, or of
    /// its debug file when that has more; read on first use, never by
    /// the function lookups.
    pub fn data_symbols(&self) -> &data::DataSymbols {
        self.data.get_or_init(|| {
            let parse = |m: &memmap2::Mmap| {
                object::File::parse(&m[..])
                    .map(|o| data::DataSymbols::read(&o))
                    .unwrap_or_default()
            };
            let mut t = parse(&self.map);
            if let Some(d) = self.debug.as_deref().map(parse) {
                if d.len() > t.len() {
                    t = d;
                }
            }
            self.held.fetch_add(t.heap_bytes(), Ordering::Relaxed);
            self.release_pages();
            t
        })
    }

    /// The GNU build-id, when the file has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// Number of function symbols.
    pub fn symbol_count(&self) -> usize {
        self.any_table().len()
    }

    /// The symbols, sorted by start, with their raw names.
    pub fn symbols(&self) -> &[Symbol] {
        self.symbols.get_or_init(|| {
            let s = self.any_table().symbols();
            let bytes: usize = s.iter().map(|s| 40 + s.name.len()).sum();
            self.held.fetch_add(bytes, Ordering::Relaxed);
            s
        })
    }

    /// Symbol `i`'s start and end.
    pub fn bounds(&self, i: usize) -> (u64, u64) {
        self.any_table().bounds(i)
    }

    /// Symbol `i`'s name as pmx shows it, demangled in `style`; a big
    /// binary's names are kept in the symbol cache, so each is demangled
    /// once per build and style.
    pub fn shown_name(&self, i: usize, style: Demangle) -> String {
        let mut t = self.table(style);
        let before = t.heap_bytes();
        let name = t.shown(i);
        self.held
            .fetch_add(t.heap_bytes().saturating_sub(before), Ordering::Relaxed);
        name
    }

    /// The virtual address of a file offset, through the load segments.
    pub fn offset_to_vaddr(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _, _)| offset >= *off && offset - off < *size)
            .and_then(|(off, _, vaddr, _)| (offset - off).checked_add(*vaddr))
    }

    /// The virtual address of a file offset as perf 6.1 places symbols:
    /// a symbol's offset is its address less its load segment's address
    /// plus the segment's file offset, the segment's size in memory
    /// counted (so `.bss` follows `.data` as in memory, whatever offset
    /// the section header gives it), else less its section's address
    /// plus the section's offset. So an offset is looked for in the
    /// segments, then in the sections with bytes in the file, then in
    /// `.bss`.
    pub fn perf_vaddr(&self, offset: u64) -> Option<u64> {
        let seg = (self.segments.iter())
            .find(|(off, size, _, mem)| offset >= *off && offset - off < *size.max(mem));
        if let Some((off, _, vaddr, _)) = seg {
            return (offset - off).checked_add(*vaddr);
        }
        let within = |s: &&(u64, u64, u64, bool)| offset >= s.0 && offset - s.0 < s.1;
        let s = (self.sections.iter().filter(|s| !s.3).find(within))
            .or_else(|| self.sections.iter().filter(|s| s.3).find(within))?;
        (offset - s.0).checked_add(s.2)
    }

    /// The file offset of a virtual address, through the load segments.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, size, va, _)| vaddr >= *va && vaddr - va < *size)
            .and_then(|(off, _, va, _)| (vaddr - va).checked_add(*off))
    }

    /// The index of the symbol containing `vaddr`.
    pub fn lookup(&self, vaddr: u64) -> Option<usize> {
        self.any_table().lookup(vaddr)
    }

    /// [`ElfFile::lookup`] through the table of `style`, the one whose
    /// names are asked next (so a binary shown in one style reads one
    /// table).
    pub fn lookup_as(&self, vaddr: u64, style: Demangle) -> Option<usize> {
        self.table(style).lookup(vaddr)
    }

    /// Source file and line of `vaddr` from DWARF, when the file has it
    /// (or from the answers kept across runs, `answers`).
    pub fn line(&self, vaddr: u64) -> Option<(String, u32)> {
        // addr2line looks up [vaddr, vaddr + 1): the last address overflows.
        if vaddr == u64::MAX {
            return None;
        }
        if let Some(known) = self.answers().line(vaddr) {
            return known;
        }
        let found = self.dwarf_line(vaddr);
        if self.read_dwarf() {
            let bytes = self.answers().add_line(vaddr, &found);
            self.held.fetch_add(bytes, Ordering::Relaxed);
        }
        found
    }

    /// The answers kept across runs, read on first use.
    fn answers(&self) -> std::sync::MutexGuard<'_, answers::Answers> {
        let a = self.answers.get_or_init(|| {
            let dir = self.table_dir.as_deref();
            // A stripped copy keeps the build id: the size tells it apart.
            let stamp = self.debug_stamp ^ (self.map.len() as u64).rotate_left(29);
            let a = answers::Answers::open(dir, self.build_id(), stamp);
            self.held.fetch_add(a.heap_bytes(), Ordering::Relaxed);
            Mutex::new(a)
        });
        a.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the lookups found DWARF to read: the answers of a binary
    /// without it cost nothing to find again and are not kept.
    fn read_dwarf(&self) -> bool {
        // One lock at a time (as `by_unit`).
        let units = matches!(
            &*self.units.lock().unwrap_or_else(|p| p.into_inner()),
            Some(Some(_))
        );
        units
            || matches!(
                &*self.lines.lock().unwrap_or_else(|p| p.into_inner()),
                Some(Some(_))
            )
    }

    /// [`ElfFile::line`] from DWARF.
    fn dwarf_line(&self, vaddr: u64) -> Option<(String, u32)> {
        if let Some(lazy::Found::Answer(a)) = self.by_unit(|u| u.line(vaddr, &self.held)) {
            return a;
        }
        let mut lines = self.lines();
        let table = lines.as_mut()?.as_mut()?;
        let found = match table.ctx.find_location(vaddr) {
            Ok(Some(loc)) => Some((loc.file?.to_string(), loc.line?)),
            _ => None,
        };
        // The unit's lines are counted by address (`.debug_aranges`);
        // without it, through the unit addr2line finds for the address
        // (which parses its functions too: only when a line was found,
        // so an address no unit covers costs nothing more).
        let (bytes, known) = table.units.lines_at(vaddr);
        self.held.fetch_add(bytes, Ordering::Relaxed);
        if !known && found.is_some() {
            self.charge_unit(table, vaddr);
        }
        found
    }

    /// `ask` of the DWARF read one unit at a time (made on first use),
    /// unless the whole file's context was made: it answers everything.
    fn by_unit<T>(
        &self,
        ask: impl FnOnce(&mut lazy::Units) -> lazy::Found<T>,
    ) -> Option<lazy::Found<T>> {
        if matches!(
            &*self.lines.lock().unwrap_or_else(|p| p.into_inner()),
            Some(Some(_))
        ) {
            return None;
        }
        let mut units = self.units.lock().unwrap_or_else(|p| p.into_inner());
        if units.is_none() {
            *units = Some(self.load_units());
            self.release_pages();
        }
        Some(ask(units.as_mut()?.as_mut()?))
    }

    /// The DWARF of the debug file (else the binary) to be read one unit
    /// at a time: `None` without `.debug_line` or `.debug_aranges`.
    fn load_units(&self) -> Option<lazy::Units> {
        let file = self.debug.as_ref().unwrap_or(&self.map);
        let obj = object::File::parse(&file[..]).ok()?;
        obj.section_by_name(".debug_line")?;
        let whole = |id| self.section(&obj, file, id);
        lazy::Units::new(&obj, file, whole, &self.held)
    }

    /// The line tables, loaded on first use.
    fn lines(&self) -> std::sync::MutexGuard<'_, Option<Option<LineTable>>> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.is_none() {
            *lines = Some(self.load_lines());
            self.release_pages();
        }
        lines
    }

    /// The functions inlined at `vaddr`, innermost first, from DWARF
    /// (without the function they were inlined into), demangled in
    /// `style`; empty without debug info or inlining.
    pub fn inlined(&self, vaddr: u64, style: Demangle) -> Vec<String> {
        let mut names = self.inline_chain(vaddr, style);
        names.pop();
        names
    }

    /// The functions at `vaddr` as DWARF names them, innermost first: those
    /// inlined there, then the function they were inlined into (its DWARF
    /// name, which may be another alias than the symbol table's),
    /// demangled in `style`; empty without debug info.
    pub fn inline_chain(&self, vaddr: u64, style: Demangle) -> Vec<String> {
        if vaddr == u64::MAX {
            return Vec::new();
        }
        if let Some(known) = self.answers().chain(vaddr, style) {
            return known;
        }
        let names = self.dwarf_inline_chain(vaddr, style);
        if self.read_dwarf() {
            let bytes = self.answers().add_chain(vaddr, style, &names);
            self.held.fetch_add(bytes, Ordering::Relaxed);
        }
        names
    }

    /// [`ElfFile::inline_chain`] from DWARF.
    fn dwarf_inline_chain(&self, vaddr: u64, style: Demangle) -> Vec<String> {
        let by_unit = |u: &mut lazy::Units| u.inline_chain(vaddr, style, &self.held);
        if let Some(lazy::Found::Answer(names)) = self.by_unit(by_unit) {
            return names;
        }
        let mut lines = self.lines();
        let Some(Some(table)) = &mut *lines else {
            return Vec::new();
        };
        let mut names = Vec::new();
        if let Ok(mut frames) = table.ctx.find_frames(vaddr).skip_all_loads() {
            while let Ok(Some(f)) = frames.next() {
                let name = f.function.as_ref().and_then(|n| n.raw_name().ok());
                names.push(name.map_or_else(|| "??".to_string(), |n| demangle_as(&n, style)));
            }
        }
        self.charge_unit(table, vaddr);
        names
    }

    /// Count in [`ElfFile::held_bytes`] what addr2line keeps of the unit
    /// holding `vaddr` once a lookup made it parse that unit: its line
    /// rows and file names, its functions' addresses and, as they are
    /// asked for, their inlined calls. Each unit is counted once.
    fn charge_unit(&self, table: &mut LineTable, vaddr: u64) {
        let Some(unit) = table.ctx.find_dwarf_and_unit(vaddr).skip_all_loads() else {
            return;
        };
        let bytes = table.units.functions_of(&unit);
        self.held.fetch_add(bytes, Ordering::Relaxed);
    }

    fn load_lines(&self) -> Option<LineTable> {
        // The bytes of `.debug_ranges` (DWARF 4 address ranges): a unit's
        // `DW_AT_ranges` lists there every range addr2line keeps for it,
        // 16 bytes each, dead code's included.
        let range_bytes = std::cell::Cell::new(0usize);
        let dwarf = self.dwarf(&range_bytes, false)?;
        let ranges = self.symbol_count().max(range_bytes.get() / 16);
        let (units, start) = held::Units::new(&dwarf, ranges);
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        self.held.fetch_add(start, Ordering::Relaxed);
        Some(LineTable { ctx, units })
    }

    /// The types of the binary's variables (of its debug file when it has
    /// one), read on first use (`None`: no DWARF describes them).
    pub fn data_types(&self) -> Option<&types::DataTypes> {
        self.types
            .get_or_init(|| {
                let t = types::DataTypes::read(self.dwarf(&Default::default(), true)?)?;
                self.held.fetch_add(t.heap_bytes(), Ordering::Relaxed);
                Some(t)
            })
            .as_ref()
    }

    /// `len` bytes of the file at virtual address `vaddr` (fewer at the
    /// end of its segment), e.g. an instruction's.
    pub fn bytes_at(&self, vaddr: u64, len: usize) -> Option<&[u8]> {
        let (off, size, va, _) =
            *(self.segments.iter()).find(|(_, size, va, _)| vaddr >= *va && vaddr - va < *size)?;
        let at = usize::try_from(vaddr - va + off).ok()?;
        let end = at
            .saturating_add(len)
            .min(usize::try_from(off + size).ok()?);
        self.map.get(at..end)
    }

    /// The DWARF sections of the debug file, else of the binary: every
    /// one with `all`, else [`LINE_SECTIONS`] and the others empty
    /// (`.debug_ranges`' size into `range_bytes`).
    fn dwarf(&self, range_bytes: &std::cell::Cell<usize>, all: bool) -> Option<Dwarf> {
        let file = self.debug.as_ref().unwrap_or(&self.map);
        let obj = object::File::parse(&file[..]).ok()?;
        obj.section_by_name(".debug_line")?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let bytes = if all || LINE_SECTIONS.contains(&id) {
                self.section(&obj, file, id)
            } else {
                Bytes {
                    held: Held::Map(file.clone()),
                    start: 0,
                    len: 0,
                }
            };
            if id == gimli::SectionId::DebugRanges {
                range_bytes.set(bytes.len());
            }
            Ok(gimli::EndianReader::new(bytes, endian))
        };
        gimli::Dwarf::load(load).ok()
    }

    /// Section `id` of `obj` (the bytes of `file`): the file's own bytes
    /// when stored as is, else decompressed (counted in the held bytes);
    /// empty when missing or broken.
    fn section(
        &self,
        obj: &object::File<'_>,
        file: &Arc<memmap2::Mmap>,
        id: gimli::SectionId,
    ) -> Bytes {
        let data = obj
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or_default();
        let base = file.as_ptr() as usize;
        let at = (data.as_ptr() as usize).wrapping_sub(base);
        match data {
            // Stored as is: the file's own bytes.
            std::borrow::Cow::Borrowed(d) if at.checked_add(d.len()) <= Some(file.len()) => Bytes {
                held: Held::Map(file.clone()),
                start: at,
                len: d.len(),
            },
            d => {
                let owned: Arc<[u8]> = Arc::from(d.into_owned().into_boxed_slice());
                self.held.fetch_add(owned.len(), Ordering::Relaxed);
                Bytes {
                    len: owned.len(),
                    held: Held::Owned(owned),
                    start: 0,
                }
            }
        }
    }
}

/// The sections line and inline lookups read (addr2line's): not the
/// location lists, macros or type units, which take a C library's debug
/// file a seventh of its decompressing.
const LINE_SECTIONS: &[gimli::SectionId] = &[
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugAranges,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
];

/// The allocated sections of a 64-bit ELF image but TLS ones: (file
/// offset, size, address, `SHT_NOBITS`).
fn alloc_sections(data: &[u8]) -> Vec<(u64, u64, u64, bool)> {
    use object::elf::{FileHeader64, SHF_ALLOC, SHF_TLS, SHT_NOBITS};
    use object::read::elf::{FileHeader, SectionHeader};
    let Ok(h) = FileHeader64::<object::Endianness>::parse(data) else {
        return Vec::new();
    };
    let Ok(e) = h.endian() else {
        return Vec::new();
    };
    let Ok(headers) = h.section_headers(e, data) else {
        return Vec::new();
    };
    (headers.iter())
        .filter(|s| s.sh_flags(e) & u64::from(SHF_ALLOC | SHF_TLS) == u64::from(SHF_ALLOC))
        .map(|s| {
            let nobits = s.sh_type(e) == SHT_NOBITS;
            (s.sh_offset(e), s.sh_size(e), s.sh_addr(e), nobits)
        })
        .collect()
}

/// Bytes as lowercase hex (a build id as perf prints it).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A file's size and modification time, hashed: which file it is.
fn stamp(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&m.size().to_le_bytes());
    bytes[8..16].copy_from_slice(&m.mtime().to_le_bytes());
    bytes[16..].copy_from_slice(&m.mtime_nsec().to_le_bytes());
    crate::fnv1a(&bytes) | 1
}

/// Where the distribution keeps separate debug files by build-id.
const DEBUG_DIR: &str = "/usr/lib/debug/.build-id";

fn map_file(path: &Path) -> Result<memmap2::Mmap, String> {
    // Paths come from the recording: only regular files are opened (a FIFO
    // would block the open, a device is no binary).
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: the mapping is read-only; a binary changed under us can give
    // wrong symbols but object's parser checks every bound.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))
}

/// The function symbols of `.symtab` (else `.dynsym`) and the PLT entries
/// (see [`plt`]), sorted by start, one per start address. A sized symbol
/// covers `[start, start + size)`; a zero-sized one reaches to the next
/// symbol of its own section, never past the section's end (the symbol
/// before a section boundary — `_init` before `.plt` — is not credited
/// with what follows it).
fn function_symbols(obj: &object::File<'_>, plt: &[Symbol]) -> Vec<Symbol> {
    // Executable sections' ends by index (address + size: NOBITS
    // sections of a separate debug file keep their addresses and sizes).
    let mut section_ends: HashMap<usize, (u64, bool)> = HashMap::default();
    for sec in obj.sections() {
        let exec = match sec.flags() {
            // By the flag: a separate debug file's .text is NOBITS.
            object::SectionFlags::Elf { sh_flags } => sh_flags & 4 != 0,
            _ => false,
        };
        section_ends.insert(
            sec.index().0,
            (sec.address().saturating_add(sec.size()), exec),
        );
    }
    let mut ranked: Vec<Candidate> = collect_symbols(obj.symbols(), &section_ends);
    if ranked.is_empty() {
        ranked = collect_symbols(obj.dynamic_symbols(), &section_ends);
    }
    // The PLT's entries rank above any symbol at the same address.
    ranked.extend(plt.iter().map(|s| Candidate {
        start: s.start,
        size: s.end - s.start,
        section_end: s.end,
        rank: 0,
        name: s.name.clone(),
    }));
    // For the same start keep the best name; among equals the first in
    // the symbol table (a stable sort), as perf does.
    ranked.sort_by_key(|c| (c.start, c.rank));
    ranked.dedup_by(|b, a| a.start == b.start);
    // A zero-sized label inside a sized function (V8's builtins, assembly
    // with local entry points) names no function of its own: the
    // function's name covers it, as perf shows it.
    let mut cover_end = 0u64;
    ranked.retain(|c| {
        if c.size == 0 {
            return c.start >= cover_end;
        }
        cover_end = cover_end.max(c.start.saturating_add(c.size));
        true
    });
    let mut syms = Vec::with_capacity(ranked.len());
    for i in 0..ranked.len() {
        let c = &ranked[i];
        let end = if c.size > 0 {
            c.start.saturating_add(c.size)
        } else {
            let next = ranked.get(i + 1).map_or(u64::MAX, |n| n.start);
            next.min(c.section_end).max(c.start.saturating_add(1))
        };
        syms.push(Symbol {
            start: c.start,
            end,
            name: std::mem::take(&mut ranked[i].name),
        });
    }
    syms
}

/// A symbol before the choice among aliases.
struct Candidate {
    start: u64,
    size: u64,
    /// The end of its section (bounds a zero-sized symbol).
    section_end: u64,
    /// How good a name it is among aliases at one address (lower is
    /// better), perf's order: sized before zero-sized, strong before weak,
    /// global before local, fewer leading underscores, longer name — so
    /// the vDSO's `__vdso_clock_gettime` wins over its weak alias
    /// `clock_gettime`, as perf shows it.
    rank: u64,
    name: String,
}

/// The function symbols of one table. Labels (untyped symbols) in
/// executable sections count too, as in perf: assembly entry points such
/// as ld.so's `_dl_start_user`.
fn collect_symbols<'d: 'f, 'f>(
    it: impl Iterator<Item = object::Symbol<'d, 'f>>,
    section_ends: &HashMap<usize, (u64, bool)>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for s in it {
        let section = s.section_index().and_then(|i| section_ends.get(&i.0));
        let label = s.kind() == SymbolKind::Unknown && section.is_some_and(|&(_, exec)| exec);
        if !(s.kind() == SymbolKind::Text || label) || s.address() == 0 || s.is_undefined() {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let underscores = (name.len() - name.trim_start_matches('_').len()).min(255) as u64;
        let rank = (u64::from(s.size() == 0) << 63)
            | (u64::from(s.is_weak()) << 62)
            | (u64::from(!s.is_global()) << 61)
            | (underscores << 48)
            | (0xffff_ffff_ffff - (name.len() as u64).min(0xffff_ffff_ffff));
        out.push(Candidate {
            start: s.address(),
            size: s.size(),
            section_end: section.map_or(u64::MAX, |&(end, _)| end),
            rank: rank.max(1),
            name: name.to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demangle::demangle;

    #[test]
    fn own_binary_has_symbols_and_this_function() {
        let exe = std::env::current_exe().unwrap();
        let f = ElfFile::open(&exe).unwrap();
        assert!(f.symbol_count() > 100);
        // The test binary is PIE: find the symbol by its (mangled) name
        // instead of the run-time address, then look its start up.
        let s = f
            .symbols()
            .iter()
            .find(|s| demangle(&s.name).ends_with("own_binary_has_symbols_and_this_function"))
            .expect("symbol of this test");
        assert_eq!(f.lookup(s.start), f.symbols().iter().position(|x| x == s));
        assert!(f.build_id().is_some_and(|b| !b.is_empty()));
    }

    #[test]
    fn errors_name_the_file() {
        let e = ElfFile::open(Path::new("/nonexistent/x")).unwrap_err();
        assert!(e.contains("/nonexistent/x"), "{e}");
        let e = ElfFile::open(Path::new("/proc/self/status")).unwrap_err();
        assert!(e.contains("/proc/self/status"), "{e}");
        // Devices and FIFOs named by a recording are never opened (a FIFO
        // would block the open).
        let e = ElfFile::open(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let dir = std::env::temp_dir().join(format!("pmx-fifo-{}", std::process::id()));
        let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
            let e = ElfFile::open(&dir).unwrap_err();
            let _ = std::fs::remove_file(&dir);
            assert!(e.contains("not a regular file"), "{e}");
        }
    }
}
