//! The branch stack fields of `pmx script`: `brstack` (perf script's
//! `0xFROM/0xTO/P/-/-/CYCLES/TYPE` per branch) and `brstacksym` (the
//! same by `function+0xOFF`, `[unknown]` where no symbol covers an end),
//! `brstackoff` (each end as perf 6.1 shows it: the offset in its binary's
//! file, or the address itself once perf would have loaded that binary's
//! symbols — it has for the binary of any sample's address, and for any
//! binary a symbol was looked up in), `brcntr` (pmx's own: perf 6.1 has
//! no such field), and the `brstack` array of the JSON lines. [`Code`]
//! reads the binaries' code for `brstackinsn` (`super::insn`).

use super::fields::{Field, Fields};
use super::ScriptOptions;
use pmx_perfdata::branch::{branch_type, BranchFlags};
use pmx_symbols::symbolize::{DsoId, FrameId, FrameName, Symbolizer};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// A branch type's name as `perf script` prints it: pmx-perfdata's
/// table (perf 6.1's names), but nothing for an unknown type and, for
/// 15 (`EXTEND_ABI`), for which perf 6.1 has no name, C's `(null)`.
fn type_name(kind: u8) -> &'static str {
    match kind & 15 {
        branch_type::UNKNOWN => "",
        branch_type::EXTEND_ABI => "(null)",
        k => branch_type::NAMES[usize::from(k)],
    }
}

/// `/P/-/-/CYCLES/TYPE `: the flags as perf script prints them.
fn flags(b: &mut Vec<u8>, f: BranchFlags) {
    let pred = match (f.predicted(), f.mispred()) {
        (true, _) => 'P',
        (false, true) => 'M',
        _ => '-',
    };
    let tx = if f.in_tx() { 'X' } else { '-' };
    let abort = if f.abort() { 'A' } else { '-' };
    let kind = type_name(f.kind());
    let _ = write!(b, "/{pred}/{tx}/{abort}/{}/{kind} ", f.cycles());
}

/// An end by its function: `name+0xOFF`, or `[unknown]`; `space` is
/// the address in the frame's symbol space.
fn symbol(b: &mut Vec<u8>, (frame, space): (FrameId, u64), sym: &Symbolizer) {
    match (&sym.frame(frame).name, sym.frame_start(frame)) {
        (FrameName::Symbol(s), Some(start)) => {
            let _ = write!(b, "{s}+{:#x}", space.saturating_sub(start));
        }
        _ => b.extend_from_slice(b"[unknown]"),
    }
}

/// The text fields of one sample: `raw` its (from, to, flags) triples,
/// `ends` each end resolved (frame, address in its symbol space; with
/// `brstacksym`).
pub(crate) fn text(
    b: &mut Vec<u8>,
    f: Fields,
    raw: &[u64],
    ends: &[(FrameId, u64)],
    sym: &Symbolizer,
) {
    if f.has(Field::Brstack) {
        for e in raw.chunks_exact(3) {
            let _ = write!(b, " {:#x}/{:#x}", e[0], e[1]);
            flags(b, BranchFlags(e[2]));
        }
    }
    if f.has(Field::Brstacksym) {
        for (e, ends) in raw.chunks_exact(3).zip(ends.chunks_exact(2)) {
            symbol(b, ends[0], sym);
            b.push(b'/');
            symbol(b, ends[1], sym);
            flags(b, BranchFlags(e[2]));
        }
    }
}

/// `,"brstack":[{"from":…,"to":…,"mispred":…,…},…]`.
pub(crate) fn json(b: &mut Vec<u8>, raw: &[u64]) {
    if b.last() != Some(&b'{') {
        b.push(b',');
    }
    b.extend_from_slice(b"\"brstack\":[");
    for (i, e) in raw.chunks_exact(3).enumerate() {
        let f = BranchFlags(e[2]);
        if i > 0 {
            b.push(b',');
        }
        let _ = write!(
            b,
            "{{\"from\":{},\"to\":{},\"mispred\":{},\"predicted\":{},\"in_tx\":{},\"abort\":{},\"cycles\":{},\"type\":{}}}",
            e[0],
            e[1],
            f.mispred(),
            f.predicted(),
            f.in_tx(),
            f.abort(),
            f.cycles(),
            f.kind()
        );
    }
    b.push(b']');
}

/// The binaries as files (opened once each) and which of them perf would
/// have loaded symbols of (its `adjust_symbols`: their branch ends are
/// shown as addresses in `brstackoff`).
pub(crate) struct Code {
    files: HashMap<DsoId, Option<std::fs::File>>,
    loaded: HashSet<DsoId>,
    /// The kernel's maps as the file recorded them: (start, end), sorted.
    kernel_maps: Vec<(u64, u64)>,
    symfs: Option<PathBuf>,
    buildid: PathBuf,
}

