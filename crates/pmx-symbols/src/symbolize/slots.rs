//! The per-address caches of a [`super::Symbolizer`]: slots, each
//! address in the one slot its hash picks (a later address of that slot
//! takes its place). A lookup and an insertion cost one hash and one
//! slot, however many addresses a profile has.
//!
//! The slots cost what the work needs: none before the first insertion
//! (a symbolizer that resolves nothing allocates none), then a small
//! table that doubles (its addresses moved over) while more than half
//! of its slots are taken, up to `2^bits` slots; from there nothing is
//! grown any more. A free slot is all zero bits and the tables are
//! allocated zeroed, so a page of slots no address has reached is
//! never written (the system gives zeroed memory untouched).
//!
//! A cache is a memo: a frame found again by the binary's table is the
//! same frame (frames are interned), so which addresses a cache holds
//! changes no result, only how often a table is searched.

/// A cached address: its place in the binary (a file offset, or the
/// address for the kernel), then its binary plus one (0: a free slot)
/// in the high half of the second word and its value in the low half.
type Slot = [u64; 2];

/// The slots of the first table (`2^FIRST_BITS`, 64 KiB).
const FIRST_BITS: u32 = 12;

/// A direct-mapped cache of `(binary, address) → u32` with at most
/// `2^bits` slots.
pub(crate) struct AddressCache {
    slots: Vec<Slot>,
    /// log2 of `slots.len()` (when allocated).
    now: u32,
    /// log2 of the most slots.
    bits: u32,
    used: usize,
}

/// The second word of `(dso, value)`; `None` for the one binary id that
/// cannot be stored (`u32::MAX`: no binary has it).
fn tag(dso: u32, value: u32) -> Option<u64> {
    let d = dso.checked_add(1)?;
    Some(u64::from(d) << 32 | u64::from(value))
}

impl AddressCache {
    /// A cache of at most `2^bits` slots (none allocated yet).
    pub(crate) fn new(bits: u32) -> Self {
        AddressCache {
            slots: Vec::new(),
            now: 0,
            bits: bits.clamp(1, 40),
            used: 0,
        }
    }

    /// The slot of `(dso, key)` among `2^bits`: Fibonacci hashing (the
    /// product's high bits, which every bit of the key moves).
    fn index(bits: u32, dso: u32, key: u64) -> usize {
        let k = key ^ u64::from(dso).rotate_left(40);
        (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// The value cached for `(dso, key)`.
    pub(crate) fn get(&self, dso: u32, key: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let s = self.slots[Self::index(self.now, dso, key)];
        let d = dso.checked_add(1)?;
        (s[1] >> 32 == u64::from(d) && s[0] == key).then_some(s[1] as u32)
    }

    /// Cache `value` for `(dso, key)`, in place of its slot's address.
    pub(crate) fn insert(&mut self, dso: u32, key: u64, value: u32) {
        let Some(t) = tag(dso, value) else {
            return;
        };
        if self.slots.is_empty() {
            self.resize(FIRST_BITS.min(self.bits));
        } else if self.now < self.bits && self.used * 2 > self.slots.len() {
            self.resize(self.now + 1);
        }
        let i = Self::index(self.now, dso, key);
        let s = &mut self.slots[i];
        self.used += usize::from(s[1] == 0);
        *s = [key, t];
    }

    /// Move the addresses into a table of `2^bits` slots (zeroed: its
    /// untouched pages are never written). Two addresses of one new
    /// slot: the later one stays.
    fn resize(&mut self, bits: u32) {
        let old = std::mem::replace(&mut self.slots, vec![[0u64; 2]; 1 << bits]);
        self.now = bits;
        self.used = 0;
        for s in old.into_iter().filter(|s| s[1] != 0) {
            let dso = (s[1] >> 32) as u32 - 1;
            let n = &mut self.slots[Self::index(bits, dso, s[0])];
            self.used += usize::from(n[1] == 0);
            *n = s;
        }
    }

    /// Free the slots of the addresses `keep` refuses.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u32, u64) -> bool) {
        for s in &mut self.slots {
            if s[1] != 0 && !keep((s[1] >> 32) as u32 - 1, s[0]) {
                *s = [0; 2];
                self.used -= 1;
            }
        }
    }

    /// Free every slot (the memory is kept).
    pub(crate) fn clear(&mut self) {
        if self.used > 0 {
            self.slots.iter_mut().for_each(|s| *s = [0; 2]);
            self.used = 0;
        }
    }

    /// Addresses cached.
    pub(crate) fn len(&self) -> usize {
        self.used
    }

    /// Slots allocated.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::AddressCache;

    #[test]
    fn an_address_is_found_until_another_takes_its_slot() {
        let mut c = AddressCache::new(4);
        assert_eq!(c.get(2, 0x10), None);
        c.insert(2, 0x10, 7);
        assert_eq!(
            (c.get(2, 0x10), c.get(3, 0x10), c.len()),
            (Some(7), None, 1)
        );
        // More addresses than slots: each kept is right, at most 16 kept.
        for a in 0..100u64 {
            c.insert(5, a, a as u32 + 1);
        }
        assert!(c.len() <= 16);
        assert_eq!(c.capacity(), 16);
        let kept: Vec<u64> = (0..100).filter(|&a| c.get(5, a).is_some()).collect();
        assert!(!kept.is_empty());
        assert!(kept.iter().all(|&a| c.get(5, a) == Some(a as u32 + 1)));
        c.retain(|_, a| a % 2 == 0);
        assert!((0..100).all(|a| a % 2 == 0 || c.get(5, a).is_none()));
        c.clear();
        assert_eq!(c.len(), 0);
        assert!((0..100).all(|a| c.get(5, a).is_none()));
    }

    #[test]
    fn the_table_grows_with_the_addresses_and_keeps_them() {
        let mut c = AddressCache::new(18);
        assert_eq!(c.capacity(), 0);
        c.insert(0, 0xffff_ffff_8100_0000, 0);
        assert_eq!(c.capacity(), 1 << 12);
        // Value 0 and binary 0 are a stored entry, not a free slot.
        assert_eq!(c.get(0, 0xffff_ffff_8100_0000), Some(0));
        for a in 0..3000u64 {
            c.insert(1, a * 16, a as u32);
        }
        assert_eq!(c.capacity(), 1 << 13);
        // Grown twice over: every address kept but for collisions, and
        // each one found is right.
        let found = (0..3000u64).filter(|&a| c.get(1, a * 16) == Some(a as u32));
        assert!(found.count() > 2000);
        assert!((0..3000u64).all(|a| c.get(1, a * 16).is_none_or(|v| v == a as u32)));
        for a in 0..1_000_000u64 {
            c.insert(2, a, 1);
        }
        assert_eq!(c.capacity(), 1 << 18);
        // The binary no table can store is never found.
        c.insert(u32::MAX, 5, 5);
        assert_eq!(c.get(u32::MAX, 5), None);
    }
}
