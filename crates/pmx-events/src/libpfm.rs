//! # libpfm4, loaded at run time
//!
//! [libpfm4](https://perfmon2.sourceforge.net/) knows the core events of
//! many more CPUs than Intel's JSON tables cover (every AMD family since K7,
//! old Intel parts). pmx does not link against it: it opens `libpfm.so.4`
//! with `dlopen(3)` the first time a [`Libpfm`] source is loaded, and when
//! the library is missing the source is simply unavailable (an `Err` from
//! [`Libpfm::load`], never a panic).
//!
//! ## Which PMU
//!
//! libpfm names each PMU model (`amd64_fam19h_zen4`, `skx`, `icl`…).
//! [`pmu_name_for`] maps a [`CpuId`] to that name. For the machine pmx runs
//! on, libpfm's own detection (the PMUs it marks *present*) is preferred, so
//! a CPU pmx's table does not know yet still gets its events.
//!
//! ## Encoding for a CPU that is not this one
//!
//! libpfm only encodes for *active* PMUs. It offers two switches, both
//! environment variables read once, by the first `pfm_initialize()` of the
//! process (libpfm initializes once per process):
//!
//! - `LIBPFM_FORCE_PMU=<name>` activates exactly one PMU — and then no other
//!   PMU can be used for the rest of the process;
//! - `LIBPFM_ENCODE_INACTIVE=1` keeps host detection and additionally lets
//!   every PMU libpfm supports encode events named `pmu::EVENT`.
//!
//! pmx uses the second, so one process can resolve events for the host and
//! for any number of `--cpu` targets in any order (the test suites do; the
//! order of multi-threaded tests would otherwise decide which CPU wins).
//! The core-PMU encodings are the same either way (checked against dumps
//! made with `LIBPFM_FORCE_PMU` for every model-specific x86 core PMU of
//! libpfm 4.13; the one exception is `ix86arch`, whose events libpfm builds
//! from the host's CPUID, so pmx never picks it for another CPU). Every
//! encoding request names the PMU explicitly (`amd64_fam10h_barcelona::
//! DATA_CACHE_MISSES`).
//!
//! These variables, and [`LIBRARY_ENV`], are read in one place, this
//! module's `PfmEnv::from_env`, as the interface of libpfm itself.
//!
//! Safety of that switch: the variable is set under this module's lock,
//! only when libpfm reports that it is not initialized yet, only when the
//! user set neither `LIBPFM_FORCE_PMU` nor `LIBPFM_ENCODE_INACTIVE`, and it
//! is removed again right after `pfm_initialize()` (libpfm keeps only the
//! parsed number), so programs pmx launches do not inherit it. A user's own
//! `LIBPFM_FORCE_PMU` is honoured: then only that PMU is available, and
//! loading another CPU's tables fails with a message saying why.
//!
//! ## Threads
//!
//! libpfm is not thread-safe while it initializes, and pmx does not rely on
//! it being thread-safe afterwards either: every call into the library is
//! made while holding one process-wide lock. Loading enumerates the PMU's
//! events and unit masks (no encoding); [`EventSource::find`] encodes just
//! the requested name; [`EventSource::events`] encodes everything once and
//! keeps the result.
//!
//! ## What an answer holds
//!
//! Names are libpfm's: `EVENT:UMASK` for each unit mask (also found as
//! `EVENT.UMASK`, any case), and plain `EVENT` when the event has no unit
//! mask or libpfm has a default for it. Several unit masks of one event
//! combine (`RETIRED_X87_FP_OPS:ADD_SUB_OPS:MUL_OPS`) when libpfm allows it.
//! The encoding is libpfm's `perf_event_attr` (`PFM_OS_PERF_EVENT_EXT`):
//! `type`, `config`, `config1`, `config2`. Privilege and the other modifiers
//! are not libpfm's business here: pmx applies the user's modifiers itself,
//! so everything libpfm sets besides those four fields is dropped, and the
//! x86 control bits that are never part of a raw config (USR, OS, INT, EN;
//! on AMD also GuestOnly/HostOnly) are cleared.

use crate::{name_key, Counters, EventDef, EventSource, Precise, SourceKind};
use pmx_model::cpu::{CpuId, Vendor};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The shared object pmx opens: libpfm4's stable soname.
pub const LIBRARY_NAME: &str = "libpfm.so.4";

/// Environment variable naming another file to open instead of
/// [`LIBRARY_NAME`] (a libpfm built from source, or a test of the
/// missing-library path).
pub const LIBRARY_ENV: &str = "PMX_LIBPFM";

/// `attr.type` of the x86 core PMU (`PERF_TYPE_RAW`).
const PERF_TYPE_RAW: u32 = 4;

/// PERFEVTSEL/PERF_CTL bits that are modifiers, never part of a raw
/// perf config: USR 16, OS 17, INT 20, EN 22.
const X86_CONTROL_BITS: u64 = (1 << 16) | (1 << 17) | (1 << 20) | (1 << 22);

/// AMD PERF_CTL GuestOnly (40) and HostOnly (41): perf expresses them as
/// `exclude_host`/`exclude_guest`.
const AMD_HOST_GUEST_BITS: u64 = (1 << 40) | (1 << 41);

/// Raw declarations of the parts of libpfm4's C API pmx uses
/// (`perfmon/pfmlib.h`, `perfmon/pfmlib_perf_event.h`, ABI 0).
mod ffi {
    pub use pmx_perfdata::PerfEventAttr;
    use std::ffi::{c_char, c_int, c_void};

    /// `PFM_SUCCESS`.
    pub const PFM_SUCCESS: c_int = 0;
    /// `PFM_ERR_NOINIT`: the library was not initialized.
    pub const PFM_ERR_NOINIT: c_int = -3;
    /// `PFM_ERR_NOTFOUND`: no such event (or PMU not usable).
    pub const PFM_ERR_NOTFOUND: c_int = -4;

    /// `PFM_PLM0`: ring 0.
    pub const PFM_PLM0: c_int = 0x01;
    /// `PFM_PLM3`: rings 1–3.
    pub const PFM_PLM3: c_int = 0x08;

    /// `PFM_OS_NONE`: PMU attributes only.
    pub const PFM_OS_NONE: c_int = 0;
    /// `PFM_OS_PERF_EVENT_EXT`: perf_event encoding, all attributes.
    pub const PFM_OS_PERF_EVENT_EXT: c_int = 2;

    /// `PFM_ATTR_UMASK`.
    pub const PFM_ATTR_UMASK: c_int = 1;

    /// `PFM_PMU_TYPE_CORE`.
    pub const PFM_PMU_TYPE_CORE: c_int = 1;

