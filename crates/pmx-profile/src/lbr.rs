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
//! frame-pointer chain). perf's `--stitch-lbr` is not done.
//!
//! In the built chain the user part follows [`CONTEXT_USER_LBR`], pmx's
//! own marker: its addresses are the branches' ends themselves, not
//! return addresses, so the call graph looks each up as it is.

use pmx_perfdata::branch::BranchStack;
use pmx_perfdata::format::{branch_sample_type, callchain};
use pmx_perfdata::read::Event;

/// pmx's marker of an LBR user part (inside perf's range of context
/// values, a value perf never writes): user mode, addresses as they are.
pub(crate) const CONTEXT_USER_LBR: u64 = callchain::CONTEXT_USER - 1;

/// Whether `a` is a context marker pmx knows (perf's or [`CONTEXT_USER_LBR`]).
pub(crate) fn is_context(a: u64) -> bool {
    a == CONTEXT_USER_LBR || callchain::is_context(a)
}

/// Per event of a file: whether its samples' chains are LBR call stacks.
pub(crate) fn events(events: &[Event]) -> Vec<bool> {
    (events.iter())
        .map(|e| e.attr.branch_sample_type & branch_sample_type::CALL_STACK != 0)
        .collect()
}

/// Append to `out` the call chain of a sample whose chain is `chain` and
/// whose branch stack is `stack`: perf's LBR call stack, or `chain`
/// itself where perf keeps it.
pub(crate) fn extend_chain(
    out: &mut Vec<u64>,
    chain: impl Iterator<Item = u64>,
    stack: &BranchStack<'_>,
) {
    let Some(first) = stack.get(0) else {
        out.extend(chain);
        return;
    };
    for a in chain {
        if a == callchain::CONTEXT_USER {
            out.push(CONTEXT_USER_LBR);
            out.push(first.to);
            out.extend(stack.iter().map(|e| e.from));
            return;
        }
        out.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perfdata::branch::{encode, parse, BranchEntry, BranchFlags};
    use pmx_perfdata::format::branch_sample_type as bst;

    fn chain_of(chain: &[u64], calls: &[(u64, u64)]) -> Vec<u64> {
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
        extend_chain(&mut out, chain.iter().copied(), &stack);
        out
    }

    #[test]
    fn the_user_part_comes_from_the_calls() {
        let (k, u) = (callchain::CONTEXT_KERNEL, callchain::CONTEXT_USER);
        let calls = [(0x150, 0x200), (0x120, 0x140)];
        assert_eq!(
            chain_of(&[k, 0xff10, 0xff20, u, 0x210, 0x999], &calls),
            [7, k, 0xff10, 0xff20, CONTEXT_USER_LBR, 0x200, 0x150, 0x120]
        );
        assert_eq!(
            chain_of(&[u, 0x210], &calls),
            [7, CONTEXT_USER_LBR, 0x200, 0x150, 0x120]
        );
        // No user part, or no branches: the chain itself.
        assert_eq!(chain_of(&[k, 0xff10], &calls), [7, k, 0xff10]);
        assert_eq!(chain_of(&[u, 0x210], &[]), [7, u, 0x210]);
        assert!(is_context(CONTEXT_USER_LBR) && is_context(u) && !is_context(u - 2));
    }
}
