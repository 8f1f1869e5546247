//! Where a measurement happens, from `-p`, `-t`, `-C`, `-a` or a command:
//! shared by `pmx stat` and `pmx record`; and how long (`--duration`).
//! The parsing is `pmx_args::stat_flags`' ([`stat_flags::scope`]); here
//! its errors become usage errors (exit 2).

use crate::exit::UsageError;
use pmx::stat::Scope;
use pmx_args::stat_flags::{self, FlagError};

pub use pmx_args::stat_flags::TargetFlags;

/// `-a`, `-C`, `-p`, `-t`: where a sampling command (`record`, `top`)
/// samples.
#[derive(Debug, Clone, clap::Args)]
pub struct SampleTargets {
    /// Every task on every CPU.
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "tid"])]
    pub all_cpus: bool,
    /// Every task on these CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpus", value_name = "LIST", conflicts_with_all = ["pid", "tid"])]
    pub cpus: Option<String>,
    /// These running processes (every thread, new ones too), comma-separated.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID,…",
        conflicts_with = "tid"
    )]
    pub pid: Option<String>,
    /// These threads, comma-separated.
    #[arg(short = 't', long = "tid", value_name = "TID,…")]
    pub tid: Option<String>,
}

impl SampleTargets {
    /// The flags with `command`; with none given and `all_by_default`,
    /// every CPU.
    pub fn flags<'a>(&'a self, command: &'a [String], all_by_default: bool) -> TargetFlags<'a> {
        let any = self.pid.is_some() || self.tid.is_some() || self.cpus.is_some();
        TargetFlags {
            pid: self.pid.as_deref(),
            tid: self.tid.as_deref(),
            cpus: self.cpus.as_deref(),
            all_cpus: self.all_cpus || (all_by_default && !any),
            command,
        }
    }
}

/// Run as `perf`, `--cpu LIST` is perf's `-C/--cpu` (a CPU list), not
/// pmx's event-database CPU: the targets and database flags to use.
pub fn perf_cpu(t: &SampleTargets, db: &crate::db::DbArgs) -> (SampleTargets, crate::db::DbArgs) {
    let (mut t, mut db) = (t.clone(), db.clone());
    if pmx_args::perf_personality::as_perf(&std::env::args_os().collect::<Vec<_>>()) {
        t.cpus = db.cpu.take().or(t.cpus);
    }
    (t, db)
}

fn usage(e: FlagError) -> anyhow::Error {
    UsageError(e.0).into()
}

/// The scope, or a usage error naming what is missing or contradictory;
/// `verb` is what the command does ("count", "record").
pub fn scope(f: &TargetFlags, verb: &str) -> anyhow::Result<Scope> {
    stat_flags::scope(f, verb).map_err(usage)
}

/// `--duration SEC`: a positive, finite number of seconds.
pub fn duration(seconds: Option<f64>) -> anyhow::Result<Option<std::time::Duration>> {
    stat_flags::duration(seconds).map_err(usage)
}
