//! The daemon: the listener and its event loop ([`crate::event_loop`]),
//! the hotplug watch, the scrape, and a clean stop.

use crate::collect::{Collector, Snapshot};
use crate::config::Per;
use crate::conn::{Probes, Timeouts};
use crate::event_loop::{Answer, EventLoop, Handler, Limits};
use crate::http::{Request, Response};
use crate::profile::{ProfileSettings, Profiles, Query, SharedLog};
use crate::render::{self, Family, Format, Kind, Value};
use pmx_count::metrics::MetricSet;
use pmx_count::stat::{aggregate, Aggregation, Domain, EventStatus, Instance, Row, StatPlan};
use pmx_model::topology::{LogicalCpu, Topology};
use pmx_sys::signal;
use pmx_sys::SysRoot;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Default seconds a client has to read an answer (`write-timeout`).
pub const DEFAULT_WRITE_TIMEOUT_SECONDS: u64 = 10;

/// How many scrapers' windows are remembered (by client address).
pub const MAX_CLIENTS: usize = 256;

/// Daemon settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to listen (default `127.0.0.1:9464`; port 0 picks one).
    pub listen: SocketAddr,
    /// Series per CPU, core or socket.
    pub per: Per,
    /// Most connections open at once; at the limit the one that has
    /// waited on its client the longest is closed to make room.
    pub max_connections: usize,
    /// Worker threads answering requests.
    pub workers: usize,
    /// How often the online-CPU list is checked.
    pub hotplug_every: Duration,
    /// Where `sys/devices/system/cpu` is read for the topology.
    pub sys_root: SysRoot,
    /// How long a keep-alive connection may stay idle.
    pub idle_timeout: Duration,
    /// How long a client may take to send a request head (from accept,
    /// or from its first byte on a keep-alive connection).
    pub head_timeout: Duration,
    /// How long a client may take to read a response.
    pub write_timeout: Duration,
    /// TCP keepalive of a profile's connection.
    pub probes: Probes,
    /// `/debug/pprof/profile`, when served (`None`: 404).
    pub profiles: Option<ProfileSettings>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: crate::config::DEFAULT_LISTEN
                .parse()
                .expect("valid address"),
            per: Per::Cpu,
            max_connections: crate::config::DEFAULT_MAX_CONNECTIONS,
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(2, 4),
            hotplug_every: Duration::from_secs(1),
            sys_root: SysRoot::host(),
            idle_timeout: Duration::from_secs(30),
            head_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(DEFAULT_WRITE_TIMEOUT_SECONDS),
            probes: Probes::every(crate::profile::DEFAULT_KEEPALIVE_SECONDS),
            profiles: None,
        }
    }
}

/// A stop request: a self-pipe that a signal handler, another thread or a
/// test can write to, so the accept loop wakes at once.
#[derive(Debug)]
pub struct Stop {
    read: OwnedFd,
    write: OwnedFd,
}

static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    let fd = SIGNAL_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a local.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

impl Stop {
    /// A new stop pipe.
    pub fn new() -> io::Result<Stop> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two fds into the array.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned by nobody else.
        Ok(unsafe {
            Stop {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            }
        })
    }

    /// A handle that triggers this stop from another thread.
    pub fn trigger_handle(&self) -> io::Result<StopTrigger> {
        Ok(StopTrigger {
            fd: self.write.try_clone()?,
        })
    }

    /// Make SIGTERM and SIGINT trigger this stop (for the process's
    /// lifetime; the handler only writes one byte to the pipe).
    pub fn install_signal_handlers(&self) -> io::Result<()> {
        let fd = self.write.try_clone()?;
        // Leaked on purpose: the handler may use it until the process ends.
        let raw = fd.as_raw_fd();
        std::mem::forget(fd);
        SIGNAL_FD.store(raw, Ordering::SeqCst);
        // The handler only calls write(2) on a pipe.
        for sig in [libc::SIGTERM, libc::SIGINT] {
            signal::handle(sig, on_stop_signal, signal::RESTART, &[])?;
        }
        // A scraper that goes away mid-write must not kill the daemon.
        let _ = signal::ignore(libc::SIGPIPE);
        Ok(())
    }
}

