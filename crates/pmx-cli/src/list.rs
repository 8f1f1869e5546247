//! `pmx list`: the events pmx knows for a CPU, grouped by source and PMU
//! ([`pmx::catalog::list`], rendered by [`pmx_output::catalog`]).

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::catalog::{ListOptions, SourceKind};
use std::io::Write;

/// Arguments of `pmx list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Show only names containing this text (case-insensitive; '*' and '?'
    /// are wildcards; '.' and ':' are the same).
    pub pattern: Option<String>,
    /// Only this source: kernel, sysfs, intel-json, perf-json, builtin, builtin-amd, libpfm, arch.
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// One JSON object per event, one per line.
    #[arg(long)]
    pub json: bool,
    /// Include deprecated events.
    #[arg(long)]
    pub deprecated: bool,
    /// Names only, space-separated, as `perf list --raw-dump [KIND]`
    /// prints them: pmu, metrics, metricgroups (default: every event).
    #[arg(long = "raw-dump", value_name = "KIND", num_args = 0..=1, default_missing_value = "events")]
    pub raw_dump: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: &ListArgs) -> anyhow::Result<i32> {
    if let Some(kind) = &args.raw_dump {
        let dir = pmx::events_dirs::from_env().resolve(args.db.events_dirs.first().cloned());
        let names =
            pmx::catalog::raw_dump(kind, &args.db.load()?, dir.as_deref()).ok_or_else(|| {
                UsageError(format!("--raw-dump {kind}: pmu, metrics or metricgroups"))
            })?;
        println!("{} ", names.join(" "));
        return Ok(crate::exit::OK);
    }
    let source = match &args.source {
        Some(s) => Some(SourceKind::from_cli_name(s).ok_or_else(|| {
            UsageError(format!(
                "unknown source '{s}' (kernel, sysfs, intel-json, perf-json, builtin, builtin-amd, libpfm, arch)"
            ))
        })?),
        None => None,
    };
    let opts = ListOptions {
        pattern: args.pattern.clone(),
        source,
        deprecated: args.deprecated,
        database: args.db.options(),
    };
    let listing = pmx::catalog::list(&opts).map_err(|e| UsageError(e.to_string()))?;
    let text = if args.json {
        pmx_output::catalog::list_json(&listing)
    } else {
        pmx_output::catalog::list_text(&listing)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    drop(out);
    for (kind, why) in &listing.unavailable {
        eprintln!("pmx list: {} not loaded: {why}", kind.cli_name());
    }
    if !args.json {
        eprintln!("{} events", listing.shown());
    }
    Ok(crate::exit::OK)
}
