//! Plain samples read in place, counted in batches on every core.
//!
//! In a file's report, a plain sample (its event records only fixed
//! fields and a call chain: [`pmx_perfdata::plain`]; no sink, address
//! table or `--tid`) of a mapped file is never decoded into a `Sample`
//! or copied: the replay queues its offset, and once its round is
//! applied the offset joins a batch (with one job it is counted then,
//! with no batch). A batch is counted into the
//! interned stacks ([`super::interned`]) before anything else is applied
//! (a side-band record, another sample) and when it is full.
//!
//! Counting a batch is the same whether one thread or many do it: with
//! several jobs, the batch is cut into contiguous parts, each counted by
//! a thread into a table of its own (raw stack → samples and period, in
//! first-seen order), and the tables are merged in the parts' order into
//! the replay's stack table: a stack already there adds its counts, a new
//! one is resolved then. The merged table is what one thread would have
//! built (the same entries in the same first-seen order, the same sums),
//! so the report is the same byte for byte; only the hashing and the
//! reading of the samples' fields run in parallel, symbolization stays on
//! the replay's thread, with its maps as they are at that point.

use super::aggregate::State;
use pmx_perfdata::format::misc;
use pmx_perfdata::plain::{Layout, Plain};
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The batch of plain samples whose rounds were applied, not yet counted.
pub(super) struct Pending {
    /// (event, offset of the record in the mapped data section).
    samples: Vec<(u32, usize)>,
    /// The lowest and highest offsets of `samples` (pushed in time
    /// order, not in the file's).
    low: usize,
    high: usize,
    /// Each event's layout (`None`: not read in place).
    pub(super) layouts: Vec<Option<Layout>>,
    jobs: usize,
}

/// The record at `offset` of `data` (a record the reader checked).
fn record_at(data: &[u8], offset: usize) -> &[u8] {
    let size = data
        .get(offset + 6..offset + 8)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    data.get(offset..offset + size).unwrap_or(&[])
}

/// The raw stack of a plain sample, as `State::sample_interned` keys a
/// decoded one: event, CPU mode, address, pid and tid, the CPU when it
/// is a sort key (else 0), then the call chain when chains are kept.
fn raw_key(raw: &mut Vec<u64>, event: u32, p: &Plain<'_>, cpu_key: bool, chains: bool) {
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

/// One job's counts: raw stacks in first-seen order with their samples
/// and summed period.
#[derive(Default)]
struct Part {
    index: HashMap<Box<[u64]>, u32>,
    entries: Vec<(Box<[u64]>, u64, u64)>,
}

impl Pending {
    /// An empty batch for a report using `jobs` threads.
    pub(super) fn new(jobs: usize) -> Pending {
        Pending {
            samples: Vec::new(),
            low: usize::MAX,
            high: 0,
            layouts: Vec::new(),
            jobs: jobs.max(1),
        }
    }

    /// Add a plain sample of `event` at `offset`; counted when the batch
    /// is full, or at once by a report of one job (the same order: a
    /// batch is counted before anything else is applied).
    #[inline]
    pub(super) fn push(&mut self, event: u32, offset: usize, st: &mut State<'_>, data: &[u8]) {
        if self.jobs == 1 {
            let layout = self.layouts.get(event as usize).copied().flatten();
            let (Some(p), Some(mut t)) = (
                layout.and_then(|l| l.read(record_at(data, offset))),
                st.interned.take(),
            ) else {
                return;
            };
            raw_key(&mut t.raw, event, &p, st.keys[4], st.wants_chains());
            st.count_raw(&mut t, 1, p.period);
            st.interned = Some(t);
            return;
        }
        self.samples.push((event, offset));
        (self.low, self.high) = (self.low.min(offset), self.high.max(offset));
        if self.samples.len() >= BATCH || self.high - self.low >= SPAN {
            self.count(st, data);
        }
    }

    /// The lowest offset of the samples waiting (the first pushed is
    /// the oldest in time, not always the first in the file: a page
    /// dropped under a later one would be read again, and stay mapped).
    pub(super) fn oldest(&self) -> Option<usize> {
        (!self.samples.is_empty()).then_some(self.low)
    }

    /// Count the batch into `st`'s interned stacks and empty it.
    pub(super) fn count(&mut self, st: &mut State<'_>, data: &[u8]) {
        if self.samples.is_empty() {
            return;
        }
        let Some(mut t) = st.interned.take() else {
            self.samples.clear();
            (self.low, self.high) = (usize::MAX, 0);
            return;
        };
        let (cpu_key, chains) = (st.keys[4], st.wants_chains());
        let jobs = self.jobs.min(self.samples.len() / PER_JOB).max(1);
        if jobs == 1 {
            for &(event, offset) in &self.samples {
                let layout = self.layouts.get(event as usize).copied().flatten();
                let Some(p) = layout.and_then(|l| l.read(record_at(data, offset))) else {
                    continue;
                };
                raw_key(&mut t.raw, event, &p, cpu_key, chains);
                st.count_raw(&mut t, 1, p.period);
            }
        } else {
            let per = self.samples.len().div_ceil(jobs);
            let layouts = &self.layouts[..];
            let count = |part: &[(u32, usize)]| {
                let mut out = Part::default();
                let mut raw = Vec::new();
                for &(event, offset) in part {
                    let layout = layouts.get(event as usize).copied().flatten();
                    let Some(p) = layout.and_then(|l| l.read(record_at(data, offset))) else {
                        continue;
                    };
                    raw_key(&mut raw, event, &p, cpu_key, chains);
                    if let Some(&i) = out.index.get(&raw[..]) {
                        let e = &mut out.entries[i as usize];
                        e.1 += 1;
                        e.2 = e.2.saturating_add(p.period);
                    } else {
                        let key: Box<[u64]> = raw.as_slice().into();
                        out.index.insert(key.clone(), out.entries.len() as u32);
                        out.entries.push((key, 1, p.period));
                    }
                }
                out
            };
            let parts: Vec<Part> = std::thread::scope(|s| {
                let mut chunks = self.samples.chunks(per);
                let first = chunks.next().unwrap_or(&[]);
                let others: Vec<_> = chunks.map(|c| s.spawn(move || count(c))).collect();
                let mut parts = vec![count(first)];
                // A job that panicked (it cannot on checked records) loses
                // nothing silently: its part is counted here instead.
                let rest = others.into_iter().zip(self.samples.chunks(per).skip(1));
                parts.extend(rest.map(|(h, c)| h.join().unwrap_or_else(|_| count(c))));
                parts
            });
            for part in parts {
                for (key, n, period) in part.entries {
                    t.raw.clear();
                    t.raw.extend_from_slice(&key);
                    st.count_raw(&mut t, n, period);
                }
            }
        }
        st.interned = Some(t);
        self.samples.clear();
        (self.low, self.high) = (usize::MAX, 0);
    }
}
