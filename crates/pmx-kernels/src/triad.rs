//! STREAM's triad, `a[i] = b[i] + s·c[i]` over `f64` arrays, with its
//! bytes counted as STREAM counts them: 24 per element (two reads, one
//! write; the write-allocate read is not counted).

use std::time::{Duration, Instant};

/// Bytes STREAM counts for one triad element.
pub const BYTES_PER_ELEMENT: u64 = 24;

/// The three arrays.
#[derive(Debug)]
pub struct Triad {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Triad {
    /// Arrays of `n` elements each, written once (so their pages exist
    /// before any timing).
    pub fn new(n: usize) -> Triad {
        Triad {
            a: vec![0.0; n],
            b: vec![1.0; n],
            c: vec![2.0; n],
        }
    }

    /// Elements per array.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// The bytes one pass moves, as STREAM counts them.
    pub fn bytes(&self) -> u64 {
        self.a.len() as u64 * BYTES_PER_ELEMENT
    }

    /// One pass; how long it took.
    #[inline(never)]
    pub fn pass(&mut self) -> Duration {
        let s = std::hint::black_box(3.0);
        let t = Instant::now();
        for ((a, b), c) in self.a.iter_mut().zip(&self.b).zip(&self.c) {
            *a = b + s * c;
        }
        std::hint::black_box(&mut self.a);
        t.elapsed()
    }

    /// The best bandwidth of `passes` passes, in bytes per second (STREAM
    /// reports the best of its passes too).
    pub fn best_bandwidth(&mut self, passes: u32) -> f64 {
        let best = (0..passes.max(1))
            .map(|_| self.pass())
            .min()
            .unwrap_or_default();
        self.bytes() as f64 / best.as_secs_f64().max(1e-9)
    }
}

/// How many elements make each array at least `factor` times `cache`
/// bytes; at least 1 Mi elements.
pub fn elements_beyond(cache: u64, factor: u64) -> usize {
    (cache.saturating_mul(factor) / 8).max(1 << 20) as usize
}
