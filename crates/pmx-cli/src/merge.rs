//! `pmx merge`: combine `pmx stat --json` result files (one per rank or
//! host of a job) into one report: per event and metric the sum, min and
//! max (and who had them), mean and median, and the members that stand out.
//!
//! Members: with `--by rank` (default) each file is one member, named by
//! the rank it recorded (else its file name); with `--by host` the files of
//! one host are summed into one member first.
//!
//! Outliers, per event or metric with at least 3 members: a member stands
//! out when its robust z-score `|v − median| / (1.4826 × MAD)` is above
//! 3.5 (MAD: the median absolute deviation from the median; the rule of
//! Iglewicz and Hoaglin) *and* it differs from the median by more than
//! 10% — the second condition keeps a tight cluster (MAD near 0) from
//! flagging trivial differences. For plain counts (events without a unit)
//! the difference must also exceed the counting noise, `3·√(median + 1)`,
//! so one rank with 1 migration among ranks with none does not stand out
//! while one with 30 does.

use crate::exit::UsageError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Arguments of `pmx merge`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Outliers: robust z-score |v - median| / (1.4826 MAD) > 3.5 and more than 10% from the median (for counts also more than 3 sqrt(median + 1) away), among 3 or more members.\nExit status: 0 merged; 1 a file cannot be read; 2 a file is not a pmx stat --json report, or bad flags."
)]
pub struct MergeArgs {
    /// Result files written by `pmx stat --json` (e.g. with -o 'out-%h-%p-%r.json').
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// What a member is: each rank's file, or the sum of each host's files.
    #[arg(long, value_name = "KIND", default_value = "rank", value_parser = ["rank", "host"])]
    pub by: String,
    /// JSON output (one object).
    #[arg(long, conflicts_with = "separator")]
    pub json: bool,
    /// CSV with this separator: kind, name, domain, unit, n, sum, min,
    /// min_member, max, max_member, mean, median, outliers.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
}

/// One input file's report.
struct Member {
    name: String,
    host: Option<String>,
    rank: Option<u64>,
    files: Vec<String>,
    /// (kind, name, domain) → (value, unit).
    values: BTreeMap<(&'static str, String, String), (f64, String)>,
}

fn domain_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("kind").and_then(Value::as_str) {
            Some("cpu") => format!("CPU{}", o.get("cpu").and_then(Value::as_u64).unwrap_or(0)),
            Some("core") => format!(
                "S{}-C{}",
                o.get("package").and_then(Value::as_u64).unwrap_or(0),
                o.get("core").and_then(Value::as_u64).unwrap_or(0)
            ),
            Some("socket") => {
                format!("S{}", o.get("package").and_then(Value::as_u64).unwrap_or(0))
            }
            Some("thread") => format!("tid {}", o.get("tid").and_then(Value::as_i64).unwrap_or(0)),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// The totals report in a file: the whole file, or (for `-I --json`
/// files) its last line.
fn read_report(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let is_report = |v: &Value| v.get("events").is_some_and(Value::is_array);
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        if is_report(&v) {
            return Ok(v);
        }
    }
    if let Some(v) = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(is_report))
    {
        return Ok(v);
    }
    Err(UsageError(format!(
        "{}: not a pmx stat --json report (no \"events\" list)",
        path.display()
    ))
    .into())
}

fn member_of(path: &Path, v: &Value) -> Member {
    let file = path.display().to_string();
    let rank = v.get("rank").and_then(Value::as_u64);
    let host = v.get("host").and_then(Value::as_str).map(str::to_string);
    let mut values = BTreeMap::new();
    for e in v["events"].as_array().into_iter().flatten() {
        let (Some(name), Some(value)) = (
            e.get("event").and_then(Value::as_str),
            e.get("value").and_then(Value::as_f64),
        ) else {
            continue;
        };
        let unit = e
            .get("unit")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let domain = e.get("domain").map(domain_label).unwrap_or_default();
        values.insert(("event", name.to_string(), domain), (value, unit));
    }
    for m in v
        .get("metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(value)) = (
            m.get("name").and_then(Value::as_str),
            m.get("value").and_then(Value::as_f64),
        ) else {
            continue;
        };
        let unit = m
            .get("unit")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let domain = m.get("domain").map(domain_label).unwrap_or_default();
        values.insert(("metric", name.to_string(), domain), (value, unit));
    }
    let name = match rank {
        Some(r) => format!("rank {r}"),
        None => file.clone(),
    };
    Member {
        name,
        host,
        rank,
        files: vec![file],
        values,
    }
}

