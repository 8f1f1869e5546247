//! What to count and how: the [`Scope`] and the [`RunOptions`] of a run.

use crate::launch::Spawn;
use std::time::Duration;

/// What to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The launched command (and its children when `inherit`).
    Command,
    /// These processes: every thread of each.
    Pids(Vec<i32>),
    /// These threads.
    Tids(Vec<i32>),
    /// Every task on these CPUs.
    Cpus(Vec<u32>),
    /// Every thread of every process, each counted on its own wherever
    /// it runs (perf's `--per-thread -a`): the threads listed from
    /// `/proc` when the counters open, those that exit meanwhile left out.
    AllThreads,
}

/// Options of one counting run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// What to count.
    pub scope: Scope,
    /// Command to run (required for `Scope::Command`; optional otherwise).
    pub command: Vec<String>,
    /// Children inherit the counters.
    pub inherit: bool,
    /// Pin the command to these CPUs.
    pub pin: Option<Vec<u32>>,
    /// Stop after this long (without a command, or to cut it short).
    pub duration: Option<Duration>,
    /// Read every this often (`-I`).
    pub interval: Option<Duration>,
    /// Stop after this many intervals.
    pub interval_count: Option<u64>,
    /// Count each thread and process of the command on its own
    /// (`--per-thread` with a command): pmx follows the command with
    /// ptrace, and opens counters on every new task before it first runs.
    pub trace_tasks: bool,
    /// When counting starts, and what runs around each run (`-D`,
    /// `--pre`, `--post`, `-S`).
    pub hooks: super::perf_options::RunHooks,
    /// System-wide interval reads (`-a`/`-C` with `-I`) may take each
    /// CPU's group from its ticker's ring samples; `false` reads each
    /// group directly (the CLI sets it from `PMX_NO_TICKER`, to compare).
    pub tickers: bool,
    /// How the command is started (a plain fork under valgrind: the CLI
    /// decides from `LD_PRELOAD`, [`Spawn::for_preload`]).
    pub spawn: Spawn,
}

impl RunOptions {
    /// Count `command` from its exec to its exit, children included, once
    /// per run: no pinning, no intervals, no hooks.
    pub fn for_command(command: Vec<String>) -> RunOptions {
        RunOptions {
            scope: Scope::Command,
            command,
            inherit: true,
            pin: None,
            duration: None,
            interval: None,
            interval_count: None,
            trace_tasks: false,
            hooks: Default::default(),
            tickers: true,
            spawn: Spawn::Clone,
        }
    }
}
