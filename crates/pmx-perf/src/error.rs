//! Turning a `perf_event_open` errno into what it means for the event that
//! failed, and what to do about it.
//!
//! The kernel answers every refusal with one errno; what that errno means
//! depends on the event (ENOSPC is "no debug register" for a breakpoint),
//! the target (EACCES on a CPU-wide event is about `perf_event_paranoid`
//! level 0) and the machine (ENOENT on `cycles` in a VM without a virtual
//! PMU). An [`OpenError`] keeps all of that as values: the errno, the attr
//! and target that failed, the PMU the attr names, and an [`OpenCause`]
//! holding the facts of the machine that decided it (the paranoid level,
//! the capabilities, the open-file limit, …). Callers match on the cause;
//! the sentence a user reads (the reason and the fix) is written in one
//! place, [`OpenError::reason`], and `Display` puts the event and target in
//! front of it.
//!
//! [`explain`] classifies from plain values in a [`Context`], so every
//! message can be tested with any paranoid level, capability or sysfs view;
//! [`Context::of_this_machine`] fills it from `/proc` and `/sys`.

use crate::{event_type, Attr, Target};
use std::fmt::{self, Write as _};
use std::path::Path;

/// Why an open failed, with the facts that decided it.
///
/// The errno alone does not say everything (the [`OpenError`] keeps it):
/// `NotSupported` is ENOENT, EOPNOTSUPP or ENODEV; `Invalid` is EINVAL,
/// E2BIG or EOVERFLOW; `TooManyFiles` is EMFILE (this process) or ENFILE
/// (the system).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenCause {
    /// EACCES/EPERM: not allowed at this paranoid level or without a
    /// capability, or something else (a security module, ptrace rights)
    /// forbids it.
    Permission {
        /// `kernel.perf_event_paranoid`, when it could be read.
        paranoid: Option<i64>,
        /// Whether CAP_PERFMON or CAP_SYS_ADMIN is effective, when known.
        capable: Option<bool>,
        /// The open counts every task on a CPU (pid -1).
        cpu_wide: bool,
        /// The open counts kernel space (`exclude_kernel` is not set).
        kernel: bool,
    },
    /// ENOENT/EOPNOTSUPP: this machine does not count the event (or not as
    /// asked); ENODEV: its PMU does not count on that CPU or target.
    NotSupported {
        /// Whether a core (hardware) PMU is registered, when known: `false`
        /// is a VM without a virtual PMU.
        core_pmu: Option<bool>,
    },
    /// ENOSPC on a breakpoint: no free debug register.
    NoDebugRegister,
    /// EINVAL, E2BIG, EOVERFLOW: the kernel rejects the attr (or the
    /// target); `precise_ip` above 3 is refused before the kernel is asked.
    Invalid {
        /// The CPUs the kernel was configured for, when known.
        cpus: Option<u32>,
        /// The event was joining a group.
        in_group: bool,
    },
    /// EBUSY: the PMU is held exclusively (or this exclusive event cannot
    /// have it to itself).
    Busy,
    /// ESRCH: no such process or thread.
    NoProcess,
    /// EMFILE/ENFILE: too many open files.
    TooManyFiles {
        /// This process's soft `RLIMIT_NOFILE` (`ulimit -n`), when known.
        limit: Option<u64>,
    },
    /// The event opened but `PERF_EVENT_IOC_ID` failed (kernels before
    /// 3.12).
    NoId,
    /// Anything else (ENOSPC on a PMU with no room left, an errno pmx does
    /// not recognise).
    Other,
}

impl OpenCause {
    /// Whether the event itself cannot be counted here — not supported, no
    /// free debug register, or an attr the kernel rejects — as opposed to
    /// the open being refused for reasons of the run (permission, a busy
    /// PMU, a process gone, files): `pmx stat` shows such an event as "not
    /// supported" and counts the others.
    pub fn is_unsupported_event(&self) -> bool {
        matches!(
            self,
            OpenCause::NotSupported { .. } | OpenCause::NoDebugRegister | OpenCause::Invalid { .. }
        )
    }
}

/// A failed `perf_event_open`: what was asked, the errno, and why.
///
/// `Display` gives the whole sentence: which event could not be opened
/// where, the reason and the fix, and the errno
/// (`cannot open hardware event cycles for this thread on any CPU: this
/// machine's PMU does not count it (…) (ENOENT: No such file or directory)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct OpenError {
    /// The errno.
    pub errno: i32,
    /// The attr that failed.
    pub attr: Box<Attr>,
    /// Where it was to count.
    pub target: Target,
    /// The sysfs name of the PMU whose `type` is the attr's type, when one
    /// was found.
    pub pmu: Option<String>,
    /// What the errno means here.
    pub cause: OpenCause,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot open {} {}: {}",
            describe_event(&self.attr, self.pmu.as_deref()),
            describe_target(self.target),
            self.reason()
        )
    }
}

