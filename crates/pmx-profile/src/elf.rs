//! One ELF binary's symbols: the function symbols of `.symtab` (else
//! `.dynsym`), the load segments that turn a file offset into a virtual
//! address, its GNU build-id, and DWARF line info on demand.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use std::path::Path;

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

/// A loaded ELF file.
pub struct ElfFile {
    map: memmap2::Mmap,
    /// Function symbols sorted by start.
    symbols: Vec<Symbol>,
    /// Load segments: (file offset, file size, vaddr).
    segments: Vec<(u64, u64, u64)>,
    build_id: Option<Vec<u8>>,
    lines: Option<Option<LineTable>>,
}

type Dwarf = gimli::Dwarf<gimli::EndianRcSlice<gimli::RunTimeEndian>>;

struct LineTable {
    ctx: addr2line::Context<gimli::EndianRcSlice<gimli::RunTimeEndian>>,
}

impl std::fmt::Debug for ElfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfFile")
            .field("symbols", &self.symbols.len())
            .field("build_id", &self.build_id)
            .finish()
    }
}

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
        let map = map_file(path)?;
        ElfFile::from_map(map, &path.display().to_string(), debug_dir)
    }

    /// Index an ELF image held in memory (the vDSO); `name` is used in
    /// error messages. The separate debug file is used as in [`ElfFile::open`].
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<ElfFile, String> {
        if bytes.is_empty() {
            return Err(format!("{name}: empty ELF image"));
        }
        let mut m = memmap2::MmapMut::map_anon(bytes.len()).map_err(|e| format!("{name}: {e}"))?;
        m.copy_from_slice(bytes);
        let map = m.make_read_only().map_err(|e| format!("{name}: {e}"))?;
        ElfFile::from_map(map, name, Path::new(DEBUG_DIR))
    }

    fn from_map(map: memmap2::Mmap, name: &str, debug_dir: &Path) -> Result<ElfFile, String> {
        let (mut symbols, segments, build_id) = {
            let obj =
                object::File::parse(&*map).map_err(|e| format!("{name}: not an ELF file: {e}"))?;
            let segments = obj
                .segments()
                .filter_map(|s| {
                    let (off, size) = s.file_range();
                    (size > 0).then_some((off, size, s.address()))
                })
                .collect();
            let build_id = obj.build_id().ok().flatten().map(|b| b.to_vec());
            (function_symbols(&obj), segments, build_id)
        };
        let mut lines_map = None;
        if let Some(id) = build_id.as_deref().filter(|id| id.len() > 1) {
            let hexid: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let debug = debug_dir
                .join(&hexid[..2])
                .join(format!("{}.debug", &hexid[2..]));
            if let Ok(dmap) = map_file(&debug) {
                if let Ok(dobj) = object::File::parse(&*dmap) {
                    let dsyms = function_symbols(&dobj);
                    if dsyms.len() > symbols.len() {
                        symbols = dsyms;
                    }
                    drop(dobj);
                    lines_map = Some(dmap);
                }
            }
        }
        Ok(ElfFile {
            map: lines_map.unwrap_or(map),
            symbols,
            segments,
            build_id,
            lines: None,
        })
    }

    /// The GNU build-id, when the file has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// Number of function symbols.
    pub fn symbol_count(&self) -> usize {
        self.symbols.len()
    }

    /// The symbols, sorted by start.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
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
        let i = self.symbols.partition_point(|s| s.start <= vaddr);
        if i == 0 {
            return None;
        }
        let s = &self.symbols[i - 1];
        (vaddr < s.end).then_some(i - 1)
    }

    /// Source file and line of `vaddr` from DWARF, when the file has it.
    pub fn line(&mut self, vaddr: u64) -> Option<(String, u32)> {
        // addr2line looks up [vaddr, vaddr + 1): the last address overflows.
        if vaddr == u64::MAX {
            return None;
        }
        if self.lines.is_none() {
            self.lines = Some(self.load_lines());
        }
        let table = self.lines.as_ref()?.as_ref()?;
        let loc = table.ctx.find_location(vaddr).ok()??;
        Some((loc.file?.to_string(), loc.line?))
    }

    /// The functions inlined at `vaddr`, innermost first, from DWARF
    /// (without the function they were inlined into); empty without
    /// debug info or inlining.
    pub fn inlined(&mut self, vaddr: u64) -> Vec<String> {
        if vaddr == u64::MAX {
            return Vec::new();
        }
        if self.lines.is_none() {
            self.lines = Some(self.load_lines());
        }
        let Some(Some(table)) = &self.lines else {
            return Vec::new();
        };
        let mut names = Vec::new();
        if let Ok(mut frames) = table.ctx.find_frames(vaddr).skip_all_loads() {
            while let Ok(Some(f)) = frames.next() {
                let name = f.function.as_ref().and_then(|n| n.raw_name().ok());
                names.push(name.map_or_else(|| "??".to_string(), |n| demangle(&n)));
            }
        }
        names.pop();
        names
    }

    fn load_lines(&self) -> Option<LineTable> {
        let obj = object::File::parse(&*self.map).ok()?;
        obj.section_by_name(".debug_line")?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<gimli::EndianRcSlice<gimli::RunTimeEndian>, gimli::Error> {
            let data = obj
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .map(|d| d.into_owned())
                .unwrap_or_default();
            Ok(gimli::EndianRcSlice::new(std::rc::Rc::from(data.into_boxed_slice()), endian))
        };
        let dwarf: Dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(LineTable { ctx })
    }
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

