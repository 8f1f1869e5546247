//! Plain samples read in place, counted in batches on every core.
//!
//! In a file's report, a plain sample (its event records only fixed
//! fields and a call chain: [`pmx_perfdata::plain`]; no sink, address
//! table or `--tid`) of a mapped file is never decoded into a `Sample`
//! or copied: the replay queues its offset, and once its round is
//! applied it is counted into the interned stacks
//! ([`super::interned`]): at once with one job, else through a batch.
//!
//! With several jobs the replay's thread and the counting threads
//! ([`super::jobs`]) work at the same time, as a pipeline: applied
//! samples gather in a batch; a full batch is numbered and sent to a
//! counting thread, which counts it into a part of its own (raw stack →
//! samples and period, in first-seen order) while the replay's thread
//! reads and orders the next records; finished parts are merged, in the
//! batches' order, into the replay's stack table (a stack already there
//! adds its counts, a new one is resolved then, with the maps of that
//! moment). When the threads are behind, the replay's thread counts the
//! batch itself into a part (in its place in the order). Before any
//! other record is applied (a map, a command, a fork: what changes a
//! stack's meaning) and at the end, every batch is counted and merged
//! (the batch in progress cut among the threads when it is big). The
//! merged table is what one thread would have built (the same entries in
//! the same first-seen order, the same sums), so the report is the same
//! byte for byte; symbolization stays on the replay's thread. A counting
//! thread also maps the data section ahead of the reader, so that the
//! replay's thread does not take the page faults of the first touch.

