//! Metric tables from files: Intel's format, perf's format, and how Intel's
//! `mapfile.csv` finds them for a CPU.
//!
//! ## Intel's format (`<PLATFORM>/metrics/*_metrics.json`)
//!
//! `{"Header": {…}, "Metrics": [{…}]}`; each metric has a `MetricName`, a
//! `LegacyName` (`metric_TMA_..Fetch_Latency(%)`), a `Formula` over
//! single-letter aliases that `Events` (`{"Name", "Alias"}`) and `Constants`
//! bind, `UnitOfMeasure`, `Category`, `MetricGroup` (`;`-separated), `Level`
//! and `ParentCategory` (the TMA tree), and a `Threshold` whose `Formula`
//! names metrics through `ThresholdMetrics` aliases bound to *legacy* names
//! (or, in the E-core tables, writes the legacy names directly). Formulas
//! are in the metric's unit (`100 * (…)` for percentages), and so are the
//! thresholds. On loading, the aliases are replaced by the events, constants
//! and metrics they stand for, so the formula prints as
//! `100 * (IDQ_UOPS_NOT_DELIVERED.CORE / (4 * (…)))`. Each TMA metric also
//! answers to perf's name for it (`tma_` + the name in lower case:
//! `tma_frontend_bound`) and to its legacy name; tree nodes in a `TmaLn`
//! group are also in perf's `TopdownLn`.
//!
//! Repairs (reported as warnings): a TMA metric below level 1 without a
//! `ParentCategory` (Ice Lake-SP's `MEM_Bandwidth` and `MEM_Latency`) gets
//! as parent the first metric one level up that its threshold names (its
//! threshold always names the path to the root).
//!
//! ## perf's format (`<PLATFORM>/metrics/perf/*_metrics_perf.json`, perf's
//! `pmu-events/arch/x86/*/*metrics.json`)
//!
//! An array of `{"MetricName", "MetricExpr", "MetricGroup",
//! "MetricThreshold", "ScaleUnit", "BriefDescription", "Unit"}`; formulas
//! name events and other metrics directly. The TMA tree is in the groups:
//! `TopdownLn`/`tma_Ln_group` give the level, membership of
//! `tma_<parent>_group` the parent.
//!
//! ## Finding the files
//!
//! [`load_intel_tables`] reads `mapfile.csv` with
//! [`pmx_events::intel_json::Mapfile`], takes the rows of `EventType`
//! `metrics` that select the CPU, reads each file in Intel's format, then its
//! perf-format sibling (`metrics/perf/<stem>_perf.json`) when present, and
//! the `retire latency` rows' published mean latencies;
//! [`load_builtin_intel_tables`] does the same over the tables built into
//! pmx (`pmx_events::tables`), which carry no descriptions.

use crate::formula::{Constant, Dialect, Expr, ExprKind, Formula, RefHint};
use crate::library::{Metric, MetricSource, MetricTable, SourceKind, Threshold};
use pmx_events::intel_json::{FileRole, Mapfile};
use pmx_events::tables::{DirFiles, TableFiles};
use pmx_events::LoadError;
use pmx_model::cpu::CpuId;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("").trim()
}

fn number(v: &Value, key: &str) -> Option<u32> {
    match v.get(key)? {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn split_groups(s: &str) -> Vec<String> {
    s.split(';')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}

fn add_group(groups: &mut Vec<String>, g: &str) {
    if !groups.iter().any(|x| x.eq_ignore_ascii_case(g)) {
        groups.push(g.to_string());
    }
}

/// Parse Intel's unit words into (display unit, scale).
fn intel_unit(u: &str) -> (String, f64) {
    match u.trim().to_ascii_lowercase().as_str() {
        "percent" | "%" => ("%".into(), 1.0),
        _ => (u.trim().to_string(), 1.0),
    }
}

/// Parse perf's `ScaleUnit` (`100%`, `1GHz`, `1e9ns`, `1per_instr`).
pub fn parse_scale_unit(s: &str) -> (f64, String) {
    let s = s.trim();
    let split = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && s[i + 1..]
                        .starts_with(|n: char| n.is_ascii_digit() || n == '-' || n == '+'))
                || ((c == '-' || c == '+') && i > 0 && matches!(&s[i - 1..i], "e" | "E")))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let scale = s[..split].parse::<f64>().unwrap_or(1.0);
    (scale, s[split..].trim().to_string())
}

