//! Restoring the PMU on SIGINT, SIGTERM and SIGHUP.
//!
//! A session that handles signals registers a *restore table* here: every
//! write that puts its registers back, as (file descriptor, address, value)
//! computed before the first register is changed. The handler only loads
//! atomics, calls `pwrite(2)`, `sigaction(2)` and `raise(3)` — all
//! async-signal-safe, nothing allocates or locks.
//!
//! The dispositions are set through `pmx_sys::signal`, pmx's one signal
//! facility, like every other session's; the handler itself stays here
//! and stays a plain `extern "C" fn`, not a flag polled by a thread (as
//! `signal-hook`'s iterator would make it), because it must work when
//! nobody polls: under [`Signals::RestoreAndExit`], and on the second
//! signal under [`Signals::Defer`], it writes the registers back from
//! inside the handler and dies by the signal, so that an interrupted
//! session never leaves the PMU programmed.
//!
//! What the handler does depends on [`Signals`]:
//!
//! - [`Signals::RestoreAndExit`]: write every registered table, then die by
//!   the signal (default action), so the shell sees the usual status.
//! - [`Signals::Defer`]: the first signal only records itself
//!   ([`pending`]); the caller notices, stops, prints what it has, and drops
//!   the session, which restores. A second signal restores and dies, so a
//!   caller that does not poll cannot leave the PMU programmed.
//!
//! The handlers are installed while at least one table is registered and
//! the previous dispositions are put back when the last one goes. Blocking
//! system calls are interrupted (no `SA_RESTART`) so a caller waiting in
//! `waitpid` or `nanosleep` can look at [`pending`].

use crate::error::MsrError;
use pmx_sys::signal::{self, Disposition};
use std::os::unix::io::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

/// What a session does about SIGINT, SIGTERM and SIGHUP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Signals {
    /// Install nothing; the caller takes care (a panic or a normal return
    /// still restores through `Drop`).
    Ignore,
    /// Record the first signal for the caller to act on; restore and die
    /// on the second.
    Defer,
    /// Restore and die by the signal at once.
    #[default]
    RestoreAndExit,
}

/// One write of a restore table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RestoreEntry {
    /// The msr device of the CPU.
    pub fd: RawFd,
    /// The file offset of the MSR.
    pub offset: u64,
    /// The value to put back.
    pub value: u64,
}

/// How many sessions may have tables registered at once.
pub const SLOTS: usize = 16;

const DEFER: u8 = 1;
const RESTORE_AND_EXIT: u8 = 2;

struct Table {
    entries: Box<[RestoreEntry]>,
}

static TABLES: [AtomicPtr<Table>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
static PENDING: AtomicI32 = AtomicI32::new(0);
static HITS: AtomicUsize = AtomicUsize::new(0);
static POLICY: AtomicU8 = AtomicU8::new(RESTORE_AND_EXIT);

const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The dispositions before pmx installed its handler, while installed.
struct Installed {
    previous: Vec<(libc::c_int, Disposition)>,
    armed: usize,
}

static INSTALLED: Mutex<Option<Installed>> = Mutex::new(None);

/// The signal received since the handlers were installed, if any (under
/// [`Signals::Defer`]: the caller should stop and drop its session).
pub fn pending() -> Option<i32> {
    match PENDING.load(SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// A registered restore table; unregistered on drop.
#[derive(Debug)]
pub(crate) struct Armed {
    slot: usize,
}

/// Register `entries` to be written if a signal arrives.
pub(crate) fn arm(entries: Vec<RestoreEntry>, policy: Signals) -> Result<Option<Armed>, MsrError> {
    let code = match policy {
        Signals::Ignore => return Ok(None),
        Signals::Defer => DEFER,
        Signals::RestoreAndExit => RESTORE_AND_EXIT,
    };
    let table = Box::into_raw(Box::new(Table {
        entries: entries.into_boxed_slice(),
    }));
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    let Some(slot) = (0..SLOTS).find(|&i| {
        TABLES[i]
            .compare_exchange(ptr::null_mut(), table, SeqCst, SeqCst)
            .is_ok()
    }) else {
        // SAFETY: `table` came from `Box::into_raw` above and was never
        // published, so this is its only owner.
        drop(unsafe { Box::from_raw(table) });
        return Err(MsrError::SignalSlots(SLOTS));
    };
    POLICY.store(code, SeqCst);
    match installed.as_mut() {
        Some(i) => i.armed += 1,
        None => {
            PENDING.store(0, SeqCst);
            HITS.store(0, SeqCst);
            match install() {
                Ok(previous) => *installed = Some(Installed { previous, armed: 1 }),
                Err(e) => {
                    drop(installed);
                    disarm_slot(slot);
                    return Err(MsrError::Signal(e));
                }
            }
        }
    }
    Ok(Some(Armed { slot }))
}

impl Drop for Armed {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        disarm_slot(self.slot);
        if let Some(i) = installed.as_mut() {
            i.armed -= 1;
            if i.armed == 0 {
                for (s, old) in &i.previous {
                    signal::restore(*s, old);
                }
                *installed = None;
            }
        }
    }
}

fn disarm_slot(slot: usize) {
    let table = TABLES[slot].swap(ptr::null_mut(), SeqCst);
    if table.is_null() {
        return;
    }
    if IN_HANDLER.load(SeqCst) == 0 {
        // SAFETY: the pointer came from `Box::into_raw` in `arm` and was
        // just taken out of the slot; no handler is running, and a handler
        // that starts now finds the slot empty (SeqCst: the swap above
        // precedes this check, a handler's increment precedes its load).
        drop(unsafe { Box::from_raw(table) });
    }
    // Otherwise a handler may be reading it while the process dies: leak.
}

fn install() -> std::io::Result<Vec<(libc::c_int, Disposition)>> {
    let mut previous = Vec::with_capacity(HANDLED.len());
    for s in HANDLED {
        // No SA_RESTART (see the module's docs); the other handled signals
        // are blocked while the handler runs.
        match signal::handle(s, on_signal, 0, &HANDLED) {
            Ok(old) => previous.push((s, old)),
            Err(e) => {
                for (s, o) in &previous {
                    signal::restore(*s, o);
                }
                return Err(e);
            }
        }
    }
    Ok(previous)
}

/// Write every registered table. Async-signal-safe: atomics and pwrite(2).
fn restore_all() {
    for slot in &TABLES {
        let table = slot.load(SeqCst);
        if table.is_null() {
            continue;
        }
        // SAFETY: a non-null slot points at a live `Table`: it is freed only
        // after being swapped out of the slot while no handler runs
        // (`IN_HANDLER` is raised before this load).
        let entries = unsafe { &(*table).entries };
        for e in entries.iter() {
            let bytes = e.value.to_le_bytes();
            // SAFETY: `bytes` is 8 readable bytes; a stale descriptor makes
            // pwrite fail with EBADF, which is ignored.
            unsafe {
                libc::pwrite64(
                    e.fd,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    e.offset as libc::off64_t,
                )
            };
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    IN_HANDLER.fetch_add(1, SeqCst);
    PENDING.store(sig, SeqCst);
    let first = HITS.fetch_add(1, SeqCst) == 0;
    if POLICY.load(SeqCst) == DEFER && first {
        IN_HANDLER.fetch_sub(1, SeqCst);
        return;
    }
    restore_all();
    // Die by the signal: default disposition, then raise. The signal is
    // blocked while this handler runs, so it is delivered on return.
    signal::set_default(sig);
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
    // IN_HANDLER stays raised: the process is about to end, and no table
    // may be freed under another thread's feet meanwhile.
}
