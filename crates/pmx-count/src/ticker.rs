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
//! Reading the group of the CPU pmx itself runs on needs no interrupt at
//! all, so pmx also moves its interval loop (never the measured command)
//! to the CPU whose group it had to read across CPUs most often — an idle
//! one, which keeps it off the busy CPUs too. It moves only within the
//! CPUs it was allowed at the start, at most once per 50 intervals, and
//! puts its affinity back when the run ends ([`Home`]).
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
#[derive(Debug, Clone)]
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
    /// Count buffers of used samples, for the next ones that must wait.
    spare: Vec<Vec<(u64, Count)>>,
    /// The sample chosen for the current boundary.
    chosen: Sample,
    /// A record's words, reused.
    words: Vec<u64>,
    /// Time of the last reading handed out (sample or direct read).
    last: u64,
    interval_ns: u64,
    /// The CPU it samples.
    pub cpu: i32,
    /// How often the group was read directly (a sample missing).
    pub reads: u64,
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
            // Room for samples of 8 boundaries that must wait (pmx woken
            // up 8 intervals late), without allocating then.
            pending: VecDeque::with_capacity(8),
            spare: (0..8).map(|_| Vec::with_capacity(32)).collect(),
            // Sized for groups of up to 32 events, so even a CPU whose
            // first sample comes late does not allocate then.
            chosen: Sample {
                time: 0,
                counts: Vec::with_capacity(32),
            },
            words: Vec::with_capacity(4 + 2 * 32),
            last: 0,
            interval_ns,
            cpu,
            reads: 0,
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
            spare,
            chosen,
            words,
            ..
        } = self;
        let mut found = false;
        // Samples kept from an earlier call come first: they are older
        // than anything still in the ring.
        while pending.front().is_some_and(|s| s.time <= limit) {
            if let Some(s) = pending.pop_front() {
                spare.push(std::mem::replace(chosen, s).counts);
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
                    counts: spare.pop().unwrap_or_default(),
                };
                if fill_counts(words, &mut later.counts) {
                    pending.push_back(later);
                } else {
                    spare.push(later.counts);
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
        self.reads += 1;
    }
}

/// Where pmx's interval loop runs: moved next to the group it reads
/// directly most often (see the module page), and put back on drop.
pub(crate) struct Home {
    /// The affinity at the start: the CPUs pmx may move to, and what is
    /// restored at the end. `None` when it could not be read (then pmx
    /// stays where it is).
    original: Option<libc::cpu_set_t>,
    /// Each ticker's direct reads at the last decision.
    seen: Vec<u64>,
    /// Each ticker's (CPU, direct reads) over the last window, reused.
    window: Vec<(i32, u64)>,
    ticks: u64,
}

impl Home {
    /// Intervals between decisions.
    const WINDOW: u64 = 50;

    /// For `tickers` tickers (the buffers are sized once, here).
    pub fn new(tickers: usize) -> Home {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
        // writes at most its size.
        let original = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) == 0).then_some(set)
        };
        Home {
            original,
            seen: Vec::with_capacity(tickers),
            window: Vec::with_capacity(tickers),
            ticks: 0,
        }
    }

    /// After an interval: every [`Self::WINDOW`] intervals, move to a better
    /// CPU if there is one.
    pub fn after_tick<'a>(&mut self, tickers: impl Iterator<Item = &'a Ticker> + Clone) {
        self.ticks += 1;
        if !self.ticks.is_multiple_of(Self::WINDOW) {
            return;
        }
        let Some(allowed) = self.original else {
            return;
        };
        self.seen.resize(tickers.clone().count(), 0);
        self.window.clear();
        self.window
            .extend(tickers.zip(self.seen.iter_mut()).map(|(t, seen)| {
                let fresh = t.reads - *seen;
                *seen = t.reads;
                (t.cpu, fresh)
            }));
        // SAFETY: sched_getcpu takes nothing and returns a CPU or -1.
        let here = unsafe { libc::sched_getcpu() };
        let may = |cpu: i32| {
            // SAFETY: CPU_ISSET reads one bit of a set we own; the index is
            // checked against the set's size.
            usize::try_from(cpu).is_ok_and(|c| {
                c < 8 * std::mem::size_of::<libc::cpu_set_t>()
                    && unsafe { libc::CPU_ISSET(c, &allowed) }
            })
        };
        if let Some(cpu) = better_home(&self.window, here, Self::WINDOW, may) {
            // SAFETY: a zeroed cpu_set_t with one allowed CPU set, for this
            // thread only.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu as usize, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
            }
        }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let (Some(set), true) = (self.original, self.ticks >= Self::WINDOW) {
            // SAFETY: restoring the set sched_getaffinity gave us.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
        }
    }
}

