//! `pmx_recorder_*`: [`pmx::recorder`](pmx_rs::recorder) from C — perf
//! events and MSRs read together every N ms on their CPUs, each with a
//! transform (`PMX_RAW`, `PMX_DELTA`, or a C callback) applied before the
//! values are stored, then written as CSV.
//!
//! ```c
//! pmx_recorder *r = pmx_recorder_new(10, 100);      /* 10 ms, 100 samples */
//! pmx_recorder_add_event(r, "cpu-clock", NULL, 0, PMX_DELTA); /* every CPU */
//! pmx_recorder_start(r);
//! pmx_recorder_wait(r);                               /* until 100 samples */
//! pmx_recorder_write_csv(r, "cpu-clock.csv");
//! pmx_recorder_free(r);
//! ```

use crate::{guarded, guarded_or, name_arg, object};
use pmx_rs::msr::Scope;
use pmx_rs::recorder::{Handle, MsrHandle, PerfHandle, Recorder, Running, Transform};
use std::ffi::{c_char, c_int, c_void};
use std::time::Duration;

/// `PMX_RAW`: store the raw values.
pub const PMX_RAW: c_int = 0;
/// `PMX_DELTA`: store the change since the previous read, modulo the
/// counter's width.
pub const PMX_DELTA: c_int = 1;
/// `PMX_SCOPE_THREAD`: read on every CPU.
pub const PMX_SCOPE_THREAD: c_int = 0;
/// `PMX_SCOPE_CORE`: read on one CPU per core.
pub const PMX_SCOPE_CORE: c_int = 1;
/// `PMX_SCOPE_PACKAGE`: read on one CPU per package.
pub const PMX_SCOPE_PACKAGE: c_int = 2;

/// `pmx_transform_fn`: `fn(now, prev, out, ncpus, user)`, called on the
/// recorder's thread for every sample with the raw values now and at the
/// previous read; it fills `out` with what is stored.
pub type PmxTransformFn = Option<
    unsafe extern "C" fn(
        now: *const u64,
        prev: *const u64,
        out: *mut u64,
        ncpus: c_int,
        user: *mut c_void,
    ),
>;

enum State {
    Idle(Recorder),
    Running(Running),
    /// Start or a sample failed and took the recorder with it.
    Failed(String),
}

/// A recorder: idle (handles may be added, samples taken by hand, CSV
/// written) or running on its thread.
pub struct PmxRecorder {
    state: State,
}

impl PmxRecorder {
    fn idle(&mut self, what: &str) -> Result<&mut Recorder, String> {
        match &mut self.state {
            State::Idle(r) => Ok(r),
            State::Running(_) => Err(format!(
                "{what}: the recorder is running (pmx_recorder_stop or _wait first)"
            )),
            State::Failed(why) => Err(format!("{what}: the recorder failed earlier: {why}")),
        }
    }
}

/// A recorder reading every `interval_ms` (at least 1) until `capacity`
/// samples are stored.
#[no_mangle]
pub extern "C" fn pmx_recorder_new(interval_ms: c_int, capacity: c_int) -> *mut PmxRecorder {
    guarded_or(std::ptr::null_mut(), || {
        if interval_ms < 0 || capacity <= 0 {
            return Err(format!(
                "pmx_recorder_new: interval {interval_ms} ms, capacity {capacity}: both must be positive"
            ));
        }
        let rec = Recorder::new(Duration::from_millis(interval_ms as u64), capacity as usize);
        Ok(Box::into_raw(Box::new(PmxRecorder {
            state: State::Idle(rec),
        })))
    })
}

/// # Safety
/// `cpus` is NULL or holds `ncpus` ints.
unsafe fn cpu_list(cpus: *const c_int, ncpus: c_int) -> Result<Vec<u32>, String> {
    if cpus.is_null() || ncpus <= 0 {
        return Ok(pmx_rs::stat::online_cpus());
    }
    std::slice::from_raw_parts(cpus, ncpus as usize)
        .iter()
        .map(|&c| u32::try_from(c).map_err(|_| format!("CPU {c} is not a CPU number")))
        .collect()
}

