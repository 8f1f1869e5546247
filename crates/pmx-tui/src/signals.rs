//! SIGINT, SIGTERM and SIGHUP for `pmx top`: the handler only sets a
//! flag; the refresh loop sees it within 100 ms, stops the session and
//! gives the terminal back.

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// Install the handlers (and forget an earlier signal).
pub fn install() {
    SIGNAL.store(0, Ordering::SeqCst);
    // SAFETY: a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal that asked to stop, if one came.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
