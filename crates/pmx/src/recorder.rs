//! Periodic recording: a set of handles read together every N ms into an
//! in-memory buffer, then dumped as CSV — the per-CPU time series, as a
//! library.
//!
//! - A [`Handle`] is one quantity with a raw value per CPU: a perf event
//!   counting each CPU ([`PerfHandle`]) or an MSR read on each CPU through
//!   the msr driver ([`MsrHandle`], e.g. a counter `pmx_msr` programmed,
//!   the TSC, RAPL energy). Both backends give the same thing: raw `u64`s
//!   and the width at which they wrap.
//! - Each handle has a [`Transform`] applied to its raw per-CPU values
//!   before they are stored: none (the raw value), [`Transform::Delta`]
//!   (the change since the previous read, modulo 2^width, so a counter
//!   that wraps between two reads still gives the exact count), or a
//!   closure of the raw values now and at the previous read.
//! - [`Recorder::start`] takes a baseline read, then a background thread
//!   reads every handle every `interval` (on a fixed grid: a late wake-up
//!   skips ticks instead of drifting) into a buffer allocated up front for
//!   `capacity` samples, and stops when it is full or when asked.
//!   [`Recorder::sample`] takes one sample by hand (the same code path).
//! - [`Recorder::to_csv`]: `sample,time_s,cpu,<handle>…`, one row per
//!   sample and CPU (a handle that does not cover that CPU leaves its
//!   cell empty).
//!
//! ```
//! use pmx::recorder::{PerfHandle, Recorder, Transform};
//! use std::time::Duration;
//! let cpu_clock = PerfHandle::open("cpu-clock", &[0])?;
//! let mut rec = Recorder::new(Duration::from_millis(2), 3);
//! rec.add(cpu_clock, Transform::Delta);
//! let rec = rec.start()?.wait()?; // until 3 samples are taken
//! assert_eq!(rec.len(), 3);
//! print!("{}", rec.to_csv());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pmx_msr::MsrDevice;
use pmx_perf::{Attr, Counter, Target};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One quantity read on a set of CPUs.
pub trait Handle: Send {
    /// Column name in the CSV.
    fn name(&self) -> &str;
    /// The CPUs, in the order of [`Handle::read`]'s values.
    fn cpus(&self) -> &[u32];
    /// Read the raw value on every CPU into `out` (`cpus().len()` long).
    fn read(&mut self, out: &mut [u64]) -> io::Result<()>;
    /// Bits of the raw value: [`Transform::Delta`] takes differences
    /// modulo 2^width.
    fn width(&self) -> u32 {
        64
    }
}

/// A closure of (raw values now, raw values at the previous read, values
/// to store), one entry per CPU of the handle.
pub type TransformFn = Box<dyn FnMut(&[u64], &[u64], &mut [u64]) + Send>;

/// What is stored for a handle's raw values.
pub enum Transform {
    /// The raw values.
    None,
    /// The change since the previous read (the baseline for the first
    /// sample), modulo 2^width.
    Delta,
    /// Anything else: `f(now, previous, out)`.
    Custom(TransformFn),
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transform::None => "None",
            Transform::Delta => "Delta",
            Transform::Custom(_) => "Custom",
        })
    }
}

/// The mask of a `width`-bit value.
fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// A perf event counting every task on each of some CPUs (needs
/// `perf_event_paranoid` ≤ 0 or CAP_PERFMON).
pub struct PerfHandle {
    name: String,
    cpus: Vec<u32>,
    counters: Vec<Counter>,
}

impl std::fmt::Debug for PerfHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfHandle")
            .field("name", &self.name)
            .field("cpus", &self.cpus)
            .finish()
    }
}

