//! The sink that counts branches: each entry's ends looked up in the
//! maps of its sample's moment, counted per (command, ends, flags) as
//! the replay goes; at the end the kernel names are settled and the
//! counts grouped by the keys into rows in perf's order.
//!
//! Memory is what bounds a branch report (a million samples of 16
//! branches can make ten million rows), so a branch is counted in its
//! keys' terms only: an end no key shows is dropped, a user end inside a
//! function keeps only the function when no key shows its address, the
//! flags keep the bits the keys compare. Each distinct end is kept once
//! (the counted keys hold its index), rows share their ends and names.
//! An end in a binary whose symbols could not be read (a file recorded
//! on another machine: most of its ends) is its (binary, file offset),
//! made without the symbolizer: no frame, no name until it is printed.

use super::order::{self, Counted};
use super::rbtree::Tree;
use super::{BranchEvent, BranchKey, BranchRow, End};
use pmx_perfdata::branch::BranchFlags;
use pmx_perfdata::format::misc;
use pmx_profile::profile::sink::{SampleRef, SampleSink, Side};
use pmx_symbols::symbolize::{FrameId, FrameName, Symbolizer, UNKNOWN_DSO};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// The lowest kernel address (x86-64's canonical upper half).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// The flag bits each key tells apart (mispred, predicted, in_tx,
/// abort, cycles, type).
fn flag_bits(k: BranchKey) -> u32 {
    match k {
        BranchKey::Mispredict => 0b11,
        BranchKey::InTx => 0b100,
        BranchKey::Abort => 0b1000,
        BranchKey::Cycles => 0xffff << 4,
        BranchKey::Type => 0xf << 20,
        _ => 0,
    }
}

/// What an address's end depends on in its process's map: the binary
/// and where its file starts in memory (start − file offset); no map:
/// `(0, NO_MAP)`. The same address in a map with the same binary and
/// base is at the same place in the same file.
type MapBase = (u64, pmx_symbols::symbolize::DsoId);

/// The binary of no map.
const NO_MAP: pmx_symbols::symbolize::DsoId = pmx_symbols::symbolize::DsoId::MAX;

/// The maps the ends of one sample were last found in: (start, end,
/// its [`MapBase`]), the most recent first. A sample's branches mostly
/// stay in one or two binaries, and no map changes during a sample, so
/// an address inside one of these needs no search of the process's maps
/// (emptied at each sample).
#[derive(Default)]
struct RecentMaps([Option<(u64, u64, MapBase)>; 2]);

impl RecentMaps {
    /// The [`MapBase`] of `addr` in process `pid`.
    fn base(&mut self, sym: &Symbolizer, pid: u32, addr: u64) -> MapBase {
        for m in self.0.iter().flatten() {
            if (m.0..m.1).contains(&addr) {
                return m.2;
            }
        }
        match sym.mapping(pid, addr) {
            Some((start, end, pgoff, dso)) => {
                let base = (start.wrapping_sub(pgoff), dso);
                self.0 = [Some((start, end, base)), self.0[0]];
                base
            }
            None => (0, NO_MAP),
        }
    }
}

/// The most addresses `Collect::end_id` remembers (emptied when full).
const MAX_CACHED_ADDRESSES: usize = 1 << 20;

/// log2 of the slots of [`RecentEnds`] (4,096 of 32 bytes: 128 KiB).
const RECENT_BITS: u32 = 12;

/// The ends of recent addresses, each in the one slot its address and
/// process pick (a later one takes the slot): `(addr, base, dso,
/// pid × 4 + need + 1, end)`, 0 in the fourth field for a free slot.
/// Branch stacks repeat their addresses (a loop's branch in sample
/// after sample), so most ends are found here before the distinct
/// ends' table is hashed. Only ends that are a function of the
/// address, the process, the need and the map there are kept (see
/// `Collect::end_id`), so a slot found is the end the lookup would make.
struct RecentEnds(Vec<(u64, u64, u32, u32, u32)>);

impl RecentEnds {
    fn slot(pid: u32, addr: u64) -> usize {
        let k = addr ^ u64::from(pid).rotate_left(40);
        (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT_BITS)) as usize
    }

    fn tag(pid: u32, need: Need) -> u32 {
        (pid << 2 | need as u32).wrapping_add(1).max(1)
    }

    fn get(&self, pid: u32, addr: u64, need: Need, map: MapBase) -> Option<u32> {
        let s = self.0.get(Self::slot(pid, addr))?;
        let hit = s.0 == addr && s.3 == Self::tag(pid, need) && (s.1, s.2) == map;
        hit.then_some(s.4)
    }

    fn insert(&mut self, pid: u32, addr: u64, need: Need, map: MapBase, id: u32) {
        if self.0.is_empty() {
            self.0 = vec![(0, 0, 0, 0, 0); 1 << RECENT_BITS];
        }
        self.0[Self::slot(pid, addr)] = (addr, map.0, map.1, Self::tag(pid, need), id);
    }
}

