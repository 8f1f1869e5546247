//! `pmx compare --tma`: the top-down tree of every side, side by side.
//!
//! Each run of a side (a kept run of `pmx stat -r N --json`, or a file) is
//! evaluated through `pmx analyze`'s tree ([`crate::analyze`]); a node's
//! samples are its values over the runs, compared like any row
//! ([`super::change`]). Each side's bottleneck is the tree's over the
//! side's mean counts (every run's rows averaged per event and domain).

use super::samples::runs_of;
use super::stats::Estimate;
use super::{change, Change, Side};
use crate::analyze;
use pmx_count::database::{self, DatabaseOptions};
use pmx_formats::StatReport;
use pmx_metrics::{Flag, TmaReport};

/// How the trees are made.
#[derive(Debug, Clone, Default)]
pub struct TmaOptions {
    /// Down to this level (from 1).
    pub level: u32,
    /// The CPU and its tables; without a CPU, the one the first file
    /// names.
    pub database: DatabaseOptions,
    /// SMT was on where the counts were taken.
    pub smt_on: bool,
}

/// Why there are no trees.
#[derive(Debug, thiserror::Error)]
pub enum TmaCompareError {
    /// Level 0.
    #[error("-l 0: levels start at 1")]
    LevelZero,
    /// No file names its CPU and none was given.
    #[error("the files do not say which CPU they were counted on: give --cpu ID (e.g. GenuineIntel-6-5E-3)")]
    NoCpu,
    /// The database could not be loaded.
    #[error(transparent)]
    Database(#[from] database::DatabaseError),
    /// The analysis failed (no tree for the CPU).
    #[error(transparent)]
    Analyze(#[from] crate::analyze::AnalyzeError),
}

/// One node of the tree on every side.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TmaNode {
    /// Its name.
    pub name: String,
    /// Its depth (1 = top).
    pub level: u32,
    /// Its parent's index in [`TmaCompare::nodes`].
    pub parent: Option<usize>,
    /// Per side: the mean over the runs (% of slots) and its interval.
    pub sides: Vec<Option<Estimate>>,
    /// Per side after the base.
    pub changes: Vec<Option<Change>>,
    /// Per side: over its threshold in the side's mean tree.
    pub over: Vec<bool>,
}

/// The trees of every side.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TmaCompare {
    /// The CPU the trees are for.
    pub cpu: String,
    /// The level asked for.
    pub level: u32,
    /// Where the tree came from (the metric table).
    pub origin: String,
    /// The nodes, parents before children.
    pub nodes: Vec<TmaNode>,
    /// Per side: the path to its bottleneck (empty when none is flagged).
    pub bottlenecks: Vec<Vec<String>>,
}

impl TmaCompare {
    /// "B moved the bottleneck from X to Y" (or kept it), per side after
    /// the base; `labels` name the sides.
    pub fn verdicts(&self, labels: &[String]) -> Vec<String> {
        let name = |p: &Vec<String>| match p.is_empty() {
            true => "none".to_string(),
            false => p.join("."),
        };
        let base = name(&self.bottlenecks[0]);
        (1..self.bottlenecks.len())
            .map(|i| {
                let here = name(&self.bottlenecks[i]);
                if here == base {
                    format!("{} kept the bottleneck at {base}", labels[i])
                } else {
                    format!("{} moved the bottleneck from {base} to {here}", labels[i])
                }
            })
            .collect()
    }
}

/// The trees of `sides`, each node compared with `threshold`.
pub fn compare_trees(
    sides: &[Side],
    opts: &TmaOptions,
    threshold: f64,
) -> Result<TmaCompare, TmaCompareError> {
    if opts.level == 0 {
        return Err(TmaCompareError::LevelZero);
    }
    let cpu = opts
        .database
        .cpu
        .clone()
        .or_else(|| {
            sides
                .iter()
                .flat_map(|s| &s.reports)
                .find_map(|r| r.provenance.cpu.clone())
        })
        .ok_or(TmaCompareError::NoCpu)?;
    let db_opts = DatabaseOptions {
        cpu: Some(cpu),
        ..opts.database.clone()
    };
    let db = database::load(&db_opts)?;
    let lib = pmx_count::metrics::library(&db);
    let machine = analyze::machine(&db, opts.smt_on);
    let tree_of = |counts: &StatReport| -> Result<TmaReport, TmaCompareError> {
        Ok(analyze::tma_tree(counts, &db, &lib, &machine, opts.level)?)
    };
    // Per side: the mean tree, and each node's values over the runs.
    let mut means = Vec::new();
    let mut values: Vec<Vec<(String, Vec<f64>)>> = Vec::new();
    for s in sides {
        let runs: Vec<StatReport> = s.reports.iter().flat_map(runs_of).collect();
        let mut per_node: Vec<(String, Vec<f64>)> = Vec::new();
        for run in &runs {
            for n in tree_of(run)?.nodes {
                let Some(v) = n.percent.or(n.evaluated.value()) else {
                    continue;
                };
                match per_node.iter_mut().find(|(name, _)| *name == n.name) {
                    Some((_, vs)) => vs.push(v),
                    None => per_node.push((n.name, vec![v])),
                }
            }
        }
        means.push(tree_of(&mean_counts(&runs))?);
        values.push(per_node);
    }
    Ok(TmaCompare {
        cpu: db.target.cpu.to_string(),
        level: opts.level,
        origin: means[0].origin.clone(),
        nodes: nodes(&means, &values, threshold),
        bottlenecks: means
            .iter()
            .map(|t| t.bottleneck_path().iter().map(|s| s.to_string()).collect())
            .collect(),
    })
}

/// The nodes of the base's mean tree (then any only another side has),
/// each with every side's values.
fn nodes(means: &[TmaReport], values: &[Vec<(String, Vec<f64>)>], threshold: f64) -> Vec<TmaNode> {
    let samples = |side: usize, name: &str| -> &[f64] {
        values[side]
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[])
    };
    let mut out: Vec<TmaNode> = Vec::new();
    for tree in means {
        for n in &tree.nodes {
            if out.iter().any(|o| o.name == n.name) {
                continue;
            }
            let parent = n
                .parent
                .and_then(|p| out.iter().position(|o| o.name == tree.nodes[p].name));
            let base = samples(0, &n.name);
            out.push(TmaNode {
                name: n.name.clone(),
                level: n.level,
                parent,
                sides: (0..means.len())
                    .map(|s| Estimate::of(samples(s, &n.name)))
                    .collect(),
                changes: (1..means.len())
                    .map(|s| {
                        let other = samples(s, &n.name);
                        (!base.is_empty() && !other.is_empty())
                            .then(|| change(base, other, threshold))
                    })
                    .collect(),
                over: means
                    .iter()
                    .map(|t| {
                        t.nodes
                            .iter()
                            .any(|m| m.name == n.name && m.flag == Flag::Over)
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The runs' rows averaged per event and domain (totals only), as one
/// report.
fn mean_counts(runs: &[StatReport]) -> StatReport {
    let mut mean = runs.first().cloned().unwrap_or_default();
    mean.rows.retain(|r| r.time.is_none());
    for row in &mut mean.rows {
        let vals: Vec<f64> = runs
            .iter()
            .flat_map(|r| &r.rows)
            .filter(|r| r.time.is_none() && r.event == row.event && r.domain == row.domain)
            .filter_map(|r| r.value)
            .collect();
        row.value = (!vals.is_empty()).then(|| super::stats::mean(&vals));
    }
    mean
}
