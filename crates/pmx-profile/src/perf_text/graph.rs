//! perf report's call-graph text under each `--stdio` row (`-g
//! graph|fractal|flat|folded`): the chains of a row taken from the
//! profile's stacks with each frame's binary
//! ([`crate::EventProfile::binary_stacks`], built with
//! [`crate::ReportOptions::graphs`]), merged into perf's tree (a node
//! holds the frames until two chains part or one ends), cut by the
//! threshold and printed with perf's margins, bars and `--NN.NN%--`
//! labels.
//!
//! A frame is a [`Link`]: its name and its binary. Two functions of one
//! name in two binaries (a program's `_start` and the dynamic loader's)
//! are two links, as perf's nodes are two symbols: a row's chains are
//! those through its own function, and chains part where the binaries do.
//!
//! perf's rules kept here: with `--children` a row's chains are its own
//! samples' whole chains plus, for every sample whose chain passes through
//! the row's function, the chain from that function on (callees in
//! `caller` order, callers in `callee` order); `--max-stack N` keeps the N
//! frames perf resolves first (the leaf side in `callee` order, the root
//! side in `caller` order); `graph` shares are of the event's total,
//! `fractal` shares of the parent's; a single top chain holding the whole
//! row is printed without a share (`---name`).

use super::notes::Note;
use crate::profile::Row;
use crate::EventProfile;
use pmx_symbols::symbolize::is_address;
use std::io::Write;

/// perf's `-g` print type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphMode {
    /// `graph`: a tree, shares of the event's total.
    #[default]
    Graph,
    /// `fractal`: a tree, shares of the parent's.
    Fractal,
    /// `flat`: every chain whole, one frame a line.
    Flat,
    /// `folded`: every chain on one line, `;` between frames.
    Folded,
    /// `none`: no call graph.
    None,
}

impl GraphMode {
    /// perf's name of a print type (`graph`, `fractal`, `flat`,
    /// `folded`, `none`).
    pub fn from_name(s: &str) -> Option<GraphMode> {
        Some(match s {
            "graph" => GraphMode::Graph,
            "fractal" => GraphMode::Fractal,
            "flat" => GraphMode::Flat,
            "folded" => GraphMode::Folded,
            "none" => GraphMode::None,
            _ => return None,
        })
    }
}

/// How the call graph under the rows is printed (perf's `-g`, `-G`,
/// `--max-stack`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graph {
    /// The print type.
    pub mode: GraphMode,
    /// Chains below this percent are cut (perf's default 0.5).
    pub threshold: f64,
    /// At most this many chains per level (0: all).
    pub print_limit: u32,
    /// Callers first (`caller`) rather than the leaf first (`callee`);
    /// `None`: perf's default (callers first with `--children`).
    pub caller: Option<bool>,
    /// Use at most this many frames of each chain (perf's `--max-stack`).
    pub max_stack: Option<usize>,
    /// The first frame of a single top chain is the row's own symbol and
    /// is not printed (perf does this when `-s` begins with `sym`).
    pub skip_self: bool,
}

impl Default for Graph {
    fn default() -> Self {
        Graph {
            mode: GraphMode::Graph,
            threshold: 0.5,
            print_limit: 0,
            caller: None,
            max_stack: None,
            skip_self: false,
        }
    }
}

/// One frame of a chain: the function's name and its binary's id (as
/// [`Row::binary`]).
pub type Link<'a> = (&'a str, u32);

/// A node of perf's chain tree: the frames it holds, the weight of the
/// chains ending at it (`hit`) and of all chains through it (`cumul`).
#[derive(Debug, Default)]
struct Node<'a> {
    names: Vec<Link<'a>>,
    /// With `--branch-history`: each frame's branch note (else empty).
    notes: Vec<Note>,
    hit: u64,
    cumul: u64,
    children: Vec<Node<'a>>,
}

impl<'a> Node<'a> {
    fn children_hit(&self) -> u64 {
        self.cumul - self.hit
    }

