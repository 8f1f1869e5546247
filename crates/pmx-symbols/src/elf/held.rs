//! What addr2line's DWARF state costs, for [`ElfFile::held_bytes`]: the
//! binary cache's bound counts what a binary really holds, not only its
//! symbol table.
//!
//! [`addr2line::Context`] parses every unit's header when it is made
//! (the unit, its line program's directory and file tables, its own copy
//! of its abbreviations, its address ranges): counted from the DWARF
//! before the context is made ([`Units::new`]). Then a lookup parses a
//! unit's line rows (a line) and its functions with their inlined calls
//! (inline frames): counted once per unit when first met, from the
//! unit's sizes ([`Units::lines_at`], [`Units::functions_of`]). The unit
//! of a line lookup is found by address in `.debug_aranges` (asking
//! addr2line for it would parse its functions too). `tests/line_memory.rs`
//! keeps the estimate within 1.5× of the heap a counting allocator sees.
//!
//! [`ElfFile::held_bytes`]: super::ElfFile::held_bytes

use super::{Dwarf, Reader};
use gimli::{Reader as _, Section as _};

/// A unit's lines were counted.
const LINES: u8 = 1;
/// A unit's functions were counted.
const FUNCTIONS: u8 = 2;

/// One unit of `.debug_info`.
struct Unit {
    offset: u64,
    /// Its line program's offset, when known (the n-th program of
    /// `.debug_line` is the n-th unit's when there are as many of each:
    /// the linker concatenates both sections in the same order).
    program: Option<usize>,
    /// [`LINES`], [`FUNCTIONS`].
    counted: u8,
}

/// The units of a binary's DWARF and what of them was counted.
pub(super) struct Units {
    debug_line: gimli::DebugLine<Reader>,
    /// By offset.
    units: Vec<Unit>,
    /// `.debug_aranges`, until read into `aranges` (none when the units
    /// and line programs could not be paired).
    debug_aranges: Option<gimli::DebugAranges<Reader>>,
    /// (start, end, index in `units`) by start.
    aranges: Vec<(u64, u64, u32)>,
}

impl Units {
    /// The units of `dwarf`, and the bytes addr2line's context holds
    /// once made from it (with this index's own): `ranges` is how many
    /// address ranges its units have (at least one each).
    pub(super) fn new(dwarf: &Dwarf, ranges: usize) -> (Units, usize) {
        let (mut offsets, mut abbrevs) = (Vec::new(), Vec::new());
        let mut headers = dwarf.units();
        while let Ok(Some(h)) = headers.next() {
            if let Some(o) = h.offset().as_debug_info_offset() {
                offsets.push(o.0 as u64);
            }
            abbrevs.push(h.debug_abbrev_offset().0 as u64);
        }
        let programs = line_programs(dwarf.debug_line.reader());
        let start = context_bytes(dwarf, &abbrevs, &programs, ranges);
        let paired = programs.len() == offsets.len();
        let mut units: Vec<Unit> = (offsets.iter().enumerate())
            .map(|(i, &offset)| Unit {
                offset,
                program: paired.then(|| programs[i].offset),
                counted: 0,
            })
            .collect();
        if !units.is_sorted_by_key(|u| u.offset) {
            units.sort_unstable_by_key(|u| u.offset);
        }
        let own = units.capacity() * std::mem::size_of::<Unit>();
        let units = Units {
            debug_line: dwarf.debug_line.clone(),
            debug_aranges: paired.then(|| dwarf.debug_aranges.clone()),
            units,
            aranges: Vec::new(),
        };
        (units, start + own)
    }

    /// Read `.debug_aranges` into [`Units::aranges`] (on the first line
    /// lookup): the bytes it takes.
    fn read_aranges(&mut self) -> usize {
        let Some(section) = self.debug_aranges.take() else {
            return 0;
        };
        let mut sets = section.headers();
        while let Ok(Some(set)) = sets.next() {
            let at = set.debug_info_offset().0 as u64;
            let Ok(i) = self.units.binary_search_by_key(&at, |u| u.offset) else {
                continue;
            };
            let mut entries = set.entries();
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if r.end > r.begin {
                    self.aranges.push((r.begin, r.end, i as u32));
                }
            }
        }
        if !self.aranges.is_sorted_by_key(|a| a.0) {
            self.aranges.sort_unstable_by_key(|a| a.0);
        }
        self.aranges.shrink_to_fit();
        self.aranges.capacity() * std::mem::size_of::<(u64, u64, u32)>()
    }

    /// The bytes a line lookup at `vaddr` made addr2line hold: its unit's
    /// rows and file names the first time (with `.debug_aranges` read on
    /// the first call), and whether `.debug_aranges` said which unit holds
    /// `vaddr` (when not, the caller finds it through addr2line).
    pub(super) fn lines_at(&mut self, vaddr: u64) -> (usize, bool) {
        let read = self.read_aranges();
        let i = self.aranges.partition_point(|a| a.0 <= vaddr);
        let Some(&(_, end, unit)) = i.checked_sub(1).and_then(|i| self.aranges.get(i)) else {
            return (read, false);
        };
        let Some(unit) = self.units.get_mut(unit as usize).filter(|_| vaddr < end) else {
            return (read, false);
        };
        if unit.counted & LINES != 0 {
            return (read, true);
        }
        unit.counted |= LINES;
        let program = (unit.program).and_then(|at| {
            (self.debug_line)
                .program(gimli::DebugLineOffset(at), 8, None, None)
                .ok()
        });
        (read + program.map_or(0, |p| lines_bytes(p.header())), true)
    }

    /// The bytes addr2line holds for `unit` once it looked a function up
    /// in it (its functions, and its lines, parsed on the way): what was
    /// not counted yet.
    pub(super) fn functions_of(&mut self, unit: &gimli::UnitRef<'_, Reader>) -> usize {
        let Some(offset) = unit.header.offset().as_debug_info_offset() else {
            return 0;
        };
        let Ok(i) = self
            .units
            .binary_search_by_key(&(offset.0 as u64), |u| u.offset)
        else {
            return 0;
        };
        let u = &mut self.units[i];
        let mut bytes = 0;
        if u.counted & LINES == 0 {
            bytes += unit
                .line_program
                .as_ref()
                .map_or(0, |p| lines_bytes(p.header()));
        }
        if u.counted & FUNCTIONS == 0 {
            bytes += unit.header.unit_length() / 100 * DIE_FACTOR_PERCENT;
        }
        u.counted |= LINES | FUNCTIONS;
        bytes
    }
}

