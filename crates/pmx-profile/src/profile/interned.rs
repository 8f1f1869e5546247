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
    /// Its raw stack in [`StackTable::words`].
    key: std::ops::Range<usize>,
    /// Its samples and their summed period.
    pub(super) samples: u64,
    pub(super) period: u64,
}

/// Above this many distinct stacks the table is credited and emptied
/// (memory stays bounded on any file).
const MAX_ENTRIES: usize = 1 << 18;

/// The slots a table starts with (a power of two).
const MIN_SLOTS: usize = 1 << 10;

/// Bits of [`StackTable::recent`]'s index.
const RECENT_BITS: u32 = 10;

/// The lookup side of a [`StackTable`].
#[derive(Default)]
struct Index {
    /// By a hash of a stack's first words: the entry last found with
    /// them (`u32::MAX`: none).
    recent: Vec<u32>,
    /// 0: free; else the hash's low 32 bits above the entry's index + 1.
    slots: Vec<u64>,
    /// The raw stacks of the entries, back to back.
    words: Vec<u64>,
}

/// The table: raw stack → entry, entries in first-seen order. The raw
/// stacks are kept back to back in one array and found by open
/// addressing (linear probing, at most half the slots used): a slot holds
/// 32 bits of the stack's hash and its entry, so a lookup hashes the
/// sample's words once, and compares them only with a stack whose hash
/// bits agree. Before that, the stack last found with the same first
/// words (event, mode, address, thread, CPU: see `State::count_raw`) is
/// tried: a program's samples at one address mostly share one stack, so
/// most samples are found by one comparison, unhashed.
pub(super) struct StackTable<K> {
    /// Boxed: the table is taken out of `State` and put back for each
    /// sample, which a table of 144 bytes did with three calls to
    /// `memcpy` (80 bytes are moved inline).
    ix: Box<Index>,
    pub(super) entries: Vec<Entry<K>>,
    pub(super) frames: Vec<u32>,
    /// The raw stack of the sample being looked up.
    pub(super) raw: Vec<u64>,
}

impl<K> Default for StackTable<K> {
    fn default() -> Self {
        StackTable {
            ix: Box::default(),
            entries: Vec::new(),
            frames: Vec::new(),
            raw: Vec::new(),
        }
    }
}

