//! One stat session: the options built once, then one call that fits,
//! counts and summarizes, with the intervals going to a sink.
//!
//! ```text
//! StatPlan + SessionOptions ──► Session::new (fit onto the counters, check)
//!                                   │
//!                Session::count ────┼──► StatSink::interval (each -I tick)
//!                                   ▼
//!                               Counted { runs, summary, exit_code }
//! ```
//!
//! Every way pmx counts a command goes through it: `pmx stat` (its sink
//! writes the interval rows as they come; the totals are rendered from
//! [`Counted`]), `--regions` (the same `pmx stat`), `pmx tma` (no sink),
//! the A/B runner of `pmx stat --compare` ([`Session::run_once`] per side
//! and round) and the library's [`measure`](https://docs.rs/pmx) call.
//! The MSR backend (`stat_msr`) counts with the same plan and rows
//! through its own device loop.

use super::aggregate::Aggregation;
use super::options::RunOptions;
use super::outcome::{exit_code, RunError, StatRun, Tick};
use super::plan::StatPlan;
use super::repeat::{fit, FitError, Fitted};
use super::summary::{summarize, Summary};
use crate::schedule::CounterBudget;
use pmx_model::topology::Topology;

/// Where a session's intervals go while it counts.
///
/// `interval` is called at each `-I` boundary with the set that was
/// counted (one set unless `--no-multiplex` split the plan) and the
/// deltas; a writer keeps its own errors and reports them when the
/// caller asks, so one failed write never stops the counting.
pub trait StatSink {
    /// One interval of one counter set.
    fn interval(&mut self, set: &StatPlan, tick: &Tick);
}

/// No sink: the intervals are not wanted (totals only).
impl StatSink for () {
    fn interval(&mut self, _set: &StatPlan, _tick: &Tick) {}
}

/// A closure is a sink.
impl<F: FnMut(&StatPlan, &Tick)> StatSink for F {
    fn interval(&mut self, set: &StatPlan, tick: &Tick) {
        self(set, tick)
    }
}

/// Everything a session needs besides the plan, given once.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// What to count and how long: target, interval, duration, hooks.
    pub run: RunOptions,
    /// The rows of the summary: total, per CPU, core, socket, thread.
    pub aggregation: Aggregation,
    /// Runs of the command (perf's `-r N`; at least 1).
    pub repeat: u32,
    /// `--no-multiplex`: split the plan into sets that fit the counters
    /// and run the command once per set.
    pub no_multiplex: bool,
    /// The counters to fit the plan onto (`None`: unknown or not needed,
    /// everything is opened at once and the kernel multiplexes).
    pub budget: Option<CounterBudget>,
    /// The machine's topology, for per-core and per-socket rows.
    pub topology: Option<Topology>,
    /// Install pmx's SIGINT/SIGTERM/SIGHUP handlers for the run, so a
    /// Ctrl-C stops it after the rows already measured (the commands do;
    /// a library caller that keeps its own handlers does not).
    pub signals: bool,
}

/// A plan fitted onto the counters and checked against the options.
#[derive(Debug)]
pub struct Session {
    plan: StatPlan,
    fitted: Fitted,
    opts: SessionOptions,
}

/// What counting gave.
#[derive(Debug)]
pub struct Counted {
    /// One merged run per repeat.
    pub runs: Vec<StatRun>,
    /// The rows, spreads and status a report shows.
    pub summary: Summary,
    /// The command's exit status as a shell gives it (the last run's).
    pub exit_code: i32,
}

impl Session {
    /// Fit `plan` onto `opts.budget` (packing groups, grouping software
    /// events, splitting sets for `--no-multiplex`) and check that the
    /// options can run the fitted sets.
    pub fn new(mut plan: StatPlan, opts: SessionOptions) -> Result<Session, FitError> {
        let repeat = opts.repeat.max(1);
        let fitted = fit(&mut plan, opts.budget.as_ref(), opts.no_multiplex, repeat);
        fitted.check(&opts.run)?;
        Ok(Session { plan, fitted, opts })
    }

    /// The plan as fitted (the rows' event indices point into it).
    pub fn plan(&self) -> &StatPlan {
        &self.plan
    }

    /// The counter sets and the notes on how they were made.
    pub fn fitted(&self) -> &Fitted {
        &self.fitted
    }

    /// The options the session was made with.
    pub fn options(&self) -> &SessionOptions {
        &self.opts
    }

    /// Count: every set once per repeat, each interval to `sink`, then
    /// the summary. A run interrupted by a stop request ends the repeats
    /// with what was measured.
    pub fn count(&self, sink: &mut dyn StatSink) -> Result<Counted, RunError> {
        self.begin();
        let repeat = self.opts.repeat.max(1);
        let runs =
            (self.fitted).run(&self.opts.run, repeat, &mut |set, t| sink.interval(set, t))?;
        let summary = self.summarize(&runs);
        Ok(Counted {
            exit_code: exit_code(&runs, repeat),
            runs,
            summary,
        })
    }

    /// The summary of `runs` made by this session (or merged from several
    /// of its runs).
    pub fn summarize(&self, runs: &[StatRun]) -> Summary {
        let (how, topo) = (self.opts.aggregation, self.opts.topology.as_ref());
        summarize(&self.plan, runs, how, topo, self.opts.repeat.max(1))
    }

    /// Begin counting: with [`SessionOptions::signals`], install the
    /// Ctrl-C handlers and forget an earlier stop request. [`count`]
    /// does this itself; a caller of [`run_once`] calls it once before
    /// its rounds.
    ///
    /// [`count`]: Session::count
    /// [`run_once`]: Session::run_once
    pub fn begin(&self) {
        if self.opts.signals {
            crate::signals::install();
        }
    }

    /// One run of the fitted sets with other run options (another
    /// command: one side of `pmx stat --compare`), no intervals.
    pub fn run_once(&self, run: &RunOptions) -> Result<Vec<StatRun>, RunError> {
        self.fitted.run(run, 1, &mut |_, _| {})
    }
}
