//! Multiply-add kernels of known FLOP counts, one per vector width the CPU
//! has (found at run time with `is_x86_feature_detected!`). Each
//! iteration updates [`ACCUMULATORS`] independent accumulators with
//! `acc = acc·m + a`: a fused multiply-add where the CPU has FMA, else a
//! multiply and an add; 2 FLOPs per lane either way. Enough independent
//! chains keep every FMA unit busy, so FLOPs over time is the width's peak
//! on one core.

use std::time::{Duration, Instant};

/// Independent accumulators per iteration (latency × units on current
/// cores is at most 10).
pub const ACCUMULATORS: u64 = 12;

/// A vector width, for double precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Width {
    /// One double per instruction.
    Scalar,
    /// 128 bits: two doubles.
    Sse,
    /// 256 bits: four doubles.
    Avx2,
    /// 512 bits: eight doubles.
    Avx512,
}

impl Width {
    /// Every width, narrowest first.
    pub const ALL: [Width; 4] = [Width::Scalar, Width::Sse, Width::Avx2, Width::Avx512];

    /// The name pmx prints (`scalar`, `sse`, `avx2`, `avx512`).
    pub fn name(self) -> &'static str {
        match self {
            Width::Scalar => "scalar",
            Width::Sse => "sse",
            Width::Avx2 => "avx2",
            Width::Avx512 => "avx512",
        }
    }

    /// The width named `s`.
    pub fn from_name(s: &str) -> Option<Width> {
        Width::ALL.into_iter().find(|w| w.name() == s)
    }

    /// Doubles per instruction.
    pub fn lanes(self) -> u64 {
        match self {
            Width::Scalar => 1,
            Width::Sse => 2,
            Width::Avx2 => 4,
            Width::Avx512 => 8,
        }
    }

    /// FLOPs of one iteration of [`run`].
    pub fn flops_per_iteration(self) -> u64 {
        ACCUMULATORS * self.lanes() * 2
    }

    /// Whether this CPU runs this width (and the kernel is built for
    /// this architecture).
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Width::Scalar | Width::Sse => std::arch::is_x86_feature_detected!("sse2"),
                Width::Avx2 => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
                Width::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Width::Scalar
        }
    }
}

/// The widths this CPU has, narrowest first.
pub fn available() -> Vec<Width> {
    Width::ALL.into_iter().filter(|w| w.available()).collect()
}

/// Whether the multiply-adds are fused (the CPU has FMA).
pub fn fused() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Run `iterations` of the kernel for `width`: `iterations ×
/// width.flops_per_iteration()` FLOPs. `None` when the CPU lacks the
/// width.
pub fn run(width: Width, iterations: u64) -> Option<u64> {
    if !width.available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the width's features were detected above.
    unsafe {
        let fma = fused();
        match width {
            Width::Scalar if fma => x86::scalar_fma(iterations),
            Width::Scalar => x86::scalar(iterations),
            Width::Sse if fma => x86::sse_fma(iterations),
            Width::Sse => x86::sse(iterations),
            Width::Avx2 => x86::avx2(iterations),
            Width::Avx512 => x86::avx512(iterations),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut acc = [1.0f64; ACCUMULATORS as usize];
        for _ in 0..iterations {
            for a in acc.iter_mut() {
                *a = *a * 0.999_999 + 1e-6;
            }
        }
        std::hint::black_box(acc);
    }
    Some(iterations * width.flops_per_iteration())
}

/// The best FLOP rate (FLOP/s) of `tries` runs of `iterations` on the
/// calling thread; `None` when the CPU lacks the width.
pub fn peak(width: Width, iterations: u64, tries: u32) -> Option<f64> {
    let mut best = Duration::MAX;
    for _ in 0..tries.max(1) {
        let t = Instant::now();
        run(width, iterations)?;
        best = best.min(t.elapsed());
    }
    Some((iterations * width.flops_per_iteration()) as f64 / best.as_secs_f64().max(1e-9))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// One kernel: `$init` makes a vector of a value, `$step(acc, m, a)`
    /// one update.
    macro_rules! kernel {
        ($name:ident, $feat:literal, $ty:ty, $init:ident, |$acc:ident, $m:ident, $a:ident| $step:expr) => {
            #[target_feature(enable = $feat)]
            #[inline(never)]
            pub unsafe fn $name(iterations: u64) {
                // Opaque inputs, so nothing folds at compile time.
                let ($m, $a) = (
                    $init(std::hint::black_box(0.999_999)),
                    $init(std::hint::black_box(1e-6)),
                );
                let mut accs: [$ty; super::ACCUMULATORS as usize] =
                    std::hint::black_box([$init(1.0); super::ACCUMULATORS as usize]);
                for _ in 0..std::hint::black_box(iterations) {
                    for $acc in accs.iter_mut() {
                        *$acc = $step;
                    }
                }
                std::hint::black_box(&accs);
            }
        };
    }

    kernel!(scalar_fma, "fma", __m128d, _mm_set_sd, |acc, m, a| {
        _mm_fmadd_sd(*acc, m, a)
    });
    kernel!(scalar, "sse2", __m128d, _mm_set_sd, |acc, m, a| _mm_add_sd(
        _mm_mul_sd(*acc, m),
        a
    ));
    kernel!(sse_fma, "fma", __m128d, _mm_set1_pd, |acc, m, a| {
        _mm_fmadd_pd(*acc, m, a)
    });
    kernel!(sse, "sse2", __m128d, _mm_set1_pd, |acc, m, a| _mm_add_pd(
        _mm_mul_pd(*acc, m),
        a
    ));
    kernel!(avx2, "avx2,fma", __m256d, _mm256_set1_pd, |acc, m, a| {
        _mm256_fmadd_pd(*acc, m, a)
    });
    kernel!(avx512, "avx512f", __m512d, _mm512_set1_pd, |acc, m, a| {
        _mm512_fmadd_pd(*acc, m, a)
    });
}
