//! The event-database flags every resolving command shares (`--cpu`,
//! `--events-dir`) and loading the database from them ([`pmx::database`]).

use crate::exit::UsageError;
use pmx::database::{self, Database, DatabaseOptions, Target};
use std::path::PathBuf;

/// Flags that choose the CPU and the event tables.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DbArgs {
    /// CPU to resolve for, as perf prints it: vendor-family-model[-stepping],
    /// family in decimal, model and stepping in hex (GenuineIntel-6-55-4,
    /// AuthenticAMD-25-11-1). Default: this CPU.
    #[arg(long = "cpu", value_name = "ID")]
    pub cpu: Option<String>,
    /// Event tables: Intel's (mapfile.csv) and/or perf's (x86/mapfile.csv); repeatable.
    /// Default: $PMX_EVENTS_DIR, then $XDG_CACHE_HOME/pmx/events or ~/.cache/pmx/events.
    #[arg(long = "events-dir", value_name = "DIR")]
    pub events_dirs: Vec<PathBuf>,
    /// Do not load libpfm4.
    #[arg(long)]
    pub no_libpfm: bool,
    /// Root of sysfs (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysfs_root: Option<PathBuf>,
}

/// Every database error is a mistake in the flags (exit 2).
fn usage(e: database::DatabaseError) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

impl DbArgs {
    /// The library's options for these flags.
    pub fn options(&self) -> DatabaseOptions {
        DatabaseOptions {
            cpu: self.cpu.clone(),
            events_dir: self.events_dirs.first().cloned(),
            more_events_dirs: self.events_dirs.iter().skip(1).cloned().collect(),
            no_libpfm: self.no_libpfm,
            sysfs_root: self.sysfs_root.clone(),
            events_dir_default: pmx::events_dirs::from_env(),
        }
    }

    /// The target CPU: `--cpu` or this machine.
    pub fn target(&self) -> anyhow::Result<Target> {
        database::target(&self.options()).map_err(usage)
    }

    /// Plan `groups` ([`database::plan`]).
    pub fn plan(
        &self,
        groups: &[pmx::EventGroup],
        loaded: Option<&Database>,
    ) -> anyhow::Result<pmx::StatPlan> {
        database::plan(&self.options(), groups, loaded).map_err(usage)
    }

    /// Load the database for the target.
    pub fn load(&self) -> anyhow::Result<Database> {
        database::load(&self.options()).map_err(usage)
    }
}