/// The hash of a raw stack: its words folded in one by one (a rotation,
/// a xor and a multiplication each; what FxHash does per word, without
/// hashing the slice's bytes in a second pass), then its length.
#[inline]
fn hash(words: &[u64]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = 0u64;
    for &w in words {
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    (h.rotate_left(23) ^ words.len() as u64).wrapping_mul(K)
}

/// The slot in [`StackTable::recent`] of a stack: by its first five
/// words (all when fewer).
#[inline]
fn recent_slot(words: &[u64]) -> usize {
    let head = &words[..words.len().min(5)];
    (hash(head) >> (64 - RECENT_BITS)) as usize
}

impl<K> StackTable<K> {
    /// The first slot to look for a stack of hash `h` in: its top bits
    /// (the best mixed).
    #[inline]
    fn home(&self, h: u64) -> usize {
        (h >> (64 - self.ix.slots.len().trailing_zeros())) as usize
    }

    /// The entry holding the raw stack `raw` of hash `h`, or the free slot
    /// where it would go.
    #[inline]
    fn find(&self, raw: &[u64], h: u64) -> Result<usize, usize> {
        let tag = h << 32;
        let mask = self.ix.slots.len() - 1;
        let mut s = self.home(h);
        loop {
            let v = self.ix.slots[s];
            if v == 0 {
                return Err(s);
            }
            if v & !0xffff_ffff == tag {
                let i = (v as u32 - 1) as usize;
                if self.ix.words[self.entries[i].key.clone()] == *raw {
                    return Ok(i);
                }
            }
            s = (s + 1) & mask;
        }
    }

    /// Count `n` samples of the raw stack in `self.raw` weighing `period`
    /// in all when it is known: `true` then, `false` when it must be
    /// resolved and [`Self::add_n`]ed.
    pub(super) fn count_n(&mut self, n: u64, period: u64) -> bool {
        if self.entries.is_empty() {
            return false;
        }
        let r = recent_slot(&self.raw);
        let last = self.ix.recent[r] as usize;
        let i = match self.entries.get(last) {
            Some(e) if self.ix.words[e.key.clone()] == self.raw[..] => last,
            _ => match self.find(&self.raw, hash(&self.raw)) {
                Ok(i) => {
                    self.ix.recent[r] = i as u32;
                    i
                }
                Err(_) => return false,
            },
        };
        let e = &mut self.entries[i];
        e.samples += n;
        e.period = e.period.saturating_add(period);
        true
    }

    /// A new raw stack (the one in `self.raw`), resolved, with `frames`
    /// and its first `n` samples weighing `period` in all.
    pub(super) fn add_n(&mut self, resolved: Resolved<K>, frames: &[u32], n: u64, period: u64) {
        if (self.entries.len() + 1) * 2 > self.ix.slots.len() {
            self.grow();
        }
        let h = hash(&self.raw);
        let s = match self.find(&self.raw, h) {
            // Known after all (not what callers do): counted.
            Ok(i) => {
                let e = &mut self.entries[i];
                e.samples += n;
                e.period = e.period.saturating_add(period);
                return;
            }
            Err(s) => s,
        };
        let i = self.entries.len();
        self.ix.slots[s] = h << 32 | (i as u64 + 1);
        if self.ix.recent.is_empty() {
            self.ix.recent = vec![u32::MAX; 1 << RECENT_BITS];
        }
        self.ix.recent[recent_slot(&self.raw)] = i as u32;
        let at = self.ix.words.len();
        self.ix.words.extend_from_slice(&self.raw);
        let start = self.frames.len();
        self.frames.extend_from_slice(frames);
        self.entries.push(Entry {
            resolved,
            frames: start..self.frames.len(),
            key: at..self.ix.words.len(),
            samples: n,
            period,
        });
    }

    /// Twice the slots (at least [`MIN_SLOTS`]), every entry placed again.
    #[cold]
    fn grow(&mut self) {
        let n = (self.ix.slots.len() * 2).max(MIN_SLOTS);
        self.ix.slots.clear();
        self.ix.slots.resize(n, 0);
        for i in 0..self.entries.len() {
            let h = hash(&self.ix.words[self.entries[i].key.clone()]);
            let mut s = self.home(h);
            while self.ix.slots[s] != 0 {
                s = (s + 1) & (n - 1);
            }
            self.ix.slots[s] = h << 32 | (i as u64 + 1);
        }
    }

    /// Whether the table should be credited and emptied now.
    pub(super) fn full(&self) -> bool {
        self.entries.len() >= MAX_ENTRIES
    }

    /// Forget every stack (after its entries were credited): their slots
    /// freed one by one when they are few, else all at once.
    pub(super) fn clear(&mut self) {
        if self.entries.len() * 16 < self.ix.slots.len() {
            let mask = self.ix.slots.len() - 1;
            for (i, e) in self.entries.iter().enumerate() {
                let h = hash(&self.ix.words[e.key.clone()]);
                let v = h << 32 | (i as u64 + 1);
                let mut s = self.home(h);
                while self.ix.slots[s] != v {
                    s = (s + 1) & mask;
                }
                self.ix.slots[s] = 0;
            }
        } else {
            self.ix.slots.fill(0);
        }
        self.ix.recent.fill(u32::MAX);
        self.entries.clear();
        self.frames.clear();
        self.ix.words.clear();
    }

    /// Whether nothing waits to be credited.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(event: usize) -> Resolved<()> {
        Resolved {
            event,
            key: (),
            comm: 0,
            pid: 1,
            tid: 1,
            ip: 0,
            kernel: false,
            leaf: 0,
            unresolved: None,
        }
    }

    /// Count one sample of `raw` into `t`, added (resolved as event
    /// `raw[0]`, with `raw` as its frames) when new: whether it was known.
    fn count(t: &mut StackTable<()>, raw: &[u64], period: u64) -> bool {
        t.raw.clear();
        t.raw.extend_from_slice(raw);
        if t.count_n(1, period) {
            return true;
        }
        let frames: Vec<u32> = raw.iter().map(|&w| w as u32).collect();
        t.add_n(resolved(raw[0] as usize), &frames, 1, period);
        false
    }

    /// Distinct raw stacks: some prefixes of others, some equal but for
    /// one word, some of equal hash bits' neighbourhood (consecutive).
    fn stacks(n: u64) -> Vec<Vec<u64>> {
        (0..n)
            .map(|i| {
                let mut v = vec![i % 7, 0, 0x4000 + i, i / 3, 0];
                v.extend((0..i % 5).map(|d| 0xffff_ffff_8100_0000 + d));
                v
            })
            .collect()
    }

    #[test]
    fn each_stack_counted_in_its_own_entry_in_first_seen_order() {
        let mut t = StackTable::default();
        let all = stacks(5000);
        for (round, period) in [(0, 10), (1, 20), (2, 30)] {
            for (i, s) in all.iter().enumerate().rev() {
                assert_eq!(count(&mut t, s, period), round > 0, "stack {i}");
            }
        }
        assert_eq!(t.entries.len(), all.len());
        for (e, s) in t.entries.iter().zip(all.iter().rev()) {
            assert_eq!((e.samples, e.period), (3, 60));
            assert_eq!(e.resolved.event, s[0] as usize);
            let frames: Vec<u32> = s.iter().map(|&w| w as u32).collect();
            assert_eq!(t.frames[e.frames.clone()], frames[..]);
        }
        // A prefix of a known stack, and one word more, are new.
        let mut longer = all[9].clone();
        longer.push(1);
        assert!(!count(&mut t, &longer, 1));
        assert!(!count(&mut t, &all[9][..all[9].len() - 1], 1));
        assert!(!t.full());
    }

    #[test]
    fn cleared_tables_forget_every_stack_few_or_many() {
        let mut t = StackTable::default();
        for n in [3, 4000, 2, 600] {
            let all = stacks(n);
            for s in &all {
                assert!(!count(&mut t, s, 1));
                assert!(count(&mut t, s, 1));
            }
            assert!(!t.is_empty());
            t.clear();
            assert!(t.is_empty() && t.frames.is_empty());
            assert!(t.ix.slots.iter().all(|&v| v == 0), "{n} stacks");
        }
    }

    #[test]
    fn stacks_of_one_address_and_thread_apart_by_their_chains() {
        let mut t = StackTable::default();
        let chain = |c: u64| [0, 0, 0x4000, 7, 0, 0xffff_ffff_ffff_fe00, c, c + 1];
        for round in 0..3 {
            let first = [false, false, true, false, true, true];
            for (c, seen) in [1, 2, 1, 3, 3, 2].into_iter().zip(first) {
                assert_eq!(count(&mut t, &chain(c), 1), round > 0 || seen, "{c}");
            }
        }
        let counts: Vec<u64> = t.entries.iter().map(|e| e.samples).collect();
        assert_eq!(counts, [6, 6, 6]);
        assert_eq!(t.ix.words[t.entries[2].key.clone()], chain(3));
    }

    #[test]
    fn the_hash_tells_apart_words_moved_or_high_bits_flipped() {
        let a = hash(&[1, 2, 3]);
        assert_ne!(a, hash(&[3, 2, 1]));
        assert_ne!(a, hash(&[1, 2, 3, 0]));
        assert_ne!(hash(&[1 << 63, 1 << 63]), hash(&[0, 0]));
        assert_ne!(hash(&[]), hash(&[0]));
    }
}
