//! A pointer chase: every cache line of a buffer holds the address of the
//! next line of one random cycle through all of them, so each step is
//! one load that depends on the one before and no prefetcher can guess.
//! Inside L1 every load hits; in a buffer far beyond the last-level
//! cache nearly every load misses every level.

/// The line size the chase strides by (every current x86 and Arm core).
pub const LINE: usize = 64;

/// A buffer laid out as one random cycle of its cache lines.
pub struct Chase {
    lines: Vec<[usize; LINE / 8]>,
}

impl std::fmt::Debug for Chase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chase({} lines)", self.lines.len())
    }
}

impl Chase {
    /// A chase over `bytes` (at least two lines), the cycle drawn from
    /// `seed` (Sattolo's algorithm: one cycle through every line).
    pub fn new(bytes: usize, seed: u64) -> Chase {
        let n = (bytes / LINE).max(2);
        let mut lines = vec![[0usize; LINE / 8]; n];
        let mut order: Vec<usize> = (0..n).collect();
        let mut x = seed | 1;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = (x % i as u64) as usize;
            order.swap(i, j);
        }
        let base = lines.as_ptr() as usize;
        for k in 0..n {
            let (from, to) = (order[k], order[(k + 1) % n]);
            lines[from][0] = base + to * LINE;
        }
        Chase { lines }
    }

    /// The buffer's size in bytes.
    pub fn bytes(&self) -> usize {
        self.lines.len() * LINE
    }

    /// Follow `steps` pointers (one load each; on x86-64 the loop is
    /// `mov; dec; jnz`, so exactly `steps` loads). Returns where it ended
    /// so the work cannot be dropped.
    #[inline(never)]
    pub fn run(&self, steps: u64) -> usize {
        let mut p = self.lines.as_ptr() as usize;
        if steps == 0 {
            return p;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: every line's first word is the address of a line of
        // `self.lines`, which lives as long as `self`.
        unsafe {
            std::arch::asm!("2:", "mov {p}, [{p}]", "dec {n}", "jnz 2b",
                p = inout(reg) p, n = inout(reg) steps => _,
                options(readonly, nostack));
        }
        #[cfg(not(target_arch = "x86_64"))]
        for _ in 0..steps {
            // SAFETY: as above.
            p = unsafe { (p as *const usize).read_volatile() };
        }
        p
    }
}