/// How much of a branch's end its keys show.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// Nothing: no key names this end.
    Nothing,
    /// Its binary or function (`dso_*`, `symbol_*`).
    Function,
    /// Its address (`addr_*`).
    Address,
}

/// What the keys need of a branch.
#[derive(Clone, Copy)]
struct Needs {
    from: Need,
    to: Need,
    flags: u32,
    /// The sample's level (the `addr_*` columns' mark).
    level: bool,
}

impl Needs {
    fn of(keys: &[BranchKey]) -> Needs {
        let need = |k: &BranchKey, from: bool| match k {
            BranchKey::AddrFrom if from => Need::Address,
            BranchKey::AddrTo if !from => Need::Address,
            BranchKey::DsoFrom | BranchKey::SymbolFrom if from => Need::Function,
            BranchKey::DsoTo | BranchKey::SymbolTo if !from => Need::Function,
            _ => Need::Nothing,
        };
        let most = |from| keys.iter().map(|k| need(k, from)).max();
        Needs {
            from: most(true).unwrap_or(Need::Nothing),
            to: most(false).unwrap_or(Need::Nothing),
            flags: keys.iter().fold(0, |f, &k| f | flag_bits(k)),
            level: keys.contains(&BranchKey::AddrFrom) || keys.contains(&BranchKey::AddrTo),
        }
    }
}

/// One end as the replay resolved it (`frame` `None`: no map covers
/// it, or `dso` is a binary whose symbols could not be read: then the
/// end is its file offset there, `shown`, and no frame is made).
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
struct Raw {
    frame: Option<FrameId>,
    dso: pmx_symbols::symbolize::DsoId,
    level: u8,
    shown: u64,
    space: u64,
    addr: u64,
}

/// A branch as counted: its command, its ends (indices of
/// [`Collect::ends`]), its flags as far as the keys tell them apart
/// (bits 0–23) and its sample's level (bits 24–31): 16 bytes, as a
/// million-sample file may count ten million of them.
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
struct RawKey {
    comm: u32,
    from: u32,
    to: u32,
    bits: u32,
}

/// Where [`RawKey::bits`] keeps the sample's level.
const LEVEL_SHIFT: u32 = 24;

impl From<RawKey> for Counted {
    fn from(k: RawKey) -> Counted {
        let RawKey {
            comm,
            from,
            to,
            bits,
        } = k;
        Counted {
            comm,
            from,
            to,
            flags: bits & ((1 << LEVEL_SHIFT) - 1),
        }
    }
}

/// Counts per event, in the order first seen: each distinct key once
/// (in `keys`, found through `index` by its hash), its count beside it.
#[derive(Default)]
struct Counts {
    index: hashbrown::HashTable<u32>,
    keys: Vec<RawKey>,
    counts: Vec<u64>,
    /// With a key perf cannot order (`mispredict` …): every branch's
    /// index into `keys`, in the order read, which perf's trees depend on.
    sequence: Vec<u32>,
    total: u64,
    rows: Vec<BranchRow>,
}

impl Counts {
    /// Count one branch; its key's index.
    fn add(&mut self, key: RawKey) -> u32 {
        use std::hash::BuildHasher;
        let hash = |k: &RawKey| rustc_hash::FxBuildHasher.hash_one(k);
        let h = hash(&key);
        let keys = &self.keys;
        let i = match self.index.find(h, |&i| keys[i as usize] == key) {
            Some(&i) => i,
            None => {
                let i = self.keys.len() as u32;
                self.keys.push(key);
                self.counts.push(0);
                let keys = &self.keys;
                (self.index).insert_unique(h, i, |&j| hash(&keys[j as usize]));
                i
            }
        };
        self.counts[i as usize] += 1;
        self.total += 1;
        i
    }
}

