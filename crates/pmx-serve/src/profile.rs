//! `GET /debug/pprof/profile?seconds=N`: the whole machine's CPU profile
//! over the next N seconds, as a gzip-compressed pprof `profile.proto` —
//! what `go tool pprof`, Parca and Pyroscope scrape.
//!
//! One request is one sampling session ([`pmx_record::stream`], the
//! engine of `pmx record -a`: every online CPU, the default event —
//! cycles where the PMU has it, else cpu-clock — at `hz`, frame-pointer
//! call chains with kernel frames) streamed into memory, then one
//! snapshot through `pmx report --pprof`'s export
//! ([`pmx_profile::export::of_reader`]: the same replay and symbolizer,
//! functions, files and lines, mappings with build ids), filtered by the
//! [`query`]'s `pid` (only those processes are sampled), `comm` and
//! `cgroup` (samples of other threads are dropped), labelled `pid`, `tid`, `comm` and
//! `cgroup` (the process's cgroup read from `/proc/PID/cgroup` when the
//! profile is made: a process that exited meanwhile has none).
//!
//! - **Off-CPU** (`offcpu=1`): where threads waited instead, as `pmx
//!   record --off-cpu` records it (`sched:sched_switch` without BPF:
//!   docs/offcpu.md) on the same CPUs or `pid`s, with no CPU event (a
//!   `dummy` carries the side band); one sample type, `offcpu-time` in
//!   `nanoseconds` (and `offcpu-time_samples`, the waits), so `go tool
//!   pprof -top` ranks the functions that blocked by the time they
//!   waited, as Go's block profile. Only waits that end within the N
//!   seconds are in it.
//! - **Concurrency**: at most `sessions` profiles are sampled or exported
//!   at once (default 2);
//!   one more gets `429 Too Many Requests` with `Retry-After` (seconds
//!   until the first running one ends). Sessions are not shared: each
//!   request has its own length and rate.
//! - **A client that hangs up** stops its session: the event loop sets
//!   the job's flag ([`crate::event_loop::Answer::Later`]) and the session
//!   ends at its next drain (within 100 ms); nothing is exported. **One
//!   that vanishes** without a FIN (host gone) stops answering the TCP
//!   keepalive probes of its connection ([`crate::conn::Probes`],
//!   `profile-keepalive`): the socket fails within 4 × that and the
//!   session ends the same way. An answer its client does not read is
//!   dropped at the write deadline (`write-timeout`).
//! - **Memory**: a session's stream is capped ([`MAX_STREAM_BYTES`]); past
//!   it the answer is 503 with the reason.
//! - **Extra events** (`--profile-events 'cycles,instructions'`): each
//!   is sampled beside the CPU profile and becomes sample types of its
//!   own; in a sample-read group (`'{cycles,instructions}:S'`) the leader
//!   is sampled and each member is one more sample type, its deltas on
//!   the leader's stacks (`pmx_profile::export`). When they cannot be opened here (no PMU), the CPU profile is
//!   still served, with the reason in the `X-Pmx-Profile-Events` header
//!   and, once, in the log.

pub mod query;