    /// Add `chain` (weight `w`) below this node, splitting a node where
    /// the chain parts from it or ends inside it.
    /// `notes`: each frame's branch note, or none.
    /// Saturating: a damaged period (2^64 - 1) is no overflow.
    fn add(&mut self, chain: &[Link<'a>], notes: &[Note], w: u64) {
        self.cumul = self.cumul.saturating_add(w);
        let Some(first) = chain.first() else {
            self.hit = self.hit.saturating_add(w);
            return;
        };
        let Some(c) = self.children.iter_mut().find(|c| c.names[0] == *first) else {
            self.children.push(Node {
                names: chain.to_vec(),
                notes: notes.iter().map(Note::first).collect(),
                hit: w,
                cumul: w,
                children: Vec::new(),
            });
            return;
        };
        let common = (c.names.iter().zip(chain))
            .take_while(|(a, b)| a == b)
            .count();
        for (mine, theirs) in c.notes.iter_mut().zip(notes).take(common) {
            mine.add(theirs);
        }
        if common < c.names.len() {
            let split = common.min(c.notes.len());
            let tail = Node {
                names: c.names.split_off(common),
                notes: c.notes.split_off(split),
                hit: c.hit,
                cumul: c.cumul,
                children: std::mem::take(&mut c.children),
            };
            c.hit = 0;
            c.children.push(tail);
        }
        c.add(&chain[common..], notes.get(common..).unwrap_or(&[]), w);
    }

    /// perf's order: heaviest first; equal weights as perf keeps its
    /// siblings, descending: by binary and place in it (its binaries by
    /// when they were made: none first, then the kernel, then as the
    /// maps came), or by name where an inlined function is among them
    /// (perf compares names when either of two is inlined). With branch
    /// notes, perf's `-g address` key: by the links' ids, which the caller
    /// gives in address order, descending.
    fn sort(&mut self, starts: &Starts) {
        let place = |n: &Node| {
            let link = n.names[0];
            let rank = match link.1 {
                pmx_symbols::symbolize::UNKNOWN_DSO => 0,
                pmx_symbols::symbolize::KERNEL_DSO => 1,
                d => u64::from(d) + 1,
            };
            (rank, starts.get(&link).copied().unwrap_or(u64::MAX))
        };
        let by_place = |a: &Node, b: &Node| match a.notes.is_empty() {
            true => place(b).cmp(&place(a)).then(a.names[0].cmp(&b.names[0])),
            false => b.names[0].1.cmp(&a.names[0].1),
        };
        let by_name = |a: &Node, b: &Node| {
            b.names[0]
                .0
                .cmp(a.names[0].0)
                .then(a.names[0].1.cmp(&b.names[0].1))
        };
        self.children
            .sort_by(|a, b| b.cumul.cmp(&a.cumul).then_with(|| by_place(a, b)));
        for run in self.children.chunk_by_mut(|a, b| a.cumul == b.cumul) {
            let inlined = run.iter().any(|n| place(n).1 == u64::MAX);
            if run.len() > 1 && run[0].notes.is_empty() && inlined {
                run.sort_by(by_name);
            }
        }
        self.children.iter_mut().for_each(|c| c.sort(starts));
    }

    /// Drop the children (at every depth) below the threshold: an absolute
    /// `min` (graph), or `rel` of each node's children (fractal).
    fn cut(&mut self, min: u64, rel: Option<f64>) {
        let min = match rel {
            Some(r) => (self.children_hit() as f64 * r).ceil() as u64,
            None => min,
        };
        self.children.retain(|c| c.cumul >= min);
        self.children.iter_mut().for_each(|c| c.cut(min, rel));
    }
}

/// perf's name of a frame: an unresolved address as `0x…` without
/// leading zeros (`0` for zero).
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if is_address(name) {
        let v = u64::from_str_radix(name.trim_start_matches("0x"), 16).unwrap_or(0);
        // C's `%#lx`: no `0x` for zero.
        match v {
            0 => "0".into(),
            v => format!("{v:#x}").into(),
        }
    } else {
        name.into()
    }
}

/// The stacks of an event by the functions on them: for each of its
/// [`EventProfile::links`], the indices into
/// [`EventProfile::binary_stacks`] of the stacks holding it, so a row's
/// chains are found without a pass over every stack.
pub type Index = Vec<Vec<usize>>;

/// Each frame's place in its binary (a symbol's start, an unnamed
/// frame's address), the order of siblings of equal weight.
pub type Starts<'a> = rustc_hash::FxHashMap<Link<'a>, u64>;

/// Link `l` of `e` as a [`Link`].
fn link(e: &EventProfile, l: u32) -> Link<'_> {
    let (name, binary) = &e.links[l as usize];
    (name, *binary)
}

