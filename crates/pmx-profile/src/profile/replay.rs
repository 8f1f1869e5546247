//! Side-band replay: the records of a stream, queued and applied in time
//! order per round (as perf does), so a sample written before the MMAP it
//! needs, from another CPU's buffer, still finds it.

use super::aggregate::{Item, MmapItem, State};
use super::groups::{Deltas, MemberDelta};
use super::plain::Pending;
use super::sink::{Side, SideKind};
use super::types::{MachineId, ThreadReads};
use pmx_perfdata::format::misc;
use pmx_perfdata::read::{FileFeatures, Next, Record};
use pmx_perfdata::Reader;
use pmx_symbols::unwind::UserStack;

/// Whether the kernel addresses of a file with these features belong to
/// the running kernel.
pub(super) fn recorded_here(f: &FileFeatures, here: &MachineId) -> bool {
    let kernel_id = f
        .build_ids
        .iter()
        .find(|b| b.filename == "[kernel.kallsyms]")
        .map(|b| &b.build_id);
    if let (Some(a), Some(b)) = (kernel_id, &here.kernel_build_id) {
        return a == b;
    }
    match (&f.hostname, &f.osrelease) {
        (None, None) => true,
        (h, r) => {
            h.as_ref().is_none_or(|h| Some(h) == here.hostname.as_ref())
                && r.as_ref()
                    .is_none_or(|r| Some(r) == here.osrelease.as_ref())
        }
    }
}

/// Records waiting for their round: each with its time, in arrival
/// order; a decoded record is an item (its sample's call chain in the
/// arena), a plain sample left in the mapped file only its event and
/// offset there (see [`super::plain`]).
#[derive(Default)]
struct Queue {
    order: Vec<Queued>,
    items: Vec<Option<Item>>,
    arena: Vec<u64>,
}

/// One queued record: `at` is an index into `items` (`event == ITEM`) or
/// a plain sample's offset in the mapped data section.
#[derive(Clone, Copy)]
struct Queued {
    time: u64,
    at: usize,
    event: u32,
}

const ITEM: u32 = u32::MAX;

/// Above this many queued records a round is processed anyway (files
/// without FINISHED_ROUND records).
const MAX_QUEUED: usize = 1 << 20;

/// Above this many words of queued chains and branch stacks (128 MiB) too.
const MAX_QUEUED_WORDS: usize = 1 << 24;

impl Queue {
    fn push(&mut self, time: u64, item: Item) {
        let at = self.items.len();
        self.items.push(Some(item));
        self.order.push(Queued {
            time,
            at,
            event: ITEM,
        });
    }

    /// Apply, in time order, the queued records up to time `limit`; keep
    /// the rest. Plain samples join `pending` (counted before any other
    /// record is applied); `data`: the mapped data section they are in.
    fn flush(&mut self, limit: u64, st: &mut State<'_>, pending: &mut Pending, data: &[u8]) {
        self.order.sort_by_key(|q| q.time);
        let n = self.order.partition_point(|q| q.time <= limit);
        for q in &self.order[..n] {
            if q.event != ITEM {
                pending.push(q.event, q.at, st, data);
                continue;
            }
            pending.count(st, data);
            if let Some(item) = &self.items[q.at] {
                st.apply(q.time, item, &self.arena);
            }
        }
        self.order.drain(..n);
        if self.items.is_empty() {
            return;
        }
        // Rebuild the items and the arena for the records kept.
        let mut items = Vec::new();
        let mut arena = Vec::new();
        for q in self.order.iter_mut().filter(|q| q.event == ITEM) {
            let mut item = self.items[q.at].take();
            if let Some(Item::Sample { chain, .. }) = &mut item {
                let start = arena.len();
                arena.extend_from_slice(&self.arena[chain.clone()]);
                *chain = start..arena.len();
            }
            q.at = items.len();
            items.push(item);
        }
        (self.items, self.arena) = (items, arena);
    }

    /// The offset of the oldest plain sample queued.
    fn oldest(&self) -> Option<usize> {
        let plain = self.order.iter().filter(|q| q.event != ITEM);
        plain.map(|q| q.at).min()
    }
}

