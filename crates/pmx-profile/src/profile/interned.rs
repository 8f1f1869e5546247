//! Stacks interned once: a table keyed by a sample's raw stack (its
//! event, CPU mode, address, thread, CPU when a key, and call chain as
//! recorded), so each distinct stack is symbolized once and each further
//! sample of it adds a count to its entry.
//!
//! The entries are credited to the rows in the order their stacks first
//! appeared, which is the order the samples would have credited them one
//! by one: every row, child and stack is first met by the same sample
//! (so its "first sample" fields and each table's insertion order are
//! the same), and sums of periods saturate alike in any grouping. A
//! record that changes what a raw stack means (a map, a command, a fork,
//! an exit) empties the table first.
//!
//! The index is an open-addressing table of its own: a sample's raw
//! words are folded into a 64-bit hash inline, one slot is probed, and
//! only an entry of the same hash has its words (kept in one arena)
//! compared — no hashing of a slice through a hasher's byte interface,
//! no box per key. A generation number in every slot empties the index
//! at once, however large it grew, when a map or a command clears it.

/// A resolved stack: what `State` credits for each of its samples.
#[derive(Clone, Copy)]
pub(super) struct Resolved<K> {
    pub(super) event: usize,
    pub(super) key: K,
    pub(super) comm: u32,
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) ip: u64,
    /// The leaf was taken in the kernel.
    pub(super) kernel: bool,
    /// The leaf's frame.
    pub(super) leaf: pmx_symbols::symbolize::FrameId,
    /// The binary whose address stayed unnamed at the leaf, if any.
    pub(super) unresolved: Option<pmx_symbols::symbolize::DsoId>,
}

/// One distinct stack: its resolution, its frames and its samples so far.
pub(super) struct Entry<K> {
    pub(super) resolved: Resolved<K>,
    /// Its frames in [`StackTable::frames`], leaf first.
    pub(super) frames: std::ops::Range<usize>,
    /// Its samples and their summed period.
    pub(super) samples: u64,
    pub(super) period: u64,
    /// Its raw stack's hash and words in [`StackTable::words`].
    hash: u64,
    words: std::ops::Range<usize>,
}

/// Above this many distinct stacks the table is credited and emptied
/// (memory stays bounded on any file).
const MAX_ENTRIES: usize = 1 << 18;

/// The table: raw stack → entry, entries in first-seen order.
pub(super) struct StackTable<K> {
    index: Index,
    pub(super) entries: Vec<Entry<K>>,
    pub(super) frames: Vec<u32>,
    /// Every entry's raw stack, one after the other.
    words: Vec<u64>,
    /// The raw stack of the sample being looked up.
    pub(super) raw: Vec<u64>,
}

impl<K> Default for StackTable<K> {
    fn default() -> Self {
        StackTable {
            index: Index::default(),
            entries: Vec::new(),
            frames: Vec::new(),
            words: Vec::new(),
            raw: Vec::new(),
        }
    }
}

