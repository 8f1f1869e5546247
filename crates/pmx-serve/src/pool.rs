//! A small fixed pool of worker threads that answer requests, and the
//! way their answers get back to the event loop: a channel plus one byte
//! on a wake-up pipe the loop polls.
//!
//! Workers only compute (read the counters, render the text); they never
//! touch a socket, so a slow client cannot hold one. The queue is bounded
//! by the caller: a connection has at most one request in the pool.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A self-pipe: `notify` from any thread wakes a `poll` on `fd`.
#[derive(Debug)]
pub struct Wake {
    read: OwnedFd,
    write: OwnedFd,
}

impl Wake {
    /// A new non-blocking pipe.
    pub fn new() -> io::Result<Wake> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two fds into the array.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned by nobody else.
        Ok(unsafe {
            Wake {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            }
        })
    }

    /// The end to poll for `POLLIN`.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// A write end for another thread (or a signal handler).
    pub fn writer(&self) -> io::Result<OwnedFd> {
        self.write.try_clone()
    }

    /// Empty the pipe (after `poll` said it is readable).
    pub fn drain(&self) {
        let mut b = [0u8; 256];
        // SAFETY: reading into a local buffer from our non-blocking pipe.
        while unsafe { libc::read(self.read.as_raw_fd(), b.as_mut_ptr().cast(), b.len()) } > 0 {}
    }
}

/// Write one byte to a wake-up pipe (async-signal-safe; a full pipe
/// already means "wake up").
pub fn notify(fd: RawFd) {
    let b = 1u8;
    // SAFETY: one byte from a local into a pipe we own.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
}

type Job<T> = Box<dyn FnOnce() -> T + Send>;

/// Worker threads running jobs; each job's result comes back through
/// [`Pool::done`] after a byte on the wake-up pipe.
pub struct Pool<T: Send + 'static> {
    jobs: Option<Sender<Job<T>>>,
    done: Receiver<T>,
    workers: Vec<JoinHandle<()>>,
    /// For [`Pool::spawn`]'s threads.
    tx_done: Sender<T>,
    wake: OwnedFd,
    long: Vec<JoinHandle<()>>,
}

impl<T: Send + 'static> Pool<T> {
    /// `n` workers (at least one) that wake `wake` after each job.
    pub fn new(n: usize, wake: &Wake) -> io::Result<Pool<T>> {
        let (jobs, rx) = mpsc::channel::<Job<T>>();
        let (tx_done, done) = mpsc::channel::<T>();
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for i in 0..n.max(1) {
            let rx = Arc::clone(&rx);
            let tx_done = tx_done.clone();
            let wake_fd = wake.writer()?;
            let h = std::thread::Builder::new()
                .name(format!("pmx-serve-w{i}"))
                .spawn(move || loop {
                    let job = {
                        let guard = rx.lock().unwrap_or_else(|e| e.into_inner());
                        guard.recv()
                    };
                    let Ok(job) = job else { return };
                    if tx_done.send(job()).is_err() {
                        return;
                    }
                    notify(wake_fd.as_raw_fd());
                })?;
            workers.push(h);
        }
        Ok(Pool {
            jobs: Some(jobs),
            done,
            workers,
            tx_done,
            wake: wake.writer()?,
            long: Vec::new(),
        })
    }

    /// Run a long job on a thread of its own (the caller bounds how many
    /// run at once); its result comes back as a worker's does.
    pub fn spawn(&mut self, job: impl FnOnce() -> T + Send + 'static) -> io::Result<()> {
        self.long.retain(|h| !h.is_finished());
        let tx = self.tx_done.clone();
        let wake = self.wake.try_clone()?;
        let h = std::thread::Builder::new()
            .name("pmx-serve-long".to_string())
            .spawn(move || {
                if tx.send(job()).is_ok() {
                    notify(wake.as_raw_fd());
                }
            })?;
        self.long.push(h);
        Ok(())
    }

    /// Queue a job.
    pub fn submit(&self, job: impl FnOnce() -> T + Send + 'static) {
        if let Some(tx) = &self.jobs {
            // Fails only when every worker is gone (a panic in each).
            let _ = tx.send(Box::new(job));
        }
    }

    /// The results ready now.
    pub fn done(&self) -> impl Iterator<Item = T> + '_ {
        self.done.try_iter()
    }

    /// Let the queued jobs finish and the workers end.
    pub fn shutdown(mut self) {
        self.jobs = None;
        for w in self.workers.drain(..).chain(self.long.drain(..)) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_workers_and_wake_the_poller() {
        let wake = Wake::new().unwrap();
        let pool: Pool<u32> = Pool::new(3, &wake).unwrap();
        for i in 0..20 {
            pool.submit(move || i * 2);
        }
        let mut got = Vec::new();
        let t0 = std::time::Instant::now();
        while got.len() < 20 && t0.elapsed() < std::time::Duration::from_secs(20) {
            let mut p = libc::pollfd {
                fd: wake.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd on the stack.
            unsafe { libc::poll(&mut p, 1, 1000) };
            wake.drain();
            got.extend(pool.done());
        }
        got.sort();
        assert_eq!(got, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        pool.shutdown();
    }
}
