//! DWARF unwinding of user stacks: the samples of `--call-graph dwarf`
//! (pmx's or perf's) carry the user registers and a copy of the top of
//! the user stack instead of a user call chain; their user frames are
//! found here, when the file is read, from the CFI (`.eh_frame` through
//! `.eh_frame_hdr`, else `.debug_frame`) of each binary the process had
//! mapped, with [framehop](https://docs.rs/framehop).
//!
//! - A sample's [`UserStack`] is `rip`, `rsp`, `rbp` and the stack bytes
//!   (`PERF_SAMPLE_REGS_USER`, `PERF_SAMPLE_STACK_USER`); memory outside
//!   the copy cannot be read, so a chain ends where the copy does (a
//!   larger `dwarf,SIZE` reaches deeper frames).
//! - Unwind tables are loaded once per binary (by path and build-id) and
//!   shared by every process; a binary whose build-id differs from the
//!   recorded one is not used. Where a binary has no CFI, or an address
//!   is in no binary (JIT code), framehop walks frame pointers.
//! - Each process gets an unwinder with a module per binary it maps
//!   (range, load bias), rebuilt when its file mappings change; unwind
//!   rules are cached by address across samples.
//!
//! [`probe`] exercises one binary's tables as the unwinder does (for the
//! tests that sweep every binary of the machine).
//!
//! The chain handed back is in the kernel's call-chain form (the
//! instruction pointer, then return addresses), so the frames after the
//! first are looked up one byte before the return address, as for frame
//! pointer chains.

pub mod probe;
mod tables;

use crate::symbolize::{DsoId, Map, Symbolizer};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Module, Unwinder as _};
use pmx_perfdata::format::regs_x86_64 as x;
use pmx_perfdata::Sample;
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;
use tables::{Bytes, Tables};

/// perf's default deepest chain (`kernel.perf_event_max_stack`): user
/// frames beyond it are dropped, as perf does.
pub const MAX_USER_FRAMES: usize = 127;

/// What a sample recorded for unwinding: the user `rip`, `rsp`, `rbp`
/// and the copy of the stack from `rsp` up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserStack {
    /// Instruction pointer.
    pub ip: u64,
    /// Stack pointer: the address of `stack[0]`.
    pub sp: u64,
    /// Frame pointer.
    pub bp: u64,
    /// The stack bytes (the part the kernel could copy).
    pub stack: Box<[u8]>,
}

impl UserStack {
    /// The registers and stack of a sample, when it has both (a user task;
    /// a kernel thread's samples have neither).
    pub fn of_sample(s: &Sample<'_>) -> Option<UserStack> {
        let r = &s.user_regs;
        Some(UserStack {
            ip: r.get(x::IP)?,
            sp: r.get(x::SP)?,
            bp: r.get(x::BP).unwrap_or(0),
            stack: s.user_stack.into(),
        })
        .filter(|u| !u.stack.is_empty() || u.ip != 0)
    }

    /// The u64 at `addr`, if the copy holds it.
    fn read(&self, addr: u64) -> Result<u64, ()> {
        let off = usize::try_from(addr.checked_sub(self.sp).ok_or(())?).map_err(|_| ())?;
        let b = self
            .stack
            .get(off..off.checked_add(8).ok_or(())?)
            .ok_or(())?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
    }
}

/// A process's unwinder and the file mappings it was built from.
struct Process {
    maps: Vec<Map>,
    unwinder: UnwinderX86_64<Bytes>,
}

/// Counts for the report's notes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UnwindStats {
    /// Samples unwound.
    pub samples: u64,
    /// User frames found (the first, the sample's ip, included).
    pub frames: u64,
    /// Samples whose unwinding stopped before a root function (the stack
    /// copy was too short, or an address had no rule).
    pub truncated: u64,
}

/// The unwinder of a whole profile.
#[derive(Default)]
pub struct Unwinder {
    /// Per binary: its tables, or `None` when it has none (or cannot be read).
    tables: HashMap<DsoId, Option<Rc<Tables>>>,
    procs: HashMap<u32, Process>,
    cache: Option<Box<CacheX86_64>>,
    scratch: Vec<Map>,
    no_cfi: Vec<String>,
    stats: UnwindStats,
}

impl Unwinder {
    /// An unwinder with empty caches.
    pub fn new() -> Unwinder {
        Unwinder::default()
    }

