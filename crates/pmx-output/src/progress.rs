//! Progress on stderr for long work, only on a terminal: a bar for long
//! reads (`pmx report` of a large file): `[#####     ]  20%  12 / 60 MiB`,
//! redrawn when the percentage changes, cleared at the end; and
//! [`RunProgress`], the line of `pmx stat --compare`'s interleaved runs.

use std::io::IsTerminal;

/// A progress bar on stderr, drawn only when stderr is a terminal and the
/// file is large.
pub struct Progress {
    on: bool,
    last: u64,
}

impl Progress {
    /// A bar that is drawn unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        Progress {
            on: tty && !quiet,
            last: u64::MAX,
        }
    }

    /// `done` of `total` bytes (nothing drawn below 32 MiB, or without a
    /// total).
    pub fn update(&mut self, done: u64, total: Option<u64>) {
        let Some(total) = total else { return };
        if !self.on || total < (32 << 20) {
            return;
        }
        let pct = (done.min(total) * 100 / total.max(1)).min(100);
        if pct == self.last {
            return;
        }
        self.last = pct;
        let filled = (pct / 4) as usize;
        eprint!(
            "\r[{}{}] {pct:3}%  {} / {} MiB",
            "#".repeat(filled),
            " ".repeat(25 - filled),
            done >> 20,
            total >> 20
        );
    }

    /// Clear the bar.
    pub fn finish(&self) {
        if self.on && self.last != u64::MAX {
            eprint!("\r{}\r", " ".repeat(60));
        }
    }
}

/// A line on stderr while `pmx stat --compare` runs its sides interleaved:
/// `pmx stat --compare: run 7 of 20 (round 4 of 10, B)`. Drawn only on a
/// terminal, unless quiet, and only once a second has passed (short
/// comparisons stay silent); [`RunProgress::finish`] clears it.
pub struct RunProgress {
    on: bool,
    start: std::time::Instant,
    rounds: u32,
    sides: usize,
    drawn: bool,
}

impl RunProgress {
    /// For `rounds` rounds of `sides` runs each.
    pub fn new(quiet: bool, rounds: u32, sides: usize) -> RunProgress {
        RunProgress {
            on: std::io::stderr().is_terminal() && !quiet,
            start: std::time::Instant::now(),
            rounds,
            sides,
            drawn: false,
        }
    }

    /// The line for the run of `side` in `round` (both from 0).
    pub fn line(&self, round: u32, side: usize) -> String {
        let run = round as usize * self.sides + side + 1;
        let total = self.rounds as usize * self.sides;
        format!(
            "pmx stat --compare: run {run} of {total} (round {} of {}, {})",
            round + 1,
            self.rounds,
            pmx::compare::label(side)
        )
    }

    /// The run of `side` in `round` is starting.
    pub fn update(&mut self, round: u32, side: usize) {
        if !self.on || self.start.elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        eprint!("\r\x1b[K{}", self.line(round, side));
        self.drawn = true;
    }

    /// Clear the line.
    pub fn finish(&self) {
        if self.drawn {
            eprint!("\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_runs_across_rounds() {
        let p = RunProgress::new(true, 10, 2);
        assert_eq!(
            p.line(3, 1),
            "pmx stat --compare: run 8 of 20 (round 4 of 10, B)"
        );
        assert_eq!(
            p.line(0, 0),
            "pmx stat --compare: run 1 of 20 (round 1 of 10, A)"
        );
    }
}
