//! Read: every opened counter's reading, in one pass. Groups are read
//! through their leader (one `read(2)`, one time window), ticker groups
//! from the sample their ticker took on the interval boundary (no system
//! call) or through the hidden leader when it is missing, single events
//! on their own. Nothing is allocated once the buffers have grown: at
//! `-I 10` on many CPUs this runs hundreds of times a second.

use super::open::{OpenSet, Opened};
use super::outcome::Instance;
use crate::ticker;
use pmx_model::count::Count;
use std::collections::HashMap;
use std::time::Instant;

/// The buffers of the reads of one [`OpenSet`].
#[derive(Debug)]
pub(crate) struct Reader {
    /// Which opened counter a group read's id belongs to, built once so a
    /// read stays linear in the number of counters.
    by_id: HashMap<u64, usize>,
    /// A group read's words.
    scratch: Vec<u64>,
    /// Per opened counter: its reading, once found.
    counts: Vec<Option<Count>>,
    /// When counting started, and the same on the tickers' clock.
    start: Instant,
    start_ns: u64,
}

impl Reader {
    /// A reader for `set`, whose counting started at `start` (`start_ns`
    /// on [`ticker::monotonic_ns`]'s clock).
    pub fn new(set: &OpenSet, start: Instant, start_ns: u64) -> Reader {
        let by_id = set
            .opened
            .iter()
            .enumerate()
            .map(|(k, o)| (o.counter.id(), k))
            .collect();
        Reader {
            by_id,
            scratch: vec![0; 64 + 2 * set.opened.len()],
            counts: Vec::with_capacity(set.opened.len()),
            start,
            start_ns,
        }
    }

    /// Every counter's reading into `out`, in `set.opened` order. At an
    /// interval boundary (`Some`): ticker groups from their samples where
    /// they are there, the rest read. At the end (`None`): all read.
    pub fn read_at(
        &mut self,
        set: &mut OpenSet,
        at: Option<Instant>,
        out: &mut Vec<Count>,
    ) -> std::io::Result<()> {
        self.counts.clear();
        self.counts.resize(set.opened.len(), None);
        if let Some(at) = at {
            let since = u64::try_from((at - self.start).as_nanos()).unwrap_or(u64::MAX);
            let at_ns = self.start_ns + since;
            for (t, _) in set.tickers.iter_mut() {
                if let Some(sample) = t.take(at_ns) {
                    for (id, c) in sample {
                        if let Some(&k) = self.by_id.get(id) {
                            self.counts[k] = Some(*c);
                        }
                    }
                }
            }
        }
        self.read_rest(set, out)
    }

    /// Read every counter not already in `self.counts` and put all in
    /// `out`.
    fn read_rest(&mut self, set: &mut OpenSet, out: &mut Vec<Count>) -> std::io::Result<()> {
        let (by_id, counts, scratch) = (&self.by_id, &mut self.counts, &mut self.scratch);
        for (t, members) in set.tickers.iter_mut() {
            if members.iter().all(|&k| counts[k].is_some()) {
                continue;
            }
            t.counter.read_group_with(scratch, |id, c| {
                if let Some(&k) = by_id.get(&id) {
                    counts[k] = Some(c);
                }
            })?;
            t.read_directly_at(ticker::monotonic_ns());
        }
        for &l in &set.leaders {
            let o = &set.opened[l];
            if o.counter.read_format() & pmx_perf::read_format::GROUP == 0 {
                continue;
            }
            o.counter.read_group_with(scratch, |id, c| {
                if let Some(&k) = by_id.get(&id) {
                    counts[k] = Some(c);
                }
            })?;
        }
        out.clear();
        for (k, o) in set.opened.iter().enumerate() {
            out.push(match counts[k] {
                Some(c) => c,
                None => o.counter.read()?,
            });
        }
        Ok(())
    }
}

/// Counts (or deltas), one per opened counter, as instances into `out`.
pub(crate) fn fill_instances(
    opened: &[Opened],
    out: &mut Vec<Instance>,
    counts: impl Iterator<Item = Count>,
) {
    out.clear();
    out.extend(opened.iter().zip(counts).map(|(o, count)| Instance {
        event: o.event,
        cpu: o.cpu,
        tid: o.tid,
        count,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perf::{event_type, software, Attr, Counter, Target};

    fn sw(config: u64) -> Attr {
        Attr {
            type_: event_type::SOFTWARE,
            config,
            ..Attr::default()
        }
    }

    fn opened(counter: Counter, event: usize) -> Opened {
        Opened {
            counter,
            event,
            cpu: -1,
            tid: 0,
        }
    }

    /// A group of two software events and a single one, read in one pass:
    /// the counts come back in opened order and grow while enabled.
    #[test]
    fn a_group_and_a_single_event_are_read_in_order() {
        let mut leader_attr = sw(software::TASK_CLOCK);
        leader_attr.disabled = true;
        leader_attr.read_format |= pmx_perf::read_format::GROUP;
        let me = Target { pid: 0, cpu: -1 };
        let leader = Counter::open(&leader_attr, me, None).expect("task-clock");
        let member =
            Counter::open(&sw(software::PAGE_FAULTS), me, Some(&leader)).expect("page-faults");
        let mut single_attr = sw(software::CONTEXT_SWITCHES);
        single_attr.disabled = true;
        let single = Counter::open(&single_attr, me, None).expect("context-switches");
        let mut set = OpenSet {
            opened: vec![opened(leader, 0), opened(member, 1), opened(single, 2)],
            leaders: vec![0, 2],
            ..OpenSet::default()
        };
        for &l in &set.leaders {
            set.opened[l].counter.enable(true).expect("enable");
        }
        let pages: Vec<u8> = vec![1; 1 << 20];
        std::hint::black_box(&pages);
        let mut reader = Reader::new(&set, Instant::now(), ticker::monotonic_ns());
        let mut out = Vec::new();
        reader.read_at(&mut set, None, &mut out).expect("read");
        assert_eq!(out.len(), 3);
        assert!(out[0].value > 0, "task-clock ran: {out:?}");
        assert!(out.iter().all(|c| c.enabled > 0), "{out:?}");
        let mut instances = Vec::new();
        fill_instances(&set.opened, &mut instances, out.iter().copied());
        let events: Vec<usize> = instances.iter().map(|i| i.event).collect();
        assert_eq!(events, [0, 1, 2]);
        let first = out.clone();
        reader
            .read_at(&mut set, Some(Instant::now()), &mut out)
            .expect("read again");
        assert!(out[0].value >= first[0].value);
    }
}
