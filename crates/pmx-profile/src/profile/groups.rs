//! Sample-read groups (`perf record -e '{A,B,…}:S'`): every sample of the
//! leader carries the running totals of every member (`PERF_SAMPLE_READ`).
//! A member's count at a sample is its **delta**: the value read minus the
//! value the same counter (`id`) showed at that thread's previous sample
//! (0 before the first), as perf's `deliver_sample_value` does; per
//! thread as well as per id, because with `inherit` one id counts several
//! threads, each with its own total (Linux 6.12+; perf keeps one total per
//! thread there too). Each counter writes its samples in time order into
//! one ring, so file order is time order per id, and the deltas can be
//! taken as the file is read.
//!
//! [`Deltas`] is that bookkeeping, public for other readers of the same
//! files (`for_each_sample` gives every sample with its deltas);
//! [`Moments`] are a row's per-sample sums and cross-products of the
//! members' deltas (for the spread behind a metric's confidence
//! interval); [`super::GroupTable`] is a leader's rows with them.

use pmx_perfdata::{Reader, Record, Sample};
use rustc_hash::FxHashMap as HashMap;

/// One member's count at a sample: the event (index into
/// [`Reader::events`]) and its delta since the previous sample of the
/// same counter on the same thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberDelta {
    /// Index into [`Reader::events`].
    pub event: usize,
    /// Count since that counter's previous sample on this thread.
    pub delta: u64,
}

/// The last value of every (counter id, thread), and which event each
/// id belongs to.
#[derive(Debug, Default)]
pub struct Deltas {
    last: HashMap<(u64, u32), u64>,
    ids: HashMap<u64, usize>,
    events: usize,
    /// Values whose id belongs to no event of the file (skipped).
    pub unknown_ids: u64,
}

impl Deltas {
    /// Nothing seen yet, with the ids of `reader`'s events.
    pub fn new(reader: &Reader) -> Deltas {
        let mut d = Deltas::default();
        d.refresh(reader);
        d
    }

    /// Take the ids of events added since (pipe mode: attrs arrive in
    /// the stream).
    pub fn refresh(&mut self, reader: &Reader) {
        if reader.events().len() == self.events {
            return;
        }
        self.events = reader.events().len();
        for (i, e) in reader.events().iter().enumerate() {
            self.ids.extend(e.ids.iter().map(|&id| (id, i)));
        }
    }

    /// Append the member deltas of `s` (leader first, in the group's
    /// order; zero deltas included) to `out`. False when the sample has
    /// no read field (then it is weighted by its period, as usual).
    pub fn deltas(&mut self, s: &Sample<'_>, out: &mut Vec<MemberDelta>) -> bool {
        if s.read.is_empty() {
            return false;
        }
        for v in s.read_values().iter() {
            let prev = self.last.insert((v.id, s.tid), v.value).unwrap_or(0);
            let event = match self.events {
                1 => Some(0),
                _ => self.ids.get(&v.id).copied(),
            };
            match event {
                Some(event) => out.push(MemberDelta {
                    event,
                    delta: v.value.saturating_sub(prev),
                }),
                None => self.unknown_ids += 1,
            }
        }
        true
    }
}

/// Visit every sample of `reader` in file order with its member deltas
/// (an empty slice for a sample without a read field).
pub fn for_each_sample(
    reader: &mut Reader,
    f: &mut dyn FnMut(&Sample<'_>, &[MemberDelta]),
) -> Result<(), pmx_perfdata::Error> {
    let mut deltas = Deltas::new(reader);
    let mut buf = Vec::new();
    loop {
        deltas.refresh(reader);
        let Some(rec) = reader.next_record()? else {
            return Ok(());
        };
        if let Record::Sample(s) = rec {
            buf.clear();
            deltas.deltas(&s, &mut buf);
            f(&s, &buf);
        }
    }
}

/// Per-sample sums of a row's member deltas: the samples, each member's
/// total, and the sums of products of every pair (squares included), from
/// which the members' (co)variances per sample follow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moments {
    /// Samples of the leader.
    pub samples: u64,
    /// Per member, the sum of its deltas.
    pub sums: Vec<u64>,
    /// Σ dⱼ·dₖ for j ≤ k, row by row (`(0,0) (0,1) … (1,1) …`).
    pub products: Vec<f64>,
}

impl Moments {
    /// Every sum scaled by `keep` (0..=1): old samples weigh less, the
    /// means and (co)variances per sample keep their meaning.
    pub fn scale(&mut self, keep: f64) {
        self.samples = (self.samples as f64 * keep) as u64;
        for s in &mut self.sums {
            *s = (*s as f64 * keep) as u64;
        }
        for p in &mut self.products {
            *p *= keep;
        }
    }

    /// Add one sample's deltas (one per member).
    pub fn add(&mut self, d: &[u64]) {
        let m = d.len();
        if self.sums.len() != m {
            self.sums.resize(m, 0);
            self.products.resize(m * (m + 1) / 2, 0.0);
        }
        self.samples += 1;
        let mut at = 0;
        for j in 0..m {
            self.sums[j] = self.sums[j].saturating_add(d[j]);
            let x = d[j] as f64;
            for &y in &d[j..] {
                self.products[at] += x * y as f64;
                at += 1;
            }
        }
    }

    /// Add the samples of `o`.
    pub fn merge(&mut self, o: &Moments) {
        if self.sums.len() < o.sums.len() {
            self.sums.resize(o.sums.len(), 0);
            self.products.resize(o.products.len(), 0.0);
        }
        self.samples += o.samples;
        for (a, b) in self.sums.iter_mut().zip(&o.sums) {
            *a = a.saturating_add(*b);
        }
        for (a, b) in self.products.iter_mut().zip(&o.products) {
            *a += b;
        }
    }

