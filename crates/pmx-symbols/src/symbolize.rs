//! Addresses → frames: process maps from MMAP/MMAP2 records, ELF symbols
//! of the mapped files, kernel symbols from kallsyms, with a cache per
//! (binary, file offset) and per kernel address; a data address by
//! the object holding it ([`Symbolizer::data_object`], over each binary's
//! data table, [`crate::elf::data`]).
//!
//! Two kinds of user code have no file to read:
//!
//! - **JIT code** (Java, Node.js, .NET, LuaJIT…) lives in anonymous
//!   executable mappings. The runtime describes it in `/tmp/perf-PID.map`
//!   (perf's JIT interface: one `START SIZE name` line per function, START
//!   and SIZE in hex with or without `0x`, later lines winning where code
//!   was reused). An address of process PID in an anonymous mapping (or in
//!   no mapping) is looked up there; its DSO is shown as `[JIT] tid PID`
//!   (its path `/tmp/perf-PID.map`), as perf does.
//! - **The vDSO** (`[vdso]`) is an ELF image the kernel maps into every
//!   process. When the recording was made on the running kernel (see
//!   [`Symbolizer::allow_running_vdso`]; a recorded `[vdso]` build-id must
//!   match), it is read from this process's memory once and resolved like
//!   a file.

use crate::elf::cache::FileId;
use crate::elf::ElfFile;
use crate::kernel::Kallsyms;
use crate::SymbolOptions;
pub use pmx_perfdata::MappedInode;
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod data;
mod load;
mod slots;

pub use data::{DataObject, PerfDataSymbol};

/// Entries each per-address cache (user, kernel, inlined frames) holds
/// at most. The user and kernel caches grow to this many slots at most
/// (from 4,096, as their addresses need), an address taking the place
/// of the one before it in its slot (`slots`); the
/// inlined frames' cache is emptied when full. Either way the frames
/// stay interned: a lookup of an address no longer cached costs one
/// search of the binary's table.
pub const MAX_CACHED_ADDRESSES: usize = 1 << CACHE_BITS;
const CACHE_BITS: u32 = 18;
/// How often a process's `perf-PID.map` is looked at again (for growth,
/// or for a map that was missing).
const JIT_RECHECK: Duration = Duration::from_millis(500);

/// A binary's key: its path and the (major, minor, inode) of its MMAP2
/// record, when it had one.
type DsoKey = (Vec<u8>, Option<(u32, u32, u64)>);

/// Index of a binary (DSO) in a [`Symbolizer`].
pub type DsoId = u32;
/// Index of a frame (a resolved symbol, or an unresolved address) in a [`Symbolizer`].
pub type FrameId = u32;

/// The kernel image's DSO id.
pub const KERNEL_DSO: DsoId = 0;
/// The DSO id of addresses no mapping covers.
pub const UNKNOWN_DSO: DsoId = 1;

/// A binary seen in the maps.
#[derive(Debug)]
pub struct Dso {
    /// Path as recorded (`/usr/lib/x86_64-linux-gnu/libc.so.6`, `[vdso]`,
    /// `[kernel.kallsyms]`, a module name in brackets).
    pub path: String,
    /// What perf shows in its Shared Object column: the file's base name.
    pub short: String,
    /// Build-id the recording saw, if any.
    pub expected_build_id: Option<Vec<u8>>,
    /// The device and inode an MMAP2 record saw mapped at `path`, if any:
    /// binaries of the same path and other inodes (a program rebuilt
    /// between two runs) are distinct, as in perf.
    pub inode: Option<MappedInode>,
    elf: Option<Arc<ElfFile>>,
    /// The file read for `elf`.
    file: Option<FileId>,
    /// The `/proc/PID/map_files/START-END` link read for `elf`, when the
    /// path no longer leads to the mapped file (deleted or replaced).
    mapped: Option<PathBuf>,
    tried: bool,
}

/// What a frame is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FrameName {
    /// A symbol (demangled name).
    Symbol(String),
    /// An address that no symbol covers: the ELF virtual address (or file
    /// offset) for user code, the raw address for the kernel.
    Address(u64),
}

/// A frame: which binary, which symbol, kernel or user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The binary.
    pub dso: DsoId,
    /// The symbol or address.
    pub name: FrameName,
    /// Kernel code.
    pub kernel: bool,
}

impl Frame {
    /// The symbol's name, or the address in hex (`0x…`, 16 digits), as perf shows it.
    pub fn label(&self) -> String {
        match &self.name {
            FrameName::Symbol(s) => s.clone(),
            // C's `%#018llx`, as perf prints it: no `0x` for zero.
            FrameName::Address(0) => "0000000000000000".to_string(),
            FrameName::Address(a) => format!("{a:#018x}"),
        }
    }
}

/// Whether a frame label is an unresolved address (`0x` and hex digits,
/// as [`Frame::label`] writes one), which no C, C++ or Rust name can be.
pub fn is_address(label: &str) -> bool {
    label == "0000000000000000"
        || label
            .strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A mapping of a process: `[start, end)` maps file offset `pgoff` of `dso`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Map {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The binary.
    pub dso: DsoId,
}

#[derive(Hash, PartialEq, Eq)]
enum FrameKey {
    Sym(DsoId, usize),
    Addr(DsoId, u64),
    /// An inlined function by its binary, the function it is inlined
    /// into and its name: one frame (one row) per outer function, as
    /// perf's inlined symbols span their outer function.
    Inline(DsoId, FrameId, String),
    /// A JIT map's function: its start and name (the map's lines are
    /// read again when it grows, so no index into them).
    Jit(DsoId, u64, String),
    /// An unnamed address of a mapped binary by its absolute address (a
    /// frame of perf's call chains: [`Symbolizer::chain_frame`]).
    Abs(DsoId, u64),
}

/// How much per-process and per-address state a [`Symbolizer`] holds
/// (what its memory grows with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SymbolizerStats {
    /// Processes with maps.
    pub processes: usize,
    /// Processes whose `perf-PID.map` was looked up.
    pub jit_maps: usize,
    /// Entries of the per-address caches.
    pub cached_addresses: usize,
    /// Binaries whose tables this symbolizer holds.
    pub binaries: usize,
    /// Binaries seen (paths).
    pub dsos: usize,
    /// Frames interned.
    pub frames: usize,
}