    /// `PFM_PMU_INFO_ABI0` (64-bit).
    pub const PFM_PMU_INFO_ABI0: usize = 56;
    /// `PFM_EVENT_INFO_ABI0` (64-bit).
    pub const PFM_EVENT_INFO_ABI0: usize = 64;
    /// `PFM_ATTR_INFO_ABI0` (64-bit).
    pub const PFM_ATTR_INFO_ABI0: usize = 64;
    /// `PFM_PERF_ENCODE_ABI0` (64-bit).
    pub const PFM_PERF_ENCODE_ABI0: usize = 40;
    /// `PERF_ATTR_SIZE_VER7`: the `size` pmx tells libpfm its
    /// [`PerfEventAttr`] has (libpfm writes at most that many bytes of
    /// the 136-byte struct).
    pub const PERF_ATTR_SIZE: usize = pmx_perfdata::format::attr_size::VER7 as usize;

    /// `pfm_pmu_info_t`.
    #[repr(C)]
    pub struct PmuInfo {
        pub name: *const c_char,
        pub desc: *const c_char,
        pub size: usize,
        pub pmu: c_int,
        pub type_: c_int,
        pub nevents: c_int,
        pub first_event: c_int,
        pub max_encoding: c_int,
        pub num_cntrs: c_int,
        pub num_fixed_cntrs: c_int,
        /// Bit 0 `is_present`, bit 1 `is_dfl`.
        pub flags: u32,
    }

    /// `pfm_event_info_t`.
    #[repr(C)]
    pub struct EventInfo {
        pub name: *const c_char,
        pub desc: *const c_char,
        pub equiv: *const c_char,
        pub size: usize,
        pub code: u64,
        pub pmu: c_int,
        pub dtype: c_int,
        pub idx: c_int,
        pub nattrs: c_int,
        pub reserved: c_int,
        /// Bit 0 `is_precise`, bits 1–2 `is_speculative`, bit 3
        /// `support_hw_smpl`.
        pub flags: u32,
    }

    /// `pfm_event_attr_info_t`.
    #[repr(C)]
    pub struct AttrInfo {
        pub name: *const c_char,
        pub desc: *const c_char,
        pub equiv: *const c_char,
        pub size: usize,
        pub code: u64,
        pub type_: c_int,
        pub idx: c_int,
        pub ctrl: c_int,
        /// Bit 0 `is_dfl`, bit 1 `is_precise`, bits 2–3 `is_speculative`,
        /// bit 4 `support_hw_smpl`.
        pub flags: u32,
        /// The `defaults` union (64-bit value or pointer).
        pub dfl: u64,
    }

    /// `pfm_perf_encode_arg_t`.
    #[repr(C)]
    pub struct PerfEncodeArg {
        pub attr: *mut PerfEventAttr,
        pub fstr: *mut *mut c_char,
        pub size: usize,
        pub idx: c_int,
        pub cpu: c_int,
        pub flags: c_int,
        pub pad0: c_int,
    }

    #[cfg(target_pointer_width = "64")]
    const _: () = {
        assert!(std::mem::size_of::<PmuInfo>() == PFM_PMU_INFO_ABI0);
        assert!(std::mem::size_of::<EventInfo>() == PFM_EVENT_INFO_ABI0);
        assert!(std::mem::size_of::<AttrInfo>() == PFM_ATTR_INFO_ABI0);
        assert!(std::mem::size_of::<PerfEncodeArg>() == PFM_PERF_ENCODE_ABI0);
    };

    /// `pfm_initialize`.
    pub type Initialize = unsafe extern "C" fn() -> c_int;
    /// `pfm_strerror`.
    pub type Strerror = unsafe extern "C" fn(c_int) -> *const c_char;
    /// `pfm_get_pmu_info`.
    pub type GetPmuInfo = unsafe extern "C" fn(c_int, *mut PmuInfo) -> c_int;
    /// `pfm_get_event_next`.
    pub type GetEventNext = unsafe extern "C" fn(c_int) -> c_int;
    /// `pfm_get_event_info`.
    pub type GetEventInfo = unsafe extern "C" fn(c_int, c_int, *mut EventInfo) -> c_int;
    /// `pfm_get_event_attr_info`.
    pub type GetEventAttrInfo = unsafe extern "C" fn(c_int, c_int, c_int, *mut AttrInfo) -> c_int;
    /// `pfm_get_os_event_encoding`.
    pub type GetOsEventEncoding =
        unsafe extern "C" fn(*const c_char, c_int, c_int, *mut c_void) -> c_int;
}

/// How libpfm was initialized in this process (it initializes once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", content = "pmu", rename_all = "kebab-case")]
pub enum InitMode {
    /// pmx initialized it with `LIBPFM_ENCODE_INACTIVE=1`: host detection
    /// plus every PMU libpfm supports, by name.
    AllPmus,
    /// The user set `LIBPFM_ENCODE_INACTIVE` (to this value) and pmx left
    /// it alone; libpfm versions differ in how they read the value, so
    /// which PMUs encode is checked per PMU.
    UserEncodeInactive(String),
    /// The user's `LIBPFM_FORCE_PMU`: only this PMU is active.
    Forced(String),
    /// Something else in this process initialized libpfm before pmx did;
    /// which PMUs encode is whatever it chose.
    External,
}

impl fmt::Display for InitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitMode::AllPmus => write!(f, "every supported PMU (LIBPFM_ENCODE_INACTIVE=1)"),
            InitMode::UserEncodeInactive(v) => {
                write!(f, "LIBPFM_ENCODE_INACTIVE={v} from the environment")
            }
            InitMode::Forced(p) => {
                write!(f, "only PMU '{p}' (LIBPFM_FORCE_PMU in the environment)")
            }
            InitMode::External => write!(f, "initialized before pmx by other code in this process"),
        }
    }
}

/// One PMU model libpfm knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuInfo {
    /// libpfm's name (`amd64_fam19h_zen4`, `skx`).
    pub name: String,
    /// libpfm's description (`AMD64 Fam19h Zen4`).
    pub desc: String,
    /// libpfm's `pfm_pmu_t` number (differs between libpfm versions).
    pub id: i32,
    /// A processor core PMU (`PFM_PMU_TYPE_CORE`), as opposed to uncore,
    /// RAPL or the OS's generic events.
    pub core: bool,
    /// libpfm detected it on this machine.
    pub present: bool,
    /// Number of events.
    pub nevents: i32,
    /// General-purpose counters.
    pub num_cntrs: i32,
    /// Fixed counters.
    pub num_fixed_cntrs: i32,
}

