//! # pmx — the Rust API
//!
//! What a program that embeds pmx sees. One job: instrument and measure
//! from Rust (and, through `pmx-capi` and `pmx-py`, from C and Python),
//! and the few commands that are only a lookup. The engines live in
//! crates of their own and are re-exported here under the paths users
//! know:
//!
//! - counting: `pmx-count` ([`stat`], [`stat_msr`], [`database`],
//!   [`metrics`], [`schedule`], [`launch`], [`msr`], [`eventlist`]);
//! - sampling: `pmx-record` ([`record`]);
//! - analyses of counts: `pmx-analysis` ([`analyze`], [`compare`],
//!   [`merge`], [`stat_file`], [`tma`], [`check`], [`roofline`]);
//! - work with known answers: `pmx-kernels` ([`kernels`], what `check`
//!   and `roofline` run).
//!
//! ## Instrumenting a program
//!
//! The same grammar, database and groups serve programs that count parts
//! of themselves, the way PAPI and LIKWID's marker API are used:
//!
//! - [`Counters`] ([`counters`]): events opened as perf groups on the
//!   calling thread, a process, a thread or CPUs; `enable`, `disable`,
//!   `reset`, and reads — [`Counters::read_into`] is one `read(2)` per
//!   group into buffers allocated once (or `rdpmc` from user space where
//!   the kernel allows it, [`pmx_perf::rdpmc`]); metrics (`IPC`, TMA
//!   nodes) through [`metrics`]. [`Backend::Msr`] programs the same
//!   events through `/dev/cpu/N/msr` instead.
//! - Regions ([`region`](mod@region)): `let _r = pmx::region("solve");`
//!   accumulates counts per region name and thread, nested regions
//!   inclusive; the cost of an empty region is measured and reported.
//!   [`results`] is the one results format (JSON file, table, CSV) the
//!   Rust API, the C ABI (`pmx-capi`, `include/pmx.h`) and
//!   `pmx stat --regions` share.
//! - [`measure`]: count a command in one call (`pmx stat`'s pipeline,
//!   the totals as values; the Python package's `pmx.stat`).
//! - [`recorder`]: a set of per-CPU handles (perf events or MSRs) read
//!   together every N ms into a buffer of fixed capacity, each with a
//!   transform (raw, delta modulo the counter width, a closure), dumped
//!   as CSV.
//!
//! ## Lookups as calls
//!
//! [`info::collect`] (what this machine is), [`catalog::list`] and
//! [`catalog::explain`] (the events known for a CPU, how one resolves),
//! [`events_fetch::events_fetch`] (Intel's tables into the events
//! directory), [`registers::encode`] and [`registers::decode`] (specs to
//! register values and back), [`completion`] (what a shell offers after
//! `-e` and `-M`). Where the event tables are by default
//! (`$PMX_EVENTS_DIR`, else the cache) is read in one place,
//! [`events_dirs::from_env`].
//!
//! Nothing here prints: the renderers live in `pmx-output`; the region
//! results render themselves to strings for the library's users.

mod backend;
mod backend_msr;
mod backend_rdpmc;
pub mod catalog;
pub mod completion;
pub mod counters;
pub mod events_dirs;
pub mod events_fetch;
pub mod info;
pub mod measure;
pub mod recorder;
pub mod region;
pub mod registers;
pub mod results;

// Every analysis module, one added later included, without naming it here.
pub use pmx_analysis::*;
pub use pmx_count::{
    console, database, eventlist, launch, metrics, msr, schedule, signals, stat, stat_msr,
};
pub use pmx_kernels as kernels;
pub use pmx_record as record;

pub use counters::{Backend, CountTarget, Counters, MsrOptions, Reading};
pub use database::{Database, DatabaseOptions};
pub use eventlist::{parse_event_list, EventGroup};
pub use region::region;
pub use stat::{aggregate, plan, run, Aggregation, RunOptions, Scope, StatPlan, StatRun};