impl OpenError {
    /// The reason and the fix, with the errno, without naming the event or
    /// the target (the tail of the `Display` text): the same for every
    /// event that fails for the same cause, so reports can group them.
    pub fn reason(&self) -> String {
        format!("{} ({})", self.why(), errno_text(self.errno))
    }

    /// The reason and the fix in words: the one place they are written.
    fn why(&self) -> String {
        let (attr, target, errno) = (&*self.attr, self.target, self.errno);
        let pmu = self.pmu.as_deref();
        match self.cause {
            OpenCause::Permission {
                paranoid,
                capable,
                cpu_wide,
                kernel,
            } => permission(paranoid, capable, cpu_wide, kernel, target),
            OpenCause::NotSupported { .. } if errno == libc::ENODEV => no_device(attr, target, pmu),
            OpenCause::NotSupported { core_pmu } => not_supported(errno, attr, pmu, core_pmu),
            OpenCause::NoDebugRegister => {
                "no free debug register: x86 has four (DR0-DR3), and this thread's breakpoints, \
                 every CPU-wide breakpoint and any debugger attached share them; close a \
                 breakpoint or watch fewer addresses at once"
                    .to_string()
            }
            OpenCause::Invalid { .. } if errno == libc::E2BIG => {
                "this kernel is older than the perf_event_attr pmx passes and the attr uses a \
                 field it does not know; update the kernel or leave that field unset"
                    .to_string()
            }
            OpenCause::Invalid { .. } if errno == libc::EOVERFLOW => {
                "a value in the attr exceeds the kernel's limit (e.g. the call-chain depth, \
                 kernel.perf_event_max_stack)"
                    .to_string()
            }
            OpenCause::Invalid { cpus, in_group } => invalid(attr, target, in_group, pmu, cpus),
            OpenCause::Busy if attr.exclusive => {
                "this exclusive event cannot have the PMU to itself: other events hold it; \
                 drop `exclusive` or stop the other users"
                    .to_string()
            }
            OpenCause::Busy => {
                "the PMU is held exclusively by another user (an exclusive event, another \
                 profiler or a driver using the counters directly); stop it and retry"
                    .to_string()
            }
            OpenCause::NoProcess => format!(
                "no process or thread {} (it has exited, or lives in another PID namespace)",
                target.pid
            ),
            OpenCause::TooManyFiles { .. } if errno == libc::ENFILE => {
                "the system has reached its open-file limit (fs.file-max); raise it with \
                 `sysctl fs.file-max=...` or count fewer events"
                    .to_string()
            }
            OpenCause::TooManyFiles { limit } => format!(
                "this process has reached its open-file limit{}; every counter is one file \
                 descriptor (events x CPUs, or events x threads): raise the limit, e.g. \
                 `ulimit -n 65536`, or count fewer events",
                match limit {
                    Some(n) => format!(" (ulimit -n is {n})"),
                    None => String::new(),
                }
            ),
            OpenCause::NoId => "the kernel opened it but would not give its id \
                 (PERF_EVENT_IOC_ID); pmx needs Linux 3.12 or later"
                .to_string(),
            OpenCause::Other if errno == libc::ENOSPC => {
                "the PMU has no room left for this event".to_string()
            }
            OpenCause::Other => {
                "the kernel refused it for a reason pmx does not recognise".to_string()
            }
        }
    }
}

/// Where the PMUs are described.
const PMU_DIR: &str = "/sys/bus/event_source/devices";

/// CAP_SYS_ADMIN.
const CAP_SYS_ADMIN: u32 = 21;
/// CAP_PERFMON (Linux 5.8+).
const CAP_PERFMON: u32 = 38;