/// libpfm's `perf_event_attr` encoding of one event, before pmx's cleanup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Encoding {
    /// `attr.type`.
    pub perf_type: u32,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1`.
    pub config1: u64,
    /// `attr.config2`.
    pub config2: u64,
}

/// An error libpfm returned: its code and its text (`pfm_strerror`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PfmError {
    /// The `PFM_ERR_*` code (negative), or 0 for an error pmx detected
    /// before calling libpfm.
    pub code: i32,
    /// What it means.
    pub message: String,
}

impl fmt::Display for PfmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PfmError {}

/// The loaded library and the state of its one initialization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryInfo {
    /// The file that was opened (resolved through symlinks when possible,
    /// e.g. `/usr/lib/x86_64-linux-gnu/libpfm.so.4.13.0`).
    pub path: String,
    /// How libpfm was initialized.
    pub mode: InitMode,
}

/// The libpfm PMU that covers `cpu`, by pmx's table (vendor, family, model
/// and, where libpfm distinguishes by it, stepping); `None` when pmx does
/// not know one. Whether the installed libpfm has that PMU is checked by
/// [`Libpfm::load`].
///
/// ```
/// use pmx_events::libpfm::pmu_name_for;
/// let zen4 = "AuthenticAMD-25-11-1".parse().unwrap();
/// assert_eq!(pmu_name_for(&zen4), Some("amd64_fam19h_zen4"));
/// let clx = "GenuineIntel-6-55-7".parse().unwrap();
/// assert_eq!(pmu_name_for(&clx), Some("clx"));
/// ```
pub fn pmu_name_for(cpu: &CpuId) -> Option<&'static str> {
    let (f, m) = (cpu.family, cpu.model);
    match cpu.vendor {
        Vendor::Amd => amd_pmu(f, m, cpu.stepping),
        // Hygon Dhyana is a Zen 1 core.
        Vendor::Hygon if f == 0x18 => Some("amd64_fam17h_zen1"),
        Vendor::Intel => intel_pmu(f, m, cpu.stepping),
        _ => None,
    }
}

fn amd_pmu(family: u32, model: u32, stepping: Option<u32>) -> Option<&'static str> {
    Some(match family {
        0x6 => "amd64_k7",
        // K8 revisions, by model (and stepping for the earliest parts).
        0xF => match model >> 4 {
            0 if (model == 5 && stepping.is_some_and(|s| s < 2))
                || (model == 4 && stepping == Some(0)) =>
            {
                "amd64_k8_revb"
            }
            0 => "amd64_k8_revc",
            1 => "amd64_k8_revd",
            2 | 3 => "amd64_k8_reve",
            4 | 5 | 0xC => "amd64_k8_revf",
            6..=8 => "amd64_k8_revg",
            _ => "amd64_k8_revb",
        },
        0x10 => match model {
            4..=6 => "amd64_fam10h_shanghai",
            8 | 9 => "amd64_fam10h_istanbul",
            _ => "amd64_fam10h_barcelona",
        },
        0x11 => "amd64_fam11h_turion",
        0x12 => "amd64_fam12h_llano",
        0x14 => "amd64_fam14h_bobcat",
        0x15 => "amd64_fam15h_interlagos",
        0x16 => "amd64_fam16h",
        0x17 if model >= 0x30 => "amd64_fam17h_zen2",
        0x17 => "amd64_fam17h_zen1",
        0x19 => match model {
            0x00..=0x0F | 0x20..=0x5F => "amd64_fam19h_zen3",
            0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF => "amd64_fam19h_zen4",
            _ => return None,
        },
        0x1A => match model {
            0x00..=0x4F | 0x60..=0x7F => "amd64_fam1ah_zen5",
            _ => return None,
        },
        _ => return None,
    })
}

fn intel_pmu(family: u32, model: u32, stepping: Option<u32>) -> Option<&'static str> {
    match family {
        0xF => return Some(if model >= 3 { "netburst_p" } else { "netburst" }),
        6 => {}
        _ => return None,
    }
    Some(match model {
        0x0F | 0x16 | 0x17 | 0x1D => "core",
        0x1C | 0x26 | 0x27 | 0x35 | 0x36 => "atom",
        0x1A | 0x1E | 0x1F => "nhm",
        0x2E => "nhm_ex",
        0x25 => "wsm",
        0x2C | 0x2F => "wsm_dp",
        0x2A => "snb",
        0x2D => "snb_ep",
        0x3A => "ivb",
        0x3E => "ivb_ep",
        0x3C | 0x45 | 0x46 => "hsw",
        0x3F => "hsw_ep",
        0x3D | 0x47 => "bdw",
        0x4F | 0x56 => "bdw_ep",
        0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6 => "skl",
        // Skylake-SP and Cascade/Cooper Lake share the model; libpfm splits
        // them at stepping 5. Without a stepping, the older part.
        0x55 if stepping.is_some_and(|s| s >= 5) => "clx",
        0x55 => "skx",
        0x6C | 0x7D | 0x7E | 0x9D | 0x8C | 0x8D | 0xA7 => "icl",
        0x6A => "icx",
        0x8F => "spr",
        0xCF => "emr",
        0xAD | 0xAE => "gnr",
        // Hybrid: the big core's table.
        0x97 | 0x9A | 0xB7 | 0xBA | 0xBF => "adl_glc",
        0x37 | 0x4A | 0x4C | 0x4D | 0x5A | 0x5D => "slm",
        0x5C | 0x5F | 0x7A => "glm",
        0x86 | 0x96 | 0x9C => "tmt",
        0x57 => "knl",
        0x85 => "knm",
        _ => return None,
    })
}

/// The CPU this process runs on (vendor, family, model, stepping), from
/// CPUID; `None` on machines without CPUID.
fn host_cpu() -> Option<CpuId> {
    use pmx_sys::{CpuidSource, NativeCpuid};
    let src = NativeCpuid;
    if !src.available() {
        return None;
    }
    let l0 = src.cpuid(0, 0);
    let mut vendor = Vec::with_capacity(12);
    for reg in [l0[1], l0[3], l0[2]] {
        vendor.extend_from_slice(&reg.to_le_bytes());
    }
    let vendor = Vendor::from_cpuid_str(&String::from_utf8_lossy(&vendor));
    Some(CpuId::from_signature(vendor, src.cpuid(1, 0)[0]))
}

fn same_cpu(a: &CpuId, b: &CpuId) -> bool {
    a.vendor == b.vendor && a.family == b.family && a.model == b.model
}

// ---------------------------------------------------------------------------
// The safe layer over the C API.

/// The resolved entry points. Only function pointers: the library handle
/// itself is never closed, so they stay valid for the life of the process.
struct Api {
    initialize: ffi::Initialize,
    strerror: ffi::Strerror,
    get_pmu_info: ffi::GetPmuInfo,
    get_event_next: ffi::GetEventNext,
    get_event_info: ffi::GetEventInfo,
    get_event_attr_info: ffi::GetEventAttrInfo,
    get_os_event_encoding: ffi::GetOsEventEncoding,
}