/// What one record did.
enum Step {
    /// Queued for its round (or not used).
    Queued,
    /// A FINISHED_ROUND: the round was applied.
    RoundEnd,
    /// LOST, LOST_SAMPLES or (UN)THROTTLE, of the event with this id,
    /// at this time.
    Side(Option<u64>, Option<u64>, SideKind),
    /// A READ record: pid, tid, its event, its values' (id, value).
    Read(u32, u32, Option<usize>, Vec<(u64, u64)>),
}

/// Where the replay is: the queue of the current round, the time span of
/// the samples, and what the pipe-mode features said so far.
pub(super) struct Replay {
    queue: Queue,
    /// Plain samples applied, not yet counted.
    pending: Pending,
    /// Per event: its samples are read in place.
    in_place: Vec<bool>,
    /// First and last sample time.
    pub(super) time_range: Option<(u64, u64)>,
    /// The kernel addresses are this machine's (updated in pipe mode).
    pub(super) here: bool,
    features_seen: usize,
    max_time: u64,
    prev_round_max: u64,
    deltas: Deltas,
    reads: Vec<MemberDelta>,
    /// READ records' totals per thread.
    pub(super) thread_reads: ThreadReads,
    /// Per event: its chains are LBR call stacks (`crate::lbr`).
    lbr: Vec<bool>,
    /// `--stitch-lbr`'s state, when asked.
    pub(super) stitch: Option<crate::lbr::Stitch>,
}

impl Replay {
    /// Before the first record of `reader`; `here`: recorded on this machine.
    pub(super) fn new(reader: &Reader, here: bool) -> Replay {
        Replay::with_jobs(reader, here, 1)
    }

    /// [`Replay::new`], counting plain samples on `jobs` threads.
    pub(super) fn with_jobs(reader: &Reader, here: bool, jobs: usize) -> Replay {
        Replay {
            queue: Queue::default(),
            pending: Pending::new(jobs),
            in_place: Vec::new(),
            time_range: None,
            here,
            features_seen: reader.features().present.len(),
            max_time: 0,
            prev_round_max: 0,
            deltas: Deltas::new(reader),
            reads: Vec::new(),
            thread_reads: ThreadReads::default(),
            lbr: crate::lbr::events(reader.events()),
            stitch: None,
        }
    }