/// The symbolizer: maps per process, binaries, kernel symbols and caches.
pub struct Symbolizer {
    dsos: Vec<Dso>,
    /// Binaries by path and, when an MMAP2 record gave one, inode.
    dso_by_path: HashMap<DsoKey, DsoId>,
    maps: HashMap<u32, Vec<Map>>,
    frames: Vec<Frame>,
    /// Symbol start per frame (`u64::MAX`: an address frame).
    starts: Vec<u64>,
    frame_ids: HashMap<FrameKey, FrameId>,
    /// Frames by (binary, file offset); a JIT map's by (binary, address).
    cache: slots::AddressCache,
    kernel_cache: slots::AddressCache,
    kallsyms: Kallsyms,
    module_dsos: HashMap<String, DsoId>,
    build_ids: HashMap<String, Vec<u8>>,
    root: Option<PathBuf>,
    warnings: Vec<String>,
    /// Binaries whose symbols could not be read: (binary, why).
    unnamed: Vec<(DsoId, String)>,
    defer_kernel: bool,
    provisional: Vec<(FrameId, u64)>,
    jit_dir: PathBuf,
    jit_maps: HashMap<u32, JitState>,
    vdso_here: bool,
    /// The recording was made on this machine: a recorded inode may be
    /// compared with the file at its path.
    here: bool,
    inline_cache: HashMap<(DsoId, u64), Box<[FrameId]>>,
    /// Each inlined function's frame: the frame it is inlined into.
    inlined_into: HashMap<FrameId, FrameId>,
    /// Processes forgotten since the binaries were last released.
    forgotten: usize,
    /// The demangling style, the directories, the binary cache.
    options: SymbolOptions,
}

/// A process's `perf-PID.map` as last read: its functions (none when
/// missing), which file (size, modification time) and when it was looked at.
struct JitState {
    map: Option<JitMap>,
    stamp: Option<(u64, i64, i64)>,
    checked: Instant,
}

/// The functions of one `/tmp/perf-PID.map`.
struct JitMap {
    dso: DsoId,
    /// (start, end, line number, name), sorted by start then line.
    entries: Vec<(u64, u64, usize, String)>,
    /// The longest entry, to bound the backward scan of a lookup.
    max_len: u64,
}

impl JitMap {
    /// Parse perf-PID.map text: `START SIZE name` lines, START and SIZE in
    /// hex (with or without `0x`), the name the rest of the line. Returns
    /// the map and the number of lines that could not be parsed.
    fn parse(text: &str, dso: DsoId) -> (JitMap, usize) {
        let hex = |t: &str| {
            let t = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u64::from_str_radix(t, 16).ok()
        };
        let mut entries = Vec::new();
        let mut bad = 0;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let fields = line.trim().split_once([' ', '\t']).and_then(|(a, rest)| {
                let (b, name) = rest.trim_start().split_once([' ', '\t'])?;
                Some((hex(a)?, hex(b)?, name.trim()))
            });
            let parsed = match fields {
                Some((start, size, name)) if size > 0 && !name.is_empty() => {
                    start.checked_add(size).map(|end| (start, end, name))
                }
                _ => None,
            };
            match parsed {
                Some((start, end, name)) => entries.push((start, end, n, name.to_string())),
                None => bad += 1,
            }
        }
        entries.sort_by_key(|e| (e.0, e.2));
        let max_len = entries.iter().map(|e| e.1 - e.0).max().unwrap_or(0);
        (
            JitMap {
                dso,
                entries,
                max_len,
            },
            bad,
        )
    }

    /// The entry covering `addr`: of several, the one written last.
    fn lookup(&self, addr: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.0 <= addr);
        let mut best: Option<usize> = None;
        for j in (0..i).rev() {
            let e = &self.entries[j];
            if addr - e.0 >= self.max_len {
                break;
            }
            if addr < e.1 && best.is_none_or(|b| self.entries[b].2 < e.2) {
                best = Some(j);
            }
        }
        best
    }
}

/// Whether a mapping's path is anonymous memory (where JIT code lives),
/// as perf decides it.
fn is_anon(path: &str) -> bool {
    path.is_empty()
        || path == "//anon"
        || path.starts_with("[anon")
        || path == "/dev/zero"
        || path.starts_with("/dev/zero ")
        || path == "/anon_hugepage"
        || path.starts_with("/anon_hugepage ")
        || path.starts_with("/memfd:")
}

impl Symbolizer {
    /// A symbolizer with these kernel symbols (empty: kernel addresses stay
    /// unresolved), the recorded build-ids by file name, and an optional
    /// root directory under which recorded paths are looked up (perf's
    /// --symfs); names are shown, and binaries read, as `options` say.
    pub fn new(
        kallsyms: Kallsyms,
        build_ids: HashMap<String, Vec<u8>>,
        root: Option<PathBuf>,
        options: &SymbolOptions,
    ) -> Self {
        let mut s = Symbolizer {
            dsos: Vec::new(),
            dso_by_path: HashMap::default(),
            maps: HashMap::default(),
            frames: Vec::new(),
            starts: Vec::new(),
            frame_ids: HashMap::default(),
            cache: slots::AddressCache::new(CACHE_BITS),
            kernel_cache: slots::AddressCache::new(CACHE_BITS),
            kallsyms,
            module_dsos: HashMap::default(),
            build_ids,
            root,
            warnings: Vec::new(),
            unnamed: Vec::new(),
            defer_kernel: false,
            provisional: Vec::new(),
            jit_dir: PathBuf::from("/tmp"),
            jit_maps: HashMap::default(),
            vdso_here: false,
            here: false,
            inline_cache: HashMap::default(),
            inlined_into: HashMap::default(),
            forgotten: 0,
            options: options.clone(),
        };
        s.add_dso(b"[kernel.kallsyms]");
        s.add_dso(b"[unknown]");
        s
    }

