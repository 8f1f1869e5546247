//! A progress bar on stderr for long reads (`pmx report` of a large
//! file): `[#####     ]  20%  12 / 60 MiB`, redrawn when the percentage
//! changes, cleared at the end.

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