/// The [`Starts`] of `e`'s frames: each link's start where a stack first
/// holds it as a frame.
pub fn starts(e: &EventProfile) -> Starts<'_> {
    let mut first: Vec<Option<u64>> = vec![None; e.links.len()];
    for stack in &e.binary_stacks {
        for (&l, &start) in stack.frames.iter().zip(&stack.starts) {
            first[l as usize].get_or_insert(start);
        }
    }
    let mut out = Starts::default();
    out.reserve(first.len());
    for (l, s) in first.iter().enumerate() {
        if let Some(s) = s {
            out.insert(link(e, l as u32), *s);
        }
    }
    out
}

/// The [`Index`] of `e`'s stacks.
pub fn index(e: &EventProfile) -> Index {
    let mut ix: Index = vec![Vec::new(); e.links.len()];
    for (i, stack) in e.binary_stacks.iter().enumerate() {
        for &l in stack.frames.iter().chain(&stack.own) {
            let v = &mut ix[l as usize];
            if v.last() != Some(&i) {
                v.push(i);
            }
        }
    }
    ix
}

/// The chains of `row` (each with its period) in print order, and their
/// total (the row's own period, or with `children` its inclusive one);
/// `ix`: the [`index`] of `e`.
pub fn chains<'a>(
    e: &'a EventProfile,
    ix: &Index,
    row: &Row,
    g: &Graph,
    children: bool,
) -> (Vec<(Vec<Link<'a>>, u64)>, u64) {
    let mut out = Vec::new();
    let mut total = 0u64;
    // The row's function: its name and binary (a row of no function
    // looks at every stack; one of functions of several binaries joined
    // at those of every binary with a function of that name).
    let sym = row.symbol.as_deref();
    // (The links are in the order of their names, then binaries.)
    let links = &e.links;
    let mut which: Vec<usize> = match (sym, row.binary) {
        (Some(s), Some(b)) => (links.binary_search_by(|(n, x)| (n.as_str(), *x).cmp(&(s, b))))
            .map_or_else(|_| Vec::new(), |l| ix[l].clone()),
        (Some(s), None) => {
            let from = links.partition_point(|(n, _)| n.as_str() < s);
            let to = from + links[from..].partition_point(|(n, _)| n == s);
            (from..to).flat_map(|l| ix[l].iter().copied()).collect()
        }
        (None, _) => (0..e.binary_stacks.len()).collect(),
    };
    if sym.is_some() && row.binary.is_none() {
        which.sort_unstable();
        which.dedup();
    }
    // A row of a binary and no function (`-s dso`) is each of its
    // functions; a row of neither takes every chain whole.
    let is_row = |f: &Link| match sym {
        Some(s) => f.0 == s && row.binary.is_none_or(|b| b == f.1),
        None => row.binary == Some(f.1),
    };
    let whole = sym.is_none() && row.binary.is_none();
    for stack in which.iter().map(|&i| &e.binary_stacks[i]) {
        let (comm, frames, period) = (&stack.comm, &stack.frames, &stack.period);
        if row.comm.as_ref().is_some_and(|c| c != comm) || frames.is_empty() {
            continue;
        }
        // The samples' own row: their whole chains (perf's entry of the
        // sample itself), named in the chain or apart from it.
        let leaf = (stack.own.or(frames.last().copied())).map(|l| link(e, l));
        let own = whole || leaf.as_ref().is_some_and(is_row);
        if !own && !children {
            // Self shares only: a stack the row's function does not end.
            continue;
        }
        let caller = g.caller.unwrap_or(children);
        let n = g.max_stack.unwrap_or(usize::MAX).min(frames.len());
        let kept = if caller {
            &frames[..n]
        } else {
            &frames[frames.len() - n..]
        };
        let mut order: Vec<Link> = kept.iter().map(|&l| link(e, l)).collect();
        if !caller {
            order.reverse();
        }
        let chain = if own {
            order
        } else if let Some(p) = children.then(|| order.iter().position(is_row)) {
            match p {
                Some(p) => order.split_off(p),
                None => continue,
            }
        } else {
            continue;
        };
        total = total.saturating_add(*period);
        out.push((chain, *period));
    }
    (out, total)
}

/// Print the call graph of `row` (of event `e`, whose total period is
/// `event_total`; `parent` the row's own total, as its share column
/// shows) as perf does under a `--stdio` row.
pub fn print(
    out: &mut dyn Write,
    (chains, starts): (&[(Vec<Link>, u64)], &Starts),
    parent: u64,
    event_total: u64,
    g: &Graph,
) -> std::io::Result<()> {
    let mut root = Node::default();
    for (c, w) in chains {
        root.add(c, &[], *w);
    }
    print_tree(out, (root, starts), parent, event_total, g)
}

/// [`print()`] with a branch note for every frame of every chain
/// (`--branch-history`), printed after the frame's name as perf does.
pub fn print_noted(
    out: &mut dyn Write,
    chains: &[(Vec<Link>, Vec<Note>, u64)],
    parent: u64,
    event_total: u64,
    g: &Graph,
) -> std::io::Result<()> {
    let mut root = Node::default();
    for (c, notes, w) in chains {
        root.add(c, notes, *w);
    }
    print_tree(out, (root, &Starts::default()), parent, event_total, g)
}

fn print_tree(
    out: &mut dyn Write,
    (mut root, starts): (Node, &Starts),
    parent: u64,
    event_total: u64,
    g: &Graph,
) -> std::io::Result<()> {
    root.sort(starts);
    let min = (event_total as f64 * (g.threshold / 100.0)) as u64;
    let pct = |v: u64, t: u64| {
        if t == 0 {
            0.0
        } else {
            v as f64 * 100.0 / t as f64
        }
    };
    match g.mode {
        GraphMode::None => Ok(()),
        GraphMode::Flat | GraphMode::Folded => {
            let mut flat = Vec::new();
            flatten(&root, &mut Vec::new(), &mut flat);
            flat.retain(|(_, hit, _)| *hit > 0 && *hit >= min);
            flat.sort_by_key(|f| std::cmp::Reverse(f.1));
            let limit = if g.print_limit == 0 {
                usize::MAX
            } else {
                g.print_limit as usize
            };
            for (names, hit, cumul) in flat.into_iter().take(limit) {
                if g.mode == GraphMode::Folded {
                    let names: Vec<_> = names.iter().map(|n| shown(n.0)).collect();
                    writeln!(out, "{:.2}% {}", pct(hit, event_total), names.join(";"))?;
                } else {
                    writeln!(out, "           {:.2}%", pct(cumul, event_total))?;
                    for n in names {
                        writeln!(out, "                {}", shown(n.0))?;
                    }
                    writeln!(out)?;
                }
            }
            Ok(())
        }
        GraphMode::Graph | GraphMode::Fractal => {
            let rel = (g.mode == GraphMode::Fractal).then_some(g.threshold / 100.0);
            root.cut(min, rel);
            let mut p = Printer { out, g, any: false };
            p.top(&root, parent, event_total)
        }
    }
}

/// Frame `i` of node `n` as printed: its name, and its branch note when
/// the graph has them (`cut`: on a line of the levels, as perf cuts it).
fn noted(n: &Node, i: usize, link: &Link, cut: bool) -> String {
    match n.notes.get(i) {
        Some(note) if cut => format!("{}{}", shown(link.0), note.text_cut()),
        Some(note) => format!("{}{}", shown(link.0), note.text()),
        None => shown(link.0).into_owned(),
    }
}

/// Every node with its whole chain (root first), its hit and cumul.
type Flat<'a> = (Vec<Link<'a>>, u64, u64);

