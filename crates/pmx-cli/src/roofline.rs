//! `pmx roofline [-o CHART.svg] [--json] [--threads N] -- CMD`: the
//! machine's ceilings measured by pmx's kernels and the command's point
//! ([`pmx::roofline::run`], rendered by [`pmx::roofline::render`]).

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::roofline::{RooflineError, RooflineOptions};

/// Arguments of `pmx roofline`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: the command's own; 2 for bad input; 1 when the chart cannot be written. docs/roofline.md explains the ceilings, the point and the --json schema."
)]
pub struct RooflineArgs {
    /// Write the chart here (SVG, or PNG for a .png name).
    #[arg(short = 'o', long = "output", value_name = "FILE.svg|png")]
    pub output: Option<std::path::PathBuf>,
    /// JSON output (ceilings and point) on standard output.
    #[arg(long)]
    pub json: bool,
    /// Threads for the all-core ceilings (default: every CPU this process may use).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub db: DbArgs,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD", required = true)]
    pub command: Vec<String>,
}

pub fn run(args: &RooflineArgs) -> anyhow::Result<i32> {
    if let Some(p) = &args.output {
        pmx_args::check_flags::chart_path(p).map_err(UsageError)?;
    }
    let opts = RooflineOptions {
        command: args.command.clone(),
        threads: args.threads,
        database: args.db.options(),
        root: "/".into(),
    };
    let report = pmx::roofline::run(&opts).map_err(|e| match e {
        RooflineError::Command(m) => anyhow::Error::from(UsageError(m)),
        e => anyhow::Error::from(e),
    })?;
    match args.json {
        true => println!("{}", pmx::roofline::render::json(&report)),
        false => eprint!("{}", pmx::roofline::render::text(&report)),
    }
    if let Some(path) = &args.output {
        let png = pmx_plot::roofline::write_png_of(&serde_json::json!(report), path);
        let written = png.unwrap_or_else(|| pmx::roofline::render::write_svg(&report, path));
        eprintln!("{}", written.map_err(anyhow::Error::msg)?);
    }
    Ok(report.exit_code)
}
