//! The drain stage: who empties the rings. Either the calling thread,
//! between its polls ([`Drain::Inline`]: every ring in turn, then a
//! FINISHED_ROUND), or **reader threads** of their own
//! ([`Drain::Threads`], `record --threads`, as perf's): each reader owns
//! some CPUs' rings, sleeps in `poll` on them and copies what they hold
//! into a buffer it hands to the calling thread, which stays the one
//! writer of the one file (counts, `--off-cpu`'s pairing, `-z`,
//! `--switch-output`). A ring is then emptied as soon as it passes its
//! wake-up mark, whatever the writer is doing (writing, synthesizing the
//! existing tasks at the start: the readers start first).
//!
//! Rounds with readers: a FINISHED_ROUND promises a reader of the file
//! that no later record is older than the ones before the round before
//! it. The writer numbers its rounds; a reader tags each buffer with the
//! round number it saw when it began emptying its rings; the next
//! FINISHED_ROUND is written only once every reader has handed in a
//! buffer begun after the last one was written. Every record written
//! after it was therefore still in a ring when that buffer was taken, so
//! it is younger than everything written before the previous round.
//!
//! Memory: the buffers waiting for the writer are bounded
//! ([`QUEUE_LIMIT`]); past it a reader leaves its rings alone, and the
//! kernel drops what does not fit and says so (LOST records, counted in
//! the summary), as without readers.

use super::open::Ring;
use super::sink::Sink;
use super::target::{self, Lifecycle};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Bytes read from the rings and not yet written, above which readers
/// stop reading (1 GiB: a writer that slow has lost anyway).
pub(super) const QUEUE_LIMIT: usize = 1 << 30;

/// How a reader sleeps at most between two looks at its rings (ms).
const READER_SLEEP_MS: i32 = 100;

/// Who drains the rings.
pub(super) enum Drain {
    /// The calling thread, between its polls.
    Inline(Vec<Ring>),
    /// Reader threads.
    Threads(Readers),
}

impl Drain {
    /// The rings drained by `threads` reader threads (dealt round-robin;
    /// no more threads than rings), or by the calling thread when
    /// `threads` is 0.
    pub(super) fn start(rings: Vec<Ring>, threads: usize) -> io::Result<Drain> {
        match threads {
            0 => Ok(Drain::Inline(rings)),
            n => Readers::start(rings, n).map(Drain::Threads),
        }
    }

    /// Drain into `sink` until `life` says the recording is over; the
    /// time recorded.
    pub(super) fn until_over(
        &mut self,
        life: &mut Lifecycle,
        sink: &mut Sink,
    ) -> io::Result<Duration> {
        let mut poll_set: Vec<i32> = match self {
            Drain::Inline(rings) => rings.iter().map(|r| r.fd).collect(),
            Drain::Threads(r) => vec![r.shared.wake.as_raw_fd()],
        };
        poll_set.extend(life.poll_fd());
        loop {
            match self {
                Drain::Inline(rings) => sink.drain(rings)?,
                Drain::Threads(r) => r.take(sink, false)?,
            }
            sink.maybe_switch()?;
            if life.over() {
                return Ok(life.elapsed());
            }
            target::poll_fds(&poll_set, life.timeout_ms());
        }
    }

    /// The last drain, once the events are disabled: what is left in the
    /// rings goes into `sink`, and the rings are unmapped.
    pub(super) fn finish(self, sink: &mut Sink) -> io::Result<()> {
        match self {
            Drain::Inline(mut rings) => sink.drain(&mut rings),
            Drain::Threads(r) => r.finish(sink),
        }
    }
}

/// What the readers and the writer share.
struct Shared {
    /// The writer's round number: bumped after each FINISHED_ROUND.
    round: AtomicU64,
    /// The readers end after one more pass.
    stop: AtomicBool,
    /// An eventfd, readable when a buffer waits for the writer.
    wake: OwnedFd,
    /// An eventfd the readers poll too: written once, to end their sleep.
    stop_fd: OwnedFd,
    /// Bytes handed over and not yet written.
    queued: AtomicUsize,
}

/// What a reader hands over: the bytes of its rings' records and the
/// round it began at.
struct Chunk {
    reader: usize,
    round: u64,
    bytes: Vec<u8>,
}