/// A raw stack's hash: its words folded one by one (FxHash's step), then
/// mixed so that the high bits, which pick the slot, depend on them all.
#[inline]
fn hash(words: &[u64]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let mut h = words.len() as u64;
    for &w in words {
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// Slots of `(generation, entry)`: a slot of another generation is empty.
/// At most half the slots are used, so every probe ends at an empty one.
#[derive(Default)]
struct Index {
    slots: Vec<(u32, u32)>,
    generation: u32,
    used: usize,
}

impl Index {
    /// The slot to start probing at for `hash` (the hash's high bits).
    #[inline]
    fn start(&self, hash: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        // `slots.len()` is 0 or a power of two ≥ 16; with 0 nothing probes.
        (hash >> (64 - bits.max(1))) as usize & (self.slots.len().wrapping_sub(1))
    }

    /// Forget every entry (one generation later; the slots are rewritten
    /// only when the generation number wraps).
    fn clear(&mut self) {
        self.used = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill((0, 0));
            self.generation = 1;
        }
    }

    /// Room for one more entry; `hashes` gives each entry's hash, for
    /// the slots to be filled again when the table grows.
    fn reserve(&mut self, hashes: impl Iterator<Item = u64>) {
        if (self.used + 1) * 2 <= self.slots.len() {
            return;
        }
        let n = (self.slots.len() * 2).max(16);
        (self.generation, self.used) = (1, 0);
        self.slots = vec![(0, 0); n];
        for (i, h) in hashes.enumerate() {
            self.put(h, i as u32);
        }
    }

    /// Put entry `i` of `hash` in the first empty slot of its probe.
    fn put(&mut self, hash: u64, i: u32) {
        let mask = self.slots.len() - 1;
        let mut at = self.start(hash);
        while self.slots[at].0 == self.generation {
            at = (at + 1) & mask;
        }
        self.slots[at] = (self.generation, i);
        self.used += 1;
    }
}

impl<K> StackTable<K> {
    /// The entry of the raw stack in `self.raw` and its hash.
    #[inline]
    fn find(&self) -> (Option<usize>, u64) {
        let h = hash(&self.raw);
        let slots = &self.index.slots;
        if slots.is_empty() {
            return (None, h);
        }
        let mask = slots.len() - 1;
        let mut at = self.index.start(h);
        loop {
            let (generation, i) = slots[at];
            if generation != self.index.generation {
                return (None, h);
            }
            let e = &self.entries[i as usize];
            if e.hash == h && self.words[e.words.clone()] == self.raw[..] {
                return (Some(i as usize), h);
            }
            at = (at + 1) & mask;
        }
    }

    /// Count `n` samples of the raw stack in `self.raw` weighing `period`
    /// in all when it is known: `true` then, `false` when it must be
    /// resolved and [`Self::add_n`]ed.
    #[inline]
    pub(super) fn count_n(&mut self, n: u64, period: u64) -> bool {
        let Some(i) = self.find().0 else {
            return false;
        };
        let e = &mut self.entries[i];
        e.samples += n;
        e.period = e.period.saturating_add(period);
        true
    }

    /// A new raw stack (the one in `self.raw`), resolved, with `frames`
    /// and its first `n` samples weighing `period` in all.
    pub(super) fn add_n(&mut self, resolved: Resolved<K>, frames: &[u32], n: u64, period: u64) {
        let start = self.frames.len();
        self.frames.extend_from_slice(frames);
        let h = hash(&self.raw);
        let at = self.words.len();
        self.words.extend_from_slice(&self.raw);
        self.index.reserve(self.entries.iter().map(|e| e.hash));
        self.index.put(h, self.entries.len() as u32);
        self.entries.push(Entry {
            resolved,
            frames: start..self.frames.len(),
            samples: n,
            period,
            hash: h,
            words: at..self.words.len(),
        });
    }

    /// Whether the table should be credited and emptied now.
    pub(super) fn full(&self) -> bool {
        self.entries.len() >= MAX_ENTRIES
    }

    /// Forget every stack (after its entries were credited).
    pub(super) fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.frames.clear();
        self.words.clear();
    }

    /// Whether nothing waits to be credited.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved() -> Resolved<()> {
        Resolved {
            event: 0,
            key: (),
            comm: 0,
            pid: 0,
            tid: 0,
            ip: 0,
            kernel: false,
            leaf: pmx_symbols::symbolize::FrameId::default(),
            unresolved: None,
        }
    }

    /// A stack of 1 to 12 words made from `i` (its first word, `i` times an
    /// odd number, differs for every `i`).
    fn stack(i: u64) -> Vec<u64> {
        (0..1 + i % 12)
            .map(|k| i.wrapping_mul(0x9e37) >> (k % 3) | k << 40)
            .collect()
    }

    #[test]
    fn every_stack_counted_in_its_own_entry_across_growth_and_clears() {
        let mut t = StackTable::<()>::default();
        for round in 0..3u64 {
            let n = 5_000 + round * 20_000;
            for pass in 0..3 {
                for i in 0..n {
                    t.raw = stack(i);
                    if !t.count_n(1, i) {
                        assert_eq!(pass, 0, "stack {i} lost in pass {pass}");
                        t.add_n(resolved(), &[i as u32], 1, i);
                    }
                }
            }
            assert_eq!(t.entries.len() as u64, n);
            for (i, e) in t.entries.iter().enumerate() {
                assert_eq!((e.samples, e.period), (3, 3 * i as u64));
                assert_eq!(t.frames[e.frames.clone()], [i as u32]);
                assert_eq!(t.words[e.words.clone()], stack(i as u64)[..]);
            }
            t.clear();
            assert!(t.is_empty());
            t.raw = stack(1);
            assert!(
                !t.count_n(1, 1),
                "a stack found after the table was emptied"
            );
        }
    }

    #[test]
    fn the_generation_number_wraps_without_old_entries_coming_back() {
        let mut t = StackTable::<()> {
            raw: vec![7, 8, 9],
            ..Default::default()
        };
        t.add_n(resolved(), &[], 1, 1);
        t.index.generation = u32::MAX;
        t.index.slots.fill((u32::MAX, 0));
        t.clear();
        assert_eq!(t.index.generation, 1);
        t.raw = vec![7, 8, 9];
        assert!(!t.count_n(1, 1));
        t.add_n(resolved(), &[], 1, 1);
        assert!(t.count_n(1, 1));
        assert_eq!(t.entries[0].samples, 2);
    }
}
