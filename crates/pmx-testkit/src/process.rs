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
