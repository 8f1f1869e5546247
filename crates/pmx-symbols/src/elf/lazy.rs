//! DWARF lines and inline frames one unit at a time, without the
//! one-time cost of the whole file.
//!
//! [`addr2line::Context`] parses every unit's header, abbreviations and
//! line-program header when it is made, over sections decompressed whole:
//! for the C library's debug file (4,126 units, 10 MB of zlib-compressed
//! DWARF) that is most of a `--call-graph dwarf` report's time, even when
//! one address (`__libc_start_call_main`, under every chain) is asked for.
//!
//! Here the unit of an address is found in `.debug_aranges`, and a
//! context is made over that unit alone: its bytes of `.debug_info`, its
//! abbreviations and its line program, with `.debug_aranges` cut down to
//! its own sets. `.debug_info`, `.debug_abbrev` and `.debug_line` are
//! decompressed only as far as the units asked for reach ([`Prefix`]: a
//! zlib stream is read from its start, so a unit near the start costs
//! little); the small sections (strings, range lists) whole.
//!
//! The answers are addr2line's over the whole file, unit by unit: the
//! units whose `.debug_aranges` ranges cover the address are tried in
//! the order addr2line tries them (by the range's end, then the unit's
//! place), the first that knows the address answers. When none does, the
//! file has no `.debug_aranges`, or a unit refers outside itself (forms
//! such as `DW_FORM_ref_addr`, split or supplementary DWARF), the caller
//! asks the whole-file context instead ([`super::ElfFile::line`]).
//! `lazy::tests` compares both over every function of the C library.

use super::{demangle_as, Bytes, Demangle, Dwarf, Held, Reader};
use gimli::Reader as _;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What a lookup in one unit found.
pub(super) enum Found<T> {
    /// The unit's answer (the whole file's too).
    Answer(T),
    /// Ask the whole-file context.
    Whole,
}

/// A section's bytes, decompressed as far as asked ([`Source::upto`]).
enum Source {
    /// Stored as is, or decompressed whole.
    Whole(Bytes),
    Zlib(Box<Prefix>),
}

/// A zlib-compressed section, decompressed from its start as far as the
/// lookups need.
struct Prefix {
    map: Arc<memmap2::Mmap>,
    /// The compressed stream: `map[at..at + len]`.
    at: usize,
    len: usize,
    /// Its size once decompressed (the compression header's word, bounded).
    size: usize,
    inflate: flate2::Decompress,
    /// The bytes decompressed so far (dropped once the stream ended).
    out: Vec<u8>,
    /// Those bytes as last handed out.
    shared: Arc<[u8]>,
    /// The stream ended (or is broken): `shared` is all there is.
    ended: bool,
}

/// The least a prefix is inflated to. Beyond it, a prefix grows to an
/// eighth past what is asked, not more: a zlib stream is inflated from
/// its start, and a unit deep in `.debug_info` (libc's `__libc_fork`, at
/// 3.4 of 5.8 MB) would otherwise inflate the rest of the section for
/// nothing. A unit's header is asked first, then its end: the eighth
/// usually covers the unit already, so the prefix is copied out once.
const STEP: usize = 64 << 10;

