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
/// without binaries when `named` (as [`EventProfile::binary_stacks`] and
/// [`EventProfile::stacks`]; none else), and the links the former's frames index:
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
    named: bool,
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
    let comm_of: HashMap<u32, &String> = comms
        .iter()
        .enumerate()
        .map(|(i, c)| (comm_rank[i], c))
        .collect();
    // Named by labels alone: equal labels are equal names, whichever
    // group of them comes first.
    let named = match named {
        true => {
            let labels: Vec<&String> = names.iter().map(|(n, _)| n).collect();
            named_stacks(&groups, &flat, &ranks(&labels), &names, &comm_of)
        }
        false => Vec::new(),
    };
    // The links replaced by their ranks, which order as their names do.
    let link_rank = ranks(&names);
    flat.iter_mut().for_each(|l| *l = link_rank[*l as usize]);
    for g in &mut groups {
        g.own = match g.own {
            u32::MAX => u32::MAX,
            l => link_rank[l as usize],
        };
    }
    // (comm, frames, own): own `None` before any.
    let own_rank = |g: &Group| g.own.wrapping_add(1);
    groups.sort_unstable_by(|a, b| {
        (a.comm.cmp(&b.comm))
            .then_with(|| flat[a.links.clone()].cmp(&flat[b.links.clone()]))
            .then_with(|| own_rank(a).cmp(&own_rank(b)))
    });
    let binary = groups
        .into_iter()
        .map(|g| BinaryStack {
            comm: comm_of[&g.comm].clone(),
            frames: flat[g.links].to_vec(),
            own: (g.own != u32::MAX).then_some(g.own),
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

#[cfg(test)]
mod tests {
    use super::super::aggregate::OWN_ROW;
    use super::*;
    use pmx_symbols::kernel::Kallsyms;

    #[test]
    fn ranks_order_as_the_keys_with_equal_keys_one_rank() {
        assert_eq!(ranks(&["b", "a", "c", "a"]), [1, 0, 2, 0]);
        assert_eq!(ranks::<u32>(&[]), Vec::<u32>::new());
    }

    /// Kernel frames of three functions, and the stacks (command, frames
    /// root → leaf) of an event: `ka2` is another address of `kfunc`
    /// remapped to its frame, as provisional kernel frames are.
    fn stacks() -> (Symbolizer, EventAcc, Vec<FrameId>) {
        let ks = "ffffffff81000000 T kfunc\nffffffff81000100 T kother\n\
                  ffffffff81000200 T another\nffffffff81000300 T zlast\n";
        let mut sym = Symbolizer::new(
            Kallsyms::parse(ks),
            Default::default(),
            None,
            &Default::default(),
        );
        let f: Vec<FrameId> = [0x10, 0x110, 0x210]
            .iter()
            .map(|&a| sym.kernel_frame(0xffff_ffff_8100_0000 + a))
            .collect();
        let (kfunc, kother, another) = (f[0], f[1], f[2]);
        let provisional = 1000;
        let mut acc = EventAcc::default();
        for (key, n) in [
            (vec![1, kother, kfunc], 1),
            (vec![0, another, kfunc], 2),
            (vec![1, kother, provisional], 4),
            (vec![0, kfunc], 8),
            (vec![1, kother, kfunc, OWN_ROW, another], 16),
        ] {
            acc.stacks.insert(key.into_boxed_slice(), (n, 10 * n));
        }
        (sym, acc, vec![provisional, kfunc])
    }

    #[test]
    fn stacks_merged_by_names_and_sorted_named_only_when_asked() {
        let (sym, acc, remap) = stacks();
        let remap = |f: FrameId| if f == remap[0] { remap[1] } else { f };
        let comms = ["zsh".to_string(), "bash".to_string()];
        let (binary, named, links) = binary_and_named(&acc, &sym, &remap, &comms, true);
        let labels: Vec<&str> = links.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(labels, ["another", "kfunc", "kother"]);
        type Shown<'a> = (&'a str, Vec<&'a str>, Option<&'a str>, u64, u64);
        let shown: Vec<Shown> = (binary.iter())
            .map(|s| {
                let name = |l: &u32| labels[*l as usize];
                let frames = s.frames.iter().map(name).collect();
                (
                    s.comm.as_str(),
                    frames,
                    s.own.as_ref().map(name),
                    s.samples,
                    s.period,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("bash", vec!["kother", "kfunc"], None, 5, 50),
                ("bash", vec!["kother", "kfunc"], Some("another"), 16, 160),
                ("zsh", vec!["another", "kfunc"], None, 2, 20),
                ("zsh", vec!["kfunc"], None, 8, 80),
            ]
        );
        let named: Vec<(Vec<&str>, u64)> = (named.iter())
            .map(|(n, s, _)| (n.iter().map(String::as_str).collect(), *s))
            .collect();
        assert_eq!(
            named,
            [
                (vec!["bash", "kother", "kfunc"], 21),
                (vec!["zsh", "another", "kfunc"], 2),
                (vec!["zsh", "kfunc"], 8),
            ]
        );
        let (b2, n2, l2) = binary_and_named(&acc, &sym, &remap, &comms, false);
        assert_eq!((b2, l2), (binary, links));
        assert!(n2.is_empty());
    }
}
