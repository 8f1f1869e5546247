//! The Firefox Profiler's processed profile format (the JSON
//! <https://profiler.firefox.com> loads from a file), built with the
//! `fxprof-processed-profile` crate (samply's).
//!
//! - one process per pid (named after its main thread), one track per
//!   thread, and per event when several have samples (`comm (event)`,
//!   none of them the process's main thread, which the profiler would
//!   name after the process);
//! - samples at their recording time (relative to the first sample;
//!   `meta.startTime` is its wall-clock time when the file says it:
//!   perf's CLOCK_DATA, else the file's modification time taken as the
//!   end of the recording), weight 1, stacks of functions (already
//!   symbolized: categories `User` and `Kernel`);
//! - CPU usage (`threadCPUDelta`): for cpu-clock and task-clock the
//!   sample's period (CPU nanoseconds); for other events, which count
//!   something else, the time since the track's previous sample, at most
//!   the sampling interval (the thread was on a CPU when sampled);
//! - the sampling interval (`meta.interval`): the median time between
//!   consecutive samples of a track;
//! - a sample-read group's members: one track per thread and member
//!   (`comm (member)`), a sample at each of the leader's samples that
//!   read a count of it, on the same stack, weighing that count (so the
//!   call tree's sample counts are the member's counts), with no CPU
//!   time;
//! - `offcpu-time` samples (`record --off-cpu`) on a track of their own
//!   (`comm (offcpu-time)`), at the end of each wait, with no CPU time and
//!   a weight of the wait in sampling intervals (the rest carried to the
//!   track's next sample), so the call tree's running time of a waiting
//!   function is the time it waited; with `--wall-clock` one track per
//!   thread holds both, the clock samples weighed the same way;
//! - markers on the busiest track: `Lost records` and `Lost samples`
//!   (instants, with the count), `Throttled` (from THROTTLE to UNTHROTTLE
//!   of the event; an instant when the UNTHROTTLE is missing).

use super::Export;
use crate::profile::sink::SideKind;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, MarkerFieldFlags,
    MarkerFieldFormat, MarkerTiming, ProcessHandle, Profile, ReferenceTimestamp, SamplingInterval,
    StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, ThreadHandle,
    Timestamp,
};
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

/// Write the profile of `x` as JSON to `out`.
pub fn write(x: &Export, out: &mut dyn Write) -> std::io::Result<()> {
    let p = build(x);
    let mut w = std::io::BufWriter::new(out);
    serde_json::to_writer(&mut w, &p)?;
    w.flush()
}

/// A track: a thread, and the event when several are exported.
struct Track {
    handle: ThreadHandle,
    last: Option<u64>,
    samples: u64,
    /// Nanoseconds not yet counted in a weight.
    carry: u64,
}

impl Track {
    /// `ns` in whole intervals, the rest carried to the next sample (so
    /// the weights of a track add up to its time).
    fn in_intervals(&mut self, ns: u64, interval: u64) -> i32 {
        let all = self.carry.saturating_add(ns);
        let n = all / interval.max(1);
        self.carry = all - n * interval.max(1);
        i32::try_from(n).unwrap_or(i32::MAX)
    }
}

/// The profile's builder: its tracks and interned stacks.
struct Builder<'x> {
    x: &'x Export,
    p: Profile,
    categories: [CategoryHandle; 2],
    processes: HashMap<u32, ProcessHandle>,
    tracks: Vec<Track>,
    /// (thread, event; or for a member, `MEMBER` + its column) → track.
    track_of: HashMap<(u32, u32), usize>,
    stacks: HashMap<(usize, u32), StackHandle>,
    names: Vec<Option<StringHandle>>,
    several: bool,
}