/// `kernel.perf_event_paranoid`, read from
/// `/proc/sys/kernel/perf_event_paranoid`; `None` when the file is absent
/// (no perf support) or unreadable.
///
/// The levels: -1 no restriction; 0 CPU-wide and kernel counting allowed;
/// 1 kernel counting of one's own processes, nothing CPU-wide; 2 only user
/// space of one's own processes; 3 and above (Debian/Ubuntu patch) nothing
/// without CAP_PERFMON. CAP_PERFMON or CAP_SYS_ADMIN lift every level.
pub fn perf_event_paranoid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// What a paranoid level allows, in words.
fn paranoid_meaning(level: i64) -> &'static str {
    match level {
        i64::MIN..=-1 => "no limits for anyone",
        0 => "users may count the kernel and whole CPUs, but not read raw tracepoint data",
        1 => "users may count their own processes, kernel included, but not whole CPUs",
        2 => "users may count only the user space of their own processes",
        _ => {
            "users without CAP_PERFMON may not open perf events at all (a Debian/Ubuntu extension)"
        }
    }
}

/// Everything besides the attr and the errno that decides the message:
/// facts about this machine and process, injectable for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Context {
    /// `kernel.perf_event_paranoid`.
    pub paranoid: Option<i64>,
    /// CAP_PERFMON or CAP_SYS_ADMIN is effective.
    pub capable: Option<bool>,
    /// The sysfs name of the PMU whose `type` is the attr's type.
    pub pmu_name: Option<String>,
    /// A core (hardware) PMU is registered with the kernel.
    pub core_pmu: Option<bool>,
    /// The soft `RLIMIT_NOFILE`.
    pub nofile_limit: Option<u64>,
    /// CPUs the kernel was configured for.
    pub cpus: Option<u32>,
}

impl Context {
    /// The facts of this machine and process that matter for `attr`. Read
    /// only when an open failed, so the happy path touches no files.
    pub(crate) fn of_this_machine(attr: &Attr) -> Context {
        Context {
            paranoid: perf_event_paranoid(),
            capable: perfmon_capable(),
            pmu_name: pmu_name_of_type(Path::new(PMU_DIR), attr.type_),
            core_pmu: core_pmu_present(Path::new(PMU_DIR)),
            nofile_limit: nofile_limit(),
            cpus: configured_cpus(),
        }
    }
}

/// CAP_PERFMON or CAP_SYS_ADMIN in `CapEff` of `/proc/self/status`.
fn perfmon_capable() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    let caps = u64::from_str_radix(hex.trim(), 16).ok()?;
    Some(caps & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN) != 0)
}

/// The PMU under `dir` whose `type` file holds `type_`.
fn pmu_name_of_type(dir: &Path, type_: u32) -> Option<String> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let t = std::fs::read_to_string(entry.path().join("type")).ok()?;
        (t.trim().parse::<u32>().ok()? == type_)
            .then(|| entry.file_name().to_string_lossy().into_owned())
    })
}

/// Whether a core PMU (`cpu`, the hybrid `cpu_core`/`cpu_atom`, or an Arm
/// `armv*` PMU) is registered under `dir`.
fn core_pmu_present(dir: &Path) -> Option<bool> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    Some(
        names.iter().any(|n| {
            matches!(n.as_str(), "cpu" | "cpu_core" | "cpu_atom") || n.starts_with("armv")
        }),
    )
}

fn nofile_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `struct rlimit` to the pointer, which
    // points to a live local of that type.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    ok.then_some(lim.rlim_cur)
}

fn configured_cpus() -> Option<u32> {
    // SAFETY: sysconf takes an integer name and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).ok().filter(|&n| n > 0)
}

/// The errno's symbolic name and the C library's text.
fn errno_text(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOMEM => "ENOMEM",
        _ => "",
    };
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    // std appends " (os error N)"; the name says it better.
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    if name.is_empty() {
        format!("errno {errno}: {text}")
    } else {
        format!("{name}: {text}")
    }
}

fn bp_kind(bp_type: u32) -> String {
    match bp_type {
        crate::bp::R => "read".into(),
        crate::bp::W => "write".into(),
        crate::bp::RW => "read/write".into(),
        crate::bp::X => "execute".into(),
        other => format!("bp_type {other}"),
    }
}

