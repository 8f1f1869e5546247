//! `pmx tma [-l N] [--no-multiplex] -- CMD`: count the inputs of the
//! top-down tree for a command and print the tree ([`pmx::tma::run`],
//! rendered by [`pmx_output::tma`]); and the tree rendering
//! `pmx analyze --tma` shares.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::tma::{TmaError, TmaOptions};

/// Arguments of `pmx tma`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when counting failed."
)]
pub struct TmaArgs {
    /// Down to this level of the tree.
    #[arg(short = 'l', long = "level", value_name = "N", default_value_t = 1)]
    pub level: u32,
    /// Never multiplex: run the command once per counter set that fits and
    /// merge the results.
    #[arg(long = "no-multiplex")]
    pub no_multiplex: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD", required = true)]
    pub command: Vec<String>,
}

pub fn run(args: &TmaArgs) -> anyhow::Result<i32> {
    let opts = TmaOptions {
        level: args.level,
        no_multiplex: args.no_multiplex,
        command: args.command.clone(),
        database: args.db.options(),
    };
    let report = match pmx::tma::run(&opts) {
        Ok(r) => r,
        Err(TmaError::Exec { cmd, reason }) => {
            eprintln!("pmx tma: cannot run '{cmd}': {reason}");
            return Ok(127);
        }
        Err(TmaError::Io(e)) => return Err(e.into()),
        Err(e) => return Err(UsageError(e.to_string()).into()),
    };
    if args.json {
        println!("{}", pmx_output::tma::json(&report));
    } else {
        eprint!("{}", pmx_output::tma::text(&report));
    }
    Ok(report.exit_code)
}
