//! `PERF_RECORD_COMPRESSED` records, as `perf record -z` writes them: the
//! records of a round zstd-compressed by one streaming context (flushed
//! at the end of each batch, so a reader runs one decompressor over all
//! of them), each batch at most [`BATCH`] bytes of whole records so its
//! compressed bytes fit one record (a record's size is 16 bits) and
//! decompress to whole records. The `COMPRESSED` feature ([`Compressor::feature`])
//! says so in the file's header.

use crate::format::record_type;
use std::io::{self, Write};

/// Raw bytes per compressed record: zstd's worst case for 32 KiB stays
/// well under the 65,527 bytes one record can hold.
pub const BATCH: usize = 32 * 1024;

/// A streaming zstd compressor of records into COMPRESSED records.
pub struct Compressor {
    enc: zstd::stream::write::Encoder<'static, Vec<u8>>,
    batch: usize,
    /// Bytes of records given.
    pub raw_bytes: u64,
    /// Bytes of COMPRESSED records made (headers included).
    pub compressed_bytes: u64,
    level: u32,
}

impl Compressor {
    /// A compressor at zstd `level` (perf's `-z` is 1; 1 to 22).
    pub fn new(level: u32) -> io::Result<Compressor> {
        let enc = zstd::stream::write::Encoder::new(Vec::new(), level as i32)?;
        Ok(Compressor {
            enc,
            batch: 0,
            raw_bytes: 0,
            compressed_bytes: 0,
            level,
        })
    }

    /// The zstd level.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Add one record; a COMPRESSED record to write when the batch is
    /// full (given to `out`).
    pub fn add(
        &mut self,
        rec: &[u8],
        out: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.batch + rec.len() > BATCH {
            self.flush(out)?;
        }
        self.enc.write_all(rec)?;
        self.batch += rec.len();
        self.raw_bytes += rec.len() as u64;
        Ok(())
    }

    /// Compress what was added since the last flush into one COMPRESSED
    /// record, given to `out` (nothing when nothing was added).
    pub fn flush(&mut self, out: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        if self.batch == 0 {
            return Ok(());
        }
        self.enc.flush()?;
        let body = std::mem::take(self.enc.get_mut());
        self.batch = 0;
        let size = 8 + body.len();
        let size16 = u16::try_from(size)
            .map_err(|_| io::Error::other(format!("a compressed batch of {size} bytes")))?;
        let mut rec = Vec::with_capacity(size);
        rec.extend_from_slice(&record_type::COMPRESSED.to_le_bytes());
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&size16.to_le_bytes());
        rec.extend_from_slice(&body);
        self.compressed_bytes += size as u64;
        out(&rec)
    }

    /// The `COMPRESSED` feature's body: version 0, zstd (1), the level,
    /// the ratio (raw / compressed bytes, rounded down) and the ring size
    /// in bytes `mmap_len`.
    pub fn feature(&self, mmap_len: u32) -> Vec<u8> {
        let ratio = self.raw_bytes / self.compressed_bytes.max(1);
        let mut b = Vec::with_capacity(20);
        for v in [
            0u32,
            1,
            self.level,
            ratio.min(u32::MAX as u64) as u32,
            mmap_len,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }
}
