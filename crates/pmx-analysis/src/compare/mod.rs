//! `pmx compare`: did B change what A measured, and is the change more
//! than noise?
//!
//! Each side is one or more files of counts (pmx's JSON and CSV, perf's
//! `-x SEP` and `-j`, read by `pmx-formats` as `pmx analyze` reads them),
//! or reports in memory (`pmx stat --compare`). Its runs are pooled
//! ([`samples`]): every run `pmx stat -r N --json` kept, or one value per
//! file. For every event and metric (per domain) on the first side (the
//! base) and another, [`compare_sides`] gives each side's mean with its
//! 95% confidence interval, the change in percent and its p-value
//! ([`stats`]): Welch's t-test when both sides have at least
//! [`WELCH_FROM`] runs, the Mann–Whitney U rank test below that (no
//! assumption of normality where it cannot be checked). A change is
//! significant when p < the threshold. Rows come ordered by significance,
//! then size of change; each side's summary counts the significant
//! changes and their geometric mean. [`tma`] puts the top-down trees of
//! both sides side by side and names each side's bottleneck. [`runner`]
//! runs commands A and B interleaved for `pmx stat --compare`.

pub mod runner;
pub mod samples;
pub mod stats;
pub mod tma;

pub use samples::{Key, Kind, Series};
pub use stats::{Estimate, RankTest, Welch};
pub use tma::{TmaCompare, TmaNode, TmaOptions};

use pmx_formats::StatReport;
use std::path::PathBuf;

/// From this many runs on each side the test is Welch's t-test (the
/// means are close to normal); below, the rank test.
pub const WELCH_FROM: usize = 10;

/// The default significance threshold.
pub const DEFAULT_THRESHOLD: f64 = 0.05;

/// One side of a comparison: its name and files.
#[derive(Debug, Clone, PartialEq)]
pub struct SideFiles {
    /// How the report names it (`A`, `B`, or the file).
    pub label: String,
    /// Its files, pooled.
    pub files: Vec<PathBuf>,
}

/// What `pmx compare` is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sides, the base first (at least two).
    pub sides: Vec<SideFiles>,
    /// A change is significant when p is below this (0 < p < 1).
    pub threshold: f64,
    /// Also compare the top-down trees.
    pub tma: Option<tma::TmaOptions>,
}

/// One side of a comparison, read.
#[derive(Debug, Clone)]
pub struct Side {
    /// Its name.
    pub label: String,
    /// Its reports (files or `pmx stat --compare`'s runs), pooled.
    pub reports: Vec<StatReport>,
}

/// Why there is no comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Fewer than two sides.
    #[error("give at least two sides to compare (A.json B.json, or A1 A2 -- B1 B2)")]
    OneSide,
    /// A side without files.
    #[error("side {0} has no files")]
    EmptySide(String),
    /// The threshold is not a probability.
    #[error("--threshold {0}: give a p-value between 0 and 1 (e.g. 0.05)")]
    Threshold(f64),
    /// A file could not be read.
    #[error(transparent)]
    Read(#[from] pmx_formats::ReadError),
    /// A file holds intervals only.
    #[error("{0}: holds interval rows only; compare totals (pmx stat without -I, or -r N)")]
    IntervalsOnly(String),
    /// A file without a single count or metric.
    #[error("{0}: holds no event count or metric to compare")]
    Empty(String),
    /// The sides have nothing in common.
    #[error("the sides have no event or metric in common: {0}")]
    NothingInCommon(String),
    /// The top-down trees could not be made.
    #[error(transparent)]
    Tma(#[from] tma::TmaCompareError),
}

/// The change from the base to one other side.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Change {
    /// (mean − base mean) / base mean in %; `None` when the base mean is 0.
    pub percent: Option<f64>,
    /// The p-value of the test used; `None` when no test is possible
    /// (a side with one run).
    pub p: Option<f64>,
    /// The test that gave `p`: `welch`, `mann-whitney`, or `none`.
    pub test: &'static str,
    /// Welch's t-test (each side ≥ 2 runs), with the interval of the
    /// difference.
    pub welch: Option<Welch>,
    /// The rank test.
    pub rank: Option<RankTest>,
    /// p < the threshold.
    pub significant: bool,
}

