//! One ELF binary's symbols: the function symbols of `.symtab` (else
//! `.dynsym`), the load segments that turn a file offset into a virtual
//! address, its GNU build-id, and DWARF line info on demand.

pub mod cache;
mod held;
mod plt;
mod table;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;
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

/// A loaded ELF file. It can be shared between threads (the process-wide
/// [`cache`] hands out `Arc<ElfFile>`s): what is read on demand — the
/// symbol table, the names demangled so far, the DWARF line tables — is
/// behind a lock.
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
    /// The symbol table, read (or taken from the cache) on first use.
    table: OnceLock<Mutex<Table>>,
    /// Every symbol with its raw name, made on first use of [`ElfFile::symbols`].
    symbols: OnceLock<Vec<Symbol>>,
    /// Load segments: (file offset, file size, vaddr).
    segments: Vec<(u64, u64, u64)>,
    build_id: Option<Vec<u8>>,
    lines: Mutex<Option<Option<LineTable>>>,
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
        if let Some(t) = self.table.get_mut() {
            t.get_mut().unwrap_or_else(|p| p.into_inner()).save();
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
                    (size > 0).then_some((off, size, s.address()))
                })
                .collect();
            (segments, obj.build_id().ok().flatten().map(|b| b.to_vec()))
        };
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
            table: OnceLock::new(),
            symbols: OnceLock::new(),
            segments,
            build_id,
            lines: Mutex::new(None),
            held: AtomicUsize::new(0),
        })
    }

    /// The symbol table: from the cache when it holds this build, else
    /// read. Reading it touches the symbol and string sections of the
    /// mapped file: those pages are given back afterwards (the table is
    /// a copy), so a binary held for its symbols costs its table, not the
    /// file's pages.
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        let t = self.table.get_or_init(|| {
            let t = Table::cached(self.build_id(), self.debug_stamp, demangle_style(), || {
                self.read_symbols()
            });
            self.held.fetch_add(t.heap_bytes(), Ordering::Relaxed);
            self.release_pages();
            Mutex::new(t)
        });
        t.lock().unwrap_or_else(|p| p.into_inner())
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
        if let Some(t) = self.table.get() {
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            t.save_unless_within(SAVE_INTERVAL);
        }
    }

    /// Bytes of memory the tables read so far hold: the symbol table and
    /// names, decompressed DWARF sections, and what addr2line's context
    /// holds — made at the first line or inline lookup (every unit's
    /// header, file table and abbreviations, counted from the DWARF), then
    /// each unit's line rows and functions once a lookup parsed them (from
    /// the unit's sizes). An estimate that `tests/line_memory.rs` keeps
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

    /// The GNU build-id, when the file has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// Number of function symbols.
    pub fn symbol_count(&self) -> usize {
        self.table().len()
    }

    /// The symbols, sorted by start, with their raw names.
    pub fn symbols(&self) -> &[Symbol] {
        self.symbols.get_or_init(|| {
            let s = self.table().symbols();
            let bytes: usize = s.iter().map(|s| 40 + s.name.len()).sum();
            self.held.fetch_add(bytes, Ordering::Relaxed);
            s
        })
    }

    /// Symbol `i`'s start and end.
    pub fn bounds(&self, i: usize) -> (u64, u64) {
        self.table().bounds(i)
    }

    /// Symbol `i`'s name as pmx shows it (demangled in the process's
    /// style, [`set_demangle`]); a big binary's names are kept in the
    /// symbol cache, so each is demangled once per build.
    pub fn shown_name(&self, i: usize) -> String {
        let mut t = self.table();
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
            .find(|(off, size, _)| offset >= *off && offset - off < *size)
            .and_then(|(off, _, vaddr)| (offset - off).checked_add(*vaddr))
    }

    /// The file offset of a virtual address, through the load segments.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, size, va)| vaddr >= *va && vaddr - va < *size)
            .and_then(|(off, _, va)| (vaddr - va).checked_add(*off))
    }

    /// The index of the symbol containing `vaddr`.
    pub fn lookup(&self, vaddr: u64) -> Option<usize> {
        self.table().lookup(vaddr)
    }

    /// Source file and line of `vaddr` from DWARF, when the file has it.
    pub fn line(&self, vaddr: u64) -> Option<(String, u32)> {
        // addr2line looks up [vaddr, vaddr + 1): the last address overflows.
        if vaddr == u64::MAX {
            return None;
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
    /// (without the function they were inlined into); empty without
    /// debug info or inlining.
    pub fn inlined(&self, vaddr: u64) -> Vec<String> {
        let mut names = self.inline_chain(vaddr);
        names.pop();
        names
    }

    /// The functions at `vaddr` as DWARF names them, innermost first: those
    /// inlined there, then the function they were inlined into (its DWARF
    /// name, which may be another alias than the symbol table's); empty
    /// without debug info.
    pub fn inline_chain(&self, vaddr: u64) -> Vec<String> {
        if vaddr == u64::MAX {
            return Vec::new();
        }
        let mut lines = self.lines();
        let Some(Some(table)) = &mut *lines else {
            return Vec::new();
        };
        let mut names = Vec::new();
        if let Ok(mut frames) = table.ctx.find_frames(vaddr).skip_all_loads() {
            while let Ok(Some(f)) = frames.next() {
                let name = f.function.as_ref().and_then(|n| n.raw_name().ok());
                names.push(name.map_or_else(|| "??".to_string(), |n| demangle(&n)));
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
        let file = self.debug.as_ref().unwrap_or(&self.map);
        let obj = object::File::parse(&file[..]).ok()?;
        obj.section_by_name(".debug_line")?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        // The bytes of `.debug_ranges` (DWARF 4 address ranges): a unit's
        // `DW_AT_ranges` lists there every range addr2line keeps for it,
        // 16 bytes each, dead code's included.
        let range_bytes = std::cell::Cell::new(0usize);
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let data = obj
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or_default();
            let base = file.as_ptr() as usize;
            let at = (data.as_ptr() as usize).wrapping_sub(base);
            let bytes = match data {
                // Stored as is: the file's own bytes.
                std::borrow::Cow::Borrowed(d) if at.checked_add(d.len()) <= Some(file.len()) => {
                    Bytes {
                        held: Held::Map(file.clone()),
                        start: at,
                        len: d.len(),
                    }
                }
                d => {
                    let owned: Arc<[u8]> = Arc::from(d.into_owned().into_boxed_slice());
                    self.held.fetch_add(owned.len(), Ordering::Relaxed);
                    Bytes {
                        len: owned.len(),
                        held: Held::Owned(owned),
                        start: 0,
                    }
                }
            };
            if id == gimli::SectionId::DebugRanges {
                range_bytes.set(bytes.len());
            }
            Ok(gimli::EndianReader::new(bytes, endian))
        };
        let dwarf: Dwarf = gimli::Dwarf::load(load).ok()?;
        let ranges = self.symbol_count().max(range_bytes.get() / 16);
        let (units, start) = held::Units::new(&dwarf, ranges);
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        self.held.fetch_add(start, Ordering::Relaxed);
        Some(LineTable { ctx, units })
    }
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

/// A symbol name demangled in the process's style ([`set_demangle`];
/// by default as perf 6.1 prints it, [`Demangle::Short`]).
pub fn demangle(name: &str) -> String {
    demangle_as(name, demangle_style())
}

/// The demangling style of every name pmx shows from now on (report,
/// script, annotate, the exports): one setting for the process, as perf's
/// `-v`/`--no-demangle` are, set once by the command line.
pub fn set_demangle(style: Demangle) {
    STYLE.store(style as u8, std::sync::atomic::Ordering::Relaxed);
}

/// The style [`demangle`] uses.
pub fn demangle_style() -> Demangle {
    match STYLE.load(std::sync::atomic::Ordering::Relaxed) {
        1 => Demangle::Full,
        2 => Demangle::None,
        _ => Demangle::Short,
    }
}

static STYLE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl std::str::FromStr for Demangle {
    type Err = String;
    fn from_str(s: &str) -> Result<Demangle, String> {
        match s {
            "short" => Ok(Demangle::Short),
            "full" => Ok(Demangle::Full),
            "none" => Ok(Demangle::None),
            _ => Err(format!("'{s}': the styles are short (perf's), full, none")),
        }
    }
}

/// How symbol names are demangled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Demangle {
    /// As perf 6.1 prints them (libiberty without `DMGL_PARAMS`): C++
    /// names without parameter list, return type, cv-qualifiers of the
    /// method or `[clone …]` suffix (`std::vector<int>::push_back`); Rust
    /// names without their hash.
    #[default]
    Short = 0,
    /// Full C++ signatures (`void std::vector<int>::push_back(int const&)`),
    /// as `perf report -v` prints them.
    Full = 1,
    /// The names as the symbol table has them (perf's `--no-demangle`).
    None = 2,
}

/// A symbol name demangled (Rust legacy and v0, C++ Itanium) in `style`;
/// other names unchanged. A `NAME@plt` is `NAME` demangled with its
/// suffix kept.
pub fn demangle_as(name: &str, style: Demangle) -> String {
    if style == Demangle::None {
        return name.to_string();
    }
    if let Some(base) = name.strip_suffix("@plt") {
        return demangle_as(base, style) + "@plt";
    }
    if is_rust(name) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            return format!("{d:#}");
        }
    }
    if let Some((what, inner)) = thunk(name) {
        let inner = demangle_as(&format!("_Z{inner}"), Demangle::Full);
        return format!("{what} to {inner}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let options = cpp_demangle::DemangleOptions::default();
            let options = match style {
                Demangle::Short => options.no_params().no_return_type(),
                _ => options,
            };
            // libiberty leaves the parameters of a special name's inner
            // function (a thunk, a transaction clone) in place.
            let special = ["_ZTh", "_ZTv", "_ZTc", "_ZGTt", "_ZGTn"]
                .iter()
                .any(|p| name.starts_with(p));
            if let Ok(s) = sym.demangle(&options) {
                return match style {
                    Demangle::Short if special => demangle_as(name, Demangle::Full),
                    Demangle::Short => function_type_spaces(short_form(libiberty_forms(s))),
                    _ => libiberty_forms(s),
                };
            }
        }
    }
    if style == Demangle::Short {
        if let Some(n) = name_only(name) {
            return n;
        }
    }
    name.to_string()
}