fn flatten<'a>(n: &Node<'a>, path: &mut Vec<Link<'a>>, out: &mut Vec<Flat<'a>>) {
    let len = path.len();
    path.extend(&n.names);
    if n.hit > 0 {
        out.push((path.clone(), n.hit, n.cumul));
    }
    for c in &n.children {
        flatten(c, path, out);
    }
    path.truncate(len);
}

struct Printer<'o, 'g> {
    out: &'o mut dyn Write,
    g: &'g Graph,
    any: bool,
}

const MARGIN: &str = "            ";

impl Printer<'_, '_> {
    fn value(&self, v: u64, total: u64) -> String {
        let p = if total == 0 {
            0.0
        } else {
            v as f64 * 100.0 / total as f64
        };
        format!("{p:.2}%")
    }

    /// The tree below the row: a single top chain holding all of the row
    /// first without a share, then the levels below.
    fn top(&mut self, root: &Node, parent: u64, event_total: u64) -> std::io::Result<()> {
        let mut level = root;
        let mut margin = 0;
        if let [only] = &root.children[..] {
            if only.cumul == parent {
                let mut printed = false;
                let limit = self.g.print_limit as usize;
                for (i, n) in only.names.iter().enumerate() {
                    if i == 0 && self.g.skip_self {
                        continue;
                    }
                    let name = noted(only, i, n, false);
                    if !printed {
                        writeln!(self.out, "{MARGIN}|\n{MARGIN}---{name}")?;
                        margin = 3;
                        printed = true;
                    } else {
                        writeln!(self.out, "{MARGIN}{:margin$}{name}", "")?;
                    }
                    self.any = true;
                    if limit > 0 && i + 1 == limit {
                        break;
                    }
                }
                level = only;
            }
        }
        let total = if self.g.mode == GraphMode::Fractal {
            parent
        } else {
            event_total
        };
        self.level(level, total, 1, 1, margin)?;
        if self.any {
            writeln!(self.out)?;
        }
        Ok(())
    }

