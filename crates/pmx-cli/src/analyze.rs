//! `pmx analyze FILE`: metrics and the top-down tree from counts saved
//! earlier. The file is read by `pmx_formats` (pmx's stat CSV and JSON,
//! totals or intervals; perf's text table, `-x SEP` CSV and `-j` JSON),
//! the CPU chosen by `pmx::analyze::cpu` when `--cpu` is not given, the
//! analysis is `pmx::analyze`, the report is rendered by
//! `pmx_output::analyze`.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::analyze::AnalyzeOptions;
use pmx_formats::ReadError;
use std::path::PathBuf;

/// Arguments of `pmx analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// The counts: pmx stat CSV/JSON, or perf stat's text, -x CSV or -j JSON.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Metrics or metric groups to compute, comma-separated (default: every
    /// metric whose inputs are in the file).
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// Show the top-down tree.
    #[arg(long)]
    pub tma: bool,
    #[command(flatten)]
    pub tree: TreeArgs,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// How deep a top-down tree goes and how it was counted (`analyze --tma`,
/// `compare --tma`).
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// With --tma: down to this level.
    #[arg(
        short = 'l',
        long = "level",
        value_name = "N",
        default_value_t = 1,
        requires = "tma"
    )]
    pub level: u32,
    /// SMT was on where the counts were taken (default: off).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = ["on", "off"])]
    pub smt: String,
}

/// A file that cannot be read is the user's mistake (exit 2), except a
/// JSON document with a nameless entry, which is reported as a failure
/// (the error names the file).
fn read_error(e: ReadError) -> anyhow::Error {
    match e {
        ReadError::EntryWithoutEvent { .. } => anyhow::anyhow!("{e}"),
        e => UsageError(e.to_string()).into(),
    }
}

/// Run `pmx analyze`.
pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let counts = pmx_formats::read_file(&args.file).map_err(read_error)?;
    if let Some(cut) = counts.provenance.cut {
        eprintln!("pmx: warning: {} {cut}", args.file.display());
    }
    if args.tree.level == 0 {
        return Err(UsageError("-l 0: levels start at 1".to_string()).into());
    }
    let (db, note) = pmx::analyze::cpu::database(&counts, &args.db.options(), &args.file)
        .map_err(|e| UsageError(e.to_string()))?;
    let opts = AnalyzeOptions {
        counts: &counts,
        db: &db,
        metrics: args.metrics.as_deref(),
        tma_level: args.tma.then_some(args.tree.level),
        smt_on: args.tree.smt == "on",
    };
    let mut report = pmx::analyze::analyze(&opts).map_err(|e| UsageError(e.to_string()))?;
    report.cpu_note = note;
    if args.json {
        println!("{}", pmx_output::analyze::json(&report, &args.file));
    } else {
        print!("{}", pmx_output::analyze::text(&report, &args.file));
    }
    Ok(0)
}
