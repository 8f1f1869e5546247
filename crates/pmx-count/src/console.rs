//! The terminal a command runs on: its width ([`columns`], for progress
//! bars) and a Ctrl-C that asks a long operation to stop and clean up
//! instead of killing it ([`InterruptGuard`], as `pmx events fetch` uses);
//! an error and its causes on one line ([`error_chain`]).

use pmx_sys::signal;
use std::sync::atomic::{AtomicBool, Ordering};

/// The terminal's width on stderr: `columns_var` (the value of
/// `$COLUMNS`, which the caller reads: the CLI does) when it is a number,
/// else what the terminal says, else 80.
pub fn columns(columns_var: Option<&str>) -> usize {
    if let Some(c) = columns_var.and_then(|c| c.parse::<usize>().ok()) {
        return c;
    }
    // SAFETY: TIOCGWINSZ writes a `winsize` into the pointed-to struct, which
    // lives for the call; a failing call leaves it zeroed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

/// Set by the SIGINT handler of [`InterruptGuard`]; the operation polls it
/// (e.g. as `pmx::events_fetch::EventsFetchOptions::cancel`).
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let msg = b"\npmx: interrupted, cleaning up (Ctrl-C again to quit at once)\n";
    // SAFETY: write(2) is async-signal-safe; the buffer is static.
    unsafe {
        libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len());
    }
}

/// A SIGINT handler for the duration of an operation: the first Ctrl-C
/// sets [`INTERRUPTED`] (and says so on stderr) so that the operation
/// stops and cleans up, a second one (the default action is restored by
/// `SA_RESETHAND`) kills the process. Dropping it restores the previous
/// action.
pub struct InterruptGuard {
    old: Option<signal::Disposition>,
}

impl InterruptGuard {
    /// Install the handler.
    pub fn install() -> InterruptGuard {
        // The handler only touches an atomic and calls write(2).
        InterruptGuard {
            old: signal::handle(libc::SIGINT, on_sigint, signal::RESET_HAND, &[]).ok(),
        }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            signal::restore(libc::SIGINT, old);
        }
    }
}

/// An error and its causes, `a: b: c`, each said once: a cause whose
/// text is already in what was said (an error that shows its source in
/// its own message) is not repeated.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let s = e.to_string();
        if !out.contains(&s) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&s);
        }
        next = e.source();
    }
    out
}

#[cfg(test)]
mod chain_tests {
    use super::error_chain;

    /// An error with a message and maybe a source.
    #[derive(Debug)]
    struct E(String, Option<Box<E>>);

    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn a_cause_already_said_is_not_repeated() {
        let io = E("disk full".into(), None);
        let outer = E("disk full".into(), Some(Box::new(io)));
        let e = E("writing out.data".into(), Some(Box::new(outer)));
        assert_eq!(error_chain(&e), "writing out.data: disk full");
        let e = E(
            "high level".into(),
            Some(Box::new(E("low level".into(), None))),
        );
        assert_eq!(error_chain(&e), "high level: low level");
    }
}
