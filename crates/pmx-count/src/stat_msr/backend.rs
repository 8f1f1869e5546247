//! The msr devices as a stat session's counter backend ([`MsrBackend`]):
//! [`MsrStat::start`] and [`MsrRunning::run`](super::MsrRunning::run)
//! behind [`CounterBackend`], so `pmx stat --backend msr` is the same
//! [`Session`](crate::stat::Session) as perf's.

use super::counting::MsrRunning;
use super::error::{device_message, Error};
use super::session::{MsrRunOptions, MsrStat};
use crate::stat::{BackendRuns, CounterBackend, RunError, RunOptions, StatPlan, StatSink};
use pmx_msr::MsrRoot;
use pmx_sys::SysRoot;

/// The planned events and the devices they are counted through: give it
/// to [`Session::with_backend`](crate::stat::Session::with_backend) with
/// options whose [`RunOptions`] name the command, `--pin`, the duration
/// and the intervals (its scope is the planned CPUs).
#[derive(Debug)]
pub struct MsrBackend {
    stat: MsrStat,
    root: MsrRoot,
    sys: SysRoot,
    force: bool,
    /// Started by [`CounterBackend::start`], not yet run.
    started: Option<MsrRunning>,
}

impl MsrBackend {
    /// Count `stat` through the devices under `root`, checking `/proc`
    /// under `sys` for other users of the counters; `force`: take the
    /// counters over anyway (see the module documentation of
    /// [`crate::stat_msr`]).
    pub fn new(stat: MsrStat, root: MsrRoot, sys: SysRoot, force: bool) -> MsrBackend {
        MsrBackend {
            stat,
            root,
            sys,
            force,
            started: None,
        }
    }

    /// The options of one msr run of `run`.
    fn options(&self, run: &RunOptions) -> MsrRunOptions {
        MsrRunOptions {
            root: self.root.clone(),
            sys: self.sys.clone(),
            force: self.force,
            command: run.command.clone(),
            pin: run.pin.clone(),
            duration: run.duration,
            interval: run.interval,
            interval_count: run.interval_count,
            spawn: run.spawn,
        }
    }

    /// The planned events.
    pub fn stat(&self) -> &MsrStat {
        &self.stat
    }
}

/// The session's error as a run's: the command that cannot run is
/// perf's `Exec` (exit 127); the rest in one sentence.
fn run_error(e: Error) -> RunError {
    match e {
        Error::Exec { cmd, reason } => RunError::Exec { cmd, reason },
        e => RunError::Backend {
            message: e.message(),
            bad_input: e.is_bad_input(),
        },
    }
}

impl CounterBackend for MsrBackend {
    fn plan(&self) -> &StatPlan {
        &self.stat.plan
    }

    /// The msr session defers SIGINT/SIGTERM/SIGHUP itself and puts its
    /// registers back from an async-signal-safe handler on a second one.
    fn own_signals(&self) -> bool {
        true
    }

    fn start(&mut self, run: &RunOptions) -> Result<(), RunError> {
        let opts = self.options(run);
        self.started = Some(self.stat.start(&opts).map_err(run_error)?);
        Ok(())
    }

    fn count(
        &mut self,
        run: &RunOptions,
        repeat: u32,
        sink: &mut dyn StatSink,
    ) -> Result<BackendRuns, RunError> {
        let opts = self.options(run);
        let mut out = BackendRuns::default();
        for _ in 0..repeat.max(1) {
            let running = match self.started.take() {
                Some(started) => started,
                None => self.stat.start(&opts).map_err(run_error)?,
            };
            let plan = &self.stat.plan;
            let outcome = running
                .run(&mut |t| sink.interval(plan, t))
                .map_err(run_error)?;
            let stop = outcome.run.interrupted;
            out.runs.push(outcome.run);
            out.notes = outcome.notes;
            if let Some(e) = outcome.restore_error {
                let e = device_message(&e);
                out.late_error = Some(format!("putting the PMU registers back: {e}"));
            }
            if stop || out.late_error.is_some() {
                break;
            }
        }
        Ok(out)
    }
}
