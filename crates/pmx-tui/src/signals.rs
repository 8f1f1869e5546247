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
    // The handler only stores to an atomic.
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let _ = pmx_sys::signal::handle(s, on_signal, 0, &[]);
    }
}

/// The signal that asked to stop, if one came.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
