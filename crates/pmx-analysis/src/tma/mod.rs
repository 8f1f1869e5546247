//! Top-down analysis of a command (`pmx tma`): the tree's inputs are
//! counted while the command runs, then the tree is evaluated over them.
//!
//! [`run`] goes through small stages:
//!
//! 1. [`Model::for_database`]: the metric library and the top-down tree
//!    for the target CPU, and the machine facts its formulas use;
//! 2. [`plan_inputs`]: each input event planned on its own, so one that
//!    cannot be resolved does not stop the others (why is kept);
//! 3. [`count`]: the plan packed onto this CPU's counters (or split into
//!    one run per counter set with `no_multiplex`) and the command run
//!    under it, or without counters when nothing can be counted;
//! 4. [`InputPlan::readings`]: the totals as the evaluator's readings;
//! 5. [`Model::evaluate`]: the tree down to the level asked for.
//!
//! The evaluated tree ([`Tree`]) is the same value `pmx analyze --tma`
//! produces from saved counts; renderers live in `pmx-output`.

mod count;
mod inputs;

pub use count::{count, Counted};
pub use inputs::{plan_inputs, InputPlan};
pub use pmx_metrics::{
    EventRef, Flag, Inputs, Library, Machine, Reading, Reason, TmaReport as Tree, TmaResult,
    TmaTree,
};

use pmx_count::database::{self, Database, DatabaseError, DatabaseOptions};
use pmx_model::cpu::CpuId;

/// What `pmx tma` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct TmaOptions {
    /// Down to this level of the tree (from 1).
    pub level: u32,
    /// Never multiplex: run the command once per counter set that fits.
    pub no_multiplex: bool,
    /// The command to run and its arguments.
    pub command: Vec<String>,
    /// The CPU and its event tables.
    pub database: DatabaseOptions,
}

/// The outcome of [`run`]: the evaluated tree, and what could not be
/// counted and why.
#[derive(Debug, Clone)]
pub struct TmaReport {
    /// The command that ran.
    pub command: Vec<String>,
    /// The CPU the tree is for.
    pub cpu: CpuId,
    /// The level asked for.
    pub level: u32,
    /// The command's exit status as a shell reports it (128+N for signal N).
    pub exit_code: i32,
    /// The input events the tree needs down to `level`, by library name.
    pub events: Vec<String>,
    /// Inputs that could not be counted here, with why; sorted, one per
    /// (event, reason). A report groups them by the reason's cause.
    pub unavailable: Vec<(String, pmx_count::stat::Reason)>,
    /// The evaluated tree.
    pub tree: Tree,
    /// Things the reader should know about the run (levels, counter sets).
    pub notes: Vec<String>,
}

/// Why `pmx tma` stopped before there was a tree.
#[derive(Debug, thiserror::Error)]
pub enum TmaError {
    /// Level 0 was asked for.
    #[error("-l 0: levels start at 1")]
    LevelZero,
    /// The CPU or its tables could not be chosen.
    #[error(transparent)]
    Database(#[from] DatabaseError),
    /// No top-down tree is known for this CPU.
    #[error("no top-down metrics are known for {cpu} ({hint})")]
    NoTree {
        /// The CPU.
        cpu: CpuId,
        /// Where a tree could come from, or why there is none.
        hint: String,
    },
    /// This machine has no hardware PMU to count the tree's inputs with.
    #[error("this machine has no hardware PMU: /sys/bus/event_source/devices has no core PMU (cpu, cpu_core, cpu_atom), as in a VM without a virtual PMU, so the top-down tree's inputs (cycles, slots, stall counts) cannot be counted; software events still count")]
    NoPmu,
    /// The command could not be started (exit 127).
    #[error("cannot run '{cmd}': {reason}")]
    Exec {
        /// The command line.
        cmd: String,
        /// Why.
        reason: String,
    },
    /// Another I/O failure while counting.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl TmaError {
    /// Is this a mistake in what was asked (rather than a failure)?
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            TmaError::LevelZero | TmaError::Database(_) | TmaError::NoTree { .. }
        )
    }
}

/// The metric library, the top-down tree and the machine facts for one CPU.
pub struct Model {
    /// The CPU.
    pub cpu: CpuId,
    /// Every metric known for it.
    pub library: Library,
    /// Its top-down tree.
    pub tree: TmaTree,
    /// The machine facts the formulas use (`#smt_on`, CPU counts…).
    pub machine: Machine,
}

impl Model {
    /// The model for the database's target: the metric tables of every
    /// events directory the database searched (Intel's, or perf's AMD Zen
    /// tables: [`pmx_count::metrics::library`]), then pmx's built-in metrics;
    /// the tree is the most preferred source's. Machine facts are read from
    /// this machine when the target is this machine.
    pub fn for_database(db: &Database) -> Result<Model, TmaError> {
        let cpu = db.target.cpu.clone();
        let library = pmx_count::metrics::library(db);
        let Some(tree) = library.tma_tree() else {
            let hint = no_tree_hint(&cpu);
            return Err(TmaError::NoTree { cpu, hint });
        };
        let mut machine = if db.target.host {
            host_machine()
        } else {
            Machine {
                smt_on: Some(false),
                core_wide: Some(false),
                ..Machine::default()
            }
        };
        machine.cpuid = Some(cpu.to_string());
        Ok(Model {
            cpu,
            library,
            tree,
            machine,
        })
    }