/// Compare `b` with the base `a`.
pub fn change(a: &[f64], b: &[f64], threshold: f64) -> Change {
    let welch = stats::welch(a, b);
    let rank = stats::mann_whitney(a, b);
    let (p, test) = match (welch, rank) {
        (Some(w), _) if a.len() >= WELCH_FROM && b.len() >= WELCH_FROM => (Some(w.p), "welch"),
        (_, Some(r)) if a.len() >= 2 && b.len() >= 2 => (Some(r.p), "mann-whitney"),
        _ => (None, "none"),
    };
    let (ma, mb) = (stats::mean(a), stats::mean(b));
    Change {
        percent: (ma != 0.0).then(|| (mb - ma) / ma.abs() * 100.0),
        p,
        test,
        welch,
        rank,
        significant: p.is_some_and(|p| p < threshold),
    }
}

/// One event or metric in one domain, on every side.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// Event or metric.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Its domain (empty for totals).
    pub domain: String,
    /// Its unit.
    pub unit: String,
    /// Scaled from a partial count (or computed from such inputs) on
    /// some side.
    pub estimate: bool,
    /// Per side: the mean and its interval; `None` where absent.
    pub sides: Vec<Option<Estimate>>,
    /// Per side after the base: the change; `None` where absent.
    pub changes: Vec<Option<Change>>,
}

impl Row {
    /// The most significant change (smallest p), for ordering.
    fn best_p(&self) -> f64 {
        self.changes
            .iter()
            .flatten()
            .filter_map(|c| c.p)
            .fold(1.0, f64::min)
    }

    /// Significant on some side.
    pub fn significant(&self) -> bool {
        self.changes.iter().flatten().any(|c| c.significant)
    }

    /// The largest significant change in size (|log ratio|), or the
    /// largest change when none is significant.
    fn size(&self) -> f64 {
        let sig = self.significant();
        self.changes
            .iter()
            .flatten()
            .filter(|c| c.significant || !sig)
            .filter_map(|c| c.percent)
            .map(|p| (1.0 + p / 100.0).abs().max(1e-12).ln().abs())
            .fold(0.0, f64::max)
    }
}

/// The summary of one side against the base.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SideSummary {
    /// The side's label.
    pub side: String,
    /// Rows compared (present on both, tested).
    pub compared: usize,
    /// Rows whose change is significant.
    pub significant: usize,
    /// The geometric mean of the significant changes' ratios as a change
    /// in % (rows with positive means only); `None` without any.
    pub geomean_percent: Option<f64>,
}

/// A side as the report names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SideInfo {
    /// Its label.
    pub label: String,
    /// Its files (or commands).
    pub sources: Vec<String>,
    /// The most runs of any row.
    pub runs: usize,
}

/// What `pmx compare` found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The sides, the base first.
    pub sides: Vec<SideInfo>,
    /// The threshold of significance.
    pub threshold: f64,
    /// The rows: significant first, then by size of change.
    pub rows: Vec<Row>,
    /// Per side after the base.
    pub summaries: Vec<SideSummary>,
    /// The top-down trees (`--tma`).
    pub tma: Option<tma::TmaCompare>,
    /// Things the reader should know.
    pub notes: Vec<String>,
}

/// A side's name: `A`, `B`, … by position.
pub fn label(i: usize) -> String {
    ((b'A' + (i % 26) as u8) as char).to_string()
}

