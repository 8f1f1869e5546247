//! Call chains already formatted: the text lines under a sample's line
//! (`\t%16x sym+0xOFF (dso)\n` per frame), kept per (event, pid, CPU
//! mode, ip, raw chain). A sample whose chain was seen before in the
//! same process, with the maps unchanged, is one hash of its raw words
//! and one copy of its lines: its frames are neither looked up one by
//! one nor formatted again (most samples of a profile repeat a few
//! stacks). Emptied whenever the maps change (a map or fork: the
//! replay's [`StackTexts::clear`]) and when it reaches its bound, so
//! nothing grows with the file.

use rustc_hash::FxHashMap as HashMap;

/// Bytes of text kept before the cache starts over.
const MAX_BYTES: usize = 1 << 23;
/// Chains kept before the cache starts over.
const MAX_CHAINS: usize = 1 << 16;

/// The formatted chains: key words → (start, length) in `bytes`.
#[derive(Default)]
pub(crate) struct StackTexts {
    index: HashMap<Box<[u64]>, (u32, u32)>,
    bytes: Vec<u8>,
    /// The key being looked up (reused).
    key: Vec<u64>,
}

impl StackTexts {
    /// Make the key of a sample: its event, pid and CPU mode, ip and
    /// raw call chain; then [`StackTexts::get`] or [`StackTexts::insert`].
    pub(crate) fn key(&mut self, event: usize, pid: u32, mode: u16, ip: u64, chain: &[u64]) {
        self.key.clear();
        let head = u64::from(pid) | u64::from(mode) << 32 | (event as u64) << 40;
        self.key.extend_from_slice(&[head, ip]);
        self.key.extend_from_slice(chain);
    }

    /// The lines of the chain of the last [`StackTexts::key`], if known.
    pub(crate) fn get(&self) -> Option<&[u8]> {
        let &(at, len) = self.index.get(&self.key[..])?;
        Some(&self.bytes[at as usize..(at + len) as usize])
    }

    /// Keep `text` as the lines of the last [`StackTexts::key`]'s chain.
    pub(crate) fn insert(&mut self, text: &[u8]) {
        if self.bytes.len() + text.len() > MAX_BYTES || self.index.len() >= MAX_CHAINS {
            self.clear();
        }
        if text.len() > MAX_BYTES {
            return;
        }
        let at = self.bytes.len() as u32;
        self.bytes.extend_from_slice(text);
        let key = self.key.clone().into_boxed_slice();
        self.index.insert(key, (at, text.len() as u32));
    }

    /// Forget every chain (the maps changed).
    pub(crate) fn clear(&mut self) {
        self.index.clear();
        self.bytes.clear();
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
        s.clear();
        assert!(s.get().is_none());
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
