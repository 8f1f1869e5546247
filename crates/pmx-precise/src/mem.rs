//! Memory-access samples (`perf record -d`, PEBS load latency, IBS op):
//! the memory report (`report --mem-mode`, `perf mem report`): the samples
//! replayed (`replay`: each instruction and data address resolved in
//! the maps of the sample's mode and moment; a file without rounds queues
//! its samples' fields, a few dozen bytes each), grouped by the memory
//! keys ([`keys`]) with each row's cost its samples' weight ([`report`]:
//! a row is its totals and its first sample, found by the hash of its
//! keys' values), ordered as perf orders them and named only when printed,
//! in perf's `--stdio` layout ([`table`]), its keys and columns
//! from perf's flags ([`mod@layout`]); `perf mem report -D`'s dump
//! ([`raw`]); pprof's profile and the flame graph of data objects
//! ([`export`]). A `data_src` in perf's words is
//! [`pmx_profile::data_src`], which `pmx script`'s memory fields use too.
//! The data-type keys (`type`, `typeoff`) decode the sampled instruction's
//! memory operand (`types`) for DWARF's answer, kept per instruction, each
//! answer (a DWARF type and offset) named once.

pub mod export;
pub mod keys;
pub mod layout;
pub mod raw;
mod replay;
pub mod report;
pub mod table;
mod types;

pub use export::MemExports;
pub use keys::{is_memory_key, MemKey, DEFAULT_SORT};
pub use layout::{layout, wanted, Layout};
pub use raw::{dump, RawOptions};
pub use report::{mem_report, MemError, MemEvent, MemOptions, MemReport, MemRow};
pub use table::MemColumns;

pub(crate) use replay::{run as replay_run, MemSample, Resolver};