/// The function symbols of `.symtab` (else `.dynsym`), sorted by start,
/// one per start address, zero-sized ones reaching to the next symbol.
fn function_symbols(obj: &object::File<'_>) -> Vec<Symbol> {
    /// A symbol and how good a name it is among aliases at one address
    /// (lower is better): sized before zero-sized, strong before weak,
    /// global before local, fewer leading underscores, longer name — so
    /// the vDSO's `__vdso_clock_gettime` wins over its weak alias
    /// `clock_gettime`, as perf shows it.
    type Ranked = (Symbol, (bool, bool, bool, usize, std::cmp::Reverse<usize>));
    // Labels (untyped symbols) in executable (SHF_EXECINSTR) sections
    // count too, as in perf: assembly entry points such as ld.so's
    // `_dl_start_user`.
    let text_label = |s: &object::Symbol<'_, '_>| {
        s.kind() == SymbolKind::Unknown
            && (s.section_index())
                .and_then(|i| obj.section_by_index(i).ok())
                .is_some_and(|sec| match sec.flags() {
                    // By the flag: a separate debug file's .text is NOBITS.
                    object::SectionFlags::Elf { sh_flags } => sh_flags & 4 != 0,
                    _ => false,
                })
    };
    let collect = |it: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| {
        let mut syms = Vec::new();
        for s in it {
            if !(s.kind() == SymbolKind::Text || text_label(&s))
                || s.address() == 0
                || s.is_undefined()
            {
                continue;
            }
            if let Ok(name) = s.name() {
                if !name.is_empty() {
                    let underscores = name.len() - name.trim_start_matches('_').len();
                    let rank = (
                        s.size() == 0,
                        s.is_weak(),
                        !s.is_global(),
                        underscores,
                        std::cmp::Reverse(name.len()),
                    );
                    syms.push((
                        Symbol {
                            start: s.address(),
                            end: s.address().saturating_add(s.size()),
                            name: name.to_string(),
                        },
                        rank,
                    ));
                }
            }
        }
        syms
    };
    let mut ranked: Vec<Ranked> = collect(&mut obj.symbols());
    if ranked.is_empty() {
        ranked = collect(&mut obj.dynamic_symbols());
    }
    // For the same start keep the best name, then the largest.
    ranked.sort_by(|(a, ra), (b, rb)| {
        a.start
            .cmp(&b.start)
            .then(ra.cmp(rb))
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.name.cmp(&b.name))
    });
    let mut syms: Vec<Symbol> = ranked.into_iter().map(|(s, _)| s).collect();
    syms.dedup_by(|b, a| a.start == b.start);
    for i in 0..syms.len() {
        if syms[i].end == syms[i].start {
            let one = syms[i].start.saturating_add(1);
            syms[i].end = syms.get(i + 1).map_or(one, |n| n.start).max(one);
        }
    }
    syms
}

/// A symbol name demangled (Rust legacy and v0, C++ Itanium), without
/// Rust's hash suffix; other names unchanged.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    name.to_string()
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
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("main"), "main");
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
