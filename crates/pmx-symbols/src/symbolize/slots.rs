//! The per-address caches of a [`super::Symbolizer`]: a fixed number of
//! slots, each address in the one slot its hash picks (a later address
//! of that slot takes its place). Nothing is ever cleared or grown: a
//! lookup and an insertion cost one hash and one slot, however many
//! addresses a profile has, and the slots are allocated on the first
//! insertion (a symbolizer that resolves nothing allocates none).
//!
//! A cache is a memo: a frame found again by the binary's table is the
//! same frame (frames are interned), so which addresses a cache holds
//! changes no result, only how often a table is searched.

/// A cached address: its binary (`EMPTY`: a free slot), its place in
/// the binary (a file offset, or the address for the kernel), its value.
#[derive(Debug, Clone, Copy)]
struct Slot<V: Copy> {
    key: u64,
    dso: u32,
    value: V,
}

/// The binary id of a free slot (no binary has it).
const EMPTY: u32 = u32::MAX;

/// A direct-mapped cache of `(binary, address) → V` with `2^bits` slots.
pub(crate) struct AddressCache<V: Copy> {
    slots: Vec<Slot<V>>,
    bits: u32,
    used: usize,
}

impl<V: Copy + Default> AddressCache<V> {
    /// A cache of `2^bits` slots (none allocated yet).
    pub(crate) fn new(bits: u32) -> Self {
        AddressCache {
            slots: Vec::new(),
            bits,
            used: 0,
        }
    }

    /// The slot of `(dso, key)`: Fibonacci hashing (the product's high
    /// bits, which every bit of the key moves).
    fn index(&self, dso: u32, key: u64) -> usize {
        let k = key ^ u64::from(dso).rotate_left(40);
        (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize
    }

    /// The value cached for `(dso, key)`.
    pub(crate) fn get(&self, dso: u32, key: u64) -> Option<V> {
        if self.slots.is_empty() {
            return None;
        }
        let s = &self.slots[self.index(dso, key)];
        (s.dso == dso && s.key == key && dso != EMPTY).then_some(s.value)
    }

    /// Cache `value` for `(dso, key)`, in place of its slot's address.
    pub(crate) fn insert(&mut self, dso: u32, key: u64, value: V) {
        if dso == EMPTY {
            return;
        }
        if self.slots.is_empty() {
            let free = Slot {
                key: 0,
                dso: EMPTY,
                value: V::default(),
            };
            self.slots = vec![free; 1 << self.bits];
        }
        let i = self.index(dso, key);
        let s = &mut self.slots[i];
        self.used += usize::from(s.dso == EMPTY);
        *s = Slot { key, dso, value };
    }

    /// Free the slots of the addresses `keep` refuses.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u32, u64) -> bool) {
        for s in &mut self.slots {
            if s.dso != EMPTY && !keep(s.dso, s.key) {
                s.dso = EMPTY;
                self.used -= 1;
            }
        }
    }

    /// Free every slot (the memory is kept).
    pub(crate) fn clear(&mut self) {
        if self.used > 0 {
            self.slots.iter_mut().for_each(|s| s.dso = EMPTY);
            self.used = 0;
        }
    }

    /// Addresses cached.
    pub(crate) fn len(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::AddressCache;

    #[test]
    fn an_address_is_found_until_another_takes_its_slot() {
        let mut c = AddressCache::<u32>::new(4);
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
        let kept: Vec<u64> = (0..100).filter(|&a| c.get(5, a).is_some()).collect();
        assert!(!kept.is_empty());
        assert!(kept.iter().all(|&a| c.get(5, a) == Some(a as u32 + 1)));
        c.retain(|_, a| a % 2 == 0);
        assert!((0..100).all(|a| a % 2 == 0 || c.get(5, a).is_none()));
        c.clear();
        assert_eq!(c.len(), 0);
        assert!((0..100).all(|a| c.get(5, a).is_none()));
    }
}
