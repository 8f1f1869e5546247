//! The one place pmx sets a signal's disposition (`sigaction(2)`).
//!
//! Every session that reacts to a signal installs its handler here: `stat`
//! and `record` (stop and forward to the command), `events fetch`'s
//! Ctrl-C guard, `top`, `serve`'s stop pipe, and the MSR sessions'
//! restore path. Each caller keeps its own handler, an `extern "C"
//! fn(c_int)` that does only async-signal-safe things (atomics, `write`,
//! `kill`, `pwrite`); this module only installs, saves and puts back
//! dispositions, so their flags and masks are spelled once.
//!
//! [`restore`] and [`set_default`] are async-signal-safe (one
//! `sigaction` call on values already built), so a handler may call them:
//! the MSR restore path does, to die by the signal after putting the
//! registers back. `pmx-archcheck` refuses a `sigaction` call anywhere
//! else.

use std::io;
use std::ptr;

/// A signal handler: runs on the signal, may only do async-signal-safe
/// work.
pub type Handler = extern "C" fn(libc::c_int);

/// `SA_RESTART`: system calls the signal interrupts are restarted.
pub const RESTART: libc::c_int = libc::SA_RESTART;
/// `SA_RESETHAND`: the default disposition comes back once the handler
/// has run (a second signal takes the default action).
pub const RESET_HAND: libc::c_int = libc::SA_RESETHAND;

/// A signal's disposition as `sigaction(2)` reported it, to put back with
/// [`restore`].
#[derive(Clone, Copy)]
pub struct Disposition(libc::sigaction);

// SAFETY: `libc::sigaction` is plain old data (a function address, flags and
// a signal mask); moving or sharing it between threads is sound.
unsafe impl Send for Disposition {}
// SAFETY: as above; nothing in it is mutated through a shared reference.
unsafe impl Sync for Disposition {}

impl std::fmt::Debug for Disposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disposition")
            .field("handler", &self.0.sa_sigaction)
            .field("flags", &self.0.sa_flags)
            .finish()
    }
}

/// Run `handler` on `sig`, with `flags` ([`RESTART`], [`RESET_HAND`], or
/// 0) and the signals of `block` blocked while it runs (besides `sig`
/// itself). Returns the previous disposition.
pub fn handle(
    sig: libc::c_int,
    handler: Handler,
    flags: libc::c_int,
    block: &[libc::c_int],
) -> io::Result<Disposition> {
    // SAFETY: a zeroed `sigaction` is a valid value to fill in; the mask
    // is initialised by sigemptyset before use; the handler is an
    // `extern "C" fn(c_int)`, what `sa_sigaction` holds without
    // SA_SIGINFO.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        for &s in block {
            libc::sigaddset(&mut action.sa_mask, s);
        }
        set(sig, &action)
    }
}

/// Ignore `sig` (as `signal(sig, SIG_IGN)`: `SA_RESTART`, empty mask).
pub fn ignore(sig: libc::c_int) -> io::Result<Disposition> {
    // SAFETY: a zeroed `sigaction` with SIG_IGN and an empty mask is valid.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_IGN;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        set(sig, &action)
    }
}

/// Put back a disposition [`handle`] or [`ignore`] returned.
/// Async-signal-safe.
pub fn restore(sig: libc::c_int, old: &Disposition) {
    // SAFETY: `old` is a disposition sigaction(2) reported.
    unsafe { libc::sigaction(sig, &old.0, ptr::null_mut()) };
}

/// The default action for `sig` (`SIG_DFL`, empty mask). Async-signal-safe:
/// a handler calls it before `raise(sig)` to die by the signal.
pub fn set_default(sig: libc::c_int) {
    // SAFETY: a zeroed `sigaction` with SIG_DFL (0) is valid; sigemptyset
    // and sigaction are async-signal-safe.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        libc::sigaction(sig, &dfl, ptr::null_mut());
    }
}

/// # Safety
/// `action` must be fully initialised.
unsafe fn set(sig: libc::c_int, action: &libc::sigaction) -> io::Result<Disposition> {
    // SAFETY: a zeroed `sigaction` is valid for the kernel to fill in; the
    // caller vouches for `action`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, action, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Disposition(old))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};

    static SEEN: AtomicI32 = AtomicI32::new(0);

    extern "C" fn note(sig: libc::c_int) {
        SEEN.store(sig, Ordering::SeqCst);
    }

    #[test]
    fn a_handler_runs_and_the_old_disposition_comes_back() {
        let old = handle(libc::SIGUSR1, note, RESTART, &[libc::SIGUSR2]).unwrap();
        // SAFETY: raising a signal this process handles.
        unsafe { libc::raise(libc::SIGUSR1) };
        assert_eq!(SEEN.load(Ordering::SeqCst), libc::SIGUSR1);
        let ours = ignore(libc::SIGUSR1).unwrap();
        assert_eq!(ours.0.sa_sigaction, note as Handler as libc::sighandler_t);
        assert_eq!(ours.0.sa_flags & RESTART, RESTART);
        restore(libc::SIGUSR1, &old);
        let back = ignore(libc::SIGUSR1).unwrap();
        assert_eq!(back.0.sa_sigaction, old.0.sa_sigaction);
        restore(libc::SIGUSR1, &old);
    }
}