/// Parse a metric table in Intel's format. `origin` names it in messages
/// and in [`MetricSource::origin`].
pub fn parse_intel_format(bytes: &[u8], origin: &str) -> Result<MetricTable, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc
        .get("Metrics")
        .and_then(Value::as_array)
        .ok_or_else(|| "no \"Metrics\" array (not Intel's metric format)".to_string())?;
    let version = doc
        .get("Header")
        .and_then(|h| h.get("Version"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut table = MetricTable::new(MetricSource {
        kind: SourceKind::IntelFormat,
        origin: origin.to_string(),
        version,
        pmu: None,
    });
    // Legacy name → metric name, for thresholds.
    let mut legacy: HashMap<String, String> = HashMap::new();
    for m in list {
        let (name, leg) = (text(m, "MetricName"), text(m, "LegacyName"));
        if !name.is_empty() && !leg.is_empty() {
            legacy.insert(leg.to_string(), name.to_string());
        }
    }
    for (i, m) in list.iter().enumerate() {
        let name = text(m, "MetricName");
        if name.is_empty() {
            table.warnings.push(format!("entry {i}: no MetricName"));
            continue;
        }
        match intel_metric(m, name, &legacy) {
            Ok((metric, notes)) => {
                table
                    .warnings
                    .extend(notes.into_iter().map(|n| format!("{name}: {n}")));
                table.metrics.push(metric);
            }
            Err(e) => table.warnings.push(format!("{name}: skipped: {e}")),
        }
    }
    repair_orphans(&mut table);
    Ok(table)
}

fn aliases(m: &Value, key: &str, value: &str) -> Vec<(String, String)> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| (text(e, "Alias").to_string(), text(e, value).to_string()))
                .filter(|(a, n)| !a.is_empty() && !n.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn intel_metric(
    m: &Value,
    name: &str,
    legacy: &HashMap<String, String>,
) -> Result<(Metric, Vec<String>), String> {
    let mut notes = Vec::new();
    let mut formula =
        Formula::parse(text(m, "Formula"), Dialect::Intel).map_err(|e| e.to_string())?;
    let events = aliases(m, "Events", "Name");
    let constants = aliases(m, "Constants", "Name");
    substitute(formula.root_mut(), &mut |n: &str| -> Option<ExprKind> {
        if let Some((_, ev)) = events.iter().find(|(a, _)| a == n) {
            return Some(ExprKind::Ref(crate::formula::Ref::new(
                ev.clone(),
                RefHint::Event,
            )));
        }
        if let Some((_, c)) = constants.iter().find(|(a, _)| a == n) {
            return Some(intel_constant(c));
        }
        Constant::from_intel_name(n).map(ExprKind::Constant)
    });
    for r in formula.references() {
        if r.hint == RefHint::Any {
            notes.push(format!(
                "'{}' is bound by neither Events nor Constants",
                r.name
            ));
        }
    }
    let threshold = match m.get("Threshold") {
        Some(t) if !text(t, "Formula").is_empty() => {
            let mut f = Formula::parse(text(t, "Formula"), Dialect::Intel)
                .map_err(|e| format!("threshold: {e}"))?;
            let refs = aliases(t, "ThresholdMetrics", "Value");
            substitute(f.root_mut(), &mut |n: &str| {
                let target = refs
                    .iter()
                    .find(|(a, _)| a == n)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or(n);
                let metric = legacy
                    .get(target)
                    .cloned()
                    .or_else(|| refs.iter().any(|(a, _)| a == n).then(|| target.to_string()));
                metric.map(|mn| ExprKind::Ref(crate::formula::Ref::new(mn, RefHint::Metric)))
            });
            let issues = split_groups(&text(t, "ThresholdIssues").replace(',', ";"));
            Some(Threshold {
                formula: f,
                issues,
                supplied_by: None,
            })
        }
        _ => None,
    };
    let (unit, scale) = intel_unit(text(m, "UnitOfMeasure"));
    let category = Some(text(m, "Category").to_string()).filter(|c| !c.is_empty());
    let mut metric = Metric::from_formula(name, formula, &unit, scale);
    metric.description = text(m, "BriefDescription").to_string();
    metric.threshold = threshold;
    metric.level = number(m, "Level");
    metric.parent = Some(text(m, "ParentCategory").to_string()).filter(|p| !p.is_empty());
    let mut groups = split_groups(text(m, "MetricGroup"));
    // perf's TopdownLn groups hold the tree's nodes only; Intel's TmaLn
    // also hold helpers such as Info_Thread_SLOTS.
    let tree_node = text(m, "Category") == "TMA"
        && !name.starts_with("Info_")
        && !name.starts_with("Bottleneck_");
    for g in groups.clone() {
        if let Some(n) = g.strip_prefix("TmaL").filter(|_| tree_node) {
            add_group(&mut groups, &format!("TopdownL{n}"));
        }
    }
    if let Some(c) = &category {
        for part in c.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            add_group(&mut groups, part);
        }
    }
    metric.groups = groups;
    let leg = text(m, "LegacyName");
    if !leg.is_empty() {
        metric.aliases.push(leg.to_string());
    }
    if category.as_deref() == Some("TMA") {
        let perf_name = format!("tma_{}", name.to_ascii_lowercase());
        if !perf_name.eq_ignore_ascii_case(name) {
            metric.aliases.push(perf_name);
        }
    }
    metric.category = category;
    Ok((metric, notes))
}

