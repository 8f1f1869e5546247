//! A whole `pmx stat`: the plan fitted to this CPU's counters (packed,
//! software events grouped, split into sets that fit at once for
//! `--no-multiplex`), then every set run once per repeat, each repeat's
//! sets merged into one run.

use super::options::RunOptions;
use super::outcome::{merge_runs, RunError, StatRun, Tick};
use super::perf_options::{run_hook, RunHooks};
use super::plan::StatPlan;
use super::run::run_with;
use crate::schedule::CounterBudget;
use crate::signals::stop_requested;

/// The plan fitted to the counters.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The sets to run, each once per repeat (one set unless
    /// `--no-multiplex` had to split the plan).
    pub sets: Vec<StatPlan>,
    /// Notes for the report: how the groups were packed, how the sets
    /// were run.
    pub notes: Vec<String>,
}

/// A flag combination the fitted plan cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// `--no-multiplex` split the plan and `-I` was given.
    #[error("--no-multiplex with several counter sets cannot print intervals")]
    SetsWithIntervals,
    /// `--no-multiplex` split the plan and there is no command to rerun.
    #[error("--no-multiplex with several counter sets needs a command to run once per set")]
    SetsWithoutCommand,
}

/// Fit `plan` to `budget` (this CPU's counters when known): pack it,
/// group its software events, and with `no_multiplex` split it into sets
/// that each fit at once. `repeat` only words the notes.
pub fn fit(
    plan: &mut StatPlan,
    budget: Option<&CounterBudget>,
    no_multiplex: bool,
    repeat: u32,
) -> Fitted {
    let mut notes = Vec::new();
    if let Some(b) = budget {
        notes.extend(plan.pack(b));
    }
    plan.group_software();
    let sets = match (budget, no_multiplex) {
        (Some(b), true) => plan.run_sets(b),
        _ => vec![plan.clone()],
    };
    if no_multiplex {
        notes.push(match (budget, sets.len()) {
            (None, _) => "--no-multiplex: this CPU's counters are unknown (no PMU described by CPUID), so everything ran at once".to_string(),
            (Some(_), 1) => "--no-multiplex: every event fit the counters at once: 1 run".to_string(),
            (Some(_), n) => format!(
                "--no-multiplex: the events need {n} counter sets, so the command ran {n} times{} and the results were merged",
                if repeat > 1 { " per repeat" } else { "" }
            ),
        });
    }
    Fitted { sets, notes }
}

/// `-S` and `--pre` before a run.
fn before_run(hooks: &RunHooks) {
    if hooks.sync {
        // SAFETY: sync(2) takes nothing and cannot fail.
        unsafe { libc::sync() };
    }
    if let Some(pre) = &hooks.pre {
        hook("--pre", pre);
    }
}

/// Run a `--pre`/`--post` command; say so when it fails (perf goes on).
fn hook(flag: &str, cmd: &str) {
    match run_hook(cmd) {
        Ok(st) if st.success() => {}
        Ok(st) => eprintln!("pmx stat: {flag} '{cmd}' failed: {st}"),
        Err(e) => eprintln!("pmx stat: {flag} '{cmd}': {e}"),
    }
}

impl Fitted {
    /// Can the sets run with these options?
    pub fn check(&self, opts: &RunOptions) -> Result<(), FitError> {
        if self.sets.len() > 1 && opts.interval.is_some() {
            return Err(FitError::SetsWithIntervals);
        }
        if self.sets.len() > 1 && opts.command.is_empty() {
            return Err(FitError::SetsWithoutCommand);
        }
        Ok(())
    }

    /// Run every set `repeat` times, calling `on_tick` with the set and
    /// each interval; one merged run per repeat. Stops early when a run
    /// is interrupted or a stop is requested.
    pub fn run(
        &self,
        opts: &RunOptions,
        repeat: u32,
        on_tick: &mut dyn FnMut(&StatPlan, &Tick),
    ) -> Result<Vec<StatRun>, RunError> {
        let mut runs: Vec<StatRun> = Vec::new();
        for _ in 0..repeat {
            let mut set_runs = Vec::new();
            for set in &self.sets {
                before_run(&opts.hooks);
                let r = run_with(set, opts, &mut |t| on_tick(set, t));
                if let Some(post) = &opts.hooks.post {
                    hook("--post", post);
                }
                let r = r?;
                let stop = r.interrupted;
                set_runs.push(r);
                if stop || stop_requested() {
                    break;
                }
            }
            let r = merge_runs(&self.sets[..set_runs.len()], set_runs);
            let stop = r.interrupted;
            runs.push(r);
            if stop || stop_requested() {
                break;
            }
        }
        Ok(runs)
    }
}
