//! `pmx explain`: how an event resolves, and everything pmx knows of it
//! ([`pmx::catalog::explain`], rendered by [`pmx_output::catalog`]).

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::catalog::ExplainOptions;
use pmx_output::catalog::{explanation_json, explanation_text};
use std::io::Write;

/// Arguments of `pmx explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// One JSON object per event, one per line.
    #[arg(long)]
    pub json: bool,
    /// Events: names (LONGEST_LAT_CACHE.MISS:u), kernel names (cycles),
    /// pmu/alias/, or encodings (cpu/event=0x2e,umask=0x41/).
    #[arg(required = true, value_name = "EVENT")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: &ExplainArgs) -> anyhow::Result<i32> {
    let opts = ExplainOptions {
        events: args.events.clone(),
        database: args.db.options(),
    };
    let report = pmx::catalog::explain(&opts).map_err(|e| UsageError(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    for (i, entry) in report.entries.iter().enumerate() {
        match entry {
            Ok(x) if args.json => writeln!(out, "{}", explanation_json(&report.cpu, x))?,
            Ok(x) => {
                if i > 0 {
                    writeln!(out)?;
                }
                write!(out, "{}", explanation_text(&report.cpu, x))?;
            }
            Err(e) => {
                out.flush()?;
                eprintln!("pmx explain: {e}");
            }
        }
    }
    if report.failed() > 0 {
        return Err(UsageError(format!(
            "{} of {} events could not be resolved",
            report.failed(),
            args.events.len()
        ))
        .into());
    }
    Ok(crate::exit::OK)
}
