//! `pmx events fetch` on screen: the progress of the downloads on stderr
//! ([`ProgressBar`]) and the summary of what was fetched and how to use it
//! ([`summary_text`]).

use pmx::events_fetch::{EventsFetchReport, Place, Progress, Selection};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// What was fetched, where to, and how to use it.
pub fn summary_text(report: &EventsFetchReport) -> String {
    let fetched = &report.fetched;
    let mut out = String::new();
    let what = match &report.selection {
        Selection::All => "every CPU".to_string(),
        Selection::Cpu(cpu) => match cpu.microarch() {
            Some(m) => format!("{cpu} ({}, {})", m.name, m.code),
            None => cpu.to_string(),
        },
    };
    let _ = writeln!(out, "Fetched {} for {what}", fetched.tables.describe());
    let _ = writeln!(out, "  from {}", fetched.origin.describe());
    let _ = writeln!(out, "  into {}", fetched.dest.display());
    if !fetched.patterns.is_empty() {
        let _ = writeln!(out, "  mapfile.csv rows: {}", fetched.patterns.join(", "));
    }
    let width = fetched.files.iter().map(|f| f.rel.len()).max().unwrap_or(0);
    const MAX_LISTED: usize = 40;
    for f in fetched.files.iter().take(MAX_LISTED) {
        let mut kind = f.kind.clone();
        if !f.version.is_empty() {
            kind.push_str(&format!(" {}", f.version));
        }
        let _ = writeln!(
            out,
            "    {:<width$}  {:>10}  {kind}",
            f.rel,
            human_size(f.bytes)
        );
    }
    if fetched.files.len() > MAX_LISTED {
        let _ = writeln!(out, "    … and {} more", fetched.files.len() - MAX_LISTED);
    }
    let _ = writeln!(
        out,
        "  {} files, {}",
        fetched.files.len(),
        human_size(fetched.total_bytes())
    );
    for r in &fetched.removed {
        let _ = writeln!(out, "  removed {r} (no longer in the tables)");
    }
    usage_text(&mut out, report);
    out
}

/// What to set (if anything) so that pmx reads the tables.
fn usage_text(out: &mut String, report: &EventsFetchReport) {
    let dir = shell_quote(&report.fetched.dest.display().to_string());
    let _ = match report.place {
        Place::Cache => writeln!(
            out,
            "pmx reads this directory by default (when neither --events-dir nor \
             PMX_EVENTS_DIR is given): nothing to set."
        ),
        Place::Env => writeln!(
            out,
            "PMX_EVENTS_DIR names this directory, so pmx reads it while the variable \
             stays set (to keep it, put 'export PMX_EVENTS_DIR={dir}' in your shell profile)."
        ),
        Place::Flag => {
            let _ = writeln!(
                out,
                "To use them, pass --events-dir {dir} (e.g. pmx list --events-dir {dir})"
            );
            writeln!(out, "  or set: export PMX_EVENTS_DIR={dir}")
        }
    };
}

/// Quote for a POSIX shell when needed.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `1.2 MiB`, `340.0 KiB`, `512 B`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Progress on stderr: a redrawn bar on a terminal, one line per file
/// otherwise.
pub struct ProgressBar {
    tty: bool,
    columns: fn() -> usize,
    counter: String,
    name: String,
    size: Option<u64>,
    last: Option<Instant>,
    drawn: bool,
}

impl ProgressBar {
    /// A bar redrawn in place when `tty`, else one line per file;
    /// `columns` tells the terminal's width when asked.
    pub fn new(tty: bool, columns: fn() -> usize) -> ProgressBar {
        ProgressBar {
            tty,
            columns,
            counter: String::new(),
            name: String::new(),
            size: None,
            last: None,
            drawn: false,
        }
    }

    fn draw(&mut self, done: u64, force: bool) {
        if !self.tty {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|t| now.duration_since(t) < Duration::from_millis(80))
        {
            return;
        }
        self.last = Some(now);
        let cols = (self.columns)().clamp(40, 200);
        let amount = match self.size {
            Some(total) if total > 0 => {
                let frac = (done as f64 / total as f64).clamp(0.0, 1.0);
                let cells = 20;
                let full = (frac * cells as f64).round() as usize;
                format!(
                    "[{}{}] {:>3}% {}/{}",
                    "#".repeat(full),
                    "-".repeat(cells - full),
                    (frac * 100.0).round() as u32,
                    human_size(done),
                    human_size(total)
                )
            }
            _ => human_size(done),
        };
        // Keep the line within the terminal: shorten the file name from the
        // left, keeping the "[i/n] " counter.
        let room = cols.saturating_sub(amount.chars().count() + 3 + self.counter.chars().count());
        let name_len = self.name.chars().count();
        let name: String = if name_len > room {
            let skip = name_len - room.saturating_sub(1);
            format!("…{}", self.name.chars().skip(skip).collect::<String>())
        } else {
            self.name.clone()
        };
        let label = format!("{} {name}", self.counter);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{label}  {amount}\x1b[K");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.tty && self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Progress for ProgressBar {
    fn start(
        &mut self,
        rel: &str,
        location: &str,
        index: usize,
        count: Option<usize>,
        size: Option<u64>,
    ) {
        let of = count
            .map(|c| format!("{index}/{c}"))
            .unwrap_or_else(|| index.to_string());
        if self.tty {
            self.counter = format!("[{of}]");
            self.name = rel.to_string();
            self.size = size;
            self.last = None;
            self.draw(0, true);
        } else {
            eprintln!("pmx: fetching [{of}] {location}");
        }
    }

    fn advance(&mut self, done: u64) {
        self.draw(done, false);
    }

    fn finish(&mut self, _rel: &str, bytes: u64) {
        self.draw(bytes, true);
    }

    fn committing(&mut self) {
        self.clear();
    }

    fn failed(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_quotes() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(2048), "2.0 KiB");
        assert_eq!(human_size(3 << 20), "3.0 MiB");
        assert_eq!(shell_quote("/tmp/ev"), "/tmp/ev");
        assert_eq!(shell_quote("/tmp/my ev"), "'/tmp/my ev'");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
    }
}
