//! Child processes a test starts and stops.

use std::process::{Child, Output};
use std::time::Duration;

/// Let `child` run for `after`, send it SIGINT (as Ctrl-C would), and
/// collect its output (what it was spawned to capture).
pub fn interrupt_after(child: Child, after: Duration) -> Output {
    std::thread::sleep(after);
    // SAFETY: kill(2) on the pid of our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
}

/// A thread's CPU-time clock (`CLOCK_THREAD_CPUTIME_ID` of that thread),
/// readable from any other thread: the time bound of a test case that a
/// loaded machine does not stretch (the wall clock runs on while the
/// case waits for a CPU; its CPU time does not).
#[derive(Debug, Clone, Copy)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock (`None` where the system has none).
    pub fn current() -> Option<ThreadClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the calling thread, alive during the
        // call; `id` is a valid place for the result.
        let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        (r == 0).then_some(ThreadClock(id))
    }

    /// The CPU time the thread has used so far (`None` once it has
    /// ended).
    pub fn used(&self) -> Option<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec to a valid place; an
        // ended thread's clock is an error (EINVAL), not undefined.
        let r = unsafe { libc::clock_gettime(self.0, &mut ts) };
        (r == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_clock_counts_work_not_waiting() {
        let clock = ThreadClock::current().expect("a thread CPU clock");
        let before = clock.used().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let slept = clock.used().unwrap() - before;
        let mut x = 0u64;
        while clock.used().unwrap() - before < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(
            slept < Duration::from_millis(20),
            "{slept:?} counted asleep"
        );
    }
}
