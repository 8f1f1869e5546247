//! Counting: the programmed session read every second and at every
//! interval boundary ([`MsrRunning::run`]), deltas and package energy
//! turned into the perf backend's instances, the notes of the end.

use super::child::{nap, Child};
use super::error::Error;
use crate::stat::{EventStatus, Instance, IntervalClock, StatRun, Tick};
use pmx_model::count::Count;
use pmx_model::topology::format_cpu_list;
use pmx_msr::{CounterReading, EnergyMeter, MsrError, Session};
use std::time::{Duration, Instant};

/// Read the counters at least this often, intervals or not, so a counter
/// cannot wrap twice between two reads.
const READ_EVERY: Duration = Duration::from_secs(1);

/// What a finished msr run gives back besides the counts.
#[derive(Debug)]
pub struct MsrOutcome {
    /// The totals, in the perf backend's shape.
    pub run: StatRun,
    /// For the report, in order: what `force` took over, how many
    /// registers were programmed and put back on which CPUs, the session's
    /// notes, and each package's energy and average power.
    pub notes: Vec<String>,
    /// Putting the registers back failed (the counts are still valid).
    pub restore_error: Option<MsrError>,
}

/// The session and what has been read from it.
#[derive(Debug)]
pub(super) struct Counting {
    pub(super) session: Session,
    pub(super) meter: Option<EnergyMeter>,
    /// Reported event of each of the plan's events.
    pub(super) event_of: Vec<usize>,
    /// Reported events that are package energy.
    pub(super) energy_events: Vec<usize>,
    /// Reported events that are package power (microwatts, scale 1e-6).
    pub(super) power_events: Vec<usize>,
    /// Energy values are nanojoules (packages with different units), not
    /// energy units.
    pub(super) nanojoules: bool,
    /// Joules per energy value.
    pub(super) energy_scale: f64,
    pub(super) buf: Vec<CounterReading>,
    /// Per plan slot: since the last interval, and since the start.
    pub(super) pending: Vec<u64>,
    pub(super) total: Vec<u64>,
    /// Per package: the same for energy.
    pub(super) e_pending: Vec<u64>,
    pub(super) e_total: Vec<u64>,
}

impl Counting {
    pub(super) fn read(&mut self) -> Result<(), MsrError> {
        self.session.read_into(&mut self.buf)?;
        for (i, r) in self.buf.iter().enumerate() {
            self.pending[i] = self.pending[i].wrapping_add(r.delta);
            self.total[i] = self.total[i].wrapping_add(r.delta);
        }
        if let Some(meter) = self.meter.as_mut() {
            let samples = meter.sample(self.session.device())?;
            let units = meter.units();
            for (i, s) in samples.iter().enumerate() {
                let n = if self.nanojoules {
                    (s.joules * 1e9).round() as u64
                } else {
                    let unit = units.get(i).map_or(1.0, |u| u.energy_joules);
                    (s.joules / unit).round() as u64
                };
                self.e_pending[i] = self.e_pending[i].wrapping_add(n);
                self.e_total[i] = self.e_total[i].wrapping_add(n);
            }
        }
        Ok(())
    }

    /// Instances from per-slot and per-package values over `ns`.
    fn instances(&self, counts: &[u64], energy: &[u64], ns: u64) -> Vec<Instance> {
        let count = |value: u64| Count {
            value,
            enabled: ns,
            running: ns,
        };
        let mut out: Vec<Instance> = self
            .session
            .plan()
            .slots
            .iter()
            .zip(counts)
            .map(|(slot, &v)| Instance {
                event: self.event_of[slot.event],
                cpu: slot.cpu as i32,
                tid: -1,
                count: count(v),
            })
            .collect();
        if let Some(meter) = &self.meter {
            for &e in &self.energy_events {
                for (d, &v) in meter.domains().iter().zip(energy) {
                    out.push(Instance {
                        event: e,
                        cpu: d.cpu as i32,
                        tid: -1,
                        count: count(v),
                    });
                }
            }
            let units = meter.units();
            let seconds = ns as f64 * 1e-9;
            for &p in &self.power_events {
                for (i, (d, &v)) in meter.domains().iter().zip(energy).enumerate() {
                    let joules = if self.nanojoules {
                        v as f64 * 1e-9
                    } else {
                        v as f64 * units.get(i).map_or(1.0, |u| u.energy_joules)
                    };
                    let microwatts = if seconds > 0.0 {
                        (joules / seconds * 1e6).round() as u64
                    } else {
                        0
                    };
                    out.push(Instance {
                        event: p,
                        cpu: d.cpu as i32,
                        tid: -1,
                        count: count(microwatts),
                    });
                }
            }
        }
        out
    }

