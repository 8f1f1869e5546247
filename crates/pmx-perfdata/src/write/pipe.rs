//! Pipe-mode perf.data, as `perf record -o -` writes it (perf 6.1, read
//! back with `perf report -D`): nothing is ever seeked, so what describes
//! the data comes first, as records.
//!
//! ```text
//! 0    pipe header: "PERFILE2", u64 16
//! 16   HEADER_ATTR per event: the attr, then the ids of its fds
//!      HEADER_FEATURE per feature known at the start: u64 feature id,
//!        then the body a file's feature section would hold
//!      EVENT_UPDATE (name) per event: u64 type 2, u64 its first id, the name
//!      the records, as given (FINISHED_ROUND markers among them)
//!      at finish: HEADER_BUILD_ID per binary, HEADER_FEATURE SAMPLE_TIME
//! ```
//!
//! perf writes its feature records before the records too; the build ids
//! and the time span are only known at the end, and perf's reader takes
//! them anywhere in the stream.

use super::{build_id_entry, check_record, feature_bodies, normalize_attr, Features};
use crate::attr::FileAttr;
use crate::format::{
    align_up, attr_size, feature, record_type, EventHeader, MAGIC, PIPE_HEADER_SIZE,
};
use std::io::{self, Write};

/// A pipe-mode perf.data writer over any [`Write`] (standard output, a
/// FIFO): [`PipeWriter::create`] writes the description, records follow
/// with [`PipeWriter::write_record`], [`PipeWriter::finish`] adds what is
/// known only at the end.
pub struct PipeWriter<W: Write> {
    out: W,
    data_size: u64,
}

/// `EVENT_UPDATE`'s type for a name (`PERF_EVENT_UPDATE__NAME`).
const UPDATE_NAME: u64 = 2;

/// A record of `kind` with `body` after its header; an error when it
/// does not fit a record's 16-bit size.
fn record(kind: u32, body: &[u8]) -> io::Result<Vec<u8>> {
    let size = 8 + body.len();
    let size = u16::try_from(size).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a pipe-mode record of type {kind} would need {size} bytes (at most 65535)"),
        )
    })?;
    let h = EventHeader {
        kind,
        misc: 0,
        size,
    };
    let mut r = h.to_bytes().to_vec();
    r.extend_from_slice(body);
    Ok(r)
}

impl<W: Write> PipeWriter<W> {
    /// Start a stream: the pipe header, the attrs with their ids, the
    /// features of `features` but the build ids and the time span (which
    /// [`PipeWriter::finish`] writes), the events' names.
    pub fn create(mut out: W, attrs: Vec<FileAttr>, features: &Features) -> io::Result<Self> {
        let mut attrs = attrs;
        for a in &mut attrs {
            a.attr = normalize_attr(&a.attr)?;
        }
        let mut head = MAGIC.to_le_bytes().to_vec();
        head.extend_from_slice(&PIPE_HEADER_SIZE.to_le_bytes());
        out.write_all(&head)?;
        for a in &attrs {
            let mut body = a.attr.clone();
            for id in &a.ids {
                body.extend_from_slice(&id.to_le_bytes());
            }
            out.write_all(&record(record_type::HEADER_ATTR, &body)?)?;
        }
        let attr_len =
            (attrs.iter().map(|a| a.attr.len()).max()).unwrap_or(attr_size::VER7 as usize);
        let start = Features {
            build_ids: Vec::new(),
            sample_time: None,
            // A pipe carries it as a HEADER_TRACING_DATA record, not written here.
            tracing_data: None,
            ..features.clone()
        };
        for (id, body) in feature_bodies(&attrs, attr_len, &start) {
            out.write_all(&feature_record(id, &body)?)?;
        }
        for a in &attrs {
            let Some(&id) = a.ids.first() else { continue };
            // perf's size: the update's 40-byte struct plus the name and
            // its NUL, 8-aligned.
            let size = align_up(40 + a.name.len() + 1, 8);
            let mut body = UPDATE_NAME.to_le_bytes().to_vec();
            body.extend_from_slice(&id.to_le_bytes());
            body.extend_from_slice(a.name.as_bytes());
            body.resize(size - 8, 0);
            out.write_all(&record(record_type::EVENT_UPDATE, &body)?)?;
        }
        Ok(PipeWriter { out, data_size: 0 })
    }

    /// Append one complete record (its header first, its size matching).
    pub fn write_record(&mut self, record: &[u8]) -> io::Result<()> {
        check_record(record)?;
        self.out.write_all(record)?;
        self.data_size += record.len() as u64;
        Ok(())
    }

    /// Tracing data (the TRACING_DATA feature of a file) as a pipe carries
    /// it: a HEADER_TRACING_DATA record, then the data padded to 8 bytes (the
    /// size the record gives).
    pub fn write_tracing_data(&mut self, data: &[u8]) -> io::Result<()> {
        let mut rec = crate::format::record_type::HEADER_TRACING_DATA
            .to_le_bytes()
            .to_vec();
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&16u16.to_le_bytes());
        // The size is the padded one (perf checks that it is).
        let padded = data.len().div_ceil(8) * 8;
        rec.extend_from_slice(&(padded as u32).to_le_bytes());
        rec.extend_from_slice(&[0; 4]);
        rec.extend_from_slice(data);
        rec.resize(16 + padded, 0);
        self.out.write_all(&rec)?;
        self.data_size += rec.len() as u64;
        Ok(())
    }

    /// Push what was written so far to the output (a reader on the other
    /// end of a pipe sees every record up to here).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Bytes of records written so far.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// The build ids of `features` as HEADER_BUILD_ID records and its
    /// time span as a SAMPLE_TIME feature record; flushes and returns the
    /// output.
    pub fn finish(mut self, features: &Features) -> io::Result<W> {
        for e in &features.build_ids {
            let mut r = build_id_entry(e);
            r[..4].copy_from_slice(&record_type::HEADER_BUILD_ID.to_le_bytes());
            self.out.write_all(&r)?;
        }
        if let Some((first, last)) = features.sample_time {
            let mut b = first.to_le_bytes().to_vec();
            b.extend_from_slice(&last.to_le_bytes());
            self.out
                .write_all(&feature_record(feature::SAMPLE_TIME, &b)?)?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A HEADER_FEATURE record: u64 feature id, then the section's body.
fn feature_record(id: u32, body: &[u8]) -> io::Result<Vec<u8>> {
    let mut b = u64::from(id).to_le_bytes().to_vec();
    b.extend_from_slice(body);
    record(record_type::HEADER_FEATURE, &b)
}
