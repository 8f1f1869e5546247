//! # pmx-capi — the pmx library through a C ABI
//!
//! `libpmx.so` and `libpmx.a` for C, C++ and Fortran programs, declared by
//! the hand-written header `include/pmx.h` at the repository root. It is
//! a thin layer over [`pmx::region`](mod@pmx_rs::region): the same process-wide
//! configuration (`PMX_EVENTS`, `PMX_METRICS`, `PMX_REGIONS_OUT`, which
//! `pmx stat --regions` sets), the same per-thread counter groups, the
//! same results file — so a C program and a Rust program report the same
//! numbers in the same format.
//!
//! ```c
//! #include <pmx.h>
//! pmx_init();                    /* or nothing: the first region configures */
//! pmx_region_begin("solve");
//! solve();
//! pmx_region_end("solve");
//! pmx_finalize();                /* writes $PMX_REGIONS_OUT, if set */
//! ```
//!
//! Beside the region markers, the rest of the library, each family a
//! module over the Rust call it wraps (the bindings add no logic):
//!
//! - [`counters`]: `pmx_counters_*` over [`pmx::Counters`](pmx_rs::Counters)
//!   (open on a pid/CPU, enable, disable, reset, read into `pmx_count`s);
//! - [`recorder`]: `pmx_recorder_*` over [`pmx::recorder`](pmx_rs::recorder)
//!   (perf events and MSRs read every N ms with a transform: raw, delta,
//!   or a C callback; CSV out);
//! - [`msr`]: `pmx_msr_*` over [`pmx::msr::MsrSession`](pmx_rs::msr::MsrSession)
//!   (read registers, program an event list, restore on close or exit);
//! - [`registers`]: `pmx_encode`/`pmx_decode` over
//!   [`pmx::registers`](pmx_rs::registers).
//!
//! Conventions: functions return 0 (or a count) on success and -1 on
//! failure, constructors a pointer or NULL, with the reason in
//! [`pmx_last_error`] (per thread). No Rust panic crosses the boundary:
//! each entry point catches it and turns it into -1 or NULL. Every object
//! is freed by one call (`pmx_counters_close`, `pmx_recorder_free`,
//! `pmx_msr_close`), which accepts NULL. Names are NUL-terminated UTF-8.
//! With `PMX_DISABLE` defined, every region-marker call in the header
//! compiles to nothing (the other families stay declared).

#![warn(missing_docs)]

pub mod counters;
pub mod msr;
pub mod recorder;
pub mod registers;

use pmx_rs::region::{self, Config};
use std::cell::RefCell;
use std::ffi::{c_char, c_double, c_int, c_longlong, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Event names handed out by [`pmx_event_name`]; they live until exit.
static NAMES: Mutex<Vec<CString>> = Mutex::new(Vec::new());

pub(crate) fn set_error(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

/// Run `f`, turning an error or a panic into -1 and the last error.
pub(crate) fn guarded(f: impl FnOnce() -> Result<c_int, String>) -> c_int {
    guarded_or(-1, f)
}

/// Run `f`, turning an error or a panic into `failed` and the last error.
pub(crate) fn guarded_or<T>(failed: T, f: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(msg)) => {
            set_error(msg);
            failed
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".to_string());
            set_error(format!("pmx: internal error: {what}"));
            failed
        }
    }
}

/// `p` as a `&mut T`, or an error naming the function.
///
/// # Safety
/// `p` is null or points to a live `T` no other call uses at the same
/// time.
pub(crate) unsafe fn object<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, String> {
    p.as_mut()
        .ok_or_else(|| format!("{what}: the handle is NULL"))
}

/// A Rust string as a C string (NULs replaced).
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// # Safety
/// `p` is null or a NUL-terminated string.
pub(crate) unsafe fn name_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Err(format!("pmx: {what} is NULL"));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| format!("pmx: {what} is not UTF-8"))
}

fn configure(config: Config) -> Result<c_int, String> {
    match region::init(config) {
        Ok(()) | Err(region::Error::AlreadyConfigured) => Ok(0),
        Err(e) => Err(e.to_string()),
    }
}

/// Configure from the environment (`PMX_EVENTS`, `PMX_METRICS`,
/// `PMX_REGIONS_OUT`) and open the calling thread's counters. Calling it
/// again, or after a region, is harmless.
#[no_mangle]
pub extern "C" fn pmx_init() -> c_int {
    guarded(|| {
        configure(Config::from_env())?;
        region::thread_init().map_err(|e| e.to_string())?;
        Ok(0)
    })
}

/// Configure with this event list (`-e` syntax) when `PMX_EVENTS` is not
/// set (when it is, it wins: `pmx stat --regions -e …` changes the events
/// without a rebuild); metrics and the results file come from the
/// environment. Must come before any region; -1 when regions are already
/// configured.
///
/// # Safety
/// `events` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_init_events(events: *const c_char) -> c_int {
    guarded(|| {
        let events = name_arg(events, "events")?;
        let mut config = Config::from_env();
        if config.events.is_none() {
            config.events = Some(events.to_string());
        }
        region::init(config).map_err(|e| e.to_string())?;
        region::thread_init().map_err(|e| e.to_string())?;
        Ok(0)
    })
}