    /// A symbolizer for the recording `reader` reads: the build-ids of its
    /// header, binaries looked up under `root` (perf's `--symfs`), no
    /// kernel symbols yet; `here`: the file was recorded on the running
    /// kernel ([`Symbolizer::allow_running_vdso`]).
    pub fn for_reader(
        reader: &pmx_perfdata::Reader,
        here: bool,
        root: Option<PathBuf>,
        options: &SymbolOptions,
    ) -> Self {
        let build_ids = (reader.features().build_ids.iter())
            .map(|b| (b.filename.clone(), b.build_id.clone()))
            .collect();
        let mut s = Symbolizer::new(Kallsyms::default(), build_ids, root, options);
        s.allow_running_vdso(here);
        s
    }

    /// Resolve kernel addresses later: [`Symbolizer::kernel_frame`] gives a
    /// provisional frame per address until [`Symbolizer::resolve_deferred`]
    /// (so the kernel symbols can be loaded meanwhile, and pipe mode can
    /// learn where the file was recorded).
    pub fn defer_kernel(&mut self) {
        self.defer_kernel = true;
    }

    /// Whether kernel addresses wait for [`Symbolizer::resolve_deferred`].
    pub fn has_deferred(&self) -> bool {
        !self.provisional.is_empty()
    }

    /// Resolve the provisional kernel frames with `kallsyms`; returns, for
    /// every frame id so far, the id to use instead (itself for all but
    /// the provisional frames).
    pub fn resolve_deferred(&mut self, kallsyms: Kallsyms) -> Vec<FrameId> {
        self.kallsyms = kallsyms;
        self.defer_kernel = false;
        self.kernel_cache.clear();
        let mut remap: Vec<FrameId> = (0..self.frames.len() as FrameId).collect();
        for (fid, addr) in std::mem::take(&mut self.provisional) {
            remap[fid as usize] = self.kernel_frame(addr);
        }
        remap
    }

    /// Resolve `[vdso]` addresses with the running kernel's vDSO when the
    /// recording was made on this kernel (`here`; then too a binary's
    /// inode in the recording is compared with the file at its path, see
    /// [`Symbolizer::add_mapping`]). A `[vdso]` build-id in
    /// the recording is checked either way: when it matches the running
    /// vDSO's, the image is used even if `here` is false.
    pub fn allow_running_vdso(&mut self, here: bool) {
        self.vdso_here = here;
        self.here = here;
    }

    /// Look JIT maps (`perf-PID.map`) up in this directory instead of `/tmp`.
    pub fn set_jit_dir(&mut self, dir: PathBuf) {
        self.jit_dir = dir;
        self.jit_maps.clear();
    }

