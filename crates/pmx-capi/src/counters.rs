//! `pmx_counters_*`: [`pmx::Counters`](pmx_rs::Counters) from C.
//!
//! ```c
//! pmx_counters *c = pmx_counters_open("task-clock,page-faults", 0, -1);
//! pmx_count v[2];
//! pmx_counters_enable(c);
//! work();
//! pmx_counters_disable(c);
//! pmx_counters_read(c, v, 2);   /* v[1].value: the page faults of work() */
//! pmx_counters_close(c);
//! ```

use crate::{c_string, guarded, guarded_or, name_arg, object};
use pmx_model::count::Count;
use pmx_rs::stat::EventStatus;
use pmx_rs::{CountTarget, Counters};
use std::ffi::{c_char, c_int, CString};

/// One event's reading, as `pmx_count` in `pmx.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PmxCount {
    /// The raw value (summed over the target's threads or CPUs).
    pub value: u64,
    /// Time enabled, ns.
    pub enabled: u64,
    /// Time running on a counter, ns.
    pub running: u64,
    /// `value × enabled / running`; NaN when the event is not counted
    /// here or never ran.
    pub scaled: f64,
}

/// Open counters: the Rust object, the names as C strings, and a buffer
/// for reads.
pub struct PmxCounters {
    inner: Counters,
    names: Vec<CString>,
    counted: Vec<bool>,
    /// Why each event is not counted (None: counted).
    reasons: Vec<Option<CString>>,
    scratch: Vec<Count>,
}

/// Open `events` (an `-e` list: `"task-clock,page-faults"`,
/// `"{cycles,instructions}:u"`) on perf's `(pid, cpu)` target: pid 0 and
/// cpu -1 is the calling thread; pid > 0, cpu -1 a process; pid -1, cpu
/// ≥ 0 every task on a CPU; pid -1, cpu -1 every online CPU. Created
/// disabled. NULL on failure (a bad event name: the message has a caret
/// and close matches).
///
/// # Safety
/// `events` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_open(
    events: *const c_char,
    pid: c_int,
    cpu: c_int,
) -> *mut PmxCounters {
    guarded_or(std::ptr::null_mut(), || {
        let list = name_arg(events, "events")?;
        let target = CountTarget::from_pid_cpu(pid, cpu).map_err(|e| e.to_string())?;
        let inner = Counters::builder()
            .events(list)
            .target(target)
            .open()
            .map_err(|e| e.to_string())?;
        let names = inner.events().iter().map(|e| c_string(&e.name)).collect();
        let counted = inner
            .events()
            .iter()
            .map(|e| e.status == EventStatus::Counted)
            .collect();
        let reasons = inner
            .events()
            .iter()
            .map(|e| match &e.status {
                EventStatus::Counted => None,
                EventStatus::NotSupported(w) | EventStatus::NotCounted(w) => {
                    Some(c_string(w.as_str()))
                }
            })
            .collect();
        let scratch = vec![Count::default(); inner.events().len()];
        Ok(Box::into_raw(Box::new(PmxCounters {
            inner,
            names,
            counted,
            reasons,
            scratch,
        })))
    })
}

fn io_call(
    c: *mut PmxCounters,
    what: &str,
    f: impl FnOnce(&mut Counters) -> std::io::Result<()>,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller passes a handle from pmx_counters_open.
        let c = unsafe { object(c, what)? };
        f(&mut c.inner).map_err(|e| format!("{what}: {e}"))?;
        Ok(0)
    })
}

/// Start counting (every group at once).
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_enable(c: *mut PmxCounters) -> c_int {
    io_call(c, "pmx_counters_enable", Counters::enable)
}

/// Stop counting; the values stay readable.
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_disable(c: *mut PmxCounters) -> c_int {
    io_call(c, "pmx_counters_disable", Counters::disable)
}

/// Zero the values.
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_reset(c: *mut PmxCounters) -> c_int {
    io_call(c, "pmx_counters_reset", Counters::reset)
}

/// Read every event into `out` (room for `n`), in the order of
/// [`pmx_counters_name`]; returns the number of events, or -1 (also when
/// `n` is too small). No allocation.
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`]; `out` has room for `n`.
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_read(
    c: *mut PmxCounters,
    out: *mut PmxCount,
    n: c_int,
) -> c_int {
    guarded(|| {
        let c = object(c, "pmx_counters_read")?;
        let k = c.scratch.len();
        if out.is_null() || usize::try_from(n).unwrap_or(0) < k {
            return Err(format!(
                "pmx_counters_read: room for {n} counts, the counters have {k} events"
            ));
        }
        c.inner
            .read_into(&mut c.scratch)
            .map_err(|e| format!("pmx_counters_read: {e}"))?;
        let out = std::slice::from_raw_parts_mut(out, k);
        for ((o, v), &counted) in out.iter_mut().zip(&c.scratch).zip(&c.counted) {
            *o = PmxCount {
                value: v.value,
                enabled: v.enabled,
                running: v.running,
                scaled: if counted {
                    v.scaled().unwrap_or(f64::NAN)
                } else {
                    f64::NAN
                },
            };
        }
        Ok(k as c_int)
    })
}

/// Number of events (metric inputs included), or -1.
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_count(c: *const PmxCounters) -> c_int {
    guarded(|| {
        let c = object(c.cast_mut(), "pmx_counters_count")?;
        Ok(c.names.len() as c_int)
    })
}

/// Name of event `i` (0-based) as given, valid until
/// [`pmx_counters_close`]; NULL when out of range.
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_name(c: *const PmxCounters, i: c_int) -> *const c_char {
    guarded_or(std::ptr::null(), || {
        let c = object(c.cast_mut(), "pmx_counters_name")?;
        usize::try_from(i)
            .ok()
            .and_then(|i| c.names.get(i))
            .map(|n| n.as_ptr())
            .ok_or_else(|| format!("pmx_counters_name: no event {i}"))
    })
}

/// Why event `i` is not counted here (NULL when it is counted or out of
/// range); valid until [`pmx_counters_close`].
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`].
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_status(c: *const PmxCounters, i: c_int) -> *const c_char {
    guarded_or(std::ptr::null(), || {
        let c = object(c.cast_mut(), "pmx_counters_status")?;
        Ok(usize::try_from(i)
            .ok()
            .and_then(|i| c.reasons.get(i))
            .and_then(|r| r.as_ref())
            .map_or(std::ptr::null(), |r| r.as_ptr()))
    })
}

/// Close the counters and free everything (NULL is ignored).
///
/// # Safety
/// `c` is NULL or from [`pmx_counters_open`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn pmx_counters_close(c: *mut PmxCounters) {
    if !c.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(Box::from_raw(c))));
    }
}
