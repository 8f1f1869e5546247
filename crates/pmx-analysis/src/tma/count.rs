//! Running the command under the input plan, through `pmx stat`'s
//! session (`pmx_count::stat::Session`): packed onto this CPU's
//! counters, once or once per counter set, or without counters when
//! nothing can be counted.

use super::{InputPlan, TmaError, TmaOptions};
use pmx_count::schedule::CounterBudget;
use pmx_count::stat::{Aggregation, RunError, RunOptions, Session, SessionOptions, StatRun};

/// What running the command gave.
#[derive(Debug)]
pub struct Counted {
    /// The command's exit status as a shell reports it.
    pub exit_code: i32,
    /// The counts (all runs merged); `None` when it ran without counters.
    pub run: Option<StatRun>,
}

const NOTHING_COUNTED: &str = "nothing could be counted: the command ran without counters";

/// Count the input plan for the command through one stat session: packed
/// onto this CPU's counters, run once (once per counter set with
/// `no_multiplex`, merged). The fitted plan replaces `input.plan` (the
/// readings point into it); the notes on the packing and the runs are
/// added to `notes`.
pub fn count(
    input: &mut InputPlan,
    opts: &TmaOptions,
    notes: &mut Vec<String>,
) -> Result<Counted, TmaError> {
    let mut session = Session::new(
        input.plan.clone(),
        SessionOptions {
            run: RunOptions::for_command(opts.command.clone()),
            aggregation: Aggregation::Total,
            repeat: 1,
            no_multiplex: opts.no_multiplex,
            budget: CounterBudget::this_cpu(),
            topology: None,
            signals: true,
        },
    )
    .map_err(|e| TmaError::Exec {
        cmd: opts.command.join(" "),
        reason: e.to_string(),
    })?;
    notes.extend(
        session
            .fitted()
            .iter()
            .flat_map(|f| f.notes.iter().cloned()),
    );
    input.plan = session.plan().clone();
    if input.plan.events.is_empty() {
        notes.push(NOTHING_COUNTED.into());
        return run_plain(&opts.command);
    }
    match session.count(&mut ()) {
        Ok(c) => Ok(Counted {
            exit_code: c.exit_code,
            run: c.runs.into_iter().next(),
        }),
        Err(RunError::Exec { cmd, reason }) => Err(TmaError::Exec { cmd, reason }),
        Err(RunError::Open(failed)) => {
            // Nothing opened (no PMU here): say why, run it anyway.
            input.none_counted(&failed);
            notes.push(NOTHING_COUNTED.into());
            run_plain(&opts.command)
        }
        Err(RunError::Io(e)) => Err(TmaError::Io(e)),
        Err(e @ RunError::Backend { .. }) => {
            Err(TmaError::Io(std::io::Error::other(e.to_string())))
        }
    }
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