/// What addr2line keeps of a unit's parsed line program: its rows (from
/// the program's length: [`LINE_PROGRAM_FACTOR`]) and file names.
fn lines_bytes(h: &gimli::LineProgramHeader<Reader>) -> usize {
    let program = h.unit_length().saturating_sub(h.header_length());
    program
        .saturating_mul(LINE_PROGRAM_FACTOR)
        .saturating_add(h.file_names().len() * FILE_NAME_BYTES)
}

/// Heap bytes of addr2line's parsed line rows per byte of a unit's line
/// program (a row is 24 bytes and takes about six bytes of program),
/// measured by `tests/line_memory.rs`: 3.8–5 with the file names.
const LINE_PROGRAM_FACTOR: usize = 4;
/// The same, in percent, for its functions per byte of a unit's DIEs:
/// their addresses, names and inlined calls. This one varies: 2.8–4.4 in
/// Rust debug builds (line tables only: nearly every DIE a function),
/// 0.2 in the C library's full DWARF (mostly types, of which addr2line
/// keeps nothing).
const DIE_FACTOR_PERCENT: usize = 150;
/// What a file name of a parsed line table costs (a `String` with its
/// directory joined), measured likewise.
const FILE_NAME_BYTES: usize = 24 + 96;

/// The capacity a `Vec` reaches when `n` elements are pushed one by one.
fn pushed(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4)
    }
}

/// Tables of each kind measured at most when addr2line's context is
/// counted ([`context_bytes`]): evenly spread, the rest scaled by size.
const SAMPLED: usize = 48;

/// The heap addr2line's context holds from the start ([`addr2line::Context`]
/// parses every unit when it is made): per unit its `gimli::Unit` with the
/// header of its line program (the directory and file tables) and its own
/// copy of its abbreviations, and the address ranges of all units
/// (`ranges`, at least one a unit). Of a binary with many units, the
/// file tables and abbreviations of [`SAMPLED`] are counted and the
/// others taken to cost as much per byte.
fn context_bytes(dwarf: &Dwarf, at: &[u64], programs: &[Program], ranges: usize) -> usize {
    // Per unit: the unit, addr2line's wrapper (lazy lines and functions,
    // split-DWARF state), the abbreviations' `Arc`.
    let unit = std::mem::size_of::<gimli::Unit<Reader>>() + 128 + 64;
    let units = at.len();
    // Every unit parses its own copy of its table; a table's size is up
    // to the next one.
    let abbrev_section = dwarf.debug_abbrev.reader();
    let mut tables = at.to_vec();
    tables.sort_unstable();
    tables.dedup();
    let end = abbrev_section.len() as u64;
    let size = |o: u64| {
        let i = tables.partition_point(|&x| x <= o);
        tables.get(i).copied().unwrap_or(end).saturating_sub(o)
    };
    let (mut cost, mut bytes) = (0usize, 0u64);
    for &o in tables.iter().step_by(tables.len().div_ceil(SAMPLED).max(1)) {
        cost += abbreviations_bytes(abbrev_section, o);
        bytes += size(o);
    }
    let parsed: u64 = at.iter().map(|&o| size(o)).sum();
    let abbrevs = scale(cost, bytes, parsed);
    // The line programs' headers, one per unit.
    let (mut cost, mut bytes) = (0usize, 0u64);
    for &Program { offset, header, .. } in programs
        .iter()
        .step_by(programs.len().div_ceil(SAMPLED).max(1))
    {
        let Ok(p) = dwarf
            .debug_line
            .program(gimli::DebugLineOffset(offset), 8, None, None)
        else {
            continue;
        };
        let h = p.header();
        cost += pushed(h.file_names().len()) * std::mem::size_of::<gimli::FileEntry<Reader>>()
            + pushed(h.include_directories().len())
                * std::mem::size_of::<gimli::AttributeValue<Reader>>()
            + 4 * (h.file_name_entry_format().len() + h.directory_entry_format().len());
        bytes += header as u64;
    }
    let all: u64 = programs.iter().map(|p| p.header as u64).sum();
    let files = scale(cost, bytes, all);
    // addr2line's unit ranges: 32 bytes each.
    (units * unit)
        .saturating_add(abbrevs)
        .saturating_add(files)
        .saturating_add(32 * ranges.max(units))
}

