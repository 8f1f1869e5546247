//! # pmx-profile — from samples to hotspots
//!
//! The model: a perf.data stream (read by `pmx-perfdata`) is replayed once.
//! Side-band records build the state a sample needs: COMM gives a thread its
//! command name, FORK copies a parent's name and maps, MMAP/MMAP2 add a
//! mapping `[start, end) → (binary, file offset)` to a process. A sample's
//! addresses are turned into **frames** by `pmx-symbols`' symbolizer (ELF
//! and DWARF symbols, kernel symbols when the file was recorded on this
//! machine, JIT maps, the vDSO, the build-id cache; see that crate's page),
//! with the [`pmx_symbols::SymbolOptions`] of [`Options::symbols`]: the
//! demangling style, the directories and the binary cache are passed in,
//! never read from the environment here. This crate owns what comes after
//! the frames: replay, aggregation, rendering, exports, annotation,
//! `pmx script`; it never parses a binary's symbols itself.
//!
//! A truncated file gives a [`Profile`] of its complete records with
//! [`Profile::truncated`] set and a warning.
//!
//! **Aggregation** ([`profile::build`]): per event, rows keyed by the
//! `--sort` keys (comm, pid, dso, symbol, cpu) with sample counts and the
//! sum of periods; the period share is perf's Overhead (`perf report
//! --no-children`: the leaf frame only). With stacks on, every sample's
//! call chain (markers `PERF_CONTEXT_*` dropped, root first, kernel frames
//! after user ones) is counted for [`flame::folded`] and [`flame::svg`].
//! A mapped file's plain samples are read in place and counted on
//! [`Options::jobs`] threads ([`set_jobs`]), with the same result as one.
//!
//! **DWARF call graphs** ([`pmx_symbols::unwind`]): samples recorded with
//! `--call-graph dwarf` (by pmx or perf) carry the user registers and a
//! copy of the user stack instead of a user call chain; when stacks are
//! asked for, their user frames are unwound at replay time (when the maps
//! of that moment are known) from each mapped binary's CFI (`.eh_frame`,
//! `.debug_frame`), tables loaded once per binary, and appended to the
//! kernel part of the chain. With [`Options::inline`] every user address
//! of a chain is preceded by the functions DWARF says were inlined there.
//!
//! **LBR call stacks** (`lbr`, private): an event recorded with
//! `--call-graph lbr` (`branch_sample_type` with `CALL_STACK`) gets the
//! chain perf builds from the branch stack (the kernel part, then the
//! newest call's target and every call's source) in reports, script,
//! folded stacks and the exports alike.
//!
//! **Reports** ([`report()`]): `pmx report` as a call, options in, a typed
//! [`Report`] out (the profile, the events selected, the rows to show);
//! [`render`] draws it as perf's table or as JSON.
//!
//! **Every sample** ([`script::script`]): `pmx script`, the same replay
//! streamed to a writer, one line per sample in `perf script`'s layout
//! (`-F` fields, call chains) or JSON lines; the lines formatted on
//! [`script::ScriptOptions::jobs`] threads, the output the same as one's.
//!
//! **A `data_src` in words** ([`data_src`]): the operation, level,
//! snoop, TLB, lock and block of a memory sample as perf writes them,
//! for `pmx script`'s memory fields and pmx-precise's memory reports.
//!
//! **Exports** ([`export`]): every sample (a
//! [`profile::sink::SampleSink`] on the replay) with its thread, time,
//! stack and weights per column, written as the Firefox Profiler's
//! processed profile ([`export::firefox`]) or pprof's `profile.proto`
//! ([`export::pprof`]).
//!
//! **Wall-clock time** ([`wallclock`]): a recording with `offcpu-time`
//! (`record --off-cpu`) and a clock event, each thread's time on the CPU
//! (the clock samples' periods) and off it (the waits) in nanoseconds,
//! per thread, function and stack; the exports and flame graphs of it.
//! An `offcpu-time` event's own flame graph and folded stacks weigh its
//! samples by their periods (nanoseconds), not their count.
//!
//! **Sample-read groups** (`{cycles,instructions}:S`): every sample of
//! the leader reads every member; each member is credited, at the
//! sample's row, its delta since the same counter's previous sample on
//! that thread (per id and thread, as perf; a zero delta is no sample of
//! it), so each member's own table and totals are right. The leader's
//! [`EventProfile::group`] holds every member's count per row with the
//! per-sample moments; [`render::group`] draws it as perf's `--group`
//! table (JSON, CSV), and [`group_metrics`] evaluates metrics per row
//! (formulas given by the caller) with a 95% interval. [`Deltas`] and
//! [`for_each_sample`] give other readers the same per-sample deltas.
//!
//! **Differential profiles** ([`diff::diff`]): two files reported alike,
//! their events paired by name and their rows by the sort keys' names
//! (DSO base name and symbol name, never addresses), each side's share of
//! its own total and the change in percentage points; rendered by
//! [`render::diff`] (table, JSON) and [`flame::diff`] (differential flame
//! graph, folded stacks with both counts).
//!
//! **Annotation** ([`annotate()`]): one function's x86-64 machine code
//! (iced-x86, in objdump's text) with each instruction's samples per
//! event, from the profile's places ([`build_with_addresses`]: per leaf
//! frame, binary and address, a set of per-event [`Weight`]s), its DWARF
//! source lines, rendered by [`annotate::render`] (text, JSON).

pub mod annotate;
pub mod data_src;
pub mod diff;
pub mod export;
pub mod flame;
pub mod group_metrics;
pub mod inject;
mod lbr;
pub mod perf_text;
pub mod profile;
pub mod render;
pub mod report;
pub mod script;
pub mod wallclock;

pub use annotate::{
    annotate, annotate_all, annotate_places, AnnotateError, AnnotateOptions, Annotation,
};
pub use diff::{default_sort, diff, Compute, DiffOptions, DiffReport};
pub use profile::{
    build, build_with_addresses, truncation_warning, AddressSamples, EventProfile, KernelSymbols,
    Live, LiveStats, MachineId, Options, Profile, Row, SortKey, Weight,
};
pub use profile::{
    for_each_sample, set_jobs, BinaryStack, Deltas, GroupRow, GroupTable, MemberDelta, Moments,
};
pub use report::{report, Report, ReportError, ReportOptions, StackEvent};

/// FNV-1a of `bytes`: a flame graph frame's colour, a file's stamp.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
