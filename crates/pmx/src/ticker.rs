//! Interval reads without inter-processor calls: a per-CPU *ticker*.
//!
//! Reading a counter that is active on another CPU makes the kernel
//! interrupt that CPU (`smp_call_function_single`) to read it there. On
//! bare metal that costs microseconds; in a virtual machine each one is a
//! VM exit costing up to hundreds of microseconds, which dominates
//! `pmx stat -a -I 10`.
//!
//! A ticker avoids it for groups of software events counted system-wide:
//! the group gets a hidden `cpu-clock` leader that takes a sample every
//! interval on its own CPU, with `PERF_SAMPLE_TIME | PERF_SAMPLE_READ` and
//! a group `read_format`, so the kernel itself writes the whole group's
//! cumulative counts into a small ring buffer, locally, from its timer
//! interrupt. At each interval pmx takes the sample that belongs to the
//! interval from the ring — no system call at all — and falls back to an
//! ordinary group read when the sample is missing (late timer, lost
//! records). The time stamps are `CLOCK_MONOTONIC`, the clock of the
//! interval grid. The leader is never reported; the final totals come
//! from an ordinary read after the counters are disabled, so the interval
//! deltas still add up to them exactly.
//!
//! An idle CPU gives few samples: the kernel (6.18 here) mostly skips
//! `cpu-clock` samples while the CPU idles, so an idle CPU's group is
//! usually read directly — the inter-processor call this avoids for busy
//! CPUs.
//!
//! Only software-context events (software, tracepoint) join a ticker: a
//! hardware event in the group would tie the leader to the PMU's
//! multiplexing and stop the samples whenever the group is switched out.

use pmx_model::count::Count;
use pmx_perf::mmap::{record::SAMPLE as RECORD_SAMPLE, visit_sample_read, Mmap, RecordHeader};
use pmx_perf::{event_type, read_format, sample_type, software, Attr, Counter, Target};
use pmx_perf::{SampleRate, Wakeup};
use std::collections::VecDeque;
use std::time::Duration;

/// Whether events of this `type` can join a ticker's group.
pub(crate) fn joins_ticker(type_: u32) -> bool {
    type_ == event_type::SOFTWARE || type_ == event_type::TRACEPOINT
}

/// The read format of a ticker and of its samples.
const READ_FORMAT: u64 = read_format::GROUP
    | read_format::ID
    | read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING;

/// The clock of a ticker's time stamps. The kernel insists that every
/// member of a group use its leader's clock, so the members are opened
/// with it too.
pub(crate) const CLOCK: i32 = libc::CLOCK_MONOTONIC;

/// One sample: its time (ns, `CLOCK_MONOTONIC`) and the group's counts by
/// id.
#[derive(Debug, Clone, Default)]
struct Sample {
    time: u64,
    counts: Vec<(u64, Count)>,
}

/// A hidden sampling leader on one CPU and its ring.
///
/// Taking a sample allocates nothing once the buffers have grown to the
/// group's size: at `-I 10` on many CPUs this runs thousands of times a
/// second.
#[derive(Debug)]
pub(crate) struct Ticker {
    /// The leader: open it first, then open the group's events with it as
    /// their group.
    pub counter: Counter,
    ring: Mmap,
    /// Samples already taken from the ring that belong to a later
    /// boundary (rare: only when pmx wakes before the kernel's timer).
    pending: VecDeque<Sample>,
    /// The sample chosen for the current boundary.
    chosen: Sample,
    /// A record's words, reused.
    words: Vec<u64>,
    /// Time of the last reading handed out (sample or direct read).
    last: u64,
    interval_ns: u64,
}

impl Ticker {
    /// Open a disabled ticker on `cpu` that samples every `interval`.
    /// `None` when the kernel refuses (then the group is opened the usual
    /// way).
    pub fn open(cpu: i32, interval: Duration) -> Option<Ticker> {
        let interval_ns = u64::try_from(interval.as_nanos()).ok()?.max(1);
        // A sample is 8 (header) + 8 (time) + 24 + 16 per member bytes;
        // room for a second of samples (at least 8), at most 16 pages.
        let per_second = (1_000_000_000 / interval_ns).max(8) as usize;
        let bytes = per_second * (40 + 16 * 16);
        let page = pmx_perf::mmap::page_size();
        let pages = bytes.div_ceil(page).next_power_of_two().clamp(1, 16);
        let attr = Attr {
            type_: event_type::SOFTWARE,
            config: software::CPU_CLOCK,
            disabled: true,
            read_format: READ_FORMAT,
            sample: Some(SampleRate::Period(interval_ns)),
            sample_type: sample_type::TIME | sample_type::READ,
            // Wake a poller only when the ring is full: pmx does not poll
            // it, so no wake-up work is asked of the measured CPU.
            wakeup: Wakeup::Watermark(u32::try_from(pages * page).unwrap_or(u32::MAX)),
            clockid: Some(CLOCK),
            ..Attr::default()
        };
        let counter = Counter::open(&attr, Target { pid: -1, cpu }, None).ok()?;
        let ring = Mmap::new(&counter, pages).ok()?;
        Some(Ticker {
            counter,
            ring,
            pending: VecDeque::new(),
            chosen: Sample::default(),
            words: Vec::new(),
            last: 0,
            interval_ns,
        })
    }

