//! The process's start without the standard library's runtime start.
//!
//! A Rust `fn main` is called by std's `lang_start`, which before `main`
//! checks the standard descriptors, ignores SIGPIPE, installs handlers for
//! SIGSEGV and SIGBUS with an alternate stack and finds the main thread's
//! stack guard — glibc's `pthread_getattr_np` reads and parses
//! `/proc/self/maps` for it, a third of what a short `pmx stat -- true`
//! spends in user space after the dynamic loader (docs/BENCHMARKS.md,
//! issue 43) — and after `main` flushes stdout. [`entry!`](crate::entry)
//! defines C's `main` to call [`run`] instead, which keeps what pmx relies
//! on:
//!
//! - descriptors 0, 1 and 2 that are closed are opened on `/dev/null`
//!   (so a file pmx opens never becomes its stdout);
//! - SIGPIPE is ignored, as std leaves it (a closed pipe is an `EPIPE`
//!   error, not a death; std's `Command` still gives children the
//!   default);
//! - a panic prints its message through the panic hook and the process
//!   exits 101, as under `lang_start`;
//! - stdout is flushed when `main` returns (`std::process::exit` flushes
//!   it itself).
//!
//! What is given up: a stack overflow of the main thread is a plain
//! SIGSEGV instead of std's "has overflowed its stack" message and abort,
//! and a panic on the main thread names it `<unnamed>` instead of `main`.
//! Arguments (`std::env::args`) need nothing here: on glibc std reads them
//! from its own `.init_array` entry.

use std::ffi::c_int;
use std::io::Write;

/// Define the program's C `main` to call `$main` (a `fn()`) through
/// [`run`]. Used with `#![cfg_attr(not(test), no_main)]`: the definition
/// is left out of test builds, whose harness brings its own `main`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        /// C's `main`: the program's `main` through `pmx_sys::start::run`.
        #[cfg(not(test))]
        #[unsafe(export_name = "main")]
        extern "C" fn c_main() -> ::std::ffi::c_int {
            $crate::start::run($main)
        }
    };
}

/// Run `main` as the program's entry (see the module's page) and return
/// the process's exit status: 0 when it returns, 101 when it panics.
pub fn run(main: fn()) -> c_int {
    standard_fds();
    let _ = crate::signal::ignore(libc::SIGPIPE);
    let code = match std::panic::catch_unwind(main) {
        Ok(()) => 0,
        Err(payload) => {
            // Dropping a panic's payload may panic again: leak it, the
            // process ends here.
            std::mem::forget(payload);
            101
        }
    };
    let _ = std::io::stdout().flush();
    code
}

/// Open `/dev/null` on each of descriptors 0–2 that is not open; abort if
/// that fails (the process could write its output into a file it opened).
fn standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is an array of three initialised pollfd; a zero
    // timeout returns at once.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    for p in fds {
        let closed = if polled {
            p.revents & libc::POLLNVAL != 0
        } else {
            // SAFETY: fcntl(F_GETFD) on any number only reads its flags.
            let flags = unsafe { libc::fcntl(p.fd, libc::F_GETFD) };
            flags == -1
        };
        // SAFETY: a NUL-terminated path; the lowest free number is the
        // closed descriptor, the lower ones being open by now.
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } == -1 {
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returning_main_is_status_0_a_panicking_one_101() {
        assert_eq!(run(|| {}), 0);
        assert_eq!(run(|| panic!("on purpose")), 101);
    }
}
