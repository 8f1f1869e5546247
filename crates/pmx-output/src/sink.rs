//! Where a report is written ([`Sink`]): nowhere (`-q`), an open file
//! descriptor (`--log-fd N`), a file (`-o FILE`, its job patterns
//! `%h %p %r %j` expanded by [`pmx_io::job::expand_path`], written by
//! [`pmx_io::OutFile`]'s rules: put in place only by [`Opened::commit`],
//! appended to in place, `-` for standard output) or standard error.

use pmx_io::{Options, OutFile};
use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Nowhere (`-q`).
    Quiet,
    /// This file descriptor, appended to (`--log-fd N`).
    Fd(i32),
    /// This file (a pattern), appended to with `append`, else truncated.
    File {
        /// The path as given, before expansion.
        pattern: PathBuf,
        /// Append instead of truncating.
        append: bool,
    },
    /// Standard error.
    Stderr,
}

/// Why the sink cannot be opened.
#[derive(Debug)]
pub enum SinkError {
    /// The flags are wrong (a bad `--log-fd`, a path or pattern that
    /// cannot be expanded): the user's to fix.
    Usage(String),
    /// The file cannot be created or opened: `path: reason`.
    Open(String),
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkError::Usage(m) | SinkError::Open(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SinkError {}

impl Sink {
    /// The flags' sink: `-q` wins, then `--log-fd`, then `-o`.
    pub fn of(quiet: bool, log_fd: Option<i32>, output: Option<&PathBuf>, append: bool) -> Sink {
        match (quiet, log_fd, output) {
            (true, ..) => Sink::Quiet,
            (_, Some(fd), _) => Sink::Fd(fd),
            (_, None, Some(p)) => Sink::File {
                pattern: p.clone(),
                append,
            },
            (_, None, None) => Sink::Stderr,
        }
    }

    /// Open it for writing.
    pub fn open(&self) -> Result<Opened, SinkError> {
        let stream = |w: Box<dyn Write>| Ok(Opened::Stream(w));
        match self {
            Sink::Quiet => stream(Box::new(std::io::sink())),
            Sink::Stderr => stream(Box::new(std::io::stderr())),
            Sink::Fd(fd) => {
                let f = OpenOptions::new()
                    .append(true)
                    .open(format!("/proc/self/fd/{fd}"));
                let f = f.map_err(|e| SinkError::Usage(format!("--log-fd {fd}: {e}")))?;
                stream(Box::new(f))
            }
            Sink::File { pattern, append } => {
                let path = pmx_io::job::expand_path(pattern).map_err(|e| SinkError::Usage(e.0))?;
                let append = Options {
                    append: *append,
                    ..Options::default()
                };
                let file = OutFile::create(&path, append);
                let file = file.map_err(|e| SinkError::Open(e.to_string()))?;
                Ok(Opened::File(BufWriter::new(file)))
            }
        }
    }
}

/// An opened sink: write the report, then [`Opened::commit`]. A file
/// dropped without a commit is discarded (the old one stays).
pub enum Opened {
    /// Standard error, a descriptor, nowhere: written as it comes.
    Stream(Box<dyn Write>),
    /// A file (or `-`, a FIFO, a device) by `pmx_io`'s rules.
    File(BufWriter<OutFile>),
}

impl Opened {
    /// Flush, and put a file in place.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Opened::Stream(mut w) => w.flush(),
            Opened::File(w) => w.into_inner().map_err(|e| e.into_error())?.commit(),
        }
    }
}

impl Write for Opened {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Opened::Stream(w) => w.write(buf),
            Opened::File(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Opened::Stream(w) => w.flush(),
            Opened::File(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_wins_then_the_fd_then_the_file() {
        let p = PathBuf::from("out.txt");
        assert_eq!(Sink::of(true, Some(3), Some(&p), false), Sink::Quiet);
        assert_eq!(Sink::of(false, Some(3), Some(&p), false), Sink::Fd(3));
        assert_eq!(
            Sink::of(false, None, Some(&p), true),
            Sink::File {
                pattern: p.clone(),
                append: true
            }
        );
        assert_eq!(Sink::of(false, None, None, true), Sink::Stderr);
    }

    #[test]
    fn files_are_truncated_or_appended_to_and_errors_say_which_flag() {
        let dir = std::env::temp_dir().join(format!("pmx-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.txt");
        let file = |append| Sink::File {
            pattern: path.clone(),
            append,
        };
        let write = |append, text: &str| {
            let mut out = file(append).open().unwrap();
            out.write_all(text.as_bytes()).unwrap();
            out
        };
        write(false, "one\n").commit().unwrap();
        write(true, "two\n").commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        // Not committed (a run that failed): the old file stays.
        drop(write(false, "lost\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        write(false, "three\n").commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        let missing = Sink::File {
            pattern: dir.join("no/such/dir/r.txt"),
            append: false,
        };
        let err = missing.open().err().unwrap();
        assert!(matches!(err, SinkError::Open(ref m) if m.contains("no/such/dir/r.txt: ")));
        let err = Sink::Fd(987_654).open().err().unwrap();
        assert!(matches!(err, SinkError::Usage(ref m) if m.starts_with("--log-fd 987654: ")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