    /// The input events the tree needs down to `level`.
    pub fn inputs_to_level(&self, level: u32) -> Vec<EventRef> {
        let ids = self.tree.metrics_to_level(level);
        self.library
            .requirements(&ids, true, Some(&self.machine))
            .events
    }

    /// The tree evaluated down to `level` over `inputs`.
    pub fn evaluate(&self, inputs: &Inputs, level: u32) -> Tree {
        let mut ev = self.library.evaluator(inputs, &self.machine);
        self.tree.evaluate(&mut ev, level)
    }
}

/// `pmx stat --topdown`: the tree's metrics down to `level` (0: every
/// level) after the `-M` list `more`, as one `-M` list. A machine without
/// a hardware PMU is said so first: no tree can be counted there.
pub fn topdown_metrics(db: &Database, level: u32, more: Option<&str>) -> Result<String, TmaError> {
    if db.target.host && !host_has_core_pmu() {
        return Err(TmaError::NoPmu);
    }
    let model = Model::for_database(db)?;
    let level = if level == 0 { u32::MAX } else { level };
    let nodes = model.tree.nodes().iter().filter(|n| n.level <= level);
    let names = more.into_iter().map(String::from);
    let names: Vec<String> = names.chain(nodes.map(|n| n.name.clone())).collect();
    Ok(names.join(","))
}

/// Whether this machine registers a core PMU (`cpu`, `cpu_core`,
/// `cpu_atom`, Arm's `armv*`).
fn host_has_core_pmu() -> bool {
    std::fs::read_dir("/sys/bus/event_source/devices").is_ok_and(|d| {
        d.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            pmx_model::encoding::is_core_pmu(&n) || n.starts_with("armv")
        })
    })
}

/// Why a CPU has no tree, and where one could come from.
pub fn no_tree_hint(cpu: &CpuId) -> String {
    let arch = cpu.microarch();
    match arch.as_ref().map(|a| a.code) {
        Some(code @ ("zen1" | "zen2" | "zen3")) => format!(
            "the pipeline-utilization tree is unavailable: AMD defines no top-down metrics for \
             {} (perf's amd{code} tables have none; their other metrics, such as the groups \
             l2_cache and amd_cache, work with -M)",
            arch.as_ref().map_or(code, |a| a.name)
        ),
        Some("zen4" | "zen5") => "AMD's pipeline-utilization tree comes from Linux perf's \
             tables: --events-dir DIR with DIR/x86/mapfile.csv and DIR/x86/amdzenN/"
            .to_string(),
        _ if cpu.vendor.is_amd_like() => {
            "AMD defines top-down (pipeline-utilization) metrics for Zen 4 and later only"
                .to_string()
        }
        _ => "Intel cores need Intel's tables: pmx events fetch".to_string(),
    }
}

/// This machine's facts: SMT from sysfs, the CPU count.
fn host_machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let smt = read("/sys/devices/system/cpu/smt/active").map(|s| s == "1");
    let ncpu = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32);
    Machine {
        smt_on: Some(smt.unwrap_or(false)),
        threads_per_core: Some(if smt == Some(true) { 2 } else { 1 }),
        num_cpus: ncpu,
        num_cpus_online: ncpu,
        core_wide: Some(false),
        ..Machine::default()
    }
}

/// Count the tree's inputs for the command and evaluate the tree.
pub fn run(opts: &TmaOptions) -> Result<TmaReport, TmaError> {
    if opts.level == 0 {
        return Err(TmaError::LevelZero);
    }
    let db = database::load(&opts.database)?;
    let model = Model::for_database(&db)?;
    let mut notes: Vec<String> = Vec::new();
    if model.tree.depth() < opts.level {
        notes.push(format!(
            "-l {}: the tree for {} ({}) has {} level(s); showing all of them",
            opts.level,
            model.cpu,
            model.tree.origin,
            model.tree.depth()
        ));
    }
    let events = model.inputs_to_level(opts.level);
    let mut plan = plan_inputs(&events, &db);
    let counted = count(&mut plan, opts, &mut notes)?;
    let inputs = plan.readings(counted.run.as_ref());
    let tree = model.evaluate(&inputs, opts.level);
    let mut unavailable = plan.unavailable;
    unavailable.sort();
    unavailable.dedup();
    Ok(TmaReport {
        command: opts.command.clone(),
        cpu: model.cpu,
        level: opts.level,
        exit_code: counted.exit_code,
        events: events.into_iter().map(|e| e.name).collect(),
        unavailable,
        tree,
        notes,
    })
}

#[cfg(test)]
mod tests;
