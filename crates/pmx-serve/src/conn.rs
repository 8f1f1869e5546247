//! One client connection as the event loop sees it: a non-blocking
//! socket, the bytes read so far, the response being written, and the
//! deadline of whatever it is waiting for.
//!
//! A connection is in one of four states:
//!
//! - **Reading** a request head. The deadline starts at accept (a fresh
//!   connection must send its whole head within the head timeout) or,
//!   on a keep-alive connection, when the previous response was written
//!   (the idle timeout until the first byte, then the head timeout).
//! - **Busy**: a worker is answering its request; nothing is read, so a
//!   pipelined request waits in the buffer.
//! - **Writing** the response, without ever blocking: what the socket
//!   does not take now is written when `poll` says it can; a client that
//!   does not read is closed at the write deadline.
//! - **Draining** after a `Connection: close` response: the write side is
//!   shut, what the client still sends is read and dropped for a moment
//!   (closing with unread bytes would reset the connection and could
//!   destroy the response before the client reads it), then it is closed.
//!
//! Every step here is one non-blocking system call or a few; nothing waits.

use crate::http::{self, HttpError, Request, Response, MAX_HEAD};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a connection may take for each thing it does.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The whole request head, from accept or from its first byte.
    pub head: Duration,
    /// A keep-alive connection with nothing sent.
    pub idle: Duration,
    /// Writing one response.
    pub write: Duration,
    /// Reading what a client sends after a `Connection: close` answer.
    pub drain: Duration,
    /// TCP keepalive on a connection a long answer runs for.
    pub probes: Probes,
}

/// TCP keepalive (`SO_KEEPALIVE`) on a connection a long answer (a
/// profile) runs for: the client's kernel answers the probes while it is
/// there; a client gone without a FIN or RST (host down, cable pulled)
/// answers none, and the socket fails with `ETIMEDOUT` — a `POLLERR`
/// that stops its session — at most [`Probes::bound`] after the last
/// packet it sent. `TCP_USER_TIMEOUT` is set to the same bound, so data
/// written to a vanished client is also given up after it (by the
/// kernel, even after pmx closed the socket).
#[derive(Debug, Clone, Copy)]
pub struct Probes {
    /// Silence before the first probe (`TCP_KEEPIDLE`).
    pub idle: Duration,
    /// Between probes (`TCP_KEEPINTVL`).
    pub interval: Duration,
    /// Unanswered probes before the connection is dropped (`TCP_KEEPCNT`).
    pub count: u32,
}

impl Probes {
    /// Probes every `seconds` after `seconds` of silence, three of them:
    /// a vanished client is noticed within 4 × `seconds`.
    pub fn every(seconds: u64) -> Probes {
        let s = Duration::from_secs(seconds.max(1));
        Probes {
            idle: s,
            interval: s,
            count: 3,
        }
    }

    /// The longest a vanished client goes unnoticed: idle + interval × count.
    pub fn bound(&self) -> Duration {
        self.idle + self.interval * self.count
    }
}

/// Set an integer socket option.
fn set_opt(fd: std::os::fd::RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: setsockopt on an open socket with a pointer to a live int
    // and its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for (the rest of) a request head; `started` once a byte
    /// of it came (or from accept).
    Reading {
        /// A head is under way: the deadline is the head deadline.
        started: bool,
    },
    /// A worker answers its request.
    Busy,
    /// Writing the response; then keep the connection open or not.
    Writing {
        /// Read the next request after this response.
        keep: bool,
    },
    /// Write side shut; dropping what still comes until EOF.
    Draining,
}

/// What a read step found.
#[derive(Debug)]
pub enum Event {
    /// Nothing to do yet.
    Pending,
    /// A complete request head.
    Request(Request),
    /// A bad head: answer with its status and close.
    Bad(HttpError),
    /// Close the connection now.
    Close,
}

/// How far a write step got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The socket took part of it; wait for `POLLOUT`.
    Pending,
    /// The response is out and the connection moved on (reading the next
    /// request, or draining).
    Done,
    /// The client is gone: close it.
    Failed,
}

