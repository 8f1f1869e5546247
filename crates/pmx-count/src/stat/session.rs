//! One stat session: the options built once, then one call that fits,
//! counts and summarizes, with the intervals going to a sink.
//!
//! ```text
//! StatPlan + SessionOptions ──► Session::new (fit onto the counters, check)  ─┐
//! a CounterBackend + SessionOptions ──► Session::with_backend (msr)           ─┤
//!                                                                              │
//!                Session::count ──► StatSink::interval (each -I tick)   ◄─────┘
//!                                   ▼
//!                               Counted { runs, summary, exit_code, notes }
//! ```
//!
//! Every way pmx counts a command goes through it: `pmx stat` with either
//! backend (its sink writes the interval rows as they come; the totals
//! are rendered from [`Counted`]), `--regions` (the same `pmx stat`),
//! `pmx tma` (no sink), the A/B runner of `pmx stat --compare`
//! ([`Session::run_once`] per side and round) and the library's
//! [`measure`](https://docs.rs/pmx) call. The counters are reached through
//! a [`CounterBackend`]: perf's (`perf_event_open`, what [`Session::new`]
//! makes) or the msr devices' (`crate::stat_msr::MsrBackend`).

use super::aggregate::Aggregation;
use super::backend::{CounterBackend, PerfBackend, StatSink};
use super::options::RunOptions;
use super::outcome::{exit_code, RunError, StatRun};
use super::plan::StatPlan;
use super::repeat::{fit, FitError, Fitted};
use super::summary::{summarize, Summary};
use crate::schedule::CounterBudget;
use pmx_model::topology::Topology;

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
    /// everything is opened at once and the kernel multiplexes; perf's
    /// backend only, as `no_multiplex`).
    pub budget: Option<CounterBudget>,
    /// The machine's topology, for per-core and per-socket rows.
    pub topology: Option<Topology>,
    /// Install pmx's SIGINT/SIGTERM/SIGHUP handlers for the run, so a
    /// Ctrl-C stops it after the rows already measured (the commands do;
    /// a library caller that keeps its own handlers does not). A backend
    /// with handlers of its own ([`CounterBackend::own_signals`]: msr's,
    /// which restore its registers) gets none from the session.
    pub signals: bool,
}

/// A plan on its counter backend, checked against the options.
#[derive(Debug)]
pub struct Session {
    backend: Box<dyn CounterBackend>,
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
    /// The backend's notes for the report (how the plan was fitted; what
    /// the msr backend programmed and put back, its energy).
    pub notes: Vec<String>,
    /// An error met after counting (the counts are valid): report it
    /// after them.
    pub late_error: Option<String>,
}

impl Session {
    /// Fit `plan` onto `opts.budget` (packing groups, grouping software
    /// events, splitting sets for `--no-multiplex`) and check that the
    /// options can run the fitted sets: a session over perf's backend.
    pub fn new(mut plan: StatPlan, opts: SessionOptions) -> Result<Session, FitError> {
        let repeat = opts.repeat.max(1);
        let fitted = fit(&mut plan, opts.budget.as_ref(), opts.no_multiplex, repeat);
        fitted.check(&opts.run)?;
        let backend = Box::new(PerfBackend { plan, fitted });
        Ok(Session { backend, opts })
    }

    /// A session over another counter backend (the msr devices'), which
    /// holds its own plan; `opts.budget` and `opts.no_multiplex` are
    /// perf's and not read.
    pub fn with_backend(backend: Box<dyn CounterBackend>, opts: SessionOptions) -> Session {
        Session { backend, opts }
    }

    /// The plan as fitted (the rows' event indices point into it; the
    /// msr backend sets its energy scales when counting starts).
    pub fn plan(&self) -> &StatPlan {
        self.backend.plan()
    }

    /// The counter sets and the notes on how they were made (perf's
    /// backend; `None` for another).
    pub fn fitted(&self) -> Option<&Fitted> {
        self.backend.fitted()
    }

    /// The options the session was made with.
    pub fn options(&self) -> &SessionOptions {
        &self.opts
    }

    /// Get the counters ready before [`Session::count`]: the msr
    /// backend opens its devices, checks the counters are free, holds the
    /// command and programs the registers (its own signal handling from
    /// here on); perf's backend does all that in `count`. A caller that
    /// writes something before the counts (an interval header) calls it
    /// first, so a failure to start leaves nothing written. Optional:
    /// `count` starts what was not started.
    pub fn start(&mut self) -> Result<(), RunError> {
        self.backend.start(&self.opts.run)
    }

    /// Count: every set once per repeat, each interval to `sink`, then
    /// the summary. A run interrupted by a stop request ends the repeats
    /// with what was measured.
    pub fn count(&mut self, sink: &mut dyn StatSink) -> Result<Counted, RunError> {
        self.begin();
        let repeat = self.opts.repeat.max(1);
        let counted = self.backend.count(&self.opts.run, repeat, sink)?;
        let summary = self.summarize(&counted.runs);
        Ok(Counted {
            exit_code: exit_code(&counted.runs, repeat),
            runs: counted.runs,
            summary,
            notes: counted.notes,
            late_error: counted.late_error,
        })
    }

    /// The summary of `runs` made by this session (or merged from several
    /// of its runs).
    pub fn summarize(&self, runs: &[StatRun]) -> Summary {
        let (how, topo) = (self.opts.aggregation, self.opts.topology.as_ref());
        summarize(self.plan(), runs, how, topo, self.opts.repeat.max(1))
    }

    /// Begin counting: with [`SessionOptions::signals`] (and a backend
    /// without handlers of its own), install the Ctrl-C handlers and
    /// forget an earlier stop request. [`count`] does this itself; a
    /// caller of [`run_once`] calls it once before its rounds.
    ///
    /// [`count`]: Session::count
    /// [`run_once`]: Session::run_once
    pub fn begin(&self) {
        if self.opts.signals && !self.backend.own_signals() {
            crate::signals::install();
        }
    }

    /// One run with other run options (another command: one side of
    /// `pmx stat --compare`), no intervals.
    pub fn run_once(&mut self, run: &RunOptions) -> Result<Vec<StatRun>, RunError> {
        Ok(self.backend.count(run, 1, &mut ())?.runs)
    }
}
