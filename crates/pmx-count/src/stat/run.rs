//! The run: the stages put together. [`run_with`] launches the target
//! held ([`RunTarget`]), opens the plan on it ([`OpenSet`]), starts the
//! counters and releases the command, then waits for the end while the
//! [`Reader`] takes the interval readings, and reads the totals.

use super::clock::IntervalClock;
use super::follow::follow_tasks;
use super::open::OpenSet;
use super::options::RunOptions;
use super::outcome::{Instance, RunError, StatRun, Tick};
use super::perf_options::Start;
use super::plan::StatPlan;
use super::read::{fill_instances, Reader};
use super::target::{RunTarget, Waited};
use super::tasks::slots;
use crate::launch::Exit;
use crate::signals::stop_requested;
use crate::ticker::{self, Home};
use pmx_formats::{EventStatus, Reason};
use pmx_model::count::Count;
use std::time::{Duration, Instant};

/// How long after an interval boundary pmx reads when tickers are in use:
/// their samples are taken on the boundary by the kernel's timer, and
/// waking slightly later finds them in the rings instead of racing them.
/// On a busy CPU here those samples come within 13 µs of the grid (p99
/// 11 µs, `perf record -e cpu-clock -c 10000000`); 200 µs leaves room for
/// a VM's timer and keeps short the delay of a group that must be read
/// directly (its readings are taken this much after the boundary).
fn tick_lag(iv: Duration) -> Duration {
    (iv / 8).min(Duration::from_micros(200))
}

/// Count `plan` once.
pub fn run(plan: &StatPlan, opts: &RunOptions) -> Result<StatRun, RunError> {
    run_with(plan, opts, &mut |_| {})
}

