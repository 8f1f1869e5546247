//! The top-down (TMA) tree: which metrics are its nodes, how they nest, and
//! the bottleneck a measurement points at.
//!
//! The tree comes from one source of the library — the most preferred one
//! that has top-down nodes: Intel's tables when loaded (full depth, Intel's
//! thresholds), perf's AMD `pipeline.json` on Zen 4 and 5 (two levels,
//! pmx's thresholds: [`crate::perf_x86`]), else the built-in level 1. Parents come from Intel's
//! `ParentCategory` or perf's `tma_<parent>_group` membership; a node's
//! level is its depth in the tree (Intel's `Level` field disagrees with the
//! tree for a few nodes — Skylake-SP's `Serializing_Operation` says 3 but
//! sits under a level-4 node — and the tree is what `-l N` cuts).
//!
//! The bottleneck: starting from the flagged level-1 node with the largest
//! value, step to the flagged child with the largest value while there is
//! one (and the level allows); the last node reached is named. Intel's
//! thresholds include their parents' conditions, so a flagged node has
//! flagged ancestors.

use crate::eval::{Evaluated, Evaluator, Missing};
use crate::library::{Library, MetricId};
use serde::Serialize;
use std::collections::HashMap;

/// The level-1 categories, in the order they are shown.
const LEVEL1: &[&str] = &[
    "frontend_bound",
    "bad_speculation",
    "backend_bound",
    "smt_contention",
    "retiring",
];

fn level1_rank(name: &str) -> Option<usize> {
    let n = name.to_ascii_lowercase();
    let n = n.strip_prefix("tma_").unwrap_or(&n);
    LEVEL1.iter().position(|l| *l == n)
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TmaNode {
    /// The metric.
    pub metric: MetricId,
    /// Its name.
    pub name: String,
    /// Depth in the tree (level-1 nodes are 1).
    pub level: u32,
    /// The parent node's index in [`TmaTree::nodes`].
    pub parent: Option<usize>,
    /// The children's indexes, in the source's order.
    pub children: Vec<usize>,
}

/// The top-down hierarchy of a library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TmaTree {
    nodes: Vec<TmaNode>,
    roots: Vec<usize>,
    /// The source the tree comes from ([`crate::MetricSource::origin`]).
    pub origin: String,
}

impl TmaTree {
    /// The tree of the most preferred source of `lib` that has level-1
    /// top-down nodes; `None` when no source has them.
    pub fn from_library(lib: &Library) -> Option<TmaTree> {
        let mut order: Vec<usize> = (0..lib.sources().len()).collect();
        order.sort_by_key(|&s| (lib.sources()[s].kind.priority(), s));
        order.into_iter().find_map(|s| build(lib, s))
    }

    /// Every node, parents before children (depth-first, source order).
    pub fn nodes(&self) -> &[TmaNode] {
        &self.nodes
    }

    /// The level-1 nodes.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// The deepest level.
    pub fn depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.level).max().unwrap_or(0)
    }

    /// The metrics of the nodes down to `max_level` (for scheduling).
    pub fn metrics_to_level(&self, max_level: u32) -> Vec<MetricId> {
        self.nodes
            .iter()
            .filter(|n| n.level <= max_level)
            .map(|n| n.metric)
            .collect()
    }

    /// Evaluate the nodes down to `max_level` and find the bottleneck. The
    /// evaluator must be over the library the tree was built from.
    pub fn evaluate(&self, ev: &mut Evaluator<'_>, max_level: u32) -> TmaReport {
        let lib = ev.library();
        let mut results: Vec<TmaResult> = Vec::new();
        // Node index → result index, and back.
        let mut pos: Vec<Option<usize>> = vec![None; self.nodes.len()];
        let mut node_of: Vec<usize> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.level > max_level {
                continue;
            }
            // (A tree from another library has nothing to say here.)
            let Some(m) = lib.metrics().get(n.metric.index()) else {
                continue;
            };
            let evaluated = ev.metric(n.metric);
            let flag = match ev.threshold(n.metric) {
                None => Flag::NoThreshold,
                Some(Ok(true)) => Flag::Over,
                Some(Ok(false)) => Flag::Under,
                Some(Err(m)) => Flag::Unknown(m),
            };
            pos[i] = Some(results.len());
            node_of.push(i);
            results.push(TmaResult {
                name: n.name.clone(),
                level: n.level,
                parent: n.parent.and_then(|p| pos[p]),
                percent: evaluated.value().map(|v| {
                    if m.unit == "%" {
                        m.display_value(v)
                    } else {
                        v * 100.0
                    }
                }),
                evaluated,
                flag,
                metric: n.metric,
            });
        }
        // Follow flagged nodes down from the roots.
        let best = |cands: &[usize], results: &[TmaResult]| -> Option<usize> {
            cands
                .iter()
                .filter_map(|&c| pos.get(c).copied().flatten())
                .filter(|&r| results[r].flag == Flag::Over)
                .max_by(|&a, &b| {
                    let va = results[a].percent.unwrap_or(f64::MIN);
                    let vb = results[b].percent.unwrap_or(f64::MIN);
                    va.total_cmp(&vb)
                })
        };
        let mut bottleneck = None;
        let mut here = best(&self.roots, &results);
        while let Some(r) = here {
            bottleneck = Some(r);
            here = best(&self.nodes[node_of[r]].children, &results);
        }
        let mut notes = Vec::new();
        if ev.machine().smt_on == Some(true) {
            notes.push(
                "SMT is on: the sibling thread shares the core's issue slots, so one thread's \
                 top-down fractions are estimates (core-wide counts are split evenly between \
                 the threads)"
                    .to_string(),
            );
        }
        // AMD's trees count dispatch slots per cycle: say how many.
        let slots = lib
            .lookup("total_dispatch_slots")
            .into_iter()
            .find(|&id| lib.source_of(id).origin == self.origin);
        if let Some(id) = slots {
            notes.push(format!(
                "dispatch slots: total_dispatch_slots = {}",
                lib.metric(id).formula
            ));
        }
        let mut supplied: Vec<&str> = Vec::new();
        for r in &results {
            let by = lib.metric(r.metric).threshold.as_ref();
            if let Some(by) = by.and_then(|t| t.supplied_by.as_deref()) {
                if !supplied.contains(&by) {
                    supplied.push(by);
                }
            }
        }
        for by in supplied {
            notes.push(format!("thresholds: {by}"));
        }
        if results.iter().all(|r| r.flag == Flag::NoThreshold) {
            notes.push(
                "no thresholds are defined for this tree: no node is flagged and no bottleneck \
                 is named"
                    .to_string(),
            );
        }
        TmaReport {
            nodes: results,
            bottleneck,
            origin: self.origin.clone(),
            notes,
        }
    }
}