    /// The covariance per sample of members `j` and `k` (n − 1 in the
    /// denominator); 0 below two samples.
    pub fn covariance(&self, j: usize, k: usize) -> f64 {
        let n = self.samples as f64;
        let m = self.sums.len();
        if self.samples < 2 || j >= m || k >= m {
            return 0.0;
        }
        let (a, b) = (j.min(k), j.max(k));
        let at = a * m - a * (a + 1) / 2 + b;
        let (sa, sb) = (self.sums[a] as f64, self.sums[b] as f64);
        (self.products[at] - sa * sb / n) / (n - 1.0)
    }
}

/// The group of one leader while the file is read: its members and, per
/// row key, the moments of their deltas.
pub(super) struct GroupAcc<K> {
    pub(super) members: Vec<usize>,
    pub(super) rows: HashMap<K, Moments>,
    buf: Vec<u64>,
}

impl<K: std::hash::Hash + Eq> GroupAcc<K> {
    /// No sample yet.
    pub(super) fn new() -> Self {
        GroupAcc {
            members: Vec::new(),
            rows: HashMap::default(),
            buf: Vec::new(),
        }
    }

    /// One leader sample at `key` with these deltas, as (event, delta)
    /// pairs.
    pub(super) fn add(&mut self, key: K, pairs: &[u64]) {
        if self.members.is_empty() {
            self.members = pairs.chunks_exact(2).map(|p| p[0] as usize).collect();
        }
        self.buf.clear();
        self.buf.extend(pairs.chunks_exact(2).map(|p| p[1]));
        self.rows.entry(key).or_default().add(&self.buf);
    }
}

/// Scale one place's group moments by `keep`.
pub(super) fn decay_groups(gs: &mut Vec<(usize, Moments)>, keep: f64) {
    for (_, m) in gs.iter_mut() {
        m.scale(keep);
    }
    gs.retain(|(_, m)| m.samples > 0);
}

/// Scale a group's moments by `keep` (weights of old samples, so means and
/// variances keep their meaning); drop rows under one sample.
pub(super) fn decay_moments<K: std::hash::Hash + Eq>(rows: &mut HashMap<K, Moments>, keep: f64) {
    rows.retain(|_, m| {
        m.scale(keep);
        m.samples > 0
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_perfdata::format::read_format as rf;

    /// A sample of thread `tid` reading (value, id) pairs with ID|GROUP.
    fn sample(tid: u32, bytes: &[u8]) -> Sample<'_> {
        Sample {
            event: 0,
            misc: 0,
            ip: 0,
            pid: 1,
            tid,
            time: 0,
            addr: 0,
            id: 10,
            stream_id: 0,
            cpu: 0,
            period: 1,
            callchain_bytes: &[],
            raw: &[],
            weight: 0,
            ins_lat: 0,
            weight_var3: 0,
            data_src: 0,
            phys_addr: 0,
            data_page_size: 0,
            code_page_size: 0,
            read: bytes,
            read_format: rf::ID | rf::GROUP,
            user_regs: Default::default(),
            user_stack: &[],
            branches: Default::default(),
        }
    }

    fn read(values: &[(u64, u64)]) -> Vec<u8> {
        let mut w = vec![values.len() as u64];
        for &(v, id) in values {
            w.extend([v, id]);
        }
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn deltas_are_per_counter_and_thread() {
        let mut d = Deltas {
            ids: [(10, 0), (11, 1)].into_iter().collect(),
            events: 2,
            ..Deltas::default()
        };
        let mut out = Vec::new();
        let delta = |event, delta| MemberDelta { event, delta };
        // Thread 5, then thread 6 (inherited: the same ids, its own totals),
        // then thread 5 again; an unknown id is skipped.
        let reads = [
            (5, read(&[(100, 10), (7, 11)])),
            (6, read(&[(40, 10), (2, 11)])),
            (5, read(&[(250, 10), (7, 11), (1, 99)])),
        ];
        for (tid, r) in &reads {
            assert!(d.deltas(&sample(*tid, r), &mut out));
        }
        assert_eq!(
            out,
            vec![
                delta(0, 100),
                delta(1, 7),
                delta(0, 40),
                delta(1, 2),
                delta(0, 150),
                delta(1, 0)
            ]
        );
        assert_eq!(d.unknown_ids, 1);
        assert!(!d.deltas(&sample(5, &[]), &mut out));
    }

    #[test]
    fn moments_give_the_per_sample_covariance() {
        let mut m = Moments::default();
        for d in [[1, 2], [3, 5], [5, 11]] {
            m.add(&d);
        }
        assert_eq!((m.samples, m.sums.clone()), (3, vec![9, 18]));
        // x = 1, 3, 5 (mean 3), y = 2, 5, 11 (mean 6): Σ(x−3)(y−6) = 18,
        // Σ(x−3)² = 8, Σ(y−6)² = 42; over n − 1 = 2.
        assert!((m.covariance(0, 1) - 9.0).abs() < 1e-9);
        assert!((m.covariance(1, 0) - 9.0).abs() < 1e-9);
        assert!((m.covariance(0, 0) - 4.0).abs() < 1e-9);
        assert!((m.covariance(1, 1) - 21.0).abs() < 1e-9);
        let mut two = Moments::default();
        two.merge(&m);
        two.merge(&m);
        assert_eq!((two.samples, two.sums), (6, vec![18, 36]));
    }
}
