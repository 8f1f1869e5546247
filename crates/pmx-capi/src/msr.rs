//! `pmx_msr_*`: [`pmx::msr::MsrSession`](pmx_rs::msr::MsrSession) from C —
//! read MSRs by name or address, program an event list with the plan
//! `pmx msr plan` shows, and restore every register on
//! [`pmx_msr_close`], on SIGINT/SIGTERM/SIGHUP, or at `exit()`.
//!
//! ```c
//! pmx_msr_session *s = pmx_msr_open("0-3");
//! if (!s) { fprintf(stderr, "%s\n", pmx_last_error()); return 1; }
//! uint64_t tsc;
//! pmx_msr_read(s, "IA32_TIME_STAMP_COUNTER", 0, &tsc);
//! pmx_msr_program(s, "instructions,r01c2");
//! ...
//! pmx_msr_close(s);      /* every register programmed is restored */
//! ```

use crate::{guarded, guarded_or, name_arg, object};
use pmx_rs::msr::{MsrSession, MsrSessionOptions};
use std::ffi::{c_char, c_int};
use std::sync::Mutex;

/// A session (the type behind `pmx_msr_session`).
pub struct PmxMsrSession {
    inner: MsrSession,
}

/// Sessions open now (as addresses), restored by the `atexit` handler:
/// a C program that calls `exit()` never drops them.
static LIVE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

extern "C" fn restore_at_exit() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|p| p.into_inner()));
    for p in live {
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: listed sessions are live until pmx_msr_close, which
            // removes them first.
            let s = unsafe { &mut *(p as *mut PmxMsrSession) };
            let _ = s.inner.restore();
        });
    }
}

/// Open the msr devices of `cpus` (the kernel's list syntax, `"0-3,8"`;
/// NULL: every online CPU). NULL on failure, with the reason (the msr
/// driver not loaded, not root) in `pmx_last_error()`.
///
/// # Safety
/// `cpus` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_msr_open(cpus: *const c_char) -> *mut PmxMsrSession {
    guarded_or(std::ptr::null_mut(), || {
        let cpus = if cpus.is_null() {
            None
        } else {
            Some(name_arg(cpus, "cpus")?.to_string())
        };
        let opts = MsrSessionOptions {
            cpus,
            events_dir_default: pmx_rs::events_dirs::from_env(),
            ..Default::default()
        };
        let inner = MsrSession::open(&opts).map_err(|e| format!("pmx_msr_open: {e}"))?;
        let p = Box::into_raw(Box::new(PmxMsrSession { inner }));
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        if live.is_empty() {
            static REGISTERED: std::sync::Once = std::sync::Once::new();
            // SAFETY: registering a plain extern "C" function.
            REGISTERED.call_once(|| unsafe {
                libc::atexit(restore_at_exit);
            });
        }
        live.push(p as usize);
        Ok(p)
    })
}

/// Read `reg` (a name such as `"IA32_TIME_STAMP_COUNTER"` or an address such as
/// `"0x10"`) on `cpu` into `*out`.
///
/// # Safety
/// `s` is NULL or from [`pmx_msr_open`]; `reg` a NUL-terminated string;
/// `out` valid.
#[no_mangle]
pub unsafe extern "C" fn pmx_msr_read(
    s: *mut PmxMsrSession,
    reg: *const c_char,
    cpu: c_int,
    out: *mut u64,
) -> c_int {
    guarded(|| {
        let s = object(s, "pmx_msr_read")?;
        let reg = name_arg(reg, "register")?;
        let cpu = u32::try_from(cpu).map_err(|_| format!("pmx_msr_read: CPU {cpu}"))?;
        if out.is_null() {
            return Err("pmx_msr_read: out is NULL".to_string());
        }
        *out = s
            .inner
            .read(reg, cpu)
            .map_err(|e| format!("pmx_msr_read: {e}"))?;
        Ok(0)
    })
}

/// Program `events` (an `-e` list) on the session's CPUs with the plan
/// `pmx msr plan -e EVENTS` shows (registers saved, other users checked,
/// counters zeroed and enabled); a second call restores the first plan
/// first. Returns the number of counters programmed per CPU set.
///
/// # Safety
/// `s` is NULL or from [`pmx_msr_open`]; `events` a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn pmx_msr_program(s: *mut PmxMsrSession, events: *const c_char) -> c_int {
    guarded(|| {
        let s = object(s, "pmx_msr_program")?;
        let events = name_arg(events, "events")?;
        let plan = s
            .inner
            .program(events)
            .map_err(|e| format!("pmx_msr_program: {e}"))?;
        Ok(plan.slots.len() as c_int)
    })
}

/// Restore every register programmed, close the devices and free the
/// session (NULL is ignored). Returns 0, or -1 when a register could not
/// be restored (the session is freed all the same).
///
/// # Safety
/// `s` is NULL or from [`pmx_msr_open`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn pmx_msr_close(s: *mut PmxMsrSession) -> c_int {
    if s.is_null() {
        return 0;
    }
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|&p| p != s as usize);
    guarded(|| {
        let mut b = Box::from_raw(s);
        b.inner
            .restore()
            .map(|_| 0)
            .map_err(|e| format!("pmx_msr_close: restoring: {e}"))
    })
}