/// The node an Intel `Constants` entry stands for: a known constant, a
/// number (`"Name": "20"`), or an unknown constant.
fn intel_constant(name: &str) -> ExprKind {
    if let Some(c) = Constant::from_intel_name(name) {
        return ExprKind::Constant(c);
    }
    if let Ok(n) = name.trim().parse::<f64>() {
        if n.is_finite() {
            return ExprKind::Number(n);
        }
    }
    ExprKind::Constant(Constant::Other(name.to_string()))
}

/// Replace every name for which `f` has a node.
fn substitute(root: &mut Expr, f: &mut dyn FnMut(&str) -> Option<ExprKind>) {
    root.walk_mut(&mut |e| {
        if let ExprKind::Ref(r) = &e.kind {
            if r.hint == RefHint::Any {
                if let Some(k) = f(&r.name) {
                    e.kind = k;
                }
            }
        }
    });
}

/// Give TMA metrics below level 1 without a parent the first metric one
/// level up that their threshold names.
fn repair_orphans(table: &mut MetricTable) {
    let levels: HashMap<String, Option<u32>> = table
        .metrics
        .iter()
        .map(|m| (m.name.clone(), m.level))
        .collect();
    for m in &mut table.metrics {
        let Some(level) = m.level.filter(|&l| l > 1) else {
            continue;
        };
        if m.parent.is_some() || m.category.as_deref() != Some("TMA") {
            continue;
        }
        let Some(t) = &m.threshold else { continue };
        let parent = t
            .formula
            .references()
            .into_iter()
            .map(|r| r.name.clone())
            .find(|n| *n != m.name && levels.get(n).copied().flatten() == Some(level - 1));
        if let Some(p) = parent {
            table.warnings.push(format!(
                "{}: no ParentCategory; parent taken from its threshold: {p}",
                m.name
            ));
            m.parent = Some(p);
        }
    }
}

