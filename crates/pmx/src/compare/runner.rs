//! `pmx stat --compare`: the commands of every side run interleaved — A B
//! A B … — so that drift (frequency, caches, other load) hits every side
//! alike; warm-up rounds first, run the same way and dropped.

use crate::stat::{Fitted, RunError, RunOptions, StatRun};

/// Run every side's `opts` (each with its own command) `warmup` rounds,
/// dropped, then `repeat` rounds kept, one run per side per round in
/// side order; `on_run(round, side)` before each kept run. Stops after
/// the round in which a run was interrupted or a stop was requested.
pub fn interleave(
    fitted: &Fitted,
    sides: &[RunOptions],
    repeat: u32,
    warmup: u32,
    on_run: &mut dyn FnMut(u32, usize),
) -> Result<Vec<Vec<StatRun>>, RunError> {
    for _ in 0..warmup {
        for o in sides {
            fitted.run(o, 1, &mut |_, _| {})?;
            if crate::signals::stop_requested() {
                return Ok(vec![Vec::new(); sides.len()]);
            }
        }
    }
    let mut out: Vec<Vec<StatRun>> = vec![Vec::new(); sides.len()];
    for round in 0..repeat {
        let mut stop = false;
        for (i, o) in sides.iter().enumerate() {
            on_run(round, i);
            let runs = fitted.run(o, 1, &mut |_, _| {})?;
            stop |= runs.iter().any(|r| r.interrupted);
            out[i].extend(runs);
        }
        if stop || crate::signals::stop_requested() {
            break;
        }
    }
    Ok(out)
}