fn transform(t: c_int) -> Result<Transform, String> {
    match t {
        PMX_RAW => Ok(Transform::None),
        PMX_DELTA => Ok(Transform::Delta),
        _ => Err(format!(
            "transform {t}: PMX_RAW (0) or PMX_DELTA (1); a callback through pmx_recorder_add_event_fn"
        )),
    }
}

/// # Safety
/// As [`pmx_recorder_add_event`].
unsafe fn add_event(
    r: *mut PmxRecorder,
    event: *const c_char,
    cpus: *const c_int,
    ncpus: c_int,
    what: &str,
    t: impl FnOnce() -> Result<Transform, String>,
) -> c_int {
    guarded(|| {
        let r = object(r, what)?;
        let event = name_arg(event, "event")?;
        let cpus = cpu_list(cpus, ncpus)?;
        let rec = r.idle(what)?;
        let t = t()?;
        let h = PerfHandle::open(event, &cpus).map_err(|e| format!("{what}: {e}"))?;
        add(rec, h, t, what)
    })
}

fn add(
    rec: &mut Recorder,
    h: impl Handle + 'static,
    t: Transform,
    what: &str,
) -> Result<c_int, String> {
    if rec.is_started() {
        return Err(format!(
            "{what}: the recorder has started; add every handle before the first sample"
        ));
    }
    rec.add(h, t);
    Ok(rec.handles().len() as c_int - 1)
}

/// Add perf event `event` counting every task on each of `cpus`
/// (`ncpus` of them; NULL or 0: every online CPU), stored through
/// `transform` (`PMX_RAW` or `PMX_DELTA`). Returns the handle's index.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`]; `event` a NUL-terminated
/// string; `cpus` NULL or `ncpus` ints.
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_add_event(
    r: *mut PmxRecorder,
    event: *const c_char,
    cpus: *const c_int,
    ncpus: c_int,
    transform_kind: c_int,
) -> c_int {
    add_event(r, event, cpus, ncpus, "pmx_recorder_add_event", || {
        transform(transform_kind)
    })
}

/// The callback and its pointer, sent to the recorder's thread.
struct Callback {
    f: unsafe extern "C" fn(*const u64, *const u64, *mut u64, c_int, *mut c_void),
    user: *mut c_void,
}

// SAFETY: the header documents that the callback runs on the recorder's
// thread; `user` is the caller's to synchronise.
unsafe impl Send for Callback {}

/// [`pmx_recorder_add_event`] with a C callback as the transform:
/// `f(now, prev, out, ncpus, user)` for each sample, on the recorder's
/// thread.
///
/// # Safety
/// As [`pmx_recorder_add_event`]; `f` is safe to call from another
/// thread with `user` until [`pmx_recorder_free`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_add_event_fn(
    r: *mut PmxRecorder,
    event: *const c_char,
    cpus: *const c_int,
    ncpus: c_int,
    f: PmxTransformFn,
    user: *mut c_void,
) -> c_int {
    add_event(r, event, cpus, ncpus, "pmx_recorder_add_event_fn", || {
        let f = f.ok_or("pmx_recorder_add_event_fn: the callback is NULL")?;
        let cb = Callback { f, user };
        Ok(Transform::Custom(Box::new(move |now, prev, out| {
            let cb = &cb;
            // SAFETY: three slices of the handle's CPU count.
            unsafe {
                (cb.f)(
                    now.as_ptr(),
                    prev.as_ptr(),
                    out.as_mut_ptr(),
                    now.len() as c_int,
                    cb.user,
                )
            }
        })))
    })
}

/// Add MSR `name_or_addr` (`"IA32_TIME_STAMP_COUNTER"`, `"0x611"`) read through the msr
/// driver once per `scope` domain (`PMX_SCOPE_THREAD/CORE/PACKAGE`) of
/// every online CPU, stored through `transform` (deltas wrap at the
/// register's width). Returns the handle's index; -1 with the driver's
/// reason when the devices cannot be opened.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`]; `name_or_addr` a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_add_msr(
    r: *mut PmxRecorder,
    name_or_addr: *const c_char,
    scope: c_int,
    transform_kind: c_int,
) -> c_int {
    let what = "pmx_recorder_add_msr";
    guarded(|| {
        let r = object(r, what)?;
        let name = name_arg(name_or_addr, "register")?;
        let scope = match scope {
            PMX_SCOPE_THREAD => Scope::Thread,
            PMX_SCOPE_CORE => Scope::Core,
            PMX_SCOPE_PACKAGE => Scope::Package,
            s => {
                return Err(format!(
                    "{what}: scope {s}: PMX_SCOPE_THREAD, _CORE or _PACKAGE"
                ))
            }
        };
        let rec = r.idle(what)?;
        let t = transform(transform_kind)?;
        let h = MsrHandle::open(name, scope).map_err(|e| format!("{what}: {e}"))?;
        add(rec, h, t, what)
    })
}