impl Api {
    /// Resolve every entry point.
    ///
    /// # Safety
    ///
    /// `handle` comes from a successful `dlopen` of libpfm4.
    unsafe fn resolve(handle: *mut c_void) -> Result<Api, String> {
        // SAFETY: each function pointer type in `ffi` is declared from the
        // symbol's prototype in perfmon/pfmlib.h or pfmlib_perf_event.h.
        unsafe {
            Ok(Api {
                initialize: symbol(handle, c"pfm_initialize")?,
                strerror: symbol(handle, c"pfm_strerror")?,
                get_pmu_info: symbol(handle, c"pfm_get_pmu_info")?,
                get_event_next: symbol(handle, c"pfm_get_event_next")?,
                get_event_info: symbol(handle, c"pfm_get_event_info")?,
                get_event_attr_info: symbol(handle, c"pfm_get_event_attr_info")?,
                get_os_event_encoding: symbol(handle, c"pfm_get_os_event_encoding")?,
            })
        }
    }
}

/// The library and everything that must only be touched under its lock.
struct Lib {
    api: Api,
    path: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The outcome of the one initialization, once tried.
    init: Option<Result<InitMode, String>>,
    /// Every PMU libpfm knows, read once after initialization.
    pmus: Option<Vec<PmuInfo>>,
}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by the
    // C library, valid until the next dl* call on this thread; it is copied
    // right away.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        "unknown dlopen error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated (see above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Look up `name` in `handle` as a function of type `T`.
///
/// # Safety
///
/// `T` must be an `unsafe extern "C" fn` type whose signature is the C
/// signature of the symbol `name`.
unsafe fn symbol<T: Copy>(handle: *mut c_void, name: &CStr) -> Result<T, String> {
    if std::mem::size_of::<T>() != std::mem::size_of::<*mut c_void>() {
        return Err(format!(
            "symbol {}: not a function pointer type",
            name.to_string_lossy()
        ));
    }
    // SAFETY: handle comes from a successful dlopen and name is
    // NUL-terminated.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if p.is_null() {
        return Err(format!(
            "symbol {} not found: {}",
            name.to_string_lossy(),
            dlerror_text()
        ));
    }
    // SAFETY: p is the non-null address of the function `name`, and the
    // caller guarantees that T is a function pointer type of the same
    // signature (and size, checked above).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl Lib {
    fn open(file: &str) -> Result<Lib, String> {
        let cfile = CString::new(file).map_err(|_| format!("{file}: bad library name"))?;
        // SAFETY: cfile is NUL-terminated. Loading runs the library's
        // constructors; libpfm4 has none that matter (it initializes in
        // pfm_initialize).
        let handle = unsafe { libc::dlopen(cfile.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(format!(
                "cannot load {file}: {} (install libpfm4)",
                dlerror_text()
            ));
        }
        // SAFETY: handle comes from the successful dlopen above.
        let api = match unsafe { Api::resolve(handle) } {
            Ok(api) => api,
            Err(e) => {
                // SAFETY: handle came from dlopen and nothing from it is in use.
                unsafe { libc::dlclose(handle) };
                return Err(format!("{file}: {e}"));
            }
        };
        let path =
            library_file(api.initialize as *const c_void).unwrap_or_else(|| file.to_string());
        // The handle is deliberately never closed: libpfm keeps global
        // state and hands out pointers into its static tables.
        Ok(Lib {
            api,
            path,
            state: Mutex::new(State::default()),
        })
    }

    /// Take the lock and make sure libpfm is initialized.
    fn session(&self) -> Result<Session<'_>, String> {
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if st.init.is_none() {
            let r = init(&self.api);
            st.init = Some(r);
        }
        match st.init.clone() {
            Some(Ok(mode)) => Ok(Session {
                api: &self.api,
                st,
                mode,
            }),
            Some(Err(e)) => Err(e),
            None => Err("libpfm4: not initialized".to_string()),
        }
    }
}

/// The file a loaded function lives in (`dladdr`), resolved through
/// symlinks.
fn library_file(addr: *const c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: addr is the address of a function in a loaded object; info
    // is a valid out-pointer.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader,
    // valid while the object stays loaded (forever here); copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    Some(
        std::fs::canonicalize(&name)
            .map(|p| p.display().to_string())
            .unwrap_or(name),
    )
}

/// The one `pfm_initialize()` of the process (called with the lock held).
fn init(api: &Api) -> Result<InitMode, String> {
    // Already initialized by other code in this process? libpfm answers
    // PFM_ERR_NOINIT to queries before pfm_initialize.
    let mut probe = PmuRaw::new();
    // SAFETY: probe is a valid pfm_pmu_info_t with its size set.
    let ret = unsafe { (api.get_pmu_info)(0, &mut probe.0) };
    if ret != ffi::PFM_ERR_NOINIT {
        return Ok(InitMode::External);
    }
    let env = PfmEnv::from_env();
    let (forced, inactive) = (env.force_pmu, env.encode_inactive);
    let (mode, set_var) = match (&forced, &inactive) {
        (Some(p), _) => (InitMode::Forced(p.clone()), false),
        (None, Some(v)) => (
            InitMode::UserEncodeInactive(v.to_string_lossy().into_owned()),
            false,
        ),
        (None, None) => (InitMode::AllPmus, true),
    };
    if set_var {
        // libpfm reads its configuration with getenv() inside
        // pfm_initialize. Set under our lock, before the only
        // initialization, and removed right after: libpfm keeps the parsed
        // number, not the string.
        std::env::set_var("LIBPFM_ENCODE_INACTIVE", "1");
    }
    // SAFETY: pfm_initialize takes no arguments; our lock serializes it
    // against every other libpfm call pmx makes.
    let ret = unsafe { (api.initialize)() };
    if set_var {
        std::env::remove_var("LIBPFM_ENCODE_INACTIVE");
    }
    if ret != ffi::PFM_SUCCESS {
        let mut msg = format!("libpfm4: pfm_initialize failed: {}", strerror(api, ret));
        if let Some(p) = &forced {
            msg.push_str(&format!(
                " (LIBPFM_FORCE_PMU={p} is set in the environment)"
            ));
        }
        return Err(msg);
    }
    Ok(mode)
}

fn strerror(api: &Api, code: c_int) -> String {
    // SAFETY: pfm_strerror returns a pointer to a static string (or NULL)
    // for any code.
    let p = unsafe { (api.strerror)(code) };
    // SAFETY: static NUL-terminated string or null.
    unsafe { cstring(p) }.unwrap_or_else(|| format!("libpfm error {code}"))
}

