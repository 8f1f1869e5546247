//! `pmx list`: the events pmx knows for a CPU, grouped by source and PMU.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx_events::{EventDef, SourceKind};
use serde_json::json;
use std::io::Write;

/// Arguments of `pmx list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Show only names containing this text (case-insensitive; '*' and '?'
    /// are wildcards; '.' and ':' are the same).
    pub pattern: Option<String>,
    /// Only this source: kernel, sysfs, intel-json, libpfm, arch.
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// One JSON object per event, one per line.
    #[arg(long)]
    pub json: bool,
    /// Include deprecated events.
    #[arg(long)]
    pub deprecated: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Does `name` match the user's pattern?
pub fn matches(pattern: &str, name: &str) -> bool {
    let p = pmx_events::name_key(pattern);
    let n = pmx_events::name_key(name);
    if !p.contains('*') && !p.contains('?') {
        return n.contains(&p);
    }
    glob(p.as_bytes(), n.as_bytes())
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard match with backtracking on the last '*'.
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

pub fn run(args: &ListArgs) -> anyhow::Result<i32> {
    let only = match &args.source {
        Some(s) => Some(SourceKind::from_cli_name(s).ok_or_else(|| {
            UsageError(format!(
                "unknown source '{s}' (kernel, sysfs, intel-json, libpfm, arch)"
            ))
        })?),
        None => None,
    };
    let db = args.db.load()?;
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    if !args.json {
        writeln!(
            out,
            "events for {}{}",
            db.target.cpu,
            if db.target.host {
                " (this machine)"
            } else {
                ""
            }
        )?;
    }
    let mut shown = 0usize;
    for src in db.sources() {
        if only.is_some_and(|k| k != src.kind()) {
            continue;
        }
        let mut events: Vec<EventDef> = src
            .events()
            .into_iter()
            .filter(|e| args.deprecated || !e.deprecated)
            .filter(|e| args.pattern.as_deref().is_none_or(|p| matches(p, &e.name)))
            .collect();
        if events.is_empty() {
            continue;
        }
        events.sort_by(|a, b| a.pmu.cmp(&b.pmu).then_with(|| a.name.cmp(&b.name)));
        if args.json {
            for e in &events {
                let line = json!({
                    "name": e.name,
                    "pmu": e.pmu,
                    "source": e.source,
                    "type": e.perf_type,
                    "config": format!("{:#x}", e.config),
                    "config1": format!("{:#x}", e.config1),
                    "description": e.description,
                    "deprecated": e.deprecated,
                });
                writeln!(out, "{line}")?;
            }
        } else {
            writeln!(out, "\n{} — {}", src.kind().cli_name(), src.describe())?;
            let width = events
                .iter()
                .map(|e| e.name.len())
                .max()
                .unwrap_or(10)
                .min(48);
            let mut pmu = "";
            for e in &events {
                if e.pmu != pmu {
                    writeln!(out, "  [{}]", e.pmu)?;
                    pmu = &e.pmu;
                }
                let desc = e.description.lines().next().unwrap_or("");
                let desc: String = desc.chars().take(100).collect();
                let dep = if e.deprecated { " (deprecated)" } else { "" };
                writeln!(out, "    {:<width$}  {desc}{dep}", e.name)?;
            }
        }
        shown += events.len();
    }
    out.flush()?;
    drop(out);
    for (kind, why) in &db.unavailable {
        if only.is_none_or(|k| k == *kind) {
            eprintln!("pmx list: {} not loaded: {why}", kind.cli_name());
        }
    }
    if !args.json {
        eprintln!("{shown} events");
    }
    Ok(crate::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns() {
        assert!(matches("lat_cache", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("longest_lat_cache:miss", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("L*MISS", "LONGEST_LAT_CACHE.MISS"));
        assert!(!matches("L*REF", "LONGEST_LAT_CACHE.MISS"));
        assert!(matches("?ycles", "cycles"));
    }
}