/// The sides a command line names: without `more`, one side per file;
/// else `files` are side A and `more` (split at each `--`) the next sides.
pub fn sides_of(files: &[PathBuf], more: &[String]) -> Vec<SideFiles> {
    let groups: Vec<Vec<PathBuf>> = if more.is_empty() {
        files.iter().map(|f| vec![f.clone()]).collect()
    } else {
        std::iter::once(files.to_vec())
            .chain(
                more.split(|a| a == "--")
                    .map(|g| g.iter().map(PathBuf::from).collect()),
            )
            .collect()
    };
    groups
        .into_iter()
        .enumerate()
        .map(|(i, files)| SideFiles {
            label: label(i),
            files,
        })
        .collect()
}

/// Read every side's files and compare them.
pub fn compare(opts: &Options) -> Result<Report, CompareError> {
    if opts.sides.len() < 2 {
        return Err(CompareError::OneSide);
    }
    let mut sides = Vec::new();
    for s in &opts.sides {
        if s.files.is_empty() {
            return Err(CompareError::EmptySide(s.label.clone()));
        }
        let mut reports = Vec::new();
        for f in &s.files {
            let r = pmx_formats::read_file(f)?;
            if r.rows.iter().all(|row| row.time.is_some()) && !r.rows.is_empty() {
                return Err(CompareError::IntervalsOnly(f.display().to_string()));
            }
            if r.rows.is_empty() && r.metrics.is_empty() {
                let mut name = f.display().to_string();
                if let Some(cut) = r.provenance.cut {
                    name = format!("{name} ({cut})");
                }
                return Err(CompareError::Empty(name));
            }
            reports.push(r);
        }
        sides.push(Side {
            label: s.label.clone(),
            reports,
        });
    }
    let mut report = compare_sides(&sides, opts.threshold)?;
    if let Some(t) = &opts.tma {
        report.tma = Some(tma::compare_trees(&sides, t, opts.threshold)?);
    }
    Ok(report)
}

/// Compare `sides` (the base first) with significance `threshold`.
pub fn compare_sides(sides: &[Side], threshold: f64) -> Result<Report, CompareError> {
    if sides.len() < 2 {
        return Err(CompareError::OneSide);
    }
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(CompareError::Threshold(threshold));
    }
    let mut notes = Vec::new();
    let per_side: Vec<Vec<Series>> = sides
        .iter()
        .map(|s| {
            let (series, means_only) = samples::series_of(&s.reports);
            if means_only > 0 {
                notes.push(format!(
                    "{}: {means_only} file(s) hold only the mean of their runs (one sample each); \
                     pmx stat -r N --json keeps every run",
                    s.label
                ));
            }
            series
        })
        .collect();
    let rows = rows(&per_side, threshold);
    if rows.is_empty() {
        let held: Vec<String> = (sides.iter().zip(&per_side))
            .map(|(s, series)| side_holds(s, series))
            .collect();
        return Err(CompareError::NothingInCommon(held.join("; ")));
    }
    notes.extend(one_sided(&per_side, sides));
    let summaries = (1..sides.len())
        .map(|i| summary(&rows, i, &sides[i].label))
        .collect();
    Ok(Report {
        sides: sides
            .iter()
            .zip(&per_side)
            .map(|(s, series)| SideInfo {
                label: s.label.clone(),
                sources: s.reports.iter().map(|r| source_name(r, &s.label)).collect(),
                runs: series.iter().map(|x| x.samples.len()).max().unwrap_or(0),
            })
            .collect(),
        threshold,
        rows,
        summaries,
        tma: None,
        notes,
    })
}

/// What a side holds, for the message of sides with nothing in common:
/// its files and its first series by name (`A (a.csv): 2 series:
/// cycles, instructions`).
fn side_holds(s: &Side, series: &[Series]) -> String {
    let files: Vec<String> = (s.reports.iter())
        .map(|r| match r.provenance.cut {
            Some(cut) => format!("{}, which {cut}", source_name(r, &s.label)),
            None => source_name(r, &s.label),
        })
        .collect();
    let mut names: Vec<String> = (series.iter().take(4))
        .map(|x| match x.key.2.as_str() {
            "" => x.key.1.clone(),
            d => format!("{} ({d})", x.key.1),
        })
        .collect();
    if series.len() > 4 {
        names.push(format!("… {} more", series.len() - 4));
    }
    let what = match series.len() {
        0 => "no series".to_string(),
        1 => format!("1 series: {}", names.join(", ")),
        n => format!("{n} series: {}", names.join(", ")),
    };
    match files.as_slice() {
        [only] if *only == s.label => format!("{}: {what}", s.label),
        _ => format!("{} ({}): {what}", s.label, files.join(", ")),
    }
}

