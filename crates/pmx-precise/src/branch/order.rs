//! perf's rows without perf's trees, where its comparators are an order.
//!
//! perf merges and orders a branch table's entries in red-black trees
//! ([`super::rbtree`]) walked with its comparators. When every key's
//! comparator is a total preorder, the trees' outcome does not depend
//! on their shape: the entries tree merges exactly the branches that
//! compare equal (into the first one read), the collapsed tree (same
//! comparators) merges nothing more, and the output tree is a sort by
//! share, then by the keys, greatest first. That is a hash-free sort
//! here: each key's comparison read from per-end and per-command dense
//! ranks made once, a branch's ranks packed into one integer, the
//! branches sorted by it, equal neighbours merged, then the groups
//! sorted by share (keys packed in more than 96 bits: the trees).
//!
//! Which key sets qualify: `mispredict`, `abort` and `in_tx` answer only
//! "equal" or "greater" (no order: the trees decide). perf compares
//! addresses by the sign of their wrapping difference, an order only
//! while no two values compared lie 2⁶³ or more apart (as signed
//! numbers); canonical x86-64 addresses (user below 2⁴⁷, kernel from
//! 2⁶⁴ − 2⁴⁷) always do, a corrupt file may not: [`rows`] then answers
//! `None` and the trees do the work.

use super::{BranchKey, End};
use pmx_perfdata::branch::BranchFlags;
use std::sync::Arc;

/// A counted branch as the order reads it: its command's index, its
/// ends' indices (into the `ends` given to [`rows`]), its flag bits.
#[derive(Clone, Copy)]
pub(super) struct Counted {
    pub comm: u32,
    pub from: u32,
    pub to: u32,
    pub flags: u32,
}

/// An address in an order where the greater comes first by perf's
/// comparator (the lower signed value: `sort__addr_cmp`'s `r - l`).
fn desc(a: u64) -> u64 {
    !(a ^ (1 << 63))
}

/// Dense ranks of `values` (0 for the least; equal values equal): the
/// values sorted with their places, each given the count of distinct
/// values before it (one sort, no search per value).
fn dense<T: Ord + Copy>(values: &[T]) -> Vec<u32> {
    let mut sorted: Vec<(T, u32)> = values.iter().copied().zip(0..).collect();
    sorted.sort_unstable();
    let mut ranks = vec![0u32; values.len()];
    let mut rank = 0;
    for (j, &(v, i)) in sorted.iter().enumerate() {
        if j > 0 && sorted[j - 1].0 != v {
            rank += 1;
        }
        ranks[i as usize] = rank;
    }
    ranks
}

/// What perf's comparators read of each end and command, as dense ranks
/// whose order is theirs (greater: shown first among equal shares); a
/// rank no key reads is left empty.
struct Ranks {
    comm: Vec<u32>,
    /// Per end: its binary's name by text, no binary greatest.
    dso: Vec<u32>,
    /// Per end: a function (by its start) above an address (by itself).
    sym: Vec<u32>,
    /// Per end: its binary, then its address.
    at: Vec<u32>,
}

/// Per end: the dense rank of its binary's name (no binary greatest).
/// Names are shared (one `Arc` per text): each distinct one is ranked
/// once.
fn dso_ranks(ends: &[End]) -> Vec<u32> {
    let mut ids: rustc_hash::FxHashMap<*const u8, u32> = Default::default();
    let mut texts: Vec<&str> = Vec::new();
    let id: Vec<u32> = (ends.iter())
        .map(|e| match &e.dso {
            None => u32::MAX,
            Some(d) => *ids.entry(d.as_ptr()).or_insert_with(|| {
                texts.push(d);
                texts.len() as u32 - 1
            }),
        })
        .collect();
    let rank = dense(&texts);
    let none = rank.iter().max().map_or(0, |&m| m + 1);
    (id.into_iter())
        .map(|i| rank.get(i as usize).copied().unwrap_or(none))
        .collect()
}

impl Ranks {
    /// `None` when two addresses perf may compare lie too far apart.
    fn of(ends: &[End], comms: &[Arc<str>], keys: &[BranchKey]) -> Option<Ranks> {
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for e in ends {
            for v in [e.addr, e.start] {
                (lo, hi) = (lo.min(v as i64), hi.max(v as i64));
            }
        }
        if !ends.is_empty() && i128::from(hi) - i128::from(lo) > i128::from(i64::MAX) {
            return None;
        }
        let uses = |a: BranchKey, b: BranchKey| keys.contains(&a) || keys.contains(&b);
        let (syms, ats) = (
            uses(BranchKey::SymbolFrom, BranchKey::SymbolTo),
            uses(BranchKey::AddrFrom, BranchKey::AddrTo),
        );
        // perf: `r->comm` against `l->comm`: the lower text first.
        let comm: Vec<std::cmp::Reverse<&str>> =
            comms.iter().map(|c| std::cmp::Reverse(&**c)).collect();
        // `cmp_null`: no binary is the greatest.
        let dso = match ats || uses(BranchKey::DsoFrom, BranchKey::DsoTo) {
            true => dso_ranks(ends),
            false => Vec::new(),
        };
        let sym = match syms {
            true => dense(
                &(ends.iter())
                    .map(|e| match e.symbol {
                        Some(_) => (true, desc(e.start)),
                        None => (false, desc(e.addr)),
                    })
                    .collect::<Vec<_>>(),
            ),
            false => Vec::new(),
        };
        let at = match ats {
            true => dense(
                &(ends.iter().zip(&dso))
                    .map(|(e, &d)| (d, desc(e.addr)))
                    .collect::<Vec<_>>(),
            ),
            false => Vec::new(),
        };
        Some(Ranks {
            comm: dense(&comm),
            sym,
            at,
            dso,
        })
    }

