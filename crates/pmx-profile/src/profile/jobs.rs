//! The counting threads of a report of several jobs (see [`super::plain`]).
//!
//! A [`Pool`] of threads, started once per report, each holding the
//! mapped data section ([`MappedData`]): the replay's thread sends it
//! batches of plain samples (their events and offsets), numbered in the
//! order they were applied; a thread counts a batch into a [`Part`] of
//! its own (raw stack → samples and summed period, in first-seen order)
//! and sends it back with its number. The replay's thread merges the
//! parts in that order, so the order of first appearance is the one a
//! single thread would have met. Nothing here knows the profile's state.

use pmx_perfdata::format::misc;
use pmx_perfdata::plain::{Layout, Plain};
use pmx_perfdata::MappedData;
use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{mpsc, Arc};

/// Plain samples to count: (event, offset of the record in the mapped
/// data section), in the order they were applied.
pub(super) type Batch = Vec<(u32, usize)>;

/// How a batch's samples are read and keyed.
#[derive(Clone)]
pub(super) struct Keying {
    /// Each event's layout (`None`: not read in place).
    pub(super) layouts: Arc<[Option<Layout>]>,
    /// The CPU is a sort key (else 0 in the key).
    pub(super) cpu: bool,
    /// Call chains are part of the key.
    pub(super) chains: bool,
}

/// The record at `offset` of `data` (a record the reader checked).
pub(super) fn record_at(data: &[u8], offset: usize) -> &[u8] {
    let size = data
        .get(offset + 6..offset + 8)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    data.get(offset..offset + size).unwrap_or(&[])
}

/// The fields of the plain sample of `event` at `offset` of `data`.
#[inline]
pub(super) fn read<'d>(
    layouts: &[Option<Layout>],
    data: &'d [u8],
    (event, offset): (u32, usize),
) -> Option<Plain<'d>> {
    let layout = layouts.get(event as usize).copied().flatten()?;
    layout.read(record_at(data, offset))
}

/// The raw stack of a plain sample, as `State::sample_interned` keys a
/// decoded one: event, CPU mode, address, pid and tid, the CPU when it
/// is a sort key (else 0), then the call chain when chains are kept.
#[inline]
pub(super) fn raw_key(raw: &mut Vec<u64>, event: u32, p: &Plain<'_>, cpu_key: bool, chains: bool) {
    raw.clear();
    let who = (u64::from(p.pid) << 32) | u64::from(p.tid);
    let mode = u64::from(p.misc & misc::CPUMODE_MASK);
    let cpu = if cpu_key { u64::from(p.cpu) } else { 0 };
    raw.extend_from_slice(&[u64::from(event), mode, p.ip, who, cpu]);
    if chains {
        raw.extend(
            p.chain
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
        );
    }
}

/// One batch's counts: raw stacks in first-seen order with their samples
/// and summed period. The stacks' words are kept in one array and found
/// by their hash (entries of the same hash chained), so counting a batch
/// allocates nothing once a part is used again ([`Part::clear`]).
#[derive(Default)]
pub(super) struct Part {
    /// Hash of a raw stack → its latest entry of that hash.
    index: HashMap<u64, u32>,
    entries: Vec<PartEntry>,
    words: Vec<u64>,
}

/// One raw stack of a part.
struct PartEntry {
    /// Its words in [`Part::words`].
    start: u32,
    len: u32,
    /// The previous entry of the same hash (`u32::MAX`: none).
    next: u32,
    samples: u64,
    period: u64,
}

impl Part {
    /// The raw stacks counted, in first-seen order, with their samples
    /// and summed period.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&[u64], u64, u64)> {
        self.entries.iter().map(|e| {
            let at = e.start as usize..e.start as usize + e.len as usize;
            (&self.words[at], e.samples, e.period)
        })
    }

    /// Empty, its memory kept.
    pub(super) fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.words.clear();
    }

    /// Count one sample of `raw` weighing `period`.
    #[inline]
    fn add(&mut self, raw: &[u64], period: u64) {
        let mut h = rustc_hash::FxHasher::default();
        raw.hash(&mut h);
        let hash = h.finish();
        let head = self.index.get(&hash).copied().unwrap_or(u32::MAX);
        let mut i = head;
        while let Some(e) = self.entries.get_mut(i as usize) {
            let at = e.start as usize..e.start as usize + e.len as usize;
            if self.words.get(at) == Some(raw) {
                e.samples += 1;
                e.period = e.period.saturating_add(period);
                return;
            }
            i = e.next;
        }
        self.index.insert(hash, self.entries.len() as u32);
        self.entries.push(PartEntry {
            start: self.words.len() as u32,
            len: raw.len() as u32,
            next: head,
            samples: 1,
            period,
        });
        self.words.extend_from_slice(raw);
    }
}

