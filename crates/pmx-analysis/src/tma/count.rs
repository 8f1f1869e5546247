//! Running the command under the input plan: packed onto this CPU's
//! counters, once or once per counter set, or without counters when
//! nothing can be counted.

use super::{InputPlan, TmaError, TmaOptions};
use pmx_count::schedule::CounterBudget;
use pmx_count::stat::{self, RunError, RunOptions, StatPlan, StatRun};

/// What running the command gave.
#[derive(Debug)]
pub struct Counted {
    /// The command's exit status as a shell reports it.
    pub exit_code: i32,
    /// The counts (all runs merged); `None` when it ran without counters.
    pub run: Option<StatRun>,
}

const NOTHING_COUNTED: &str = "nothing could be counted: the command ran without counters";

/// Pack the plan onto this CPU's counters, run the command (once per
/// counter set with `no_multiplex`), and merge the runs. Notes about the
/// packing and the runs are added to `notes`.
pub fn count(
    input: &mut InputPlan,
    opts: &TmaOptions,
    notes: &mut Vec<String>,
) -> Result<Counted, TmaError> {
    let sets = schedule(&mut input.plan, opts.no_multiplex, notes);
    if input.plan.events.is_empty() {
        notes.push(NOTHING_COUNTED.into());
        return run_plain(&opts.command);
    }
    stat::install_signal_handlers();
    let run_opts = RunOptions::for_command(opts.command.clone());
    let mut runs = Vec::new();
    for set in &sets {
        match stat::run(set, &run_opts) {
            Ok(r) => {
                let stop = r.interrupted;
                runs.push(r);
                if stop {
                    break;
                }
            }
            Err(RunError::Exec { cmd, reason }) => return Err(TmaError::Exec { cmd, reason }),
            Err(RunError::Open(failed)) => {
                // Nothing opened (no PMU here): say why, run it anyway.
                input.none_counted(&failed);
                notes.push(NOTHING_COUNTED.into());
                return run_plain(&opts.command);
            }
            Err(RunError::Io(e)) => return Err(TmaError::Io(e)),
        }
    }
    let merged = stat::merge_runs(&sets[..runs.len()], runs);
    Ok(Counted {
        exit_code: merged.exit.map(|e| e.shell_code()).unwrap_or(0),
        run: Some(merged),
    })
}

/// Pack `plan` onto this CPU's counters and return the plans to run: one,
/// or one per counter set with `no_multiplex`.
fn schedule(plan: &mut StatPlan, no_multiplex: bool, notes: &mut Vec<String>) -> Vec<StatPlan> {
    let budget = CounterBudget::this_cpu();
    if let Some(b) = &budget {
        notes.extend(plan.pack(b));
    }
    let sets = match (&budget, no_multiplex) {
        (Some(b), true) => plan.run_sets(b),
        _ => vec![plan.clone()],
    };
    if no_multiplex {
        match (&budget, sets.len()) {
            (None, _) => notes.push("--no-multiplex: this CPU's counters are unknown (no PMU described by CPUID), so everything ran at once".into()),
            (Some(_), n) => notes.push(format!("--no-multiplex: {n} counter set(s), the command ran {n} time(s)")),
        }
    }
    sets
}

/// Run the command without counters (when nothing can be counted).
fn run_plain(cmd: &[String]) -> Result<Counted, TmaError> {
    use std::os::unix::process::ExitStatusExt;
    match std::process::Command::new(&cmd[0]).args(&cmd[1..]).status() {
        Ok(st) => Ok(Counted {
            exit_code: st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
            run: None,
        }),
        Err(e) => Err(TmaError::Exec {
            cmd: cmd.join(" "),
            reason: e.to_string(),
        }),
    }
}