fn build(lib: &Library, src: usize) -> Option<TmaTree> {
    let ids: Vec<MetricId> = lib
        .iter()
        .filter(|(_, m)| m.source == src)
        .map(|(id, _)| id)
        .collect();
    let by_name: HashMap<String, MetricId> = ids
        .iter()
        .map(|&id| (lib.metric(id).name.to_ascii_lowercase(), id))
        .collect();
    let parent_of = |id: MetricId| -> Option<MetricId> {
        let p = lib.metric(id).parent.as_ref()?;
        by_name.get(&p.to_ascii_lowercase()).copied()
    };
    let mut children: HashMap<MetricId, Vec<MetricId>> = HashMap::new();
    for &id in &ids {
        if let Some(p) = parent_of(id) {
            if p != id {
                children.entry(p).or_default().push(id);
            }
        }
    }
    let mut roots: Vec<MetricId> = ids
        .iter()
        .copied()
        .filter(|&id| {
            let m = lib.metric(id);
            parent_of(id).is_none()
                && m.parent.is_none()
                && (level1_rank(&m.name).is_some() && m.level.is_none_or(|l| l == 1))
        })
        .collect();
    if roots.is_empty() {
        return None;
    }
    roots.sort_by_key(|&id| (level1_rank(&lib.metric(id).name), id));
    let mut tree = TmaTree {
        nodes: Vec::new(),
        roots: Vec::new(),
        origin: lib.sources()[src].origin.clone(),
    };
    let mut visited = vec![false; lib.len()];
    for r in roots {
        let idx = add(lib, &children, &mut tree, &mut visited, r, None, 1);
        if let Some(i) = idx {
            tree.roots.push(i);
        }
    }
    Some(tree)
}

fn add(
    lib: &Library,
    children: &HashMap<MetricId, Vec<MetricId>>,
    tree: &mut TmaTree,
    visited: &mut [bool],
    id: MetricId,
    parent: Option<usize>,
    level: u32,
) -> Option<usize> {
    if std::mem::replace(&mut visited[id.index()], true) {
        return None; // a cycle in the parent relation
    }
    let i = tree.nodes.len();
    tree.nodes.push(TmaNode {
        metric: id,
        name: lib.metric(id).name.clone(),
        level,
        parent,
        children: Vec::new(),
    });
    for &c in children.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
        if let Some(ci) = add(lib, children, tree, visited, c, Some(i), level + 1) {
            tree.nodes[i].children.push(ci);
        }
    }
    Some(i)
}

/// Whether a node is over its threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "flag", rename_all = "kebab-case")]
pub enum Flag {
    /// Over: a likely bottleneck.
    Over,
    /// Under.
    Under,
    /// The threshold could not be evaluated.
    Unknown(Missing),
    /// The metric has no threshold.
    NoThreshold,
}

/// One evaluated node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmaResult {
    /// The metric.
    pub metric: MetricId,
    /// Its name.
    pub name: String,
    /// Its depth.
    pub level: u32,
    /// The parent's index in [`TmaReport::nodes`].
    pub parent: Option<usize>,
    /// The value, reliability and so on.
    pub evaluated: Evaluated,
    /// The value in percent of the slots (or cycles) it is a fraction of.
    pub percent: Option<f64>,
    /// Over its threshold?
    pub flag: Flag,
}

/// A top-down measurement: every node down to the level asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmaReport {
    /// The nodes, parents before children.
    pub nodes: Vec<TmaResult>,
    /// The index of the deepest flagged node on the flagged path with the
    /// largest values.
    pub bottleneck: Option<usize>,
    /// Where the tree came from.
    pub origin: String,
    /// Things the reader should know (SMT is on, no thresholds).
    pub notes: Vec<String>,
}

impl TmaReport {
    /// The bottleneck node, if any.
    pub fn bottleneck(&self) -> Option<&TmaResult> {
        self.bottleneck.and_then(|i| self.nodes.get(i))
    }

    /// The path from the root to the bottleneck, as names.
    pub fn bottleneck_path(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut here = self.bottleneck;
        while let Some(i) = here {
            out.push(self.nodes[i].name.as_str());
            here = self.nodes[i].parent;
        }
        out.reverse();
        out
    }
}