    /// One level of perf's graph: each child's frames (the first with
    /// its share), then its children one level deeper; with `fractal`,
    /// what the cut children held as `[...]`.
    fn level(
        &mut self,
        n: &Node,
        total: u64,
        depth: usize,
        mask: u64,
        margin: usize,
    ) -> std::io::Result<()> {
        let fractal = self.g.mode == GraphMode::Fractal;
        let mut remaining = total;
        let mut new_mask = mask;
        let count = n.children.len();
        for (k, child) in n.children.iter().enumerate() {
            remaining = remaining.saturating_sub(child.cumul);
            if k + 1 == count && (!fractal || remaining == 0) {
                new_mask &= !(1 << (depth - 1));
            }
            self.line(depth, mask, margin)?;
            for (i, name) in child.names.iter().enumerate() {
                let label = (i == 0).then(|| self.value(child.cumul, total));
                let name = noted(child, i, name, true);
                self.entry(depth, new_mask, margin, label.as_deref(), &name)?;
            }
            let below = if fractal { child.children_hit() } else { total };
            self.level(child, below, depth + 1, new_mask | (1 << depth), margin)?;
            if self.g.print_limit > 0 && k + 1 == self.g.print_limit as usize {
                break;
            }
        }
        if fractal && remaining > 0 && remaining != total {
            new_mask &= !(1 << (depth - 1));
            let label = self.value(remaining, total);
            // With branch notes perf notes this line as a frame of no
            // branch too.
            let rest = match n.children.iter().any(|c| !c.notes.is_empty()) {
                true => "[...] (calltrace)",
                false => "[...]",
            };
            self.entry(depth, new_mask, margin, Some(&label), rest)?;
        }
        Ok(())
    }

    /// The separator line above a child: the bars of the open levels.
    fn line(&mut self, depth: usize, mask: u64, margin: usize) -> std::io::Result<()> {
        let mut s = format!("{MARGIN}{:margin$}", "");
        for i in 0..depth {
            s.push_str(if mask & (1 << i) != 0 {
                "|          "
            } else {
                "           "
            });
        }
        self.any = true;
        writeln!(self.out, "{s}")
    }

