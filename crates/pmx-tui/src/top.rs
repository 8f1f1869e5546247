//! The session of `pmx top`: [`TopOptions`] in; [`crate::run`] drives a
//! [`Session`] with a renderer until the user quits, a signal comes, the
//! `-n` refreshes are done or the targets are gone; a [`TopOutcome`] out.

mod frame;
mod session;

pub use frame::{Frame, GroupLine, GroupView, Header, METRIC_ROWS};
pub use session::{Aging, Session};

use pmx_count::metrics::MetricSet;
use pmx_count::stat::Scope;
use pmx_record::{CallGraph, RecordError, RecordEvent, RecordOptions, SampleRate};
use std::time::Duration;

/// perf top's decay: every refresh keeps 7/8 of each count.
pub const DECAY: f64 = 7.0 / 8.0;

/// Rows held at most (self rows, children and stacks over every event):
/// beyond it a refresh ages the rows harder until they fit.
pub const MAX_ROWS: usize = 20_000;

/// What `pmx top` samples and shows.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// The events (the default event when the caller had none).
    pub events: Vec<RecordEvent>,
    /// The session: scope (`-a`, `-C`, `-p`, `-t`), rate, call graph,
    /// ring size (its `output` and `duration` are not used).
    pub record: RecordOptions,
    /// Time between refreshes (`-d`).
    pub delay: Duration,
    /// Stop after this many refreshes (`-n`).
    pub refreshes: Option<u64>,
    /// Forget the counts at every refresh instead of decaying them (`-z`).
    pub zero: bool,
    /// Rows of a `--stdio` table.
    pub entries: usize,
    /// Rows held at most ([`MAX_ROWS`]).
    pub max_rows: usize,
    /// Plain tables on standard output instead of the terminal UI.
    pub stdio: bool,
    /// `-M`: metrics (names or groups, comma-separated) per row of a
    /// sample-read group, with their 95% intervals.
    pub metrics: Option<String>,
    /// What the caller chose and the user should know (the default
    /// event's fallback): on standard error with `stdio`, in the UI's
    /// status line otherwise.
    pub notes: Vec<String>,
    /// How names are shown and where binaries and caches are read (the
    /// caller reads the environment).
    pub symbols: pmx_symbols::SymbolOptions,
    /// Where `-M`'s metric tables are (`$PMX_EVENTS_DIR`, else the cache;
    /// the caller reads the environment).
    pub events_dir_default: pmx_count::database::EventsDirDefault,
}

impl TopOptions {
    /// `events` sampled on `scope` at `rate`, with perf top's defaults:
    /// a refresh every 2 s with decay, 20 rows in a `--stdio` table, the
    /// terminal UI, rings of [`pmx_record::DEFAULT_MMAP_PAGES`].
    pub fn new(
        events: Vec<RecordEvent>,
        scope: pmx_count::stat::Scope,
        rate: SampleRate,
    ) -> TopOptions {
        TopOptions {
            events,
            record: RecordOptions {
                scope,
                command: vec![],
                inherit: true,
                rate,
                call_graph: CallGraph::None,
                mmap_pages: pmx_record::DEFAULT_MMAP_PAGES,
                duration: None,
                output: "-".into(),
                cmdline: std::env::args().collect(),
                spawn: Default::default(),
                file: Default::default(),
            },
            delay: Duration::from_secs(2),
            refreshes: None,
            zero: false,
            entries: 20,
            max_rows: MAX_ROWS,
            stdio: false,
            metrics: None,
            notes: Vec::new(),
            symbols: Default::default(),
            events_dir_default: Default::default(),
        }
    }
}

/// Why `pmx top` could not run.
#[derive(Debug, thiserror::Error)]
pub enum TopError {
    /// A `-p`/`-t` target that does not exist (bad input).
    #[error("{what} {id} does not exist (no /proc/{id})")]
    NoSuchTask {
        /// "process" or "thread".
        what: &'static str,
        /// Its id.
        id: i32,
    },
    /// The session could not start (events that cannot be opened, with
    /// the reason and the fix).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The terminal or the standard output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `-M` names no metric of this CPU's library (bad input).
    #[error("-M: {0}")]
    Metrics(String),
    /// The stream could not be read (a bug: the session writes it).
    #[error("reading the session's stream: {0}")]
    Stream(String),
}

impl TopError {
    /// The message of a user's mistake (a missing task, options that
    /// cannot work); `None` for a failure.
    pub fn bad_input(&self) -> Option<String> {
        match self {
            TopError::NoSuchTask { .. }
            | TopError::Metrics(_)
            | TopError::Record(RecordError::Invalid(_)) => Some(self.to_string()),
            _ => None,
        }
    }
}

/// How a `pmx top` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopOutcome {
    /// The user quit (`q`, Esc, Ctrl-C) or the `-n` refreshes were shown.
    Quit,
    /// Every `-p`/`-t` target exited.
    TargetsGone,
    /// SIGINT, SIGTERM or SIGHUP (the number).
    Signal(i32),
}

/// Every `-p`/`-t` target exists now (a typo is bad input, said before
/// anything opens).
pub fn check_targets(scope: &Scope) -> Result<(), TopError> {
    let (what, ids) = match scope {
        Scope::Pids(p) => ("process", p),
        Scope::Tids(t) => ("thread", t),
        _ => return Ok(()),
    };
    match ids
        .iter()
        .find(|&&id| id <= 0 || !std::path::Path::new(&format!("/proc/{id}")).exists())
    {
        Some(&id) => Err(TopError::NoSuchTask { what, id }),
        None => Ok(()),
    }
}

/// `-M`'s metrics for the events of `opts` (this machine's library; the
/// definition whose inputs are among the events), or bad input.
pub fn metrics(opts: &TopOptions) -> Result<Option<MetricSet>, TopError> {
    let Some(list) = &opts.metrics else {
        return Ok(None);
    };
    let names: Vec<String> = opts.events.iter().map(|e| e.name.clone()).collect();
    MetricSet::for_recording(list, None, &names, &opts.events_dir_default)
        .map(Some)
        .map_err(|e| TopError::Metrics(e.to_string()))
}

/// The target as the header names it.
pub fn describe(scope: &Scope) -> String {
    let list = |v: &[i32]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match scope {
        Scope::Pids(p) => format!("pid {}", list(p)),
        Scope::Tids(t) => format!("tid {}", list(t)),
        Scope::Cpus(c) if *c == pmx_count::stat::online_cpus() => format!("all CPUs ({})", c.len()),
        Scope::Cpus(c) => {
            let v: Vec<String> = c.iter().map(|x| x.to_string()).collect();
            format!("CPU {}", v.join(","))
        }
        Scope::Command | Scope::AllThreads => "command".to_string(),
    }
}
