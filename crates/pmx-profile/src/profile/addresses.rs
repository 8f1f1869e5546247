//! Samples per instruction address, for `pmx annotate`: a generic
//! accumulator of *places* (a leaf frame, its binary and the address in
//! that binary's ELF virtual addresses, or the kernel address) to a set
//! of per-event [`Weight`]s.
//!
//! Every sample credits its own event with one sample and its period.
//! The hook for more: [`AddressAcc::credit`] takes any event index and
//! weight, so a sample that carries other events' counts (the members of
//! a sample-read group, `{A,B}:S`) credits each member's delta to the
//! same place, and the annotation gets one column per member. Such a
//! sample also adds its deltas to the place's [`Moments`] for its
//! leader, from which an instruction's metrics (IPC…) and their
//! intervals follow, as a report row's do.

use super::groups::Moments;
use pmx_symbols::symbolize::{DsoId, FrameId, Symbolizer, KERNEL_DSO};
use rustc_hash::FxHashMap as HashMap;

/// One event's weight at one place: samples and the sum of their
/// periods (or, for a group member, of its deltas).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weight {
    /// Samples.
    pub samples: u64,
    /// Sum of periods (or counts).
    pub period: u64,
}

impl Weight {
    /// Add `other` (saturating).
    pub fn add(&mut self, other: Weight) {
        self.samples = self.samples.saturating_add(other.samples);
        self.period = self.period.saturating_add(other.period);
    }
}

/// The samples at one instruction address of one function.
#[derive(Debug, Clone, PartialEq)]
pub struct AddressSamples {
    /// The function's name (or an unresolved address), as report shows it.
    pub symbol: String,
    /// Kernel code.
    pub kernel: bool,
    /// The binary's path as recorded (`[kernel.kallsyms]` for the kernel).
    pub dso_path: String,
    /// The binary's base name, as report shows it.
    pub dso: String,
    /// The build-id the recording saw for the binary, if any.
    pub build_id: Option<Vec<u8>>,
    /// The file its symbols were read from when the recorded path no
    /// longer leads to it (deleted or replaced since it was mapped): the
    /// process's `/proc/PID/map_files/START-END` link, while it lives.
    pub mapped_file: Option<std::path::PathBuf>,
    /// The address: the binary's ELF virtual address (user code) or the
    /// kernel address.
    pub addr: u64,
    /// Per event of the file (index as in `Profile::events`).
    pub weights: Vec<Weight>,
    /// Per sample-read group with samples here: its leader (index as in
    /// `Profile::events`) and the moments of its members' deltas (in the
    /// order of the leader's `GroupTable::members`).
    pub groups: Vec<(usize, Moments)>,
}

type Place = (FrameId, DsoId, u64);

/// Places → per-event weights, while the file is replayed.
#[derive(Default, Clone)]
pub(super) struct AddressAcc {
    places: HashMap<Place, Vec<Weight>>,
    /// Per place, per group leader: the moments of the members' deltas.
    groups: HashMap<Place, Vec<(usize, Moments)>>,
    buf: Vec<u64>,
}

impl AddressAcc {
    /// A sample at `ip` (process `pid`) whose leaf frame is `leaf`: each
    /// (event, weight) of `weights` credited to its place — today the
    /// sample's own event with one sample and its period; a sample-read
    /// group's sample adds each member's delta here, and `group` (its
    /// leader and the (event, delta) pairs, leader first) to the place's
    /// moments. Addresses of code without a binary (JIT maps, no mapping)
    /// are not kept.
    pub(super) fn sample(
        &mut self,
        sym: &mut Symbolizer,
        leaf: FrameId,
        kernel: bool,
        (pid, ip): (u32, u64),
        weights: &[(usize, Weight)],
        group: Option<(usize, &[u64])>,
    ) {
        let place = if kernel {
            Some((KERNEL_DSO, ip))
        } else {
            sym.user_vaddr(pid, ip)
        };
        let Some((dso, addr)) = place else {
            return;
        };
        for &(event, w) in weights {
            self.credit(event, leaf, dso, addr, w);
        }
        if let Some((leader, pairs)) = group {
            self.places.entry((leaf, dso, addr)).or_default();
            self.buf.clear();
            self.buf.extend(pairs.chunks_exact(2).map(|p| p[1]));
            let gs = self.groups.entry((leaf, dso, addr)).or_default();
            match gs.iter_mut().find(|g| g.0 == leader) {
                Some(g) => g.1.add(&self.buf),
                None => {
                    let mut m = Moments::default();
                    m.add(&self.buf);
                    gs.push((leader, m));
                }
            }
        }
    }

    /// Age every weight by `keep` (the live aggregator's decay); drop
    /// places left without a sample.
    pub(super) fn decay(&mut self, keep: f64) {
        let scale = |v: u64| (v as f64 * keep) as u64;
        self.places.retain(|_, ws| {
            for w in ws.iter_mut() {
                w.samples = scale(w.samples);
                w.period = scale(w.period);
            }
            ws.iter().any(|w| w.samples > 0)
        });
        let places = &self.places;
        self.groups.retain(|p, gs| {
            super::groups::decay_groups(gs, keep);
            places.contains_key(p)
        });
    }

    /// Credit `w` to `event` at the place (`leaf`, `dso`, `addr`).
    pub(super) fn credit(&mut self, event: usize, leaf: FrameId, dso: DsoId, addr: u64, w: Weight) {
        let ws = self.places.entry((leaf, dso, addr)).or_default();
        if ws.len() <= event {
            ws.resize(event + 1, Weight::default());
        }
        ws[event].add(w);
    }

    /// The places with names: `remap` maps provisional kernel frames to
    /// resolved ones (places that became one are merged); `events` is the
    /// number of events of the file. Sorted by binary, address.
    pub(super) fn finish(
        self,
        sym: &Symbolizer,
        remap: &[FrameId],
        events: usize,
    ) -> Vec<AddressSamples> {
        type Merged = (Vec<Weight>, Vec<(usize, Moments)>);
        let mut merged: HashMap<Place, Merged> = HashMap::default();
        let mut groups = self.groups;
        for ((leaf, dso, addr), ws) in self.places {
            let gs = groups.remove(&(leaf, dso, addr)).unwrap_or_default();
            let leaf = remap.get(leaf as usize).copied().unwrap_or(leaf);
            let into = merged
                .entry((leaf, dso, addr))
                .or_insert_with(|| (vec![Weight::default(); events], Vec::new()));
            if into.0.len() < ws.len() {
                into.0.resize(ws.len(), Weight::default());
            }
            for (a, b) in into.0.iter_mut().zip(ws) {
                a.add(b);
            }
            for (leader, m) in gs {
                match into.1.iter_mut().find(|g| g.0 == leader) {
                    Some(g) => g.1.merge(&m),
                    None => into.1.push((leader, m)),
                }
            }
        }
        let mut out: Vec<AddressSamples> = merged
            .into_iter()
            .map(|((leaf, _, addr), (weights, groups))| {
                let f = sym.frame(leaf);
                let d = sym.dso(f.dso);
                AddressSamples {
                    symbol: f.label(),
                    kernel: f.kernel,
                    dso_path: d.path.clone(),
                    dso: d.short.clone(),
                    build_id: d.expected_build_id.clone(),
                    mapped_file: sym.mapped_file(f.dso),
                    addr,
                    weights,
                    groups,
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.dso_path, a.addr, &a.symbol).cmp(&(&b.dso_path, b.addr, &b.symbol)));
        out
    }
}
