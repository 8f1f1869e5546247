//! The counter backends a [`Session`](super::Session) counts through.
//!
//! A backend owns the reported plan and knows how to reach the counters:
//! it runs the command (or waits for the duration) `repeat` times, hands
//! each interval to the session's sink and gives back one [`StatRun`] per
//! repeat in the shape every renderer reads (one [`Instance`] per counter
//! per CPU or task). Two exist:
//!
//! - perf (`perf_event_open`), made by [`Session::new`](super::Session::new):
//!   the plan fitted onto the counters ([`Fitted`]) and every set run
//!   once per repeat ([`Fitted::run`]);
//! - msr (`/dev/cpu/N/msr`), `crate::stat_msr::MsrBackend`, given to
//!   [`Session::with_backend`](super::Session::with_backend): the PMU
//!   programmed directly, its registers put back at the end and on a
//!   signal (its own async-signal-safe handler, so the session installs
//!   none for it: [`CounterBackend::own_signals`]).
//!
//! [`Instance`]: super::Instance

use super::options::RunOptions;
use super::outcome::Tick;
use super::outcome::{RunError, StatRun};
use super::plan::StatPlan;
use super::repeat::Fitted;

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

/// What a backend's count gave besides the runs.
#[derive(Debug, Default)]
pub struct BackendRuns {
    /// One run per repeat (fewer when a stop was requested).
    pub runs: Vec<StatRun>,
    /// Notes for the report (how the plan was fitted; what the msr
    /// backend programmed, put back and measured).
    pub notes: Vec<String>,
    /// An error met after the counts were taken (the msr registers not
    /// all put back): the counts are valid, the caller reports it after
    /// them.
    pub late_error: Option<String>,
}

/// A way to reach the counters (see the module documentation).
pub trait CounterBackend: std::fmt::Debug {
    /// The events as reported: the rows' event indices point into it. A
    /// backend may set scales in it when it starts (the msr backend's
    /// energy units), so read it after [`CounterBackend::count`].
    fn plan(&self) -> &StatPlan;

    /// How perf's backend fitted the plan onto the counters; `None` for
    /// a backend that does not fit.
    fn fitted(&self) -> Option<&Fitted> {
        None
    }

    /// The backend handles SIGINT/SIGTERM/SIGHUP itself while it counts:
    /// the session then installs none of its own.
    fn own_signals(&self) -> bool {
        false
    }

    /// Get the counters ready for the first run of `run` (the msr
    /// backend opens its devices, checks who else uses the counters,
    /// launches the command held and programs the registers); perf's
    /// opens everything in [`CounterBackend::count`]. A failure here has
    /// counted nothing and changed nothing.
    fn start(&mut self, run: &RunOptions) -> Result<(), RunError> {
        let _ = run;
        Ok(())
    }

    /// Count `repeat` runs of `run` (the first one over what
    /// [`CounterBackend::start`] made ready, if it was called), each
    /// interval to `sink` with the set counted.
    fn count(
        &mut self,
        run: &RunOptions,
        repeat: u32,
        sink: &mut dyn StatSink,
    ) -> Result<BackendRuns, RunError>;
}

/// perf's backend: the plan and its fitted sets.
#[derive(Debug)]
pub(super) struct PerfBackend {
    pub(super) plan: StatPlan,
    pub(super) fitted: Fitted,
}

impl CounterBackend for PerfBackend {
    fn plan(&self) -> &StatPlan {
        &self.plan
    }

    fn fitted(&self) -> Option<&Fitted> {
        Some(&self.fitted)
    }

    fn count(
        &mut self,
        run: &RunOptions,
        repeat: u32,
        sink: &mut dyn StatSink,
    ) -> Result<BackendRuns, RunError> {
        let runs = self
            .fitted
            .run(run, repeat, &mut |set, t| sink.interval(set, t))?;
        Ok(BackendRuns {
            runs,
            notes: self.fitted.notes.clone(),
            late_error: None,
        })
    }
}
