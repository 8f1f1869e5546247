//! Call chains already formatted: the text lines under a sample's line
//! (`\t%16x sym+0xOFF (dso)\n` per frame), kept per (event, pid, CPU
//! mode, ip, raw chain). A sample whose chain was seen before in the
//! same process, with the maps unchanged, is one hash of its raw words
//! and one copy of its lines: its frames are neither looked up one by
//! one nor formatted again (most samples of a profile repeat a few
//! stacks). Emptied whenever the maps change (a map or fork: the
//! replay's [`StackTexts::clear`]) and when it reaches its bound, so
//! nothing grows with the file.
//!
//! For `--jobs` ≥ 2 the text is kept in segments: [`StackTexts::freeze`]
//! closes the segment being written and gives every segment (shared,
//! read-only) to a batch of the jobs, whose samples name their lines by
//! [`TextRef`]; the replay's thread keeps appending to a new segment.

use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Bytes of text kept before the cache starts over.
const MAX_BYTES: usize = 1 << 23;
/// Chains kept before the cache starts over.
const MAX_CHAINS: usize = 1 << 16;

/// The formatted chains. A key's words are hashed (FxHash) into 64
/// bits, which index the chains; a chain found by it
/// is one only if its words are the key's (two keys of one hash: the
/// later replaces the earlier, a cache's loss).
#[derive(Default)]
pub(crate) struct StackTexts {
    index: HashMap<u64, Chain>,
    /// The chains' key words, one after the other.
    words: Vec<u64>,
    /// The segment being written (number `frozen.len()`).
    bytes: Vec<u8>,
    /// The segments closed by [`StackTexts::freeze`].
    frozen: Vec<Arc<Vec<u8>>>,
    /// Bytes in `frozen`.
    frozen_len: usize,
    /// The key being looked up (reused) and its hash.
    key: Vec<u64>,
    hash: u64,
}

/// A chain kept: its key words and its lines.
#[derive(Clone, Copy)]
struct Chain {
    words: (u32, u32),
    text: TextRef,
}

/// A chain's lines: its segment, start and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TextRef {
    seg: u32,
    start: u32,
    len: u32,
}

impl TextRef {
    /// The lines in `segments` (a [`StackTexts::freeze`] made after the
    /// chain was kept, before the cache was emptied).
    pub(crate) fn get<'s>(&self, segments: &'s [Arc<Vec<u8>>]) -> Option<&'s [u8]> {
        let (start, len) = (self.start as usize, self.len as usize);
        segments.get(self.seg as usize)?.get(start..start + len)
    }
}

impl StackTexts {
    /// Make the key of a sample: its event, pid and CPU mode, ip and
    /// raw call chain; then [`StackTexts::get`] or [`StackTexts::insert`].
    pub(crate) fn key(&mut self, event: usize, pid: u32, mode: u16, ip: u64, chain: &[u64]) {
        self.key.clear();
        let head = u64::from(pid) | u64::from(mode) << 32 | (event as u64) << 40;
        self.key.extend_from_slice(&[head, ip]);
        self.key.extend_from_slice(chain);
        let mut h = rustc_hash::FxHasher::default();
        self.key.hash(&mut h);
        self.hash = h.finish();
    }

    /// The lines of the chain of the last [`StackTexts::key`], if known.
    pub(crate) fn get(&self) -> Option<&[u8]> {
        let t = self.get_ref()?;
        match self.frozen.get(t.seg as usize) {
            Some(seg) => seg.get(t.start as usize..(t.start + t.len) as usize),
            None => (self.bytes).get(t.start as usize..(t.start + t.len) as usize),
        }
    }

    /// Where the lines of the last [`StackTexts::key`]'s chain are, if known.
    pub(crate) fn get_ref(&self) -> Option<TextRef> {
        let c = self.index.get(&self.hash)?;
        let (w, n) = (c.words.0 as usize, c.words.1 as usize);
        if self.words.get(w..w + n)? != &self.key[..] {
            return None;
        }
        Some(c.text)
    }

    /// Whether keeping `len` bytes more for the last key empties the
    /// cache first (its bound reached).
    pub(crate) fn full(&self, len: usize) -> bool {
        self.frozen_len + self.bytes.len() + len > MAX_BYTES
            || self.words.len() + self.key.len() > MAX_BYTES / 8
            || self.index.len() >= MAX_CHAINS
    }