fn source_name(r: &StatReport, label: &str) -> String {
    match (&r.provenance.path, &r.provenance.command) {
        (Some(p), _) => p.display().to_string(),
        (None, Some(c)) => c.clone(),
        (None, None) => label.to_string(),
    }
}

/// A row for every series on the base and some other side, ordered.
fn rows(per_side: &[Vec<Series>], threshold: f64) -> Vec<Row> {
    let mut rows = Vec::new();
    for base in &per_side[0] {
        let others: Vec<Option<&Series>> = per_side[1..]
            .iter()
            .map(|s| s.iter().find(|x| x.key == base.key))
            .collect();
        if base.samples.is_empty() || others.iter().flatten().all(|o| o.samples.is_empty()) {
            continue;
        }
        let mut sides = vec![Estimate::of(&base.samples)];
        sides.extend(
            others
                .iter()
                .map(|o| o.and_then(|o| Estimate::of(&o.samples))),
        );
        let changes = others
            .iter()
            .map(|o| {
                o.filter(|o| !o.samples.is_empty())
                    .map(|o| change(&base.samples, &o.samples, threshold))
            })
            .collect();
        rows.push(Row {
            kind: base.key.0,
            name: base.key.1.clone(),
            domain: base.key.2.clone(),
            unit: base.unit.clone(),
            estimate: base.estimate || others.iter().flatten().any(|o| o.estimate),
            sides,
            changes,
        });
    }
    rows.sort_by(|a, b| {
        b.significant()
            .cmp(&a.significant())
            .then(b.size().total_cmp(&a.size()))
            .then(a.best_p().total_cmp(&b.best_p()))
            .then(a.kind.cmp(&b.kind))
    });
    rows
}

/// Notes on the series only one side has.
fn one_sided(per_side: &[Vec<Series>], sides: &[Side]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, series) in per_side.iter().enumerate() {
        let only: Vec<String> = series
            .iter()
            .filter(|s| {
                !s.samples.is_empty()
                    && per_side
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .all(|(_, o)| !o.iter().any(|x| x.key == s.key && !x.samples.is_empty()))
            })
            .map(|s| s.key.1.clone())
            .collect();
        if !only.is_empty() {
            notes.push(format!(
                "only in {}: {} (not compared)",
                sides[i].label,
                only.join(", ")
            ));
        }
    }
    if per_side
        .iter()
        .all(|s| s.iter().all(|x| x.samples.len() < 2))
    {
        notes.push(
            "one run per side: no test is possible; keep runs with pmx stat -r N --json".into(),
        );
    }
    notes
}

/// Side `i`'s summary over `rows`.
fn summary(rows: &[Row], i: usize, label: &str) -> SideSummary {
    let changes: Vec<(&Row, &Change)> = rows
        .iter()
        .filter_map(|r| r.changes[i - 1].as_ref().map(|c| (r, c)))
        .filter(|(_, c)| c.p.is_some())
        .collect();
    let ratios: Vec<f64> = changes
        .iter()
        .filter(|(_, c)| c.significant)
        .filter_map(|(r, _)| {
            let (a, b) = (r.sides[0]?.mean, r.sides[i]?.mean);
            (a > 0.0 && b > 0.0).then(|| b / a)
        })
        .collect();
    SideSummary {
        side: label.to_string(),
        compared: changes.len(),
        significant: changes.iter().filter(|(_, c)| c.significant).count(),
        geomean_percent: stats::geomean(&ratios).map(|g| (g - 1.0) * 100.0),
    }
}

#[cfg(test)]
mod tests;