/// The event in words: `hardware event cycles`, `msr PMU event config 0x0`.
fn describe_event(attr: &Attr, pmu_name: Option<&str>) -> String {
    let named = |names: &[&str], kind: &str| match usize::try_from(attr.config)
        .ok()
        .and_then(|i| names.get(i))
    {
        Some(name) => format!("{kind} event {name}"),
        None => format!("{kind} event config {:#x}", attr.config),
    };
    let mut s = match attr.type_ {
        event_type::HARDWARE => named(pmx_perfdata::format::HARDWARE_EVENT_NAMES, "hardware"),
        event_type::SOFTWARE => named(pmx_perfdata::format::SOFTWARE_EVENT_NAMES, "software"),
        event_type::TRACEPOINT => format!("tracepoint id {}", attr.config),
        event_type::HW_CACHE => format!("hardware cache event config {:#x}", attr.config),
        event_type::RAW => format!("raw event config {:#x}", attr.config),
        event_type::BREAKPOINT => {
            return format!(
                "{} breakpoint at {:#x} (len {})",
                bp_kind(attr.bp_type),
                attr.config1,
                attr.config2
            )
        }
        t => match pmu_name {
            Some(name) => format!("{name} PMU event config {:#x}", attr.config),
            None => format!("event config {:#x} of PMU type {t}", attr.config),
        },
    };
    if attr.config1 != 0 {
        let _ = write!(s, ", config1 {:#x}", attr.config1);
    }
    if attr.config2 != 0 {
        let _ = write!(s, ", config2 {:#x}", attr.config2);
    }
    s
}

/// The target in words: `for this thread on any CPU`.
fn describe_target(t: Target) -> String {
    let who = match t.pid {
        -1 => "for every task".to_string(),
        0 => "for this thread".to_string(),
        pid => format!("for task {pid}"),
    };
    let cpu = match t.cpu {
        -1 => "on any CPU".to_string(),
        cpu => format!("on CPU {cpu}"),
    };
    format!("{who} {cpu}")
}

/// Whether the event counts on the CPU's own PMU (the types whose ENOENT
/// means "this PMU lacks the event").
fn is_core_event(attr: &Attr, pmu_name: Option<&str>) -> bool {
    matches!(
        attr.type_,
        event_type::HARDWARE | event_type::HW_CACHE | event_type::RAW
    ) || matches!(pmu_name, Some("cpu" | "cpu_core" | "cpu_atom"))
}

/// The open error for `errno`, given the attr, the target, whether the
/// event was joining a group, and the facts in `ctx`.
pub(crate) fn explain(
    errno: i32,
    attr: &Attr,
    target: Target,
    in_group: bool,
    ctx: &Context,
) -> OpenError {
    let cause = match errno {
        libc::EACCES | libc::EPERM => OpenCause::Permission {
            paranoid: ctx.paranoid,
            capable: ctx.capable,
            cpu_wide: target.pid == -1,
            kernel: !attr.exclude_kernel,
        },
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => OpenCause::NotSupported {
            core_pmu: ctx.core_pmu,
        },
        libc::ENOSPC if attr.type_ == event_type::BREAKPOINT => OpenCause::NoDebugRegister,
        libc::EINVAL | libc::E2BIG | libc::EOVERFLOW => OpenCause::Invalid {
            cpus: ctx.cpus,
            in_group,
        },
        libc::EBUSY => OpenCause::Busy,
        libc::ESRCH => OpenCause::NoProcess,
        libc::EMFILE | libc::ENFILE => OpenCause::TooManyFiles {
            limit: ctx.nofile_limit,
        },
        _ => OpenCause::Other,
    };
    OpenError {
        errno,
        attr: Box::new(attr.clone()),
        target,
        pmu: ctx.pmu_name.clone(),
        cause,
    }
}

/// The event opened but `PERF_EVENT_IOC_ID` failed (kernels before 3.12).
pub(crate) fn id_unavailable(errno: i32, attr: &Attr, target: Target) -> OpenError {
    OpenError {
        errno,
        attr: Box::new(attr.clone()),
        target,
        pmu: None,
        cause: OpenCause::NoId,
    }
}