pub(super) struct Collect {
    /// The file's kernel modules: start, end, file offset, perf's name.
    modules: Vec<(u64, u64, u64, String)>,
    keys: Vec<BranchKey>,
    needs: Needs,
    unordered: bool,
    comm_ids: HashMap<String, u32>,
    comms: Vec<String>,
    /// The distinct ends, each once, found through `end_ids` by their
    /// hash.
    ends: Vec<Raw>,
    end_ids: hashbrown::HashTable<u32>,
    /// The index of [`NO_END`], once used.
    no_end: Option<u32>,
    /// The end of (address, pid × 2 + function only) and the map it
    /// was looked up in (see `end_id`).
    by_address: HashMap<(u64, u64), (MapBase, u32)>,
    /// Per binary (by id), once asked: whether no symbol names its
    /// addresses.
    unnamed: Vec<Option<bool>>,
    events: Vec<Counts>,
    /// The current sample's maps.
    recent: RecentMaps,
    /// The ends of recent addresses.
    recent_ends: RecentEnds,
    /// The ends as rows show them, once counted (see `finish`).
    shown: Vec<End>,
}

impl Collect {
    pub(super) fn new(keys: &[BranchKey]) -> Collect {
        Collect {
            modules: Vec::new(),
            keys: keys.to_vec(),
            needs: Needs::of(keys),
            unordered: keys.iter().any(|k| k.unordered()),
            comm_ids: HashMap::default(),
            comms: Vec::new(),
            ends: Vec::new(),
            end_ids: hashbrown::HashTable::new(),
            no_end: None,
            by_address: HashMap::default(),
            unnamed: Vec::new(),
            events: Vec::new(),
            recent: RecentMaps::default(),
            recent_ends: RecentEnds(Vec::new()),
            shown: Vec::new(),
        }
    }

    /// The index of the end of `addr` in process `pid`, as far as `need`
    /// asks: looked up once per address while the process's map there
    /// stays the same (an address in a binary's map means the same each
    /// time; one in no map or anonymous memory may be a JIT's, whose
    /// symbols change: looked up each time). An end in a binary without
    /// symbols is its (binary, file offset), made here without the
    /// symbolizer's frames; a kernel end is found through the
    /// symbolizer's cache of kernel addresses.
    fn end_id(&mut self, sym: &mut Symbolizer, pid: u32, addr: u64, need: Need) -> u32 {
        if need == Need::Nothing {
            let id = self.no_end.unwrap_or_else(|| self.intern_end(NO_END));
            self.no_end = Some(id);
            return id;
        }
        let map = self.recent.base(sym, pid, addr);
        if let Some(id) = self.recent_ends.get(pid, addr, need, map) {
            return id;
        }
        if map.1 != NO_MAP && self.unnamed(sym, map.1, (pid, addr)) {
            // What `user_site` would name, without a frame (the most
            // common end of a file from another machine).
            let off = addr.wrapping_sub(map.0);
            let id = self.intern_end(Raw {
                frame: None,
                dso: map.1,
                level: b'.',
                shown: off,
                space: off,
                addr,
            });
            self.recent_ends.insert(pid, addr, need, map, id);
            return id;
        }
        let key = (
            addr,
            u64::from(pid) << 1 | u64::from(need == Need::Function),
        );
        if let Some(&(m, id)) = self.by_address.get(&key) {
            if m == map {
                self.recent_ends.insert(pid, addr, need, map, id);
                return id;
            }
        }
        let raw = resolve(sym, pid, addr, map.1 != NO_MAP);
        let raw = match need {
            Need::Function => function_only(sym, raw),
            _ => raw,
        };
        let id = self.intern_end(raw);
        // A kernel end is the symbolizer's (a frame per kernel address,
        // the same each time), an address in no map below the kernel
        // is itself: both kept among the recent ends.
        if map.1 == NO_MAP {
            self.recent_ends.insert(pid, addr, need, map, id);
        }
        let same = raw
            .frame
            .is_some_and(|f| map.1 != NO_MAP && sym.frame(f).dso == map.1);
        if same {
            self.recent_ends.insert(pid, addr, need, map, id);
            if self.by_address.len() >= MAX_CACHED_ADDRESSES {
                self.by_address = HashMap::default();
            }
            self.by_address.insert(key, (map, id));
        }
        id
    }

    /// Whether binary `dso` has no symbols to name its addresses
    /// ([`Symbolizer::unnamed_binary`]), asked once per binary.
    fn unnamed(&mut self, sym: &mut Symbolizer, dso: u32, at: (u32, u64)) -> bool {
        let i = dso as usize;
        if self.unnamed.len() <= i {
            self.unnamed.resize(i + 1, None);
        }
        *self.unnamed[i].get_or_insert_with(|| sym.unnamed_binary(dso, at))
    }