/// `cost` measured over `bytes`, scaled to `all` bytes.
fn scale(cost: usize, bytes: u64, all: u64) -> usize {
    if bytes == 0 {
        return 0;
    }
    let scaled = cost as u128 * u128::from(all) / u128::from(bytes);
    usize::try_from(scaled).unwrap_or(usize::MAX)
}

/// The heap one unit's abbreviations take once parsed (`gimli::
/// Abbreviations`: a vector of abbreviations numbered from 1, a map of
/// the others, attribute lists of more than 5 on the heap), from the
/// table at `offset` in `.debug_abbrev`.
fn abbreviations_bytes(section: &Reader, offset: u64) -> usize {
    let mut r = section.clone();
    let (mut in_vec, mut in_map, mut spilled) = (0usize, 0usize, 0usize);
    let mut walk = || -> Option<()> {
        r.skip(usize::try_from(offset).ok()?).ok()?;
        loop {
            let code = r.read_uleb128().ok()?;
            if code == 0 {
                return Some(());
            }
            r.read_uleb128().ok()?;
            r.read_u8().ok()?;
            let mut attrs = 0usize;
            loop {
                let (name, form) = (r.read_uleb128().ok()?, r.read_uleb128().ok()?);
                if name == 0 && form == 0 {
                    break;
                }
                if form == u64::from(gimli::DW_FORM_implicit_const.0) {
                    r.read_sleb128().ok()?;
                }
                attrs += 1;
            }
            if code == in_vec as u64 + 1 {
                in_vec += 1;
            } else {
                in_map += 1;
            }
            if attrs > 5 {
                // Five inline, then a vector of 10 doubling.
                let mut cap = 10;
                while cap < attrs {
                    cap *= 2;
                }
                spilled += cap;
            }
        }
    };
    walk();
    let one = std::mem::size_of::<gimli::Abbreviation>();
    pushed(in_vec) * one + in_map * (one + 8) * 3 / 2 + spilled * 16
}

/// A line program in `.debug_line`: where it starts and the length of
/// its header.
#[derive(Clone, Copy)]
struct Program {
    offset: usize,
    header: usize,
}

/// The line programs in `.debug_line`, in order.
fn line_programs(section: &Reader) -> Vec<Program> {
    let mut r = section.clone();
    let mut programs = Vec::new();
    let mut at = 0usize;
    while let Ok(len) = r.read_u32() {
        let (len, size, wide) = if len == 0xffff_ffff {
            let Ok(l) = r.read_u64() else { break };
            (l, 12, true)
        } else {
            (u64::from(len), 4, false)
        };
        let Ok(len) = usize::try_from(len) else { break };
        let Ok(mut unit) = r.split(len) else { break };
        let header = (|| -> Option<usize> {
            if unit.read_u16().ok()? >= 5 {
                unit.skip(2).ok()?;
            }
            if wide {
                usize::try_from(unit.read_u64().ok()?).ok()
            } else {
                Some(unit.read_u32().ok()? as usize)
            }
        })();
        programs.push(Program {
            offset: at,
            header: header.unwrap_or(0).min(len),
        });
        at = at.saturating_add(size + len);
    }
    programs
}

/// What addr2line holds of one unit's functions once a lookup parsed
/// them (from the unit's length in `.debug_info`).
pub(super) fn unit_functions_bytes(length: u64) -> usize {
    usize::try_from(length / 100).unwrap_or(usize::MAX / 200) * DIE_FACTOR_PERCENT
}

/// What addr2line holds of a line program's rows once parsed.
pub(super) fn program_rows_bytes(h: &gimli::LineProgramHeader<Reader>) -> usize {
    lines_bytes(h)
}

/// The heap a context over one unit holds once made
/// ([`super::lazy`]): as [`context_bytes`] for that unit, its line
/// program at `stmt`, with the sections' table and the unit's own copy of
/// its `.debug_aranges` sets (`aranges` bytes).
pub(super) fn one_unit_bytes(
    dwarf: &Dwarf,
    abbrev: u64,
    stmt: Option<usize>,
    aranges: usize,
) -> usize {
    let programs: Vec<Program> = stmt
        .and_then(|s| {
            let p = dwarf
                .debug_line
                .program(gimli::DebugLineOffset(s), 8, None, None)
                .ok()?;
            Some(Program {
                offset: s,
                header: p.header().header_length(),
            })
        })
        .into_iter()
        .collect();
    context_bytes(dwarf, &[abbrev], &programs, 1)
        + std::mem::size_of::<gimli::Dwarf<Reader>>()
        + 128
        + aranges
}