/// The standard substitutions that have a short name: (full expansion,
/// short name, class name, short class name).
const STD_NAMES: [(&str, &str, &str, &str); 4] = [
    (
        "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
        "std::string",
        "basic_string",
        "string",
    ),
    (
        "std::basic_istream<char, std::char_traits<char> >",
        "std::istream",
        "basic_istream",
        "istream",
    ),
    (
        "std::basic_ostream<char, std::char_traits<char> >",
        "std::ostream",
        "basic_ostream",
        "ostream",
    ),
    (
        "std::basic_iostream<char, std::char_traits<char> >",
        "std::iostream",
        "basic_iostream",
        "iostream",
    ),
];

/// libiberty's rule for the standard substitutions (`Ss`, `Si`, `So`,
/// `Sd`): the short name (`std::string`), except before a constructor or
/// destructor, which needs the class's own name
/// (`std::basic_string<char, …>::basic_string`). cpp_demangle spells
/// some of them out elsewhere and shortens constructors.
fn std_names(mut s: String) -> String {
    if !s.contains("std::") {
        return s;
    }
    if s.contains("std::nullptr_t") {
        s = s.replace("std::nullptr_t", "decltype(nullptr)");
    }
    for (full, short, class, short_class) in STD_NAMES {
        if s.contains(full) {
            s = s.replace(full, short);
        }
        for (tilde, named) in [
            ("", short_class),
            ("~", short_class),
            ("", class),
            ("~", class),
        ] {
            let shortened = format!("{short}::{tilde}{named}");
            let mut from = 0;
            while let Some(i) = s[from..].find(&shortened).map(|i| i + from) {
                let end = i + shortened.len();
                let boundary = s[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                if boundary {
                    let spelled = format!("{full}::{tilde}{class}");
                    s.replace_range(i..end, &spelled);
                    from = i + spelled.len();
                } else {
                    from = end;
                }
            }
        }
    }
    s
}

/// A Rust symbol: v0 (`_R…`), or legacy (`_ZN…17h<16 hex digits>E`,
/// with its hash: without one it is a C++ nested name, which reads the
/// same way but is C++'s to print — `_GLOBAL__N_1` is `(anonymous
/// namespace)` there).
fn is_rust(name: &str) -> bool {
    if name.starts_with("_R") {
        return true;
    }
    // The hash is the last component (a `.llvm.…` suffix may follow).
    name.starts_with("_ZN")
        && name.rfind("17h").is_some_and(|i| {
            let hash = name.as_bytes().get(i + 3..i + 19);
            hash.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                && name.as_bytes().get(i + 19) == Some(&b'E')
        })
}

/// The short name of a C++ function whose whole mangling cpp_demangle
/// cannot read (a return type with a dependent expression, as in GCC's
/// `wi::add<…>` or `operator*<1u, unsigned short, int>`): its name and
/// template arguments alone, which is all the short form shows. The
/// shortest prefix ending in `E` (the nested name's, or the template
/// arguments') that reads as a function is it.
fn name_only(name: &str) -> Option<String> {
    if !name.starts_with("_Z") || name.len() > 4096 {
        return None;
    }
    let options = cpp_demangle::DemangleOptions::default()
        .no_params()
        .no_return_type();
    for (i, _) in name.match_indices('E') {
        let candidate = format!("{}vv", &name[..=i]);
        if let Ok(sym) = cpp_demangle::Symbol::new(candidate.as_str()) {
            if let Ok(s) = sym.demangle(&options) {
                return Some(function_type_spaces(short_form(libiberty_forms(s))));
            }
        }
    }
    None
}

/// libiberty's spelling where cpp_demangle's differs: the standard
/// substitutions ([`std_names`]), integer literals as `1u`, `0ul`, `2l`
/// (cpp_demangle: `(unsigned int)1`), an empty template parameter pack
/// left out (cpp_demangle: `f<int, >`).
fn libiberty_forms(s: String) -> String {
    let mut s = std_names(s);
    if s.contains("_GLOBAL__N_1") {
        s = s.replace("_GLOBAL__N_1", "(anonymous namespace)");
    }
    if s.contains(", >") {
        s = s.replace(", >", ">");
    }
    if !s.contains(")") {
        return s;
    }
    for (ty, suffix) in [
        ("(unsigned long long)", "ull"),
        ("(long long)", "ll"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long)", "l"),
    ] {
        while let Some(i) = s.find(ty) {
            let rest = &s[i + ty.len()..];
            let digits = rest
                .char_indices()
                .take_while(|&(j, c)| c.is_ascii_digit() || (j == 0 && c == '-'))
                .count();
            if digits == 0 || (digits == 1 && rest.starts_with('-')) {
                break;
            }
            let number = rest[..digits].to_string();
            s.replace_range(i..i + ty.len() + digits, &format!("{number}{suffix}"));
        }
    }
    s
}

/// A thunk's kind and the encoding of its target (`_ZThn16_N…` →
/// ("non-virtual thunk", "N…")), whose full signature libiberty prints
/// in either form (cpp_demangle spells thunks as `{virtual override
/// thunk(…)}`).
fn thunk(name: &str) -> Option<(&'static str, &str)> {
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('n').unwrap_or(s);
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        (digits > 0).then(|| &s[digits..])
    }
    fn call_offset(s: &str) -> Option<&str> {
        match s.as_bytes().first()? {
            b'h' => number(&s[1..])?.strip_prefix('_'),
            b'v' => number(number(&s[1..])?.strip_prefix('_')?)?.strip_prefix('_'),
            _ => None,
        }
    }
    let rest = name.strip_prefix("_ZT")?;
    let (what, inner) = match rest.as_bytes().first()? {
        b'h' => ("non-virtual thunk", call_offset(rest)?),
        b'v' => ("virtual thunk", call_offset(rest)?),
        b'c' => (
            "covariant return thunk",
            call_offset(call_offset(&rest[1..])?)?,
        ),
        _ => return None,
    };
    (!inner.is_empty()).then_some((what, inner))
}