    /// The interval's instances; starts the next interval.
    fn take_interval(&mut self, ns: u64) -> Vec<Instance> {
        let v = self.instances(&self.pending, &self.e_pending, ns);
        self.pending.iter_mut().for_each(|x| *x = 0);
        self.e_pending.iter_mut().for_each(|x| *x = 0);
        v
    }

    fn totals(&self, ns: u64) -> Vec<Instance> {
        self.instances(&self.total, &self.e_total, ns)
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A started msr session: the counters programmed, the command (if any)
/// held before exec. Dropping it restores the registers, then stops and
/// reaps the command.
#[derive(Debug)]
pub struct MsrRunning {
    // Field order is drop order: the session restores before the command
    // is stopped.
    pub(super) counting: Counting,
    pub(super) child: Option<Child>,
    pub(super) status: Vec<EventStatus>,
    pub(super) notes: Vec<String>,
    pub(super) cpus: Vec<u32>,
    pub(super) command: String,
    pub(super) duration: Option<Duration>,
    pub(super) interval: Option<Duration>,
    pub(super) interval_count: Option<u64>,
}

impl MsrRunning {
    /// Release the command and count until it ends, the duration passes,
    /// the interval count is reached or a signal arrives; call `on_tick`
    /// after every interval with its deltas (each instance's `enabled` and
    /// `running` are the interval's measured length in ns), and once more
    /// for the partial last interval unless the interval count ended the
    /// run. Then restore the registers.
    pub fn run(mut self, on_tick: &mut dyn FnMut(&Tick)) -> Result<MsrOutcome, Error> {
        // Counting runs from here.
        let start = Instant::now();
        if let Some(c) = self.child.as_mut() {
            if let Err(reason) = c.release() {
                self.counting.session.restore()?;
                return Err(Error::Exec {
                    cmd: self.command.clone(),
                    reason,
                });
            }
        }
        let mut clock =
            IntervalClock::new(start, self.duration, self.interval, self.interval_count);
        let mut end = self.count(&mut clock, on_tick);
        if let Some(c) = self.child.as_mut() {
            if end.failure.is_some() {
                c.stop(libc::SIGTERM);
            } else if end.ended_by_us {
                c.stop(libc::SIGINT);
            }
        }
        if end.failure.is_none() {
            if let Err(e) = self.counting.read() {
                end.failure = Some(e);
            }
        }
        let now = Instant::now();
        let elapsed = now - start;
        if end.failure.is_none() && self.interval.is_some() && !clock.count_reached() {
            // The partial last interval, unless the last tick just ended
            // the run.
            let instances = self.counting.take_interval(ns(now - end.interval_start));
            on_tick(&Tick {
                index: clock.ticks + 1,
                at: elapsed,
                read_at: elapsed,
                last: true,
                instances: &instances,
                status: &self.status,
            });
        }
        let restored = self.counting.session.restore();
        if let Some(e) = end.failure {
            return Err(Error::Read(e));
        }
        let run = StatRun {
            instances: self.counting.totals(ns(elapsed)),
            status: self.status.clone(),
            elapsed,
            exit: self.child.as_ref().and_then(|c| c.exit),
            interrupted: end.interrupted,
        };
        let notes = self.notes(restored.is_ok(), elapsed);
        Ok(MsrOutcome {
            run,
            notes,
            restore_error: restored.err(),
        })
    }

    /// The read loop: read the counters every [`READ_EVERY`] (before they
    /// can wrap) and at every interval boundary, until the end.
    fn count(&mut self, clock: &mut IntervalClock, on_tick: &mut dyn FnMut(&Tick)) -> MsrEnding {
        let (counting, child, status) = (&mut self.counting, &mut self.child, &self.status);
        let wake_fd = child
            .as_ref()
            .and_then(|c| crate::launch::pidfd_open(c.pid()));
        let mut next_read = clock.start + READ_EVERY;
        let mut end = MsrEnding {
            interval_start: clock.start,
            interrupted: false,
            ended_by_us: false,
            failure: None,
        };
        let mut forwarded = false;
        loop {
            if child.as_mut().is_some_and(|c| c.poll()) {
                break;
            }
            if let Some(sig) = counting.session.interrupted() {
                end.interrupted = true;
                match child.as_ref() {
                    // From a terminal the command got it too; from kill(1)
                    // only pmx did.
                    Some(c) if !forwarded => {
                        c.signal(sig);
                        forwarded = true;
                    }
                    Some(_) => {}
                    None => break,
                }
            }
            let now = Instant::now();
            if clock.expired(now) {
                end.interrupted |= child.is_some();
                end.ended_by_us = true;
                break;
            }
            if let Some(t) = clock.due(now, Duration::ZERO) {
                if let Err(e) = counting.read() {
                    end.failure = Some(e);
                    break;
                }
                let read_at = Instant::now();
                let span = ns(read_at - end.interval_start);
                end.interval_start = read_at;
                let instances = counting.take_interval(span);
                on_tick(&Tick {
                    index: clock.ticks + 1,
                    at: t - clock.start,
                    read_at: read_at - clock.start,
                    last: false,
                    instances: &instances,
                    status,
                });
                if clock.ticked(t, now) {
                    end.ended_by_us = true;
                    break;
                }
                next_read = read_at + READ_EVERY;
                continue;
            }
            if now >= next_read {
                if let Err(e) = counting.read() {
                    end.failure = Some(e);
                    break;
                }
                next_read = Instant::now() + READ_EVERY;
                continue;
            }
            let wake = clock
                .next_wake(Duration::ZERO)
                .map_or(next_read, |w| w.min(next_read));
            let ms = wake
                .saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000)
                .min(1000) as i32;
            // Without a way to be woken by the command's end, look
            // regularly.
            let cap = if child.is_some() && wake_fd.is_none() {
                5
            } else {
                100
            };
            nap(wake_fd.as_ref(), ms.clamp(1, cap));
        }
        end
    }

    /// The report's notes: what was programmed and put back, the
    /// session's own notes, and each package's energy.
    fn notes(&mut self, restored: bool, elapsed: Duration) -> Vec<String> {
        let counting = &self.counting;
        let mut notes = std::mem::take(&mut self.notes);
        let cpus = &self.cpus;
        let saved = counting.session.saved().len();
        let on = format!(
            "CPU{} {}",
            if cpus.len() == 1 { "" } else { "s" },
            format_cpu_list(cpus)
        );
        notes.push(match (saved, restored) {
            (0, _) => format!("counted through the msr devices (--backend msr) on {on}; no register written"),
            (n, true) => format!(
                "counted through the msr devices (--backend msr): {n} register{} on {on} programmed and put back",
                if n == 1 { "" } else { "s" }
            ),
            (n, false) => format!(
                "counted through the msr devices (--backend msr): {n} register{} on {on} programmed, not all put back (see the error)",
                if n == 1 { "" } else { "s" }
            ),
        });
        notes.extend(counting.session.notes().iter().cloned());
        if let Some(m) = &counting.meter {
            let secs = elapsed.as_secs_f64();
            for (d, &t) in m.domains().iter().zip(&counting.e_total) {
                let joules = t as f64 * counting.energy_scale;
                notes.push(format!(
                    "energy: {} (cpu {}): {joules:.6} J, {:.3} W on average",
                    d.id,
                    d.cpu,
                    if secs > 0.0 { joules / secs } else { 0.0 }
                ));
            }
        }
        notes
    }
}

/// How the msr read loop ended.
struct MsrEnding {
    /// The start of the current interval.
    interval_start: Instant,
    /// Cut short by a signal, or by the duration while a command ran.
    interrupted: bool,
    /// The duration or the interval count ended the run.
    ended_by_us: bool,
    /// A read failed.
    failure: Option<MsrError>,
}