    /// Replay every record of `reader` into `st`; `progress` now and then.
    pub(super) fn run(
        &mut self,
        reader: &mut Reader,
        st: &mut State<'_>,
        this_machine: &MachineId,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<(), pmx_perfdata::Error> {
        let mut n = 0u64;
        loop {
            n += 1;
            if n.is_multiple_of(65536) {
                progress(reader.bytes_read(), reader.total_bytes());
            }
            // Records not read in place are copied out when read: the
            // mapped pages behind them are done with (a small file's
            // pages would otherwise stay to the end, beside the tables).
            if n.is_multiple_of(1024) && !self.in_place.contains(&true) {
                reader.release_read();
            }
            if self.next(reader, st, this_machine)?.is_none() {
                break;
            }
        }
        self.flush(u64::MAX, st, reader);
        let data = reader.mapped().unwrap_or(&[]);
        self.pending.count(st, data);
        self.pending.finish();
        // Nothing is read in place any more: the report's tables that
        // follow need not sit on top of the file's pages.
        reader.hold(None);
        reader.release_read();
        Ok(())
    }

    /// Apply everything still queued (the end of a live stream, which
    /// reads nothing in place).
    pub(super) fn flush_all(&mut self, st: &mut State<'_>) {
        self.queue.flush(u64::MAX, st, &mut self.pending, &[]);
    }

    /// Apply the queued records up to `limit`; the reader keeps the pages
    /// of the plain samples still waiting.
    fn flush(&mut self, limit: u64, st: &mut State<'_>, reader: &mut Reader) {
        let data = reader.mapped().unwrap_or(&[]);
        self.queue.flush(limit, st, &mut self.pending, data);
        if !self.in_place.is_empty() {
            let oldest = [self.pending.oldest(), self.queue.oldest()];
            reader.hold(oldest.into_iter().flatten().min());
        }
    }

    /// Which events' samples are read in place: plain ones, when the
    /// state counts them in interned stacks and nobody else wants them.
    fn refresh_in_place(&mut self, reader: &Reader, st: &State<'_>) {
        let n = reader.events().len();
        if self.in_place.len() == n || reader.mapped().is_none() {
            return;
        }
        let alone = st.sink.is_none() && st.addresses.is_none();
        let counted = alone && st.interned.is_some() && st.options.tids.is_none();
        self.pending.layouts = (0..n).map(|e| reader.layout(e)).collect();
        self.pending.data = reader.mapped_data();
        let ok = |l: &Option<_>| counted && l.is_some();
        self.in_place = self.pending.layouts.iter().map(ok).collect();
    }

    /// Read one record of `reader` and queue or apply it: `None` at the
    /// end of the stream, `Some(true)` when it ended a round (the round
    /// was applied).
    pub(super) fn next(
        &mut self,
        reader: &mut Reader,
        st: &mut State<'_>,
        this_machine: &MachineId,
    ) -> Result<Option<bool>, pmx_perfdata::Error> {
        {
            if reader.is_pipe() && reader.features().present.len() != self.features_seen {
                self.pipe_features(reader.features(), st, this_machine);
            }
            self.deltas.refresh(reader);
            self.refresh_in_place(reader, st);
            let step = match reader.next_in_place(&self.in_place)? {
                None => return Ok(None),
                Some(Next::InPlace {
                    event,
                    offset,
                    time,
                }) => {
                    self.plain(time, event as u32, offset);
                    Step::Queued
                }
                Some(Next::Record(rec)) => self.record(rec, st),
            };
            match step {
                // The round is applied; the queue's size is looked at
                // after the next record.
                Step::RoundEnd => {
                    self.flush(self.prev_round_max, st, reader);
                    self.prev_round_max = self.max_time;
                    return Ok(Some(true));
                }
                Step::Side(id, time, kind) => {
                    let event = id.and_then(|id| reader.event_of_id(id));
                    if let Some(e) = event {
                        let acc = st.acc(e);
                        match kind {
                            SideKind::Lost(n) => acc.lost = acc.lost.saturating_add(n),
                            SideKind::Throttle => acc.throttled += 1,
                            _ => {}
                        }
                    }
                    let time = time.unwrap_or(self.max_time);
                    st.side(Side { event, time, kind });
                }
                Step::Read(pid, tid, event, values) => {
                    self.thread_reads.records += 1;
                    for (id, value) in values {
                        let e = reader.event_of_id(id).or(event);
                        self.thread_reads.add((pid, tid), e, value);
                    }
                }
                Step::Queued => {}
            }
            if self.queue.order.len() >= MAX_QUEUED || self.queue.arena.len() >= MAX_QUEUED_WORDS {
                self.flush(u64::MAX, st, reader);
            }
        }
        Ok(Some(false))
    }

    /// Pipe mode: the features (hostname, build-ids) arrive in the stream.
    fn pipe_features(&mut self, f: &FileFeatures, st: &mut State<'_>, this_machine: &MachineId) {
        self.features_seen = f.present.len();
        let now_here = recorded_here(f, this_machine);
        if now_here != self.here {
            self.here = now_here;
            st.sym.allow_running_vdso(self.here);
        }
        for b in &f.build_ids {
            st.sym.set_path_build_id(b.filename.as_bytes(), &b.build_id);
        }
    }

    /// One record: queued for its round (samples, COMM, FORK, user maps),
    /// the end of a round (the round is applied), or LOST and THROTTLE to
    /// count at once.
    fn record(&mut self, rec: Record<'_>, st: &mut State<'_>) -> Step {
        match rec {
            Record::Lost { id, lost, time } => Step::Side(Some(id), time, SideKind::Lost(lost)),
            Record::Read(r) => {
                let values = r.values.iter().map(|v| (v.id, v.value)).collect();
                Step::Read(r.pid, r.tid, r.event, values)
            }
            Record::LostSamples { lost, time } => {
                Step::Side(None, time, SideKind::LostSamples(lost))
            }
            Record::Throttle {
                throttled,
                id,
                time,
            } => {
                let kind = if throttled {
                    SideKind::Throttle
                } else {
                    SideKind::Unthrottle
                };
                Step::Side(Some(id), Some(time), kind)
            }
            Record::FinishedRound => Step::RoundEnd,
            rec => {
                if let Some((time, item)) = self.item(rec, st) {
                    self.max_time = self.max_time.max(time);
                    self.queue.push(time, item);
                }
                Step::Queued
            }
        }
    }

    /// Queue a plain sample left in the mapped file.
    fn plain(&mut self, time: u64, event: u32, at: usize) {
        if time != 0 {
            self.time_range = Some(
                self.time_range
                    .map_or((time, time), |(a, b)| (a.min(time), b.max(time))),
            );
        }
        self.max_time = self.max_time.max(time);
        self.queue.order.push(Queued { time, at, event });
        self.pending.reading(at);
    }

    /// The queued form of a record and its time; `None` for records the
    /// profile does not use (and for kernel maps: kallsyms covers them).
    fn item(&mut self, rec: Record<'_>, st: &mut State<'_>) -> Option<(u64, Item)> {
        Some(match rec {
            Record::Sample(s) => {
                if s.time != 0 {
                    self.time_range = Some(
                        self.time_range
                            .map_or((s.time, s.time), |(a, b)| (a.min(s.time), b.max(s.time))),
                    );
                }
                let start = self.queue.arena.len();
                let chains = st.wants_chains();
                let mut lbr = false;
                if chains && self.lbr.get(s.event).is_some_and(|&l| l) {
                    lbr =
                        crate::lbr::extend_chain(&mut self.queue.arena, s.callchain(), &s.branches);
                    if let (true, Some(t)) = (lbr, &mut self.stitch) {
                        t.extend(&mut self.queue.arena, s.tid, &s.branches);
                    }
                } else if chains {
                    self.queue.arena.extend(s.callchain());
                }
                // Branch stacks, for a sink (branch reports): triples.
                let branches = if st.sink.is_some() {
                    let b = s.branches;
                    let arena = &mut self.queue.arena;
                    arena.reserve(3 * b.len());
                    for e in b.iter() {
                        arena.extend_from_slice(&[e.from, e.to, e.flags.0]);
                    }
                    b.len() as u32
                } else {
                    0
                };
                // Sample-read groups: (event, delta) pairs after the chain.
                self.reads.clear();
                self.deltas.deltas(&s, &mut self.reads);
                let arena = &mut self.queue.arena;
                arena.extend(self.reads.iter().flat_map(|d| [d.event as u64, d.delta]));
                let item = Item::Sample {
                    event: s.event,
                    misc: s.misc,
                    ip: s.ip,
                    pid: s.pid,
                    tid: s.tid,
                    cpu: s.cpu,
                    period: s.period,
                    chain: start..self.queue.arena.len(),
                    branches,
                    reads: self.reads.len() as u32,
                    lbr,
                    user: chains
                        .then(|| UserStack::of_sample(&s))
                        .flatten()
                        .map(Box::new),
                };
                (s.time, item)
            }
            Record::Comm(c) => {
                let comm = st.intern_comm(c.comm);
                (
                    c.id.time.unwrap_or(0),
                    Item::Comm {
                        pid: c.pid,
                        tid: c.tid,
                        comm,
                    },
                )
            }
            Record::Fork(t) => (
                t.time,
                Item::Fork {
                    pid: t.pid,
                    ppid: t.ppid,
                    tid: t.tid,
                    ptid: t.ptid,
                },
            ),
            Record::Exit(t) if st.prune_exited => (
                t.time,
                Item::Exit {
                    pid: t.pid,
                    tid: t.tid,
                },
            ),
            Record::Mmap(m) => {
                let kernel_map = m.pid == u32::MAX || m.misc & misc::CPUMODE_MASK == misc::KERNEL;
                if kernel_map {
                    if let Some(sink) = st.sink.as_deref_mut() {
                        sink.kernel_map(m.start, m.len, m.pgoff, m.filename);
                    }
                    return None;
                }
                let item = Item::Mmap(Box::new(MmapItem {
                    pid: m.pid,
                    start: m.start,
                    len: m.len,
                    pgoff: m.pgoff,
                    path: m.filename.to_vec(),
                    build_id: m.build_id.map(|b| b.to_vec()),
                    inode: m.inode,
                }));
                (m.id.time.unwrap_or(0), item)
            }
            _ => return None,
        })
    }
}