/// Read the baseline and sample every interval on a background thread
/// until the buffer is full or [`pmx_recorder_stop`].
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_start(r: *mut PmxRecorder) -> c_int {
    guarded(|| {
        let r = object(r, "pmx_recorder_start")?;
        r.idle("pmx_recorder_start")?;
        let State::Idle(rec) = std::mem::replace(&mut r.state, State::Failed(String::new())) else {
            unreachable!("checked idle");
        };
        match rec.start() {
            Ok(running) => {
                r.state = State::Running(running);
                Ok(0)
            }
            Err(e) => {
                let why = format!("pmx_recorder_start: {e}");
                r.state = State::Failed(why.clone());
                Err(why)
            }
        }
    })
}

fn finish(r: *mut PmxRecorder, what: &str, stop: bool) -> c_int {
    guarded(|| {
        // SAFETY: the caller passes a handle from pmx_recorder_new.
        let r = unsafe { object(r, what)? };
        let State::Running(_) = &r.state else {
            return match &r.state {
                State::Idle(_) => Ok(0),
                _ => r.idle(what).map(|_| 0),
            };
        };
        let State::Running(run) = std::mem::replace(&mut r.state, State::Failed(String::new()))
        else {
            unreachable!("checked running");
        };
        match if stop { run.stop() } else { run.wait() } {
            Ok(rec) => {
                r.state = State::Idle(rec);
                Ok(0)
            }
            Err(e) => {
                let why = format!("{what}: {e}");
                r.state = State::Failed(why.clone());
                Err(why)
            }
        }
    })
}

/// Stop the background thread now; the samples so far are kept.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_stop(r: *mut PmxRecorder) -> c_int {
    finish(r, "pmx_recorder_stop", true)
}

/// Wait until the buffer is full (or the thread stopped on an error).
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_wait(r: *mut PmxRecorder) -> c_int {
    finish(r, "pmx_recorder_wait", false)
}

/// Take one sample now (the first call reads the baseline first): 1 when
/// stored, 0 when the buffer is full, -1 on error.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_sample(r: *mut PmxRecorder) -> c_int {
    guarded(|| {
        let rec = object(r, "pmx_recorder_sample")?.idle("pmx_recorder_sample")?;
        rec.sample()
            .map(c_int::from)
            .map_err(|e| format!("pmx_recorder_sample: {e}"))
    })
}

/// Number of samples stored, or -1.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`].
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_len(r: *mut PmxRecorder) -> c_int {
    guarded(|| {
        let rec = object(r, "pmx_recorder_len")?.idle("pmx_recorder_len")?;
        Ok(rec.len() as c_int)
    })
}

/// Write `sample,time_s,cpu,<handle>…` to `path`: one row per sample and
/// CPU.
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`]; `path` a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_write_csv(r: *mut PmxRecorder, path: *const c_char) -> c_int {
    guarded(|| {
        let what = "pmx_recorder_write_csv";
        let rec = object(r, what)?.idle(what)?;
        let p = name_arg(path, "path")?;
        rec.write_csv(std::path::Path::new(p))
            .map(|_| 0)
            .map_err(|e| format!("{what}: {p}: {e}"))
    })
}

/// Stop the recorder if running, close its handles and free it (NULL is
/// ignored).
///
/// # Safety
/// `r` is NULL or from [`pmx_recorder_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn pmx_recorder_free(r: *mut PmxRecorder) {
    if r.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let b = Box::from_raw(r);
        if let State::Running(run) = b.state {
            let _ = run.stop();
        }
    }));
}