/// Parse a metric table in perf's format.
pub fn parse_perf_format(bytes: &[u8], origin: &str) -> Result<MetricTable, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc
        .as_array()
        .ok_or_else(|| "not an array of metrics (not perf's metric format)".to_string())?;
    let mut table = MetricTable::new(MetricSource {
        kind: SourceKind::PerfFormat,
        origin: origin.to_string(),
        version: None,
        pmu: None,
    });
    let names: Vec<String> = list
        .iter()
        .map(|m| text(m, "MetricName").to_string())
        .collect();
    for (i, m) in list.iter().enumerate() {
        let name = text(m, "MetricName");
        if name.is_empty() {
            // Event entries in a mixed file are not metrics.
            if m.get("MetricExpr").is_some() {
                table.warnings.push(format!("entry {i}: no MetricName"));
            }
            continue;
        }
        let formula = match Formula::parse(text(m, "MetricExpr"), Dialect::Perf) {
            Ok(f) => f,
            Err(e) => {
                table.warnings.push(format!("{name}: skipped: {e}"));
                continue;
            }
        };
        let threshold = match text(m, "MetricThreshold") {
            "" => None,
            t => match Formula::parse(t, Dialect::Perf) {
                Ok(f) => Some(Threshold {
                    formula: f,
                    issues: Vec::new(),
                    supplied_by: None,
                }),
                Err(e) => {
                    table
                        .warnings
                        .push(format!("{name}: threshold ignored: {e}"));
                    None
                }
            },
        };
        let (scale, unit) = match m.get("ScaleUnit").and_then(Value::as_str) {
            Some(su) => parse_scale_unit(su),
            None => (1.0, String::new()),
        };
        let mut metric = Metric::from_formula(name, formula, &unit, scale);
        metric.threshold = threshold;
        metric.description = text(m, "BriefDescription").to_string();
        let mut groups = split_groups(text(m, "MetricGroup"));
        let mut pipeline = None;
        for g in &groups {
            let lvl = g.strip_prefix("TopdownL").or_else(|| {
                g.strip_prefix("tma_L")
                    .and_then(|r| r.strip_suffix("_group"))
            });
            if let Some(n) = lvl.and_then(|n| n.parse::<u32>().ok()) {
                metric.level = Some(n);
            }
            // AMD's pipeline-utilization tree: `PipelineLn`, and the parent
            // in `<parent>_group` (no `tma_` prefix).
            if let Some(n) = g.strip_prefix("PipelineL").and_then(|n| n.parse().ok()) {
                metric.level = Some(n);
                pipeline = Some(n);
            }
            if let Some(p) = g.strip_suffix("_group") {
                let tree_group =
                    p.starts_with("tma_") || groups.iter().any(|g| g.starts_with("PipelineL"));
                if p != name && tree_group && names.iter().any(|n| n == p) {
                    metric.parent = Some(p.to_string());
                }
            }
        }
        // `-M TopdownLn` selects AMD's pipeline levels too.
        if let Some(n) = pipeline {
            add_group(&mut groups, &format!("TopdownL{n}"));
        }
        metric.groups = groups;
        if (name.starts_with("tma_") || pipeline.is_some())
            && (metric.level.is_some() || metric.parent.is_some())
        {
            metric.category = Some("TMA".into());
        }
        let pmu = text(m, "Unit");
        if !pmu.is_empty() {
            table.source.pmu.get_or_insert_with(|| pmu.to_string());
        }
        table.metrics.push(metric);
    }
    Ok(table)
}

/// Parse one of Intel's `retire latency` files: event → mean cycles.
pub fn parse_retire_latency(bytes: &[u8]) -> Result<Vec<(String, f64)>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let data = doc
        .get("Data")
        .and_then(Value::as_object)
        .ok_or_else(|| "no \"Data\" object".to_string())?;
    let mut out: Vec<(String, f64)> = data
        .iter()
        .filter_map(|(k, v)| {
            v.get("MEAN")
                .and_then(Value::as_f64)
                .map(|m| (k.clone(), m))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Parse a metric file, telling the format from its shape (an object with
/// `Metrics` is Intel's, an array is perf's).
pub fn parse_metric_file(bytes: &[u8], origin: &str) -> Result<MetricTable, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'[') => parse_perf_format(bytes, origin),
        _ => parse_intel_format(bytes, origin),
    }
}

/// The hybrid core PMU a mapfile row is for (`Core` → `cpu_core`).
fn row_pmu(core_role: &str, core_type: &str) -> Option<String> {
    for t in [core_role.trim(), core_type.trim()] {
        match t.to_ascii_lowercase().as_str() {
            "core" | "0x40" => return Some("cpu_core".into()),
            "atom" | "0x20" => return Some("cpu_atom".into()),
            "lowpower_atom" => return Some("cpu_lowpower".into()),
            _ => {}
        }
    }
    None
}

/// The perf-format sibling of an Intel-format file:
/// `X/metrics/foo_metrics.json` → `X/metrics/perf/foo_metrics_perf.json`.
pub fn perf_sibling(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    Some(
        path.parent()?
            .join("perf")
            .join(format!("{stem}_perf.json")),
    )
}

/// Intel's metric tables for `cpu` from the events directory `dir` (the one
/// with `mapfile.csv`): each Intel-format table, followed by its perf-format
/// sibling when present. Default retire latencies ride on the first table.
/// A CPU with no metric rows gives an empty list; a missing or malformed
/// file is an error.
pub fn load_intel_tables(dir: &Path, cpu: &CpuId) -> Result<Vec<MetricTable>, LoadError> {
    load_intel_tables_from(&DirFiles(dir), &Mapfile::read(dir)?, cpu)
}

