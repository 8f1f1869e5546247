//! AutoFDO's input: the range and branch counts of a binary (the
//! "unsymbolized profile" `llvm-profgen --skip-symbolization` writes and
//! `--unsymbolized-profile` reads; AutoFDO's `create_llvm_prof
//! --profiler=text` reads the same text), made from a file's branch
//! stacks without perf.
//!
//! Each branch stack is read as llvm-profgen reads `perf script -F
//! ip,brstack`: an end that is no instruction of the binary is
//! "external" (address 1); an entry with both ends external is dropped;
//! a branch counts when its target is an instruction; the straight run
//! from one entry's target to the next newer entry's source counts as a
//! range when both are instructions, the run goes forward and has no
//! call, return or direct unconditional jump before its end. Addresses are written as offsets from
//! the binary's first executable segment (page-aligned), ranges and
//! branches sorted by address, as llvm-profgen writes them.

use super::bolt::binary::Binary;
use super::BranchError;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_profile::report::{report_with, ReportOptions};
use pmx_symbols::symbolize::{FrameId, Symbolizer};
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// llvm-profgen's address of an end outside the binary's code.
const EXTERNAL: u64 = 1;

struct Counts {
    binary: Binary,
    want: (Option<Vec<u8>>, Option<String>),
    code: BTreeSet<u64>,
    jumps: BTreeSet<u64>,
    /// Whether each mapped binary (by id) is the one profiled.
    ours: HashMap<u32, bool>,
    ranges: BTreeMap<(u64, u64), u64>,
    branches: BTreeMap<(u64, u64), u64>,
    entries: u64,
}

impl Counts {
    /// `addr` of process `pid` as an instruction address of the binary.
    fn internal(&mut self, sym: &Symbolizer, pid: u32, addr: u64) -> Option<u64> {
        let (start, _, pgoff, dso) = sym.mapping(pid, addr)?;
        let ours = *self.ours.entry(dso).or_insert_with(|| {
            let d = sym.dso(dso);
            match (&d.expected_build_id, &self.want.0) {
                (Some(a), Some(b)) => a == b,
                _ => {
                    Path::new(&d.path)
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        == self.want.1
                }
            }
        });
        let vaddr = self.binary.address((addr - start).wrapping_add(pgoff))?;
        (ours && self.code.contains(&vaddr)).then_some(vaddr)
    }

    fn crosses_jump(&self, start: u64, end: u64) -> bool {
        start < end && self.jumps.range(start..end).next().is_some()
    }
}

impl SampleSink for Counts {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        let mut end: Option<u64> = None;
        for e in s.branches.chunks_exact(3) {
            let from = self.internal(sym, s.pid, e[0]);
            let to = self.internal(sym, s.pid, e[1]);
            if from.is_none() && to.is_none() {
                continue;
            }
            self.entries += 1;
            if let Some(t) = to {
                *self
                    .branches
                    .entry((from.unwrap_or(EXTERNAL), t))
                    .or_default() += 1;
            }
            if let (Some(a), Some(b)) = (to, end) {
                if a <= b && !self.crosses_jump(a, b) {
                    *self.ranges.entry((a, b)).or_default() += 1;
                }
            }
            end = from;
        }
    }

    fn side(&mut self, _: Side) {}

    /// The branch stacks alone: nothing prints the ordinary profile.
    fn alone(&self) -> bool {
        true
    }

    fn finish(&mut self, _: &mut Symbolizer, _: &[FrameId]) {}
}

/// Read `opts.input` and count `binary`'s ranges and branches (`None`:
/// the binary most branches touch, found by a first reading).
pub fn profile(
    opts: &ReportOptions,
    binary: Option<&Path>,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<super::bolt::BoltProfile, BranchError> {
    let path = match binary {
        Some(p) => p.to_path_buf(),
        None => super::bolt::main_binary(opts, progress)?,
    };
    let bin = Binary::open(&path).map_err(BranchError::Bolt)?;
    let (code, jumps) = bin.instructions();
    let name = path.file_name().map(|n| n.to_string_lossy().to_string());
    let mut c = Counts {
        want: (bin.build_id.clone(), name),
        binary: bin,
        code,
        jumps,
        ours: HashMap::default(),
        ranges: BTreeMap::new(),
        branches: BTreeMap::new(),
        entries: 0,
    };
    let report = report_with(opts, progress, Some(&mut c as &mut dyn SampleSink))?;
    if c.entries == 0 {
        return Err(BranchError::Bolt(format!(
            "{}: no branch of {} lands in {} (record with -b or -j on it)",
            report.file,
            path.display(),
            path.display()
        )));
    }
    let base = c.binary.text_base;
    let mut text = String::new();
    let _ = writeln!(text, "{}", c.ranges.len());
    for ((a, b), n) in &c.ranges {
        let _ = writeln!(
            text,
            "{:x}-{:x}:{n}",
            a.wrapping_sub(base),
            b.wrapping_sub(base)
        );
    }
    let _ = writeln!(text, "{}", c.branches.len());
    for ((a, b), n) in &c.branches {
        let _ = writeln!(
            text,
            "{:x}->{:x}:{n}",
            a.wrapping_sub(base),
            b.wrapping_sub(base)
        );
    }
    Ok(super::bolt::BoltProfile {
        text,
        binary: path,
        records: c.ranges.len() + c.branches.len(),
    })
}
