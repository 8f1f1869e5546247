//! What can go wrong, in words that say what is missing and what to do.

use crate::allow::Refusal;
use crate::plan::PlanError;
use std::path::PathBuf;

/// An error from the msr device, the allow-list, a plan or a session.
#[derive(Debug, thiserror::Error)]
pub enum MsrError {
    /// No msr device for the CPU under the root, and no other CPU has one either: the
    /// driver is not loaded.
    #[error("{}: not found — load the msr driver (modprobe msr)", path.display())]
    DriverNotLoaded {
        /// The device path that was tried.
        path: PathBuf,
    },
    /// Other CPUs have a device, this one does not.
    #[error("{}: not found — CPU {cpu} has no msr device (no such CPU, or it is offline)", path.display())]
    NoSuchCpu {
        /// The device path that was tried.
        path: PathBuf,
        /// The CPU asked for.
        cpu: u32,
    },
    /// `EACCES`/`EPERM` opening or using the device.
    #[error("{}: permission denied — MSR access needs root or CAP_SYS_RAWIO", path.display())]
    PermissionDenied {
        /// The device path.
        path: PathBuf,
    },
    /// `rdmsr` faulted (`EIO`): the CPU does not implement the register.
    #[error("CPU {cpu} does not have MSR {register} (rdmsr faulted: EIO)")]
    NoSuchMsr {
        /// The CPU.
        cpu: u32,
        /// Address and name, e.g. `0x186 (IA32_PERFEVTSEL0)`.
        register: String,
    },
    /// `wrmsr` faulted (`EIO`): no such register, or the value sets bits the
    /// register does not accept.
    #[error("CPU {cpu} refused {value:#x} for MSR {register} (wrmsr faulted: EIO) — the register does not exist or the value sets bits it does not accept")]
    WriteFaulted {
        /// The CPU.
        cpu: u32,
        /// Address and name.
        register: String,
        /// The value written.
        value: u64,
    },
    /// `EPERM` on a write while kernel lockdown is active.
    #[error("writing MSR {register} on CPU {cpu} was refused: the kernel is locked down ({mode}), and lockdown forbids MSR writes")]
    LockedDown {
        /// The CPU.
        cpu: u32,
        /// Address and name.
        register: String,
        /// The lockdown mode (`integrity`, `confidentiality`).
        mode: String,
    },
    /// `EPERM` on a write with the msr driver's write filter closed.
    #[error("writing MSR {register} on CPU {cpu} was refused: the msr driver filters writes (msr.allow_writes={setting}); set it to 'on' to allow them")]
    WritesFiltered {
        /// The CPU.
        cpu: u32,
        /// Address and name.
        register: String,
        /// The driver parameter's value.
        setting: String,
    },
    /// A write through a device opened read-only.
    #[error("CPU {cpu}: the msr device was opened read-only")]
    ReadOnly {
        /// The CPU.
        cpu: u32,
    },
    /// A CPU the device set did not open.
    #[error("CPU {cpu}: its msr device was not opened")]
    NotOpened {
        /// The CPU.
        cpu: u32,
    },
    /// Fewer than 8 bytes moved (a fixture file that is too short).
    #[error("{}: short {op} at MSR {register} ({got} of 8 bytes)", path.display())]
    Short {
        /// The device path.
        path: PathBuf,
        /// `read` or `write`.
        op: &'static str,
        /// Address and name.
        register: String,
        /// Bytes moved.
        got: usize,
    },
    /// Opening the device failed for another reason.
    #[error("{}: cannot open: {error}", path.display())]
    Open {
        /// The device path.
        path: PathBuf,
        /// The error (kept out of the error chain: the message has it).
        error: std::io::Error,
    },
    /// Any other I/O error.
    #[error("{}: {op} of MSR {register}: {error}", path.display())]
    Io {
        /// The device path.
        path: PathBuf,
        /// `read` or `write`.
        op: &'static str,
        /// Address and name.
        register: String,
        /// The error (kept out of the error chain: the message has it).
        error: std::io::Error,
    },
    /// The allow-list refused a write.
    #[error(transparent)]
    NotAllowed(#[from] Refusal),
    /// A plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Counters the plan needs are in use by someone else.
    #[error("{}", busy_message(.0))]
    Busy(Vec<String>),
    /// Every signal slot is taken by other live sessions.
    #[error("too many msr sessions handle signals at once (at most {0})")]
    SignalSlots(usize),
    /// Installing the signal handlers failed.
    #[error("cannot install the SIGINT/SIGTERM handlers: {0}")]
    Signal(std::io::Error),
}

fn busy_message(what: &[String]) -> String {
    format!(
        "the counters are in use ({}): perf, the NMI watchdog or another tool is counting; stop it (e.g. sysctl kernel.nmi_watchdog=0) or force",
        what.join("; ")
    )
}
