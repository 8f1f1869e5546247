//! `script --jobs N`'s pipeline for text lines with their call chain
//! under them ([`super::write::Lines::chain_lines_kept`] events, the
//! common case): N − 1 threads started once per run format whole
//! batches while the replay's thread reads, orders and applies the next
//! records.
//!
//! The replay's thread does everything a line's text depends on, in file
//! order: the sample's command (its name as of that sample) and its
//! chain's lines, found in (or formatted into) [`super::stacks`] with the
//! maps of that moment. A batch carries, per sample, its numbers, its
//! command's number and where its chain's lines are ([`TextRef`]), with
//! the read-only segments of those lines, the command names and the
//! events' formats ([`Lines`], shared); a job only formats the start of
//! each line and copies the chain's lines after it, into a buffer of its
//! own. The replay's thread writes the finished buffers in the batches'
//! order (as they are, not copied), so the output is one job's, byte for
//! byte. At most two batches per job are in flight: past that the
//! replay's thread waits for the oldest, so memory stays bounded.

use super::mem::MemFields;
use super::stacks::TextRef;
use super::write::{Lines, SampleRec, Writer};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};

/// Samples a batch holds before it is sent.
const BATCH: usize = 1 << 13;

/// One sample of a batch: what its line shows (64 bytes, where the
/// queued record is 150: the replay's thread copies little), its
/// command's number and its chain's lines.
pub(crate) struct Kept {
    event: u32,
    pid: u32,
    tid: u32,
    cpu: u32,
    time: u64,
    period: u64,
    comm: u32,
    text: TextRef,
    /// Its memory fields, when any is not zero.
    mem: Option<Box<MemFields>>,
}

impl Kept {
    /// Sample `s` with its command and its chain's lines.
    pub(crate) fn new(s: &SampleRec, comm: u32, text: TextRef) -> Kept {
        Kept {
            event: s.event as u32,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            time: s.time,
            period: s.period,
            comm,
            text,
            mem: (s.mem != MemFields::default()).then(|| Box::new(s.mem)),
        }
    }

    /// The record its line is formatted from (no call chain, branches
    /// or raw data: the line does not show them).
    fn record(&self) -> SampleRec {
        let mut s = SampleRec::taken();
        s.event = self.event as usize;
        (s.pid, s.tid, s.cpu) = (self.pid, self.tid, self.cpu);
        (s.time, s.period) = (self.time, self.period);
        s.mem = self.mem.as_deref().copied().unwrap_or_default();
        s
    }
}

/// What a batch's lines are made of, shared with the jobs.
pub(crate) struct Shared {
    /// The events' names and fields.
    pub(crate) lines: Arc<Lines>,
    /// The command names, by number.
    pub(crate) comms: Arc<Vec<String>>,
    /// The chains' lines ([`super::stacks::StackTexts::freeze`]).
    pub(crate) texts: Vec<Arc<Vec<u8>>>,
}

/// A batch sent to a job.
struct Job {
    seq: u64,
    shared: Shared,
    samples: Vec<Kept>,
    out: Vec<u8>,
}

/// A batch formatted: its lines and how many samples they are (the
/// samples' vector sent back empty, for reuse).
struct Done {
    seq: u64,
    out: Vec<u8>,
    samples: Vec<Kept>,
    n: u64,
}

/// The jobs, the batch being filled and the batches in flight.
pub(crate) struct Pipe {
    to: Vec<mpsc::Sender<Job>>,
    from: mpsc::Receiver<Done>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// The batch being filled.
    batch: Vec<Kept>,
    /// Batches sent, batches written.
    sent: u64,
    written: u64,
    /// Batches formatted, waiting for those before them.
    done: BTreeMap<u64, Done>,
    /// Buffers and vectors back from the jobs, for reuse.
    spare: Vec<(Vec<u8>, Vec<Kept>)>,
}