    /// The counts so far.
    pub fn stats(&self) -> UnwindStats {
        self.stats
    }

    /// Process `pid` has exited: its unwinder (modules by mapping) goes.
    pub fn forget(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    /// Warnings worth showing: binaries without CFI that samples went through.
    pub fn warnings(&self) -> Vec<String> {
        if self.no_cfi.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "no unwind tables (.eh_frame, .debug_frame) in {}: their frames were \
             walked by frame pointers",
            self.no_cfi.join(", ")
        )]
    }

    /// Append the user chain of `u` in process `pid` (maps from `sym`) to
    /// `out`: the instruction pointer, then return addresses, at most
    /// [`MAX_USER_FRAMES`].
    pub fn unwind(&mut self, sym: &Symbolizer, pid: u32, u: &UserStack, out: &mut Vec<u64>) {
        self.refresh(sym, pid);
        let Some(p) = self.procs.get(&pid) else {
            return;
        };
        let cache = self
            .cache
            .get_or_insert_with(|| Box::new(CacheX86_64::new()));
        let mut read = |addr: u64| u.read(addr);
        let regs = UnwindRegsX86_64::new(u.ip, u.sp, u.bp);
        let mut it = p.unwinder.iter_frames(u.ip, regs, cache, &mut read);
        let mut n = 0;
        self.stats.samples += 1;
        loop {
            match it.next() {
                Ok(Some(f)) if n < MAX_USER_FRAMES => {
                    out.push(f.address());
                    n += 1;
                }
                Ok(_) => break,
                Err(_) => {
                    self.stats.truncated += 1;
                    break;
                }
            }
        }
        self.stats.frames += n as u64;
    }

    /// Build or rebuild `pid`'s unwinder when its file mappings changed.
    fn refresh(&mut self, sym: &Symbolizer, pid: u32) {
        self.scratch.clear();
        self.scratch.extend(
            sym.maps(pid)
                .iter()
                .filter(|m| unwindable(&sym.dso(m.dso).path)),
        );
        if self.procs.get(&pid).is_some_and(|p| p.maps == self.scratch) {
            return;
        }
        let maps = std::mem::take(&mut self.scratch);
        let mut unwinder = UnwinderX86_64::new();
        // One module per binary: from its lowest to its highest mapping.
        let mut by_dso: Vec<(DsoId, u64, u64, u64, u64)> = Vec::new();
        for m in &maps {
            match by_dso.iter_mut().find(|e| e.0 == m.dso) {
                Some(e) => {
                    e.1 = e.1.min(m.start);
                    e.2 = e.2.max(m.end);
                }
                None => by_dso.push((m.dso, m.start, m.end, m.start, m.pgoff)),
            }
        }
        for (dso, lo, hi, start, pgoff) in by_dso {
            let Some(t) = self.tables_of(sym, dso) else {
                continue;
            };
            let Some(bias) = t.bias(start, pgoff) else {
                continue;
            };
            let name = sym.dso(dso).path.clone();
            unwinder.add_module(Module::new(name, lo..hi, bias, t.sections.clone()));
        }
        self.procs.insert(pid, Process { maps, unwinder });
    }

    /// The tables of binary `dso`, loaded on first use.
    fn tables_of(&mut self, sym: &Symbolizer, dso: DsoId) -> Option<Rc<Tables>> {
        if let Some(t) = self.tables.get(&dso) {
            return t.clone();
        }
        let d = sym.dso(dso);
        let want = d.expected_build_id.as_deref();
        let loaded = if d.path == "[vdso]" {
            sym.vdso_image()
                .and_then(|img| Tables::from_static(img, "[vdso]", want).ok())
        } else {
            sym.dso_file(dso).and_then(|p| Tables::open(&p, want).ok())
        };
        if let Some(t) = &loaded {
            if !t.has_cfi() {
                self.no_cfi.push(d.short.clone());
            }
        }
        let t = loaded.map(Rc::new);
        self.tables.insert(dso, t.clone());
        t
    }
}

/// Mappings whose binary can hold unwind tables: files and the vDSO.
fn unwindable(path: &str) -> bool {
    path == "[vdso]" || (path.starts_with('/') && !path.starts_with("//"))
}

#[cfg(test)]
mod tests;