impl Prefix {
    /// At least the first `n` bytes (all there are when fewer); bytes
    /// newly held are added to `held`.
    fn upto(&mut self, n: usize, held: &AtomicUsize) -> Arc<[u8]> {
        if self.ended || self.shared.len() >= n {
            return self.shared.clone();
        }
        let target = n.saturating_add(n / 8).max(STEP).min(self.size);
        let before = self.out.capacity();
        self.out
            .reserve_exact(target.saturating_sub(self.out.len()));
        while self.out.len() < target {
            let read = self.inflate.total_in() as usize;
            let input = self
                .map
                .get(self.at + read..self.at + self.len)
                .unwrap_or_default();
            let out = self.out.len();
            match self
                .inflate
                .decompress_vec(input, &mut self.out, flate2::FlushDecompress::None)
            {
                Ok(flate2::Status::StreamEnd) => self.ended = true,
                Ok(_) if self.inflate.total_in() as usize != read || self.out.len() != out => {}
                _ => self.ended = true,
            }
            if self.ended {
                break;
            }
        }
        self.ended |= self.out.len() >= self.size;
        let grown = self.out.capacity().saturating_sub(before);
        self.shared = Arc::from(&self.out[..]);
        held.fetch_add(grown + self.shared.len(), Ordering::Relaxed);
        if self.ended {
            held.fetch_sub(
                self.out.capacity().min(held.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            self.out = Vec::new();
        }
        self.shared.clone()
    }
}

impl Source {
    /// The section's first `n` bytes at least (all of it when shorter),
    /// and whether that is all of it.
    fn upto(&mut self, n: usize, held: &AtomicUsize) -> (Bytes, bool) {
        match self {
            Source::Whole(b) => (b.clone(), true),
            Source::Zlib(p) => {
                let bytes = p.upto(n, held);
                let all = p.ended;
                let len = bytes.len();
                (
                    Bytes {
                        held: Held::Owned(bytes),
                        start: 0,
                        len,
                    },
                    all,
                )
            }
        }
    }
}

/// One unit's context, made on first use.
struct UnitContext {
    ctx: addr2line::Context<Reader>,
    /// Its lines and functions were counted in the held bytes.
    lines_counted: bool,
    functions_counted: bool,
    /// Its line program's header (for the cost of its rows).
    program: Option<usize>,
    /// The unit's length in `.debug_info`.
    length: u64,
}

/// A binary's DWARF, read one unit at a time.
pub(super) struct Units {
    /// The sections read whole; `.debug_info`, `.debug_abbrev`,
    /// `.debug_line` and `.debug_aranges` are set per unit.
    base: Dwarf,
    info: Source,
    abbrev: Source,
    line: Source,
    endian: gimli::RunTimeEndian,
    /// `.debug_aranges`, whole.
    aranges: Bytes,
    /// The sets of `.debug_aranges`: (unit offset in `.debug_info`,
    /// offset of the set, its length).
    sets: Vec<(u64, usize, usize)>,
    /// Address ranges: (begin, end, index in `sets`), by begin.
    ranges: Vec<(u64, u64, u32)>,
    /// The highest end of `ranges[..=i]`.
    max_end: Vec<u64>,
    /// The contexts made, by unit offset (`None`: the unit cannot be read
    /// alone).
    units: HashMap<u64, Option<Box<UnitContext>>>,
}

/// Forms that refer outside their unit (or file): a unit using one is
/// not read alone.
const OUTSIDE_FORMS: [gimli::DwForm; 7] = [
    gimli::DW_FORM_ref_addr,
    gimli::DW_FORM_ref_sup4,
    gimli::DW_FORM_strp_sup,
    gimli::DW_FORM_ref_sig8,
    gimli::DW_FORM_ref_sup8,
    gimli::DW_FORM_GNU_ref_alt,
    gimli::DW_FORM_GNU_strp_alt,
];

impl Units {
    /// The units of `obj` (the bytes of `file`), or `None` when its DWARF
    /// cannot be read one unit at a time (no `.debug_aranges`, no
    /// `.debug_info`). `whole` reads a section whole.
    pub(super) fn new(
        obj: &object::File<'_>,
        file: &Arc<memmap2::Mmap>,
        whole: impl Fn(gimli::SectionId) -> Bytes,
        held: &AtomicUsize,
    ) -> Option<Units> {
        use object::{Object, ObjectSection};
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let aranges = whole(gimli::SectionId::DebugAranges);
        if aranges.len == 0 || obj.section_by_name(".debug_info").is_none() {
            return None;
        }
        let source = |id: gimli::SectionId| -> Source {
            let zlib = obj
                .section_by_name(id.name())
                .and_then(|s| s.compressed_file_range().ok())
                .filter(|r| r.format == object::CompressionFormat::Zlib);
            let Some(r) = zlib else {
                return Source::Whole(whole(id));
            };
            let (Ok(at), Ok(len), Ok(size)) = (
                usize::try_from(r.offset),
                usize::try_from(r.compressed_size),
                usize::try_from(r.uncompressed_size),
            ) else {
                return Source::Whole(whole(id));
            };
            if at.checked_add(len).is_none_or(|end| end > file.len()) {
                return Source::Whole(whole(id));
            }
            // Deflate expands at most 1032 times.
            let size = size.min(len.saturating_mul(1032));
            Source::Zlib(Box::new(Prefix {
                map: file.clone(),
                at,
                len,
                size,
                inflate: flate2::Decompress::new(true),
                out: Vec::new(),
                shared: Arc::from(Vec::new()),
                ended: size == 0,
            }))
        };
        let empty = || {
            gimli::EndianReader::new(
                Bytes {
                    held: Held::Owned(Arc::from(Vec::new())),
                    start: 0,
                    len: 0,
                },
                endian,
            )
        };
        let skip = [
            gimli::SectionId::DebugInfo,
            gimli::SectionId::DebugAbbrev,
            gimli::SectionId::DebugLine,
            gimli::SectionId::DebugAranges,
        ];
        let base: Dwarf = gimli::Dwarf::load(|id| -> Result<Reader, ()> {
            if skip.contains(&id) || !super::LINE_SECTIONS.contains(&id) {
                return Ok(empty());
            }
            Ok(gimli::EndianReader::new(whole(id), endian))
        })
        .ok()?;
        let mut units = Units {
            base,
            info: source(gimli::SectionId::DebugInfo),
            abbrev: source(gimli::SectionId::DebugAbbrev),
            line: source(gimli::SectionId::DebugLine),
            endian,
            aranges,
            sets: Vec::new(),
            ranges: Vec::new(),
            max_end: Vec::new(),
            units: HashMap::default(),
        };
        units.read_aranges();
        let own = units.sets.capacity() * 24 + units.ranges.capacity() * 32;
        held.fetch_add(own, Ordering::Relaxed);
        Some(units)
    }

    fn read_aranges(&mut self) {
        let section =
            gimli::DebugAranges::from(gimli::EndianReader::new(self.aranges.clone(), self.endian));
        let mut sets = section.headers();
        while let Ok(Some(set)) = sets.next() {
            let i = self.sets.len() as u32;
            self.sets.push((
                set.debug_info_offset().0 as u64,
                set.offset().0,
                set.length() + usize::from(set.encoding().format.initial_length_size()),
            ));
            let mut entries = set.entries();
            // As addr2line: a broken entry is skipped, a zero-length one
            // names no range.
            while let Some(e) = entries.next().transpose() {
                let Ok(e) = e else { continue };
                if e.length() != 0 {
                    let r = e.range();
                    self.ranges.push((r.begin, r.end, i));
                }
            }
        }
        self.ranges.sort_by_key(|r| r.0);
        let mut max = 0;
        self.max_end = (self.ranges.iter())
            .map(|r| {
                max = max.max(r.1);
                max
            })
            .collect();
    }

    /// The units whose ranges cover `vaddr`, in the order addr2line tries
    /// them: by the range's end, then the unit's set, then the range's
    /// place in it.
    fn candidates(&self, vaddr: u64) -> Vec<u64> {
        let mut hits: Vec<(u64, u32, usize)> = Vec::new();
        let mut i = self.ranges.partition_point(|r| r.0 <= vaddr);
        while i > 0 && self.max_end[i - 1] > vaddr {
            i -= 1;
            let (_, end, set) = self.ranges[i];
            if end > vaddr {
                hits.push((end, set, i));
            }
        }
        hits.sort_unstable();
        let mut units: Vec<u64> = Vec::with_capacity(hits.len());
        for (_, set, _) in hits {
            let unit = self.sets[set as usize].0;
            if !units.contains(&unit) {
                units.push(unit);
            }
        }
        units
    }

    /// The functions at `vaddr`, innermost first (as
    /// [`super::ElfFile::inline_chain`]).
    pub(super) fn inline_chain(
        &mut self,
        vaddr: u64,
        style: Demangle,
        held: &AtomicUsize,
    ) -> Found<Vec<String>> {
        self.first(vaddr, held, |u, held| {
            let mut names = Vec::new();
            if let Ok(mut frames) = u.ctx.find_frames(vaddr).skip_all_loads() {
                while let Ok(Some(f)) = frames.next() {
                    let name = f.function.as_ref().and_then(|n| n.raw_name().ok());
                    names.push(name.map_or_else(|| "??".to_string(), |n| demangle_as(&n, style)));
                }
            }
            if names.is_empty() {
                return None;
            }
            let mut bytes = 0;
            if !u.functions_counted {
                bytes += super::held::unit_functions_bytes(u.length);
                if !u.lines_counted {
                    bytes += u.program.unwrap_or(0);
                }
                u.functions_counted = true;
                u.lines_counted = true;
            }
            held.fetch_add(bytes, Ordering::Relaxed);
            Some(names)
        })
    }

    /// Source file and line of `vaddr` (as [`super::ElfFile::line`]).
    pub(super) fn line(&mut self, vaddr: u64, held: &AtomicUsize) -> Found<Option<(String, u32)>> {
        self.first(vaddr, held, |u, held| {
            let loc = u.ctx.find_location(vaddr).ok()??;
            if !u.lines_counted {
                held.fetch_add(u.program.unwrap_or(0), Ordering::Relaxed);
                u.lines_counted = true;
            }
            Some(loc.file.zip(loc.line).map(|(f, l)| (f.to_string(), l)))
        })
    }

    /// The first answer of the units covering `vaddr`; the whole file's
    /// when none answers or one cannot be read alone.
    fn first<T>(
        &mut self,
        vaddr: u64,
        held: &AtomicUsize,
        mut ask: impl FnMut(&mut UnitContext, &AtomicUsize) -> Option<T>,
    ) -> Found<T> {
        for unit in self.candidates(vaddr) {
            let Some(u) = self.unit(unit, held) else {
                return Found::Whole;
            };
            if let Some(answer) = ask(u, held) {
                return Found::Answer(answer);
            }
        }
        Found::Whole
    }

    /// The context of the unit at `offset` in `.debug_info`, made on
    /// first use (`None`: it cannot be read alone).
    fn unit(&mut self, offset: u64, held: &AtomicUsize) -> Option<&mut UnitContext> {
        if !self.units.contains_key(&offset) {
            let u = self.make(offset, held).map(Box::new);
            self.units.insert(offset, u);
        }
        self.units.get_mut(&offset)?.as_deref_mut()
    }

    fn reader(&self, bytes: Bytes) -> Reader {
        gimli::EndianReader::new(bytes, self.endian)
    }

    fn make(&mut self, offset: u64, held: &AtomicUsize) -> Option<UnitContext> {
        let at = usize::try_from(offset).ok()?;
        // The unit's bytes: its length first.
        let (info, _) = self.info.upto(at.checked_add(12)?, held);
        let mut r = self.reader(info);
        r.skip(at).ok()?;
        let length = match r.read_u32().ok()? {
            0xffff_ffff => usize::try_from(r.read_u64().ok()?).ok()?.checked_add(12)?,
            l if l >= 0xffff_fff0 => return None,
            l => usize::try_from(l).ok()? + 4,
        };
        let (info, _) = self.info.upto(at.checked_add(length)?, held);
        if info.len < at + length {
            return None;
        }
        let unit_bytes = Bytes {
            start: info.start + at,
            len: length,
            held: info.held,
        };
        let debug_info = gimli::DebugInfo::from(self.reader(unit_bytes));
        let header = debug_info.units().next().ok()??;
        match header.type_() {
            gimli::UnitType::Compilation | gimli::UnitType::Partial => {}
            _ => return None,
        }
        // Its abbreviations, read as far as they reach.
        let abbrev_at = header.debug_abbrev_offset().0;
        let mut want = abbrev_at.checked_add(STEP)?;
        let (abbrev, abbrevs) = loop {
            let (bytes, all) = self.abbrev.upto(want, held);
            let section = gimli::DebugAbbrev::from(self.reader(bytes.clone()));
            match section.abbreviations(header.debug_abbrev_offset()) {
                Ok(a) => break (bytes, a),
                Err(_) if !all => want = want.saturating_add(want - abbrev_at),
                Err(_) => return None,
            }
        };
        if outside_forms(&self.reader(abbrev.clone()), abbrev_at) {
            return None;
        }
        // Its line program, whole.
        let mut entries = header.entries(&abbrevs);
        let (_, root) = entries.next_dfs().ok()??;
        let stmt = match root.attr_value(gimli::DW_AT_stmt_list) {
            Ok(Some(gimli::AttributeValue::DebugLineRef(o))) => Some(o.0),
            _ => None,
        };
        if root
            .attr_value(gimli::DW_AT_GNU_dwo_id)
            .ok()
            .flatten()
            .is_some()
        {
            return None;
        }
        let line = match stmt {
            Some(s) => {
                let (bytes, _) = self.line.upto(s.checked_add(12)?, held);
                let mut r = self.reader(bytes);
                let need = r.skip(s).ok().and_then(|_| match r.read_u32().ok()? {
                    0xffff_ffff => usize::try_from(r.read_u64().ok()?).ok()?.checked_add(12),
                    l => usize::try_from(l).ok()?.checked_add(4),
                });
                self.line.upto(s.saturating_add(need.unwrap_or(0)), held).0
            }
            None => self.line.upto(0, held).0,
        };
        // Its sets of `.debug_aranges`, pointing at it at offset 0.
        let mut aranges = Vec::new();
        for &(unit, set, len) in &self.sets {
            if unit != offset {
                continue;
            }
            let Some(bytes) = self.aranges.get(set..set.saturating_add(len)) else {
                continue;
            };
            let mut copy = bytes.to_vec();
            let word = if copy.starts_with(&[0xff; 4]) { 12 } else { 4 };
            let size = if word == 12 { 8 } else { 4 };
            if let Some(field) = copy.get_mut(word + 2..word + 2 + size) {
                field.fill(0);
            }
            aranges.extend_from_slice(&copy);
        }
        let aranges_len = aranges.len();
        let aranges = Bytes {
            held: Held::Owned(Arc::from(aranges)),
            start: 0,
            len: aranges_len,
        };
        let mut dwarf = Dwarf {
            debug_info,
            debug_abbrev: self.reader(abbrev).into(),
            debug_line: self.reader(line.clone()).into(),
            debug_aranges: self.reader(aranges).into(),
            abbreviations_cache: gimli::AbbreviationsCache::new(),
            sup: None,
            ..clone_dwarf(&self.base)
        };
        dwarf.file_type = gimli::DwarfFileType::Main;
        let program = stmt.and_then(|s| {
            let line = gimli::DebugLine::from(self.reader(line));
            let p = line
                .program(gimli::DebugLineOffset(s), 8, None, None)
                .ok()?;
            Some(super::held::program_rows_bytes(p.header()))
        });
        let start = super::held::one_unit_bytes(&dwarf, abbrev_at as u64, stmt, aranges_len);
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        held.fetch_add(start, Ordering::Relaxed);
        Some(UnitContext {
            ctx,
            lines_counted: false,
            functions_counted: false,
            program,
            length: length as u64,
        })
    }
}

/// A copy of `d`'s sections (a `gimli::Dwarf` is not `Clone`).
fn clone_dwarf(d: &Dwarf) -> Dwarf {
    Dwarf {
        debug_abbrev: d.debug_abbrev.clone(),
        debug_addr: d.debug_addr.clone(),
        debug_aranges: d.debug_aranges.clone(),
        debug_info: d.debug_info.clone(),
        debug_line: d.debug_line.clone(),
        debug_line_str: d.debug_line_str.clone(),
        debug_macinfo: d.debug_macinfo.clone(),
        debug_macro: d.debug_macro.clone(),
        debug_str: d.debug_str.clone(),
        debug_str_offsets: d.debug_str_offsets.clone(),
        debug_types: d.debug_types.clone(),
        locations: d.locations.clone(),
        ranges: d.ranges.clone(),
        file_type: d.file_type,
        sup: None,
        abbreviations_cache: gimli::AbbreviationsCache::new(),
    }
}

/// Whether the abbreviation table at `offset` uses a form that refers
/// outside its unit (or cannot be read: then it is not read alone).
fn outside_forms(section: &Reader, offset: usize) -> bool {
    let mut r = section.clone();
    let mut walk = || -> Option<bool> {
        r.skip(offset).ok()?;
        loop {
            if r.read_uleb128().ok()? == 0 {
                return Some(false);
            }
            r.read_uleb128().ok()?;
            r.read_u8().ok()?;
            loop {
                let (name, form) = (r.read_uleb128().ok()?, r.read_uleb128().ok()?);
                if name == 0 && form == 0 {
                    break;
                }
                if OUTSIDE_FORMS.iter().any(|f| u64::from(f.0) == form) {
                    return Some(true);
                }
                if form == u64::from(gimli::DW_FORM_implicit_const.0) {
                    r.read_sleb128().ok()?;
                }
            }
        }
    };
    walk().unwrap_or(true)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::ElfFile;
    use super::{Found, Source};
    use crate::Demangle;
    use std::path::{Path, PathBuf};

    /// A C program whose functions have functions inlined into them, two
    /// units, its DWARF zlib-compressed (`-gz`); answers.rs's tests too.
    pub(in crate::elf) const SOURCE: &str = "#include <stdlib.h>\n\
        static inline long sq(long x) { return x * x + (x >> 3); }\n\
        static inline long tw(long x) { return sq(x) ^ sq(x + 1); }\n\
        __attribute__((noinline)) long f(long n) { long t = 0; for (long i = 0; i < n; i++) t += tw(i); return t; }\n\
        __attribute__((noinline)) long g(long n) { return sq(n) + f(n / 2); }\n\
        int main(int c, char **v) { return (int)g(c > 1 ? atol(v[1]) : 9); }\n";
    const OTHER: &str = "static inline int h(int x) { return x * 3 + 1; }\n\
        __attribute__((noinline)) int k(int n) { int t = 0; for (int i = 0; i < n; i++) t += h(i); return t; }\n";

    /// Every function symbol's start and middle: what a unit read alone
    /// answers is the whole-file context's answer; returns how many it
    /// answered (lines and inline frames) and how many the whole file
    /// knows.
    fn same_as_whole(path: &Path) -> (usize, usize) {
        let lazy = ElfFile::open(path).unwrap();
        let whole = ElfFile::open(path).unwrap();
        // The whole-file context only.
        *whole.units.lock().unwrap() = Some(None);
        let mut units = lazy.load_units().expect("DWARF read one unit at a time");
        let mut answered = 0;
        let addrs: Vec<u64> = (lazy.symbols().iter())
            .flat_map(|s| [s.start, s.start + (s.end - s.start) / 2])
            .collect();
        let mut known = 0;
        for &a in &addrs {
            let (line, chain) = (whole.line(a), whole.inline_chain(a, Demangle::Short));
            known += usize::from(line.is_some()) + usize::from(!chain.is_empty());
            if let Found::Answer(l) = units.line(a, &lazy.held) {
                assert_eq!(l, line, "{}: line of {a:#x}", path.display());
                answered += 1;
            }
            if let Found::Answer(l) = units.inline_chain(a, Demangle::Short, &lazy.held) {
                assert_eq!(l, chain, "{}: inline frames at {a:#x}", path.display());
                answered += 1;
            }
        }
        eprintln!(
            "{}: {answered} of {known} answers by single units",
            path.display()
        );
        (answered, known)
    }

    #[test]
    fn units_read_alone_answer_as_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        // This test program: Rust's units refer to each other's entries
        // (`DW_FORM_ref_addr`): most are read with the whole file.
        let (answered, _) = same_as_whole(&std::env::current_exe().unwrap());
        assert!(answered > 0);
        // C programs: nearly everything DWARF knows is answered by single
        // units.
        let mut paths: Vec<PathBuf> = Vec::new();
        if pmx_testkit::cc::require() {
            let c = dir.path().join("other.c");
            std::fs::write(&c, OTHER).unwrap();
            let flags = ["-g", "-O2", "-gz", c.to_str().unwrap()];
            paths.push(pmx_testkit::cc::compile(dir.path(), "inl", SOURCE, &flags).unwrap());
        }
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        if ElfFile::open(libc).is_ok_and(|f| f.debug.is_some()) {
            paths.push(libc.to_path_buf());
        } else {
            pmx_testkit::skip("no libc6-dbg debug file for libc.so.6: not compared");
        }
        for p in &paths {
            let (answered, known) = same_as_whole(p);
            assert!(
                answered * 10 >= known * 9,
                "{}: {answered} of {known}",
                p.display()
            );
        }
    }

    /// One address of the C library (the bottom of every chain) reads
    /// one unit: a small part of its compressed `.debug_info` is
    /// decompressed, and the whole-file context is not made.
    #[test]
    fn one_address_reads_one_unit() {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let Some(f) = ElfFile::open(libc).ok().filter(|f| f.debug.is_some()) else {
            pmx_testkit::skip("no libc6-dbg debug file for libc.so.6: not measured");
            return;
        };
        let Some(i) =
            (0..f.symbols().len()).find(|&i| f.symbols()[i].name == "__libc_start_call_main")
        else {
            pmx_testkit::skip("no __libc_start_call_main in libc's symbols");
            return;
        };
        let a = f.symbols()[i].start;
        let chain = f.inline_chain(a + 1, Demangle::Short);
        assert!(!chain.is_empty());
        assert!(
            f.lines.lock().unwrap().is_none(),
            "the whole-file context was made"
        );
        let units = f.units.lock().unwrap();
        let u = units.as_ref().unwrap().as_ref().unwrap();
        assert!(u.units.len() <= 2, "{} units read", u.units.len());
        if let Source::Zlib(p) = &u.info {
            assert!(!p.ended, "all of .debug_info was decompressed");
            assert!(
                p.shared.len() < p.size / 4,
                "{} of {}",
                p.shared.len(),
                p.size
            );
        }
    }
}