/// libiberty writes a function type inside a template argument with a
/// space before its parameters (`std::function<int (char const*)>`),
/// cpp_demangle without (`int(char const*)`). In the short form a `(`
/// after a type name is such a type's, but for the words that take
/// parentheses themselves (`decltype(…)`, a lambda's `{lambda(…)#1}`,
/// `operator()`) and an enclosing function's parameters (`f(int)::…`).
fn function_type_spaces(s: String) -> String {
    if !s.contains('(') {
        return s;
    }
    const WORDS: [&str; 6] = [
        "lambda", "decltype", "sizeof", "alignof", "typeid", "noexcept",
    ];
    let mut out = String::with_capacity(s.len() + 8);
    let mut skip_to = 0;
    for (i, c) in s.char_indices() {
        if i < skip_to {
            continue;
        }
        if c == '(' && i > 0 {
            let before = &s[..i];
            let last = before.chars().next_back().unwrap_or(' ');
            let typed = last.is_alphanumeric() || matches!(last, '_' | '>' | '*' | '&');
            let word = WORDS.iter().any(|w| before.ends_with(w)) || before.ends_with("operator");
            let operator_call = before.ends_with("operator()");
            // An enclosing function's parameters (`f(int)::{lambda()#1}`)
            // are followed by `::`; a function type's by `>` or `,`.
            let mut depth = 0usize;
            let close = s[i..].char_indices().find_map(|(j, d)| {
                match d {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + j);
                        }
                    }
                    _ => {}
                }
                None
            });
            let enclosing = close.is_none_or(|e| {
                let after = &s[e + 1..];
                after.starts_with("::")
                    || after.starts_with(" const")
                    || after.starts_with(" volatile")
            });
            // A function's address as a template argument
            // (`call<&Console::ProfileEnd>`): libiberty's short form
            // drops its parameters too.
            let token = before
                .rfind(['<', ','])
                .map_or(before, |t| before[t + 1..].trim_start());
            if let (true, Some(e)) = (typed && token.starts_with('&'), close) {
                skip_to = e + 1;
                continue;
            }
            if typed && !word && !operator_call && !enclosing {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

/// What libiberty leaves out without `DMGL_PARAMS` that cpp_demangle's
/// `no_params` keeps: the qualifiers of a method (`operator() const`).
fn short_form(mut s: String) -> String {
    loop {
        let before = s.len();
        for q in [" const", " volatile", " &&", " &"] {
            if let Some(t) = s.strip_suffix(q) {
                s.truncate(t.len());
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn demangles_rust_and_cpp() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar");
        assert_eq!(demangle_as("_ZN3foo3barEv", Demangle::Full), "foo::bar()");
        assert_eq!(
            demangle_as("_ZN3foo3barEv", Demangle::None),
            "_ZN3foo3barEv"
        );
        assert_eq!(demangle("_ZNK3Foo3getEv"), "Foo::get");
        assert_eq!(demangle("_ZN3foo3barEi.cold"), "foo::bar");
        assert_eq!(demangle("_ZdlPvm@plt"), "operator delete@plt");
        assert_eq!(demangle("main"), "main");
        // libiberty's literals and empty packs.
        assert_eq!(
            demangle("_ZN8poly_intILj1EiE3fooEv"),
            "poly_int<1u, int>::foo"
        );
        assert_eq!(demangle("_ZN4node11SPrintFImplIiJEEENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPKcOT_DpOT0_"), "node::SPrintFImpl<int>");
        // A return type cpp_demangle cannot read: the name alone, as
        // libiberty's short form has it.
        assert_eq!(
            demangle(
                "_ZN2wi3addI16generic_wide_intI16wide_int_storageES3_EENS_13binary_traitsIT_T0_\
                 XsrNS_10int_traitsIS5_EE14precision_typeEXsrNS7_IS6_EE14precision_typeEE11\
                 result_typeERKS5_RKS6_6signopPNS_13overflow_typeE"
            ),
            "wi::add<generic_wide_int<wide_int_storage>, generic_wide_int<wide_int_storage> >"
        );
        assert_eq!(
            demangle(
                "_ZmlILj1EtiE8poly_intIXT_EN11poly_resultIT0_N10if_nonpolyIT1_S4_Xsr15poly_int_\
                 traitsIS4_E7is_polyEE4typeEXsr22poly_coeff_pair_traitsIS2_S8_E11result_kindEE4\
                 typeEERK12poly_int_podIXT_ES2_ERKS4_"
            ),
            "operator*<1u, unsigned short, int>"
        );
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

    /// The short form is what libiberty's `cplus_demangle(name, 0)` — the
    /// call perf 6.1 makes — prints, for every C++ symbol of libstdc++;
    /// the full form what `cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI)`
    /// (`perf report -v`) prints.
    #[test]
    fn names_are_libibertys() {
        let Some(lib) = [
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
            "/usr/lib64/libstdc++.so.6",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists()) else {
            eprintln!("skipped: no libstdc++.so.6 here");
            return;
        };
        let map = map_file(Path::new(lib)).unwrap();
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .dynamic_symbols()
            .filter_map(|s| s.name().ok().map(str::to_string))
            // Code only: no typeinfo, vtables, VTTs or guard variables.
            .filter(|n| {
                n.starts_with("_Z")
                    && !["_ZTI", "_ZTS", "_ZTV", "_ZTT", "_ZGV"]
                        .iter()
                        .any(|p| n.starts_with(p))
            })
            .collect();
        names.sort();
        names.dedup();
        assert!(names.len() > 1000, "{} names", names.len());
        for (style, flags) in [(Demangle::Short, "0"), (Demangle::Full, "3")] {
            let Some(theirs) = libiberty(&names, flags) else {
                return;
            };
            let differ = differing(&names, &theirs, style);
            // The full form is shown only on request; cpp_demangle drops
            // a repeated template parameter in a few signatures there.
            let allowed = if style == Demangle::Short {
                0
            } else {
                names.len() / 50
            };
            eprintln!(
                "{style:?}: {} of {} names differ from libiberty's",
                differ.len(),
                names.len()
            );
            assert!(
                differ.len() <= allowed,
                "{style:?}: {} of {} names differ:\n{}",
                differ.len(),
                names.len(),
                differ[..differ.len().min(400)].join("\n")
            );
        }
    }

    /// Node.js's C++ (V8, ICU, libuv: templates, lambdas, anonymous
    /// namespaces, function-pointer template arguments) in the short form,
    /// against libiberty. 993 of 27,764 differ today (3.6%): a function's
    /// address as a template argument (libiberty: `&(int f<…>(…))`) and a
    /// lambda in a local name inside template arguments, where cpp_demangle
    /// reads the mangling its own way; the bound keeps that from growing.
    /// gcc's cc1: 372 of 27,141 (1.4%), all a plain function's address as
    /// a template argument, which libiberty prints with its parameters
    /// (`traverse<void*, &(reset_indirect_string(indirect_string_node**,
    /// void*))>`) and cpp_demangle's short form without.
    #[test]
    fn node_and_cc1_names_are_libibertys() {
        big_program_names("/usr/bin/node", 25);
        big_program_names("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", 50);
    }

    /// The C++ names of `path` (its first 30,000 code symbols) against
    /// libiberty: at most one in `one_in` may differ (0: none).
    fn big_program_names(path: &str, one_in: usize) {
        let Ok(map) = map_file(Path::new(path)) else {
            eprintln!("skipped: no {path}");
            return;
        };
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .symbols()
            .chain(obj.dynamic_symbols())
            .filter_map(|s| s.name().ok().map(str::to_string))
            .filter(|n| n.starts_with("_Z"))
            .take(30_000)
            .collect();
        names.sort();
        names.dedup();
        let Some(theirs) = libiberty(&names, "0") else {
            return;
        };
        let differ = differing(&names, &theirs, Demangle::Short);
        eprintln!(
            "{path}: {} of {} names differ from libiberty's",
            differ.len(),
            names.len()
        );
        assert!(
            differ.len() <= names.len().checked_div(one_in).unwrap_or(0),
            "{}",
            differ[..differ.len().min(20)].join("\n")
        );
    }

    /// Rust names as perf 6.1 prints them (libiberty drops the hash too):
    /// every function of this test binary.
    #[test]
    fn rust_names_are_libibertys() {
        let exe = std::env::current_exe().unwrap();
        let map = map_file(&exe).unwrap();
        let obj = object::File::parse(&*map).unwrap();
        let mut names: Vec<String> = obj
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text)
            .filter_map(|s| s.name().ok().map(str::to_string))
            .filter(|n| n.starts_with("_ZN") || n.starts_with("_R"))
            .collect();
        names.sort();
        names.dedup();
        assert!(names.len() > 1000, "{} names", names.len());
        let Some(theirs) = libiberty(&names, "0") else {
            return;
        };
        let differ = differing(&names, &theirs, Demangle::Short);
        assert!(
            differ.is_empty(),
            "{} of {}:\n{}",
            differ.len(),
            names.len(),
            differ[..differ.len().min(20)].join("\n")
        );
    }

    /// The names pmx demangles in `style` otherwise than libiberty did
    /// (`theirs`, a line each), with both forms.
    fn differing(names: &[String], theirs: &str, style: Demangle) -> Vec<String> {
        names
            .iter()
            .zip(theirs.lines())
            .filter(|(n, t)| demangle_as(n, style) != *t)
            .map(|(n, t)| {
                format!(
                    "{n}\n  pmx:       {}\n  libiberty: {t}",
                    demangle_as(n, style)
                )
            })
            .collect()
    }

    /// The names demangled by libiberty with these flags, one a line (a
    /// small program built against libiberty-dev; `None`, said, when it
    /// cannot be built here).
    fn libiberty(names: &[String], flags: &str) -> Option<String> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let dir = std::env::temp_dir().join(format!("pmx-libiberty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let (src, exe) = (dir.join("dm.c"), dir.join("dm"));
        std::fs::write(
            &src,
            "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
             #include <libiberty/demangle.h>\n\
             int main(int c, char **v) { int f = atoi(v[1]); char l[1 << 16];\n\
             while (fgets(l, sizeof l, stdin)) { l[strcspn(l, \"\\n\")] = 0;\n\
             char *d = cplus_demangle(l, f); puts(d ? d : l); free(d); } }\n",
        )
        .ok()?;
        let built = Command::new("cc")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .arg("-liberty")
            .output();
        if !built.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: cannot build against libiberty (apt-get install libiberty-dev)");
            return None;
        }
        let mut child = Command::new(&exe)
            .arg(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let input = names.join("\n") + "\n";
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().ok()?;
        writer.join().ok()?.ok()?;
        let _ = std::fs::remove_dir_all(&dir);
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}