/// Copy a C string libpfm returned.
///
/// # Safety
///
/// `p` is null or points to a NUL-terminated string that stays valid for
/// the duration of the call.
unsafe fn cstring(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: guaranteed by the caller.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

struct PmuRaw(ffi::PmuInfo);

impl PmuRaw {
    fn new() -> PmuRaw {
        // SAFETY: plain data (integers and nullable pointers); all-zero is
        // valid.
        let mut raw: ffi::PmuInfo = unsafe { std::mem::zeroed() };
        raw.size = ffi::PFM_PMU_INFO_ABI0;
        PmuRaw(raw)
    }
}

/// An event as libpfm describes it.
#[derive(Debug, Clone)]
struct RawEvent {
    name: String,
    desc: String,
    equiv: Option<String>,
    pmu: c_int,
    nattrs: c_int,
    precise: bool,
}

/// A unit mask as libpfm describes it.
#[derive(Debug, Clone)]
struct RawUmask {
    name: String,
    desc: String,
    equiv: Option<String>,
    dfl: bool,
    precise: bool,
}

/// The lock held, libpfm initialized: the only way to call into it.
struct Session<'a> {
    api: &'a Api,
    st: MutexGuard<'a, State>,
    mode: InitMode,
}

impl Session<'_> {
    fn pmu_info(&self, id: c_int) -> Option<PmuInfo> {
        let mut raw = PmuRaw::new();
        // SAFETY: raw is a valid pfm_pmu_info_t with the ABI0 size; libpfm
        // writes at most that many bytes.
        let ret = unsafe { (self.api.get_pmu_info)(id, &mut raw.0) };
        if ret != ffi::PFM_SUCCESS {
            return None;
        }
        // SAFETY: on success name and desc are null or static strings.
        let name = unsafe { cstring(raw.0.name) }?;
        // SAFETY: as above.
        let desc = unsafe { cstring(raw.0.desc) }.unwrap_or_default();
        Some(PmuInfo {
            name,
            desc,
            id,
            core: raw.0.type_ == ffi::PFM_PMU_TYPE_CORE,
            present: raw.0.flags & 1 != 0,
            nevents: raw.0.nevents,
            num_cntrs: raw.0.num_cntrs,
            num_fixed_cntrs: raw.0.num_fixed_cntrs,
        })
    }

    /// The first event of a PMU (`first_event`), re-read for the id.
    fn first_event(&self, id: c_int) -> c_int {
        let mut raw = PmuRaw::new();
        // SAFETY: as in pmu_info.
        let ret = unsafe { (self.api.get_pmu_info)(id, &mut raw.0) };
        if ret == ffi::PFM_SUCCESS {
            raw.0.first_event
        } else {
            -1
        }
    }

    fn pmus(&mut self) -> Vec<PmuInfo> {
        if let Some(p) = &self.st.pmus {
            return p.clone();
        }
        // pfm_pmu_t numbers are small and dense; libpfm answers
        // PFM_ERR_INVAL past its PFM_PMU_MAX and for PMUs of other
        // architectures. The bound leaves room for newer libpfm versions.
        let list: Vec<PmuInfo> = (0..4096).filter_map(|id| self.pmu_info(id)).collect();
        self.st.pmus = Some(list.clone());
        list
    }

    fn next_event(&self, idx: c_int) -> c_int {
        // SAFETY: pfm_get_event_next takes any int and returns -1 at the end
        // or on error.
        unsafe { (self.api.get_event_next)(idx) }
    }

    fn event_info(&self, idx: c_int) -> Option<RawEvent> {
        // SAFETY: plain data; all-zero is valid.
        let mut raw: ffi::EventInfo = unsafe { std::mem::zeroed() };
        raw.size = ffi::PFM_EVENT_INFO_ABI0;
        // SAFETY: raw is a valid pfm_event_info_t with the ABI0 size.
        let ret = unsafe { (self.api.get_event_info)(idx, ffi::PFM_OS_NONE, &mut raw) };
        if ret != ffi::PFM_SUCCESS {
            return None;
        }
        // SAFETY: on success the strings are null or point into libpfm's
        // static tables.
        let (name, desc, equiv) = unsafe {
            (
                cstring(raw.name)?,
                cstring(raw.desc).unwrap_or_default(),
                cstring(raw.equiv),
            )
        };
        Some(RawEvent {
            name,
            desc,
            equiv,
            pmu: raw.pmu,
            nattrs: raw.nattrs,
            precise: raw.flags & 1 != 0,
        })
    }

    fn umask_info(&self, idx: c_int, attr: c_int) -> Option<RawUmask> {
        // SAFETY: plain data; all-zero is valid.
        let mut raw: ffi::AttrInfo = unsafe { std::mem::zeroed() };
        raw.size = ffi::PFM_ATTR_INFO_ABI0;
        // SAFETY: raw is a valid pfm_event_attr_info_t with the ABI0 size.
        let ret = unsafe { (self.api.get_event_attr_info)(idx, attr, ffi::PFM_OS_NONE, &mut raw) };
        if ret != ffi::PFM_SUCCESS || raw.type_ != ffi::PFM_ATTR_UMASK {
            return None;
        }
        // SAFETY: as in event_info.
        let (name, desc, equiv) = unsafe {
            (
                cstring(raw.name)?,
                cstring(raw.desc).unwrap_or_default(),
                cstring(raw.equiv),
            )
        };
        Some(RawUmask {
            name,
            desc,
            equiv,
            dfl: raw.flags & 1 != 0,
            precise: raw.flags & 2 != 0,
        })
    }

    /// libpfm's perf_event encoding of a full event string
    /// (`pmu::EVENT[:UMASK…]`), with the default privilege levels of the
    /// shared dumps (user and kernel; they only affect `exclude_*`).
    fn encode(&self, text: &str) -> Result<Encoding, PfmError> {
        let c = CString::new(text).map_err(|_| PfmError {
            code: 0,
            message: "event name contains NUL".into(),
        })?;
        let mut attr = ffi::PerfEventAttr {
            size: ffi::PERF_ATTR_SIZE as u32,
            ..ffi::PerfEventAttr::default()
        };
        let mut arg = ffi::PerfEncodeArg {
            attr: &mut attr,
            fstr: std::ptr::null_mut(),
            size: ffi::PFM_PERF_ENCODE_ABI0,
            idx: 0,
            cpu: 0,
            flags: 0,
            pad0: 0,
        };
        // SAFETY: c is NUL-terminated; arg is a valid pfm_perf_encode_arg_t
        // of the ABI0 size whose attr points to a zeroed perf_event_attr of
        // 136 bytes whose `size` says 128 (libpfm copies at most that
        // many); fstr is null,
        // so libpfm allocates nothing for us to free.
        let ret = unsafe {
            (self.api.get_os_event_encoding)(
                c.as_ptr(),
                ffi::PFM_PLM0 | ffi::PFM_PLM3,
                ffi::PFM_OS_PERF_EVENT_EXT,
                (&mut arg as *mut ffi::PerfEncodeArg).cast::<c_void>(),
            )
        };
        if ret != ffi::PFM_SUCCESS {
            return Err(PfmError {
                code: ret,
                message: strerror(self.api, ret),
            });
        }
        Ok(Encoding {
            perf_type: attr.type_,
            config: attr.config,
            config1: attr.config1,
            config2: attr.config2,
        })
    }
}