/// Statistics of one event or metric over the members.
#[derive(Debug, Clone, PartialEq)]
struct Stats {
    n: usize,
    sum: f64,
    min: (f64, usize),
    max: (f64, usize),
    mean: f64,
    median: f64,
    /// (member index, value, deviation from the median in %).
    outliers: Vec<(usize, f64, f64)>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Robust z-score threshold (Iglewicz and Hoaglin).
const Z_LIMIT: f64 = 3.5;
/// Smallest relative deviation from the median that can be an outlier.
const MIN_DEVIATION: f64 = 0.10;

/// Statistics of one event or metric over the members; `counts` says the
/// values are plain event counts (no unit), which adds the counting-noise
/// floor to the outlier rule.
fn stats(values: &[(usize, f64)], counts: bool) -> Option<Stats> {
    let (&first, _) = values.split_first()?;
    let n = values.len();
    let sum: f64 = values.iter().map(|(_, v)| v).sum();
    let mut min = (first.1, first.0);
    let mut max = (first.1, first.0);
    for &(i, v) in values {
        if v < min.0 {
            min = (v, i);
        }
        if v > max.0 {
            max = (v, i);
        }
    }
    let mut vs: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let med = median(&mut vs);
    let mut dev: Vec<f64> = values.iter().map(|(_, v)| (v - med).abs()).collect();
    let mad = median(&mut dev);
    let mut outliers = Vec::new();
    if n >= 3 {
        for &(i, v) in values {
            let d = (v - med).abs();
            let rel = if med != 0.0 {
                d / med.abs()
            } else if d > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            let z_ok = mad == 0.0 || d / (1.4826 * mad) > Z_LIMIT;
            let above_noise = !counts || d > 3.0 * (med.abs() + 1.0).sqrt();
            if d > 0.0 && z_ok && rel > MIN_DEVIATION && above_noise {
                let pct = if med != 0.0 {
                    (v - med) / med.abs() * 100.0
                } else {
                    f64::INFINITY
                };
                outliers.push((i, v, pct));
            }
        }
    }
    Some(Stats {
        n,
        sum,
        min,
        max,
        mean: sum / n as f64,
        median: med,
        outliers,
    })
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = if v.abs() >= 100.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.4}")
        };
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Run `pmx merge`.
pub fn run(args: &MergeArgs) -> anyhow::Result<i32> {
    if args.separator.as_deref() == Some("") {
        return Err(UsageError("-x: give a separator, such as ','".to_string()).into());
    }
    let mut members: Vec<Member> = Vec::new();
    for f in &args.files {
        let v = read_report(f)?;
        members.push(member_of(f, &v));
    }
    if args.by == "host" {
        let mut hosts: BTreeMap<String, Member> = BTreeMap::new();
        for m in members {
            let h = m.host.clone().ok_or_else(|| {
                UsageError(format!(
                    "--by host: {} records no host (written by an older pmx?)",
                    m.files[0]
                ))
            })?;
            let entry = hosts.entry(h.clone()).or_insert_with(|| Member {
                name: format!("host {h}"),
                host: Some(h.clone()),
                rank: None,
                files: Vec::new(),
                values: BTreeMap::new(),
            });
            entry.files.extend(m.files);
            for (k, (v, unit)) in m.values {
                entry.values.entry(k).or_insert((0.0, unit)).0 += v;
            }
        }
        members = hosts.into_values().collect();
    } else {
        let mut seen: BTreeMap<u64, String> = BTreeMap::new();
        for m in &members {
            if let Some(r) = m.rank {
                if let Some(other) = seen.insert(r, m.files[0].clone()) {
                    eprintln!(
                        "pmx merge: warning: rank {r} appears in {other} and {}",
                        m.files[0]
                    );
                }
            }
        }
        members.sort_by_key(|m| (m.rank.is_none(), m.rank, m.name.clone()));
    }
    // Every (kind, name, domain), in first-seen order per kind.
    let mut keys: Vec<(&'static str, String, String)> = Vec::new();
    for m in &members {
        for k in m.values.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort_by_key(|k| k.0 != "event");
    let mut results = Vec::new();
    for k in &keys {
        let vals: Vec<(usize, f64)> = members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.values.get(k).map(|(v, _)| (i, *v)))
            .collect();
        let unit = members
            .iter()
            .find_map(|m| m.values.get(k).map(|(_, u)| u.clone()))
            .unwrap_or_default();
        let counts = k.0 == "event" && unit.is_empty();
        if let Some(s) = stats(&vals, counts) {
            results.push((k, unit, s));
        }
    }
    let name = |i: usize| members[i].name.clone();
    let mut out = String::new();
    if args.json {
        let list = |kind: &str| -> Vec<Value> {
            results
                .iter()
                .filter(|(k, _, _)| k.0 == kind)
                .map(|(k, unit, s)| {
                    json!({
                        "name": k.1,
                        "domain": k.2,
                        "unit": unit,
                        "n": s.n,
                        "sum": s.sum,
                        "min": s.min.0,
                        "min_member": name(s.min.1),
                        "max": s.max.0,
                        "max_member": name(s.max.1),
                        "mean": s.mean,
                        "median": s.median,
                        "outliers": s.outliers.iter().map(|(i, v, pct)| json!({
                            "member": name(*i), "value": v, "deviation_pct": if pct.is_finite() { json!(pct) } else { Value::Null },
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect()
        };
        let doc = json!({
            "by": args.by,
            "members": members.iter().map(|m| json!({
                "name": m.name, "host": m.host, "rank": m.rank, "files": m.files,
            })).collect::<Vec<_>>(),
            "events": list("event"),
            "metrics": list("metric"),
        });
        out.push_str(&doc.to_string());
        out.push('\n');
    } else if let Some(sep) = &args.separator {
        let cols = [
            "kind",
            "name",
            "domain",
            "unit",
            "n",
            "sum",
            "min",
            "min_member",
            "max",
            "max_member",
            "mean",
            "median",
            "outliers",
        ];
        out.push_str(&cols.join(sep));
        out.push('\n');
        for (k, unit, s) in &results {
            let outl: Vec<String> = s.outliers.iter().map(|(i, _, _)| name(*i)).collect();
            let fields = [
                k.0.to_string(),
                k.1.clone(),
                k.2.clone(),
                unit.clone(),
                s.n.to_string(),
                s.sum.to_string(),
                s.min.0.to_string(),
                name(s.min.1),
                s.max.0.to_string(),
                name(s.max.1),
                s.mean.to_string(),
                s.median.to_string(),
                outl.join(" "),
            ];
            let quoted: Vec<String> = fields
                .iter()
                .map(|f| {
                    if f.contains(sep.as_str()) || f.contains('"') {
                        format!("\"{}\"", f.replace('"', "\"\""))
                    } else {
                        f.clone()
                    }
                })
                .collect();
            out.push_str(&quoted.join(sep));
            out.push('\n');
        }
    } else {
        out.push_str(&format!(
            "pmx merge: {} files, {} members (by {})\n\n",
            args.files.len(),
            members.len(),
            args.by
        ));
        let mut table: Vec<[String; 8]> = vec![[
            "name".into(),
            "domain".into(),
            "n".into(),
            "sum".into(),
            "min (member)".into(),
            "max (member)".into(),
            "mean".into(),
            "unit".into(),
        ]];
        for (k, unit, s) in &results {
            table.push([
                k.1.clone(),
                k.2.clone(),
                s.n.to_string(),
                num(s.sum),
                format!("{} ({})", num(s.min.0), name(s.min.1)),
                format!("{} ({})", num(s.max.0), name(s.max.1)),
                num(s.mean),
                unit.clone(),
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|c| {
                table
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in &table {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c == 0 || c == 1 || c == 7 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
                line.push_str("  ");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let flagged: Vec<_> = results
            .iter()
            .filter(|(_, _, s)| !s.outliers.is_empty())
            .collect();
        out.push('\n');
        if flagged.is_empty() {
            out.push_str("no member stands out (robust z > 3.5, > 10% from the median, and for counts beyond counting noise)\n");
        } else {
            out.push_str("stand out (robust z > 3.5, > 10% from the median, and for counts beyond counting noise):\n");
            for (k, unit, s) in flagged {
                for (i, v, pct) in &s.outliers {
                    let what = if k.2.is_empty() {
                        k.1.clone()
                    } else {
                        format!("{} {}", k.1, k.2)
                    };
                    out.push_str(&format!(
                        "  {what}: {} = {}{} (median {}, {})\n",
                        name(*i),
                        num(*v),
                        if unit.is_empty() {
                            String::new()
                        } else {
                            format!(" {unit}")
                        },
                        num(s.median),
                        if pct.is_finite() {
                            format!("{pct:+.0}%")
                        } else {
                            "median is 0".to_string()
                        }
                    ));
                }
            }
        }
        let short: Vec<String> = results
            .iter()
            .filter(|(_, _, s)| s.n < members.len())
            .map(|(k, _, s)| format!("{} ({} of {})", k.1, s.n, members.len()))
            .collect();
        if !short.is_empty() {
            out.push_str(&format!("not in every member: {}\n", short.join(", ")));
        }
    }
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    so.write_all(out.as_bytes())?;
    so.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robust_outliers() {
        let s = stats(&[(0, 1100.0), (1, 1105.0), (2, 10100.0), (3, 1098.0)], true).unwrap();
        assert_eq!(s.sum, 13403.0);
        assert_eq!(s.max, (10100.0, 2));
        assert_eq!(s.min, (1098.0, 3));
        assert_eq!(s.outliers.len(), 1);
        assert_eq!(s.outliers[0].0, 2);
        // A tight cluster: small differences are not outliers.
        let s = stats(&[(0, 100.0), (1, 100.0), (2, 103.0), (3, 100.0)], true).unwrap();
        assert!(s.outliers.is_empty());
        // Two members: nobody can stand out.
        let s = stats(&[(0, 1.0), (1, 100.0)], true).unwrap();
        assert!(s.outliers.is_empty());
        assert_eq!(s.median, 50.5);
        // Counting noise: 1 among zeros is not an outlier, 30 is; a value
        // with a unit (msec) has no such floor.
        let zeros = |x: f64| [(0, 0.0), (1, 0.0), (2, x), (3, 0.0)];
        assert!(stats(&zeros(1.0), true).unwrap().outliers.is_empty());
        assert_eq!(stats(&zeros(30.0), true).unwrap().outliers.len(), 1);
        assert_eq!(stats(&zeros(1.0), false).unwrap().outliers.len(), 1);
    }
}
