//! Where a recording's records go: the [`RecordSink`] trait and its
//! implementations — a perf.data file ([`FileSink`], what `record` makes
//! of a seekable `-o`), pipe-mode perf.data into any writer
//! ([`PipeSink::new`]: `-o -`, a FIFO) and a live reader's stream
//! ([`PipeSink::live`]: what [`stream`](crate::stream) gives `top` and
//! `serve`). A caller's own sink gets the same calls through
//! [`record_into`](crate::record_into).

use pmx_io::OutFile;
use pmx_perfdata::write::{Features, PipeWriter, Writer};
use pmx_perfdata::FileAttr;
use std::io::{self, BufWriter, Write};

/// Where a recording's records go, in the order the session makes them.
///
/// `begin` once, then `record` for every record (the synthesized side
/// band, then each drain of the rings, each drain that brought records
/// ended by a `PERF_RECORD_FINISHED_ROUND` record: everything before it
/// may be sorted by time), `flush` after every drain, `finish` once. An
/// error from any call ends the recording with that error (the command
/// is stopped).
pub trait RecordSink: Send {
    /// The recording begins: every event's attr as the kernel was given
    /// it, with the ids of its file descriptors (the `id` of each sample)
    /// and its name; `start`: the features known now (command line,
    /// machine), which a pipe-mode stream writes in its header.
    fn begin(&mut self, attrs: Vec<FileAttr>, start: &Features) -> io::Result<()>;

    /// One record: perf.data's bytes, header first (a ring's record as
    /// the kernel wrote it, or one pmx synthesized).
    fn record(&mut self, rec: &[u8]) -> io::Result<()>;

    /// Several records laid end to end (a ring's bytes, whole records,
    /// each header's size leading to the next); the default hands each
    /// to [`RecordSink::record`].
    fn records(&mut self, recs: &[u8]) -> io::Result<()> {
        let mut at = 0;
        while let Some(h) = recs.get(at..at + 8) {
            let size = usize::from(u16::from_ne_bytes([h[6], h[7]]));
            let rec = recs.get(at..at + size).filter(|_| size >= 8);
            let rec = rec.ok_or_else(|| io::Error::other("a record runs past its buffer"))?;
            self.record(rec)?;
            at += size;
        }
        Ok(())
    }

    /// A live reader: the session ends every drain with a
    /// FINISHED_ROUND, records or not (at least every 100 ms), so the
    /// reader always knows how far time has come.
    fn live(&self) -> bool {
        false
    }

    /// The TRACING_DATA feature (the format files of the recorded
    /// tracepoints), given once, after `begin` and before any sample: a
    /// pipe writes it now, as perf's pipe mode carries it; a file gets it
    /// with the features at `finish`. The default ignores it.
    fn tracing_data(&mut self, data: &[u8]) -> io::Result<()> {
        let _ = data;
        Ok(())
    }

    /// After every drain of the rings.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The end: the features of the whole recording (build ids of the
    /// mapped binaries, the first and last sample's time, …). Returns
    /// the bytes the sink wrote (0 when it does not count them).
    fn finish(self: Box<Self>, features: &Features) -> io::Result<u64>;
}

/// What a pipe sink does with its writer at the end: the bytes to report.
type Done<W> = fn(BufWriter<W>, u64) -> io::Result<u64>;

/// Pipe-mode perf.data (what `perf record -o -` writes) into a writer.
pub struct PipeSink<W: Write + Send> {
    state: PipeState<W>,
    live: bool,
    done: Done<W>,
}

enum PipeState<W: Write + Send> {
    Ready(W),
    Writing(PipeWriter<BufWriter<W>>),
    Gone,
}

impl<W: Write + Send> PipeSink<W> {
    /// Pipe-mode perf.data into `out`, as a file or pipe reader reads it.
    pub fn new(out: W) -> PipeSink<W> {
        PipeSink {
            state: PipeState::Ready(out),
            live: false,
            done: |_, data| Ok(data),
        }
    }

    /// The same for a live reader: a FINISHED_ROUND and a flush after
    /// every drain of the rings.
    pub fn live(out: W) -> PipeSink<W> {
        PipeSink {
            live: true,
            ..PipeSink::new(out)
        }
    }