    /// One frame: the bars, `--share--` before a node's first frame.
    fn entry(
        &mut self,
        depth: usize,
        mask: u64,
        margin: usize,
        label: Option<&str>,
        name: &str,
    ) -> std::io::Result<()> {
        let mut s = format!("{MARGIN}{:margin$}", "");
        for i in 0..depth {
            s.push(if mask & (1 << i) != 0 { '|' } else { ' ' });
            match label {
                Some(l) if i == depth - 1 => {
                    s.push_str("--");
                    s.push_str(l);
                    s.push_str("--");
                }
                _ => s.push_str("          "),
            }
        }
        self.any = true;
        writeln!(self.out, "{s}{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(chains: &[(&[&str], u64)], parent: u64, total: u64, g: &Graph) -> String {
        let c: Vec<(Vec<Link>, u64)> = (chains.iter())
            .map(|(c, w)| (c.iter().map(|n| (*n, 0)).collect(), *w))
            .collect();
        let mut v = Vec::new();
        print(&mut v, (&c, &Starts::default()), parent, total, g).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn perf_graph_layout() {
        let chains: &[(&[&str], u64)] = &[
            (&["start", "main", "a", "b", "leaf"], 65),
            (&["start", "main", "a", "c", "leaf"], 22),
            (&["start", "main", "d"], 11),
            (&["start", "main", "leaf"], 2),
        ];
        let t = text(chains, 100, 100, &Graph::default());
        let want = "            |
            ---start
               main
               |          
               |--87.00%--a
               |          |          
               |          |--65.00%--b
               |          |          leaf
               |          |          
               |           --22.00%--c
               |                     leaf
               |          
               |--11.00%--d
               |          
                --2.00%--leaf

";
        assert_eq!(t, want);
        // A threshold of 5% cuts the 2% branch; the last bar closes on d.
        let g = Graph {
            threshold: 5.0,
            ..Graph::default()
        };
        let t = text(chains, 100, 100, &g);
        assert!(
            !t.contains("--2.00%") && t.contains("                --11.00%--d"),
            "{t}"
        );
        let g = Graph {
            mode: GraphMode::Folded,
            ..Graph::default()
        };
        assert!(text(chains, 100, 100, &g).starts_with("65.00% start;main;a;b;leaf\n22.00% "));
    }

    #[test]
    fn same_named_frames_of_two_binaries_are_two_nodes() {
        // A program's `_start` (binary 1) and the loader's (binary 2).
        let chains = vec![
            (vec![("_start", 1), ("main", 1)], 90),
            (vec![("_start", 2), ("_dl_start", 2)], 10),
        ];
        let mut v = Vec::new();
        print(
            &mut v,
            (&chains, &Starts::default()),
            100,
            100,
            &Graph::default(),
        )
        .unwrap();
        let t = String::from_utf8(v).unwrap();
        assert!(
            t.contains("|--90.00%--_start\n") && t.contains(" --10.00%--_start\n"),
            "{t}"
        );
    }

    #[test]
    fn siblings_of_equal_weight_come_in_perfs_order() {
        // perf 6.1 on an `sh -c` loop: equal children by binary (the later
        // mapped first, none last), then by place in it, both descending;
        // by name, descending, where one is inlined.
        let (libc, dash, none) = (4, 3, pmx_symbols::symbolize::UNKNOWN_DSO);
        let order = |links: &[(&'static str, u32, u64)]| {
            let starts: Starts = links.iter().map(|&(n, b, s)| ((n, b), s)).collect();
            let chains: Vec<(Vec<Link>, u64)> = (links.iter())
                .map(|&(n, b, _)| (vec![("main", dash), (n, b)], 1))
                .collect();
            let mut v = Vec::new();
            let n = links.len() as u64;
            print(&mut v, (&chains, &starts), n, n, &Graph::default()).unwrap();
            let t = String::from_utf8(v).unwrap();
            let names: Vec<String> = (t.lines())
                .filter_map(|l| Some(l.split("%--").nth(1)?.to_string()))
                .collect();
            names
        };
        let got = order(&[
            ("0x56526892ccc8", dash, 0x5652_6892_ccc8),
            ("0x7fff9fd7ee70", none, 0x7fff_9fd7_ee70),
            ("__vsnprintf_chk", libc, 0x13_5000),
            ("0x56526892cfa2", dash, 0x5652_6892_cfa2),
            ("__memmove_avx_unaligned_erms", libc, 0x19_a000),
        ]);
        let want = [
            "__memmove_avx_unaligned_erms",
            "__vsnprintf_chk",
            "0x56526892cfa2",
            "0x56526892ccc8",
            "0x7fff9fd7ee70",
        ];
        assert_eq!(got, want);
        let got = order(&[
            ("__find_specmb (inlined)", libc, u64::MAX),
            ("_itoa_word", libc, 0x5_5000),
            ("outstring_func (inlined)", libc, u64::MAX),
        ]);
        let want = [
            "outstring_func (inlined)",
            "_itoa_word",
            "__find_specmb (inlined)",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn fractal_shows_what_was_cut() {
        let chains: &[(&[&str], u64)] = &[(&["m", "a"], 900), (&["m", "b"], 99), (&["m"], 1)];
        let g = Graph {
            mode: GraphMode::Fractal,
            ..Graph::default()
        };
        let t = text(chains, 1000, 1000, &g);
        assert!(
            t.contains("|--90.00%--a") && t.contains(" --0.10%--[...]"),
            "{t}"
        );
    }
}