/// Triggers a [`Stop`] from anywhere.
#[derive(Debug)]
pub struct StopTrigger {
    fd: OwnedFd,
}

impl StopTrigger {
    /// Ask the daemon to stop.
    pub fn trigger(&self) {
        let b = 1u8;
        // SAFETY: one byte from a local into our pipe.
        unsafe { libc::write(self.fd.as_raw_fd(), (&b as *const u8).cast(), 1) };
    }
}

/// Where log lines go.
pub type Log = Box<dyn Fn(&str) + Send + Sync>;

struct Shared {
    collector: Mutex<Collector>,
    plan: StatPlan,
    pmus: Vec<String>,
    metrics: Option<MetricSet>,
    how: Aggregation,
    topo: Mutex<Topology>,
    clients: Mutex<HashMap<IpAddr, Snapshot>>,
    start: Snapshot,
    start_unix: f64,
    scrapes: AtomicU64,
    log: SharedLog,
    opts: Options,
    profiles: Option<Arc<Profiles>>,
    /// Metrics whose missing value was already logged.
    missing_logged: Mutex<std::collections::BTreeSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicked scrape must not take the daemon down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The PMU names of the kernel's perf types, from
/// `sys/bus/event_source/devices/*/type`, with the generic types named as
/// the kernel's constants are.
pub fn pmu_names(root: &SysRoot) -> HashMap<u32, String> {
    let mut m: HashMap<u32, String> = HashMap::new();
    m.insert(0, "hardware".into());
    m.insert(1, "software".into());
    m.insert(2, "tracepoint".into());
    m.insert(3, "hw_cache".into());
    m.insert(4, "raw".into());
    m.insert(5, "breakpoint".into());
    if let Ok(rd) = std::fs::read_dir(root.path("sys/bus/event_source/devices")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Ok(t) = std::fs::read_to_string(e.path().join("type")) {
                if let Ok(t) = t.trim().parse::<u32>() {
                    if t > 1 || !m.contains_key(&t) {
                        m.insert(t, name);
                    }
                }
            }
        }
    }
    m
}

/// The running daemon, bound and counting.
pub struct Daemon {
    shared: Arc<Shared>,
    listener: TcpListener,
    stop: Stop,
}

fn read_topology(root: &SysRoot) -> Topology {
    let mut problems = Vec::new();
    pmx_sys::topology::read_topology(root, &mut problems)
}

/// A fresh topology, keeping the place of CPUs the kernel no longer
/// describes (offline CPUs lose `topology/`).
fn merge_topology(old: &Topology, new: Topology) -> Topology {
    let mut cpus: Vec<LogicalCpu> = new.cpus;
    for c in &mut cpus {
        if c.package.is_none() || c.core.is_none() {
            if let Some(o) = old.cpu(c.cpu) {
                c.package = c.package.or(o.package);
                c.core = c.core.or(o.core);
                c.die = c.die.or(o.die);
            }
        }
    }
    for o in &old.cpus {
        if !cpus.iter().any(|c| c.cpu == o.cpu) {
            let mut o = o.clone();
            o.online = false;
            cpus.push(o);
        }
    }
    Topology::new(cpus)
}

