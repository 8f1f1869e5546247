//! `pmx check [--json] [--backend perf|msr] [-e ROWS] [-M METRICS]`:
//! kernels with known answers counted, each row checked
//! ([`pmx::check::run`], rendered by [`pmx::check::render`]). The hidden
//! `--run-kernel NAME ARGS…` is the kernel's process check starts.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::check::{CheckError, CheckOptions};
use pmx_args::check_flags as words;

/// Arguments of `pmx check`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when every row that could run passed; 1 when a row failed; 2 for bad input. docs/check.md explains each row, each reason and the --json schema."
)]
pub struct CheckArgs {
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    /// Counter backend: perf (perf_event_open) or msr (/dev/cpu/N/msr).
    #[arg(long, value_name = "NAME", default_value = "perf")]
    pub backend: String,
    /// Check only these rows (row names or events, comma-separated).
    #[arg(short = 'e', long = "event", value_name = "LIST")]
    pub events: Vec<String>,
    /// Check only the rows of these metrics (FLOPs, MEM).
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
    #[arg(long = "run-kernel", hide = true, num_args = 1..)]
    pub run_kernel: Option<Vec<String>>,
    /// Test hook: ROW=N runs ROW's kernel N units larger than expected.
    #[arg(long = "skew", hide = true, value_name = "ROW=N")]
    pub skew: Option<String>,
}

pub fn run(args: &CheckArgs) -> anyhow::Result<i32> {
    if let Some(k) = &args.run_kernel {
        let done = pmx::kernels::runner::run(k).map(|()| 0);
        return done.map_err(|e| anyhow::anyhow!("kernel {}: {e}", k.join(" ")));
    }
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let opts = CheckOptions {
        runner: vec![exe, "check".into(), "--run-kernel".into()],
        backend: words::backend(&args.backend).map_err(UsageError)?,
        events: args.events.clone(),
        metrics: args.metrics.clone(),
        database: args.db.options(),
        root: "/".into(),
        skew: args
            .skew
            .as_deref()
            .map(words::skew)
            .transpose()
            .map_err(UsageError)?,
    };
    let report = pmx::check::run(&opts).map_err(|e| match e {
        CheckError::NoRows(m) => anyhow::Error::from(UsageError(m)),
        e => anyhow::Error::from(e),
    })?;
    match args.json {
        true => println!("{}", pmx::check::render::json(&report)),
        false => print!("{}", pmx::check::render::text(&report)),
    }
    Ok(report.exit_code())
}