    /// The index of `raw` among the distinct ends.
    fn intern_end(&mut self, raw: Raw) -> u32 {
        use std::hash::BuildHasher;
        let hash = |r: &Raw| rustc_hash::FxBuildHasher.hash_one(r);
        let h = hash(&raw);
        let ends = &self.ends;
        if let Some(&id) = self.end_ids.find(h, |&i| ends[i as usize] == raw) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.ends.push(raw);
        let ends = &self.ends;
        (self.end_ids).insert_unique(h, id, |&i| hash(&ends[i as usize]));
        id
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

    /// The ends the rows' indices name (once: they move out).
    pub(super) fn take_ends(&mut self) -> Vec<End> {
        std::mem::take(&mut self.shown)
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
fn resolve(sym: &mut Symbolizer, pid: u32, addr: u64, mapped: bool) -> Raw {
    if mapped {
        let (frame, shown, space) = sym.user_site(pid, addr);
        let level = b'.';
        return Raw {
            frame: Some(frame),
            dso: NO_MAP,
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
        dso: NO_MAP,
        level,
        shown: addr,
        space: addr,
        addr,
    }
}

/// An end no key shows.
const NO_END: Raw = Raw {
    frame: None,
    dso: NO_MAP,
    level: b'.',
    shown: 0,
    space: 0,
    addr: 0,
};

/// A user end inside a function without its address (the function's
/// keys compare the function alone); others as they are.
fn function_only(sym: &Symbolizer, raw: Raw) -> Raw {
    let named = |f| matches!(sym.frame(f).name, FrameName::Symbol(_));
    match raw.frame {
        Some(f) if raw.level == b'.' && named(f) => Raw {
            shown: 0,
            space: 0,
            addr: 0,
            ..raw
        },
        _ => raw,
    }
}

/// perf's name of a kernel module's map (`[name]`, `-` as `_`), from the
/// path an MMAP record gives (`/lib/modules/…/ath9k.ko`, `.ko.xz` …).
pub(super) fn module_name(path: &str) -> Option<String> {
    let base = path.rsplit('/').next()?;
    let stem = base.split(".ko").next().filter(|_| base.contains(".ko"))?;
    Some(format!("[{}]", stem.replace('-', "_")))
}

/// The module map covering a kernel address.
type Modules<'m> = &'m [(u64, u64, u64, String)];

/// The names rows share, each text made once (so that two names are
/// equal when they are the same `Arc`: perf's comparators test that
/// first).
#[derive(Default)]
struct Names(rustc_hash::FxHashSet<Arc<str>>, Vec<Option<Arc<str>>>);

impl Names {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.0.get(name) {
            return n.clone();
        }
        let n: Arc<str> = name.into();
        self.0.insert(n.clone());
        n
    }

    /// The short name of binary `dso`, looked up once per binary.
    fn dso(&mut self, sym: &Symbolizer, dso: pmx_symbols::symbolize::DsoId) -> Arc<str> {
        let i = dso as usize;
        if self.1.len() <= i {
            self.1.resize(i + 1, None);
        }
        if let Some(n) = &self.1[i] {
            return n.clone();
        }
        let n = self.get(&sym.dso(dso).short);
        self.1[i] = Some(n.clone());
        n
    }
}

/// An end as a row shows it, with the kernel frames settled: a kernel
/// address no symbol names, in a module the file mapped, is that
/// module's (shown relative to it, as perf).
fn end(sym: &Symbolizer, remap: &[FrameId], ctx: (Modules<'_>, &mut Names), raw: &Raw) -> End {
    let (modules, names) = ctx;
    let mut e = End {
        level: raw.level as char,
        dso: None,
        symbol: None,
        start: 0,
        offset: 0,
        shown: raw.shown,
        addr: raw.addr,
    };
    if raw.frame.is_none() && raw.dso != NO_MAP {
        e.dso = Some(names.dso(sym, raw.dso));
    }
    if let Some(f) = raw.frame {
        let f = remap.get(f as usize).copied().unwrap_or(f);
        let frame = sym.frame(f);
        if frame.dso != UNKNOWN_DSO {
            e.dso = Some(names.dso(sym, frame.dso));
        }
        if let FrameName::Symbol(s) = &frame.name {
            e.symbol = Some(names.get(s));
            e.start = sym.frame_start(f).unwrap_or(0);
            e.offset = raw.space.saturating_sub(e.start);
        } else if raw.level == b'k' {
            let m = modules.iter().find(|m| (m.0..m.1).contains(&raw.addr));
            if let Some((start, _, pgoff, name)) = m {
                e.dso = Some(names.get(name));
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
            _ if !self.needs.level => 0,
            misc::KERNEL => b'k',
            misc::USER => b'.',
            _ => b'H',
        };
        if self.events.len() <= s.event {
            self.events.resize_with(s.event + 1, Counts::default);
        }
        let needs = self.needs;
        self.recent = RecentMaps::default();
        for e in s.branches.chunks_exact(3) {
            let key = RawKey {
                comm,
                from: self.end_id(sym, s.pid, e[0], needs.from),
                to: self.end_id(sym, s.pid, e[1], needs.to),
                bits: e[2] as u32 & needs.flags | u32::from(level) << LEVEL_SHIFT,
            };
            let c = &mut self.events[s.event];
            let i = c.add(key);
            if self.unordered {
                c.sequence.push(i);
            }
        }
    }

    fn side(&mut self, _: Side) {}

    /// Nothing prints the ordinary profile of a branch report.
    fn alone(&self) -> bool {
        true
    }

    fn kernel_map(&mut self, start: u64, len: u64, pgoff: u64, path: &[u8]) {
        let path = String::from_utf8_lossy(path);
        if let Some(name) = module_name(&path) {
            let end = start.saturating_add(len);
            self.modules.push((start, end, pgoff, name));
        }
    }

    fn finish(&mut self, sym: &mut Symbolizer, remap: &[FrameId]) {
        self.end_ids = hashbrown::HashTable::new();
        self.by_address = HashMap::default();
        self.recent_ends = RecentEnds(Vec::new());
        let mut names = Names::default();
        let ends: Vec<End> = (self.ends.iter())
            .map(|r| end(sym, remap, (&self.modules, &mut names), r))
            .collect();
        self.ends = Vec::new();
        let comms: Vec<Arc<str>> = self.comms.iter().map(|c| names.get(c)).collect();
        for c in &mut self.events {
            c.index = hashbrown::HashTable::new();
            let at = |i: usize| (Counted::from(c.keys[i]), c.counts[i]);
            if let Some(rows) = order::rows(&self.keys, (&ends, &comms), c.keys.len(), at) {
                c.counts = Vec::new();
                c.rows = (rows.into_iter())
                    .map(|(i, n)| row(&comms, (&c.keys[i], n)))
                    .collect();
                c.keys = Vec::new();
                continue;
            }
            let raw: Vec<BranchRow> = (c.keys.iter().zip(&c.counts))
                .map(|(k, n)| row(&comms, (k, *n)))
                .collect();
            (c.keys, c.counts) = (Vec::new(), Vec::new());
            let sequence = std::mem::take(&mut c.sequence);
            c.rows = perf_rows((&self.keys, &ends), raw, &sequence);
        }
        self.shown = ends;
    }
}

/// The row of one raw key.
fn row(comms: &[Arc<str>], (k, n): (&RawKey, u64)) -> BranchRow {
    let f = BranchFlags(u64::from(k.bits & ((1 << LEVEL_SHIFT) - 1)));
    BranchRow {
        comm: Some(comms[k.comm as usize].clone()),
        from: k.from,
        to: k.to,
        sample_level: (k.bits >> LEVEL_SHIFT) as u8 as char,
        mispred: f.mispred(),
        predicted: f.predicted(),
        in_tx: f.in_tx(),
        abort: f.abort(),
        cycles: f.cycles(),
        kind: f.kind(),
        count: n,
    }
}

/// The keys and the ends their rows' indices name.
type Keys<'k> = (&'k [BranchKey], &'k [End]);

/// perf's first comparison that differs (`hist_entry__cmp`).
fn cmp((keys, ends): Keys<'_>, l: &BranchRow, r: &BranchRow) -> i64 {
    keys.iter()
        .map(|k| k.perf_cmp(ends, l, r))
        .find(|&c| c != 0)
        .unwrap_or(0)
}

/// Add `row` weighing `n` to a tree of perf's (`hists__findnew_entry`,
/// `hists__collapse_insert_entry`): merged into an equal entry the walk
/// meets, else a new entry.
fn add(tree: &mut Tree, items: &mut Vec<BranchRow>, keys: Keys<'_>, row: &BranchRow, n: u64) {
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
fn perf_rows(keys: Keys<'_>, raw: Vec<BranchRow>, sequence: &[u32]) -> Vec<BranchRow> {
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
    if keys.0.iter().any(|k| k.collapses()) {
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
