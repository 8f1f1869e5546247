//! The event-database flags every resolving command shares (`--cpu`,
//! `--events-dir`) and loading the database from them.

use crate::exit::UsageError;
use pmx_events::{Database, LoadOptions, Target};
use pmx_model::cpu::CpuId;
use std::path::PathBuf;

/// Flags that choose the CPU and the event tables.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// CPU to resolve for, as perf prints it: vendor-family-model[-stepping],
    /// family in decimal, model and stepping in hex (GenuineIntel-6-55-4,
    /// AuthenticAMD-25-11-1). Default: this CPU.
    #[arg(long = "cpu", value_name = "ID")]
    pub cpu: Option<String>,
    /// Directory of Intel's perfmon tables (with mapfile.csv). Default:
    /// $PMX_EVENTS_DIR, then $XDG_CACHE_HOME/pmx/events or ~/.cache/pmx/events.
    #[arg(long, value_name = "DIR")]
    pub events_dir: Option<PathBuf>,
    /// Do not load libpfm4.
    #[arg(long)]
    pub no_libpfm: bool,
    /// Root of sysfs (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub sysfs_root: Option<PathBuf>,
}

impl DbArgs {
    /// The target CPU: `--cpu` or this machine.
    pub fn target(&self) -> anyhow::Result<Target> {
        let host = crate::host_cpu_id();
        match &self.cpu {
            Some(text) => {
                let cpu: CpuId = text
                    .parse()
                    .map_err(|e| UsageError(format!("--cpu {text}: {e}")))?;
                let is_host = host.as_ref().is_some_and(|h| {
                    h.vendor == cpu.vendor
                        && h.family == cpu.family
                        && h.model == cpu.model
                        && cpu.stepping.is_none_or(|s| Some(s) == h.stepping)
                });
                Ok(Target { cpu, host: is_host })
            }
            None => match host {
                Some(cpu) => Ok(Target { cpu, host: true }),
                None => Err(UsageError(
                    "this machine has no CPUID: name the CPU with --cpu vendor-family-model"
                        .to_string(),
                )
                .into()),
            },
        }
    }

    /// Plan `groups`: with `loaded` when the full database is already
    /// there; otherwise with the cheap sources first (kernel events and
    /// sysfs), loading the full database only when a name needs it.
    pub fn plan(
        &self,
        groups: &[pmx::EventGroup],
        loaded: Option<&Database>,
    ) -> anyhow::Result<pmx::StatPlan> {
        if let Some(db) = loaded {
            return pmx::plan(groups, db).map_err(|e| UsageError(e.to_string()).into());
        }
        let target = self.target()?;
        if self.cpu.is_none() && self.events_dir.is_none() {
            let root = self
                .sysfs_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"));
            let light = Database::light(target, &root);
            if let Ok(p) = pmx::plan(groups, &light) {
                return Ok(p);
            }
        }
        let db = self.load()?;
        pmx::plan(groups, &db).map_err(|e| UsageError(e.to_string()).into())
    }

    /// Load the database for the target.
    pub fn load(&self) -> anyhow::Result<Database> {
        let target = self.target()?;
        let opts = LoadOptions {
            events_dir: self.events_dir.clone(),
            sysfs_root: self.sysfs_root.clone(),
            no_libpfm: self.no_libpfm,
        };
        if let Some(d) = &self.events_dir {
            if !d.is_dir() {
                return Err(
                    UsageError(format!("--events-dir {}: not a directory", d.display())).into(),
                );
            }
        }
        Ok(Database::load(target, &opts))
    }
}
