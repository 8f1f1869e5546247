//! perf annotate's IPC and Cycle columns: what the LBR's cycle counts say
//! of the function's basic blocks. Each branch entry carries the cycles
//! since the branch before it; a sample's stack, read oldest first, is a
//! run of blocks, each from the previous branch's target to the next
//! branch's source. Per branch source in the function (perf's
//! `cyc_hist`, by byte offset), as perf 6.1 counts them:
//!
//! - every entry with cycles adds to the source's average, minimum and
//!   maximum (the Cycle column: the average, integer division);
//! - the block's own count keeps only the longest block ending there
//!   whose start (the previous target) lies in the same function and
//!   before the source: a longer one seen later restarts the count, a
//!   shorter one is ignored, and entries without such a start only count
//!   while no block has one;
//! - then, from the last offset of the function down, each block with a
//!   start gives every instruction from its start to its end that has no
//!   IPC yet the block's IPC: its instructions ÷ (its cycles ÷ its
//!   branches), as a 32-bit float. The function's average IPC is the sum
//!   of those blocks' instructions × branches over their cycles, its IPC
//!   coverage the share of its instructions given an IPC.
//!
//! A sample counts only when its newest entry has cycles (perf's test:
//! a CPU that records none, an LBR call stack). The counts come from the
//! file's second read, shared with the memory columns (`super::second_read`).

use super::types::{Annotation, BranchCycles, CycleCell};
use pmx_perfdata::format::sample_type;
use pmx_perfdata::read::Sample;
use std::collections::BTreeMap;

/// perf's `struct cyc_hist`: one branch source's counts (also what
/// `pmx report --total-cycles` tables by block, in pmx-precise).
#[derive(Debug, Default, Clone, Copy)]
pub struct CycHist {
    /// The start (offset) of the longest block counted.
    pub start: u64,
    /// The cycles of the blocks counted (those from `start`).
    pub cycles: u64,
    /// Whether `start` is known (a block wholly inside the function).
    pub have_start: bool,
    /// The branches counted in `cycles`.
    pub num: u64,
    /// How often a longer block restarted the count.
    pub reset: u16,
    /// The cycles of every branch from here.
    pub cycles_aggr: u64,
    /// Every branch from here with cycles.
    pub num_aggr: u64,
    /// The most cycles of one branch.
    pub cycles_max: u64,
    /// The fewest (non-zero) cycles of one branch.
    pub cycles_min: u64,
}

impl CycHist {
    /// One branch from here after `cycles`, its block starting at
    /// `start` (an offset) when known.
    pub fn account(&mut self, start: Option<u64>, cycles: u64) {
        self.num_aggr += 1;
        self.cycles_aggr += cycles;
        self.cycles_max = self.cycles_max.max(cycles);
        if self.cycles_min == 0 || (cycles > 0 && cycles < self.cycles_min) {
            self.cycles_min = cycles;
        }
        if start.is_none() && self.have_start {
            return;
        }
        let s = start.unwrap_or(0);
        if self.num > 0 && start.is_some() {
            if !self.have_start || self.start > s {
                (self.have_start, self.cycles, self.num) = (false, 0, 0);
                self.reset = self.reset.saturating_add(1);
            } else if self.start < s {
                return;
            }
        }
        (self.have_start, self.start) = (start.is_some(), s);
        self.cycles += cycles;
        self.num += 1;
    }
}

/// The IPC and Cycle columns being counted: each branch source's
/// `cyc_hist`, by offset from the function's start.
pub(super) struct Cycles {
    start: u64,
    hist: BTreeMap<u64, CycHist>,
}

impl Cycles {
    /// Counts for `a`, or `None` when it has no instructions to give
    /// columns to.
    pub(super) fn new(a: &Annotation) -> Option<Self> {
        (!a.instructions.is_empty()).then(|| Cycles {
            start: a.start,
            hist: BTreeMap::new(),
        })
    }

    /// Whether an event with this `sample_type` feeds the columns.
    pub(super) fn wants(sample_type: u64) -> bool {
        sample_type & sample_type::BRANCH_STACK != 0
    }

    /// One sample of a wanted event, `at` taking an address to the
    /// function's (`Some` only inside it).
    pub(super) fn sample(&mut self, s: &Sample<'_>, at: &dyn Fn(u64) -> Option<u64>) {
        if s.branches.get(0).is_none_or(|e| e.flags.cycles() == 0) {
            return;
        }
        let entries: Vec<_> = s.branches.iter().collect();
        let mut prev: Option<u64> = None;
        for e in entries.iter().rev() {
            let cycles = u64::from(e.flags.cycles());
            let from = (cycles > 0).then(|| at(e.from)).flatten();
            if let Some(from) = from {
                let begin = prev.and_then(at).filter(|&t| t < from);
                let h = self.hist.entry(from - self.start).or_default();
                h.account(begin.map(|b| b - self.start), cycles);
            }
            prev = Some(e.to);
        }
    }

    /// Give `a` its columns, if any block had cycles.
    pub(super) fn finish(self, a: &mut Annotation) {
        if self.hist.values().any(|h| h.cycles > 0) {
            a.cycles = Some(compute(a, &self.hist));
        }
    }
}

/// perf's `annotation__compute_ipc` over the counts by offset.
fn compute(a: &Annotation, hist: &BTreeMap<u64, CycHist>) -> BranchCycles {
    let offsets: Vec<u64> = a.instructions.iter().map(|i| i.addr - a.start).collect();
    let mut out = BranchCycles {
        instructions: vec![CycleCell::default(); offsets.len()],
        hit_cycles: 0,
        hit_insn: 0,
        covered: 0,
        total: offsets.len() as u64,
    };
    let index = |off: u64| offsets.binary_search(&off).ok();
    for (&off, ch) in hist.iter().rev().filter(|(_, h)| h.cycles > 0) {
        if ch.have_start {
            let (lo, hi) = (
                offsets.partition_point(|&o| o < ch.start),
                offsets.partition_point(|&o| o <= off),
            );
            let n = (hi - lo) as u64;
            if n > 0 && ch.num > 0 && ch.reset < 0x7fff {
                let ipc = (n as f64 / (ch.cycles as f64 / ch.num as f64)) as f32;
                let mut cover = 0;
                for c in &mut out.instructions[lo..hi] {
                    if c.ipc == 0.0 {
                        c.ipc = ipc;
                        cover += 1;
                    }
                }
                if cover > 0 {
                    out.hit_cycles += ch.cycles;
                    out.hit_insn += n * ch.num;
                    out.covered += cover;
                }
            }
        }
        if let (Some(i), true) = (index(off), ch.num_aggr > 0) {
            let c = &mut out.instructions[i];
            c.cycles = ch.cycles_aggr / ch.num_aggr;
            (c.min, c.max, c.branches) = (ch.cycles_min, ch.cycles_max, ch.num_aggr);
        }
    }
    out
}
