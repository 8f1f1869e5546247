//! # pmx-perfdata — the perf.data file format
//!
//! perf.data is what `perf record` writes and `perf report` reads. This
//! crate knows its bytes and nothing else (no syscalls beyond reading and
//! writing files, no other pmx crate but the pure values of `pmx-model`,
//! whose reader of the kernel's CPU lists it uses).
//!
//! The model:
//!
//! - A file starts with a [`format::FileHeader`]: the magic `PERFILE2`, the
//!   **attrs** section (one `perf_event_attr` per event, each with the
//!   section holding the sample **ids** of its file descriptors), the
//!   **data** section (the records) and a 256-bit bitmap of **feature**
//!   sections, whose index follows the data (hostname, build-ids, event
//!   names…).
//! - A **pipe** stream (`perf record -o -`) has a 16-byte header and only
//!   records: attrs come as `HEADER_ATTR` records, features as
//!   `HEADER_FEATURE` records, names as `EVENT_UPDATE`, in the stream.
//! - Every record starts with a `perf_event_header` (type, misc, size).
//!   A SAMPLE's fields depend on its event's `sample_type`; which event a
//!   record belongs to is found from its sample **id** (at a position
//!   fixed by `PERF_SAMPLE_IDENTIFIER`, or computed from the other bits),
//!   or is the only event when there is one. Side-band records (MMAP,
//!   COMM, FORK…) carry a `sample_id` trailer when the attr has
//!   `sample_id_all`; a READ record ([`read::ReadRecord`], `perf record
//!   -s`) holds a thread's total of an inherited counter, laid out by
//!   its `read_format` as a sample's `PERF_SAMPLE_READ` field.
//! - `COMPRESSED` records hold zstd-compressed records; perf compresses
//!   with one streaming context, so one decompressor runs over all of them
//!   and a record may straddle two of them.
//!
//! [`read::Reader`] reads both modes in one streaming pass with a fixed
//! buffer (memory does not grow with the file) and never panics on bad
//! input: every problem is an [`Error`] with the byte offset.
//! A file-mode file that is merely **truncated** is read as far as it
//! goes, as perf intends (`perf record` writes the data size and the
//! feature sections only when it finishes): when the data size is 0 or
//! runs past the end of the file, the records run to the end of the file
//! and stop cleanly before an incomplete last record; feature sections
//! the file ends before are skipped; [`Reader::truncation`] says what was
//! recovered. Pipe streams that end inside a record remain an error.
//! [`write::Writer`] writes file mode the way perf 6.1 reads it;
//! [`write::PipeWriter`] writes pipe mode (for standard output and FIFOs)
//! in the order `perf record -o -` does.
//! [`branch`] decodes and encodes a sample's branch stack (LBR and the
//! like: `PERF_SAMPLE_BRANCH_STACK`, with and without `hw_idx`, every
//! entry flag), [`Sample::branches`] its view in a sample.
//! [`stat`] reads and writes `perf stat record`'s records (`STAT`,
//! `STAT_ROUND`, `STAT_CONFIG`, `THREAD_MAP`, `CPU_MAP`, `EVENT_UPDATE`),
//! which the reader passes on as [`Record::Other`]; [`mem`] splits a
//! sample's `DATA_SRC` into its fields; [`topology`] the
//! `CPU_TOPOLOGY` and `NUMA_TOPOLOGY` features `perf stat report` folds
//! per-CPU counts with; [`tracing`] the `TRACING_DATA` feature (the
//! tracepoints' format files a reader decodes raw data with, read on
//! demand: the reader only notes where it is); [`sideband`] decodes the
//! `SWITCH`, `SWITCH_CPU_WIDE` and `NAMESPACES` records the reader passes
//! on as [`Record::Other`]; [`plain`] reads a plain sample's fields in
//! place (no decoding of the rest, no copy), for reports over a mapped file.

pub mod attr;
pub mod branch;
pub mod format;
pub mod mem;
pub mod plain;
pub mod read;
pub mod sideband;
pub mod stat;
pub mod topology;
pub mod tracing;
pub mod write;

pub use attr::{FileAttr, PerfEventAttr};
pub use read::{
    MappedData, MappedInode, ReadRecord, ReadValue, ReadValues, Reader, Record, Sample, Truncation,
};
pub use write::{BuildIdEntry, Features, PipeWriter, Writer};

/// An error reading or writing perf.data.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not valid perf.data; `offset` is where in the file
    /// (or pipe stream; for compressed records, the compressed record's
    /// offset) the problem was found.
    #[error("at byte {offset:#x}: {message}")]
    Format {
        /// Byte offset in the file or stream.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// A format error at `offset`.
    pub fn format(offset: u64, message: impl Into<String>) -> Error {
        Error::Format {
            offset,
            message: message.into(),
        }
    }
}