    /// Key `k`'s rank of branch `b` (greater: perf's greater).
    fn rank(&self, k: BranchKey, b: &Counted) -> u32 {
        let (from, to) = (b.from as usize, b.to as usize);
        let f = BranchFlags(u64::from(b.flags));
        match k {
            BranchKey::Comm => self.comm[b.comm as usize],
            BranchKey::DsoFrom => self.dso[from],
            BranchKey::DsoTo => self.dso[to],
            BranchKey::SymbolFrom => self.sym[from],
            BranchKey::SymbolTo => self.sym[to],
            BranchKey::AddrFrom => self.at[from],
            BranchKey::AddrTo => self.at[to],
            BranchKey::Cycles => u32::from(f.cycles()),
            BranchKey::Type => u32::from(u8::MAX - f.kind()),
            BranchKey::Mispredict | BranchKey::Abort | BranchKey::InTx => 0,
        }
    }

    /// The bits each key's ranks need.
    fn widths(&self, keys: &[BranchKey]) -> Vec<u32> {
        let bits = |v: &[u32]| 32 - v.iter().max().map_or(0, |m| m.leading_zeros().min(32));
        (keys.iter())
            .map(|k| match k {
                BranchKey::Comm => bits(&self.comm),
                BranchKey::DsoFrom | BranchKey::DsoTo => bits(&self.dso),
                BranchKey::SymbolFrom | BranchKey::SymbolTo => bits(&self.sym),
                BranchKey::AddrFrom | BranchKey::AddrTo => bits(&self.at),
                BranchKey::Cycles => 16,
                BranchKey::Type => 8,
                BranchKey::Mispredict | BranchKey::Abort | BranchKey::InTx => 0,
            })
            .collect()
    }
}

/// perf's rows of `n` counted branches (`at(i)`: the `i`th and its
/// count, in the order first read) as (the index of the row's first
/// branch, the row's count), in perf's order: what its trees make, when
/// the keys' comparators are an order over these ends; else `None`.
///
/// Each branch's keys are packed into one integer, the first key in its
/// highest bits (`hist_entry__cmp`'s first difference decides), so that
/// merging and ordering are sorts of integers.
pub(super) fn rows(
    keys: &[BranchKey],
    (ends, comms): (&[End], &[Arc<str>]),
    n: usize,
    at: impl Fn(usize) -> (Counted, u64),
) -> Option<Vec<(usize, u64)>> {
    if keys.iter().any(|k| k.unordered()) || n >= u32::MAX as usize {
        return None;
    }
    if n == 0 {
        return Some(Vec::new());
    }
    let ranks = Ranks::of(ends, comms, keys)?;
    let widths = ranks.widths(keys);
    if widths.iter().sum::<u32>() > 96 {
        return None;
    }
    // A branch's keys above its index: equal branches sort next to each
    // other, the first read first (16 bytes a branch).
    let pack = |i: usize| {
        let b = at(i).0;
        let key = (keys.iter().zip(&widths)).fold(0u128, |p, (&k, &w)| {
            (p << w) | u128::from(ranks.rank(k, &b))
        });
        key << 32 | i as u128
    };
    let mut order: Vec<u128> = (0..n).map(pack).collect();
    order.sort_unstable();
    // Merge equal neighbours in place: the groups, in the order of their
    // keys, at the front; their counts beside.
    let (mut groups, mut counts) = (0, Vec::new());
    for j in 0..order.len() {
        let (packed, count) = (order[j], at(order[j] as u32 as usize).1);
        match groups {
            g if g > 0 && order[g - 1] >> 32 == packed >> 32 => counts[g - 1] += count,
            g => {
                order[g] = packed;
                counts.push(count);
                groups += 1;
            }
        }
    }
    order.truncate(groups);
    // perf's output tree: the greater share first, then the greater keys
    // (no two groups compare equal; a group's place is its keys' order).
    let mut shares: Vec<(u64, u32)> = (counts.into_iter().enumerate())
        .map(|(g, c)| (c, g as u32))
        .collect();
    shares.sort_unstable_by_key(|&s| std::cmp::Reverse(s));
    Some(
        (shares.into_iter())
            .map(|(c, g)| (order[g as usize] as u32 as usize, c))
            .collect(),
    )
}