/// The Firefox profile of `x`.
pub fn build(x: &Export) -> Profile {
    let t0 = x.span.0;
    let ms = match x.epoch_offset {
        Some(o) => (o + i128::from(t0)) as f64 / 1e6,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3),
    };
    let interval = interval_ns(x);
    let mut p = Profile::new(
        &x.product,
        ReferenceTimestamp::from_millis_since_unix_epoch(ms),
        SamplingInterval::from_nanos(interval),
    );
    p.set_symbolicated(true);
    let categories = [
        p.add_category("User", CategoryColor::Yellow),
        p.add_category("Kernel", CategoryColor::Orange),
    ];
    let mut b = Builder {
        x,
        p,
        categories,
        processes: HashMap::default(),
        tracks: Vec::new(),
        track_of: HashMap::default(),
        stacks: HashMap::default(),
        names: vec![None; x.functions.len()],
        several: !x.wall_clock
            && (x.samples.iter().any(|s| s.event != x.samples[0].event)
                || x.samples.iter().any(|s| s.extra.1 > 0)),
    };
    for s in &x.samples {
        let t = b.track(s.thread, s.event, s.time - t0);
        let stack = s.stack.map(|n| b.stack(t, n));
        let track = &mut b.tracks[t];
        let ev = &x.events[s.event as usize];
        let cpu = if ev.off_cpu {
            0
        } else if ev.clock {
            s.period
        } else {
            track
                .last
                .map_or(interval, |l| s.time.saturating_sub(l).min(interval))
        };
        // Time off the CPU (and in the wall-clock view time on it) in
        // sampling intervals: the call tree's running time.
        let weight = if ev.off_cpu || x.wall_clock {
            track.in_intervals(s.period, interval)
        } else {
            1
        };
        track.last = Some(s.time);
        track.samples += 1;
        let ts = Timestamp::from_nanos_since_reference(s.time - t0);
        b.p.add_sample(track.handle, ts, stack, CpuDelta::from_nanos(cpu), weight);
        let (start, len) = (s.extra.0 as usize, s.extra.1 as usize);
        for &(member, v) in x.extra.get(start..start + len).unwrap_or(&[]) {
            let Some(name) = x.events[s.event as usize].members.get(member as usize) else {
                continue;
            };
            let column = x.events[s.event as usize].column as u32 + 2 + member;
            let name = super::without_group_read(name);
            let t = b.track_named(s.thread, MEMBER + column, &name, s.time - t0);
            let stack = s.stack.map(|n| b.stack(t, n));
            let track = &mut b.tracks[t];
            track.last = Some(s.time);
            track.samples += 1;
            let weight = i32::try_from(v).unwrap_or(i32::MAX);
            b.p.add_sample(track.handle, ts, stack, CpuDelta::ZERO, weight);
        }
    }
    for t in &b.tracks {
        if let Some(l) = t.last {
            let end = Timestamp::from_nanos_since_reference(l - t0);
            b.p.set_thread_end_time(t.handle, end);
        }
    }
    b.markers(t0);
    b.p
}

/// Keys of the members' tracks start here (events' are their indices).
const MEMBER: u32 = 1 << 31;