/// Intel's metric tables built into pmx ([`pmx_events::tables::intel`])
/// for `cpu`: [`load_intel_tables`]'s rules; each table's origin says
/// `(built in)`.
pub fn load_builtin_intel_tables(cpu: &CpuId) -> Result<Vec<MetricTable>, LoadError> {
    let bundle = pmx_events::tables::intel().map_err(|e| LoadError::Format {
        path: PathBuf::from("built-in tables"),
        message: e.to_string(),
    })?;
    let mut tables = load_intel_tables_from(bundle, &Mapfile::of_bundle(bundle)?, cpu)?;
    for t in &mut tables {
        t.source.origin = format!("{} (built in)", t.source.origin);
    }
    Ok(tables)
}

/// [`load_intel_tables`] over the files `map` names in `files` (a
/// directory or a built-in bundle).
pub fn load_intel_tables_from(
    files: &dyn TableFiles,
    map: &Mapfile,
    cpu: &CpuId,
) -> Result<Vec<MetricTable>, LoadError> {
    let rows = map.select(cpu);
    let mut tables = Vec::new();
    let mut latencies = Vec::new();
    for row in &rows {
        let rel = row.relative_path().to_string();
        let bad = |message: String| LoadError::Format {
            path: files.display_path(&rel),
            message,
        };
        if row.role() == FileRole::Metrics {
            let bytes = files.read(&rel)?;
            let mut t = parse_intel_format(&bytes, &rel).map_err(bad)?;
            t.source.version = Some(row.version.clone()).filter(|v| !v.is_empty());
            t.source.pmu = row_pmu(&row.core_role, &row.core_type);
            let pmu = t.source.pmu.clone();
            tables.push(t);
            let sibling = perf_sibling(Path::new(&rel))
                .map(|p| p.to_string_lossy().into_owned())
                .filter(|p| files.exists(p));
            if let Some(rel_sib) = sibling {
                let bytes = files.read(&rel_sib)?;
                let mut p =
                    parse_perf_format(&bytes, &rel_sib).map_err(|message| LoadError::Format {
                        path: files.display_path(&rel_sib),
                        message,
                    })?;
                if p.source.pmu.is_none() {
                    p.source.pmu = pmu;
                }
                tables.push(p);
            }
        } else if row.event_type.trim().eq_ignore_ascii_case("retire latency") {
            let bytes = files.read(&rel)?;
            latencies.extend(parse_retire_latency(&bytes).map_err(bad)?);
        }
    }
    if let Some(first) = tables.first_mut() {
        first.retire_latency = latencies;
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_units() {
        assert_eq!(parse_scale_unit("100%"), (100.0, "%".into()));
        assert_eq!(parse_scale_unit("1GHz"), (1.0, "GHz".into()));
        assert_eq!(parse_scale_unit("1per_instr"), (1.0, "per_instr".into()));
        assert_eq!(parse_scale_unit("1e9ns"), (1e9, "ns".into()));
        assert_eq!(parse_scale_unit("1e-3s"), (1e-3, "s".into()));
        assert_eq!(parse_scale_unit("MB/s"), (1.0, "MB/s".into()));
    }

    #[test]
    fn intel_format_binds_aliases_and_legacy_names() {
        let json = br#"{"Header": {"Version": "1.0"}, "Metrics": [
          {"MetricName": "Frontend_Bound", "LegacyName": "metric_TMA_Frontend_Bound(%)", "Level": 1,
           "BriefDescription": "fe", "UnitOfMeasure": "percent",
           "Events": [{"Name": "IDQ_UOPS_NOT_DELIVERED.CORE", "Alias": "a"},
                      {"Name": "CPU_CLK_UNHALTED.THREAD_ANY", "Alias": "b"},
                      {"Name": "CPU_CLK_UNHALTED.THREAD", "Alias": "c"}],
           "Constants": [{"Name": "HYPERTHREADING_ON", "Alias": "smt_on"}],
           "Formula": "100 * ( a / ( ( 4 ) * ( ( b / 2 ) if smt_on else ( c ) ) ) )",
           "Category": "TMA", "MetricGroup": "TmaL1;PGO",
           "Threshold": {"ThresholdMetrics": [{"Alias": "a", "Value": "metric_TMA_Frontend_Bound(%)"}],
                         "Formula": "a > 15", "ThresholdIssues": ""}},
          {"MetricName": "Fetch_Latency", "LegacyName": "metric_TMA_..Fetch_Latency(%)", "Level": 2,
           "ParentCategory": "Frontend_Bound", "UnitOfMeasure": "percent",
           "Events": [{"Name": "X.Y", "Alias": "a"}], "Constants": [{"Name": "20", "Alias": "w"}],
           "Formula": "a * w", "Category": "TMA",
           "Threshold": {"Formula": "metric_TMA_..Fetch_Latency(%) > 10 & metric_TMA_Frontend_Bound(%) > 15"}},
          {"MetricName": "Orphan", "LegacyName": "metric_TMA_....Orphan(%)", "Level": 3,
           "UnitOfMeasure": "percent", "Events": [], "Constants": [], "Formula": "1", "Category": "TMA",
           "Threshold": {"ThresholdMetrics": [{"Alias": "a", "Value": "metric_TMA_....Orphan(%)"},
                                              {"Alias": "b", "Value": "metric_TMA_..Fetch_Latency(%)"}],
                         "Formula": "( a > 1 ) & ( b > 2 )"}},
          {"MetricName": "Broken", "Formula": "a +", "Events": []}
        ]}"#;
        let t = parse_intel_format(json, "X/metrics/x_metrics.json").unwrap();
        assert_eq!(t.metrics.len(), 3);
        let fe = &t.metrics[0];
        assert_eq!(
            fe.formula.to_string(),
            "100 * (IDQ_UOPS_NOT_DELIVERED.CORE / (4 * (CPU_CLK_UNHALTED.THREAD_ANY / 2 if #smt_on else CPU_CLK_UNHALTED.THREAD)))"
        );
        assert_eq!(fe.unit, "%");
        assert!(fe.answers_to("tma_frontend_bound"));
        assert!(fe.answers_to("metric_TMA_Frontend_Bound(%)"));
        assert!(fe.in_group("TopdownL1"));
        assert_eq!(
            fe.threshold.as_ref().unwrap().formula.to_string(),
            "Frontend_Bound > 15"
        );
        let fl = &t.metrics[1];
        assert_eq!(fl.formula.to_string(), "X.Y * 20");
        assert_eq!(fl.parent.as_deref(), Some("Frontend_Bound"));
        assert_eq!(
            fl.threshold.as_ref().unwrap().formula.to_string(),
            "Fetch_Latency > 10 and Frontend_Bound > 15"
        );
        assert_eq!(t.metrics[2].parent.as_deref(), Some("Fetch_Latency"));
        assert!(t.warnings.iter().any(|w| w.contains("Broken: skipped")));
        assert!(t
            .warnings
            .iter()
            .any(|w| w.contains("Orphan: no ParentCategory")));
    }

    #[test]
    fn perf_format_tree_from_groups() {
        let json = br#"[
          {"MetricName": "tma_frontend_bound", "MetricExpr": "topdown\\-fe\\-bound / (topdown\\-fe\\-bound + topdown\\-retiring)",
           "MetricGroup": "PGO;TmaL1;TopdownL1;tma_L1_group", "MetricThreshold": "tma_frontend_bound > 0.15", "ScaleUnit": "100%"},
          {"MetricName": "tma_fetch_latency", "MetricExpr": "tma_frontend_bound / 2",
           "MetricGroup": "Frontend;TmaL2;TopdownL2;tma_L2_group;tma_frontend_bound_group",
           "MetricThreshold": "tma_fetch_latency > 0.1 & tma_frontend_bound > 0.15", "ScaleUnit": "100%", "Unit": "cpu_core"},
          {"EventName": "NOT_A_METRIC"}
        ]"#;
        let t = parse_perf_format(json, "p.json").unwrap();
        assert_eq!(t.metrics.len(), 2);
        assert_eq!(t.metrics[0].level, Some(1));
        assert_eq!(t.metrics[0].scale, 100.0);
        assert_eq!(t.metrics[1].parent.as_deref(), Some("tma_frontend_bound"));
        assert_eq!(t.metrics[1].level, Some(2));
        assert_eq!(t.source.pmu.as_deref(), Some("cpu_core"));
        assert!(parse_perf_format(b"{}", "x").is_err());
        assert!(parse_intel_format(b"[]", "x").is_err());
        assert!(parse_metric_file(b"  [] ", "x").unwrap().metrics.is_empty());
    }

    #[test]
    fn perf_siblings() {
        assert_eq!(
            perf_sibling(Path::new("/d/SKX/metrics/skylakex_metrics.json")).unwrap(),
            PathBuf::from("/d/SKX/metrics/perf/skylakex_metrics_perf.json")
        );
    }
}
