//! `pmx merge`: combine `pmx stat --json` result files (one per rank or
//! host of a job) into one report (`pmx::merge`, where the outlier rule
//! is documented), rendered by `pmx_output::merge`.

use crate::exit::UsageError;
use pmx::merge::{MemberKind, MergeError, MergeOptions};
use pmx_formats::ReadError;
use std::path::PathBuf;

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

/// A file that cannot be read fails (exit 1); one that is not a result
/// file, or has no host for `--by host`, is the user's mistake (exit 2).
fn merge_error(e: MergeError) -> anyhow::Error {
    match e {
        MergeError::Read(ReadError::Io { .. }) => anyhow::anyhow!("{e}"),
        e => UsageError(e.to_string()).into(),
    }
}

/// Run `pmx merge`.
pub fn run(args: &MergeArgs) -> anyhow::Result<i32> {
    if args.separator.as_deref() == Some("") {
        return Err(UsageError("-x: give a separator, such as ','".to_string()).into());
    }
    let opts = MergeOptions {
        files: args.files.clone(),
        by: if args.by == "host" {
            MemberKind::Host
        } else {
            MemberKind::Rank
        },
    };
    let report = pmx::merge::merge(&opts).map_err(merge_error)?;
    for w in &report.warnings {
        eprintln!("pmx merge: warning: {w}");
    }
    let out = if args.json {
        pmx_output::merge::json(&report)
    } else if let Some(sep) = &args.separator {
        pmx_output::merge::csv(&report, sep)
    } else {
        pmx_output::merge::text(&report)
    };
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    so.write_all(out.as_bytes())?;
    so.flush()?;
    Ok(0)
}