/// Count `plan` once, calling `on_tick` after every interval (`-I`) with
/// the deltas, and once more for the partial last interval.
pub fn run_with(
    plan: &StatPlan,
    opts: &RunOptions,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<StatRun, RunError> {
    // No reset of the stop request here: a signal that came during the
    // setup or between two runs of `-r` must not be forgotten.
    let mut target = RunTarget::launch(opts)?;
    let mut status: Vec<EventStatus> = plan
        .events
        .iter()
        .map(|e| match &e.attr {
            Ok(_) => EventStatus::Counted,
            Err(r) => EventStatus::NotSupported(r.as_str().into()),
        })
        .collect();
    let slots = slots(opts, target.pid());
    let mut set = OpenSet::open(plan, opts, &slots, target.traced, &mut status);
    if set.opened.is_empty() {
        if let Some(h) = set.hard_error.take() {
            target.abandon();
            return Err(RunError::Open(Box::new(h)));
        }
    }
    let start = Instant::now();
    let start_ns = ticker::monotonic_ns();
    // Start: the command's counters start at exec; others now; with -D
    // all of them later (or never).
    let deferred = opts.hooks.start != Start::Now;
    if !deferred {
        set.enable(plan, target.by_exec)?;
    }
    if let Some(name) = opts.command.first() {
        target.release(name)?;
    }
    if let Start::After(d) = opts.hooks.start {
        wait_unless_ended(&target, d);
        set.enable(plan, false)?;
    }
    let mut exit = None;
    if target.traced {
        exit = follow_tasks(target.pid().unwrap_or(0), plan, &mut set);
    }
    let clock = IntervalClock::new(start, opts.duration, opts.interval, opts.interval_count);
    let mut counting = Counting::new(set, clock, start_ns, status);
    let end = counting.wait(&target, on_tick)?;
    exit = end.exit.or(exit);
    if end.ended_by_us {
        exit = target.stop().or(exit);
    }
    crate::signals::set_child(0);
    let (instances, status, elapsed) = counting.finish(plan, on_tick)?;
    Ok(StatRun {
        instances,
        status,
        elapsed,
        exit,
        interrupted: end.interrupted,
    })
}

/// Wait `d` (`-D`), less when the command ends first (its exit is left
/// for the read loop to collect).
fn wait_unless_ended(target: &RunTarget, d: Duration) {
    use std::os::fd::AsRawFd;
    let Some(fd) = target.pidfd() else {
        std::thread::sleep(d);
        return;
    };
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one pollfd we own, for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// How the wait ended.
#[derive(Debug, Default)]
struct Ending {
    /// The command ended so.
    exit: Option<Exit>,
    /// Cut short by a signal, or by the duration while a command ran.
    interrupted: bool,
    /// The duration or the interval count ended the run (the command, if
    /// any, must be stopped).
    ended_by_us: bool,
}

/// The read loop's state: the counters, their last readings and the
/// buffers of one interval, all reused.
struct Counting {
    set: OpenSet,
    reader: Reader,
    clock: IntervalClock,
    /// How long after a boundary to read it (tickers' samples must be in).
    lag: Duration,
    status: Vec<EventStatus>,
    /// The readings at the previous boundary, and at this one.
    prev: Vec<Count>,
    cur: Vec<Count>,
    /// This interval's deltas as instances.
    tick_instances: Vec<Instance>,
    /// Moves the loop next to the group it would otherwise interrupt most.
    home: Option<Home>,
    /// The end of the last interval, since the start.
    last_tick_at: Duration,
}

impl Counting {
    fn new(set: OpenSet, clock: IntervalClock, start_ns: u64, status: Vec<EventStatus>) -> Self {
        let n = set.opened.len();
        let lag = match clock.interval {
            Some(iv) if !set.tickers.is_empty() => tick_lag(iv),
            _ => Duration::ZERO,
        };
        Counting {
            reader: Reader::new(&set, clock.start, start_ns),
            home: (!set.tickers.is_empty()).then(|| Home::new(set.tickers.len())),
            set,
            clock,
            lag,
            status,
            prev: vec![Count::default(); n],
            cur: Vec::with_capacity(n),
            tick_instances: Vec::with_capacity(n),
            last_tick_at: Duration::ZERO,
        }
    }

    /// Wait for the end: the command, the watched tasks, the duration,
    /// the interval count or a signal; read at every interval boundary.
    fn wait(
        &mut self,
        target: &RunTarget,
        on_tick: &mut dyn FnMut(&Tick),
    ) -> Result<Ending, RunError> {
        let mut end = Ending::default();
        if target.traced {
            // The traced command has already been followed to its end.
            return Ok(end);
        }
        let pidfd = target.pidfd();
        let command = target.has_command();
        loop {
            match target.poll() {
                Waited::Running => {}
                Waited::Exited(e) => {
                    end.exit = Some(e);
                    break;
                }
                Waited::Gone => break,
            }
            if stop_requested() {
                end.interrupted = true;
                // A stop requested during the setup reaches it now.
                crate::signals::forward_pending();
                // The command got the signal too: wait for it to end.
                if !command {
                    break;
                }
            }
            if target.tasks_gone() {
                break;
            }
            let now = Instant::now();
            if self.clock.expired(now) {
                end.interrupted |= command;
                end.ended_by_us = true;
                break;
            }
            if let Some(t) = self.clock.due(now, self.lag) {
                self.tick(t, on_tick)?;
                if self.clock.ticked(t, now) {
                    end.ended_by_us = true;
                    break;
                }
                continue;
            }
            let mut timeout = self
                .clock
                .next_wake(self.lag)
                .map(|w| w.saturating_duration_since(now));
            if !command || pidfd.is_none() || stop_requested() {
                // Nothing to wake us but time: re-check the tasks regularly.
                let cap = Duration::from_millis(if command { 5 } else { 20 });
                timeout = Some(timeout.map_or(cap, |t| t.min(cap)));
            }
            poll_fd(pidfd.as_ref(), timeout);
        }
        Ok(end)
    }

    /// Read the boundary `t` and hand its deltas to `on_tick`.
    fn tick(&mut self, t: Instant, on_tick: &mut dyn FnMut(&Tick)) -> std::io::Result<()> {
        self.reader.read_at(&mut self.set, Some(t), &mut self.cur)?;
        let read_at = Instant::now();
        let deltas = self
            .cur
            .iter()
            .zip(&self.prev)
            .map(|(c, p)| c.delta_since(p));
        fill_instances(&self.set.opened, &mut self.tick_instances, deltas);
        std::mem::swap(&mut self.prev, &mut self.cur);
        if let Some(h) = self.home.as_mut() {
            h.after_tick(self.set.tickers.iter().map(|(t, _)| t));
        }
        let at = t - self.clock.start;
        self.last_tick_at = at;
        on_tick(&Tick {
            index: self.clock.ticks + 1,
            at,
            read_at: read_at.saturating_duration_since(self.clock.start),
            last: false,
            instances: &self.tick_instances,
            status: &self.status,
        });
        Ok(())
    }

    /// Stop the counters and read the totals; hand the partial last
    /// interval to `on_tick`. Returns the instances, the settled status
    /// and the elapsed time.
    fn finish(
        mut self,
        plan: &StatPlan,
        on_tick: &mut dyn FnMut(&Tick),
    ) -> Result<(Vec<Instance>, Vec<EventStatus>, Duration), RunError> {
        let mut elapsed = self.clock.start.elapsed();
        self.set.disable();
        self.reader.read_at(&mut self.set, None, &mut self.cur)?;
        let interval = self.clock.interval.is_some();
        // `--interval-count N` measures exactly N intervals: the totals are
        // the last one's readings, not what trickled in until the counters
        // stopped.
        let count_reached = interval && self.clock.count_reached();
        let finals = if count_reached {
            elapsed = self.last_tick_at;
            &self.prev
        } else {
            &self.cur
        };
        if interval {
            let deltas = finals.iter().zip(&self.prev).map(|(c, p)| c.delta_since(p));
            fill_instances(&self.set.opened, &mut self.tick_instances, deltas);
            // The partial last interval, unless the last tick just happened.
            let ticks = self.clock.ticks;
            let any = self.tick_instances.iter().any(|d| d.count.enabled > 0);
            if !count_reached && (any || ticks == 0) {
                on_tick(&Tick {
                    index: ticks + 1,
                    at: elapsed,
                    read_at: elapsed,
                    last: true,
                    instances: &self.tick_instances,
                    status: &self.status,
                });
            }
        }
        let mut instances = Vec::new();
        fill_instances(&self.set.opened, &mut instances, finals.iter().copied());
        settle_status(plan, &mut self.status, &instances);
        Ok((instances, self.status, elapsed))
    }
}

/// Events that were meant to count but have no counter, or whose counters
/// never ran, say why.
fn settle_status(plan: &StatPlan, status: &mut [EventStatus], instances: &[Instance]) {
    let planned: Vec<bool> = (0..plan.events.len())
        .map(|e| plan.groups.iter().any(|g| g.members.contains(&e)))
        .collect();
    for (i, st) in status.iter_mut().enumerate() {
        if *st != EventStatus::Counted || !planned[i] {
            continue;
        }
        let mine: Vec<&Instance> = instances.iter().filter(|x| x.event == i).collect();
        if mine.is_empty() {
            *st = EventStatus::NotCounted("no counter could be opened for it".into());
        } else if mine.iter().all(|x| x.count.running == 0) {
            *st = EventStatus::NotCounted(if mine.iter().all(|x| x.count.enabled == 0) {
                Reason::new("never enabled: the measured task did not run")
            } else {
                Reason::new(
                    "never scheduled onto a counter (all counters busy, or its group did not fit)",
                )
            });
        }
    }
}

/// Sleep until `fd` is readable or `timeout` passes (`None`: no timeout);
/// a signal ends the sleep early. Microsecond resolution, so interval
/// boundaries are met to the timer's precision.
fn poll_fd(fd: Option<&std::os::fd::OwnedFd>, timeout: Option<Duration>) {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.map_or(-1, |f| f.as_raw_fd()),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one pollfd (a negative fd is ignored), a timespec we own or
    // null, no signal mask.
    unsafe { libc::ppoll(&mut p, 1, tp, std::ptr::null()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::{plan, Scope};

    fn software_plan() -> StatPlan {
        let cpu = pmx_sys::caps::cpu_id(&pmx_sys::NativeCpuid).expect("cpuid");
        let target = pmx_events::Target { cpu, host: true };
        let db = pmx_events::Database::light(target, std::path::Path::new("/"));
        let groups = crate::parse_event_list("task-clock,page-faults").expect("list");
        let mut plan = plan(&groups, &db).expect("plan");
        plan.group_software();
        plan
    }

    fn command(argv: &[&str], interval: Option<Duration>) -> RunOptions {
        RunOptions {
            scope: Scope::Command,
            command: argv.iter().map(|s| s.to_string()).collect(),
            inherit: true,
            pin: None,
            duration: None,
            interval,
            interval_count: None,
            trace_tasks: false,
            hooks: Default::default(),
            tickers: true,
            spawn: Default::default(),
        }
    }

    /// The command is counted from its exec to its exit, and its exit
    /// status is kept.
    #[test]
    fn a_command_is_counted_and_its_exit_kept() {
        let plan = software_plan();
        let r = run(&plan, &command(&["sh", "-c", "exit 3"], None)).expect("run");
        assert_eq!(r.exit, Some(Exit::Code { code: 3 }));
        assert!(!r.interrupted);
        assert_eq!(r.status, [EventStatus::Counted, EventStatus::Counted]);
        assert_eq!(r.instances.len(), 2);
        assert!(r.instances.iter().all(|i| i.count.value > 0), "{r:?}");
    }

    /// Interval deltas, the partial last one included, add up exactly to
    /// the totals; indices count up and only the last is marked so.
    #[test]
    fn intervals_add_up_to_the_totals() {
        let plan = software_plan();
        let opts = command(&["sleep", "0.07"], Some(Duration::from_millis(20)));
        let mut sums = vec![0u64; 2];
        let mut ticks = Vec::new();
        let r = run_with(&plan, &opts, &mut |t| {
            for (s, i) in sums.iter_mut().zip(t.instances) {
                *s += i.count.value;
            }
            ticks.push((t.index, t.last));
        })
        .expect("run");
        let totals: Vec<u64> = r.instances.iter().map(|i| i.count.value).collect();
        assert_eq!(sums, totals);
        assert!(ticks.len() >= 2, "{ticks:?}");
        for (k, &(index, last)) in ticks.iter().enumerate() {
            assert_eq!(index, k as u64 + 1);
            assert_eq!(last, k + 1 == ticks.len());
        }
    }

    #[test]
    fn a_missing_command_is_an_exec_error() {
        let plan = software_plan();
        match run(&plan, &command(&["/nonexistent/pmx-test"], None)) {
            Err(RunError::Exec { cmd, reason }) => {
                assert_eq!(cmd, "/nonexistent/pmx-test");
                assert_eq!(reason, "command not found");
            }
            other => panic!("{other:?}"),
        }
    }
}