/// The environment variables that steer libpfm, read here and nowhere
/// else: they are the interface of libpfm itself (its first
/// `pfm_initialize()` reads `LIBPFM_FORCE_PMU` and
/// `LIBPFM_ENCODE_INACTIVE`) and of the loading of it ([`LIBRARY_ENV`]),
/// so this module, the entry point to libpfm, reads them when it loads and
/// initializes the library, once per process, rather than taking them
/// from pmx's edge.
struct PfmEnv {
    /// `LIBPFM_FORCE_PMU`, when set and not empty.
    force_pmu: Option<String>,
    /// `LIBPFM_ENCODE_INACTIVE`, when set.
    encode_inactive: Option<std::ffi::OsString>,
    /// [`LIBRARY_ENV`], when set and not empty.
    library: Option<String>,
}

impl PfmEnv {
    /// The variables as this process's environment has them.
    fn from_env() -> PfmEnv {
        let text = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
        PfmEnv {
            force_pmu: text("LIBPFM_FORCE_PMU"),
            encode_inactive: std::env::var_os("LIBPFM_ENCODE_INACTIVE"),
            library: text(LIBRARY_ENV),
        }
    }
}

fn lib() -> Result<&'static Lib, String> {
    LIB.get_or_init(|| {
        let file = (PfmEnv::from_env().library).unwrap_or_else(|| LIBRARY_NAME.to_string());
        Lib::open(&file)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Open and initialize libpfm (once per process) and say which file and
/// mode; `Err` when the library is missing or will not initialize.
pub fn library_info() -> Result<LibraryInfo, String> {
    let lib = lib()?;
    let s = lib.session()?;
    Ok(LibraryInfo {
        path: lib.path.clone(),
        mode: s.mode.clone(),
    })
}

/// Every PMU the installed libpfm supports on this architecture, with
/// whether it detected it here.
pub fn pmus() -> Result<Vec<PmuInfo>, String> {
    let mut s = lib()?.session()?;
    Ok(s.pmus())
}

// ---------------------------------------------------------------------------
// The event source.

/// One event of the PMU, with its unit masks.
#[derive(Debug, Clone)]
struct EventMeta {
    raw: RawEvent,
    umasks: Vec<RawUmask>,
}

/// One name of the catalog: an event alone, or with one unit mask.
#[derive(Debug, Clone)]
struct Entry {
    event: usize,
    umask: Option<usize>,
}

/// libpfm4's tables for one CPU: one core PMU's events and unit masks.
pub struct Libpfm {
    cpu: Option<CpuId>,
    pmu: PmuInfo,
    path: String,
    amd: bool,
    chosen: String,
    events: Vec<EventMeta>,
    entries: Vec<Entry>,
    by_key: HashMap<String, usize>,
    by_event: HashMap<String, usize>,
    all: OnceLock<Vec<EventDef>>,
}

impl fmt::Debug for Libpfm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Libpfm")
            .field("cpu", &self.cpu)
            .field("pmu", &self.pmu.name)
            .field("path", &self.path)
            .field("events", &self.events.len())
            .finish()
    }
}

impl Libpfm {
    /// Open libpfm4 and select the PMU for `cpu`: for the CPU pmx runs on,
    /// the core PMU libpfm detects (pmx's table decides between several);
    /// for another CPU, the PMU [`pmu_name_for`] names. `Err` with a
    /// sentence when the library is missing, does not know the CPU, or
    /// cannot encode for it in this process.
    pub fn load(cpu: &CpuId) -> Result<Libpfm, String> {
        let lib = lib()?;
        let mut s = lib.session()?;
        let wanted = pmu_name_for(cpu);
        let pmus = s.pmus();
        let host = host_cpu().is_some_and(|h| same_cpu(&h, cpu));
        let known = wanted.and_then(|w| pmus.iter().find(|p| p.name == w));
        let (pmu, chosen) = match known {
            Some(p) if host && p.present => (Some(p), "detected by libpfm on this machine"),
            Some(p) => (Some(p), "pmx's table for this CPU"),
            // This machine's CPU, newer than pmx's table or the PMU's name:
            // whatever libpfm detected (its architectural PMU last) — when
            // libpfm did detect, that is, rather than obey LIBPFM_FORCE_PMU.
            None if host
                && matches!(s.mode, InitMode::AllPmus | InitMode::UserEncodeInactive(_)) =>
            {
                let present: Vec<&PmuInfo> = pmus.iter().filter(|p| p.core && p.present).collect();
                (
                    present
                        .iter()
                        .find(|p| p.name != "ix86arch")
                        .or(present.first())
                        .copied(),
                    "detected by libpfm on this machine",
                )
            }
            None => (None, ""),
        };
        let Some(pmu) = pmu.cloned() else {
            let mut msg = match wanted {
                Some(w) => format!("libpfm4 ({}) has no PMU '{w}' for {cpu}", lib.path),
                None => format!("libpfm4: pmx does not know which libpfm PMU covers {cpu}"),
            };
            match &s.mode {
                InitMode::AllPmus => {
                    if wanted.is_some() {
                        msg.push_str("; a newer libpfm4 may know it");
                    }
                }
                mode => msg.push_str(&format!(" (libpfm was set up for {mode})")),
            }
            return Err(msg);
        };
        Self::build(&mut s, &lib.path, pmu, Some(cpu.clone()), chosen)
    }