/// Open the calling thread's counters now, so its first region does not
/// pay for it (otherwise done by the first region).
#[no_mangle]
pub extern "C" fn pmx_thread_init() -> c_int {
    guarded(|| region::thread_init().map(|_| 0).map_err(|e| e.to_string()))
}

/// Enter region `name` on the calling thread.
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_region_begin(name: *const c_char) -> c_int {
    guarded(|| {
        let name = name_arg(name, "region name")?;
        region::begin(name).map(|_| 0).map_err(|e| e.to_string())
    })
}

/// Leave region `name` on the calling thread (the innermost open one).
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_region_end(name: *const c_char) -> c_int {
    guarded(|| {
        let name = name_arg(name, "region name")?;
        region::end(name).map(|_| 0).map_err(|e| e.to_string())
    })
}

/// Number of events counted (after configuration), or -1.
#[no_mangle]
pub extern "C" fn pmx_event_count() -> c_int {
    guarded(|| {
        region::event_names()
            .map(|n| n.len() as c_int)
            .map_err(|e| e.to_string())
    })
}

/// Name of event `i` (0-based), valid until the program ends; NULL when
/// out of range.
#[no_mangle]
pub extern "C" fn pmx_event_name(i: c_int) -> *const c_char {
    let r = catch_unwind(|| {
        let names = region::event_names().ok()?;
        let name = names.get(usize::try_from(i).ok()?)?;
        let c = CString::new(name.as_str()).ok()?;
        let mut keep = NAMES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keep.iter().find(|k| k.as_c_str() == c.as_c_str()) {
            return Some(k.as_ptr());
        }
        keep.push(c);
        keep.last().map(|k| k.as_ptr())
    });
    match r {
        Ok(Some(p)) => p,
        _ => std::ptr::null(),
    }
}

/// The calling thread's results for region `name` so far, like LIKWID's
/// `likwid_markerGetRegion`.
///
/// `*nevents` holds the room in `values` on entry and the number of
/// events on return; `values[i]` receives event i's count scaled for
/// multiplexing (NaN when it was not counted), in the order of
/// [`pmx_event_name`]. `time_s` (seconds inside, summed) and `calls` may
/// be NULL. Returns 0, or -1 when the thread has not completed the region
/// (all outputs then untouched) or an argument is invalid.
///
/// # Safety
/// `name` is a NUL-terminated string; `nevents` is valid; `values` has
/// room for `*nevents` doubles (may be NULL when `*nevents` is 0);
/// `time_s` and `calls` are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn pmx_region_get(
    name: *const c_char,
    nevents: *mut c_int,
    values: *mut c_double,
    time_s: *mut c_double,
    calls: *mut c_longlong,
) -> c_int {
    guarded(|| {
        let name = name_arg(name, "region name")?;
        if nevents.is_null() {
            return Err("pmx_region_get: nevents is NULL".to_string());
        }
        let room = usize::try_from(*nevents).unwrap_or(0);
        if room > 0 && values.is_null() {
            return Err("pmx_region_get: values is NULL".to_string());
        }
        let rec = region::get(name).ok_or_else(|| {
            format!("pmx_region_get: this thread has not completed region '{name}'")
        })?;
        let all = region::results();
        for (i, _) in rec.counts.iter().enumerate().take(room) {
            let v = all
                .events
                .get(i)
                .filter(|e| e.not_counted.is_none())
                .and_then(|_| rec.scaled(i))
                .unwrap_or(f64::NAN);
            *values.add(i) = v;
        }
        *nevents = rec.counts.len() as c_int;
        if !time_s.is_null() {
            *time_s = rec.wall_ns as f64 / 1e9;
        }
        if !calls.is_null() {
            *calls = rec.calls as c_longlong;
        }
        Ok(0)
    })
}

/// Write every thread's results as JSON (the `pmx-regions/1` file) to
/// `path`.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_write_results(path: *const c_char) -> c_int {
    guarded(|| {
        let p = name_arg(path, "path")?;
        region::write_results(std::path::Path::new(p))
            .map(|_| 0)
            .map_err(|e| format!("pmx_write_results: {p}: {e}"))
    })
}

/// Print the results table on stderr.
#[no_mangle]
pub extern "C" fn pmx_print_results() -> c_int {
    guarded(|| {
        eprint!("{}", region::results().to_table());
        Ok(0)
    })
}

/// Write the results file named by `PMX_REGIONS_OUT` (once; also done at
/// exit). The counters stay open: regions may continue.
#[no_mangle]
pub extern "C" fn pmx_finalize() -> c_int {
    guarded(|| {
        region::finalize()
            .map(|_| 0)
            .map_err(|e| format!("pmx_finalize: writing the results: {e}"))
    })
}

/// The calling thread's last error message, or NULL; valid until the
/// thread's next failing pmx call.
#[no_mangle]
pub extern "C" fn pmx_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}
