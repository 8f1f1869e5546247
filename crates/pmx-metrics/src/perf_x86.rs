//! Linux perf's x86 metric tables (AMD Zen 1–5): `x86/mapfile.csv` and the
//! `amdzenN/*.json` directories it names, read at run time from an events
//! directory.
//!
//! perf's mapfile maps a CPU key to a *directory*
//! (`AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),v1,amdzen3,core`);
//! which directories of an events directory hold perf's layout, and which
//! row selects a CPU, is [`pmx_events::perf_json`]'s rule (the same the
//! event source uses, so events and metrics come from one directory).
//! Every JSON file of the selected directory is a list that may mix events
//! and metrics; the metrics (entries with a `MetricName`) are read with
//! [`crate::tables::parse_perf_format`], one table per file, so
//! `x86/amdzen4/pipeline.json` is the source of Zen 4's pipeline tree.
//!
//! ## Thresholds of the pipeline tree
//!
//! AMD's tables define the tree (`PipelineL1`, `PipelineL2`,
//! `<parent>_group`) but no `MetricThreshold`. So that the tree flags nodes
//! and names a bottleneck as it does on Intel, [`pipeline_thresholds`] gives
//! each node without a threshold the one of its top-down counterpart
//! (Yasin's level 1 as Intel's tables carry it; Intel's level-2 nodes for
//! the children), with the parent's condition included as Intel's are:
//!
//! | node | over when | Intel's counterpart |
//! |---|---|---|
//! | `frontend_bound` | > 15 % | Frontend Bound |
//! | `bad_speculation` | > 15 % | Bad Speculation |
//! | `backend_bound` | > 20 % | Backend Bound |
//! | `retiring` | > 70 % | Retiring |
//! | `smt_contention` | (none) | — |
//! | frontend `…latency` / `…bandwidth` | > 10 % and parent | Fetch Latency / Bandwidth |
//! | bad speculation `…mispredicts` / `…restarts` | > 10 % and parent | Branch Mispredicts / Machine Clears |
//! | backend `…memory` | > 20 % and parent | Memory Bound |
//! | backend `…cpu` | > 10 % and parent | Core Bound |
//! | retiring `…fastpath` | > 60 % and parent | Light Operations |
//! | retiring `…microcode` | > 10 % and parent | Heavy Operations |
//!
//! Each such threshold says so ([`Threshold::supplied_by`]), and the tree's
//! report carries a note.

use crate::formula::{Dialect, Formula};
use crate::library::{MetricTable, Threshold};
use crate::tables::parse_perf_format;
use pmx_events::perf_json::{layouts, Layout, PerfMapRow, PerfMapfile};
use pmx_events::LoadError;
use pmx_model::cpu::CpuId;
use std::path::{Path, PathBuf};

/// The row of perf's mapfile in `x86_dir` (a directory holding perf's
/// `mapfile.csv`) that selects `cpu`, when its directory exists.
pub fn select_dir(x86_dir: &Path, cpu: &CpuId) -> Result<Option<PerfMapRow>, LoadError> {
    let map = PerfMapfile::read(x86_dir)?;
    Ok(map
        .select(cpu)
        .filter(|row| x86_dir.join(&row.dir).is_dir())
        .cloned())
}

/// perf's metric tables for `cpu` under `events_dir` (`x86/mapfile.csv` and
/// the directory it selects): one table per JSON file that has metrics, in
/// file-name order, origins relative to `events_dir`. No perf layout, or no
/// row for the CPU: an empty list. An unreadable or malformed file is an
/// error.
pub fn load_perf_x86_tables(events_dir: &Path, cpu: &CpuId) -> Result<Vec<MetricTable>, LoadError> {
    let mut found = None;
    for layout in layouts(events_dir) {
        if let Layout::Perf(x86) = layout {
            if let Some(row) = select_dir(&x86, cpu)? {
                found = Some((x86, row));
                break;
            }
        }
    }
    let Some((x86, row)) = found else {
        return Ok(Vec::new());
    };
    let dir = x86.join(&row.dir);
    let io = |path: &Path, e: std::io::Error| LoadError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    let mut tables = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
        // Most files hold events only; skip them without parsing.
        if !bytes.windows(12).any(|w| w == b"\"MetricName\"") {
            continue;
        }
        let origin = path
            .strip_prefix(events_dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let mut t = parse_perf_format(&bytes, &origin).map_err(|message| LoadError::Format {
            path: path.clone(),
            message,
        })?;
        t.source.version = Some(row.version.clone()).filter(|v| !v.is_empty());
        pipeline_thresholds(&mut t);
        if !t.metrics.is_empty() {
            tables.push(t);
        }
    }
    Ok(tables)
}

/// Who supplies the pipeline tree's thresholds ([`Threshold::supplied_by`]).
pub const PIPELINE_THRESHOLDS_BY: &str = "pmx's, after Intel's for the matching top-down \
     categories (AMD's tables define none)";

/// The share over which a pipeline node is flagged: level 1 by name,
/// level 2 by parent and a word of the name.
fn pipeline_limit(name: &str, parent: Option<&str>) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    let Some(p) = parent else {
        return match n.as_str() {
            "frontend_bound" | "bad_speculation" => Some(0.15),
            "backend_bound" => Some(0.20),
            "retiring" => Some(0.70),
            _ => None,
        };
    };
    let has = |w: &str| n.contains(w);
    match p.to_ascii_lowercase().as_str() {
        "frontend_bound" if has("latency") || has("bandwidth") => Some(0.10),
        "bad_speculation" if has("mispredict") || has("restart") => Some(0.10),
        "backend_bound" if has("memory") => Some(0.20),
        "backend_bound" if has("cpu") => Some(0.10),
        "retiring" if has("fastpath") => Some(0.60),
        "retiring" if has("microcode") => Some(0.10),
        _ => None,
    }
}

/// Give the nodes of an AMD pipeline tree (metrics in a `PipelineLn`
/// group) that have no threshold pmx's (see the module's table); values
/// are fractions, so the limits are too.
pub fn pipeline_thresholds(table: &mut MetricTable) {
    let limits: Vec<(String, Option<f64>)> = table
        .metrics
        .iter()
        .map(|m| {
            let node = m.groups.iter().any(|g| g.starts_with("PipelineL"));
            let limit = node
                .then(|| pipeline_limit(&m.name, m.parent.as_deref()))
                .flatten();
            (m.name.clone(), limit)
        })
        .collect();
    let limit_of = |name: &str| {
        limits
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, l)| *l)
    };
    for m in &mut table.metrics {
        if m.threshold.is_some() {
            continue;
        }
        let Some(own) = limit_of(&m.name) else {
            continue;
        };
        let mut text = format!("{} > {own}", m.name);
        if let Some(p) = &m.parent {
            match limit_of(p) {
                Some(pl) => text.push_str(&format!(" & {p} > {pl}")),
                None => continue,
            }
        }
        match Formula::parse(&text, Dialect::Perf) {
            Ok(formula) => {
                m.threshold = Some(Threshold {
                    formula,
                    issues: Vec::new(),
                    supplied_by: Some(PIPELINE_THRESHOLDS_BY.to_string()),
                })
            }
            Err(e) => table.warnings.push(format!("{}: threshold: {e}", m.name)),
        }
    }
}
