//! What a refresh shows: the profile's rows and the header's figures,
//! the rates measured since the previous refresh.

use super::TopOptions;
use pmx_count::metrics::MetricSet;
use pmx_perfdata::format::record_type;
use pmx_profile::group_metrics::cells;
use pmx_profile::{Profile, Row};
use pmx_record::SampleRate;
use std::time::{Duration, Instant};

/// One refresh.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The rows of every event (heaviest first), aged by the refreshes
    /// before this one.
    pub profile: Profile,
    /// The stream has ended: the targets are gone (or the session failed).
    pub ended: bool,
    /// The figures of the header.
    pub header: Header,
    /// A sample-read group's rows (`{A,B}:S`): each member's count and
    /// the `-M` metrics per row.
    pub group: Option<GroupView>,
}

/// The rows of a sample-read group, as `pmx report --group -M` has them.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupView {
    /// The leader (index into the profile's events).
    pub event: usize,
    /// The members' names, leader first.
    pub members: Vec<String>,
    /// The metrics' names.
    pub metrics: Vec<String>,
    /// The rows, heaviest first.
    pub rows: Vec<GroupLine>,
}

/// One row of a [`GroupView`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupLine {
    /// The row's key and the leader's samples.
    pub row: Row,
    /// Each member's count (the sum of its deltas).
    pub counts: Vec<u64>,
    /// Each metric: `value ±half-width of the 95% interval` (`*`: few
    /// samples), for the [`METRIC_ROWS`] heaviest rows.
    pub cells: Vec<String>,
}

/// Rows whose metrics are evaluated at each refresh (the others show
/// their counts only).
pub const METRIC_ROWS: usize = 500;

/// The first sample-read group of `profile`, its metrics from `metrics`.
fn group_view(profile: &Profile, metrics: Option<&MetricSet>) -> Option<GroupView> {
    let (event, g) = (profile.events.iter().enumerate())
        .find_map(|(i, e)| e.group.as_ref().filter(|g| g.from_reads).map(|g| (i, g)))?;
    let members: Vec<String> = (g.members.iter())
        .map(|&m| profile.events[m].name.clone())
        .collect();
    let names = metrics.map(|m| m.names()).unwrap_or_default();
    let eval = |get: &dyn Fn(&str) -> Option<f64>| match metrics {
        Some(m) => m.evaluate_exact(get),
        None => Vec::new(),
    };
    let rows = (g.rows.iter().enumerate())
        .map(|(i, r)| GroupLine {
            row: r.row.clone(),
            counts: r.moments.sums.clone(),
            cells: if i < METRIC_ROWS && !names.is_empty() {
                let c = cells(&r.moments, &members, names.len(), &eval);
                c.iter().map(|c| c.text()).collect()
            } else {
                vec![String::new(); names.len()]
            },
        })
        .collect();
    Some(GroupView {
        event,
        members,
        metrics: names,
        rows,
    })
}

/// The header's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// What is sampled: `all CPUs (2)`, `pid 42` …
    pub target: String,
    /// The events' names.
    pub events: Vec<String>,
    /// The rate asked for: `4000 Hz`, `every 100000 events`.
    pub rate: String,
    /// Samples a second since the previous refresh: the samples applied
    /// over the span of their own time stamps (the kernel's clock), so a
    /// refresh that caught up with a backlog does not count it as a burst;
    /// over wall time when the samples carry no time.
    pub samples_per_sec: f64,
    /// Samples since the start.
    pub samples: u64,
    /// Records the kernel dropped since the start (full rings).
    pub lost: u64,
    /// THROTTLE records since the start.
    pub throttled: u64,
    /// pmx's own CPU time since the previous refresh, in % of one CPU.
    pub own_cpu: f64,
    /// Rows the aggregator holds.
    pub held_rows: usize,
    /// Time since the start.
    pub elapsed: Duration,
}

impl Header {
    /// The header as one line.
    pub fn line(&self) -> String {
        format!(
            "pmx top: {} on {} at {}: {:.0} samples/s, {} lost, {} throttled; pmx {:.1}% CPU",
            self.events.join(","),
            self.target,
            self.rate,
            self.samples_per_sec,
            self.lost,
            self.throttled,
            self.own_cpu
        )
    }
}

