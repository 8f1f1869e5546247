//! # pmx-kernels — small programs with known answers
//!
//! One job: run a piece of work whose effect on a counter is known before
//! it runs, so a measured count can be checked (`pmx check`) and the
//! machine's limits measured (`pmx roofline`). Each kernel states what it
//! does in numbers:
//!
//! - [`ops::branch_loop`]: `n` iterations of a decrement and a
//!   conditional jump in inline assembly (x86-64, AArch64): 2n
//!   instructions, n branches, n − 1 of them taken;
//! - [`chase::Chase`]: a pointer chase over a random cycle of cache
//!   lines, one load per step, inside L1 or far beyond the last-level
//!   cache (sizes from [`cache::CacheInfo`], the kernel's sysfs);
//! - [`triad::Triad`]: STREAM's triad `a[i] = b[i] + s·c[i]`, counted as
//!   STREAM counts it: 24 bytes per element;
//! - [`fma`]: fused multiply-adds per vector width the CPU has (scalar,
//!   SSE, AVX2, AVX-512, detected at run time), 2 FLOPs per lane each;
//! - [`ops::touch_pages`] (one page fault per page), [`ops::ping_pong`]
//!   (two context switches per round trip on one CPU), [`ops::spin`] and
//!   `std::thread::sleep` (CPU time against wall time), [`ops::tsc_hz`]
//!   (the time-stamp counter against the monotonic clock);
//! - [`clock::hz`]: the core's running clock from a chain of dependent
//!   additions (one a cycle), for roofline's FMA ceiling check.
//!
//! [`runner`] names the kernels so another process can run one
//! (`pmx check` counts them as a command, from exec to exit, and takes
//! the difference of two sizes so the start-up cancels).
//!
//! What this crate never does: open a counter, print, or read the
//! environment. It depends on no other pmx crate.

pub mod cache;
pub mod chase;
pub mod clock;
pub mod fma;
pub mod ops;
pub mod runner;
pub mod triad;
