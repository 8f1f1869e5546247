//! The sink that counts branches: each entry's ends looked up in the
//! maps of its sample's moment, counted per (command, ends, flags) as
//! the replay goes; at the end the kernel names are settled and the
//! counts grouped by the keys into rows in perf's order.

use super::rbtree::Tree;
use super::{BranchEvent, BranchKey, BranchRow, End};
use pmx_perfdata::branch::BranchFlags;
use pmx_perfdata::format::misc;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer, UNKNOWN_DSO};
use rustc_hash::FxHashMap as HashMap;

/// The lowest kernel address (x86-64's canonical upper half).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// The flag bits a row can tell apart: mispred, predicted, in_tx,
/// abort, cycles, type.
const ROW_FLAGS: u64 = 0xff_ffff;

/// One end as the replay resolved it (`frame` `None`: no map covers it).
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
struct Raw {
    frame: Option<FrameId>,
    level: u8,
    shown: u64,
    space: u64,
    addr: u64,
}

#[derive(Clone, Copy, Hash, PartialEq, Eq)]
struct RawKey {
    comm: u32,
    level: u8,
    from: Raw,
    to: Raw,
    flags: u64,
}

/// Counts per event, in the order first seen.
#[derive(Default)]
struct Counts {
    index: HashMap<RawKey, u32>,
    keys: Vec<(RawKey, u64)>,
    /// With a key perf cannot order (`mispredict` …): every branch's
    /// index into `keys`, in the order read, which perf's trees depend on.
    sequence: Vec<u32>,
    total: u64,
    rows: Vec<BranchRow>,
}

pub(super) struct Collect {
    /// The file's kernel modules: start, end, file offset, perf's name.
    modules: Vec<(u64, u64, u64, String)>,
    keys: Vec<BranchKey>,
    unordered: bool,
    comm_ids: HashMap<String, u32>,
    comms: Vec<String>,
    events: Vec<Counts>,
}

