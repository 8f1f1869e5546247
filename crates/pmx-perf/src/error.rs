//! Turning a `perf_event_open` errno into what it means for the event that
//! failed, and what to do about it.
//!
//! The kernel answers every refusal with one errno; what that errno means
//! depends on the event (ENOSPC is "no debug register" for a breakpoint),
//! the target (EACCES on a CPU-wide event is about `perf_event_paranoid`
//! level 0) and the machine (ENOENT on `cycles` in a VM without a virtual
//! PMU). [`explain`] takes all of that as plain values in a [`Context`], so
//! every message can be tested with any paranoid level, capability or sysfs
//! view; [`Context::of_this_machine`] fills it from `/proc` and `/sys`.

use crate::{event_type, Attr, Target};
use std::fmt::Write as _;
use std::path::Path;

/// Why an open failed, in the user's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenErrorKind {
    /// ENOENT/EOPNOTSUPP on a hardware event: this machine does not count it.
    NotSupported,
    /// EACCES/EPERM: not allowed at this paranoid level / without capability.
    Permission,
    /// ENOSPC on a breakpoint: no free debug register.
    NoDebugRegister,
    /// EINVAL, E2BIG: the kernel rejects the attr.
    Invalid,
    /// EBUSY: another user holds the PMU exclusively.
    Busy,
    /// ESRCH: no such process.
    NoProcess,
    /// EMFILE: too many open files.
    TooManyFiles,
    /// Anything else.
    Other,
}

/// A failed `perf_event_open`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OpenError {
    /// The errno.
    pub errno: i32,
    /// What it means.
    pub kind: OpenErrorKind,
    /// The whole sentence: which event could not be opened where, the
    /// reason and the fix.
    pub message: String,
    /// The reason and the fix alone, without naming the event or the
    /// target (the tail of `message`): the same for every event that
    /// fails for the same cause, so reports can group them.
    pub cause: String,
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
    let pmu = ctx.pmu_name.as_deref();
    let head = format!(
        "cannot open {} {}",
        describe_event(attr, pmu),
        describe_target(target)
    );
    let (kind, why) = match errno {
        libc::EACCES | libc::EPERM => (OpenErrorKind::Permission, permission(attr, target, ctx)),
        libc::ENOENT | libc::EOPNOTSUPP => {
            (OpenErrorKind::NotSupported, not_supported(errno, attr, ctx))
        }
        libc::ENOSPC if attr.type_ == event_type::BREAKPOINT => (
            OpenErrorKind::NoDebugRegister,
            "no free debug register: x86 has four (DR0-DR3), and this thread's breakpoints, \
             every CPU-wide breakpoint and any debugger attached share them; close a \
             breakpoint or watch fewer addresses at once"
                .to_string(),
        ),
        libc::ENOSPC => (
            OpenErrorKind::Other,
            "the PMU has no room left for this event".to_string(),
        ),
        libc::ENODEV => (OpenErrorKind::NotSupported, no_device(attr, target, ctx)),
        libc::EINVAL => (OpenErrorKind::Invalid, invalid(attr, target, in_group, ctx)),
        libc::E2BIG => (
            OpenErrorKind::Invalid,
            "this kernel is older than the perf_event_attr pmx passes and the attr uses a \
             field it does not know; update the kernel or leave that field unset"
                .to_string(),
        ),
        libc::EOVERFLOW => (
            OpenErrorKind::Invalid,
            "a value in the attr exceeds the kernel's limit (e.g. the call-chain depth, \
             kernel.perf_event_max_stack)"
                .to_string(),
        ),
        libc::EBUSY => (
            OpenErrorKind::Busy,
            if attr.exclusive {
                "this exclusive event cannot have the PMU to itself: other events hold it; \
                 drop `exclusive` or stop the other users"
                    .to_string()
            } else {
                "the PMU is held exclusively by another user (an exclusive event, another \
                 profiler or a driver using the counters directly); stop it and retry"
                    .to_string()
            },
        ),
        libc::ESRCH => (
            OpenErrorKind::NoProcess,
            format!(
                "no process or thread {} (it has exited, or lives in another PID namespace)",
                target.pid
            ),
        ),
        libc::EMFILE => (
            OpenErrorKind::TooManyFiles,
            format!(
                "this process has reached its open-file limit{}; every counter is one file \
                 descriptor (events x CPUs, or events x threads): raise the limit, e.g. \
                 `ulimit -n 65536`, or count fewer events",
                match ctx.nofile_limit {
                    Some(n) => format!(" (ulimit -n is {n})"),
                    None => String::new(),
                }
            ),
        ),
        libc::ENFILE => (
            OpenErrorKind::TooManyFiles,
            "the system has reached its open-file limit (fs.file-max); raise it with \
             `sysctl fs.file-max=...` or count fewer events"
                .to_string(),
        ),
        _ => (
            OpenErrorKind::Other,
            "the kernel refused it for a reason pmx does not recognise".to_string(),
        ),
    };
    let cause = format!("{why} ({})", errno_text(errno));
    OpenError {
        errno,
        kind,
        message: format!("{head}: {cause}"),
        cause,
    }
}