/// The CPU to run on, given each ticker's `(cpu, direct reads)` over the
/// last `window` intervals and the CPU pmx runs on now: the one whose
/// group was read directly most, when that was at least half the
/// intervals and clearly more than the group here (which is read without
/// an interrupt). `None`: stay.
fn better_home(
    reads: &[(i32, u64)],
    here: i32,
    window: u64,
    allowed: impl Fn(i32) -> bool,
) -> Option<i32> {
    let here_reads: u64 = reads.iter().filter(|r| r.0 == here).map(|r| r.1).sum();
    let (cpu, most) = reads.iter().filter(|r| r.0 != here && allowed(r.0)).fold(
        None::<(i32, u64)>,
        |best, &(cpu, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((cpu, n)),
        },
    )?;
    (2 * most >= window && most > here_reads + window / 4).then_some(cpu)
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
    fn the_loop_moves_next_to_the_group_it_reads_across_cpus() {
        let all = |_| true;
        // On CPU 0, whose samples arrive; CPU 1's group read every time.
        assert_eq!(better_home(&[(0, 0), (1, 50)], 0, 50, all), Some(1));
        // Already there: its own group is read locally, stay.
        assert_eq!(better_home(&[(0, 0), (1, 50)], 1, 50, all), None);
        // Both idle and read every time: moving gains nothing.
        assert_eq!(better_home(&[(0, 50), (1, 50)], 0, 50, all), None);
        // A few misses are not worth a move.
        assert_eq!(better_home(&[(0, 0), (1, 10)], 0, 50, all), None);
        // The worst of several; never outside the CPUs allowed.
        assert_eq!(
            better_home(&[(0, 0), (1, 30), (2, 45), (3, 50)], 0, 50, |c| c != 3),
            Some(2)
        );
        // Not on a measured CPU at all.
        assert_eq!(better_home(&[(0, 40), (1, 50)], 5, 50, all), Some(1));
    }

    fn affinity() -> Vec<usize> {
        // SAFETY: a zeroed set is valid; the kernel writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
                0
            );
            (0..64).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
        }
    }

    /// The real kernel: with the group on the other CPU read directly in
    /// every interval, the loop's thread moves there after one window,
    /// and gets its affinity back when the run ends.
    #[test]
    fn the_loop_thread_really_moves_and_comes_back() {
        std::thread::spawn(|| {
            let before = affinity();
            if before.len() < 2 {
                eprintln!("skipped: fewer than 2 CPUs allowed");
                return;
            }
            let (a, b) = (before[0], before[1]);
            let iv = Duration::from_millis(10);
            let (Some(ta), Some(tb)) = (Ticker::open(a as i32, iv), Ticker::open(b as i32, iv))
            else {
                eprintln!("skipped: cannot open cpu-clock sampling events here");
                return;
            };
            let mut tickers = [ta, tb];
            // SAFETY: sched_getcpu takes nothing.
            let here = unsafe { libc::sched_getcpu() } as usize;
            let far = if here == a { 1 } else { 0 };
            let target = tickers[far].cpu as usize;
            let mut home = Home::new(2);
            for _ in 0..Home::WINDOW {
                tickers[far].reads += 1;
                home.after_tick(tickers.iter());
            }
            assert_eq!(
                affinity(),
                vec![target],
                "moved next to the group read directly"
            );
            std::thread::yield_now();
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_getcpu() } as usize, target);
            drop(home);
            assert_eq!(affinity(), before, "affinity restored");
        })
        .join()
        .unwrap();
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
    /// samples, each one taken for a boundary within half an interval of
    /// it, newer than the one before, with counts that only grow. How many
    /// boundaries find their sample depends on the machine's load (a
    /// missing one is read directly, see [`Ticker::take`]), so the test
    /// takes boundaries until a few samples came, with a bound of seconds
    /// only against a ticker that never delivers.
    #[test]
    fn ticker_samples_arrive_on_the_grid() {
        const INTERVAL: u64 = 5_000_000;
        let Some(mut t) = Ticker::open(0, Duration::from_nanos(INTERVAL)) else {
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
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // SAFETY: a zeroed cpu_set_t with CPU 0 set, for this thread.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(0, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
                }
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let give_up = start + 20_000_000_000;
        let (mut got, mut prev, mut last) = (0, 0u64, 0u64);
        let mut k = 0u64;
        while got < 5 && monotonic_ns() < give_up {
            k += 1;
            let at = start + k * INTERVAL;
            // Ask once the boundary is half an interval past, as pmx does
            // (late is fine: the ring keeps the later samples).
            let now = monotonic_ns();
            if now < at + INTERVAL / 2 {
                std::thread::sleep(Duration::from_nanos(at + INTERVAL / 2 - now));
            }
            let Some(c) = t.take(at) else {
                continue;
            };
            let me = c.iter().find(|(id, _)| *id == member.id()).unwrap().1;
            assert!(me.value >= prev, "{} after {prev}", me.value);
            prev = me.value;
            let time = t.last;
            assert!(
                time + INTERVAL / 2 >= at && time <= at + INTERVAL / 2,
                "the sample of {time} ns taken for the boundary at {at} ns"
            );
            assert!(
                time > last,
                "the sample of {time} ns after one of {last} ns"
            );
            last = time;
            got += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(
            got >= 5,
            "only {got} samples in {k} intervals of a busy CPU 0"
        );
    }
}
