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

use rustc_hash::FxHashMap as HashMap;

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
}

/// Above this many distinct stacks the table is credited and emptied
/// (memory stays bounded on any file).
const MAX_ENTRIES: usize = 1 << 18;

/// The table: raw stack → entry, entries in first-seen order.
pub(super) struct StackTable<K> {
    index: HashMap<Box<[u64]>, u32>,
    pub(super) entries: Vec<Entry<K>>,
    pub(super) frames: Vec<u32>,
    /// The raw stack of the sample being looked up.
    pub(super) raw: Vec<u64>,
}

impl<K> Default for StackTable<K> {
    fn default() -> Self {
        StackTable {
            index: HashMap::default(),
            entries: Vec::new(),
            frames: Vec::new(),
            raw: Vec::new(),
        }
    }
}

impl<K> StackTable<K> {
    /// Count `n` samples of the raw stack in `self.raw` weighing `period`
    /// in all when it is known: `true` then, `false` when it must be
    /// resolved and [`Self::add_n`]ed.
    pub(super) fn count_n(&mut self, n: u64, period: u64) -> bool {
        let Some(&i) = self.index.get(&self.raw[..]) else {
            return false;
        };
        let e = &mut self.entries[i as usize];
        e.samples += n;
        e.period = e.period.saturating_add(period);
        true
    }

    /// A new raw stack (the one in `self.raw`), resolved, with `frames`
    /// and its first `n` samples weighing `period` in all.
    pub(super) fn add_n(&mut self, resolved: Resolved<K>, frames: &[u32], n: u64, period: u64) {
        let start = self.frames.len();
        self.frames.extend_from_slice(frames);
        let i = self.entries.len() as u32;
        self.index.insert(self.raw.clone().into_boxed_slice(), i);
        self.entries.push(Entry {
            resolved,
            frames: start..self.frames.len(),
            samples: n,
            period,
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
    }

    /// Whether nothing waits to be credited.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