/// EACCES/EPERM: the paranoid level, what this open needs, and the fix.
fn permission(
    paranoid: Option<i64>,
    capable: Option<bool>,
    system_wide: bool,
    kernel: bool,
    target: Target,
) -> String {
    // The highest level that allows this open to a user without CAP_PERFMON.
    let (needed, what) = if system_wide {
        (0, "counting every task on a CPU")
    } else if kernel {
        (1, "counting kernel space (exclude_kernel is not set)")
    } else {
        (2, "counting a process")
    };
    let mut s = String::new();
    if capable == Some(true) {
        s.push_str(
            "denied although this process has CAP_PERFMON or CAP_SYS_ADMIN: a security module \
             (SELinux, AppArmor, kernel lockdown) or the target's protection forbids it",
        );
        if target.pid > 0 {
            s.push_str("; check that the task may be traced (kernel.yama.ptrace_scope)");
        }
        return s;
    }
    match paranoid {
        Some(level) if level > needed => {
            let _ = write!(
                s,
                "kernel.perf_event_paranoid is {level} ({}); {what} needs level {needed} or \
                 lower, or CAP_PERFMON. Fix: run with CAP_PERFMON (CAP_SYS_ADMIN on kernels \
                 before 5.8, e.g. as root), or lower the level: \
                 `sysctl kernel.perf_event_paranoid={needed}`",
                paranoid_meaning(level)
            );
            if kernel && !system_wide && level == 2 {
                s.push_str(
                    "; or count user space only (set exclude_kernel, the `:u` modifier), \
                     which level 2 allows",
                );
            }
        }
        Some(level) => {
            let _ = write!(
                s,
                "kernel.perf_event_paranoid is {level}, which allows {what}, so something \
                 else forbids it: "
            );
            if target.pid > 0 {
                s.push_str(
                    "counting another task needs the right to trace it (same user, and \
                     kernel.yama.ptrace_scope permitting), ",
                );
            }
            s.push_str(
                "a security module (SELinux, AppArmor, lockdown) may deny perf events; \
                 CAP_PERFMON lifts the perf checks",
            );
        }
        None => {
            let _ = write!(
                s,
                "{what} is not allowed, and kernel.perf_event_paranoid could not be read \
                 (/proc/sys/kernel/perf_event_paranoid); run with CAP_PERFMON or as root, or \
                 lower the level: `sysctl kernel.perf_event_paranoid={needed}`"
            );
        }
    }
    s
}

/// ENOENT/EOPNOTSUPP: the event or the way it is asked for does not exist
/// here.
fn not_supported(errno: i32, attr: &Attr, pmu: Option<&str>, core_pmu: Option<bool>) -> String {
    if is_core_event(attr, pmu) {
        let mut s = String::from("this machine's PMU does not count it");
        if core_pmu == Some(false) {
            s.push_str(
                " (no hardware PMU exposed: /sys/bus/event_source/devices has no `cpu` PMU, \
                 as in a VM without a virtual PMU); software events, breakpoints and msr/tsc \
                 still count",
            );
        } else if errno == libc::EOPNOTSUPP {
            s.push_str(
                " as asked: the PMU lacks a feature the attr needs (an exclude_* filter, \
                 sampling or branch records)",
            );
        } else {
            s.push_str(
                " (the CPU does not have this event, or a hypervisor's virtual PMU hides it); \
                 `pmx list` shows what this CPU offers",
            );
        }
        return s;
    }
    match attr.type_ {
        event_type::SOFTWARE => format!(
            "this kernel has no software event with config {:#x}",
            attr.config
        ),
        event_type::TRACEPOINT => format!(
            "no tracepoint has id {} (the ids are in /sys/kernel/tracing/events/*/*/id)",
            attr.config
        ),
        event_type::BREAKPOINT => {
            "this kernel or machine has no hardware breakpoint support for it".to_string()
        }
        t => match pmu {
            Some(name) if errno == libc::EOPNOTSUPP => format!(
                "the {name} PMU cannot count it as asked (it lacks a feature the attr needs)"
            ),
            Some(name) => format!(
                "the {name} PMU does not know this event (see {PMU_DIR}/{name}/events and \
                 format)"
            ),
            None => format!("no PMU with type {t} is registered with this kernel"),
        },
    }
}

/// ENODEV: the PMU exists but not where it was asked to count.
fn no_device(attr: &Attr, target: Target, pmu: Option<&str>) -> String {
    let pmu = pmu
        .map(str::to_string)
        .unwrap_or_else(|| format!("type {}", attr.type_));
    if target.cpu >= 0 {
        format!(
            "the {pmu} PMU cannot count on CPU {}: the CPU is offline, or the PMU covers \
             other CPUs only (hybrid core types, or see {PMU_DIR}/{pmu}/cpumask)",
            target.cpu
        )
    } else {
        format!("the {pmu} PMU cannot count for this target; it may need a CPU (pid -1, cpu N)")
    }
}

/// EINVAL: the likely causes, the certain ones first.
fn invalid(
    attr: &Attr,
    target: Target,
    in_group: bool,
    pmu: Option<&str>,
    cpus: Option<u32>,
) -> String {
    let certain = certain_invalid(attr, target, in_group, cpus);
    let maybe = possible_invalid(attr, target, in_group, pmu);
    let mut s = String::from("the kernel rejects this attr");
    if !certain.is_empty() {
        let _ = write!(s, ": {}", certain.join("; "));
    }
    if !maybe.is_empty() {
        let _ = write!(
            s,
            ". {}: {}",
            if certain.is_empty() {
                "Possible causes"
            } else {
                "Other possible causes"
            },
            maybe.join("; ")
        );
    }
    s
}