/// Count `samples` of `data` into `out` (emptied first).
pub(super) fn count_into(out: &mut Part, data: &[u8], samples: &[(u32, usize)], k: &Keying) {
    out.clear();
    let mut raw = Vec::new();
    for &s in samples {
        let Some(p) = read(&k.layouts, data, s) else {
            continue;
        };
        raw_key(&mut raw, s.0, &p, k.cpu, k.chains);
        out.add(&raw, p.period);
    }
}

/// Work for a counting thread.
enum Job {
    /// Count batch `seq` into `part`.
    Count {
        seq: u64,
        samples: Batch,
        keying: Keying,
        part: Part,
    },
    /// Map these bytes of the data section ahead of the reader.
    Page(usize, usize),
}

/// What a counting thread sends back: the batch's number, its part
/// (`None`: the thread failed, the batch is to be counted by the caller)
/// and the batch itself (its allocation used again).
pub(super) struct Counted {
    pub(super) seq: u64,
    pub(super) part: Option<Part>,
    pub(super) samples: Batch,
}

/// The counting threads.
pub(super) struct Pool {
    to: Vec<mpsc::Sender<Job>>,
    from: mpsc::Receiver<Counted>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// The thread the next job goes to.
    turn: usize,
}

impl Pool {
    /// `n` threads over `data`; `None` when none could be started.
    pub(super) fn start(n: usize, data: &MappedData) -> Option<Pool> {
        let (back, from) = mpsc::channel();
        let mut pool = Pool {
            to: Vec::new(),
            from,
            threads: Vec::new(),
            turn: 0,
        };
        for i in 0..n {
            let (to, jobs) = mpsc::channel::<Job>();
            let (data, back) = (data.clone(), back.clone());
            let thread = std::thread::Builder::new()
                .name(format!("pmx-count-{i}"))
                .spawn(move || work(&data, &jobs, &back));
            let Ok(thread) = thread else {
                break;
            };
            pool.to.push(to);
            pool.threads.push(thread);
        }
        (!pool.threads.is_empty()).then_some(pool)
    }

    /// How many threads count.
    pub(super) fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Send batch `seq` to the next thread, with an empty `part` to fill
    /// (its memory used again); the batch back when no thread takes it.
    pub(super) fn send(
        &mut self,
        seq: u64,
        samples: Batch,
        keying: &Keying,
        part: Part,
    ) -> Result<(), Batch> {
        let job = Job::Count {
            seq,
            samples,
            keying: keying.clone(),
            part,
        };
        match self.give(job) {
            Some(Job::Count { samples, .. }) => Err(samples),
            _ => Ok(()),
        }
    }

    /// Have the next thread map bytes `from..to` of the data section.
    pub(super) fn page(&mut self, from: usize, to: usize) {
        self.give(Job::Page(from, to));
    }

    /// `job` to the next thread that takes it; back when none does.
    fn give(&mut self, mut job: Job) -> Option<Job> {
        for _ in 0..self.to.len() {
            self.turn = (self.turn + 1) % self.to.len();
            match self.to[self.turn].send(job) {
                Ok(()) => return None,
                Err(mpsc::SendError(j)) => job = j,
            }
        }
        Some(job)
    }

    /// A counted batch, waiting for one when `wait`; `None` when none is
    /// ready (or, waiting, when every thread is gone).
    pub(super) fn receive(&self, wait: bool) -> Option<Counted> {
        if wait {
            self.from.recv().ok()
        } else {
            self.from.try_recv().ok()
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // The threads end when their channel closes.
        self.to.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A counting thread: jobs in, parts out, until either side closes.
fn work(data: &MappedData, jobs: &mpsc::Receiver<Job>, back: &mpsc::Sender<Counted>) {
    for job in jobs {
        let (seq, samples, keying, mut part) = match job {
            Job::Page(from, to) => {
                data.populate(from, to);
                continue;
            }
            Job::Count {
                seq,
                samples,
                keying,
                part,
            } => (seq, samples, keying, part),
        };
        let counted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            count_into(&mut part, data, &samples, &keying);
            part
        }));
        let out = Counted {
            seq,
            part: counted.ok(),
            samples,
        };
        if back.send(out).is_err() {
            return;
        }
    }
}
