//! The stacks of an event named once per distinct frame: each frame id
//! is labelled (and given its binary) the first time a stack holds it,
//! stacks are grouped by those interned names with hashed integer keys,
//! and only the groups are sorted by their names' order (the order
//! [`EventProfile::stacks`](super::EventProfile::stacks) and
//! [`EventProfile::binary_stacks`](super::EventProfile::binary_stacks)
//! are in) and given owned names.

use super::aggregate::{stack_frames, EventAcc};
use super::types::{BinaryStack, INLINED};
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer};
use rustc_hash::FxHashMap as HashMap;

/// The distinct (label, binary) pairs of the frames met, each once.
struct Links<'s> {
    sym: &'s Symbolizer,
    remap: &'s dyn Fn(FrameId) -> FrameId,
    /// A frame id (as met, before remapping) → its link and start.
    by_frame: HashMap<FrameId, (u32, u64)>,
    by_name: HashMap<(String, u32), u32>,
    names: Vec<(String, u32)>,
}

impl Links<'_> {
    /// The link of frame `f` and its place in its binary (a symbol's
    /// start, an unnamed frame's address, `u64::MAX` else).
    fn of(&mut self, f: FrameId) -> (u32, u64) {
        if let Some(&l) = self.by_frame.get(&f) {
            return l;
        }
        let g = (self.remap)(f);
        let frame = self.sym.frame(g);
        let start = match (self.sym.frame_start(g), &frame.name) {
            (Some(s), _) => s,
            (None, FrameName::Address(a)) => *a,
            (None, _) => u64::MAX,
        };
        let key = (frame.label(), link_binary(self.sym, g));
        let next = self.names.len() as u32;
        let id = match self.by_name.get(&key) {
            Some(&id) => id,
            None => {
                self.by_name.insert(key.clone(), next);
                self.names.push(key);
                next
            }
        };
        self.by_frame.insert(f, (id, start));
        (id, start)
    }
}

/// A frame's [`Row::binary`]: its binary's id, or for an inlined
/// function [`INLINED`] and the frame it is inlined into (perf's row of
/// an inlined function spans the function it is inlined into, so one of
/// one name inlined into two functions is two rows, each with its chains).
pub(super) fn link_binary(sym: &Symbolizer, f: FrameId) -> u32 {
    match sym.inlined_into(f) {
        Some(outer) => INLINED | outer,
        None => sym.frame(f).dso,
    }
}

/// Each id's rank in the order of `keys` (equal keys one rank).
fn ranks<T: Ord>(keys: &[T]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
    let mut rank = vec![0u32; keys.len()];
    let mut r = 0u32;
    for (i, w) in order.iter().enumerate() {
        if i > 0 && keys[order[i - 1] as usize] != keys[*w as usize] {
            r += 1;
        }
        rank[*w as usize] = r;
    }
    rank
}

/// An event's stacks with binaries, its named stacks, its links.
pub(super) type Named = (
    Vec<BinaryStack>,
    Vec<(Vec<String>, u64, u64)>,
    Vec<(String, u32)>,
);

/// One group of stacks of equal names: its command's rank, its links,
/// its own frame's link (`u32::MAX`: none), the starts of its first
/// stack's frames, samples and period.
struct Group {
    comm: u32,
    links: std::ops::Range<usize>,
    own: u32,
    starts: Vec<u64>,
    samples: u64,
    period: u64,
}