/// The figures of the previous refresh.
pub(super) struct Clock {
    start: Instant,
    last: Instant,
    last_cpu: Duration,
    /// Samples applied since the start.
    samples: u64,
    /// The time stamp of the last sample applied at the previous refresh.
    last_sample_time: Option<u64>,
    target: String,
    rate: String,
}

impl Clock {
    pub(super) fn new(opts: &TopOptions) -> Clock {
        let now = Instant::now();
        Clock {
            start: now,
            last: now,
            last_cpu: own_cpu_time(),
            samples: 0,
            last_sample_time: None,
            target: super::describe(&opts.record.scope),
            rate: match opts.record.rate {
                SampleRate::Frequency(hz) => format!("{hz} Hz"),
                SampleRate::Period(p) => format!("every {p} events"),
            },
        }
    }

    /// `new_samples` a second: over the span of sample time they cover
    /// (from the previous refresh's last sample, or the first sample),
    /// else over `wall` seconds.
    fn rate(&self, profile: &Profile, new_samples: u64, wall: f64) -> f64 {
        let span = profile.time_range.and_then(|(first, last)| {
            let from = self.last_sample_time.unwrap_or(first);
            (last > from).then(|| (last - from) as f64 / 1e9)
        });
        match span {
            Some(s) if s >= 0.01 => new_samples as f64 / s,
            _ => new_samples as f64 / wall,
        }
    }

    pub(super) fn frame(
        &mut self,
        profile: Profile,
        new_samples: u64,
        ended: bool,
        held_rows: usize,
        metrics: Option<&MetricSet>,
    ) -> Frame {
        let now = Instant::now();
        let cpu = own_cpu_time();
        let wall = now.duration_since(self.last).as_secs_f64().max(1e-3);
        let count = |t: u32| profile.stats.records.get(&t).copied().unwrap_or(0);
        let samples = self.samples + new_samples;
        let header = Header {
            target: self.target.clone(),
            events: profile.events.iter().map(|e| e.name.clone()).collect(),
            rate: self.rate.clone(),
            samples_per_sec: self.rate(&profile, new_samples, wall),
            samples,
            lost: profile.stats.lost + profile.stats.lost_samples,
            throttled: count(record_type::THROTTLE),
            own_cpu: 100.0 * cpu.saturating_sub(self.last_cpu).as_secs_f64() / wall,
            held_rows,
            elapsed: now.duration_since(self.start),
        };
        (self.last, self.last_cpu, self.samples) = (now, cpu, samples);
        self.last_sample_time = profile.time_range.map(|r| r.1).or(self.last_sample_time);
        Frame {
            group: group_view(&profile, metrics),
            profile,
            ended,
            header,
        }
    }
}

/// This process's CPU time (user + system, every thread).
fn own_cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_record::SampleRate;

    #[test]
    fn the_rate_is_over_sample_time_not_the_wall_clock() {
        let scope = pmx_count::stat::Scope::Cpus(vec![0, 1]);
        let opts = TopOptions::new(vec![], scope, SampleRate::Frequency(4000));
        let mut clock = Clock::new(&opts);
        let mut profile = Profile {
            time_range: Some((1_000_000_000, 3_000_000_000)),
            ..Profile::default()
        };
        // 2 s of samples applied in a moment (a backlog): 4,000 a second.
        let f = clock.frame(profile.clone(), 8000, false, 0, None);
        assert!(
            (f.header.samples_per_sec - 4000.0).abs() < 1.0,
            "{:?}",
            f.header
        );
        // The next refresh: 1 s more of sample time, 2,000 samples.
        profile.time_range = Some((1_000_000_000, 4_000_000_000));
        let f = clock.frame(profile.clone(), 2000, false, 0, None);
        assert!(
            (f.header.samples_per_sec - 2000.0).abs() < 1.0,
            "{:?}",
            f.header
        );
        // No new sample time: the wall clock (tiny here, so a large rate).
        let f = clock.frame(profile, 0, false, 0, None);
        assert_eq!(f.header.samples_per_sec, 0.0);
    }
}