impl Daemon {
    /// Bind `opts.listen` and get ready to serve `collector`'s counters
    /// (and `metrics` over them).
    pub fn bind(
        collector: Collector,
        metrics: Option<MetricSet>,
        opts: Options,
        log: Log,
    ) -> io::Result<Daemon> {
        let listener = TcpListener::bind(opts.listen)?;
        let mut collector = collector;
        let plan = collector.plan().clone();
        let names = pmu_names(&opts.sys_root);
        let pmus = plan
            .events
            .iter()
            .map(|e| match &e.attr {
                Ok(a) => names
                    .get(&a.type_)
                    .cloned()
                    .unwrap_or_else(|| format!("type{}", a.type_)),
                Err(_) => "unknown".to_string(),
            })
            .collect();
        let start = collector.read();
        for l in collector.take_log() {
            log(&l);
        }
        let topo = read_topology(&opts.sys_root);
        let log: SharedLog = Arc::from(log);
        let profiles =
            (opts.profiles.clone()).map(|p| Arc::new(Profiles::new(p, Arc::clone(&log))));
        let shared = Arc::new(Shared {
            collector: Mutex::new(collector),
            plan,
            pmus,
            metrics,
            how: opts.per.aggregation(),
            topo: Mutex::new(topo),
            clients: Mutex::new(HashMap::new()),
            start,
            start_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            scrapes: AtomicU64::new(0),
            log,
            opts,
            profiles,
            missing_logged: Mutex::new(Default::default()),
        });
        Ok(Daemon {
            shared,
            listener,
            stop: Stop::new()?,
        })
    }

    /// The address actually bound (the port when 0 was asked for).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// This daemon's stop pipe (to install signal handlers or get a
    /// trigger).
    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// One scrape's body, as a client at `peer` would get it (for tests
    /// and benchmarks that bypass HTTP).
    pub fn scrape_text(&self, peer: IpAddr, format: Format) -> String {
        self.shared.scrape(peer, format)
    }

    /// Serve until stopped; then close every connection and the counters.
    pub fn run(self) -> io::Result<()> {
        let shared = self.shared;
        let o = &shared.opts;
        let limits = Limits {
            max_connections: o.max_connections.max(1),
            workers: o.workers.max(1),
            timeouts: Timeouts {
                head: o.head_timeout,
                idle: o.idle_timeout,
                write: o.write_timeout,
                drain: Duration::from_millis(200),
                probes: o.probes,
            },
        };
        let every = o.hotplug_every;
        let lp = EventLoop::new(self.listener, Arc::clone(&shared), limits)?;
        let sh = Arc::clone(&shared);
        lp.run(self.stop.read.as_raw_fd(), every, &mut || sh.hotplug())?;
        (shared.log)("stopped");
        Ok(())
    }
}

impl Handler for Shared {
    fn respond(&self, req: &Request, peer: IpAddr) -> Answer {
        if req.path == "/debug/pprof/profile" {
            return self.profile(req);
        }
        Shared::respond(self, req, peer).into()
    }

    fn log(&self, line: &str) {
        (self.log)(line)
    }
}

