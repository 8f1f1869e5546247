//! LBR call stacks: the call chain of a sample recorded with
//! `--call-graph lbr`, built from its branch stack as perf builds it.
//!
//! Such an event's `branch_sample_type` has `CALL_STACK`: the LBR then
//! holds the calls not yet returned from, the newest first, and its call
//! chain is the kernel's (frame pointers, unreliable in user code built
//! without them). perf 6.1 keeps the chain up to its `PERF_CONTEXT_USER`
//! marker (the kernel part) and replaces what follows by the newest
//! call's target (the function the sample is in), then every call's
//! source (each caller's call site), oldest last. A chain without a user
//! part (a kernel thread) stays as it is, and so does one whose branch
//! stack is empty (perf 6.1 then reads past the stack; pmx keeps the
//! frame-pointer chain).
//!
//! [`Stitch`] is perf's `--stitch-lbr`: the LBR holds at most its depth
//! of calls (CPU_PMU_CAPS `branches=`, 32 on recent Intel cores), so a
//! deeper stack loses its outer callers; a thread's previous sample may
//! still hold them. With `hw_idx` (the LBR's top of stack, `HW_INDEX`),
//! perf finds where the current sample's oldest entry sat in the
//! previous sample's (`distance`: the previous top of stack minus the
//! current base, `depth − nr + hw_idx + 1`, modulo the depth); when at
//! least that entry is the same (from, to, flags), the previous sample's
//! entries older than it are the callers the current one lost: their
//! sources are appended after its own, and so are those stitched onto
//! the previous sample, as long as every sample of the thread stitches.
//!
//! The built chain keeps perf's `PERF_CONTEXT_USER` before its user
//! part, and [`extend_chain`] says that it built one: the sample carries
//! that as a flag beside its chain (in the report's interned raw stacks,
//! bit 32 of the mode word), for the user part's addresses are the
//! branches' ends themselves, not return addresses, and the call graph
//! looks each up as it is. No value inside the chain marks it, so a
//! chain holding any other value of perf's context range (pmx's old
//! marker `PERF_CONTEXT_USER - 1` too) is corrupt and dropped whole.

use pmx_perfdata::branch::{BranchEntry, BranchStack};
use pmx_perfdata::format::{branch_sample_type, callchain};
use pmx_perfdata::read::Event;
use pmx_perfdata::Reader;
use rustc_hash::FxHashMap as HashMap;

/// Per event of a file: whether its samples' chains are LBR call stacks.
pub(crate) fn events(events: &[Event]) -> Vec<bool> {
    (events.iter())
        .map(|e| e.attr.branch_sample_type & branch_sample_type::CALL_STACK != 0)
        .collect()
}

/// Append to `out` the call chain of a sample whose chain is `chain` and
/// whose branch stack is `stack`: perf's LBR call stack, or `chain`
/// itself where perf keeps it. True when the chain's user part (after
/// its `PERF_CONTEXT_USER`) is the branch stack's.
pub(crate) fn extend_chain(
    out: &mut Vec<u64>,
    chain: impl Iterator<Item = u64>,
    stack: &BranchStack<'_>,
) -> bool {
    let Some(first) = stack.get(0) else {
        out.extend(chain);
        return false;
    };
    for a in chain {
        out.push(a);
        if a == callchain::CONTEXT_USER {
            out.push(first.to);
            out.extend(stack.iter().map(|e| e.from));
            return true;
        }
    }
    false
}

/// perf's `--stitch-lbr` state: per thread, its previous LBR call stack
/// and the callers stitched onto it.
pub(crate) struct Stitch {
    /// The LBR's depth.
    depth: u64,
    threads: HashMap<u32, Thread>,
}

/// A thread's previous sample: its entries, its `hw_idx`, and the
/// sources stitched after them (the outer callers, innermost first).
struct Thread {
    entries: Vec<BranchEntry>,
    hw_idx: u64,
    stitched: Vec<u64>,
}

impl Stitch {
    /// The state for `reader`'s file when `on` (`--stitch-lbr`); `None`
    /// when off, or when its header gives no LBR depth (perf then
    /// stitches nothing either).
    pub(crate) fn new(reader: &Reader, on: bool) -> Option<Stitch> {
        let depth = pmx_perfdata::branch::max_branches(&reader.features().raw)?;
        (on && depth > 0).then(|| Stitch {
            depth,
            threads: HashMap::default(),
        })
    }

