//! The event loop: one thread polls the listener, the stop pipe, the
//! workers' wake-up pipe and every connection that waits on its client;
//! complete requests go to a small pool of workers ([`crate::pool`]),
//! whose answers come back here to be written.
//!
//! Why idle clients cannot lock scrapers out:
//!
//! - a connection costs a socket and a buffer, not a thread, and every
//!   connection has a deadline from the moment it is accepted (the head
//!   timeout), so a client that sends half a request line is closed
//!   after a few seconds;
//! - when the connection limit is reached, the connection that has been
//!   waiting on its client the longest (idle keep-alive, or slow to send
//!   its head, or slow to read its answer) is closed to make room: a new
//!   scraper is never refused, and a flood of idle connections only
//!   evicts itself;
//! - the same happens when the process runs out of file descriptors;
//! - workers never touch sockets: a client that does not read its answer
//!   is written to as the socket allows and closed at the write deadline.
//!
//! A long answer (a profile of N seconds, [`Answer::Later`]) does not hold
//! a worker: the worker only checks the request and hands back a job that
//! runs on a thread of its own (the handler bounds how many), so `/metrics`
//! keeps its workers. While it runs, the loop watches the connection for a
//! hang-up (`POLLRDHUP`, `POLLHUP`, `POLLERR`) and sets the job's `gone`
//! flag when it comes, which ends the job's session early. Its socket
//! has TCP keepalive ([`crate::conn::Probes`]): a client that vanished
//! without closing (host gone, cable pulled) stops answering the probes
//! and the socket's error (`POLLERR`) ends the session the same way.
//! Its answer is then written like any other, and dropped at the write
//! deadline if the client does not take it.

use crate::conn::{Conn, Event, State, Timeouts, Written};
use crate::http::{HttpError, Request, Response};
use crate::pool::{Pool, Wake};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A long answer's work: runs on a thread of its own; its flag is set
/// when the client hangs up (the response is then dropped).
pub type LongJob = Box<dyn FnOnce(Arc<AtomicBool>) -> Response + Send>;

/// What a handler answers.
pub enum Answer {
    /// The response, ready.
    Now(Response),
    /// Work that takes a while (a profile): run it off the workers.
    Later(LongJob),
}

impl From<Response> for Answer {
    fn from(r: Response) -> Answer {
        Answer::Now(r)
    }
}

/// What answers requests (on a worker thread) and takes log lines.
pub trait Handler: Send + Sync + 'static {
    /// The answer to `req` from `peer`.
    fn respond(&self, req: &Request, peer: IpAddr) -> Answer;
    /// One log line.
    fn log(&self, line: &str);
}

/// The loop's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most connections open at once; at the limit the oldest waiting
    /// one is closed to make room.
    pub max_connections: usize,
    /// Worker threads answering requests.
    pub workers: usize,
    /// Deadlines.
    pub timeouts: Timeouts,
}

struct Done {
    id: u64,
    answer: Answer,
    head_only: bool,
    /// The client asked to keep the connection.
    keep_alive: bool,
}

/// Most connections accepted in one turn of the loop (the others wait in
/// the kernel's backlog for the next turn, after the ready ones are
/// served).
const ACCEPT_BATCH: usize = 128;

/// The loop's state.
pub struct EventLoop<H: Handler> {
    listener: TcpListener,
    handler: Arc<H>,
    limits: Limits,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    wake: Wake,
    pool: Pool<Done>,
    evicted: u64,
    last_note: Option<Instant>,
}