/// A client connection.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// The client's address.
    pub peer: IpAddr,
    buf: Vec<u8>,
    out: Vec<u8>,
    written: usize,
    /// What it is doing.
    pub state: State,
    /// When the current deadline expires.
    pub deadline: Instant,
    /// When it last started waiting on the client (accept, or the end of
    /// its previous response): the oldest is closed first when room is
    /// needed.
    pub waiting_since: Instant,
    /// A long answer is under way: set this when the client hangs up.
    gone: Option<Arc<AtomicBool>>,
}

impl Conn {
    /// A freshly accepted connection: its head deadline starts now.
    pub fn accepted(stream: TcpStream, peer: IpAddr, t: &Timeouts) -> io::Result<Conn> {
        stream.set_nonblocking(true)?;
        let _ = stream.set_nodelay(true);
        let now = Instant::now();
        Ok(Conn {
            stream,
            peer,
            buf: Vec::new(),
            out: Vec::new(),
            written: 0,
            state: State::Reading { started: true },
            deadline: now + t.head,
            waiting_since: now,
            gone: None,
        })
    }

    /// The socket, for `poll`.
    pub fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.stream)
    }

    /// The `poll` events it waits for, if any: while a long answer is
    /// under way, only a hang-up.
    pub fn interest(&self) -> Option<i16> {
        match self.state {
            State::Reading { .. } | State::Draining => Some(libc::POLLIN),
            State::Writing { .. } => Some(libc::POLLOUT),
            State::Busy => self.gone.as_ref().map(|_| libc::POLLRDHUP),
        }
    }

    /// A long answer runs for it: `gone` is to be set if the client
    /// hangs up, or vanishes (TCP keepalive as `probes` say; an error
    /// setting it is returned, the watch is on regardless).
    pub fn watch(&mut self, gone: Arc<AtomicBool>, probes: &Probes) -> io::Result<()> {
        self.gone = Some(gone);
        let fd = self.fd();
        let secs = |d: Duration| d.as_secs().clamp(1, i32::MAX as u64) as i32;
        set_opt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
        set_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, secs(probes.idle))?;
        set_opt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPINTVL,
            secs(probes.interval),
        )?;
        set_opt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPCNT,
            probes.count.max(1) as i32,
        )?;
        let ms = probes.bound().as_millis().min(i32::MAX as u128) as i32;
        set_opt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)
    }

    /// Tell its long answer, if any, that nobody waits for it any more.
    pub fn hang_up(&self) {
        if let Some(g) = &self.gone {
            g.store(true, Ordering::SeqCst);
        }
    }

    /// A worker may be answering it: it cannot be closed to make room.
    pub fn is_busy(&self) -> bool {
        self.state == State::Busy
    }

    /// Hand the request to a worker.
    pub fn set_busy(&mut self) {
        self.state = State::Busy;
    }

    /// Read what the socket has and look for a complete head (a head
    /// already in the buffer, pipelined behind the previous one, counts).
    pub fn read_step(&mut self, t: &Timeouts) -> Event {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(ev) = self.complete_head() {
                return ev;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) if self.buf.is_empty() => return Event::Close,
                Ok(0) => {
                    return Event::Bad(HttpError::Malformed(
                        "connection closed in the middle of the request",
                    ))
                }
                Ok(n) => {
                    if self.state == (State::Reading { started: false }) {
                        self.state = State::Reading { started: true };
                        self.deadline = Instant::now() + t.head;
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Event::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Event::Close,
            }
        }
    }

    fn complete_head(&mut self) -> Option<Event> {
        if let Some(end) = http::head_end(&self.buf) {
            if end > MAX_HEAD {
                return Some(Event::Bad(HttpError::TooLarge));
            }
            let head: Vec<u8> = self.buf.drain(..end).collect();
            return Some(match http::parse_head(&head) {
                Ok(r) => Event::Request(r),
                Err(e) => Event::Bad(e),
            });
        }
        (self.buf.len() > MAX_HEAD).then_some(Event::Bad(HttpError::TooLarge))
    }

    /// Start writing `resp` (a bad request's answer, or a worker's).
    pub fn respond(&mut self, resp: &Response, head_only: bool, keep: bool, t: &Timeouts) {
        self.gone = None;
        self.out.clear();
        self.written = 0;
        // Writing into a Vec cannot fail.
        let _ = resp.write_to(&mut self.out, head_only, keep);
        self.state = State::Writing { keep };
        self.deadline = Instant::now() + t.write;
    }

    /// Write what the socket takes.
    pub fn write_step(&mut self, t: &Timeouts) -> Written {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => return Written::Failed,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Written::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Written::Failed,
            }
        }
        let keep = matches!(self.state, State::Writing { keep: true });
        self.out = Vec::new();
        self.written = 0;
        let now = Instant::now();
        if keep {
            let started = !self.buf.is_empty();
            self.state = State::Reading { started };
            self.deadline = now + if started { t.head } else { t.idle };
            self.waiting_since = now;
        } else {
            let _ = self.stream.shutdown(Shutdown::Write);
            self.state = State::Draining;
            self.deadline = now + t.drain;
        }
        Written::Done
    }

    /// Drop what the client still sends; `true` when it is done (EOF,
    /// an error, or too much).
    pub fn drain_step(&mut self) -> bool {
        let mut sink = [0u8; 4096];
        for _ in 0..64 {
            match self.stream.read(&mut sink) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
        }
        // 256 KiB after the answer: not a client worth waiting for.
        true
    }

    /// Its deadline passed: what to do. A head under way gets 408 (and
    /// `Some`), anything else is closed (`None`).
    pub fn expired(&self) -> Option<HttpError> {
        match self.state {
            State::Reading { started: true } if !self.buf.is_empty() => Some(HttpError::Timeout),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn timeouts() -> Timeouts {
        Timeouts {
            head: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            write: Duration::from_secs(5),
            drain: Duration::from_millis(100),
            probes: Probes::every(5),
        }
    }

    fn pair() -> (Conn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        (Conn::accepted(s, peer.ip(), &timeouts()).unwrap(), client)
    }

    fn wait_event(c: &mut Conn) -> Event {
        let t0 = Instant::now();
        loop {
            match c.read_step(&timeouts()) {
                Event::Pending if t0.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                ev => return ev,
            }
        }
    }

    #[test]
    fn a_head_in_pieces_then_pipelined_heads_from_the_buffer() {
        let (mut c, mut client) = pair();
        assert!(matches!(c.read_step(&timeouts()), Event::Pending));
        client.write_all(b"GET /a HTTP/1.1\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(c.read_step(&timeouts()), Event::Pending));
        assert!(c.expired().is_some(), "a partial head expires with 408");
        client
            .write_all(b"\r\nGET /b HTTP/1.1\r\n\r\nGARBAGE\r\n\r\n")
            .unwrap();
        let Event::Request(a) = wait_event(&mut c) else {
            panic!("no request")
        };
        assert_eq!(a.path, "/a");
        // The next ones are answered only after the first response.
        c.set_busy();
        assert_eq!(c.interest(), None);
        c.respond(&Response::text(200, "OK", "x"), false, true, &timeouts());
        assert_eq!(c.interest(), Some(libc::POLLOUT));
        assert_eq!(c.write_step(&timeouts()), Written::Done);
        assert_eq!(c.state, State::Reading { started: true });
        let Event::Request(b) = c.read_step(&timeouts()) else {
            panic!("no pipelined request")
        };
        assert_eq!(b.path, "/b");
        assert!(matches!(
            c.read_step(&timeouts()),
            Event::Bad(HttpError::Malformed(_))
        ));
        c.respond(
            &Response::text(400, "Bad Request", "no\n"),
            false,
            false,
            &timeouts(),
        );
        assert_eq!(c.write_step(&timeouts()), Written::Done);
        assert_eq!(c.state, State::Draining);
        drop(client);
        std::thread::sleep(Duration::from_millis(20));
        assert!(c.drain_step());
    }

    #[test]
    fn an_oversized_head_and_a_closed_client() {
        let (mut c, mut client) = pair();
        client.write_all(&vec![b'a'; MAX_HEAD + 10]).unwrap();
        assert!(matches!(
            wait_event(&mut c),
            Event::Bad(HttpError::TooLarge)
        ));
        let (mut c, client) = pair();
        drop(client);
        assert!(matches!(wait_event(&mut c), Event::Close));
        assert!(c.expired().is_none(), "nothing sent: closed without a 408");
    }
}