impl Code {
    pub(crate) fn new(opts: &ScriptOptions) -> Code {
        Code {
            files: HashMap::default(),
            loaded: HashSet::default(),
            kernel_maps: Vec::new(),
            symfs: opts.symfs.clone(),
            buildid: opts.symbols.dirs.buildid.clone(),
        }
    }

    /// A user frame was resolved: its binary's symbols are loaded when
    /// they could be read.
    pub(crate) fn loaded(&mut self, sym: &Symbolizer, frame: FrameId) {
        let d = sym.frame(frame).dso;
        // perf loads no `[vdso]`-like image of another machine's.
        let image = sym.dso(d).path.starts_with('[');
        if !image && !self.loaded.contains(&d) && !sym.unnamed().iter().any(|(u, _)| *u == d) {
            self.loaded.insert(d);
        }
    }

    /// A kernel map (the kernel's text or a module) of the file.
    pub(crate) fn kernel_map(&mut self, start: u64, len: u64) {
        let at = self.kernel_maps.partition_point(|m| m.0 <= start);
        (self.kernel_maps).insert(at, (start, start.saturating_add(len)));
    }

    /// A branch end of a sample in `kernel` mode as `brstackoff` shows
    /// it: found in the maps of the sample's mode, else (when the address
    /// is of the other mode) in the other's, as perf's
    /// `thread__find_map_fb`; in a user binary whose symbols perf would
    /// not have loaded, its file offset; in a kernel map, its distance
    /// from the map's start (perf's kernel maps ignore the recorded
    /// offset); else the address.
    pub(crate) fn offset(&self, sym: &Symbolizer, pid: u32, kernel: bool, a: u64) -> u64 {
        let in_kernel = || {
            let i = self.kernel_maps.partition_point(|m| m.0 <= a);
            let m = self.kernel_maps[i.checked_sub(1)?];
            (a < m.1).then(|| a - m.0)
        };
        let in_user = || match sym.mapping(pid, a)? {
            (start, _, pgoff, dso) if !self.loaded.contains(&dso) => {
                Some((a - start).wrapping_add(pgoff))
            }
            _ => Some(a),
        };
        let high = a >= 1 << 63;
        let found = if kernel {
            in_kernel().or_else(|| if high { None } else { in_user() })
        } else {
            in_user().or_else(|| if high { in_kernel() } else { None })
        };
        found.unwrap_or(a)
    }

    /// Up to `len` bytes of the file mapped at `addr` in process `pid`.
    pub(crate) fn read(
        &mut self,
        sym: &Symbolizer,
        pid: u32,
        addr: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        let Some((start, _, pgoff, dso)) = sym.mapping(pid, addr) else {
            return;
        };
        let (symfs, buildid) = (&self.symfs, &self.buildid);
        let file = self.files.entry(dso).or_insert_with(|| {
            let d = sym.dso(dso);
            if d.path.starts_with('[') || d.path.starts_with("//") {
                return None;
            }
            let path = match symfs {
                Some(r) => r.join(d.path.trim_start_matches('/')),
                None => PathBuf::from(&d.path),
            };
            let path =
                pmx_symbols::buildid_cache::resolve(buildid, &path, d.expected_build_id.as_deref());
            std::fs::File::open(path).ok()
        });
        let Some(file) = file else { return };
        out.resize(len.min(1 << 16) as usize, 0);
        let mut got = 0;
        let at = (addr - start).wrapping_add(pgoff);
        while got < out.len() {
            match file.read_at(&mut out[got..], at + got as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        out.truncate(got);
    }
}

/// One `brstackoff` entry: ` 0xFROM/0xTO` and the flags.
pub(crate) fn offsets(b: &mut Vec<u8>, from: u64, to: u64, f: u64) {
    let _ = write!(b, " {from:#x}/{to:#x}");
    flags(b, BranchFlags(f));
}

/// `brcntr`: per branch ` 0xFROM/0xTO/C0:C1:C2:C3`, the counter word
/// split as Intel's LBR event logging fills it (two bits per counter,
/// the group's first four events in order, 3 meaning three or more).
pub(crate) fn counters(b: &mut Vec<u8>, raw: &[u64], cntr: &[u64]) {
    for (e, c) in raw.chunks_exact(3).zip(cntr) {
        let _ = write!(b, " {:#x}/{:#x}/", e[0], e[1]);
        for k in 0..4 {
            if k > 0 {
                b.push(b':');
            }
            let _ = write!(b, "{}", (c >> (2 * k)) & 3);
        }
    }
}