    /// The counts at the interval boundary `at` (ns, `CLOCK_MONOTONIC`):
    /// the latest sample within half an interval of it, newer than the
    /// previous reading. `None`: not there (yet); read the group instead.
    pub fn take(&mut self, at: u64) -> Option<&[(u64, Count)]> {
        let limit = at.saturating_add(self.interval_ns / 2);
        let Ticker {
            ring,
            pending,
            chosen,
            words,
            ..
        } = self;
        let mut found = false;
        // Samples kept from an earlier call come first: they are older
        // than anything still in the ring.
        while pending.front().is_some_and(|s| s.time <= limit) {
            if let Some(s) = pending.pop_front() {
                *chosen = s;
                found = true;
            }
        }
        ring.read_records(|rec| {
            let Some(time) = sample_words(rec, words) else {
                return;
            };
            if time <= limit && pending.is_empty() {
                // A malformed record spoils the buffer: then read instead.
                found = fill_counts(words, &mut chosen.counts);
                chosen.time = time;
            } else {
                let mut later = Sample {
                    time,
                    counts: Vec::new(),
                };
                if fill_counts(words, &mut later.counts) {
                    pending.push_back(later);
                }
            }
        });
        let half = self.interval_ns / 2;
        let s = &self.chosen;
        if !found || s.time + half < at || s.time <= self.last {
            return None;
        }
        self.last = s.time;
        Some(&s.counts)
    }

    /// Record that the group was read directly at `now` (ns,
    /// `CLOCK_MONOTONIC`): older samples can no longer be used.
    pub fn read_directly_at(&mut self, now: u64) {
        self.last = self.last.max(now);
    }
}

/// `CLOCK_MONOTONIC` now, in ns.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The words after the header of a `PERF_RECORD_SAMPLE`, into `words`,
/// and its time (the first word); anything else (or a malformed record)
/// is `None`.
fn sample_words(rec: &[u8], words: &mut Vec<u64>) -> Option<u64> {
    let h = RecordHeader::parse(rec)?;
    if h.type_ != RECORD_SAMPLE {
        return None;
    }
    words.clear();
    words.extend(
        rec.get(8..usize::from(h.size).min(rec.len()))?
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
    );
    words.first().copied()
}

/// The group counts of a `TIME | READ` sample's words (time first) into
/// `counts`; `false` (and `counts` unusable) when they are malformed.
fn fill_counts(words: &[u64], counts: &mut Vec<(u64, Count)>) -> bool {
    counts.clear();
    let mut ids = true;
    let ok = words.get(1..).is_some_and(|rest| {
        visit_sample_read(rest, READ_FORMAT, |id, c| match id {
            Some(id) => counts.push((id, c)),
            None => ids = false,
        })
        .is_ok()
    });
    ok && ids
}

/// A `PERF_RECORD_SAMPLE` of `TIME | READ` with the group read format;
/// anything else (or a malformed record) is `None`.
#[cfg(test)]
fn parse_sample(rec: &[u8]) -> Option<Sample> {
    let mut words = Vec::new();
    let time = sample_words(rec, &mut words)?;
    let mut counts = Vec::new();
    fill_counts(&words, &mut counts).then_some(Sample { time, counts })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(words: &[u64]) -> Vec<u8> {
        let size = 8 + 8 * words.len();
        let mut r = Vec::new();
        r.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        r.extend_from_slice(&0u16.to_ne_bytes());
        r.extend_from_slice(&(size as u16).to_ne_bytes());
        for w in words {
            r.extend_from_slice(&w.to_ne_bytes());
        }
        r
    }

    #[test]
    fn a_sample_gives_time_and_group_counts() {
        let r = record(&[1234, 2, 500, 400, 10, 77, 20, 78]);
        let s = parse_sample(&r).unwrap();
        assert_eq!(s.time, 1234);
        assert_eq!(s.counts.len(), 2);
        assert_eq!(s.counts[0].0, 77);
        assert_eq!(s.counts[1].1.value, 20);
        assert_eq!(s.counts[1].1.enabled, 500);
        assert_eq!(s.counts[1].1.running, 400);
    }

    #[test]
    fn malformed_samples_are_ignored() {
        assert!(parse_sample(&record(&[1234, 3, 500, 400, 10, 77])).is_none());
        assert!(parse_sample(&record(&[])).is_none());
        let mut other = record(&[1, 1, 1, 1, 1, 1]);
        other[0] = 2;
        assert!(parse_sample(&other).is_none());
    }

    /// The real kernel: a ticker on CPU 0 with a software member delivers
    /// samples every interval whose counts only grow.
    #[test]
    fn ticker_samples_arrive_on_the_grid() {
        let Some(mut t) = Ticker::open(0, Duration::from_millis(5)) else {
            eprintln!("skipped: cannot open a cpu-clock sampling event on CPU 0 here");
            return;
        };
        let member = Counter::open(
            &Attr {
                type_: event_type::SOFTWARE,
                config: software::CONTEXT_SWITCHES,
                clockid: Some(CLOCK),
                ..Attr::default()
            },
            Target { pid: -1, cpu: 0 },
            Some(&t.counter),
        )
        .expect("member");
        let start = monotonic_ns();
        t.counter.enable(true).unwrap();
        // Keep CPU 0 busy meanwhile: an idle CPU gives few timer samples
        // (see the module page), which is not what this test is about.
        std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t with CPU 0 set, for this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
            }
            let until = std::time::Instant::now() + Duration::from_millis(60);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        })
        .join()
        .unwrap();
        let mut got = 0;
        let mut prev = 0u64;
        for k in 1..=10u64 {
            if let Some(c) = t.take(start + k * 5_000_000) {
                let me = c.iter().find(|(id, _)| *id == member.id()).unwrap().1;
                assert!(me.value >= prev);
                prev = me.value;
                got += 1;
            }
        }
        assert!(got >= 8, "only {got} of 10 intervals had their sample");
    }
}