use super::aggregate::{RawKey, State};
use super::interned::StackTable;
use super::jobs::{self, Batch, Keying, Part, Pool};
use pmx_perfdata::plain::Layout;
use pmx_perfdata::MappedData;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Samples per batch: what a full batch holds (its offsets: 16 bytes
/// each, and the mapped pages from its lowest offset on, which the
/// reader keeps: at most [`SPAN`] bytes) bounds the memory
/// the batching adds. (2^18 held ~23 MiB of pages: a third of the peak
/// RSS at 1.25M samples.)
const BATCH: usize = 1 << 16;
/// A batch is counted when its samples span this many bytes of the
/// file (the pages from its lowest offset on stay mapped until then).
const SPAN: usize = 4 << 20;
/// Below this many samples per job a batch is counted on one thread.
const PER_JOB: usize = 1 << 13;
/// Batches sent and not counted yet, per counting thread, beyond which
/// the replay's thread counts the next one itself.
const AHEAD: usize = 2;

/// With counting threads, the data section is mapped this far ahead of
/// the reader, this much at a time (`MappedData::populate`).
const PAGE_LEAD: usize = 6 << 20;
const PAGE_STEP: usize = 2 << 20;

/// The jobs of a report whose options leave it to the process (0: the
/// machine's cores); see [`set_jobs`]. One unless told: the rule of
/// `pmx report` and `pmx script` alike (docs/BENCHMARKS.md, issue 43:
/// on a busy 2-CPU machine a second job cost 11–13% more CPU time and
/// saved no wall time).
static JOBS: AtomicUsize = AtomicUsize::new(1);

/// How many threads count a file's plain samples in reports whose
/// [`Options::jobs`](super::Options::jobs) is 0 (`pmx report --jobs N`):
/// 0 is the machine's cores, 1 (the default) counts on the replay's
/// thread.
pub fn set_jobs(n: usize) {
    JOBS.store(n, Ordering::Relaxed);
}

/// The jobs to use for `asked` (0: the process's setting, else the cores).
pub(super) fn jobs(asked: usize) -> usize {
    match (asked, JOBS.load(Ordering::Relaxed)) {
        (0, 0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        (0, n) | (n, _) => n,
    }
}

/// A batch numbered and not merged yet.
enum Slot {
    /// With a counting thread; the lowest offset of its samples.
    Out(usize),
    /// Counted.
    Done(Part),
    /// To count on the replay's thread when its turn comes (its thread
    /// failed); its lowest offset.
    Back(Batch, usize),
}

/// The plain samples whose rounds were applied, not yet counted.
pub(super) struct Pending {
    /// The batch in progress: (event, offset of the record in the
    /// mapped data section).
    samples: Batch,
    /// The lowest and highest offsets of `samples` (pushed in time
    /// order, not in the file's).
    low: usize,
    high: usize,
    /// Each event's layout (`None`: not read in place).
    pub(super) layouts: Arc<[Option<Layout>]>,
    /// The mapped data section, for the counting threads.
    pub(super) data: Option<MappedData>,
    jobs: usize,
    /// The counting threads, started when a batch first needs them.
    pool: Option<Pool>,
    /// They could not be started: everything is counted here.
    no_pool: bool,
    /// The batches numbered and not merged, in order; the first's
    /// number is `first`.
    slots: VecDeque<Slot>,
    first: u64,
    /// Batches and parts (allocations) to use again.
    spare: Vec<Batch>,
    spare_parts: Vec<Part>,
    /// The data section is being mapped ahead of the reader up to here.
    paged: usize,
}

/// Count the plain sample `s` of `data` into `t` (one thread's way).
#[inline]
fn count_one(
    st: &mut State<'_>,
    t: &mut StackTable<RawKey>,
    k: (bool, bool),
    data: &[u8],
    s: (u32, usize),
    layouts: &[Option<Layout>],
) {
    let Some(p) = jobs::read(layouts, data, s) else {
        return;
    };
    jobs::raw_key(&mut t.raw, s.0, &p, k.0, k.1);
    st.count_raw(t, 1, p.period);
}

impl Pending {
    /// An empty batch for a report using `jobs` threads.
    pub(super) fn new(jobs: usize) -> Pending {
        Pending {
            samples: Vec::new(),
            low: usize::MAX,
            high: 0,
            layouts: Arc::from([]),
            data: None,
            jobs: jobs.max(1),
            pool: None,
            no_pool: false,
            slots: VecDeque::new(),
            first: 0,
            spare: Vec::new(),
            spare_parts: Vec::new(),
            paged: 0,
        }
    }

    /// Add a plain sample of `event` at `offset`; counted when the batch
    /// is full, or at once by a report of one job (the same order: a
    /// batch is counted before anything else is applied).
    #[inline]
    pub(super) fn push(&mut self, event: u32, offset: usize, st: &mut State<'_>, data: &[u8]) {
        if self.jobs == 1 {
            let Some(mut t) = st.interned.take() else {
                return;
            };
            let k = (st.keys[4], st.wants_chains());
            count_one(st, &mut t, k, data, (event, offset), &self.layouts);
            st.interned = Some(t);
            return;
        }
        self.samples.push((event, offset));
        (self.low, self.high) = (self.low.min(offset), self.high.max(offset));
        if self.samples.len() >= BATCH || self.high - self.low >= SPAN {
            self.submit(st, data);
        }
    }

    /// The reader is at `offset` of the data section: with counting
    /// threads, one maps the pages ahead of it (their faults off this
    /// thread).
    #[inline]
    pub(super) fn reading(&mut self, offset: usize) {
        if self.jobs > 1 && offset + PAGE_LEAD > self.paged {
            self.page_ahead(offset);
        }
    }

    #[cold]
    fn page_ahead(&mut self, offset: usize) {
        let from = self.paged.max(offset);
        let to = from + PAGE_STEP;
        self.paged = to;
        if let Some(pool) = self.pool() {
            pool.page(from, to);
        }
    }

    /// The lowest offset of the samples waiting to be read (the first
    /// pushed is the oldest in time, not always the first in the file: a
    /// page dropped under a later one would be read again, and stay
    /// mapped).
    pub(super) fn oldest(&self) -> Option<usize> {
        let current = (!self.samples.is_empty()).then_some(self.low);
        let out = self.slots.iter().filter_map(|s| match s {
            Slot::Out(low) | Slot::Back(_, low) => Some(*low),
            Slot::Done(_) => None,
        });
        current.into_iter().chain(out).min()
    }

    /// How samples are keyed in `st`.
    fn keying(&self, st: &State<'_>) -> Keying {
        Keying {
            layouts: self.layouts.clone(),
            cpu: st.keys[4],
            chains: st.wants_chains(),
        }
    }

    /// The counting threads, started if need be (`None`: there are none).
    fn pool(&mut self) -> Option<&mut Pool> {
        if self.pool.is_none() && !self.no_pool {
            let started = self
                .data
                .as_ref()
                .and_then(|d| Pool::start(self.jobs - 1, d));
            self.no_pool = started.is_none();
            self.pool = started;
        }
        self.pool.as_mut()
    }

    /// The batch in progress, taken (an empty one in its place).
    fn take_batch(&mut self) -> (Batch, usize) {
        let fresh = self.spare.pop().unwrap_or_default();
        let batch = std::mem::replace(&mut self.samples, fresh);
        let low = self.low;
        (self.low, self.high) = (usize::MAX, 0);
        (batch, low)
    }

    /// A full batch: to a counting thread, or counted here when they are
    /// behind (or there are none); the parts ready merged.
    fn submit(&mut self, st: &mut State<'_>, data: &[u8]) {
        self.merge_ready(st, data, false);
        let (batch, low) = self.take_batch();
        let keying = self.keying(st);
        let out = self
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Out(_)))
            .count();
        let seq = self.first + self.slots.len() as u64;
        let part = self.spare_parts.pop().unwrap_or_default();
        let batch = match self.pool() {
            Some(pool) if out < AHEAD * pool.threads() => {
                match pool.send(seq, batch, &keying, part) {
                    Ok(()) => {
                        self.slots.push_back(Slot::Out(low));
                        return;
                    }
                    Err(batch) => batch,
                }
            }
            _ => {
                self.spare_parts.push(part);
                batch
            }
        };
        self.count_here(st, data, batch, &keying);
    }

    /// Count `batch` on this thread: into the stack table when nothing
    /// before it waits, else into a part in its place.
    fn count_here(&mut self, st: &mut State<'_>, data: &[u8], mut batch: Batch, k: &Keying) {
        if self.slots.is_empty() {
            if let Some(mut t) = st.interned.take() {
                for &s in &batch {
                    count_one(st, &mut t, (k.cpu, k.chains), data, s, &k.layouts);
                }
                st.interned = Some(t);
            }
        } else {
            let mut part = self.spare_parts.pop().unwrap_or_default();
            jobs::count_into(&mut part, data, &batch, k);
            self.slots.push_back(Slot::Done(part));
        }
        batch.clear();
        self.spare.push(batch);
    }

    /// Merge the counted parts at the head of the order; waiting for
    /// those still counted when `all`, until none is left.
    fn merge_ready(&mut self, st: &mut State<'_>, data: &[u8], all: bool) {
        loop {
            match self.slots.front_mut() {
                None => return,
                Some(Slot::Out(_)) => {
                    let waited = self.pool.as_ref().and_then(|p| p.receive(all));
                    let Some(c) = waited else {
                        if !all {
                            return;
                        }
                        // Every thread is gone (it cannot happen: they end
                        // with the pool): what they held is lost to them,
                        // not to the report.
                        unreachable_threads(&mut self.slots);
                        continue;
                    };
                    self.place(c);
                }
                Some(_) => {
                    let Some(slot) = self.slots.pop_front() else {
                        return;
                    };
                    self.first += 1;
                    self.merge(st, data, slot);
                }
            }
        }
    }

    /// A batch counted by a thread, into its place.
    fn place(&mut self, c: jobs::Counted) {
        let Some(i) = c.seq.checked_sub(self.first).map(|i| i as usize) else {
            return;
        };
        let Some(Slot::Out(low)) = self.slots.get(i) else {
            return;
        };
        let low = *low;
        self.slots[i] = match c.part {
            Some(part) => {
                let mut samples = c.samples;
                samples.clear();
                self.spare.push(samples);
                Slot::Done(part)
            }
            None => Slot::Back(c.samples, low),
        };
    }

    /// Merge one slot (the first in the order) into the stack table.
    fn merge(&mut self, st: &mut State<'_>, data: &[u8], slot: Slot) {
        let Some(mut t) = st.interned.take() else {
            return;
        };
        match slot {
            Slot::Done(mut part) => {
                for (key, n, period) in part.entries() {
                    t.raw.clear();
                    t.raw.extend_from_slice(key);
                    st.count_raw(&mut t, n, period);
                }
                part.clear();
                self.spare_parts.push(part);
            }
            Slot::Back(mut batch, _) => {
                let k = (st.keys[4], st.wants_chains());
                for &s in &batch {
                    count_one(st, &mut t, k, data, s, &self.layouts);
                }
                batch.clear();
                self.spare.push(batch);
            }
            Slot::Out(_) => {}
        }
        st.interned = Some(t);
    }

    /// Count every sample waiting into `st`'s interned stacks: before
    /// another record is applied, and at the end.
    pub(super) fn count(&mut self, st: &mut State<'_>, data: &[u8]) {
        if self.samples.is_empty() && self.slots.is_empty() {
            return;
        }
        let (mut batch, low) = self.take_batch();
        let keying = self.keying(st);
        // A big batch is cut among the threads and this one.
        let parts = (batch.len() / PER_JOB).min(self.jobs);
        if parts > 1 && self.pool().is_some() {
            let per = batch.len().div_ceil(parts);
            let mut rest = batch.split_off(per * (parts - 1));
            for chunk in batch.chunks(per) {
                let seq = self.first + self.slots.len() as u64;
                let Some(pool) = self.pool.as_mut() else {
                    break;
                };
                let low = chunk.iter().map(|s| s.1).min().unwrap_or(low);
                let part = self.spare_parts.pop().unwrap_or_default();
                match pool.send(seq, chunk.to_vec(), &keying, part) {
                    Ok(()) => self.slots.push_back(Slot::Out(low)),
                    Err(chunk) => self.slots.push_back(Slot::Back(chunk, low)),
                }
            }
            std::mem::swap(&mut batch, &mut rest);
            rest.clear();
            self.spare.push(rest);
        }
        self.count_here(st, data, batch, &keying);
        self.merge_ready(st, data, true);
    }

    /// Stop the counting threads (nothing waits: after [`Pending::count`]).
    pub(super) fn finish(&mut self) {
        self.pool = None;
    }
}

/// The batches of counting threads that are gone, counted here instead:
/// their samples were not kept, so what they held is a gap the caller
/// reports no further (only a failed thread start or a lost channel
/// could cause it, and the pool's threads live as long as it does).
fn unreachable_threads(slots: &mut VecDeque<Slot>) {
    for s in slots.iter_mut() {
        if let Slot::Out(_) = s {
            *s = Slot::Done(Part::default());
        }
    }
}