impl<H: Handler> EventLoop<H> {
    /// A loop over `listener` (non-blocking) answering with `handler`.
    pub fn new(listener: TcpListener, handler: Arc<H>, limits: Limits) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let wake = Wake::new()?;
        let pool = Pool::new(limits.workers, &wake)?;
        Ok(EventLoop {
            listener,
            handler,
            limits,
            conns: HashMap::new(),
            next_id: 0,
            wake,
            pool,
            evicted: 0,
            last_note: None,
        })
    }

    /// Serve until `stop` is readable; call `tick` every `tick_every`.
    /// Then drop every connection and let the workers finish.
    pub fn run(
        mut self,
        stop: RawFd,
        tick_every: Duration,
        tick: &mut dyn FnMut(),
    ) -> io::Result<()> {
        let mut next_tick = Instant::now() + tick_every;
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        loop {
            let accepting = self.conns.len() < self.limits.max_connections
                || self.conns.values().any(|c| !c.is_busy());
            fds.clear();
            ids.clear();
            for (fd, on) in [
                (stop, true),
                (self.wake.fd(), true),
                (self.listener.as_raw_fd(), accepting),
            ] {
                fds.push(pollfd(fd, if on { libc::POLLIN } else { 0 }));
            }
            let mut wake_at = next_tick;
            for (id, c) in &self.conns {
                if let Some(ev) = c.interest() {
                    fds.push(pollfd(c.fd(), ev));
                    ids.push(*id);
                    // A long answer's connection has no deadline while
                    // its job runs (the one it had is past: waking for
                    // it would spin the loop every millisecond).
                    if !c.is_busy() {
                        wake_at = wake_at.min(c.deadline);
                    }
                }
            }
            let wait = wake_at.saturating_duration_since(Instant::now());
            let ms = (wait.as_millis() as i32).saturating_add(1).min(60_000);
            // SAFETY: a live array of initialised pollfds.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[0].revents != 0 {
                break;
            }
            if fds[1].revents != 0 {
                self.wake.drain();
                let done: Vec<Done> = self.pool.done().collect();
                for d in done {
                    self.finish(d);
                }
            }
            for (i, id) in ids.iter().enumerate() {
                if fds[3 + i].revents != 0 {
                    self.ready(*id, fds[3 + i].revents);
                }
            }
            self.expire(Instant::now());
            if fds[2].revents != 0 {
                self.accept_some();
            }
            if Instant::now() >= next_tick {
                tick();
                next_tick = Instant::now() + tick_every;
            }
        }
        for c in self.conns.values() {
            c.hang_up();
        }
        self.conns.clear();
        self.pool.shutdown();
        Ok(())
    }

    fn ready(&mut self, id: u64, revents: i16) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.is_busy() {
            // Only a long answer's connection is polled while busy: for
            // a hang-up. Its job ends its session; its answer is dropped.
            if revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
                c.hang_up();
                self.conns.remove(&id);
            }
            return;
        }
        match c.state {
            State::Reading { .. } => self.read(id),
            State::Writing { .. } => self.write(id),
            State::Draining => {
                if c.drain_step() {
                    self.conns.remove(&id);
                }
            }
            State::Busy => {}
        }
    }

    fn read(&mut self, id: u64) {
        let t = self.limits.timeouts;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        match c.read_step(&t) {
            Event::Pending => {}
            Event::Close => {
                self.conns.remove(&id);
            }
            Event::Bad(e) => self.answer_error(id, &e),
            Event::Request(req) => {
                c.set_busy();
                let peer = c.peer;
                let h = Arc::clone(&self.handler);
                self.pool.submit(move || Done {
                    id,
                    answer: h.respond(&req, peer),
                    head_only: req.method == "HEAD",
                    keep_alive: req.keep_alive,
                });
            }
        }
    }

    fn answer_error(&mut self, id: u64, e: &HttpError) {
        let t = self.limits.timeouts;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        match e.status() {
            Some((code, reason)) => {
                let detail = match e {
                    HttpError::Malformed(why) => format!("{reason}: {why}\n"),
                    _ => format!("{reason}\n"),
                };
                c.respond(&Response::text(code, reason, &detail), false, false, &t);
                self.write(id);
            }
            None => {
                self.conns.remove(&id);
            }
        }
    }

    fn finish(&mut self, d: Done) {
        let t = self.limits.timeouts;
        let Some(c) = self.conns.get_mut(&d.id) else {
            // The client hung up meanwhile.
            return;
        };
        match d.answer {
            Answer::Now(resp) => {
                let keep = d.keep_alive && resp.status < 400;
                c.respond(&resp, d.head_only, keep, &t);
                self.write(d.id);
            }
            Answer::Later(job) => {
                let gone = Arc::new(AtomicBool::new(false));
                if let Err(e) = c.watch(Arc::clone(&gone), &t.probes) {
                    self.handler.log(&format!(
                        "cannot set TCP keepalive on a profile's connection ({e}): a client that vanishes without closing is noticed only at the profile's end"
                    ));
                }
                let Done {
                    id,
                    head_only,
                    keep_alive,
                    ..
                } = d;
                let spawned = self.pool.spawn(move || Done {
                    id,
                    answer: Answer::Now(job(gone)),
                    head_only,
                    keep_alive,
                });
                if let Err(e) = spawned {
                    self.handler.log(&format!("cannot start a thread: {e}"));
                    let resp = Response::text(503, "Service Unavailable", "no thread\n");
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.respond(&resp, head_only, false, &t);
                        self.write(id);
                    }
                }
            }
        }
    }

    fn write(&mut self, id: u64) {
        let t = self.limits.timeouts;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        match c.write_step(&t) {
            Written::Failed => {
                self.conns.remove(&id);
            }
            Written::Pending => {}
            // A pipelined request may already be in the buffer.
            Written::Done if matches!(c.state, State::Reading { .. }) => self.read(id),
            Written::Done => {}
        }
    }

    fn expire(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.is_busy() && c.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            match self.conns.get(&id).and_then(|c| c.expired()) {
                Some(e) => self.answer_error(id, &e),
                None => {
                    self.conns.remove(&id);
                }
            }
        }
    }

    /// Close the connection that has waited on its client the longest;
    /// `false` when every connection is being answered.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .conns
            .iter()
            .filter(|(_, c)| !c.is_busy())
            .min_by_key(|(id, c)| (c.waiting_since, **id))
            .map(|(id, _)| *id);
        match oldest {
            Some(id) => {
                self.conns.remove(&id);
                self.evicted += 1;
                true
            }
            None => false,
        }
    }

    fn accept_some(&mut self) {
        let t = self.limits.timeouts;
        let evicted_before = self.evicted;
        let mut fd_trouble: Option<io::Error> = None;
        for _ in 0..ACCEPT_BATCH {
            let full = self.conns.len() >= self.limits.max_connections;
            if full && self.conns.values().all(|c| c.is_busy()) {
                // Every slot is being answered: the backlog waits for one.
                break;
            }
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if let Ok(c) = Conn::accepted(stream, peer.ip(), &t) {
                        self.next_id += 1;
                        self.conns.insert(self.next_id, c);
                    }
                    // The newcomer is the youngest: an older one goes.
                    while self.conns.len() > self.limits.max_connections && self.evict_oldest() {}
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS: make room if we can.
                    let out_of_fds = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                    if out_of_fds && self.evict_oldest() {
                        fd_trouble.get_or_insert(e);
                        continue;
                    }
                    fd_trouble = Some(e);
                    // Nothing to close: let the backlog wait a moment.
                    std::thread::sleep(Duration::from_millis(20));
                    break;
                }
            }
        }
        let evicted = self.evicted - evicted_before;
        if evicted > 0 || fd_trouble.is_some() {
            self.note(evicted, fd_trouble);
        }
    }

    /// Say (at most every 10 s) that connections were closed to make room.
    fn note(&mut self, evicted: u64, err: Option<io::Error>) {
        let now = Instant::now();
        if self
            .last_note
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(10))
        {
            return;
        }
        self.last_note = Some(now);
        let mut line = String::new();
        if let Some(e) = err {
            line.push_str(&format!("accept: {e}; "));
        }
        line.push_str(&format!(
            "{} connections open (limit {}): closed {evicted} that waited longest on their client to make room ({} in all; said at most every 10 s)",
            self.conns.len(),
            self.limits.max_connections,
            self.evicted
        ));
        self.handler.log(&line);
    }
}

fn pollfd(fd: RawFd, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}