impl Pipe {
    /// A pipeline of `jobs` threads (the replay's thread not counted).
    pub(crate) fn new(jobs: usize) -> Pipe {
        let (back, from) = mpsc::channel();
        let mut to = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..jobs.max(1) {
            let (tx, rx) = mpsc::channel::<Job>();
            let back = back.clone();
            to.push(tx);
            threads.push(std::thread::spawn(move || work(&rx, &back)));
        }
        Pipe {
            to,
            from,
            threads,
            batch: Vec::new(),
            sent: 0,
            written: 0,
            done: BTreeMap::new(),
            spare: Vec::new(),
        }
    }

    /// Whether no sample waits in the batch being filled.
    pub(crate) fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Add a sample to the batch; true when the batch is full (to be
    /// [`Pipe::send`]).
    pub(crate) fn push(&mut self, s: &SampleRec, comm: u32, text: TextRef) -> bool {
        self.batch.push(Kept::new(s, comm, text));
        self.batch.len() >= BATCH
    }

    /// Send the batch (when it has samples) to the next job, with what
    /// its lines are made of, and write the batches finished in order;
    /// wait for the oldest while two per job are in flight.
    pub(crate) fn send(&mut self, shared: Shared, w: &mut Writer<'_>) -> std::io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let (mut out, samples) = self.spare.pop().unwrap_or_default();
        out.clear();
        let samples = std::mem::replace(&mut self.batch, samples);
        let seq = self.sent;
        let job = Job {
            seq,
            shared,
            samples,
            out,
        };
        let k = (seq % self.to.len() as u64) as usize;
        self.to[k].send(job).map_err(|_| failed())?;
        self.sent += 1;
        self.collect(false)?;
        self.write_ready(w)?;
        // The next batch to write is not formatted yet: wait for it.
        while self.sent - self.written > 2 * self.to.len() as u64 {
            self.collect(true)?;
            self.write_ready(w)?;
        }
        Ok(())
    }

    /// Write every batch sent, in order (the batch being filled must have
    /// been sent).
    pub(crate) fn drain(&mut self, w: &mut Writer<'_>) -> std::io::Result<()> {
        debug_assert!(self.batch.is_empty());
        self.write_ready(w)?;
        while self.written < self.sent {
            self.collect(true)?;
            self.write_ready(w)?;
        }
        Ok(())
    }

    /// Take the batches the jobs finished (waiting for one when `wait`).
    fn collect(&mut self, wait: bool) -> std::io::Result<()> {
        if wait {
            let d = self.from.recv().map_err(|_| failed())?;
            self.done.insert(d.seq, d);
        }
        while let Ok(d) = self.from.try_recv() {
            self.done.insert(d.seq, d);
        }
        Ok(())
    }

    /// Write the finished batches that come next.
    fn write_ready(&mut self, w: &mut Writer<'_>) -> std::io::Result<()> {
        while let Some(d) = self.done.remove(&self.written) {
            self.written += 1;
            let r = w.write_samples(&d.out, d.n);
            self.spare.push((d.out, d.samples));
            r?;
        }
        Ok(())
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.to.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A job's error: its thread stopped (it does not panic on formatted
/// samples; if it did, the output stops with an error, not with lines
/// missing).
fn failed() -> std::io::Error {
    std::io::Error::other("a script job failed")
}

/// A job: format the batches it is sent until the pipeline ends.
fn work(jobs: &mpsc::Receiver<Job>, back: &mpsc::Sender<Done>) {
    for mut job in jobs.iter() {
        let Shared {
            lines,
            comms,
            texts,
        } = &job.shared;
        let mut n = 0;
        for k in job.samples.drain(..) {
            let comm = comms.get(k.comm as usize).map_or("", String::as_str);
            let text = k.text.get(texts).unwrap_or_default();
            n += u64::from(lines.line_with_text(&mut job.out, &k.record(), comm, text));
        }
        let done = Done {
            seq: job.seq,
            out: job.out,
            samples: job.samples,
            n,
        };
        if back.send(done).is_err() {
            return;
        }
    }
}