use crate::http::Response;
use pmx_count::stat::Scope;
use pmx_record::{CallGraph, RecordError, RecordEvent, RecordOptions, SampleRate};
pub use query::{Limits, Query};
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest stream one session may write (about a million samples with
/// call chains); past it the session ends and the answer is 503.
pub const MAX_STREAM_BYTES: usize = 256 << 20;
/// Default longest profile, in seconds.
pub const DEFAULT_MAX_SECONDS: u64 = 300;
/// Default highest rate.
pub const DEFAULT_MAX_HZ: u32 = 1000;
/// Default most sessions at once.
pub const DEFAULT_SESSIONS: usize = 2;
/// Default seconds of silence before, and between, the TCP keepalive
/// probes of a profile's connection (`profile-keepalive`): a client that
/// vanished is noticed within 4 × this (20 s).
pub const DEFAULT_KEEPALIVE_SECONDS: u64 = 5;
/// Data pages per CPU ring (128 KiB with 4 KiB pages: 100 ms of samples
/// at the highest rate with deep stacks).
const RING_PAGES: usize = 32;

/// Data pages per CPU ring of an off-CPU profile (512 KiB): a
/// `sched_switch` sample with its stack at every switch of a busy
/// machine, drained every 100 ms at the latest.
const OFFCPU_RING_PAGES: usize = 128;

/// `dummy` (a software event that never samples): the side band of an
/// off-CPU profile, which has no CPU event.
fn dummy() -> RecordEvent {
    RecordEvent {
        name: "dummy".into(),
        attr: pmx_perf::Attr {
            type_: 1,
            config: 9,
            ..Default::default()
        },
        inherit: None,
        call_graph: None,
        group: None,
    }
}

/// How profiles are served.
#[derive(Debug, Clone)]
pub struct ProfileSettings {
    /// Served at all (off: 403 with the reason).
    pub enabled: bool,
    /// Why they are off (the 403's body).
    pub off_reason: String,
    /// Longest and fastest profile.
    pub limits: Limits,
    /// Most sessions at once.
    pub sessions: usize,
    /// The CPU profile's event (cycles or cpu-clock).
    pub event: RecordEvent,
    /// `--profile-events`: the extra sampling events, or why there are
    /// none here.
    pub extra: Option<Result<Vec<RecordEvent>, String>>,
    /// The symbolizer's settings, with the binary cache the profiles
    /// share (its series are in `/metrics`).
    pub symbols: pmx_symbols::SymbolOptions,
}

/// Where log lines go (shared with the session threads).
pub type SharedLog = Arc<dyn Fn(&str) + Send + Sync>;

/// The profile service: its settings and the running sessions.
pub struct Profiles {
    settings: ProfileSettings,
    /// (session, when it ends) of the running ones.
    running: Mutex<Vec<(u64, Instant)>>,
    next: AtomicU64,
    /// Profiles served.
    pub served: AtomicU64,
    /// Requests answered 429.
    pub refused: AtomicU64,
    /// Sessions a client's hang-up ended.
    pub abandoned: AtomicU64,
    /// Why the extra events are not sampled, once known.
    extra_failed: Mutex<Option<String>>,
    log: SharedLog,
}

/// A running session's place; dropping it frees the place.
pub struct Slot {
    profiles: Arc<Profiles>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.profiles.running).retain(|(id, _)| *id != self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A `Write` into a shared buffer, refusing to grow past a cap.
struct Capped(Arc<Mutex<Vec<u8>>>);

impl Write for Capped {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut v = lock(&self.0);
        if v.len() + b.len() > MAX_STREAM_BYTES {
            return Err(io::Error::other(format!(
                "the profile's stream passed {} MiB: ask for fewer seconds or a lower hz",
                MAX_STREAM_BYTES >> 20
            )));
        }
        v.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Profiles {
    /// The service; `log` gets its lines.
    pub fn new(settings: ProfileSettings, log: SharedLog) -> Profiles {
        let extra_failed = match &settings.extra {
            Some(Err(why)) => Some(why.clone()),
            _ => None,
        };
        if let Some(why) = &extra_failed {
            log(&format!("--profile-events not sampled: {why}"));
        }
        Profiles {
            settings,
            running: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            served: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            extra_failed: Mutex::new(extra_failed),
            log,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &ProfileSettings {
        &self.settings
    }

    /// Sessions running now.
    pub fn running(&self) -> usize {
        lock(&self.running).len()
    }

    /// A place for a session of `seconds`, or how long until one frees.
    pub fn admit(self: &Arc<Self>, seconds: u64) -> Result<Slot, u64> {
        let mut r = lock(&self.running);
        let now = Instant::now();
        if r.len() >= self.settings.sessions.max(1) {
            let first = r.iter().map(|(_, end)| *end).min().unwrap_or(now);
            let wait = first.saturating_duration_since(now).as_secs_f64().ceil() as u64;
            return Err(wait.max(1));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        r.push((id, now + Duration::from_secs(seconds)));
        Ok(Slot {
            profiles: Arc::clone(self),
            id,
        })
    }

    /// The events of one session: the CPU profile's and, unless known to
    /// fail here, the extra ones (their group leaders moved after it).
    fn events(&self, with_extra: bool) -> Vec<RecordEvent> {
        let mut events = vec![self.settings.event.clone()];
        if let (true, Some(Ok(extra))) = (with_extra, &self.settings.extra) {
            for e in extra {
                let mut e = e.clone();
                if let Some(g) = &mut e.group {
                    g.leader += 1;
                }
                events.push(e);
            }
        }
        events
    }

    /// Sample as `q` says until done or `gone`; the stream's bytes.
    fn record(&self, q: &Query, gone: &Arc<AtomicBool>) -> Result<Vec<u8>, RecordError> {
        let mut opts = RecordOptions {
            // `?pid=`: only those processes are sampled (and their
            // binaries symbolized), not every CPU's samples filtered.
            scope: match q.pids.is_empty() {
                true => Scope::Cpus(pmx_count::stat::online_cpus()),
                false => Scope::Pids(q.pids.iter().map(|&p| p as i32).collect()),
            },
            command: Vec::new(),
            inherit: false,
            rate: SampleRate::Frequency(u64::from(q.hz)),
            call_graph: CallGraph::Fp { max_stack: None },
            mmap_pages: RING_PAGES,
            duration: Some(Duration::from_secs(q.seconds)),
            output: "-".into(),
            cmdline: vec![
                "pmx".into(),
                "serve".into(),
                format!("/debug/pprof/profile?seconds={}&hz={}", q.seconds, q.hz),
            ],
            spawn: Default::default(),
            file: Default::default(),
        };
        let mut with_extra = lock(&self.extra_failed).is_none() && self.settings.extra.is_some();
        if q.offcpu {
            opts.file.off_cpu = Some(Default::default());
            opts.mmap_pages = OFFCPU_RING_PAGES;
            opts.cmdline[2].push_str("&offcpu=1");
            with_extra = false;
        }
        loop {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let out = Box::new(Capped(Arc::clone(&buf)));
            let events = match q.offcpu {
                true => vec![dummy()],
                false => self.events(with_extra),
            };
            match pmx_record::stream(&events, &opts, out, Arc::clone(gone)) {
                Ok(_) => return Ok(std::mem::take(&mut *lock(&buf))),
                Err(e @ (RecordError::Open(_) | RecordError::NotSampleable(_))) if with_extra => {
                    let why = e.to_string();
                    (self.log)(&format!(
                        "--profile-events not sampled: {why}; serving the CPU profile alone"
                    ));
                    *lock(&self.extra_failed) = Some(why);
                    with_extra = false;
                }
                Err(RecordError::NoTask) if !q.pids.is_empty() => {
                    return Err(RecordError::Invalid(format!(
                        "pid={}: no such process",
                        q.pids
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    )))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Take the profile `q` asks for (holding `slot`); `gone` is set
    /// when the client hangs up.
    /// The place is held until the export is done too, so at most
    /// `sessions` profiles are sampled or exported at once (and their
    /// memory is bounded by that).
    pub fn take(&self, q: &Query, slot: Slot, gone: Arc<AtomicBool>) -> Response {
        let _slot = slot;
        let t0 = Instant::now();
        let bytes = self.record(q, &gone);
        if gone.load(Ordering::SeqCst) {
            self.abandoned.fetch_add(1, Ordering::Relaxed);
            (self.log)(&format!(
                "profile abandoned after {:.1} s: the client hung up",
                t0.elapsed().as_secs_f64()
            ));
            return Response::text(499, "Client Closed Request", "gone\n");
        }
        let bytes = match bytes {
            Ok(b) => b,
            Err(RecordError::Io(e)) => return unavailable(&self.log, &e.to_string()),
            Err(RecordError::Invalid(why)) => {
                return Response::text(400, "Bad Request", &format!("{why}\n"))
            }
            Err(e) => return unavailable(&self.log, &format!("cannot sample: {e}")),
        };
        let t1 = Instant::now();
        let r = encode(bytes, q, &self.settings.symbols);
        give_back_free_memory(&self.settings.symbols.binaries);
        match r {
            Ok((body, samples)) => {
                self.served.fetch_add(1, Ordering::Relaxed);
                let mut r = Response {
                    status: 200,
                    reason: "OK",
                    content_type: "application/octet-stream",
                    headers: vec![
                        "Content-Disposition: attachment; filename=\"profile\"".into(),
                        format!("X-Pmx-Samples: {samples}"),
                        format!(
                            "X-Pmx-Timing: sampled {:.2} s, exported {:.2} s",
                            (t1 - t0).as_secs_f64(),
                            t1.elapsed().as_secs_f64()
                        ),
                    ],
                    body,
                };
                if let Some(why) = &*lock(&self.extra_failed) {
                    let why = why.replace(['\r', '\n'], " ");
                    r.headers
                        .push(format!("X-Pmx-Profile-Events: not sampled: {why}"));
                }
                r
            }
            Err(e) => unavailable(&self.log, &format!("cannot make the profile: {e}")),
        }
    }
}

/// Bring the binary cache back within its budget (lookups grew the tables
/// it holds since they were opened), then return the allocator's free
/// pages to the system. A profile's stream,
/// replay and export are freed when it is made, but the allocator keeps
/// the pages of its thread's arena (tens of MB after a profile of a busy
/// machine); the daemon stays for weeks, so they are given back.
fn give_back_free_memory(binaries: &pmx_symbols::BinaryCache) {
    binaries.shrink_to_capacity();
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn unavailable(log: &SharedLog, why: &str) -> Response {
    log(&format!("profile failed: {why}"));
    Response::text(503, "Service Unavailable", &format!("{why}\n"))
}

/// The cgroup path of `pid` (cgroup v2's, else the first hierarchy's).
fn cgroup_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = |l: &str| l.splitn(3, ':').nth(2).map(str::to_string);
    let v2 = text.lines().find(|l| l.starts_with("0::"));
    v2.or(text.lines().next()).and_then(path)
}

/// The stream's pprof, gzip-compressed, filtered by `q`; and its samples.
fn encode(
    bytes: Vec<u8>,
    q: &Query,
    symbols: &pmx_symbols::SymbolOptions,
) -> Result<(Vec<u8>, usize), String> {
    let mut reader =
        pmx_perfdata::Reader::new(io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let opts = pmx_profile::ReportOptions {
        // The rows are not used: the cheapest key, and no folded
        // stacks (the export's collector keeps its own).
        sort: "pid".into(),
        // An off-CPU profile's one event (not the dummy's).
        event: q.offcpu.then(|| "offcpu-time".to_string()),
        symbols: symbols.clone(),
        ..pmx_profile::ReportOptions::for_input("-")
    };
    let (_, mut x) = pmx_profile::export::of_reader(&mut reader, "pmx serve", &opts)
        .map_err(|e| e.to_string())?;
    let mut cgroups: HashMap<u32, Option<String>> = HashMap::new();
    for t in &mut x.threads {
        t.cgroup = cgroups
            .entry(t.pid)
            .or_insert_with(|| cgroup_of(t.pid))
            .clone();
    }
    x.retain_threads(|t| q.keeps(t.pid, &t.comm, t.cgroup.as_deref()));
    let mut out = Vec::new();
    x.write(pmx_profile::export::Format::Pprof, &mut out)
        .map_err(|e| e.to_string())?;
    Ok((out, x.samples.len()))
}