/// The reader threads and the writer's side of them.
pub(super) struct Readers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<Vec<Ring>>>,
    chunks: mpsc::Receiver<Chunk>,
    /// Per reader: emptied buffers going back to it.
    spare: Vec<mpsc::Sender<Vec<u8>>>,
    /// Per reader: the latest round a buffer of its began at.
    seen: Vec<u64>,
    /// Records were written since the last FINISHED_ROUND.
    pending: bool,
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd has no memory-safety preconditions.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Add one to an eventfd (it becomes readable).
fn signal(fd: &OwnedFd) {
    let one = 1u64;
    // SAFETY: writes 8 bytes from a local to an fd we own; a full counter
    // (EAGAIN) is readable already.
    unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

/// Reset an eventfd to not readable.
fn clear(fd: &OwnedFd) {
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into a local; non-blocking.
    unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
}

impl Readers {
    fn start(rings: Vec<Ring>, threads: usize) -> io::Result<Readers> {
        let n = threads.min(rings.len()).max(1);
        let shared = Arc::new(Shared {
            round: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            wake: eventfd()?,
            stop_fd: eventfd()?,
            queued: AtomicUsize::new(0),
        });
        let mut dealt: Vec<Vec<Ring>> = (0..n).map(|_| Vec::new()).collect();
        for (i, r) in rings.into_iter().enumerate() {
            dealt[i % n].push(r);
        }
        let (tx, chunks) = mpsc::channel();
        let mut r = Readers {
            shared,
            threads: Vec::new(),
            chunks,
            spare: Vec::new(),
            seen: vec![0; n],
            pending: false,
        };
        for (me, rings) in dealt.into_iter().enumerate() {
            let (give, back) = mpsc::channel();
            let (sh, tx) = (Arc::clone(&r.shared), tx.clone());
            let t = std::thread::Builder::new()
                .name(format!("pmx-ring-{me}"))
                .spawn(move || read_loop(me, rings, &sh, &tx, &back))?;
            r.threads.push(t);
            r.spare.push(give);
        }
        Ok(r)
    }

    /// Write every buffer handed over so far into `sink`, and a
    /// FINISHED_ROUND when every reader has begun a buffer since the last
    /// one (`last`: the readers have ended; one closes what came).
    fn take(&mut self, sink: &mut Sink, last: bool) -> io::Result<()> {
        clear(&self.shared.wake);
        while let Ok(c) = self.chunks.try_recv() {
            self.shared
                .queued
                .fetch_sub(c.bytes.len(), Ordering::Relaxed);
            self.pending |= sink.write_chunk(&c.bytes)?;
            self.seen[c.reader] = self.seen[c.reader].max(c.round);
            let mut bytes = c.bytes;
            bytes.clear();
            let _ = self.spare[c.reader].send(bytes);
        }
        let round = self.shared.round.load(Ordering::Relaxed);
        if last || self.seen.iter().all(|&s| s >= round) {
            sink.end_round(std::mem::take(&mut self.pending))?;
            self.shared.round.store(round + 1, Ordering::Release);
        }
        Ok(())
    }

    /// End the readers (each empties its rings once more), write what
    /// they read, and unmap the rings.
    fn finish(mut self, sink: &mut Sink) -> io::Result<()> {
        self.shared.stop.store(true, Ordering::Release);
        signal(&self.shared.stop_fd);
        let mut rings = Vec::new();
        let mut panicked = false;
        for t in std::mem::take(&mut self.threads) {
            match t.join() {
                Ok(r) => rings.extend(r),
                Err(_) => panicked = true,
            }
        }
        self.take(sink, true)?;
        drop(rings);
        match panicked {
            true => Err(io::Error::other("a ring reader thread failed")),
            false => Ok(()),
        }
    }
}

impl Drop for Readers {
    /// On an error before [`Readers::finish`]: the readers are told to
    /// end (and end at their next look), so no thread outlives the
    /// recording.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        signal(&self.shared.stop_fd);
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}

/// A reader thread: empty the rings into a buffer, hand it over, sleep
/// until a ring passes its wake-up mark (or [`READER_SLEEP_MS`]); after
/// the stop, one last pass. Returns the rings, to be unmapped by the
/// writer after the last records are written.
fn read_loop(
    me: usize,
    mut rings: Vec<Ring>,
    sh: &Shared,
    tx: &mpsc::Sender<Chunk>,
    spare: &mpsc::Receiver<Vec<u8>>,
) -> Vec<Ring> {
    let mut fds: Vec<libc::pollfd> = (rings.iter().map(|r| r.fd))
        .chain([sh.stop_fd.as_raw_fd()])
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let stopping = sh.stop.load(Ordering::Acquire);
        let round = sh.round.load(Ordering::Acquire);
        let mut bytes = spare.try_recv().unwrap_or_default();
        if sh.queued.load(Ordering::Relaxed) < QUEUE_LIMIT {
            for r in &mut rings {
                r.mmap.read_into(&mut bytes);
            }
        }
        sh.queued.fetch_add(bytes.len(), Ordering::Relaxed);
        let chunk = Chunk {
            reader: me,
            round,
            bytes,
        };
        if tx.send(chunk).is_err() || stopping {
            break;
        }
        signal(&sh.wake);
        // SAFETY: `fds` is a valid array of fds.len() pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, READER_SLEEP_MS) };
        for p in &mut fds {
            // A ring whose event has ended (its task exited) stays
            // readable for good: it is still emptied at every pass, but
            // no longer wakes the reader.
            if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                p.fd = -1;
            }
        }
    }
    signal(&sh.wake);
    rings
}