    /// Keep `text` as the lines of the last [`StackTexts::key`]'s chain
    /// (`None`: too long to keep).
    pub(crate) fn insert(&mut self, text: &[u8]) -> Option<TextRef> {
        if self.full(text.len()) {
            self.clear();
        }
        if text.len() > MAX_BYTES || self.key.len() > MAX_BYTES / 8 {
            return None;
        }
        let chain = Chain {
            words: (self.words.len() as u32, self.key.len() as u32),
            text: TextRef {
                seg: self.frozen.len() as u32,
                start: self.bytes.len() as u32,
                len: text.len() as u32,
            },
        };
        self.words.extend_from_slice(&self.key);
        self.bytes.extend_from_slice(text);
        self.index.insert(self.hash, chain);
        Some(chain.text)
    }

    /// Close the segment being written (when it holds lines) and give
    /// every segment: what the [`TextRef`]s kept so far point into.
    pub(crate) fn freeze(&mut self) -> Vec<Arc<Vec<u8>>> {
        if !self.bytes.is_empty() {
            self.frozen_len += self.bytes.len();
            let seg = std::mem::take(&mut self.bytes);
            self.frozen.push(Arc::new(seg));
        }
        self.frozen.clone()
    }

    /// Forget every chain (the maps changed). The [`TextRef`]s given out
    /// before are not valid here any more (a batch holds its segments).
    pub(crate) fn clear(&mut self) {
        self.index.clear();
        self.words.clear();
        self.bytes.clear();
        self.frozen.clear();
        self.frozen_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_found_by_all_its_key_words() {
        let mut s = StackTexts::default();
        s.key(0, 7, 2, 0x10, &[1, 2, 3]);
        assert!(s.get().is_none());
        s.insert(b"\tone\n");
        assert_eq!(s.get(), Some(&b"\tone\n"[..]));
        for (e, pid, mode, ip, chain) in [
            (1, 7, 2, 0x10, &[1u64, 2, 3][..]),
            (0, 8, 2, 0x10, &[1, 2, 3]),
            (0, 7, 1, 0x10, &[1, 2, 3]),
            (0, 7, 2, 0x11, &[1, 2, 3]),
            (0, 7, 2, 0x10, &[1, 2]),
            (0, 7, 2, 0x10, &[1, 2, 4]),
        ] {
            s.key(e, pid, mode, ip, chain);
            assert!(s.get().is_none(), "{e} {pid} {mode} {ip} {chain:?}");
        }
        s.key(0, 7, 2, 0x10, &[1, 2, 3]);
        assert_eq!(s.get(), Some(&b"\tone\n"[..]));
        // Another key under the same hash is not that chain.
        s.key(0, 7, 2, 0x10, &[1, 2, 5]);
        s.hash = s.index.keys().next().copied().unwrap();
        assert!(s.get().is_none());
        s.clear();
        assert!(s.get().is_none());
    }

    #[test]
    fn frozen_segments_keep_the_lines_their_refs_name() {
        let mut s = StackTexts::default();
        s.key(0, 7, 2, 0x10, &[1]);
        let one = s.insert(b"\tone\n").unwrap();
        let segs = s.freeze();
        assert_eq!(one.get(&segs), Some(&b"\tone\n"[..]));
        // Written after the freeze: a new segment, both still found.
        s.key(0, 7, 2, 0x20, &[2]);
        let two = s.insert(b"\ttwo\n").unwrap();
        assert_eq!(s.get(), Some(&b"\ttwo\n"[..]));
        s.key(0, 7, 2, 0x10, &[1]);
        assert_eq!((s.get_ref(), s.get()), (Some(one), Some(&b"\tone\n"[..])));
        assert_eq!(two.get(&segs), None, "not in the segments given before");
        let all = s.freeze();
        assert_eq!(two.get(&all), Some(&b"\ttwo\n"[..]));
        assert_eq!(s.freeze().len(), 2, "an empty segment is not closed");
        // Emptied: the segments given out keep their lines.
        s.clear();
        assert!(s.get().is_none() && s.freeze().is_empty());
        assert_eq!(one.get(&all), Some(&b"\tone\n"[..]));
        assert!(!s.full(1) && s.full(MAX_BYTES + 1));
    }

    #[test]
    fn the_cache_starts_over_at_its_bound() {
        let mut s = StackTexts::default();
        for i in 0..MAX_CHAINS as u64 + 1 {
            s.key(0, 1, 2, i, &[]);
            s.insert(b"x");
        }
        assert_eq!(s.index.len(), 1);
        s.key(0, 1, 2, MAX_CHAINS as u64, &[]);
        assert_eq!(s.get(), Some(&b"x"[..]));
    }
}
