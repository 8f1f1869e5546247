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
//! The built chain keeps perf's `PERF_CONTEXT_USER` before its user
//! part, and [`extend_chain`] says that it built one: the sample carries
//! that as a flag beside its chain (in the report's interned raw stacks,
//! bit 32 of the mode word), for the user part's addresses are the
//! branches' ends themselves, not return addresses, and the call graph
//! looks each up as it is. No value inside the chain marks it, so a
//! chain holding any other value of perf's context range (pmx's old
//! marker `PERF_CONTEXT_USER - 1` too) is corrupt and dropped whole.

use pmx_perfdata::branch::BranchStack;
use pmx_perfdata::format::{branch_sample_type, callchain};
use pmx_perfdata::read::Event;

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
}