impl Builder<'_> {
    /// The track of (thread, event), created at time `ts` on first use.
    fn track(&mut self, thread: u32, event: u32, ts: u64) -> usize {
        let event = if self.several { event } else { 0 };
        let name = (self.x.events.get(event as usize))
            .map_or(String::new(), |e| super::without_group_read(&e.name));
        self.track_named(thread, event, &name, ts)
    }

    /// The track `key` of `thread`, named after `what` when there are
    /// several per thread, created at time `ts` on first use.
    fn track_named(&mut self, thread: u32, key: u32, what: &str, ts: u64) -> usize {
        let key = (thread, key);
        if let Some(&t) = self.track_of.get(&key) {
            return t;
        }
        let th = &self.x.threads[thread as usize];
        let start = Timestamp::from_nanos_since_reference(ts);
        let process = match self.processes.get(&th.pid) {
            Some(&p) => p,
            None => {
                let main = (self.x.threads.iter()).find(|t| t.pid == th.pid && t.tid == th.pid);
                let name = &main.unwrap_or(th).comm;
                let p = self.p.add_process(name, th.pid, start);
                self.processes.insert(th.pid, p);
                p
            }
        };
        // The profiler names a main thread after its process: with several
        // events the tracks are not main threads, and keep their events' names.
        let main = th.tid == th.pid && !self.several;
        let handle = self.p.add_thread(process, th.tid, start, main);
        let name = if self.several {
            format!("{} ({what})", th.comm)
        } else {
            th.comm.clone()
        };
        self.p.set_thread_name(handle, &name);
        self.tracks.push(Track {
            handle,
            last: None,
            samples: 0,
            carry: 0,
        });
        self.track_of.insert(key, self.tracks.len() - 1);
        self.tracks.len() - 1
    }

    /// The stack handle of node `n` on track `t` (its callers interned first).
    fn stack(&mut self, t: usize, n: u32) -> StackHandle {
        let mut chain = Vec::new();
        let mut node = Some(n);
        let mut parent = None;
        while let Some(i) = node {
            if let Some(&h) = self.stacks.get(&(t, i)) {
                parent = Some(h);
                break;
            }
            chain.push(i);
            node = self.x.stacks[i as usize].parent;
        }
        for &i in chain.iter().rev() {
            let loc = &self.x.locations[self.x.stacks[i as usize].location as usize];
            let f = loc.function as usize;
            let name = match self.names[f] {
                Some(h) => h,
                None => {
                    let h = self.p.intern_string(&self.x.functions[f].name);
                    self.names[f] = Some(h);
                    h
                }
            };
            let cat = self.categories[usize::from(self.x.functions[f].kernel)];
            let info = FrameInfo {
                frame: Frame::Label(name),
                category_pair: cat.into(),
                flags: FrameFlags::empty(),
            };
            let frame = self.p.intern_frame(self.tracks[t].handle, info);
            let h = self.p.intern_stack(self.tracks[t].handle, parent, frame);
            self.stacks.insert((t, i), h);
            parent = Some(h);
        }
        parent.expect("a node")
    }

    /// The side-band markers, on the busiest track.
    fn markers(&mut self, t0: u64) {
        let Some(track) = self.tracks.iter().max_by_key(|t| t.samples) else {
            return;
        };
        let handle = track.handle;
        self.p.set_thread_show_markers_in_timeline(handle, true);
        let mut throttled: HashMap<Option<u32>, u64> = HashMap::default();
        let at = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(t0));
        for m in &self.x.markers {
            let event = m
                .event
                .map_or(String::new(), |e| self.x.events[e as usize].name.clone());
            let (name, count, timing) = match m.kind {
                SideKind::Lost(n) => ("Lost records", n, MarkerTiming::Instant(at(m.time))),
                SideKind::LostSamples(n) => ("Lost samples", n, MarkerTiming::Instant(at(m.time))),
                SideKind::Throttle => {
                    throttled.insert(m.event, m.time);
                    continue;
                }
                SideKind::Unthrottle => match throttled.remove(&m.event) {
                    Some(start) => (
                        "Throttled",
                        1,
                        MarkerTiming::Interval(at(start), at(m.time)),
                    ),
                    None => continue,
                },
            };
            self.add(handle, name, &event, count, timing);
        }
        let mut open: Vec<_> = throttled.into_iter().collect();
        open.sort();
        for (e, time) in open {
            let event = e.map_or(String::new(), |e| self.x.events[e as usize].name.clone());
            self.add(
                handle,
                "Throttled",
                &event,
                1,
                MarkerTiming::Instant(at(time)),
            );
        }
    }

    fn add(&mut self, t: ThreadHandle, name: &str, event: &str, count: u64, timing: MarkerTiming) {
        let marker = SideBand {
            name: self.p.intern_string(name),
            event: self.p.intern_string(event),
            count,
        };
        self.p.add_marker(t, timing, marker);
    }
}

/// The median time between consecutive samples of a thread and event
/// (1 ms without two such samples), off-CPU samples aside.
fn interval_ns(x: &Export) -> u64 {
    let mut last: HashMap<(u32, u32), u64> = HashMap::default();
    let mut gaps = Vec::new();
    let off = |s: &super::Sample| x.events.get(s.event as usize).is_some_and(|e| e.off_cpu);
    for s in x.samples.iter().filter(|s| !off(s)) {
        if let Some(l) = last.insert((s.thread, s.event), s.time) {
            if s.time > l {
                gaps.push(s.time - l);
            }
        }
    }
    if gaps.is_empty() {
        return 1_000_000;
    }
    let mid = gaps.len() / 2;
    *gaps.select_nth_unstable(mid).1
}

/// A LOST, LOST_SAMPLES or THROTTLE marker.
struct SideBand {
    name: StringHandle,
    event: StringHandle,
    count: u64,
}

impl StaticSchemaMarker for SideBand {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "PerfSideBand";
    const DESCRIPTION: Option<&'static str> =
        Some("Records the kernel dropped, or an event throttled (perf.data side band)");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name} {marker.data.count}");
    const TABLE_LABEL: Option<&'static str> =
        Some("{marker.name}: {marker.data.count} ({marker.data.event})");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[
        StaticSchemaMarkerField {
            key: "event",
            label: "Event",
            format: MarkerFieldFormat::String,
            flags: MarkerFieldFlags::SEARCHABLE,
        },
        StaticSchemaMarkerField {
            key: "count",
            label: "Count",
            format: MarkerFieldFormat::Integer,
            flags: MarkerFieldFlags::empty(),
        },
    ];

    fn name(&self, _: &mut Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _: u32) -> StringHandle {
        self.event
    }

    fn number_field_value(&self, _: u32) -> f64 {
        self.count as f64
    }
}
