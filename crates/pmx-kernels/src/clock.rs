//! The core's clock as it runs: a chain of dependent integer additions
//! retires one addition per cycle on every x86-64 core (an addition's
//! latency is one cycle), so additions over time is the frequency the
//! core ran at, turbo included, which `/proc/cpuinfo` does not tell (a
//! guest sees only the nominal rate). [`hz`] is the best of a few runs.

use std::time::{Duration, Instant};

/// Dependent additions per loop iteration: the loop's own decrement and
/// branch run beside them, off the chain.
pub const CHAIN: u64 = 16;

/// Run `iterations × CHAIN` dependent additions; `None` where the kernel
/// is not built (not x86-64).
pub fn adds(iterations: u64) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut acc: u64 = 0;
        // SAFETY: registers only; `rcx` and the flags are declared.
        unsafe {
            std::arch::asm!(
                "2:",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "add {acc}, 1", "add {acc}, 1", "add {acc}, 1", "add {acc}, 1",
                "dec {n}",
                "jnz 2b",
                acc = inout(reg) acc,
                n = inout(reg) iterations.max(1) => _,
                options(nomem, nostack),
            );
        }
        Some(acc)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = iterations;
        None
    }
}

/// The core's frequency in Hz: the best of `tries` runs of `iterations`
/// loop iterations on the calling thread.
pub fn hz(iterations: u64, tries: u32) -> Option<f64> {
    let mut best = Duration::MAX;
    for _ in 0..tries.max(1) {
        let t = Instant::now();
        adds(iterations)?;
        best = best.min(t.elapsed());
    }
    Some((iterations.max(1) * CHAIN) as f64 / best.as_secs_f64().max(1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every addition is done (the count is exact), and the rate is a
    /// plausible clock (between 100 MHz and 10 GHz, whatever the load:
    /// a preempted run only lowers it, and the best of runs is kept).
    #[test]
    fn the_chain_adds_exactly_and_runs_at_a_clock_rate() {
        let Some(n) = adds(1000) else {
            return;
        };
        assert_eq!(n, 1000 * CHAIN);
        let f = hz(1_000_000, 5).unwrap();
        assert!((1e8..1e10).contains(&f), "{f}");
    }
}
