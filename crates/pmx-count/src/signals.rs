//! SIGINT and SIGTERM for sessions that measure a command (`stat`,
//! `record`): the handler only sets a flag and forwards the signal to the
//! command, so the session ends the way it ends when the command exits —
//! counters read, rings drained, files finished — instead of dying with
//! the data.

use pmx_sys::signal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The signal that requested the stop.
static SIG: AtomicI32 = AtomicI32::new(0);
/// The stop request reached the current command.
static FORWARDED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    SIG.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 {
        FORWARDED.store(true, Ordering::SeqCst);
        // SAFETY: kill is async-signal-safe. The command gets the signal
        // too (from a terminal it may get SIGINT twice, which is as good
        // as once) and its exit ends the session.
        unsafe { libc::kill(child, sig) };
    }
}

/// Install the SIGINT/SIGTERM handlers: a session begins, and an earlier
/// stop request is forgotten. From here on a request stays until the
/// next `install`: a signal that arrives while the session is still
/// being set up (events resolved, counters opened), or between two runs
/// of `stat -r`, ends the session as one during a run does.
pub fn install() {
    reset();
    // The handler only touches atomics and kill(); a failure to install
    // leaves the default action, as before.
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let _ = signal::handle(sig, on_signal, 0, &[]);
    }
}

/// Was a stop requested (Ctrl-C, SIGTERM) since the session began?
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that requested the stop, if one did.
pub fn stop_signal() -> Option<i32> {
    stop_requested().then(|| SIG.load(Ordering::SeqCst))
}

/// SIGUSR2 arrived (`record --switch-output=signal`).
static SWITCH: AtomicBool = AtomicBool::new(false);

extern "C" fn on_switch(_: libc::c_int) {
    SWITCH.store(true, Ordering::SeqCst);
}

/// Take SIGUSR2 as "switch to a new output file" (`record
/// --switch-output=signal`) instead of its default (end the process).
pub fn install_switch() {
    SWITCH.store(false, Ordering::SeqCst);
    // The handler only stores to an atomic.
    let _ = signal::handle(libc::SIGUSR2, on_switch, 0, &[]);
}

/// SIGUSR2 arrived since the last call.
pub fn take_switch() -> bool {
    SWITCH.swap(false, Ordering::SeqCst)
}

/// A session begins: forget earlier requests.
pub(crate) fn reset() {
    STOP.store(false, Ordering::SeqCst);
}

/// The command signals are forwarded to (0: none).
pub fn set_child(pid: i32) {
    FORWARDED.store(false, Ordering::SeqCst);
    CHILD.store(pid, Ordering::SeqCst);
}

/// A stop requested before the command was started (while the session
/// was being set up) reaches the command now, once.
pub fn forward_pending() {
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 && stop_requested() && !FORWARDED.swap(true, Ordering::SeqCst) {
        // SAFETY: signalling the command this session started.
        unsafe { libc::kill(child, SIG.load(Ordering::SeqCst)) };
    }
}
