//! # pmx-testkit — the helpers pmx's tests share
//!
//! One home for what the tests of several crates need, so each is written
//! once:
//!
//! - [`workload`]: work with exactly known effect on the counters
//!   ([`touch_pages`](workload::touch_pages): `n` fresh pages, `n` page
//!   faults), CPU spinning and pinning.
//! - [`events`]: event specs encoded as pmx encodes them.
//! - [`msr`]: fixture machines for the MSR backend: sparse `cpuN/msr`
//!   files (register N at byte 8·N) with the sysfs topology beside them,
//!   and reading and writing their registers.
//! - [`perfdata`]: the pieces of synthetic perf.data files (attrs, record
//!   headers, COMM and MMAP2 bodies, sample-id trailers) to feed
//!   `pmx_perfdata::Writer`.
//! - [`perf`]: the installed `perf`: is it there, and run `perf script` /
//!   `perf report` on a file.
//! - [`mutate`]: the fault campaign's seeded mutants of perf.data and
//!   text (CSV, JSON) files.
//! - [`answers`]: the DWARF answers file pmx keeps per binary, read on
//!   its own, its mutants and whether one is well formed (the fault
//!   campaign's `faults_answers.rs`).
//! - [`pprof`]: the rows and total of `go tool pprof -top`.
//! - [`process`]: stop a child as Ctrl-C would and collect its output;
//!   a thread's CPU-time clock (a test case's time bound).
//! - [`cc`]: compile a small C program for a test (or say why not).
//! - [`elf`]: crafted ELF files written byte by byte (broken section
//!   headers, `NOBITS` sections, absurd symbols) for the symbol and
//!   unwind code.
//! - [`shared`]: find the shared reference data that sits beside the
//!   repository (`../shared/data` or `$PMX_SHARED_DIR`).
//! - [`skip()`]: how a test that cannot run here says why and passes.
//!
//! ## Use
//!
//! Add it as a **dev-dependency** only (`pmx-testkit = { path =
//! "../pmx-testkit" }` under `[dev-dependencies]`); it is never published.
//! A test that needs something absent prints one `SKIP: …` line and
//! returns:
//!
//! ```no_run
//! # fn t() {
//! let Some(dir) = pmx_testkit::shared::shared_data("perfdata") else {
//!     return; // printed "SKIP: … is absent …"
//! };
//! # let _ = dir; }
//! ```
//!
//! ## Dependencies, and cargo's rule for dev-dependencies
//!
//! The kit depends on `pmx-model` (for [`events`]), `pmx-perf` (for
//! [`workload`]), `pmx-perfdata` (for [`perfdata`]), `libc` and
//! `tempfile`, and on nothing above them: no `pmx`, `pmx-msr`,
//! `pmx-events` or CLI crate, so that any crate's tests may use it.
//!
//! When crate X's *unit* tests (`#[cfg(test)]` in `src/`) use the kit and
//! the kit depends on X, cargo builds X twice: the kit sees the library X,
//! the tests the test build of X, and a value of one X's type is not a
//! value of the other's. So the kit's API passes std types (paths, bytes,
//! numbers) where it can. The exceptions: [`events::encode`] returns a
//! `pmx-model` type (not for `pmx-model`'s unit tests),
//! [`workload::Pages`] is `pmx-perf`'s (not for `pmx-perf`'s unit tests)
//! and [`perfdata::memory_writer`] returns a `pmx-perfdata` writer (not
//! for `pmx-perfdata`'s unit tests, which use the byte builders only).
//! Integration tests (`tests/`) see one copy of everything and may use it
//! all. Keep it that way: a helper that needs a type of `pmx`, `pmx-msr`
//! or another higher crate belongs in that crate's `tests/common`.

#![warn(missing_docs)]

pub mod answers;
pub mod cc;
pub mod elf;
pub mod events;
pub mod msr;
pub mod mutate;
pub mod perf;
pub mod perfdata;
pub mod pprof;
pub mod process;
pub mod shared;
pub mod workload;

/// Say why a test does not run here: one `SKIP: {reason}` line on stderr
/// (the test then returns and passes).
pub fn skip(reason: impl std::fmt::Display) {
    eprintln!("SKIP: {reason}");
}

/// Lossy UTF-8 text of a process's output bytes.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
