//! `pmx events fetch`: download the event tables for a CPU (Intel's perfmon
//! tables for Intel, Linux perf's x86 tables for AMD).
//!
//! The work is [`pmx::events_fetch`]; this module turns the flags into its
//! options, draws progress on stderr ([`pmx_output::fetch::ProgressBar`]),
//! turns Ctrl-C into a clean stop ([`pmx::console::InterruptGuard`]), and
//! prints what was fetched and how to use it
//! ([`pmx_output::fetch::summary_text`]).

use crate::exit::UsageError;
use pmx::console::{self, InterruptGuard};
use pmx::events_fetch::{EventsFetchError, EventsFetchOptions, Tables};
use pmx_output::fetch::ProgressBar;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Arguments of `pmx events fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// CPU key, as perf prints it: vendor-family-model[-stepping], family in
    /// decimal, model and stepping in hex (GenuineIntel-6-55-4). Default:
    /// this CPU.
    #[arg(long = "cpu", value_name = "ID", conflicts_with = "all")]
    pub cpu: Option<String>,
    /// Which tables: intel (Intel's perfmon repository) or perf (Linux
    /// perf's tools/perf/pmu-events/arch/x86: AMD Zen). Default: the ones
    /// pmx reads for the CPU's vendor.
    #[arg(long, value_name = "intel|perf", value_parser = pmx::events_fetch::parse_tables)]
    pub tables: Option<Tables>,
    /// Base URL of the tables: Intel's perfmon repository (default
    /// https://raw.githubusercontent.com/intel/perfmon/main/) or perf's x86
    /// directory (default: its plain/ view on git.kernel.org; a
    /// raw.githubusercontent.com mirror works too); a local copy (a
    /// directory or file:// URL) as well.
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// Fetch every CPU's tables (Intel's: every file mapfile.csv lists;
    /// perf's: every AMD directory), not one CPU's.
    #[arg(long)]
    pub all: bool,
    /// Where to put the tables. Default: $PMX_EVENTS_DIR, then
    /// $XDG_CACHE_HOME/pmx/events or ~/.cache/pmx/events (where pmx looks
    /// for them by default).
    #[arg(long, value_name = "DIR")]
    pub events_dir: Option<PathBuf>,
}

/// Exit code after Ctrl-C (128 + SIGINT), as shells report it.
const INTERRUPTED: i32 = 130;

/// Run `pmx events fetch`.
pub fn run(args: &FetchArgs) -> anyhow::Result<i32> {
    let opts = EventsFetchOptions {
        cpu: args.cpu.clone(),
        all: args.all,
        tables: args.tables,
        from: args.from.clone(),
        events_dir: args.events_dir.clone(),
        cancel: Some(&console::INTERRUPTED),
    };
    let mut progress = ProgressBar::new(std::io::stderr().is_terminal(), || {
        console::columns(std::env::var("COLUMNS").ok().as_deref())
    });
    let guard = InterruptGuard::install();
    let result = pmx::events_fetch::events_fetch(&opts, &mut progress);
    drop(guard);
    match result {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            out.write_all(pmx_output::fetch::summary_text(&report).as_bytes())?;
            Ok(crate::exit::OK)
        }
        Err(e @ EventsFetchError::Interrupted { .. }) => {
            eprintln!("pmx: {e}");
            Ok(INTERRUPTED)
        }
        Err(EventsFetchError::Fetch(e)) => Err(e.into()),
        Err(e) => Err(UsageError(e.to_string()).into()),
    }
}
