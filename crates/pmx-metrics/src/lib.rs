//! # pmx-metrics — derived metrics, the top-down tree, and why a value is missing
//!
//! Raw counts rarely answer a question; ratios do. This crate turns counts
//! into metrics (IPC, miss ratios, the top-down categories) and is strict
//! about two things other tools blur:
//!
//! - **Missing is not a number.** A metric whose input was not counted,
//!   not supported, not requested, or divided by zero has no value; it says
//!   which input and why, through every metric built on it:
//!   `l2_miss_ratio ← l2_misses ← L2_CACHE_MISS:TLB_WALK: not counted`.
//! - **Multiplexed values are estimates.** Each result carries the
//!   smallest running/enabled share among the inputs it actually used; below
//!   0.7 it is flagged.
//!
//! ## The model
//!
//! 1. [`formula`]: a small expression language — numbers, names of events,
//!    metrics and constants, `+ - * / %`, comparisons, `and`/`or`/`not`
//!    (also `&`, `|`, `!`), `X if C else Y`, `min`, `max`, `d_ratio`,
//!    `source_count`, `has_event`, `strcmp_cpuid_str` — parsed into a tree
//!    with byte spans, so errors point at the character. It reads what
//!    Intel's tables (`Formula`, `Threshold`) and perf's JSON (`MetricExpr`,
//!    `MetricThreshold`) contain, and what users type.
//! 2. [`Metric`]s live in a [`Library`], which binds every name in every
//!    formula once: to another metric, to perf's `duration_time`, or to an
//!    entry of its event table ([`EventRef`]), where spellings of one event
//!    share an entry ([`event_key`]: `cpu@X@` = `X`, `topdown-retiring` =
//!    `PERF_METRICS.RETIRING`, `:c1` = `:c=1`).
//! 3. An [`Evaluator`] computes metrics from [`Inputs`] (a [`Reading`] per
//!    event: a [`pmx_model::Count`], a scaled value, or why there is none)
//!    and a [`Machine`] (SMT, CPU counts, TSC frequency…), each metric once,
//!    into [`Evaluated`]: an [`Outcome`] (value, or [`Missing`] with its
//!    [`Reason`] and chain), the reliability, and any assumed values.
//! 4. [`TmaTree`] arranges the top-down metrics of a library into the
//!    hierarchy and finds the bottleneck ([`TmaReport`]).
//!
//! Sources of metrics: [`builtin`] (written here from Intel's, Yasin's and
//! AMD's published definitions; [`amd_pipeline`]: AMD's pipeline tree on
//! Zen 4 and 5), [`tables`] (Intel's metric tables in
//! Intel's format and in perf's format, found through `mapfile.csv` in an
//! events directory, else built into pmx: `pmx_events::tables`), and
//! [`perf_x86`] (Linux perf's AMD Zen tables, `x86/mapfile.csv` +
//! `amdzenN/*.json`, with the pipeline-utilization tree), and [`likwid`]
//! (LIKWID's performance groups by LIKWID's names — `MEM`, `FLOPS_DP`,
//! `L3` … — for Intel's server and client cores and AMD Zen 2–5; asked
//! for by name only, [`SourceKind::Groups`]).
//!
//! ## How the CLI uses it
//!
//! ```
//! use pmx_metrics::{Inputs, Library, Machine, Reading};
//! let cpu = "GenuineIntel-6-55-4".parse().unwrap();
//! let lib = Library::for_cpu(Some(&cpu), None); // Intel's tables built in (a dir's win)
//! // -M IPC,TopdownL1: what to count
//! let wanted = lib.select("IPC,TopdownL1").unwrap();
//! let first: Vec<_> = wanted.iter().map(|alts| alts[0]).collect();
//! let machine = Machine { smt_on: Some(false), ..Machine::default() };
//! let req = lib.requirements(&first, true, Some(&machine));
//! assert!(req.events.iter().any(|e| e.name == "IDQ_UOPS_NOT_DELIVERED.CORE"));
//! // … count req.events, then per run or interval:
//! let mut inputs = Inputs::new();
//! inputs.insert("instructions", Reading::count(3_000, 100, 100));
//! inputs.insert("cycles", Reading::count(1_000, 100, 50));
//! let mut ev = lib.evaluator(&inputs, &machine);
//! let (_, ipc) = ev.first_with_value(&wanted[0]).unwrap();
//! assert_eq!(ipc.value(), Some(1.5));
//! assert!(ipc.is_estimate()); // cycles ran half the time
//! let fe = ev.metric_named("tma_frontend_bound").unwrap();
//! assert_eq!(
//!     fe.missing().unwrap().to_string(),
//!     "Frontend_Bound ← IDQ_UOPS_NOT_DELIVERED.CORE: not requested"
//! );
//! ```