impl PerfHandle {
    /// Open `spec` (one event, the CLI's grammar) on each of `cpus`,
    /// counting from now.
    pub fn open(spec: &str, cpus: &[u32]) -> Result<PerfHandle, crate::counters::Error> {
        let groups = crate::parse_event_list(spec)?;
        let n: usize = groups.iter().map(|g| g.members.len()).sum();
        if n != 1 {
            return Err(crate::counters::Error::Open(format!(
                "a recorder handle is one event; '{spec}' has {n}"
            )));
        }
        let defaults = crate::events_dirs::from_env();
        let plan = crate::counters::plan_groups(&groups, None, None, &defaults)?;
        let attr = plan.events[0]
            .attr
            .clone()
            .map_err(|why| crate::counters::Error::Open(format!("{spec}: {why}")))?;
        PerfHandle::open_attr(spec, &attr, cpus)
    }

    /// Open `attr` on each of `cpus`, named `name`.
    pub fn open_attr(
        name: &str,
        attr: &Attr,
        cpus: &[u32],
    ) -> Result<PerfHandle, crate::counters::Error> {
        let a = Attr {
            read_format: 0,
            disabled: false,
            ..attr.clone()
        };
        let counters = cpus
            .iter()
            .map(|&cpu| {
                Counter::open(
                    &a,
                    Target {
                        pid: -1,
                        cpu: cpu as i32,
                    },
                    None,
                )
                .map_err(|e| crate::counters::Error::Open(format!("{name} on CPU {cpu}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PerfHandle {
            name: name.to_string(),
            cpus: cpus.to_vec(),
            counters,
        })
    }
}

impl Handle for PerfHandle {
    fn name(&self) -> &str {
        &self.name
    }
    fn cpus(&self) -> &[u32] {
        &self.cpus
    }
    fn read(&mut self, out: &mut [u64]) -> io::Result<()> {
        for (o, c) in out.iter_mut().zip(&self.counters) {
            *o = c.read()?.value;
        }
        Ok(())
    }
}

/// An MSR read on each of some CPUs through [`MsrDevice`] (the driver's
/// `/dev/cpu/N/msr`, or fixture files in tests). Core- and package-scope
/// registers are read on every listed CPU: list one CPU per domain.
#[derive(Debug)]
pub struct MsrHandle {
    name: String,
    device: Arc<MsrDevice>,
    address: u32,
    cpus: Vec<u32>,
    width: u32,
}

impl MsrHandle {
    /// Read `address` on `cpus` of `device`; values wrap at `width` bits
    /// (48 for most counters, 32 for RAPL energy, 64 for the TSC).
    pub fn new(
        name: &str,
        device: Arc<MsrDevice>,
        address: u32,
        cpus: &[u32],
        width: u32,
    ) -> MsrHandle {
        MsrHandle {
            name: name.to_string(),
            device,
            address,
            cpus: cpus.to_vec(),
            width: width.clamp(1, 64),
        }
    }
}

impl MsrHandle {
    /// `register` (a name such as `IA32_TIME_STAMP_COUNTER` or an address such as
    /// `0x611`) read once per `scope` domain of every online CPU: every
    /// CPU for [`Scope::Thread`](crate::msr::Scope::Thread), one CPU per
    /// core or per package otherwise. The width is the register's: 32 bits
    /// for a RAPL energy counter, 48 for a PMU counter, 64 otherwise.
    /// Fails with the driver's or the permission's reason (`modprobe msr`,
    /// root).
    pub fn open(
        register: &str,
        scope: crate::msr::Scope,
    ) -> Result<MsrHandle, crate::msr::MsrCommandError> {
        MsrHandle::open_with(register, scope, &crate::msr::MsrSessionOptions::default())
    }

    /// [`MsrHandle::open`] with the devices, sysfs, CPUs and CPU model of
    /// `opts` (tests: fixture files).
    pub fn open_with(
        register: &str,
        scope: crate::msr::Scope,
        opts: &crate::msr::MsrSessionOptions,
    ) -> Result<MsrHandle, crate::msr::MsrCommandError> {
        let session = crate::msr::MsrSession::open(opts)?;
        let (reg, domains) = session.domains(register, scope)?;
        let width = match reg.msr.map(|m| m.def.role) {
            Some(pmx_msr::catalogue::Role::Energy) => 32,
            Some(pmx_msr::catalogue::Role::Counter) => pmx_msr::catalogue::DEFAULT_COUNTER_WIDTH,
            _ => 64,
        };
        let cpus: Vec<u32> = domains.iter().map(|d| d.cpu).collect();
        let device = Arc::new(session.into_device());
        Ok(MsrHandle::new(register, device, reg.address, &cpus, width))
    }
}

impl Handle for MsrHandle {
    fn name(&self) -> &str {
        &self.name
    }
    fn cpus(&self) -> &[u32] {
        &self.cpus
    }
    fn read(&mut self, out: &mut [u64]) -> io::Result<()> {
        for (o, &cpu) in out.iter_mut().zip(&self.cpus) {
            *o = self
                .device
                .read(cpu, self.address)
                .map_err(|e| io::Error::other(e.to_string()))?
                & mask(self.width);
        }
        Ok(())
    }
    fn width(&self) -> u32 {
        self.width
    }
}

struct Slot {
    handle: Box<dyn Handle>,
    transform: Transform,
    /// Where this handle's values start in a sample row.
    at: usize,
    prev: Vec<u64>,
    now: Vec<u64>,
}

/// The clock of the time column: ns since the start.
pub type Clock = Box<dyn FnMut() -> u64 + Send>;

/// Handles, an interval, a buffer: see the module documentation.
pub struct Recorder {
    slots: Vec<Slot>,
    interval: Duration,
    capacity: usize,
    /// Values per sample (sum of every handle's CPUs).
    width: usize,
    values: Vec<u64>,
    times: Vec<u64>,
    clock: Option<Clock>,
    started: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field(
                "handles",
                &self
                    .slots
                    .iter()
                    .map(|s| s.handle.name())
                    .collect::<Vec<_>>(),
            )
            .field("interval", &self.interval)
            .field("capacity", &self.capacity)
            .field("samples", &self.times.len())
            .finish()
    }
}

impl Recorder {
    /// A recorder reading every `interval` (at least 1 ms) until
    /// `capacity` samples are stored.
    pub fn new(interval: Duration, capacity: usize) -> Recorder {
        Recorder {
            slots: Vec::new(),
            interval: interval.max(Duration::from_millis(1)),
            capacity,
            width: 0,
            values: Vec::new(),
            times: Vec::new(),
            clock: None,
            started: false,
        }
    }

    /// Add a handle and what to store of it. Handles added after the
    /// first sample are refused (the rows would not line up).
    pub fn add(&mut self, handle: impl Handle + 'static, transform: Transform) -> &mut Recorder {
        if self.started {
            return self;
        }
        let n = handle.cpus().len();
        self.slots.push(Slot {
            handle: Box::new(handle),
            transform,
            at: self.width,
            prev: vec![0; n],
            now: vec![0; n],
        });
        self.width += n;
        self
    }

    /// Take the time column from `clock` (ns since the start) instead of
    /// the monotonic clock — for reproducible output.
    pub fn with_clock(&mut self, clock: Clock) -> &mut Recorder {
        self.clock = Some(clock);
        self
    }

    /// The baseline read: every handle's values that the first sample's
    /// deltas start from (and time zero of the default clock). Done by
    /// [`Recorder::start`], and by the first [`Recorder::sample`] when not
    /// called before; later calls do nothing.
    pub fn read_baseline(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        self.values.reserve_exact(self.capacity * self.width);
        self.times.reserve_exact(self.capacity);
        if self.clock.is_none() {
            let t0 = Instant::now();
            self.clock = Some(Box::new(move || t0.elapsed().as_nanos() as u64));
        }
        for s in &mut self.slots {
            s.handle.read(&mut s.prev)?;
        }
        Ok(())
    }

    /// Read every handle once and store the transformed values; `false`
    /// (and nothing read) when the buffer is full. The first call reads
    /// the baseline first.
    pub fn sample(&mut self) -> io::Result<bool> {
        self.read_baseline()?;
        if self.times.len() >= self.capacity {
            return Ok(false);
        }
        // Read everything first, as close together as possible.
        for s in &mut self.slots {
            s.handle.read(&mut s.now)?;
        }
        let t = self.clock.as_mut().map_or(0, |c| c());
        let row = self.values.len();
        self.values.resize(row + self.width, 0);
        for s in &mut self.slots {
            let out = &mut self.values[row + s.at..row + s.at + s.now.len()];
            match &mut s.transform {
                Transform::None => out.copy_from_slice(&s.now),
                Transform::Delta => {
                    let m = mask(s.handle.width());
                    for ((o, n), p) in out.iter_mut().zip(&s.now).zip(&s.prev) {
                        *o = n.wrapping_sub(*p) & m;
                    }
                }
                Transform::Custom(f) => f(&s.now, &s.prev, out),
            }
            std::mem::swap(&mut s.prev, &mut s.now);
        }
        self.times.push(t);
        Ok(true)
    }

    /// Read the baseline now and sample every interval on a background
    /// thread until the buffer is full or [`Running::stop`].
    pub fn start(mut self) -> io::Result<Running> {
        self.read_baseline()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let join = std::thread::Builder::new()
            .name("pmx-recorder".to_string())
            .spawn(move || {
                let t0 = Instant::now();
                let mut next = t0 + self.interval;
                let mut err = None;
                while !flag.load(Ordering::Relaxed) && !self.is_full() {
                    let now = Instant::now();
                    if next > now {
                        // Sleep in short steps so stop is prompt.
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    if let Err(e) = self.sample() {
                        err = Some(e);
                        break;
                    }
                    next = crate::stat::next_tick_after(t0, self.interval, Instant::now())
                        .max(next + self.interval);
                }
                (self, err)
            })?;
        Ok(Running { stop, join })
    }

    /// The baseline was read: handles can no longer be added.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Samples stored.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// No sample stored yet.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The buffer is full.
    pub fn is_full(&self) -> bool {
        self.times.len() >= self.capacity
    }

    /// Sample `i`: its time (ns since the start) and the stored values of
    /// handle `h`, one per CPU of the handle.
    pub fn get(&self, i: usize, h: usize) -> Option<(u64, &[u64])> {
        let s = self.slots.get(h)?;
        let t = *self.times.get(i)?;
        let row = i * self.width + s.at;
        Some((t, &self.values[row..row + s.handle.cpus().len()]))
    }

    /// The handles, in the order added: name and CPUs of each (the
    /// columns of [`Recorder::get`]'s values).
    pub fn handles(&self) -> Vec<(&str, &[u32])> {
        self.slots
            .iter()
            .map(|s| (s.handle.name(), s.handle.cpus()))
            .collect()
    }

    /// The time of every sample, ns since the start.
    pub fn times(&self) -> &[u64] {
        &self.times
    }

    /// [`Recorder::to_csv`] written to `path`.
    pub fn write_csv(&self, path: &std::path::Path) -> io::Result<()> {
        std::fs::write(path, self.to_csv())
    }

    /// `sample,time_s,cpu,<handle>…`: one row per sample and CPU, CPUs
    /// ascending; empty where a handle does not cover the CPU.
    pub fn to_csv(&self) -> String {
        let mut cpus: Vec<u32> = self
            .slots
            .iter()
            .flat_map(|s| s.handle.cpus().iter().copied())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let mut out = String::from("sample,time_s,cpu");
        for s in &self.slots {
            out.push(',');
            let n = s.handle.name();
            if n.contains(',') || n.contains('"') {
                out.push_str(&format!("\"{}\"", n.replace('"', "\"\"")));
            } else {
                out.push_str(n);
            }
        }
        out.push('\n');
        for (i, &t) in self.times.iter().enumerate() {
            for &cpu in &cpus {
                out.push_str(&format!(
                    "{},{}.{:09},{cpu}",
                    i + 1,
                    t / 1_000_000_000,
                    t % 1_000_000_000
                ));
                for s in &self.slots {
                    out.push(',');
                    if let Some(k) = s.handle.cpus().iter().position(|&c| c == cpu) {
                        out.push_str(&self.values[i * self.width + s.at + k].to_string());
                    }
                }
                out.push('\n');
            }
        }
        out
    }
}

/// A recorder sampling on its background thread.
#[derive(Debug)]
pub struct Running {
    stop: Arc<AtomicBool>,
    join: std::thread::JoinHandle<(Recorder, Option<io::Error>)>,
}

impl Running {
    /// Stop now (the samples so far are kept) and get the recorder back.
    pub fn stop(self) -> io::Result<Recorder> {
        self.stop.store(true, Ordering::Relaxed);
        self.wait()
    }

    /// Wait until the buffer is full (or the thread stopped on an error).
    pub fn wait(self) -> io::Result<Recorder> {
        let (rec, err) = self
            .join
            .join()
            .map_err(|_| io::Error::other("the recorder thread panicked"))?;
        match err {
            Some(e) => Err(e),
            None => Ok(rec),
        }
    }

    /// The background thread has finished (buffer full or error).
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle whose values the test sets.
    struct Fake {
        cpus: Vec<u32>,
        values: Arc<std::sync::Mutex<Vec<u64>>>,
        width: u32,
    }

    impl Handle for Fake {
        fn name(&self) -> &str {
            "fake"
        }
        fn cpus(&self) -> &[u32] {
            &self.cpus
        }
        fn read(&mut self, out: &mut [u64]) -> io::Result<()> {
            out.copy_from_slice(&self.values.lock().unwrap());
            Ok(())
        }
        fn width(&self) -> u32 {
            self.width
        }
    }

    #[test]
    fn delta_wraps_at_the_width_and_the_buffer_stops_when_full() {
        let v = Arc::new(std::sync::Mutex::new(vec![250u64, 10]));
        let mut rec = Recorder::new(Duration::from_millis(1), 2);
        rec.add(
            Fake {
                cpus: vec![0, 1],
                values: v.clone(),
                width: 8,
            },
            Transform::Delta,
        );
        let mut tick = 0;
        rec.with_clock(Box::new(move || {
            tick += 1000;
            tick
        }));
        rec.read_baseline().unwrap();
        *v.lock().unwrap() = vec![4, 11]; // 250 → 4 wraps at 8 bits: +10
        assert!(rec.sample().unwrap());
        *v.lock().unwrap() = vec![5, 20];
        assert!(rec.sample().unwrap());
        assert!(!rec.sample().unwrap(), "full");
        assert_eq!(rec.get(0, 0), Some((1000, &[10u64, 1][..])));
        assert_eq!(rec.get(1, 0), Some((2000, &[1u64, 9][..])));
        assert_eq!(
            rec.to_csv(),
            "sample,time_s,cpu,fake\n1,0.000001000,0,10\n1,0.000001000,1,1\n\
             2,0.000002000,0,1\n2,0.000002000,1,9\n"
        );
    }

    #[test]
    fn a_custom_transform_sees_now_and_previous() {
        let v = Arc::new(std::sync::Mutex::new(vec![100u64]));
        let mut rec = Recorder::new(Duration::from_millis(1), 1);
        rec.add(
            Fake {
                cpus: vec![3],
                values: v.clone(),
                width: 64,
            },
            Transform::Custom(Box::new(|now, prev, out| out[0] = now[0] * 1000 + prev[0])),
        );
        rec.read_baseline().unwrap();
        *v.lock().unwrap() = vec![7];
        rec.sample().unwrap();
        assert_eq!(rec.get(0, 0).unwrap().1, &[7100]);
    }
}