    /// Warnings so far (unreadable JIT maps, the vDSO), and one per
    /// binary whose symbols could not be read ([`Symbolizer::unnamed`]).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        out.extend(self.unnamed.iter().map(|(d, why)| {
            format!(
                "{}: {why}: its addresses are left unresolved",
                self.dsos[*d as usize].path
            )
        }));
        out
    }

    /// The binaries a lookup needed whose symbols could not be read, and
    /// why: not on disk (under `--symfs`), a different build than the
    /// recording's, not readable as ELF.
    pub fn unnamed(&self) -> &[(DsoId, String)] {
        &self.unnamed
    }

    /// General warnings alone (without [`Symbolizer::unnamed`]'s).
    pub fn other_warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The binary with this id.
    pub fn dso(&self, id: DsoId) -> &Dso {
        &self.dsos[id as usize]
    }

    /// The frame with this id.
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id as usize]
    }

    /// The mapping of process `pid` covering `addr`: (start, end, file
    /// offset at start, binary).
    pub fn mapping(&self, pid: u32, addr: u64) -> Option<(u64, u64, u64, DsoId)> {
        let maps = self.maps.get(&pid)?;
        let i = maps.partition_point(|m| m.start <= addr);
        let m = maps.get(i.checked_sub(1)?).filter(|m| addr < m.end)?;
        Some((m.start, m.end, m.pgoff, m.dso))
    }

    fn add_dso(&mut self, path: &[u8]) -> DsoId {
        self.add_dso_of(path, None)
    }

    fn add_dso_of(&mut self, path: &[u8], inode: Option<MappedInode>) -> DsoId {
        let key = (path.to_vec(), inode.map(|i| (i.maj, i.min, i.ino)));
        if let Some(&id) = self.dso_by_path.get(&key) {
            return id;
        }
        let p = String::from_utf8_lossy(path).into_owned();
        let short = if p.starts_with('[') {
            p.clone()
        } else {
            p.rsplit('/').next().unwrap_or(&p).to_string()
        };
        let id = self.dsos.len() as DsoId;
        let expected_build_id = self.build_ids.get(&p).cloned();
        self.dsos.push(Dso {
            path: p,
            short,
            expected_build_id,
            inode,
            elf: None,
            file: None,
            mapped: None,
            tried: false,
        });
        self.dso_by_path.insert(key, id);
        id
    }

    /// Record a build-id seen in an MMAP2 record for a file.
    pub fn set_build_id(&mut self, path: &[u8], build_id: &[u8]) {
        let id = self.add_dso(path);
        self.dsos[id as usize].expected_build_id = Some(build_id.to_vec());
    }

    /// Record a build-id a pipe's build-id feature lists for a file:
    /// the binaries of that path not read yet (of any inode), and those
    /// seen later, expect it.
    pub fn set_path_build_id(&mut self, path: &[u8], build_id: &[u8]) {
        self.set_build_id(path, build_id);
        let name = String::from_utf8_lossy(path).into_owned();
        self.build_ids.insert(name, build_id.to_vec());
        for d in &mut self.dsos {
            if !d.tried && d.inode.is_some() && d.path.as_bytes() == path {
                d.expected_build_id = Some(build_id.to_vec());
            }
        }
    }

    /// A user mapping (MMAP/MMAP2) of process `pid`. Parts of older maps
    /// it overlaps are removed.
    pub fn add_map(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &[u8]) {
        self.add_mapping(pid, start, len, pgoff, path, None);
    }

    /// [`Symbolizer::add_map`] with the device and inode of an MMAP2
    /// record. When the recording was made here and the file at `path`
    /// is another inode now (a program rebuilt or a package upgraded
    /// since it was mapped), the mapped file is read through
    /// `/proc/PID/map_files/` while the process lives (root); otherwise
    /// its addresses are left unresolved with a warning, unless the
    /// recording's build id says the file on disk is the same build.
    /// An inode of 0 says nothing.
    pub fn add_mapping(
        &mut self,
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &[u8],
        inode: Option<MappedInode>,
    ) {
        // Inode 0 is no file's: a record that does not say (hand-made).
        let inode = inode.filter(|i| i.ino != 0);
        let dso = self.add_dso_of(path, inode);
        let end = start.saturating_add(len);
        let maps = self.maps.entry(pid).or_default();
        let mut out = Vec::with_capacity(maps.len() + 2);
        for m in maps.drain(..) {
            if m.end <= start || m.start >= end {
                out.push(m);
                continue;
            }
            if m.start < start {
                out.push(Map { end: start, ..m });
            }
            if m.end > end {
                out.push(Map {
                    start: end,
                    pgoff: m.pgoff.wrapping_add(end - m.start),
                    ..m
                });
            }
        }
        out.push(Map {
            start,
            end,
            pgoff,
            dso,
        });
        out.sort_by_key(|m| m.start);
        *maps = out;
    }

    /// A new process `pid` forked from `parent`: it starts with the
    /// parent's maps.
    pub fn fork(&mut self, parent: u32, pid: u32) {
        if parent == pid {
            return;
        }
        let maps = self.maps.get(&parent).cloned().unwrap_or_default();
        self.maps.insert(pid, maps);
    }

    /// Process `pid` has exited: its maps and JIT map are forgotten (the
    /// frames already made keep their names). Every 64 processes, the
    /// binaries no process maps any more are let go (see
    /// [`Symbolizer::release_unmapped`]).
    pub fn forget_process(&mut self, pid: u32) {
        if self.maps.remove(&pid).is_some() {
            self.forgotten += 1;
        }
        self.jit_maps.remove(&pid);
        if self.forgotten >= 64 {
            self.release_unmapped();
        }
    }

    /// Let go of the tables of binaries no process maps now (they stay
    /// in the process-wide cache until evicted); a later mapping of the
    /// same path is a new binary, read again (from the cache when it is
    /// the same file). Returns how many were let go.
    pub fn release_unmapped(&mut self) -> usize {
        self.forgotten = 0;
        let mut mapped = vec![false; self.dsos.len()];
        for m in self.maps.values().flatten() {
            mapped[m.dso as usize] = true;
        }
        let mut released = 0;
        for (i, d) in self.dsos.iter_mut().enumerate() {
            if mapped[i] || d.elf.is_none() || d.path == "[vdso]" {
                continue;
            }
            if let Some(elf) = d.elf.take() {
                elf.save_table();
            }
            // `tried` stays set: this id is not read again; the path
            // names a new binary from now on.
            let key = (
                d.path.as_bytes().to_vec(),
                d.inode.map(|i| (i.maj, i.min, i.ino)),
            );
            if self.dso_by_path.get(&key) == Some(&(i as DsoId)) {
                self.dso_by_path.remove(&key);
            }
            released += 1;
        }
        released
    }

    /// How much state this symbolizer holds now.
    pub fn stats(&self) -> SymbolizerStats {
        SymbolizerStats {
            processes: self.maps.len(),
            jit_maps: self.jit_maps.len(),
            cached_addresses: self.cache.len() + self.kernel_cache.len() + self.inline_cache.len(),
            binaries: self.dsos.iter().filter(|d| d.elf.is_some()).count(),
            dsos: self.dsos.len(),
            frames: self.frames.len(),
        }
    }

    /// The frame of a user address in process `pid`.
    pub fn user_frame(&mut self, pid: u32, addr: u64) -> FrameId {
        let map = self.maps.get(&pid).and_then(|maps| {
            let i = maps.partition_point(|m| m.start <= addr);
            (i > 0 && addr < maps[i - 1].end).then(|| maps[i - 1])
        });
        if map.is_none_or(|m| is_anon(&self.dsos[m.dso as usize].path)) {
            if let Some(f) = self.jit_frame(pid, addr) {
                return f;
            }
        }
        let Some(m) = map else {
            return self.intern(FrameKey::Addr(UNKNOWN_DSO, addr), || Frame {
                dso: UNKNOWN_DSO,
                name: FrameName::Address(addr),
                kernel: false,
            });
        };
        let offset = (addr - m.start).wrapping_add(m.pgoff);
        if let Some(f) = self.cache.get(m.dso, offset) {
            return f;
        }
        self.load(m.dso, Some((pid, addr)));
        let f = self.resolve_in_dso(m.dso, offset);
        self.cache.insert(m.dso, offset, f);
        f
    }

    /// The frame of a user call-chain address as perf's call chains name
    /// it: [`Symbolizer::user_frame`]'s, but an address no symbol covers
    /// in a mapped binary is its own frame by its absolute address (perf
    /// prints a chain's unnamed frames as the address the process ran
    /// at, `0x55d1c3a0be77`, and makes a row of each, one per process
    /// where the binary's base differs), not by the binary's offset.
    pub fn chain_frame(&mut self, pid: u32, addr: u64) -> FrameId {
        let f = self.user_frame(pid, addr);
        let fr = &self.frames[f as usize];
        if fr.dso == UNKNOWN_DSO || !matches!(fr.name, FrameName::Address(a) if a != addr) {
            return f;
        }
        let dso = fr.dso;
        self.intern(FrameKey::Abs(dso, addr), || Frame {
            dso,
            name: FrameName::Address(addr),
            kernel: false,
        })
    }

    /// The frame of `addr` from process `pid`'s `perf-PID.map`, if it has
    /// one that covers the address. The file is looked at again every
    /// [`JIT_RECHECK`]: read again when it changed (a runtime appends as
    /// it compiles), looked for again when it was missing.
    fn jit_frame(&mut self, pid: u32, addr: u64) -> Option<FrameId> {
        if pid == 0 || pid == u32::MAX {
            return None;
        }
        let due = self
            .jit_maps
            .get(&pid)
            .is_none_or(|j| j.checked.elapsed() >= JIT_RECHECK);
        if due {
            self.refresh_jit_map(pid);
        }
        let jit = self.jit_maps.get(&pid)?.map.as_ref()?;
        let dso = jit.dso;
        if let Some(f) = self.cache.get(dso, addr) {
            return Some(f);
        }
        let i = jit.lookup(addr)?;
        let (start, name) = (jit.entries[i].0, jit.entries[i].3.clone());
        let f = self.intern(FrameKey::Jit(dso, start, name.clone()), || Frame {
            dso,
            name: FrameName::Symbol(name),
            kernel: false,
        });
        self.cache.insert(dso, addr, f);
        Some(f)
    }

    /// Look at `pid`'s `perf-PID.map` again: read it when it is new or
    /// changed (size, modification time).
    fn refresh_jit_map(&mut self, pid: u32) {
        let path = self.jit_dir.join(format!("perf-{pid}.map"));
        // Only a regular file: a FIFO in /tmp would block the read.
        let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file());
        let stamp = meta.map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.size(), m.mtime(), m.mtime_nsec())
        });
        let checked = Instant::now();
        if let Some(j) = self.jit_maps.get_mut(&pid) {
            j.checked = checked;
            if j.stamp == stamp {
                return;
            }
        }
        let read = match stamp {
            Some(_) => std::fs::read(&path),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        let map = match read {
            Ok(bytes) => {
                let dso = self.add_dso(path.to_string_lossy().as_bytes());
                // perf's short name for a perf map's functions.
                self.dsos[dso as usize].short = format!("[JIT] tid {pid}");
                let text = String::from_utf8_lossy(&bytes);
                let (map, bad) = JitMap::parse(&text, dso);
                if bad > 0 {
                    self.warnings.push(format!(
                        "{}: {bad} line(s) are not `START SIZE name` and were skipped",
                        path.display()
                    ));
                }
                // Addresses resolved (or left unresolved) with the old
                // lines are looked up again.
                let dsos = &self.dsos;
                self.cache
                    .retain(|d, _| d != dso && !is_anon(&dsos[d as usize].path));
                Some(map)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                self.warnings.push(format!("{}: {e}", path.display()));
                None
            }
        };
        self.jit_maps.insert(
            pid,
            JitState {
                map,
                stamp,
                checked,
            },
        );
    }

    /// Load the running vDSO for the `[vdso]` DSO when allowed.
    fn load_vdso(&mut self, dso: DsoId) {
        let d = &self.dsos[dso as usize];
        if !self.vdso_here && d.expected_build_id.is_none() {
            return;
        }
        let image = match crate::kernel::running_vdso() {
            Ok(image) => image,
            Err(e) => {
                self.warnings
                    .push(format!("[vdso] addresses left unresolved: {e}"));
                return;
            }
        };
        match ElfFile::from_bytes(image, "[vdso]") {
            Ok(elf) => {
                if let (Some(want), Some(have)) = (&d.expected_build_id, elf.build_id()) {
                    if want.as_slice() != have {
                        if self.vdso_here {
                            self.warnings.push(format!(
                                "[vdso]: the running kernel's vDSO differs from the one recorded \
                                 (build-id {} recorded, {} running): its addresses are left unresolved",
                                hex(want),
                                hex(have)
                            ));
                        }
                        return;
                    }
                }
                self.dsos[dso as usize].elf = Some(Arc::new(elf));
            }
            Err(e) => self.warnings.push(e),
        }
    }

    fn resolve_in_dso(&mut self, dso: DsoId, offset: u64) -> FrameId {
        self.load(dso, None);
        let found = self.dsos[dso as usize].elf.as_ref().and_then(|elf| {
            let vaddr = elf.offset_to_vaddr(offset).unwrap_or(offset);
            elf.lookup_as(vaddr, self.options.demangle)
        });
        match found {
            // A symbol met before: its frame, without making its name again.
            Some(i) => {
                if let Some(&f) = self.frame_ids.get(&FrameKey::Sym(dso, i)) {
                    return f;
                }
                let elf = self.dsos[dso as usize].elf.as_ref().expect("loaded");
                let name = elf.shown_name(i, self.options.demangle);
                self.intern(FrameKey::Sym(dso, i), || Frame {
                    dso,
                    name: FrameName::Symbol(name),
                    kernel: false,
                })
            }
            // An address no symbol covers (or in a binary not read) is
            // shown as perf shows it: its place in the mapping (the file
            // offset), which is also the ELF address of a shared object or
            // PIE, not of a fixed-address executable's.
            None => self.intern(FrameKey::Addr(dso, offset), || Frame {
                dso,
                name: FrameName::Address(offset),
                kernel: false,
            }),
        }
    }

    /// The frame of a kernel address.
    pub fn kernel_frame(&mut self, addr: u64) -> FrameId {
        if let Some(f) = self.kernel_cache.get(KERNEL_DSO, addr) {
            return f;
        }
        if self.defer_kernel {
            let f = self.intern(FrameKey::Addr(KERNEL_DSO, addr), || Frame {
                dso: KERNEL_DSO,
                name: FrameName::Address(addr),
                kernel: true,
            });
            self.provisional.push((f, addr));
            self.kernel_cache.insert(KERNEL_DSO, addr, f);
            return f;
        }
        let f = match self.kallsyms.lookup(addr) {
            Some(i) => {
                let sym = self.kallsyms.symbol(i);
                let (name, module) = (sym.name.to_string(), sym.module.map(str::to_string));
                let dso = match module {
                    None => KERNEL_DSO,
                    Some(m) => match self.module_dsos.get(&m) {
                        Some(&d) => d,
                        None => {
                            let d = self.add_dso(format!("[{m}]").as_bytes());
                            self.module_dsos.insert(m, d);
                            d
                        }
                    },
                };
                self.intern(FrameKey::Sym(dso, i), || Frame {
                    dso,
                    name: FrameName::Symbol(name),
                    kernel: true,
                })
            }
            // With this machine's symbols, an address no symbol covers
            // lies outside the kernel's text and every module (a BPF
            // program, an ftrace trampoline): no binary, as perf shows it.
            None => {
                let dso = if self.kallsyms.is_empty() {
                    KERNEL_DSO
                } else {
                    UNKNOWN_DSO
                };
                self.intern(FrameKey::Addr(dso, addr), || Frame {
                    dso,
                    name: FrameName::Address(addr),
                    kernel: true,
                })
            }
        };
        self.kernel_cache.insert(KERNEL_DSO, addr, f);
        f
    }

    /// Source file and line of a frame's address, from DWARF (user frames of
    /// binaries with line info; `addr` is a process address in `pid`).
    pub fn source_line(&mut self, pid: u32, addr: u64) -> Option<(String, u32)> {
        let (dso, vaddr) = self.user_vaddr(pid, addr)?;
        self.dsos[dso as usize].elf.as_ref()?.line(vaddr)
    }

    /// The binary and its ELF virtual address of a user address of
    /// process `pid`, when a mapping covers it and its binary was read.
    pub fn user_vaddr(&mut self, pid: u32, addr: u64) -> Option<(DsoId, u64)> {
        let maps = self.maps.get(&pid)?;
        let i = maps.partition_point(|m| m.start <= addr);
        if i == 0 || addr >= maps[i - 1].end {
            return None;
        }
        let m = maps[i - 1];
        self.load(m.dso, Some((pid, addr)));
        let elf = self.dsos[m.dso as usize].elf.as_ref()?;
        Some((
            m.dso,
            elf.offset_to_vaddr((addr - m.start).wrapping_add(m.pgoff))?,
        ))
    }

    /// The frames of user address `addr` of `pid`, whose function is
    /// frame `f`, as perf 6.1 shows a call chain's entry: the functions
    /// DWARF says were inlined there, innermost first, named `NAME
    /// (inlined)`, then the function holding them — `f` when DWARF names
    /// it as the symbol table does, else its DWARF name as another
    /// `NAME (inlined)` frame (glibc's `__libc_start_main_impl (inlined)`
    /// where the symbol is `__libc_start_main@@GLIBC_2.34`); appended to
    /// `out`. Only `f` for an address no symbol covers, as perf.
    pub fn inline_frames(&mut self, pid: u32, addr: u64, f: FrameId, out: &mut Vec<FrameId>) {
        let maps = self.maps(pid);
        let i = maps.partition_point(|m| m.start <= addr);
        let FrameName::Symbol(base) = &self.frame(f).name else {
            out.push(f);
            return;
        };
        if i == 0 || addr >= maps[i - 1].end {
            out.push(f);
            return;
        }
        let base = base.clone();
        let m = maps[i - 1];
        let offset = (addr - m.start).wrapping_add(m.pgoff);
        if let Some(frames) = self.inline_cache.get(&(m.dso, offset)) {
            out.extend_from_slice(frames);
            return;
        }
        self.load(m.dso, Some((pid, addr)));
        let names = match self.dsos[m.dso as usize].elf.as_ref() {
            Some(elf) => match elf.offset_to_vaddr(offset) {
                Some(vaddr) => elf.inline_chain(vaddr, self.options.demangle),
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        let outer = names.len().saturating_sub(1);
        let frames: Box<[FrameId]> = (names.into_iter().enumerate())
            .map(|(j, n)| {
                if j == outer && n == base {
                    return f;
                }
                let label = format!("{n} (inlined)");
                let id = self.intern(FrameKey::Inline(m.dso, f, label.clone()), || Frame {
                    dso: m.dso,
                    name: FrameName::Symbol(label),
                    kernel: false,
                });
                self.inlined_into.insert(id, f);
                id
            })
            .collect();
        let frames = if frames.is_empty() {
            Box::new([f])
        } else {
            frames
        };
        out.extend_from_slice(&frames);
        bounded_insert(&mut self.inline_cache, (m.dso, offset), frames);
    }

    /// The mappings of process `pid`, sorted by start.
    pub fn maps(&self, pid: u32) -> &[Map] {
        self.maps.get(&pid).map_or(&[], |m| m.as_slice())
    }

    /// The running vDSO's image when `[vdso]` addresses may use it (see
    /// [`Symbolizer::allow_running_vdso`]; a recorded build-id is checked
    /// by the caller).
    pub fn vdso_image(&self) -> Option<&'static [u8]> {
        let recorded = self
            .dso_by_path
            .get(&(b"[vdso]".to_vec(), None))
            .is_some_and(|&d| self.dsos[d as usize].expected_build_id.is_some());
        (self.vdso_here || recorded)
            .then(crate::kernel::running_vdso)
            .and_then(Result::ok)
    }

    fn intern(&mut self, key: FrameKey, make: impl FnOnce() -> Frame) -> FrameId {
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as FrameId;
        let frame = make();
        let start = match key {
            FrameKey::Addr(..) | FrameKey::Inline(..) | FrameKey::Abs(..) => None,
            FrameKey::Jit(_, start, _) => Some(start),
            FrameKey::Sym(_, i) if frame.kernel => Some(self.kallsyms.symbol(i).start),
            FrameKey::Sym(dso, i) => (self.dsos[dso as usize].elf.as_ref()).map(|e| e.bounds(i).0),
        };
        self.starts.push(start.unwrap_or(u64::MAX));
        self.frames.push(frame);
        self.frame_ids.insert(key, id);
        id
    }

    /// The frame an inlined function's frame ([`Symbolizer::inline_frames`])
    /// is inlined into; `None` for any other frame.
    pub fn inlined_into(&self, id: FrameId) -> Option<FrameId> {
        self.inlined_into.get(&id).copied()
    }

    /// The start of a frame's symbol (ELF virtual address for user code,
    /// the address for kernel and JIT code); `None` for an address frame.
    pub fn frame_start(&self, id: FrameId) -> Option<u64> {
        Some(self.starts[id as usize]).filter(|&s| s != u64::MAX)
    }

    /// Whether binary `dso`, mapped at `at` (pid, address), is one whose
    /// addresses no symbol names: not anonymous memory (a JIT's map may
    /// name those), and its symbols could not be read (tried once, as
    /// [`Symbolizer::user_frame`] tries). An address `a` of such a map
    /// (start, file offset) is what [`Symbolizer::user_site`] makes of it
    /// without a frame: shown and in its symbol space as its file offset
    /// `a - start + offset`, in `dso`. A caller with many such addresses
    /// (a branch report of a file from another machine) keeps them as
    /// (binary, offset) and interns no frame.
    pub fn unnamed_binary(&mut self, dso: DsoId, at: (u32, u64)) -> bool {
        let d = &self.dsos[dso as usize];
        if is_anon(&d.path) || d.elf.is_some() {
            return false;
        }
        self.load(dso, Some(at));
        self.dsos[dso as usize].elf.is_none()
    }

    /// A user address of process `pid` as `perf script` shows it: its
    /// frame, the address shown in call chains (perf's map-relative
    /// address: the file offset in the binary; the address itself in
    /// anonymous memory or outside any mapping) and the address in the
    /// frame's symbol space (ELF virtual address, or the address itself).
    pub fn user_site(&mut self, pid: u32, addr: u64) -> (FrameId, u64, u64) {
        let f = self.user_frame(pid, addr);
        let map = self.maps.get(&pid).and_then(|maps| {
            let i = maps.partition_point(|m| m.start <= addr);
            (i > 0 && addr < maps[i - 1].end).then(|| maps[i - 1])
        });
        match map {
            Some(m)
                if m.dso == self.frames[f as usize].dso
                    && !is_anon(&self.dsos[m.dso as usize].path) =>
            {
                let off = (addr - m.start).wrapping_add(m.pgoff);
                let elf = self.dsos[m.dso as usize].elf.as_ref();
                (
                    f,
                    off,
                    elf.and_then(|e| e.offset_to_vaddr(off)).unwrap_or(off),
                )
            }
            _ => (f, addr, addr),
        }
    }
}