#![warn(missing_docs)]

pub mod amd_cache;
pub mod amd_pipeline;
pub mod builtin;
mod compile;
pub mod eval;
pub mod event;
pub mod formula;
pub mod library;
pub mod likwid;
pub mod perf_x86;
pub mod requirements;
pub mod tables;
pub mod tma;

pub use eval::{
    Evaluated, Evaluator, Inputs, KeyFn, Machine, Missing, Outcome, Reading, Reason, ESTIMATE_BELOW,
};
pub use event::{event_key, event_key_in, EventRef};
pub use formula::{Constant, Dialect, Formula, FormulaError};
pub use library::{
    Library, Metric, MetricId, MetricSource, MetricTable, SourceKind, Threshold, UnknownName,
};
pub use requirements::Requirements;
pub use tma::{Flag, TmaNode, TmaReport, TmaResult, TmaTree};

use pmx_model::cpu::CpuId;
use std::path::Path;

impl Library {
    /// The library for a CPU: the metric tables for it from `events_dir`
    /// (when given and they exist) — Intel's (`mapfile.csv` rows naming
    /// metric files) or perf's x86 layout (`x86/mapfile.csv` naming
    /// `amdzenN/`, [`perf_x86`]), told apart by their contents — else, on
    /// an Intel CPU, Intel's tables built into pmx; then pmx's built-in
    /// metrics. Problems loading the tables are kept in
    /// [`Library::warnings`], not fatal.
    pub fn for_cpu(cpu: Option<&CpuId>, events_dir: Option<&Path>) -> Library {
        let dirs: Vec<&Path> = events_dir.into_iter().collect();
        Library::for_cpu_dirs(cpu, &dirs)
    }

    /// [`Library::for_cpu`] over several events directories (`--events-dir`
    /// given more than once): each one's tables, in order; on an Intel CPU
    /// for which no directory has Intel's metric tables, the ones built
    /// into pmx ([`tables::load_builtin_intel_tables`]); then pmx's
    /// built-in metrics.
    pub fn for_cpu_dirs(cpu: Option<&CpuId>, events_dirs: &[&Path]) -> Library {
        let mut lib = Library::new();
        let mut intel_found = false;
        for &dir in events_dirs {
            let Some(cpu) = cpu else { break };
            let intel_layout = pmx_events::perf_json::layouts(dir)
                .iter()
                .any(|l| matches!(l, pmx_events::perf_json::Layout::Intel(_)));
            if intel_layout {
                match tables::load_intel_tables(dir, cpu) {
                    Ok(ts) => {
                        intel_found |= !ts.is_empty();
                        ts.into_iter().for_each(|t| lib.add_table(t));
                    }
                    Err(e) => lib.warnings.push(format!("Intel metric tables: {e}")),
                }
            }
            match perf_x86::load_perf_x86_tables(dir, cpu) {
                Ok(ts) => ts.into_iter().for_each(|t| lib.add_table(t)),
                Err(e) => lib.warnings.push(format!("perf's metric tables: {e}")),
            }
        }
        // No directory's Intel tables for an Intel CPU: the built-in ones.
        match cpu {
            Some(cpu) if !intel_found && cpu.vendor == pmx_model::cpu::Vendor::Intel => {
                match tables::load_builtin_intel_tables(cpu) {
                    Ok(ts) => ts.into_iter().for_each(|t| lib.add_table(t)),
                    Err(e) => lib
                        .warnings
                        .push(format!("built-in Intel metric tables: {e}")),
                }
            }
            _ => {}
        }
        lib.add_table(builtin::builtin_table(cpu));
        if let Some(t) = likwid::table(cpu) {
            lib.add_table(t);
        }
        lib
    }

    /// The top-down tree of the most preferred source that has one.
    pub fn tma_tree(&self) -> Option<TmaTree> {
        TmaTree::from_library(self)
    }
}
