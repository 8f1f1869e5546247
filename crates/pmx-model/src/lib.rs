//! # pmx-model — the pure model of hardware performance counters
//!
//! Everything in this crate is a value: no files, no syscalls, no globals.
//! It is the vocabulary the other pmx crates speak.
//!
//! - [`register`]: the counter control registers of Intel and AMD cores, bit
//!   by bit. A [`register::Layout`] covers all 64 bits of a register with named
//!   fields (reserved ranges included), so any value decodes to a field table
//!   and any field table encodes back to exactly one value.
//! - [`spec`]: the event-spec grammar users type (`cpu/event=0x2e,umask=0x41/u`,
//!   `r412e:k`, `LONGEST_LAT_CACHE:MISS:c=1:i`), parsed into an
//!   [`spec::EventSpec`] with byte spans so errors point at the character.
//! - [`encoding`]: one event seen two ways — the control-register value pmx
//!   would write itself and the `perf_event_attr` the kernel is handed.
//! - [`cpu`]: CPU identity (vendor, family, model, stepping, the
//!   `GenuineIntel-6-55-4` key perf prints) and the microarchitecture name.
//! - [`topology`]: logical CPU → core → die → package.
//! - [`count`]: a counter reading with its enabled/running times.
//! - [`hash`]: a fast hash for the short names pmx looks up on hot paths.
//! - [`xml`]: text escaped for XML and SVG, the one rule of pmx's SVG
//!   writers.
//!
//! Arrows point into this crate only; it depends on nothing of pmx.

pub mod count;
pub mod cpu;
pub mod encoding;
pub mod hash;
pub mod legacy;
pub mod register;
pub mod spec;
pub mod topology;
pub mod xml;

pub use count::Count;
pub use cpu::{CpuId, Vendor};
pub use encoding::{Arch, EncodeError, EncodeOptions, Encoded, PerfAttr};
pub use register::{FieldDef, FieldKind, FieldValue, Layout, RegisterKind};
pub use spec::{parse_spec, EventSpec, SpecError};