    fn writer(&mut self) -> io::Result<&mut PipeWriter<BufWriter<W>>> {
        match &mut self.state {
            PipeState::Writing(w) => Ok(w),
            _ => Err(io::Error::other("the recording has not begun")),
        }
    }
}

impl PipeSink<OutFile> {
    /// `-o -` or a FIFO: the output put in place at the end; its size
    /// is the bytes written.
    pub(crate) fn out_file(out: OutFile) -> PipeSink<OutFile> {
        PipeSink {
            done: |w, _| {
                let file = w.into_inner().map_err(|e| e.into_error())?;
                let bytes = file.size();
                file.commit()?;
                Ok(bytes)
            },
            ..PipeSink::new(out)
        }
    }
}

impl<W: Write + Send> RecordSink for PipeSink<W> {
    fn begin(&mut self, attrs: Vec<FileAttr>, start: &Features) -> io::Result<()> {
        let PipeState::Ready(out) = std::mem::replace(&mut self.state, PipeState::Gone) else {
            return Err(io::Error::other("the recording began twice"));
        };
        let w = PipeWriter::create(BufWriter::new(out), attrs, start)?;
        self.state = PipeState::Writing(w);
        Ok(())
    }

    fn record(&mut self, rec: &[u8]) -> io::Result<()> {
        self.writer()?.write_record(rec)
    }

    fn live(&self) -> bool {
        self.live
    }

    fn tracing_data(&mut self, data: &[u8]) -> io::Result<()> {
        self.writer()?.write_tracing_data(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.live {
            true => self.writer()?.flush(),
            false => Ok(()),
        }
    }

    fn finish(mut self: Box<Self>, features: &Features) -> io::Result<u64> {
        let done = self.done;
        let PipeState::Writing(w) = std::mem::replace(&mut self.state, PipeState::Gone) else {
            return Err(io::Error::other("the recording has not begun"));
        };
        let data = w.data_size();
        done(w.finish(features)?, data)
    }
}

/// A perf.data file in file mode (seekable: the header and feature
/// sections are written at the end), put in place when complete. The
/// session also compresses into it (`-z`) and switches it
/// (`--switch-output`), which only a file can take.
pub(crate) struct FileSink {
    state: FileState,
}

enum FileState {
    Ready(OutFile),
    Writing(Writer<BufWriter<OutFile>>),
    Gone,
}

impl FileSink {
    /// File-mode perf.data into `out`.
    pub(crate) fn new(out: OutFile) -> FileSink {
        FileSink {
            state: FileState::Ready(out),
        }
    }

    fn writer(&mut self) -> io::Result<&mut Writer<BufWriter<OutFile>>> {
        match &mut self.state {
            FileState::Writing(w) => Ok(w),
            _ => Err(io::Error::other("the recording has not begun")),
        }
    }

    /// Bytes of records written so far.
    pub(crate) fn data_size(&self) -> u64 {
        match &self.state {
            FileState::Writing(w) => w.data_size(),
            _ => 0,
        }
    }

    /// Write the feature sections (and `raw` ones, as `-z`'s) and put
    /// the file in place; its size.
    pub(crate) fn finish_with(
        self,
        features: &Features,
        raw: &[(u32, Vec<u8>)],
    ) -> io::Result<u64> {
        let FileState::Writing(w) = self.state else {
            return Err(io::Error::other("the recording has not begun"));
        };
        let file = w.finish_with(features, raw)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        let bytes = file.size();
        file.commit()?;
        Ok(bytes)
    }
}

impl RecordSink for FileSink {
    fn begin(&mut self, attrs: Vec<FileAttr>, _start: &Features) -> io::Result<()> {
        let FileState::Ready(out) = std::mem::replace(&mut self.state, FileState::Gone) else {
            return Err(io::Error::other("the recording began twice"));
        };
        self.state = FileState::Writing(Writer::create(BufWriter::new(out), attrs)?);
        Ok(())
    }

    fn record(&mut self, rec: &[u8]) -> io::Result<()> {
        self.writer()?.write_record(rec)
    }

    fn records(&mut self, recs: &[u8]) -> io::Result<()> {
        self.writer()?.write_records(recs)
    }

    fn finish(self: Box<Self>, features: &Features) -> io::Result<u64> {
        (*self).finish_with(features, &[])
    }
}