/// Insert into a per-address cache, emptying it first when full.
fn bounded_insert<K: std::hash::Hash + Eq, V>(cache: &mut HashMap<K, V>, key: K, value: V) {
    if cache.len() >= MAX_CACHED_ADDRESSES {
        *cache = HashMap::default();
    }
    cache.insert(key, value);
}

impl Drop for Symbolizer {
    /// The symbol tables' on-disk caches are written for the binaries
    /// this symbolizer demangled names of (the binaries themselves may
    /// live on in the process-wide cache).
    fn drop(&mut self) {
        for d in &self.dsos {
            if let Some(elf) = &d.elf {
                elf.save_table();
            }
        }
    }
}

/// Bytes as lowercase hex (a build id as perf prints it).
pub use crate::elf::hex;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_split_on_overlap_and_resolve_this_binary() {
        let exe = std::env::current_exe().unwrap();
        let elf = ElfFile::open(&exe).unwrap();
        let sym = elf
            .symbols()
            .iter()
            .find(|s| s.name.contains("maps_split_on_overlap"))
            .unwrap()
            .clone();
        let mut s = Symbolizer::new(
            Kallsyms::default(),
            HashMap::default(),
            None,
            &SymbolOptions::default(),
        );
        // Map the whole file at `base`: the symbol is at base + its file offset.
        let off = elf.vaddr_to_offset(sym.start).unwrap();
        let base = 0x5555_0000_0000u64;
        s.add_map(7, base, 1 << 30, 0, exe.to_str().unwrap().as_bytes());
        let f = s.user_frame(7, base + off);
        assert_eq!(s.frame(f).label(), crate::demangle::demangle(&sym.name));
        assert_eq!(
            s.dso(s.frame(f).dso).short,
            exe.file_name().unwrap().to_str().unwrap()
        );
        // A later anonymous map over the middle splits the first.
        s.add_map(7, base + 0x1000, 0x1000, 0, b"//anon");
        let f2 = s.user_frame(7, base + 0x1800);
        assert_eq!(s.dso(s.frame(f2).dso).path, "//anon");
        assert_eq!(s.user_frame(7, base + off), f);
        // Unknown pid → [unknown].
        let u = s.user_frame(8, 0x1234);
        assert_eq!(s.frame(u).dso, UNKNOWN_DSO);
        assert_eq!(s.frame(u).label(), "0x0000000000001234");
        s.fork(7, 9);
        assert_eq!(s.user_frame(9, base + off), f);
    }

    #[test]
    fn differing_build_id_leaves_addresses_unresolved() {
        let exe = std::env::current_exe().unwrap();
        let path = exe.to_str().unwrap().to_string();
        let ids: HashMap<String, Vec<u8>> = [(path.clone(), vec![1u8; 20])].into_iter().collect();
        let mut s = Symbolizer::new(Kallsyms::default(), ids, None, &SymbolOptions::default());
        s.add_map(1, 0x1000_0000, 1 << 30, 0, path.as_bytes());
        let f = s.user_frame(1, 0x1000_0000 + 0x2000);
        assert!(matches!(s.frame(f).name, FrameName::Address(_)));
        assert!(s.warnings()[0].contains("differs"), "{:?}", s.warnings());
    }

    /// A binary replaced at its path since it was mapped (another inode
    /// now): read through this process's `/proc/self/map_files` link of
    /// the mapping (root), or left unnamed with the reason when no
    /// process maps it — never the new file's names.
    #[test]
    fn a_replaced_binary_is_read_from_its_mapping_or_left_unnamed() {
        use std::os::unix::fs::MetadataExt;
        let exe = std::env::current_exe().unwrap();
        let elf = ElfFile::open(&exe).unwrap();
        let sym = (elf.symbols().iter())
            .find(|s| s.name.contains("a_replaced_binary_is_read_from"))
            .unwrap()
            .clone();
        let off = elf.vaddr_to_offset(sym.start).unwrap();
        // This process's mapping of its own file that holds the function.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let (start, end, pgoff) = (maps.lines())
            .filter(|l| l.ends_with(exe.to_str().unwrap()))
            .find_map(|l| {
                let mut f = l.split_whitespace();
                let (a, b) = f.next()?.split_once('-')?;
                let (a, b) = (
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                );
                let pgoff = u64::from_str_radix(f.nth(1)?, 16).ok()?;
                (pgoff <= off && off < pgoff + (b - a)).then_some((a, b, pgoff))
            })
            .unwrap();
        let addr = start + (off - pgoff);
        let ino = std::fs::metadata(&exe).unwrap().ino();
        let inode = MappedInode {
            maj: 0,
            min: 0,
            ino,
            generation: 0,
        };
        // Another file at the recorded path.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rebuilt");
        std::fs::write(&path, b"not the mapped file").unwrap();
        let path = path.to_str().unwrap().as_bytes();
        let new = |pid: u32| {
            let mut s = Symbolizer::new(
                Kallsyms::default(),
                HashMap::default(),
                None,
                &SymbolOptions::default(),
            );
            s.allow_running_vdso(true);
            s.add_mapping(pid, start, end - start, pgoff, path, Some(inode));
            s
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut s = new(std::process::id());
            let f = s.user_frame(std::process::id(), addr);
            assert_eq!(s.frame(f).label(), crate::demangle::demangle(&sym.name));
            let file = s.dso_file(s.frame(f).dso).unwrap();
            assert!(file.starts_with("/proc"), "{}", file.display());
            assert_eq!(s.mapped_file(s.frame(f).dso), Some(file));
        }
        // No such process: unnamed, and said why.
        let mut s = new(u32::MAX - 1);
        let f = s.user_frame(u32::MAX - 1, addr);
        assert!(matches!(s.frame(f).name, FrameName::Address(_)));
        assert!(s.dso_file(s.frame(f).dso).is_none());
        let w = s.warnings();
        assert!(w[0].contains("replaced since it was mapped"), "{w:?}");
        // Recorded elsewhere: the inode says nothing, the path is read.
        let mut s = new(u32::MAX - 1);
        s.allow_running_vdso(false);
        s.user_frame(u32::MAX - 1, addr);
        assert!(!s.warnings()[0].contains("replaced"), "{:?}", s.warnings());
    }

    #[test]
    fn jit_map_lines() {
        let (m, bad) = JitMap::parse(
            "1000  20\tfoo bar\r\n0X2000 10 baz\n3000 0 empty\nzz 10 x\n4000 10\n\nffffffffffffffff 10 wraps\n",
            5,
        );
        assert_eq!(bad, 4);
        let names: Vec<&str> = m.entries.iter().map(|e| e.3.as_str()).collect();
        assert_eq!(names, ["foo bar", "baz"]);
        assert_eq!(
            m.lookup(0x101f).map(|i| m.entries[i].3.as_str()),
            Some("foo bar")
        );
        assert_eq!(m.lookup(0x1020), None);
        assert_eq!(
            m.lookup(0x200f).map(|i| m.entries[i].3.as_str()),
            Some("baz")
        );
        assert!(
            is_anon("//anon")
                && is_anon("/memfd:doublemapper (deleted)")
                && !is_anon("/usr/bin/node")
        );
    }

    #[test]
    fn kernel_addresses() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T start_kernel\nffffffffc0001000 t vmx_run\t[kvm_intel]\n",
        );
        let mut s = Symbolizer::new(k, HashMap::default(), None, &SymbolOptions::default());
        let f = s.kernel_frame(0xffffffff81000010);
        assert_eq!(s.frame(f).label(), "start_kernel");
        assert_eq!(s.dso(s.frame(f).dso).short, "[kernel.kallsyms]");
        let m = s.kernel_frame(0xffffffffc0001004);
        assert_eq!(s.dso(s.frame(m).dso).short, "[kvm_intel]");
        // Past every module (a BPF program): no binary, as perf.
        let b = s.kernel_frame(0xffffffffc0100000);
        assert_eq!(s.dso(s.frame(b).dso).short, "[unknown]");
        assert!(s.frame(b).kernel);
        let mut d = Symbolizer::new(
            Kallsyms::default(),
            HashMap::default(),
            None,
            &SymbolOptions::default(),
        );
        d.defer_kernel();
        let a = d.kernel_frame(0xffffffff81000010);
        let b = d.kernel_frame(0xffffffff81000020);
        assert_ne!(a, b);
        let k = Kallsyms::parse("ffffffff81000000 T start_kernel\n");
        let remap = d.resolve_deferred(k);
        assert_eq!(remap[a as usize], remap[b as usize]);
        assert_eq!(d.frame(remap[a as usize]).label(), "start_kernel");
        let mut empty = Symbolizer::new(
            Kallsyms::default(),
            HashMap::default(),
            None,
            &SymbolOptions::default(),
        );
        let u = empty.kernel_frame(0xffffffff81000010);
        assert_eq!(empty.frame(u).label(), "0xffffffff81000010");
        assert_eq!(empty.dso(empty.frame(u).dso).short, "[kernel.kallsyms]");
    }
}
