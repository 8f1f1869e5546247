//! Multiply-add kernels of known FLOP counts, one per vector width the CPU
//! has (found at run time with `is_x86_feature_detected!`). Each
//! iteration updates [`ACCUMULATORS`] independent accumulators with
//! `acc += m·a`: a fused multiply-add where the CPU has FMA, else a
//! multiply and an add (`acc = acc·m + a`); 2 FLOPs per lane either way. Enough independent
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
    //! The kernels in assembly, so that the twelve accumulators live in
    //! registers 0–11 for the whole loop, the two constants in 12 and 13.
    //! Written as intrinsics, the scalar and SSE kernels kept their
    //! accumulators in memory (a load, the update and a store per step: a
    //! store-forwarding round trip in every chain, a tenth of the peak),
    //! and the AVX2 one, in registers but as `acc = acc·m + a`, reached a
    //! third of the peak on an EPYC guest where `acc += m·a` reaches all
    //! of it.

    /// `m` and `a`: `acc += m·a` grows an accumulator by 10⁻⁹ a step.
    static CONSTS: [f64; 2] = [0.999_999, 1e-9];

    /// `$p N $s` for the twelve accumulators N, one instruction a line.
    macro_rules! twelve {
        ($p:literal, $s:literal) => {
            concat!(
                $p, "0", $s, "\n", $p, "1", $s, "\n", $p, "2", $s, "\n", $p, "3", $s, "\n", $p,
                "4", $s, "\n", $p, "5", $s, "\n", $p, "6", $s, "\n", $p, "7", $s, "\n", $p, "8",
                $s, "\n", $p, "9", $s, "\n", $p, "10", $s, "\n", $p, "11", $s, "\n",
            )
        };
    }

    /// One kernel: `$load` puts the constants in registers 12 and 13,
    /// `$init` sets the accumulators, `$step` is one iteration's updates
    /// of all twelve, `$end` leaves the vector state clean.
    macro_rules! kernel {
        ($name:ident, $feat:literal, $load:expr, $init:expr, $step:expr, $end:literal) => {
            #[target_feature(enable = $feat)]
            #[inline(never)]
            pub unsafe fn $name(iterations: u64) {
                // SAFETY: the caller detected the width's features; only
                // registers are written (every vector register is
                // caller-saved in the C ABI: `clobber_abi`), `CONSTS` only
                // read.
                unsafe {
                    std::arch::asm!(
                        $load,
                        $init,
                        "2:",
                        $step,
                        "dec rcx",
                        "jnz 2b",
                        $end,
                        inout("rcx") iterations.max(1) => _,
                        in("rsi") CONSTS.as_ptr(),
                        clobber_abi("C"),
                        options(nostack, readonly),
                    );
                }
            }
        };
    }

    kernel!(
        scalar_fma,
        "fma",
        "vmovsd xmm12, qword ptr [rsi]\nvmovsd xmm13, qword ptr [rsi + 8]",
        twelve!("vmovapd xmm", ", xmm13"),
        twelve!("vfmadd231sd xmm", ", xmm12, xmm13"),
        "vzeroupper"
    );
    kernel!(
        scalar,
        "sse2",
        "movsd xmm12, qword ptr [rsi]\nmovsd xmm13, qword ptr [rsi + 8]",
        twelve!("movapd xmm", ", xmm13"),
        // acc = acc·m + a: a multiply and an add per lane, as without FMA.
        concat!(
            twelve!("mulsd xmm", ", xmm12"),
            twelve!("addsd xmm", ", xmm13")
        ),
        ""
    );
    kernel!(
        sse_fma,
        "fma",
        "vmovddup xmm12, qword ptr [rsi]\nvmovddup xmm13, qword ptr [rsi + 8]",
        twelve!("vmovapd xmm", ", xmm13"),
        twelve!("vfmadd231pd xmm", ", xmm12, xmm13"),
        "vzeroupper"
    );
    kernel!(
        sse,
        "sse2",
        "movsd xmm12, qword ptr [rsi]\nunpcklpd xmm12, xmm12\nmovsd xmm13, qword ptr [rsi + 8]\nunpcklpd xmm13, xmm13",
        twelve!("movapd xmm", ", xmm13"),
        concat!(twelve!("mulpd xmm", ", xmm12"), twelve!("addpd xmm", ", xmm13")),
        ""
    );
    kernel!(
        avx2,
        "avx2,fma",
        "vbroadcastsd ymm12, qword ptr [rsi]\nvbroadcastsd ymm13, qword ptr [rsi + 8]",
        twelve!("vmovapd ymm", ", ymm13"),
        twelve!("vfmadd231pd ymm", ", ymm12, ymm13"),
        "vzeroupper"
    );
    kernel!(
        avx512,
        "avx512f",
        "vbroadcastsd zmm12, qword ptr [rsi]\nvbroadcastsd zmm13, qword ptr [rsi + 8]",
        twelve!("vmovapd zmm", ", zmm13"),
        twelve!("vfmadd231pd zmm", ", zmm12, zmm13"),
        "vzeroupper"
    );
}
