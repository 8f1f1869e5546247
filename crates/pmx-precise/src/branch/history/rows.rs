//! The rows of `report --branch-history`, as perf 6.1's hists make them:
//! one per distinct `srcline,symbol,dso` of the samples' own addresses
//! and, with children (a file with call chains, perf's default there),
//! one per distinct frame of every sample's chain.
//!
//! With children a sample gives its period to its own row (`Self` and
//! `Children`) with its whole chain, then to the row of each frame of its
//! chain (`Children`) with the chain from that frame on, each row once
//! per sample (perf's `he_cache`). A frame's row is keyed as perf's
//! callchain node fills it: its source line without the function's name
//! (`+25`, where the sample's own row says `main+25`), its address as
//! recorded where no symbol covers it (the sample's own row: relative to
//! its map, so perf shows both), its level the last mapped frame's.
//!
//! Rows are ordered as perf's output tree orders them: children share,
//! then, within one thread, the shallower chain first (`callee`; the
//! deeper in `caller` order), then self share, then the keys. The thread
//! rule is not an order across threads, so the rows go through perf's
//! red-black tree in the order of its input tree (the keys').

use super::super::rbtree::Tree;
use super::{srcline, Named, Sample, Site};
use rustc_hash::FxHashMap as HashMap;

/// A row: its keys' texts, its shares and its samples' chains.
pub(super) struct Row {
    pub(super) srcline: String,
    /// Its symbol's level (`k`, `.`), as its first entry had it.
    pub(super) level: u8,
    /// The function, or the address without one.
    pub(super) symbol: String,
    pub(super) dso: String,
    /// No symbol covers the row's address.
    pub(super) unresolved: bool,
    /// Self period.
    pub(super) period: u64,
    /// Children period (with children; else the self period).
    pub(super) children: u64,
    /// The thread of its first sample.
    tid: u32,
    /// Its longest chain.
    depth: usize,
    /// Its address (the symbol's start where one covers it), as perf's
    /// comparators order equal source lines: a signed difference.
    ip: u64,
    /// (sample, first frame) of each chain under the row.
    pub(super) chains: Vec<(u32, u32)>,
}

impl Row {
    /// The symbol cell: `[k] name`.
    pub(super) fn symbol_cell(&self) -> String {
        format!("[{}] {}", self.level as char, self.symbol)
    }
}

/// perf's address in the symbol column (`%-#.*llx`, 16 digits: no `0x`
/// for zero).
fn address(v: u64) -> String {
    match v {
        0 => "0".repeat(16),
        v => format!("{v:#018x}"),
    }
}

/// A callchain node's source line (perf's `callchain_srcline`: no
/// function name before the offset).
fn node_srcline(s: &Site, n: &Named) -> String {
    match (&s.line, &n.symbol) {
        (None, Some((_, start))) => format!("+{}", s.space.wrapping_sub(*start)),
        _ => srcline(s, n),
    }
}

type Key = (String, String, String);

/// The rows being made, by key.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    index: HashMap<Key, usize>,
}

impl Rows {
    /// The row of `key`, made with this level and thread if new.
    /// `ip`: the address of a row no symbol covers; `start`: else its
    /// symbol's.
    fn of(&mut self, key: Key, (level, ip, tid): (u8, Option<u64>, u32), start: u64) -> usize {
        let rows = &mut self.rows;
        *self.index.entry(key).or_insert_with_key(|k| {
            rows.push(Row {
                srcline: k.0.clone(),
                level,
                symbol: k.1.clone(),
                dso: k.2.clone(),
                unresolved: ip.is_some(),
                period: 0,
                children: 0,
                tid,
                depth: 0,
                ip: ip.unwrap_or(start),
                chains: Vec::new(),
            });
            rows.len() - 1
        })
    }

    /// Sample `n`'s chain from frame `k` on, under row `i`.
    fn add(&mut self, i: usize, (n, smp): (usize, &Sample), k: usize) {
        let r = &mut self.rows[i];
        r.children = r.children.saturating_add(smp.period);
        r.depth = r.depth.max(smp.chain.len() - k);
        r.chains.push((n as u32, k as u32));
    }
}

/// The rows of one event's samples `list` (`sites` and `named` their
/// places); `children`: cumulate the chains' frames; `caller`: the
/// chains root first.
pub(super) fn rows(
    (sites, named): (&[Site], &[Named]),
    list: &[Sample],
    children: bool,
    caller: bool,
) -> Vec<Row> {
    let mut rows = Rows::default();
    let mut seen: Vec<usize> = Vec::new();
    for (n, smp) in list.iter().enumerate() {
        let (site, names) = (&sites[smp.site as usize], &named[smp.site as usize]);
        let symbol = names.symbol.as_ref().map(|s| s.0.clone());
        let key = (
            srcline(site, names),
            symbol.unwrap_or_else(|| address(site.shown)),
            dso(names),
        );
        let ip = (names.symbol.is_none()).then_some(site.shown);
        let i = rows.of(key, (site.level, ip, smp.tid), start(names));
        rows.add(i, (n, smp), 0);
        let row = &mut rows.rows[i];
        row.period = row.period.saturating_add(smp.period);
        if !children {
            continue;
        }
        seen.clear();
        seen.push(i);
        let mut level = site.level;
        for (k, &f) in smp.chain.iter().enumerate() {
            let (site, names) = (&sites[f as usize], &named[f as usize]);
            if site.frame.is_some() {
                level = site.level;
            }
            let symbol = names.symbol.as_ref().map(|s| s.0.clone());
            let key = (
                node_srcline(site, names),
                symbol.unwrap_or_else(|| address(site.addr)),
                dso(names),
            );
            let ip = (names.symbol.is_none()).then_some(site.addr);
            let i = rows.of(key, (level, ip, smp.tid), start(names));
            if !seen.contains(&i) {
                seen.push(i);
                rows.add(i, (n, smp), k);
            }
        }
    }
    order(rows.rows, children, caller)
}

fn start(n: &Named) -> u64 {
    n.symbol.as_ref().map_or(0, |s| s.1)
}

/// The order of perf's input tree (`hist_entry__cmp`): the source
/// line's text, then the address as a signed difference, the binary.
fn tree_key(r: &Row) -> (String, i64, String) {
    (r.srcline.clone(), r.ip as i64, r.dso.clone())
}

fn dso(n: &Named) -> String {
    n.dso.as_deref().unwrap_or("[unknown]").to_string()
}

/// perf's output order (see the module's page).
fn order(mut rows: Vec<Row>, children: bool, caller: bool) -> Vec<Row> {
    let keys = |r: &Row| (r.srcline.clone(), r.symbol_cell(), r.dso.clone());
    if !children {
        rows.sort_by(|a, b| b.period.cmp(&a.period).then_with(|| keys(a).cmp(&keys(b))));
        return rows;
    }
    rows.sort_by_cached_key(tree_key);
    let first = |a: &Row, b: &Row| -> bool {
        if a.children != b.children {
            return a.children > b.children;
        }
        if a.tid == b.tid && a.depth != b.depth {
            return (a.depth < b.depth) != caller;
        }
        if a.period != b.period {
            return a.period > b.period;
        }
        tree_key(a) < tree_key(b)
    };
    let mut tree = Tree::default();
    for i in 0..rows.len() {
        tree.insert(i, |j| Some(first(&rows[i], &rows[j])));
    }
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    (tree.in_order().into_iter())
        .filter_map(|i| slots[i].take())
        .collect()
}