    /// After [`extend_chain`] built thread `tid`'s LBR call stack from
    /// `stack` into `out`: append the callers stitched from its previous
    /// samples. A stack without `hw_idx` is left as it is.
    pub(crate) fn extend(&mut self, out: &mut Vec<u64>, tid: u32, stack: &BranchStack<'_>) {
        let Some(hw_idx) = stack.hw_idx else { return };
        let cur: Vec<BranchEntry> = stack.iter().collect();
        let depth = self.depth;
        let t = self.threads.entry(tid).or_insert_with(|| Thread {
            entries: Vec::new(),
            hw_idx: 0,
            stitched: Vec::new(),
        });
        match stitched(depth, (&t.entries, t.hw_idx), (&cur, hw_idx)) {
            Some(distance) => {
                let lost = t.entries[distance + 1..].iter().map(|e| e.from);
                t.stitched.splice(0..0, lost);
            }
            None => t.stitched.clear(),
        }
        out.extend_from_slice(&t.stitched);
        (t.entries, t.hw_idx) = (cur, hw_idx);
    }
}

/// perf's `has_stitched_lbr`: where the current stack's oldest entry
/// sits in the previous one (`Some(distance)`) when both hold it, the
/// same entry in the same LBR slot.
fn stitched(depth: u64, prev: (&[BranchEntry], u64), cur: (&[BranchEntry], u64)) -> Option<usize> {
    let ((p, p_idx), (c, c_idx)) = (prev, cur);
    if p.is_empty() || c.is_empty() {
        return None;
    }
    let base = depth
        .wrapping_sub(c.len() as u64)
        .wrapping_add(c_idx)
        .wrapping_add(1);
    let distance = match p_idx > base {
        true => p_idx - base,
        false => depth.wrapping_add(p_idx).wrapping_sub(base),
    };
    let distance = usize::try_from(distance).ok().filter(|&d| d < p.len())?;
    let same = (p[..=distance].iter().rev()).zip(c.iter().rev());
    let identical = same.take_while(|(a, b)| a == b).count();
    (identical > 0).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perfdata::branch::{encode, parse, BranchEntry, BranchFlags};
    use pmx_perfdata::format::branch_sample_type as bst;

    fn chain_of(chain: &[u64], calls: &[(u64, u64)]) -> (Vec<u64>, bool) {
        let entries: Vec<BranchEntry> = (calls.iter())
            .map(|&(from, to)| BranchEntry {
                from,
                to,
                flags: BranchFlags(0),
            })
            .collect();
        let mut bytes = Vec::new();
        encode(&mut bytes, bst::CALL_STACK, None, &entries, &[]);
        let (stack, _) = parse(&bytes, bst::CALL_STACK, 0).unwrap();
        let mut out = vec![7];
        let lbr = extend_chain(&mut out, chain.iter().copied(), &stack);
        (out, lbr)
    }

    #[test]
    fn the_user_part_comes_from_the_calls() {
        let (k, u) = (callchain::CONTEXT_KERNEL, callchain::CONTEXT_USER);
        let calls = [(0x150, 0x200), (0x120, 0x140)];
        assert_eq!(
            chain_of(&[k, 0xff10, 0xff20, u, 0x210, 0x999], &calls),
            (vec![7, k, 0xff10, 0xff20, u, 0x200, 0x150, 0x120], true)
        );
        assert_eq!(
            chain_of(&[u, 0x210], &calls),
            (vec![7, u, 0x200, 0x150, 0x120], true)
        );
        // No user part, or no branches: the chain itself, no flag.
        assert_eq!(chain_of(&[k, 0xff10], &calls), (vec![7, k, 0xff10], false));
        assert_eq!(chain_of(&[u, 0x210], &[]), (vec![7, u, 0x210], false));
        // The value pmx once marked LBR parts with is no context.
        assert!(!callchain::is_context(u - 1));
    }

    #[test]
    fn stitching_finds_the_shared_entries_in_their_slots() {
        let e = |n: u64| BranchEntry {
            from: n,
            to: n + 0x100,
            flags: BranchFlags(0),
        };
        // Depth 4: calls 1..4 in slots 0..3 (top 3), then 5, 6 over
        // slots 0, 1 (top 1): the current oldest (3, slot 2) is the
        // previous sample's entry 1; its older entries 1, 2 are lost.
        let prev = [e(4), e(3), e(2), e(1)];
        let cur = [e(6), e(5), e(4), e(3)];
        assert_eq!(stitched(4, (&prev, 3), (&cur, 1)), Some(1));
        // A different entry in that slot: nothing.
        let other = [e(6), e(5), e(4), e(9)];
        assert_eq!(stitched(4, (&prev, 3), (&other, 1)), None);
        // The previous top is the current base: perf's distance is the
        // depth, beyond the previous stack.
        assert_eq!(stitched(4, (&prev[..1], 2), (&cur, 1)), None);
        assert_eq!(stitched(4, (&[], 0), (&cur, 1)), None);
    }
}
