//! Progress on stderr for long work, only on a terminal: a bar for long
//! reads (`pmx report`, `script`, `annotate` of a large file): `[#####
//! ]  20%  12 / 60 MiB`, or `12 MiB read` from a pipe, drawn once the read
//! has taken a second, redrawn when the figure changes, cleared at the
//! end; and [`RunProgress`], the line of `pmx stat --compare`'s
//! interleaved runs.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long work runs before its progress is drawn: short reads stay
/// silent.
const AFTER: Duration = Duration::from_secs(1);

/// A progress bar on stderr, drawn only when stderr is a terminal and the
/// read has taken over a second.
pub struct Progress {
    on: bool,
    start: Instant,
    /// The last figure drawn: a percentage, or MiB read (no total).
    last: u64,
    drawn: bool,
}

impl Progress {
    /// A bar that is drawn unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal() && !quiet,
            start: Instant::now(),
            last: u64::MAX,
            drawn: false,
        }
    }

    /// For a command whose output goes to standard output (`pmx script`):
    /// drawn only when standard output is not the terminal too (the bar
    /// would be drawn over the lines).
    pub fn beside_stdout(quiet: bool) -> Progress {
        Progress::new(quiet || std::io::stdout().is_terminal())
    }

    /// The text of the bar for `done` of `total` bytes (`None`: a pipe),
    /// and the figure it shows.
    pub fn text(done: u64, total: Option<u64>) -> (String, u64) {
        match total {
            Some(total) => {
                let pct = (done.min(total) * 100 / total.max(1)).min(100);
                let filled = (pct / 4) as usize;
                let bar = format!(
                    "[{}{}] {pct:3}%  {} / {} MiB",
                    "#".repeat(filled),
                    " ".repeat(25 - filled),
                    done >> 20,
                    total >> 20
                );
                (bar, pct)
            }
            None => (format!("{} MiB read", done >> 20), done >> 20),
        }
    }

    /// `done` of `total` bytes.
    pub fn update(&mut self, done: u64, total: Option<u64>) {
        if !self.on || self.start.elapsed() < AFTER {
            return;
        }
        let (text, figure) = Progress::text(done, total);
        if figure == self.last {
            return;
        }
        self.last = figure;
        self.drawn = true;
        eprint!("\r\x1b[K{text}");
    }

    /// Clear the bar.
    pub fn finish(&self) {
        if self.drawn {
            eprint!("\r\x1b[K");
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
    fn the_bar_shows_a_share_or_what_a_pipe_gave() {
        let (bar, pct) = Progress::text(15 << 20, Some(60 << 20));
        assert_eq!(pct, 25);
        assert_eq!(
            bar,
            format!("[{}{}]  25%  15 / 60 MiB", "#".repeat(6), " ".repeat(19))
        );
        assert_eq!(Progress::text(7 << 20, None), ("7 MiB read".into(), 7));
    }

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