fn domain_labels(d: &Domain) -> Vec<(&'static str, String)> {
    match d {
        Domain::Cpu { cpu } => vec![("cpu", cpu.to_string())],
        Domain::Core { package, core } => {
            vec![("socket", package.to_string()), ("core", core.to_string())]
        }
        Domain::Socket { package } => vec![("socket", package.to_string())],
        Domain::Die { package, die } => {
            vec![("socket", package.to_string()), ("die", die.to_string())]
        }
        Domain::Cache { level, id, .. } => {
            vec![("cache", format!("L{level}")), ("id", id.to_string())]
        }
        Domain::Node { node } => vec![("node", node.to_string())],
        Domain::Thread { tid } => vec![("tid", tid.to_string())],
        Domain::Total => Vec::new(),
    }
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pmx serve</title></head>\n<body><h1>pmx serve</h1>\n<p>Performance counters of this machine, counted system-wide, for Prometheus: <a href=\"/metrics\">/metrics</a>.</p>\n";

impl Shared {
    /// `/debug/pprof/profile`: checked here, taken on a thread of its own.
    fn profile(&self, req: &Request) -> Answer {
        let Some(p) = &self.profiles else {
            return Response::text(404, "Not Found", "not found: try /metrics\n").into();
        };
        if req.method != "GET" {
            let mut r = Response::text(405, "Method Not Allowed", "only GET\n");
            r.headers.push("Allow: GET".to_string());
            return r.into();
        }
        let s = p.settings();
        if !s.enabled {
            return Response::text(403, "Forbidden", &format!("{}\n", s.off_reason)).into();
        }
        let q = match Query::parse(&req.query, s.limits) {
            Ok(q) => q,
            Err(why) => return Response::text(400, "Bad Request", &format!("{why}\n")).into(),
        };
        match p.admit(q.seconds) {
            Ok(slot) => {
                let p = Arc::clone(p);
                Answer::Later(Box::new(move |gone| p.take(&q, slot, gone)))
            }
            Err(wait) => {
                p.refused.fetch_add(1, Ordering::Relaxed);
                let mut r = Response::text(
                    429,
                    "Too Many Requests",
                    &format!(
                        "{} profiles are being taken (the most at once); retry in {wait} s\n",
                        p.running()
                    ),
                );
                r.headers.push(format!("Retry-After: {wait}"));
                r.into()
            }
        }
    }

    fn respond(&self, req: &Request, peer: IpAddr) -> Response {
        let get = req.method == "GET" || req.method == "HEAD";
        match req.path.as_str() {
            "/metrics" | "/" if !get => {
                let mut r = Response::text(405, "Method Not Allowed", "only GET and HEAD\n");
                r.headers.push("Allow: GET, HEAD".to_string());
                r
            }
            "/metrics" => {
                let format = Format::negotiate(req.accept.as_deref());
                let body = if req.method == "HEAD" {
                    String::new()
                } else {
                    self.scrape(peer, format)
                };
                Response {
                    status: 200,
                    reason: "OK",
                    content_type: format.content_type(),
                    headers: Vec::new(),
                    body: body.into_bytes(),
                }
            }
            "/" => {
                let mut page = String::from(INDEX);
                page.push_str("<p>Events:</p><ul>\n");
                let status = lock(&self.collector).status().to_vec();
                for (i, e) in self.plan.events.iter().enumerate() {
                    let st = match &status[i] {
                        EventStatus::Counted => "counted".to_string(),
                        EventStatus::NotSupported(r) => format!("not supported: {r}"),
                        EventStatus::NotCounted(r) => format!("not counted: {r}"),
                    };
                    page.push_str(&format!(
                        "<li><code>{}</code> ({}): {}</li>\n",
                        html_escape(&e.name),
                        html_escape(&self.pmus[i]),
                        html_escape(&st)
                    ));
                }
                page.push_str("</ul></body></html>\n");
                Response {
                    status: 200,
                    reason: "OK",
                    content_type: "text/html; charset=utf-8",
                    headers: Vec::new(),
                    body: page.into_bytes(),
                }
            }
            _ => Response::text(404, "Not Found", "not found: try /metrics\n"),
        }
    }

    fn hotplug(&self) {
        let result = lock(&self.collector).sync();
        match result {
            Ok(change) => {
                if change.added.is_empty() && change.removed.is_empty() {
                    return;
                }
                let list = |v: &[u32]| pmx_model::topology::format_cpu_list(v);
                if !change.added.is_empty() {
                    (self.log)(&format!(
                        "CPU {} online: counters opened",
                        list(&change.added)
                    ));
                }
                if !change.removed.is_empty() {
                    (self.log)(&format!(
                        "CPU {} offline: counters closed, their series dropped",
                        list(&change.removed)
                    ));
                }
                let fresh = read_topology(&self.opts.sys_root);
                let mut t = lock(&self.topo);
                *t = merge_topology(&t, fresh);
            }
            Err(e) => (self.log)(&format!("cannot read the online CPUs: {e}")),
        }
        for l in lock(&self.collector).take_log() {
            (self.log)(&l);
        }
    }

    fn instances(
        &self,
        counts: &std::collections::BTreeMap<(u32, usize), pmx_model::count::Count>,
        snap: &Snapshot,
    ) -> Vec<Instance> {
        counts
            .iter()
            .filter(|((cpu, _), _)| self.how != Aggregation::PerCpu || snap.online.contains(cpu))
            .map(|(&(cpu, event), &count)| Instance {
                event,
                cpu: cpu as i32,
                tid: -1,
                count,
            })
            .collect()
    }

    fn scrape(&self, peer: IpAddr, format: Format) -> String {
        let t0 = Instant::now();
        // One step under the collector's lock: the read, the scrape's
        // number and the client's window. Workers scrape concurrently;
        // this keeps a client's windows in the order of its reads, so no
        // delta is ever taken against a later snapshot.
        let (n, snap, status, log, prev) = {
            let mut c = lock(&self.collector);
            let n = self.scrapes.fetch_add(1, Ordering::SeqCst) + 1;
            let s = c.read();
            let mut clients = lock(&self.clients);
            if clients.len() >= MAX_CLIENTS && !clients.contains_key(&peer) {
                if let Some(oldest) = clients.iter().min_by_key(|(_, s)| s.at).map(|(k, _)| *k) {
                    clients.remove(&oldest);
                }
            }
            let prev = clients.insert(peer, s.clone());
            (n, s, c.status().to_vec(), c.take_log(), prev)
        };
        for l in log {
            (self.log)(&l);
        }
        let prev = prev.as_ref().unwrap_or(&self.start);
        let window = match (snap.at, prev.at) {
            (Some(a), Some(b)) => a.saturating_duration_since(b).as_secs_f64(),
            _ => 0.0,
        };
        let topo = lock(&self.topo).clone();
        let rows = aggregate(
            &self.plan,
            &self.instances(&snap.counts, &snap),
            self.how,
            Some(&topo),
        );
        let delta = snap.delta_since(prev);
        let iv_rows = aggregate(
            &self.plan,
            &self.instances(&delta, &snap),
            self.how,
            Some(&topo),
        );
        let mut fams = self.families(&rows, &iv_rows, &status, window, &snap);
        let mut up = Family::new(
            "pmx_up",
            Kind::Gauge,
            "1 when every counter was read in this scrape, 0 when some read failed (their last values are shown).",
        );
        up.push(vec![], Value::Int(u64::from(snap.read_errors == 0)));
        fams.push(up);
        let mut scrapes = Family::new(
            "pmx_scrapes",
            Kind::Counter,
            "Scrapes of /metrics served since pmx serve started, this one included.",
        );
        scrapes.push(vec![], Value::Int(n));
        fams.push(scrapes);
        let mut dur = Family::new(
            "pmx_scrape_duration_seconds",
            Kind::Gauge,
            "Time this scrape took to read the counters and compute the series, before writing them.",
        )
        .with_unit("seconds");
        dur.push(vec![], Value::Float(t0.elapsed().as_secs_f64()));
        fams.push(dur);
        render::render(&fams, format)
    }

    fn families(
        &self,
        rows: &[Row],
        iv_rows: &[Row],
        status: &[EventStatus],
        window: f64,
        snap: &Snapshot,
    ) -> Vec<Family> {
        let mut info = Family::new("pmx_build", Kind::Info, "pmx version.");
        info.push(
            vec![("version", env!("CARGO_PKG_VERSION").to_string())],
            Value::Int(1),
        );
        let mut start = Family::new(
            "pmx_start_time_seconds",
            Kind::Gauge,
            "When pmx serve started counting, in seconds since the Unix epoch.",
        )
        .with_unit("seconds");
        start.push(vec![], Value::Float(self.start_unix));
        let mut supported = Family::new(
            "pmx_event_supported",
            Kind::Gauge,
            "1 when the event is counted on at least one CPU, 0 when it cannot be counted here (the log says why).",
        );
        for (i, e) in self.plan.events.iter().enumerate() {
            supported.push(
                vec![("event", e.name.clone()), ("pmu", self.pmus[i].clone())],
                Value::Int(u64::from(status[i] == EventStatus::Counted)),
            );
        }
        let mut total = Family::new(
            "pmx_events",
            Kind::Counter,
            "Raw event counts since pmx serve started, not scaled for multiplexing (clocks in nanoseconds). Scaled rate: rate(pmx_events_total) * rate(pmx_event_enabled_seconds_total) / rate(pmx_event_running_seconds_total).",
        );
        let mut enabled = Family::new(
            "pmx_event_enabled_seconds",
            Kind::Counter,
            "Time the event's counters were enabled, summed over the domain's CPUs.",
        )
        .with_unit("seconds");
        let mut running = Family::new(
            "pmx_event_running_seconds",
            Kind::Counter,
            "Time the event's counters were on the PMU, summed over the domain's CPUs.",
        )
        .with_unit("seconds");
        let mut ratio = Family::new(
            "pmx_event_running_ratio",
            Kind::Gauge,
            "Share of the enabled time the event was on the PMU since this scraper's previous scrape; below 0.7 a scaled value is an estimate.",
        );
        for r in rows {
            if r.instances == 0 || status[r.event] != EventStatus::Counted {
                continue;
            }
            let mut labels = vec![
                ("event", self.plan.events[r.event].name.clone()),
                ("pmu", self.pmus[r.event].clone()),
            ];
            labels.extend(domain_labels(&r.domain));
            total.push(labels.clone(), Value::Int(r.count.value));
            enabled.push(labels.clone(), Value::Float(r.count.enabled as f64 / 1e9));
            running.push(labels, Value::Float(r.count.running as f64 / 1e9));
        }
        for r in iv_rows {
            if r.instances == 0 || status[r.event] != EventStatus::Counted {
                continue;
            }
            if let Some(share) = r.count.running_share() {
                let mut labels = vec![
                    ("event", self.plan.events[r.event].name.clone()),
                    ("pmu", self.pmus[r.event].clone()),
                ];
                labels.extend(domain_labels(&r.domain));
                ratio.push(labels, Value::Float(share));
            }
        }
        let mut win = Family::new(
            "pmx_window_seconds",
            Kind::Gauge,
            "Length of the window the gauges cover: the time since this scraper's previous scrape (since the start for its first).",
        )
        .with_unit("seconds");
        win.push(vec![], Value::Float(window));
        let mut cpus = Family::new(
            "pmx_cpus_counted",
            Kind::Gauge,
            "Online CPUs with open counters.",
        );
        cpus.push(vec![], Value::Int(snap.online.len() as u64));
        let mut out = vec![
            info, start, supported, total, enabled, running, ratio, win, cpus,
        ];
        if let Some(p) = &self.profiles {
            out.extend(profile_families(p));
        }
        if let Some(m) = &self.metrics {
            let mut value = Family::new(
                "pmx_metric",
                Kind::Gauge,
                "Derived metrics over the window since this scraper's previous scrape; a metric with a missing input has no sample.",
            );
            let mut rel = Family::new(
                "pmx_metric_reliability",
                Kind::Gauge,
                "Smallest running share among a metric's inputs over the window; below 0.7 the metric is an estimate.",
            );
            for (domain, v) in m.evaluate_rows(
                &self.plan,
                status,
                iv_rows,
                window,
                "did not run in the window",
            ) {
                let mut labels = vec![("metric", v.name.clone())];
                labels.extend(domain_labels(&domain));
                if let Some(x) = v.value {
                    value.push(labels.clone(), Value::Float(x));
                    if let Some(r) = v.reliability {
                        rel.push(labels, Value::Float(r));
                    }
                } else if let Some(why) = &v.missing {
                    // Said once per metric: an input that cannot be
                    // counted here stays missing.
                    if lock(&self.missing_logged).insert(v.name.clone()) {
                        (self.log)(&format!("metric {}: no value: {why}", v.name));
                    }
                }
            }
            out.push(value);
            out.push(rel);
        }
        out
    }
}

/// The profile service's series.
fn profile_families(p: &Profiles) -> Vec<Family> {
    let mut running = Family::new(
        "pmx_profile_sessions",
        Kind::Gauge,
        "Profiles of /debug/pprof/profile being taken now.",
    );
    running.push(vec![], Value::Int(p.running() as u64));
    let mut out = vec![running];
    for (name, help, n) in [
        ("pmx_profiles", "Profiles served.", &p.served),
        (
            "pmx_profiles_refused",
            "Profile requests answered 429 (too many at once).",
            &p.refused,
        ),
        (
            "pmx_profiles_abandoned",
            "Profiles whose client hung up before the end; their sessions were stopped.",
            &p.abandoned,
        ),
    ] {
        let mut f = Family::new(name, Kind::Counter, help);
        f.push(vec![], Value::Int(n.load(Ordering::Relaxed)));
        out.push(f);
    }
    // The binaries whose symbol and line tables successive profiles share
    // (`pmx_symbols::BinaryCache`): a reads count that grows with every
    // profile of the same processes means the capacity is too small.
    let binaries = &p.settings().symbols.binaries;
    let c = binaries.stats();
    for (name, kind, help, v) in [
        (
            "pmx_profile_binaries",
            Kind::Gauge,
            "Binaries whose symbol tables are kept for the next profile.",
            c.binaries as u64,
        ),
        (
            "pmx_profile_binary_bytes",
            Kind::Gauge,
            "Bytes those tables hold (estimate).",
            c.bytes as u64,
        ),
        (
            "pmx_profile_binary_capacity_bytes",
            Kind::Gauge,
            "Bytes of tables kept at most (PMX_BINARY_CACHE_MB); least recently used binaries go first.",
            binaries.capacity() as u64,
        ),
        (
            "pmx_profile_binary_reads",
            Kind::Counter,
            "Binaries read from disk (not found among those kept).",
            c.misses,
        ),
        (
            "pmx_profile_binary_evictions",
            Kind::Counter,
            "Binaries let go to stay within the capacity.",
            c.evicted,
        ),
    ] {
        let mut f = Family::new(name, kind, help);
        f.push(vec![], Value::Int(v));
        out.push(f);
    }
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn serves_until_stopped() {
        let online = std::env::temp_dir().join(format!("pmx-serve-srv-{}", std::process::id()));
        std::fs::write(&online, "0\n").unwrap();
        let c = Collector::open(crate::collect::tests::software_plan(), &online).unwrap();
        let opts = Options {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..Options::default()
        };
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let l2 = Arc::clone(&lines);
        let d = Daemon::bind(
            c,
            None,
            opts,
            Box::new(move |l| lock(&l2).push(l.to_string())),
        )
        .unwrap();
        let addr = d.local_addr().unwrap();
        let body = d.scrape_text("127.0.0.2".parse().unwrap(), Format::OpenMetrics);
        assert!(body.contains("pmx_events_total{event=\"task-clock\",pmu=\"software\",cpu=\"0\"}"));
        assert!(body.contains("pmx_event_supported{event=\"nothing\",pmu=\"unknown\"} 0"));
        assert!(body.ends_with("# EOF\n"));
        let trigger = d.stop().trigger_handle().unwrap();
        let t = std::thread::spawn(move || d.run());
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        assert!(got.contains("pmx_scrapes_total 2\n"), "{got}");
        trigger.trigger();
        t.join().unwrap().unwrap();
        assert!(lock(&lines).iter().any(|l| l == "stopped"));
        let _ = std::fs::remove_file(&online);
    }

    #[test]
    fn topology_merge_keeps_offline_places() {
        let old = Topology::new(vec![
            LogicalCpu::new(0, 0, 0, 0),
            LogicalCpu::new(1, 1, 0, 3),
        ]);
        let mut gone = LogicalCpu::new(1, 0, 0, 0);
        gone.online = false;
        gone.core = None;
        gone.package = None;
        let t = merge_topology(&old, Topology::new(vec![LogicalCpu::new(0, 0, 0, 0), gone]));
        let c1 = t.cpu(1).unwrap();
        assert_eq!((c1.package, c1.core, c1.online), (Some(1), Some(3), false));
    }
}