/// The event opened but `PERF_EVENT_IOC_ID` failed (kernels before 3.12).
pub(crate) fn id_unavailable(errno: i32, attr: &Attr, target: Target) -> OpenError {
    let cause = format!(
        "the kernel opened it but would not give its id (PERF_EVENT_IOC_ID); pmx needs \
         Linux 3.12 or later ({})",
        errno_text(errno)
    );
    OpenError {
        errno,
        kind: OpenErrorKind::Other,
        message: format!(
            "cannot open {} {}: {cause}",
            describe_event(attr, None),
            describe_target(target),
        ),
        cause,
    }
}

/// EACCES/EPERM: the paranoid level, what this open needs, and the fix.
fn permission(attr: &Attr, target: Target, ctx: &Context) -> String {
    let system_wide = target.pid == -1;
    let kernel = !attr.exclude_kernel;
    // The highest level that allows this open to a user without CAP_PERFMON.
    let (needed, what) = if system_wide {
        (0, "counting every task on a CPU")
    } else if kernel {
        (1, "counting kernel space (exclude_kernel is not set)")
    } else {
        (2, "counting a process")
    };
    let mut s = String::new();
    if ctx.capable == Some(true) {
        s.push_str(
            "denied although this process has CAP_PERFMON or CAP_SYS_ADMIN: a security module \
             (SELinux, AppArmor, kernel lockdown) or the target's protection forbids it",
        );
        if target.pid > 0 {
            s.push_str("; check that the task may be traced (kernel.yama.ptrace_scope)");
        }
        return s;
    }
    match ctx.paranoid {
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
fn not_supported(errno: i32, attr: &Attr, ctx: &Context) -> String {
    let pmu = ctx.pmu_name.as_deref();
    if is_core_event(attr, pmu) {
        let mut s = String::from("this machine's PMU does not count it");
        if ctx.core_pmu == Some(false) {
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
fn no_device(attr: &Attr, target: Target, ctx: &Context) -> String {
    let pmu = ctx
        .pmu_name
        .clone()
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
fn invalid(attr: &Attr, target: Target, in_group: bool, ctx: &Context) -> String {
    let pmu = ctx.pmu_name.as_deref();
    let mut certain: Vec<String> = Vec::new();
    let mut maybe: Vec<String> = Vec::new();
    if target.pid == -1 && target.cpu == -1 {
        certain.push("pid -1 (every task) needs a CPU: give cpu >= 0".into());
    }
    if target.cpu < -1 || target.pid < -1 {
        certain.push("pid and cpu must be >= -1".into());
    }
    if let Some(n) = ctx.cpus {
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
        assert_eq!(e.kind, OpenErrorKind::Permission);
        assert_eq!(e.errno, libc::EACCES);
        let m = &e.message;
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
        let m = &e.message;
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
        let m = explain(libc::EACCES, &a, THREAD, false, &user(3)).message;
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
        .message;
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
        let m = explain(libc::EACCES, &sw(1), CPU0, false, &root).message;
        assert!(m.contains("although this process has CAP_PERFMON"), "{m}");
        let unknown = Context::default();
        let m = explain(libc::EACCES, &sw(1), CPU0, false, &unknown).message;
        assert!(m.contains("perf_event_paranoid could not be read"), "{m}");
    }

    #[test]
    fn hardware_event_without_a_pmu() {
        let ctx = Context {
            core_pmu: Some(false),
            ..Context::default()
        };
        let e = explain(libc::ENOENT, &Attr::default(), THREAD, false, &ctx);
        assert_eq!(e.kind, OpenErrorKind::NotSupported);
        assert!(e.message.contains("hardware event cycles"), "{}", e.message);
        assert!(
            e.message.contains("no hardware PMU exposed"),
            "{}",
            e.message
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
            e.message.contains("raw event config 0x412e"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("does not have this event"),
            "{}",
            e.message
        );
    }

    #[test]
    fn enospc_is_a_debug_register_only_for_breakpoints() {
        let b = Attr::breakpoint(0x1000, 8, bp::W);
        let e = explain(libc::ENOSPC, &b, THREAD, false, &Context::default());
        assert_eq!(e.kind, OpenErrorKind::NoDebugRegister);
        assert!(
            e.message.contains("write breakpoint at 0x1000 (len 8)"),
            "{}",
            e.message
        );
        assert!(e.message.contains("x86 has four"), "{}", e.message);
        let e = explain(libc::ENOSPC, &sw(1), THREAD, false, &Context::default());
        assert_eq!(e.kind, OpenErrorKind::Other);
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
        assert_eq!(e.kind, OpenErrorKind::Invalid);
        let m = &e.message;
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
        .message;
        assert!(
            m.contains("rejects this attr: pid -1 (every task) needs a CPU"),
            "{m}"
        );
        let m = explain(libc::EINVAL, &sw(1), Target { pid: 0, cpu: 7 }, false, &ctx).message;
        assert!(
            m.contains("CPU 7 does not exist (this machine has 2)"),
            "{m}"
        );
        let pinned = Attr {
            pinned: true,
            ..sw(1)
        };
        let m = explain(libc::EINVAL, &pinned, THREAD, true, &ctx).message;
        assert!(m.contains("only a group leader may be pinned"), "{m}");
        let m = explain(
            libc::EINVAL,
            &Attr::breakpoint(0x1001, 3, bp::W),
            THREAD,
            false,
            &ctx,
        )
        .message;
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
        assert_eq!(e.kind, OpenErrorKind::NoProcess);
        assert!(
            e.message.contains("no process or thread 99999"),
            "{}",
            e.message
        );
        let e = explain(libc::EMFILE, &sw(1), THREAD, false, &c);
        assert_eq!(e.kind, OpenErrorKind::TooManyFiles);
        assert!(e.message.contains("ulimit -n is 1024"), "{}", e.message);
        assert!(e.message.contains("ulimit -n 65536"), "{}", e.message);
        assert_eq!(
            explain(libc::EBUSY, &sw(1), THREAD, false, &c).kind,
            OpenErrorKind::Busy
        );
        assert_eq!(
            explain(libc::E2BIG, &sw(1), THREAD, false, &c).kind,
            OpenErrorKind::Invalid
        );
        assert_eq!(
            explain(libc::ENODEV, &sw(1), CPU0, false, &c).kind,
            OpenErrorKind::NotSupported
        );
        let e = explain(libc::EFAULT, &sw(1), THREAD, false, &c);
        assert_eq!(e.kind, OpenErrorKind::Other);
        assert!(
            e.message.ends_with("(EFAULT: Bad address)"),
            "{}",
            e.message
        );
        assert!(explain(12345, &sw(1), THREAD, false, &c)
            .message
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