    /// Open libpfm4 and select a PMU by libpfm's name (`skx`,
    /// `amd64_fam10h_barcelona`), for whatever CPU it describes.
    pub fn load_pmu(name: &str) -> Result<Libpfm, String> {
        let lib = lib()?;
        let mut s = lib.session()?;
        let pmu = s
            .pmus()
            .into_iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| format!("libpfm4 ({}) has no PMU '{name}'", lib.path))?;
        Self::build(&mut s, &lib.path, pmu, None, "chosen by name")
    }

    fn build(
        s: &mut Session<'_>,
        path: &str,
        pmu: PmuInfo,
        cpu: Option<CpuId>,
        chosen: &str,
    ) -> Result<Libpfm, String> {
        let mut events: Vec<EventMeta> = Vec::new();
        let mut idx = s.first_event(pmu.id);
        let mut steps = 0usize;
        while idx >= 0 && steps < (1 << 20) {
            steps += 1;
            if let Some(raw) = s.event_info(idx) {
                if raw.pmu != pmu.id {
                    break;
                }
                let umasks = (0..raw.nattrs.max(0))
                    .filter_map(|a| s.umask_info(idx, a))
                    .collect();
                events.push(EventMeta { raw, umasks });
            }
            idx = s.next_event(idx);
        }
        if events.is_empty() {
            return Err(format!(
                "libpfm4 lists no events for PMU '{}' in this process (libpfm set up: {})",
                pmu.name, s.mode
            ));
        }
        // Can libpfm encode for this PMU in this process? It answers
        // "event not found" for PMUs that are not active.
        let probe = format!("{}::{}", pmu.name, events[0].raw.name);
        if let Err(e) = s.encode(&probe) {
            if e.code == ffi::PFM_ERR_NOTFOUND {
                return Err(format!(
                    "libpfm4 cannot encode for PMU '{}' in this process: libpfm was set up for {}",
                    pmu.name, s.mode
                ));
            }
        }
        let amd =
            pmu.name.starts_with("amd64") || cpu.as_ref().is_some_and(|c| c.vendor.is_amd_like());
        let mut src = Libpfm {
            cpu,
            pmu,
            path: path.to_string(),
            amd,
            chosen: chosen.to_string(),
            events,
            entries: Vec::new(),
            by_key: HashMap::new(),
            by_event: HashMap::new(),
            all: OnceLock::new(),
        };
        src.index();
        Ok(src)
    }

    fn index(&mut self) {
        let mut names: Vec<(Entry, String)> = Vec::new();
        for (e, ev) in self.events.iter().enumerate() {
            self.by_event
                .entry(ev.raw.name.to_ascii_lowercase())
                .or_insert(e);
            names.push((
                Entry {
                    event: e,
                    umask: None,
                },
                ev.raw.name.clone(),
            ));
            for (u, um) in ev.umasks.iter().enumerate() {
                names.push((
                    Entry {
                        event: e,
                        umask: Some(u),
                    },
                    format!("{}:{}", ev.raw.name, um.name),
                ));
            }
        }
        for (entry, name) in names {
            if let std::collections::hash_map::Entry::Vacant(v) = self.by_key.entry(name_key(&name))
            {
                v.insert(self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// The libpfm PMU this source reads.
    pub fn pmu(&self) -> &PmuInfo {
        &self.pmu
    }

    /// The CPU it was loaded for (`None` from [`Libpfm::load_pmu`]).
    pub fn cpu(&self) -> Option<&CpuId> {
        self.cpu.as_ref()
    }

    /// The library file in use.
    pub fn library_path(&self) -> &str {
        &self.path
    }

    /// How the PMU was chosen (for `pmx explain`).
    pub fn chosen_by(&self) -> &str {
        &self.chosen
    }

    /// libpfm's own answer for an event string of this PMU (`EVENT`,
    /// `EVENT:UMASK`, even with libpfm modifiers), unfiltered: the raw
    /// `perf_event_attr` fields as libpfm set them.
    pub fn encode(&self, name: &str) -> Result<Encoding, PfmError> {
        let s = lib()
            .and_then(|l| l.session())
            .map_err(|message| PfmError { code: 0, message })?;
        s.encode(&format!(
            "{}::{}",
            self.pmu.name,
            self.strip_pmu(name.trim())
        ))
    }

    fn strip_pmu<'n>(&self, name: &'n str) -> &'n str {
        match name.split_once("::") {
            Some((p, rest)) if p.eq_ignore_ascii_case(&self.pmu.name) => rest,
            _ => name,
        }
    }

    fn origin(&self) -> String {
        format!("libpfm4 {}", self.pmu.name)
    }

    /// The definition for an event with the given unit masks (indices
    /// into its list), named `name`, from libpfm's encoding.
    fn def(&self, ev: &EventMeta, umasks: &[usize], name: String, enc: Encoding) -> EventDef {
        let mut d = EventDef::new(&name, "cpu", SourceKind::Libpfm, &self.origin());
        let mut config = enc.config;
        if enc.perf_type == PERF_TYPE_RAW && cfg!(any(target_arch = "x86_64", target_arch = "x86"))
        {
            config &= !X86_CONTROL_BITS;
            if self.amd {
                config &= !AMD_HOST_GUEST_BITS;
            }
            if config != enc.config {
                d.notes.push(format!(
                    "libpfm's config {:#x} carried modifier bits; pmx applies modifiers itself",
                    enc.config
                ));
            }
        }
        d.perf_type = Some(enc.perf_type);
        d.config = config;
        d.config1 = enc.config1;
        d.config2 = enc.config2;
        d.counters = Counters::Unknown;
        let picked: Vec<&RawUmask> = umasks.iter().filter_map(|&u| ev.umasks.get(u)).collect();
        let mut desc = ev.raw.desc.trim().to_string();
        for um in &picked {
            let ud = um.desc.trim();
            if !ud.is_empty() {
                if desc.is_empty() {
                    desc = ud.to_string();
                } else {
                    desc = format!("{desc}: {ud}");
                }
            }
        }
        d.description = desc;
        // Precise: the unit masks' flags when some were named; for the
        // event alone, the event's flag (when libpfm applies defaults, all
        // of them must be precise).
        let precise = if !picked.is_empty() {
            picked.iter().all(|u| u.precise)
        } else if ev.umasks.is_empty() {
            ev.raw.precise
        } else {
            let dfl: Vec<&RawUmask> = ev.umasks.iter().filter(|u| u.dfl).collect();
            ev.raw.precise && dfl.iter().all(|u| u.precise)
        };
        d.precise = match (precise, self.amd) {
            (false, _) => Precise::No,
            (true, true) => Precise::Ibs,
            (true, false) => Precise::Pebs(1),
        };
        if picked.is_empty() && !ev.umasks.is_empty() {
            let dfl: Vec<&str> = ev
                .umasks
                .iter()
                .filter(|u| u.dfl)
                .map(|u| u.name.as_str())
                .collect();
            if !dfl.is_empty() {
                d.notes.push(format!(
                    "libpfm applies the default unit mask {}",
                    dfl.join(":")
                ));
            }
        }
        if let Some(eq) = ev.raw.equiv.as_deref().filter(|s| !s.is_empty()) {
            d.notes.push(format!("libpfm: same as {eq}"));
        }
        for um in &picked {
            if let Some(eq) = um.equiv.as_deref().filter(|s| !s.is_empty()) {
                d.notes
                    .push(format!("libpfm: {} is the same as {eq}", um.name));
            }
        }
        d
    }

    fn entry_name(&self, entry: &Entry) -> String {
        let ev = &self.events[entry.event];
        match entry.umask {
            Some(u) => format!("{}:{}", ev.raw.name, ev.umasks[u].name),
            None => ev.raw.name.clone(),
        }
    }

    fn encode_entry(&self, s: &Session<'_>, entry: &Entry) -> Option<EventDef> {
        let name = self.entry_name(entry);
        let enc = s.encode(&format!("{}::{}", self.pmu.name, name)).ok()?;
        let umasks: Vec<usize> = entry.umask.into_iter().collect();
        Some(self.def(&self.events[entry.event], &umasks, name, enc))
    }

    fn encode_all(&self) -> Vec<EventDef> {
        let Ok(s) = lib().and_then(|l| l.session()) else {
            return Vec::new();
        };
        self.entries
            .iter()
            .filter_map(|e| self.encode_entry(&s, e))
            .collect()
    }

    /// `EVENT:U1:U2…`: an event with several of its unit masks.
    fn find_combo(&self, s: &Session<'_>, key: &str) -> Option<EventDef> {
        let mut parts = key.split('.');
        let e = *self.by_event.get(parts.next()?)?;
        let ev = &self.events[e];
        let mut picked: Vec<usize> = Vec::new();
        for p in parts {
            let u = ev
                .umasks
                .iter()
                .position(|u| u.name.eq_ignore_ascii_case(p))?;
            if picked.contains(&u) {
                return None;
            }
            picked.push(u);
        }
        if picked.len() < 2 {
            return None;
        }
        let mut name = ev.raw.name.clone();
        for &u in &picked {
            name.push(':');
            name.push_str(&ev.umasks[u].name);
        }
        let enc = s.encode(&format!("{}::{}", self.pmu.name, name)).ok()?;
        Some(self.def(ev, &picked, name, enc))
    }
}

impl EventSource for Libpfm {
    fn kind(&self) -> SourceKind {
        SourceKind::Libpfm
    }

    fn describe(&self) -> String {
        format!(
            "libpfm4 {} ({}) from {}",
            self.pmu.name, self.pmu.desc, self.path
        )
    }

    fn provenance(&self, _def: &EventDef) -> Option<String> {
        Some(format!("libpfm4 from {}, PMU {}", self.path, self.pmu.name))
    }

    fn events(&self) -> Vec<EventDef> {
        self.all.get_or_init(|| self.encode_all()).clone()
    }

    fn find(&self, name: &str) -> Option<EventDef> {
        let key = name_key(self.strip_pmu(name.trim()));
        if let Some(all) = self.all.get() {
            return all
                .iter()
                .find(|d| name_key(&d.name) == key)
                .cloned()
                .or_else(|| {
                    let s = lib().and_then(|l| l.session()).ok()?;
                    self.find_combo(&s, &key)
                });
        }
        let s = lib().and_then(|l| l.session()).ok()?;
        match self.by_key.get(&key) {
            Some(&i) => self.encode_entry(&s, &self.entries[i]),
            None => self.find_combo(&s, &key),
        }
    }

    fn names(&self) -> Vec<String> {
        self.events().into_iter().map(|d| d.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> CpuId {
        s.parse().unwrap()
    }

    #[test]
    fn amd_families_map_to_libpfm_pmus() {
        for (cpu, pmu) in [
            ("AuthenticAMD-6-8-1", Some("amd64_k7")),
            ("AuthenticAMD-15-5-1", Some("amd64_k8_revb")),
            ("AuthenticAMD-15-5-8", Some("amd64_k8_revc")),
            ("AuthenticAMD-15-41", Some("amd64_k8_revf")),
            ("AuthenticAMD-15-6B", Some("amd64_k8_revg")),
            ("AuthenticAMD-16-2", Some("amd64_fam10h_barcelona")),
            ("AuthenticAMD-16-4", Some("amd64_fam10h_shanghai")),
            ("AuthenticAMD-16-8", Some("amd64_fam10h_istanbul")),
            ("AuthenticAMD-16-A", Some("amd64_fam10h_barcelona")),
            ("AuthenticAMD-17-3", Some("amd64_fam11h_turion")),
            ("AuthenticAMD-18-1", Some("amd64_fam12h_llano")),
            ("AuthenticAMD-20-2", Some("amd64_fam14h_bobcat")),
            ("AuthenticAMD-21-2", Some("amd64_fam15h_interlagos")),
            ("AuthenticAMD-22-30", Some("amd64_fam16h")),
            ("AuthenticAMD-23-1", Some("amd64_fam17h_zen1")),
            ("AuthenticAMD-23-18", Some("amd64_fam17h_zen1")),
            ("AuthenticAMD-23-31", Some("amd64_fam17h_zen2")),
            ("AuthenticAMD-23-71", Some("amd64_fam17h_zen2")),
            ("AuthenticAMD-25-1", Some("amd64_fam19h_zen3")),
            ("AuthenticAMD-25-21", Some("amd64_fam19h_zen3")),
            ("AuthenticAMD-25-11-1", Some("amd64_fam19h_zen4")),
            ("AuthenticAMD-25-61", Some("amd64_fam19h_zen4")),
            ("AuthenticAMD-25-A0", Some("amd64_fam19h_zen4")),
            ("AuthenticAMD-26-2", Some("amd64_fam1ah_zen5")),
            ("HygonGenuine-24-0-1", Some("amd64_fam17h_zen1")),
            ("AuthenticAMD-25-90", None),
            ("AuthenticAMD-24-0", None),
            ("CentaurHauls-6-F", None),
        ] {
            assert_eq!(pmu_name_for(&key(cpu)), pmu, "{cpu}");
        }
    }

    #[test]
    fn intel_models_map_to_libpfm_pmus() {
        for (cpu, pmu) in [
            ("GenuineIntel-6-1A", Some("nhm")),
            ("GenuineIntel-6-2E", Some("nhm_ex")),
            ("GenuineIntel-6-2C", Some("wsm_dp")),
            ("GenuineIntel-6-2A", Some("snb")),
            ("GenuineIntel-6-2D", Some("snb_ep")),
            ("GenuineIntel-6-3A", Some("ivb")),
            ("GenuineIntel-6-3C", Some("hsw")),
            ("GenuineIntel-6-3F", Some("hsw_ep")),
            ("GenuineIntel-6-3D", Some("bdw")),
            ("GenuineIntel-6-4F", Some("bdw_ep")),
            ("GenuineIntel-6-5E-3", Some("skl")),
            ("GenuineIntel-6-9E", Some("skl")),
            ("GenuineIntel-6-55-4", Some("skx")),
            ("GenuineIntel-6-55", Some("skx")),
            ("GenuineIntel-6-55-7", Some("clx")),
            ("GenuineIntel-6-7E", Some("icl")),
            ("GenuineIntel-6-6A", Some("icx")),
            ("GenuineIntel-6-8F", Some("spr")),
            ("GenuineIntel-6-CF", Some("emr")),
            ("GenuineIntel-6-5C", Some("glm")),
            ("GenuineIntel-6-86", Some("tmt")),
            ("GenuineIntel-6-57", Some("knl")),
            ("GenuineIntel-6-97", Some("adl_glc")),
            ("GenuineIntel-15-2", Some("netburst")),
            ("GenuineIntel-15-4", Some("netburst_p")),
            ("GenuineIntel-6-FE", None),
            ("GenuineIntel-18-1", None),
        ] {
            assert_eq!(pmu_name_for(&key(cpu)), pmu, "{cpu}");
        }
    }
}
