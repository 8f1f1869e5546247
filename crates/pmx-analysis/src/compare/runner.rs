//! `pmx stat --compare`: the commands of every side run interleaved — A B
//! A B … — so that drift (frequency, caches, other load) hits every side
//! alike; warm-up rounds first, run the same way and dropped.

use pmx_count::stat::{RunError, RunOptions, Session, StatRun};

/// Run the session's sets for every side's `opts` (each with its own
/// command; the session begins once, [`Session::begin`]) `warmup` rounds,
/// dropped, then `repeat` rounds kept, one run per side per round in
/// side order; `on_run(round, side)` before each kept run. Stops after
/// the round in which a run was interrupted or a stop was requested.
pub fn interleave(
    session: &mut Session,
    sides: &[RunOptions],
    repeat: u32,
    warmup: u32,
    on_run: &mut dyn FnMut(u32, usize),
) -> Result<Vec<Vec<StatRun>>, RunError> {
    session.begin();
    for _ in 0..warmup {
        for o in sides {
            session.run_once(o)?;
            if pmx_count::signals::stop_requested() {
                return Ok(vec![Vec::new(); sides.len()]);
            }
        }
    }
    let mut out: Vec<Vec<StatRun>> = vec![Vec::new(); sides.len()];
    for round in 0..repeat {
        let mut stop = false;
        for (i, o) in sides.iter().enumerate() {
            on_run(round, i);
            let runs = session.run_once(o)?;
            stop |= runs.iter().any(|r| r.interrupted);
            out[i].extend(runs);
        }
        if stop || pmx_count::signals::stop_requested() {
            break;
        }
    }
    Ok(out)
}

/// The commands as `-- A ARGS… ::: B ARGS… [::: C …]` gives them; `None`
/// unless there are at least two, none empty.
pub fn split_commands(command: &[String]) -> Option<Vec<Vec<String>>> {
    let sides: Vec<Vec<String>> = command
        .split(|a| a == ":::")
        .map(<[String]>::to_vec)
        .collect();
    (sides.len() >= 2 && sides.iter().all(|c| !c.is_empty())).then_some(sides)
}

/// `pmx stat --compare`'s flags checked: the commands of `-- A ARGS…
/// ::: B ARGS…`, at least two runs each (`repeat`), no `-I`
/// (`interval`), not the msr backend (`msr`).
pub fn ab_commands(
    command: &[String],
    repeat: u32,
    interval: bool,
    msr: bool,
) -> Result<Vec<Vec<String>>, String> {
    let Some(commands) = split_commands(command) else {
        return Err("--compare: give the commands as -- A ARGS… ::: B ARGS…".into());
    };
    if repeat < 2 || interval || msr {
        return Err(
            "--compare needs -r N (N ≥ 2; 10 or more for Welch's t-test), no -I, the perf backend"
                .into(),
        );
    }
    Ok(commands)
}

/// `opts` once per side, each with its command.
pub fn per_side(opts: &RunOptions, commands: &[Vec<String>]) -> Vec<RunOptions> {
    (commands.iter())
        .map(|c| RunOptions {
            command: c.clone(),
            ..opts.clone()
        })
        .collect()
}

/// A sentence per side whose command failed (exited non-zero or was
/// killed) in some run.
pub fn failures(runs: &[Vec<StatRun>], commands: &[Vec<String>]) -> Vec<String> {
    runs.iter()
        .zip(commands)
        .filter_map(|(r, cmd)| {
            let e = r
                .iter()
                .filter_map(|r| r.exit)
                .find(|e| e.shell_code() != 0)?;
            Some(format!(
                "'{}' exited with status {}: its counts are those of a failed run",
                cmd.join(" "),
                e.shell_code()
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_needs_two_commands_and_repeats_on_the_perf_backend() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let two = ab_commands(&words("./a x ::: ./b"), 10, false, false).unwrap();
        assert_eq!(two, [words("./a x"), words("./b")]);
        assert!(ab_commands(&words("./a"), 10, false, false)
            .unwrap_err()
            .contains("::: B"));
        for (r, i, msr) in [(1, false, false), (10, true, false), (10, false, true)] {
            let e = ab_commands(&words("./a ::: ./b"), r, i, msr).unwrap_err();
            assert!(e.starts_with("--compare needs -r N"), "{e}");
        }
        let sides = per_side(&RunOptions::for_command(vec![]), &two);
        assert_eq!(sides[1].command, ["./b"]);
    }

    #[test]
    fn commands_split_at_three_colons() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            split_commands(&s(&["./a", "1", ":::", "./b"])),
            Some(vec![s(&["./a", "1"]), s(&["./b"])])
        );
        assert_eq!(split_commands(&s(&["./a"])), None);
        assert_eq!(split_commands(&s(&["./a", ":::"])), None);
    }
}