/// EINVAL: what is certainly wrong with the attr or the target.
fn certain_invalid(attr: &Attr, target: Target, in_group: bool, cpus: Option<u32>) -> Vec<String> {
    let mut certain: Vec<String> = Vec::new();
    if target.pid == -1 && target.cpu == -1 {
        certain.push("pid -1 (every task) needs a CPU: give cpu >= 0".into());
    }
    if target.cpu < -1 || target.pid < -1 {
        certain.push("pid and cpu must be >= -1".into());
    }
    if let Some(n) = cpus {
        if target.cpu >= 0 && target.cpu as u32 >= n {
            certain.push(format!(
                "CPU {} does not exist (this machine has {n})",
                target.cpu
            ));
        }
    }
    if attr.precise_ip > 3 {
        certain.push(format!(
            "precise_ip is {}, the highest level is 3",
            attr.precise_ip
        ));
    }
    if in_group && (attr.pinned || attr.exclusive) {
        certain.push("only a group leader may be pinned or exclusive".into());
    }
    if attr.read_format >> 5 != 0 {
        certain.push(format!(
            "read_format {:#x} has bits this kernel does not define",
            attr.read_format
        ));
    }
    certain
}

/// EINVAL: what may be wrong, given what this kind of event and PMU accept.
fn possible_invalid(attr: &Attr, target: Target, in_group: bool, pmu: Option<&str>) -> Vec<String> {
    let mut maybe: Vec<String> = Vec::new();
    if attr.type_ == event_type::BREAKPOINT {
        maybe.push(format!(
            "a breakpoint shape the CPU cannot watch (it needs len 1, 2, 4 or 8, exactly 8 \
             to execute, an address aligned to its len, and bp_type W, RW or X, as x86 cannot \
             trap reads alone; this one is {} at {:#x} with len {})",
            bp_kind(attr.bp_type),
            attr.config1,
            attr.config2
        ));
    }
    if (1..=3).contains(&attr.precise_ip) {
        maybe.push(format!(
            "precise_ip {} is more than this PMU offers (try a lower `:p` level)",
            attr.precise_ip
        ));
    }
    let excludes = [
        (attr.exclude_user, "exclude_user"),
        (attr.exclude_kernel, "exclude_kernel"),
        (attr.exclude_hv, "exclude_hv"),
        (attr.exclude_idle, "exclude_idle"),
        (attr.exclude_host, "exclude_host"),
        (attr.exclude_guest, "exclude_guest"),
    ];
    let set: Vec<&str> = excludes
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
    if !set.is_empty() {
        maybe.push(format!(
            "this PMU does not filter by privilege level ({} set; uncore and msr PMUs count \
             everything: drop the modifiers)",
            set.join(", ")
        ));
    }
    let dynamic = attr.type_ > event_type::BREAKPOINT;
    if dynamic && target.pid != -1 && !matches!(pmu, Some("cpu" | "cpu_core" | "cpu_atom")) {
        maybe.push(format!(
            "the {} PMU counts per CPU only, as uncore PMUs do (use pid -1 and a CPU from its \
             cpumask)",
            pmu.unwrap_or("event's")
        ));
    }
    if attr.type_ != event_type::SOFTWARE && attr.type_ != event_type::BREAKPOINT {
        let pmu_dir = match pmu {
            Some(name) => format!("{PMU_DIR}/{name}"),
            None => format!("{PMU_DIR}/<pmu>"),
        };
        maybe.push(format!(
            "config {:#x} is not an event this PMU accepts (see format/ and events/ in \
             {pmu_dir})",
            attr.config
        ));
    }
    if in_group {
        maybe.push(
            "the group leader counts another task or CPU, or the group mixes hardware PMUs \
             (members must match the leader's task and CPU; one hardware PMU per group besides \
             software events)"
                .into(),
        );
    }
    if attr.inherit && attr.read_format & crate::read_format::GROUP != 0 {
        maybe.push("inherit with a group read format, which older kernels refuse".into());
    }
    maybe
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bp;

    fn sw(config: u64) -> Attr {
        Attr {
            type_: event_type::SOFTWARE,
            config,
            ..Attr::default()
        }
    }

    const THREAD: Target = Target { pid: 0, cpu: -1 };
    const CPU0: Target = Target { pid: -1, cpu: 0 };

    fn user(paranoid: i64) -> Context {
        Context {
            paranoid: Some(paranoid),
            capable: Some(false),
            ..Context::default()
        }
    }

    #[test]
    fn cpu_wide_at_level_2_names_the_level_and_the_fix() {
        let e = explain(libc::EACCES, &sw(0), CPU0, false, &user(2));
        assert_eq!(
            e.cause,
            OpenCause::Permission {
                paranoid: Some(2),
                capable: Some(false),
                cpu_wide: true,
                kernel: true,
            }
        );
        assert_eq!(e.errno, libc::EACCES);
        assert_eq!(e.target, CPU0);
        assert_eq!(*e.attr, sw(0));
        assert_eq!(
            e.to_string(),
            format!(
                "cannot open software event cpu-clock for every task on CPU 0: {}",
                e.reason()
            )
        );
        let m = &e.to_string();
        assert!(
            m.starts_with("cannot open software event cpu-clock for every task on CPU 0: "),
            "{m}"
        );
        assert!(m.contains("kernel.perf_event_paranoid is 2"), "{m}");
        assert!(
            m.contains("counting every task on a CPU needs level 0"),
            "{m}"
        );
        assert!(m.contains("sysctl kernel.perf_event_paranoid=0"), "{m}");
        assert!(m.contains("CAP_PERFMON"), "{m}");
        assert!(m.ends_with("(EACCES: Permission denied)"), "{m}");
        // exclude_kernel does not help a CPU-wide event.
        assert!(!m.contains("exclude_kernel"), "{m}");
    }

    #[test]
    fn kernel_counting_at_level_2_suggests_user_only() {
        let e = explain(libc::EACCES, &sw(1), THREAD, false, &user(2));
        let m = &e.to_string();
        assert!(m.contains("counting kernel space"), "{m}");
        assert!(m.contains("sysctl kernel.perf_event_paranoid=1"), "{m}");
        assert!(m.contains("set exclude_kernel"), "{m}");
    }

    #[test]
    fn level_3_forbids_everything() {
        let a = Attr {
            exclude_kernel: true,
            ..sw(1)
        };
        let m = explain(libc::EACCES, &a, THREAD, false, &user(3)).to_string();
        assert!(m.contains("kernel.perf_event_paranoid is 3"), "{m}");
        assert!(m.contains("may not open perf events at all"), "{m}");
        assert!(m.contains("sysctl kernel.perf_event_paranoid=2"), "{m}");
    }

    #[test]
    fn a_permitted_level_points_elsewhere() {
        let m = explain(
            libc::EPERM,
            &sw(1),
            Target { pid: 4242, cpu: -1 },
            false,
            &user(-1),
        )
        .to_string();
        assert!(
            m.contains("kernel.perf_event_paranoid is -1, which allows"),
            "{m}"
        );
        assert!(m.contains("ptrace_scope"), "{m}");
        let root = Context {
            paranoid: Some(2),
            capable: Some(true),
            ..Context::default()
        };
        let m = explain(libc::EACCES, &sw(1), CPU0, false, &root).to_string();
        assert!(m.contains("although this process has CAP_PERFMON"), "{m}");
        let unknown = Context::default();
        let m = explain(libc::EACCES, &sw(1), CPU0, false, &unknown).to_string();
        assert!(m.contains("perf_event_paranoid could not be read"), "{m}");
    }

    #[test]
    fn hardware_event_without_a_pmu() {
        let ctx = Context {
            core_pmu: Some(false),
            ..Context::default()
        };
        let e = explain(libc::ENOENT, &Attr::default(), THREAD, false, &ctx);
        assert!(matches!(e.cause, OpenCause::NotSupported { .. }), "{e}");
        assert!(e.to_string().contains("hardware event cycles"), "{e}");
        assert!(
            e.to_string().contains("no hardware PMU exposed"),
            "{}",
            e.to_string()
        );
        let ctx = Context {
            core_pmu: Some(true),
            ..Context::default()
        };
        let raw = Attr {
            type_: event_type::RAW,
            config: 0x412e,
            ..Attr::default()
        };
        let e = explain(libc::ENOENT, &raw, THREAD, false, &ctx);
        assert!(
            e.to_string().contains("raw event config 0x412e"),
            "{}",
            e.to_string()
        );
        assert!(
            e.to_string().contains("does not have this event"),
            "{}",
            e.to_string()
        );
    }

    #[test]
    fn enospc_is_a_debug_register_only_for_breakpoints() {
        let b = Attr::breakpoint(0x1000, 8, bp::W);
        let e = explain(libc::ENOSPC, &b, THREAD, false, &Context::default());
        assert!(matches!(e.cause, OpenCause::NoDebugRegister), "{e}");
        assert!(
            e.to_string().contains("write breakpoint at 0x1000 (len 8)"),
            "{}",
            e.to_string()
        );
        assert!(e.to_string().contains("x86 has four"), "{e}");
        let e = explain(libc::ENOSPC, &sw(1), THREAD, false, &Context::default());
        assert!(matches!(e.cause, OpenCause::Other), "{e}");
    }

    #[test]
    fn einval_hints_follow_the_attr() {
        let ctx = Context {
            pmu_name: Some("msr".into()),
            cpus: Some(2),
            ..Context::default()
        };
        let msr = Attr {
            type_: 9,
            exclude_kernel: true,
            ..Attr::default()
        };
        let e = explain(libc::EINVAL, &msr, Target { pid: -1, cpu: 0 }, false, &ctx);
        assert!(matches!(e.cause, OpenCause::Invalid { .. }), "{e}");
        let m = &e.to_string();
        assert!(m.contains("msr PMU event config 0x0"), "{m}");
        assert!(m.contains("exclude_kernel set"), "{m}");
        assert!(m.contains("in /sys/bus/event_source/devices/msr)"), "{m}");
        let m = explain(
            libc::EINVAL,
            &sw(1),
            Target { pid: -1, cpu: -1 },
            false,
            &ctx,
        )
        .to_string();
        assert!(
            m.contains("rejects this attr: pid -1 (every task) needs a CPU"),
            "{m}"
        );
        let m = explain(libc::EINVAL, &sw(1), Target { pid: 0, cpu: 7 }, false, &ctx).to_string();
        assert!(
            m.contains("CPU 7 does not exist (this machine has 2)"),
            "{m}"
        );
        let pinned = Attr {
            pinned: true,
            ..sw(1)
        };
        let m = explain(libc::EINVAL, &pinned, THREAD, true, &ctx).to_string();
        assert!(m.contains("only a group leader may be pinned"), "{m}");
        let m = explain(
            libc::EINVAL,
            &Attr::breakpoint(0x1001, 3, bp::W),
            THREAD,
            false,
            &ctx,
        )
        .to_string();
        assert!(m.contains("len 1, 2, 4 or 8"), "{m}");
    }

    #[test]
    fn other_errnos() {
        let c = Context {
            nofile_limit: Some(1024),
            ..Context::default()
        };
        let e = explain(
            libc::ESRCH,
            &sw(1),
            Target {
                pid: 99999,
                cpu: -1,
            },
            false,
            &c,
        );
        assert!(matches!(e.cause, OpenCause::NoProcess), "{e}");
        assert!(
            e.to_string().contains("no process or thread 99999"),
            "{}",
            e.to_string()
        );
        let e = explain(libc::EMFILE, &sw(1), THREAD, false, &c);
        assert_eq!(e.cause, OpenCause::TooManyFiles { limit: Some(1024) });
        assert!(e.to_string().contains("ulimit -n is 1024"), "{e}");
        assert!(e.to_string().contains("ulimit -n 65536"), "{e}");
        assert!(matches!(
            explain(libc::EBUSY, &sw(1), THREAD, false, &c).cause,
            OpenCause::Busy
        ));
        assert!(matches!(
            explain(libc::E2BIG, &sw(1), THREAD, false, &c).cause,
            OpenCause::Invalid { .. }
        ));
        assert!(matches!(
            explain(libc::ENODEV, &sw(1), CPU0, false, &c).cause,
            OpenCause::NotSupported { .. }
        ));
        let e = explain(libc::EFAULT, &sw(1), THREAD, false, &c);
        assert!(matches!(e.cause, OpenCause::Other), "{e}");
        assert!(
            e.to_string().ends_with("(EFAULT: Bad address)"),
            "{}",
            e.to_string()
        );
        assert!(explain(12345, &sw(1), THREAD, false, &c)
            .to_string()
            .contains("errno 12345"));
    }

    #[test]
    fn sysfs_lookups() {
        let dir = std::env::temp_dir().join(format!("pmx-perf-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, t) in [("software", "1"), ("msr", "9\n")] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            std::fs::write(dir.join(name).join("type"), t).unwrap();
        }
        assert_eq!(pmu_name_of_type(&dir, 9).as_deref(), Some("msr"));
        assert_eq!(pmu_name_of_type(&dir, 4), None);
        assert_eq!(core_pmu_present(&dir), Some(false));
        std::fs::create_dir_all(dir.join("cpu")).unwrap();
        assert_eq!(core_pmu_present(&dir), Some(true));
        assert_eq!(core_pmu_present(&dir.join("absent")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