/// The stacks of `acc` with each frame's binary, the same stacks named
/// without binaries (as [`EventProfile::binary_stacks`] and
/// [`EventProfile::stacks`]), and the links the former's frames index:
/// stacks that differ only in frames' ids resolving to one name (and
/// binary) are one, in their names' order.
///
/// [`EventProfile::binary_stacks`]: super::EventProfile::binary_stacks
/// [`EventProfile::stacks`]: super::EventProfile::stacks
pub(super) fn binary_and_named(
    acc: &EventAcc,
    sym: &Symbolizer,
    remap: &dyn Fn(FrameId) -> FrameId,
    comms: &[String],
) -> Named {
    let comm_rank = ranks(comms);
    let mut links = Links {
        sym,
        remap,
        by_frame: HashMap::default(),
        by_name: HashMap::default(),
        names: Vec::new(),
    };
    let mut flat: Vec<u32> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    // Keyed by the command's rank, the own frame's link, the links.
    let mut index: HashMap<Box<[u32]>, u32> = HashMap::default();
    let mut key: Vec<u32> = Vec::new();
    for (k, &(samples, period)) in &acc.stacks {
        let (frames, own) = stack_frames(k);
        let own = own.map_or(u32::MAX, |f| links.of(f).0);
        let comm = comm_rank[k[0] as usize];
        key.clear();
        key.extend([comm, own]);
        key.extend(frames.iter().map(|&f| links.of(f).0));
        match index.get(&key[..]) {
            Some(&g) => {
                let g = &mut groups[g as usize];
                g.samples += samples;
                g.period = g.period.saturating_add(period);
            }
            None => {
                let start = flat.len();
                flat.extend_from_slice(&key[2..]);
                index.insert(key.clone().into_boxed_slice(), groups.len() as u32);
                groups.push(Group {
                    comm,
                    links: start..flat.len(),
                    own,
                    starts: frames.iter().map(|&f| links.of(f).1).collect(),
                    samples,
                    period,
                });
            }
        }
    }
    let names = links.names;
    let link_rank = ranks(&names);
    let ranked = |g: &Group| flat[g.links.clone()].iter().map(|&l| link_rank[l as usize]);
    // (comm, frames, own): own `None` before any.
    let own_rank = |g: &Group| match g.own {
        u32::MAX => 0,
        l => u64::from(link_rank[l as usize]) + 1,
    };
    groups.sort_unstable_by(|a, b| {
        (a.comm.cmp(&b.comm))
            .then_with(|| ranked(a).cmp(ranked(b)))
            .then_with(|| own_rank(a).cmp(&own_rank(b)))
    });
    let comm_of: HashMap<u32, &String> = comms
        .iter()
        .enumerate()
        .map(|(i, c)| (comm_rank[i], c))
        .collect();
    let labels: Vec<&String> = names.iter().map(|(n, _)| n).collect();
    let label_rank = ranks(&labels);
    let named = named_stacks(&groups, &flat, &label_rank, &names, &comm_of);
    let binary = groups
        .into_iter()
        .map(|g| BinaryStack {
            comm: comm_of[&g.comm].clone(),
            frames: flat[g.links]
                .iter()
                .map(|&l| link_rank[l as usize])
                .collect(),
            own: (g.own != u32::MAX).then(|| link_rank[g.own as usize]),
            starts: g.starts,
            samples: g.samples,
            period: g.period,
        })
        .collect();
    // The links in their order (their ranks are distinct).
    let mut sorted: Vec<(String, u32)> = vec![Default::default(); names.len()];
    for (l, name) in names.into_iter().enumerate() {
        sorted[link_rank[l] as usize] = name;
    }
    (binary, named, sorted)
}

/// A named stack's key: its command's rank, its labels' ranks.
type NameKey = (u32, Vec<u32>);

/// The groups merged by their command and labels alone (binaries and own
/// frames left out), in that order.
fn named_stacks(
    groups: &[Group],
    flat: &[u32],
    label_rank: &[u32],
    names: &[(String, u32)],
    comm_of: &HashMap<u32, &String>,
) -> Vec<(Vec<String>, u64, u64)> {
    // (command, labels) → (samples, period, the first group).
    let mut by: HashMap<NameKey, (u64, u64, usize)> = HashMap::default();
    for (i, g) in groups.iter().enumerate() {
        let labels = flat[g.links.clone()]
            .iter()
            .map(|&l| label_rank[l as usize]);
        let e = by.entry((g.comm, labels.collect())).or_insert((0, 0, i));
        e.0 += g.samples;
        e.1 = e.1.saturating_add(g.period);
    }
    let mut out: Vec<_> = by.into_iter().collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.into_iter()
        .map(|((comm, _), (samples, period, i))| {
            let g = &groups[i];
            let mut v = Vec::with_capacity(g.links.len() + 1);
            v.push(comm_of[&comm].clone());
            v.extend(
                flat[g.links.clone()]
                    .iter()
                    .map(|&l| names[l as usize].0.clone()),
            );
            (v, samples, period)
        })
        .collect()
}
