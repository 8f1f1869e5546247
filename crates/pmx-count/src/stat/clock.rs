//! The clock of a counting loop: the end of `--duration`, the grid of
//! `-I` interval boundaries and `--interval-count`. Shared by the perf
//! loop ([`super::run_with`]) and the msr session's loop (`stat_msr`);
//! each decides what to read at a boundary and how to sleep until the
//! next one.

use std::time::{Duration, Instant};

/// The first interval boundary after `now`, on the grid `t + k·iv`: a
/// late wake-up skips the boundaries it missed instead of drifting.
pub fn next_tick_after(t: Instant, iv: Duration, now: Instant) -> Instant {
    let mut nt = t + iv;
    while nt <= now {
        nt += iv;
    }
    nt
}

/// The deadlines of one run, from its start.
#[derive(Debug, Clone)]
pub(crate) struct IntervalClock {
    /// When counting started.
    pub start: Instant,
    /// `--duration`: when the run ends.
    pub deadline: Option<Instant>,
    /// `-I`: the interval.
    pub interval: Option<Duration>,
    /// The next interval boundary.
    pub next_tick: Option<Instant>,
    /// `--interval-count`.
    count: Option<u64>,
    /// Interval boundaries handled so far.
    pub ticks: u64,
}

impl IntervalClock {
    /// The clock of a run started at `start`.
    pub fn new(
        start: Instant,
        duration: Option<Duration>,
        interval: Option<Duration>,
        count: Option<u64>,
    ) -> IntervalClock {
        IntervalClock {
            start,
            deadline: duration.map(|d| start + d),
            interval,
            next_tick: interval.map(|i| start + i),
            count,
            ticks: 0,
        }
    }

    /// Has `--duration` passed at `now`?
    pub fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The boundary to handle at `now`, if one is due: `lag` after it has
    /// passed.
    pub fn due(&self, now: Instant, lag: Duration) -> Option<Instant> {
        self.next_tick.filter(|&t| now >= t + lag)
    }

    /// The boundary `t` was handled at `now`: count it and move to the next
    /// boundary. Returns whether `--interval-count` is reached (the run
    /// ends; the next boundary is then left as it was).
    pub fn ticked(&mut self, t: Instant, now: Instant) -> bool {
        self.ticks += 1;
        if self.count_reached() {
            return true;
        }
        if let Some(iv) = self.interval {
            self.next_tick = Some(next_tick_after(t, iv, now));
        }
        false
    }

    /// Have `--interval-count` intervals been handled?
    pub fn count_reached(&self) -> bool {
        self.count.is_some_and(|n| self.ticks >= n)
    }

    /// When to wake next: `lag` after the next boundary, or the deadline.
    pub fn next_wake(&self, lag: Duration) -> Option<Instant> {
        let tick = self.next_tick.map(|t| t + lag);
        [tick, self.deadline].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_stay_on_the_grid_and_the_count_ends_the_run() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut c = IntervalClock::new(t0, Some(ms(95)), Some(ms(10)), Some(3));
        assert_eq!(c.next_wake(Duration::ZERO), Some(t0 + ms(10)));
        assert_eq!(c.next_wake(ms(1)), Some(t0 + ms(11)));
        assert_eq!(c.due(t0 + ms(9), Duration::ZERO), None);
        assert_eq!(c.due(t0 + ms(10), ms(1)), None);
        assert_eq!(c.due(t0 + ms(11), ms(1)), Some(t0 + ms(10)));
        // Woken late, at 34 ms: the boundaries at 20 and 30 are skipped.
        assert!(!c.ticked(t0 + ms(10), t0 + ms(34)));
        assert_eq!(c.next_tick, Some(t0 + ms(40)));
        assert!(!c.ticked(t0 + ms(40), t0 + ms(40)));
        assert!(c.ticked(t0 + ms(50), t0 + ms(50)));
        assert!(c.count_reached());
        assert_eq!(c.next_tick, Some(t0 + ms(50)), "left as it was");
        assert!(!c.expired(t0 + ms(94)));
        assert!(c.expired(t0 + ms(95)));
    }

    #[test]
    fn without_an_interval_only_the_deadline_wakes() {
        let t0 = Instant::now();
        let c = IntervalClock::new(t0, Some(Duration::from_secs(1)), None, None);
        assert_eq!(c.due(t0 + Duration::from_secs(5), Duration::ZERO), None);
        assert_eq!(
            c.next_wake(Duration::ZERO),
            Some(t0 + Duration::from_secs(1))
        );
        let c = IntervalClock::new(t0, None, None, None);
        assert_eq!(c.next_wake(Duration::ZERO), None);
        assert!(!c.expired(t0 + Duration::from_secs(1000)));
    }
}
