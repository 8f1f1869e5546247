//! The terminal a command runs on: its width ([`columns`], for progress
//! bars) and a Ctrl-C that asks a long operation to stop and clean up
//! instead of killing it ([`InterruptGuard`], as `pmx events fetch` uses).

use std::sync::atomic::{AtomicBool, Ordering};

/// The terminal's width on stderr: `$COLUMNS`, else what the terminal
/// says, else 80.
pub fn columns() -> usize {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
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
/// (e.g. as [`crate::events_fetch::EventsFetchOptions::cancel`]).
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
    old: Option<libc::sigaction>,
}

impl InterruptGuard {
    /// Install the handler.
    pub fn install() -> InterruptGuard {
        // SAFETY: the sigaction structs are plain data, zero-initialised and
        // filled in before use; the handler only touches an atomic and
        // calls write(2).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGINT, &act, &mut old) == 0 {
                InterruptGuard { old: Some(old) }
            } else {
                InterruptGuard { old: None }
            }
        }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            // SAFETY: restores the action saved by `install`.
            unsafe {
                libc::sigaction(libc::SIGINT, old, std::ptr::null_mut());
            }
        }
    }
}