impl Collect {
    pub(super) fn new(keys: &[BranchKey]) -> Collect {
        Collect {
            modules: Vec::new(),
            keys: keys.to_vec(),
            unordered: keys.iter().any(|k| k.unordered()),
            comm_ids: HashMap::default(),
            comms: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Event `i`'s table, when it had branches.
    pub(super) fn event(&mut self, i: usize, name: String) -> Option<BranchEvent> {
        let c = self.events.get_mut(i).filter(|c| c.total > 0)?;
        Some(BranchEvent {
            name,
            branches: c.total,
            rows: std::mem::take(&mut c.rows),
        })
    }

    fn comm(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(name.to_string());
        self.comm_ids.insert(name.to_string(), id);
        id
    }
}

/// Where `addr` of process `pid` is, tried as perf tries: the process's
/// maps, the kernel, nowhere.
fn resolve(sym: &mut Symbolizer, pid: u32, addr: u64) -> Raw {
    if sym.mapping(pid, addr).is_some() {
        let (frame, shown, space) = sym.user_site(pid, addr);
        let level = b'.';
        return Raw {
            frame: Some(frame),
            level,
            shown,
            space,
            addr,
        };
    }
    let (frame, level) = if addr >= KERNEL_START {
        (Some(sym.kernel_frame(addr)), b'k')
    } else {
        (None, b'H')
    };
    Raw {
        frame,
        level,
        shown: addr,
        space: addr,
        addr,
    }
}

/// perf's name of a kernel module's map (`[name]`, `-` as `_`), from the
/// path an MMAP record gives (`/lib/modules/…/ath9k.ko`, `.ko.xz` …).
fn module_name(path: &str) -> Option<String> {
    let base = path.rsplit('/').next()?;
    let stem = base.split(".ko").next().filter(|_| base.contains(".ko"))?;
    Some(format!("[{}]", stem.replace('-', "_")))
}

/// The module map covering a kernel address.
type Modules<'m> = &'m [(u64, u64, u64, String)];

/// An end as a row shows it, with the kernel frames settled: a kernel
/// address no symbol names, in a module the file mapped, is that
/// module's (shown relative to it, as perf).
fn end(sym: &Symbolizer, remap: &[FrameId], modules: Modules<'_>, raw: &Raw) -> End {
    let mut e = End {
        level: raw.level as char,
        dso: None,
        symbol: None,
        start: 0,
        offset: 0,
        shown: raw.shown,
        addr: raw.addr,
    };
    if let Some(f) = raw.frame {
        let f = remap.get(f as usize).copied().unwrap_or(f);
        let frame = sym.frame(f);
        if frame.dso != UNKNOWN_DSO {
            e.dso = Some(sym.dso(frame.dso).short.clone());
        }
        if let FrameName::Symbol(s) = &frame.name {
            e.symbol = Some(s.clone());
            e.start = sym.frame_start(f).unwrap_or(0);
            e.offset = raw.space.saturating_sub(e.start);
        } else if raw.level == b'k' {
            let m = modules.iter().find(|m| (m.0..m.1).contains(&raw.addr));
            if let Some((start, _, pgoff, name)) = m {
                e.dso = Some(name.clone());
                e.shown = (raw.addr - start).wrapping_add(*pgoff);
            }
        }
    }
    e
}

impl SampleSink for Collect {
    fn sample(&mut self, s: &SampleRef<'_>, sym: &mut Symbolizer) {
        if s.branches.is_empty() {
            return;
        }
        let comm = self.comm(s.comm);
        let level = match s.misc & misc::CPUMODE_MASK {
            misc::KERNEL => b'k',
            misc::USER => b'.',
            _ => b'H',
        };
        if self.events.len() <= s.event {
            self.events.resize_with(s.event + 1, Counts::default);
        }
        for e in s.branches.chunks_exact(3) {
            let key = RawKey {
                comm,
                level,
                from: resolve(sym, s.pid, e[0]),
                to: resolve(sym, s.pid, e[1]),
                flags: e[2] & ROW_FLAGS,
            };
            let c = &mut self.events[s.event];
            c.total += 1;
            let i = match c.index.get(&key) {
                Some(&i) => i,
                None => {
                    c.index.insert(key, c.keys.len() as u32);
                    c.keys.push((key, 0));
                    c.keys.len() as u32 - 1
                }
            };
            c.keys[i as usize].1 += 1;
            if self.unordered {
                c.sequence.push(i);
            }
        }
    }

    fn side(&mut self, _: Side) {}

    fn kernel_map(&mut self, start: u64, len: u64, pgoff: u64, path: &[u8]) {
        let path = String::from_utf8_lossy(path);
        if let Some(name) = module_name(&path) {
            let end = start.saturating_add(len);
            self.modules.push((start, end, pgoff, name));
        }
    }

    fn finish(&mut self, sym: &mut Symbolizer, remap: &[FrameId]) {
        for c in &mut self.events {
            c.index = HashMap::default();
            let raw: Vec<BranchRow> = (c.keys.iter())
                .map(|(k, n)| row(sym, remap, &self.modules, &self.comms, (k, *n)))
                .collect();
            c.keys = Vec::new();
            let sequence = std::mem::take(&mut c.sequence);
            c.rows = perf_rows(&self.keys, raw, &sequence);
        }
    }
}

/// The row of one raw key.
fn row(
    sym: &Symbolizer,
    remap: &[FrameId],
    modules: Modules<'_>,
    comms: &[String],
    (k, n): (&RawKey, u64),
) -> BranchRow {
    let f = BranchFlags(k.flags);
    BranchRow {
        comm: Some(comms[k.comm as usize].clone()),
        from: end(sym, remap, modules, &k.from),
        to: end(sym, remap, modules, &k.to),
        sample_level: k.level as char,
        mispred: f.mispred(),
        predicted: f.predicted(),
        in_tx: f.in_tx(),
        abort: f.abort(),
        cycles: f.cycles(),
        kind: f.kind(),
        count: n,
    }
}

/// perf's first comparison that differs (`hist_entry__cmp`).
fn cmp(keys: &[BranchKey], l: &BranchRow, r: &BranchRow) -> i64 {
    keys.iter()
        .map(|k| k.perf_cmp(l, r))
        .find(|&c| c != 0)
        .unwrap_or(0)
}

/// Add `row` weighing `n` to a tree of perf's (`hists__findnew_entry`,
/// `hists__collapse_insert_entry`): merged into an equal entry the walk
/// meets, else a new entry.
fn add(tree: &mut Tree, items: &mut Vec<BranchRow>, keys: &[BranchKey], row: &BranchRow, n: u64) {
    let found = tree.insert(items.len(), |at| match cmp(keys, &items[at], row) {
        0 => None,
        c => Some(c < 0),
    });
    match found {
        Some(i) => items[i].count += n,
        None => {
            let mut r = row.clone();
            r.count = n;
            items.push(r);
        }
    }
}

/// The rows as perf makes and orders them: its entries tree (every
/// branch in the order read when a key's comparator is no order, else
/// each distinct branch once: the same result), its collapsed tree with
/// the command a key, its output tree (share, then the keys).
fn perf_rows(keys: &[BranchKey], raw: Vec<BranchRow>, sequence: &[u32]) -> Vec<BranchRow> {
    let (mut tree, mut items) = (Tree::default(), Vec::new());
    if sequence.is_empty() {
        for r in &raw {
            add(&mut tree, &mut items, keys, r, r.count);
        }
    } else {
        for &i in sequence {
            add(&mut tree, &mut items, keys, &raw[i as usize], 1);
        }
    }
    if keys.iter().any(|k| k.collapses()) {
        let (mut t2, mut i2) = (Tree::default(), Vec::new());
        for i in tree.in_order() {
            add(&mut t2, &mut i2, keys, &items[i], items[i].count);
        }
        (tree, items) = (t2, i2);
    }
    let mut out = Tree::default();
    for i in tree.in_order() {
        out.insert(i, |at| {
            let (a, b) = (&items[i], &items[at]);
            let c = match a.count.cmp(&b.count) {
                std::cmp::Ordering::Equal => cmp(keys, a, b),
                o => o as i64,
            };
            Some(c > 0)
        });
    }
    let mut items: Vec<Option<BranchRow>> = items.into_iter().map(Some).collect();
    (out.in_order().into_iter())
        .filter_map(|i| items[i].take())
        .collect()
}
