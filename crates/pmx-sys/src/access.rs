//! What this user may do with the counters.
//!
//! The facts, each read from a file under the root and `None` when the file
//! is absent:
//!
//! - `proc/sys/kernel/perf_event_paranoid`: how much `perf_event_open`
//!   allows a user without CAP_PERFMON (see [`paranoid_meaning`]);
//! - `proc/sys/kernel/nmi_watchdog`: 1 when the hard-lockup detector runs,
//!   which on machines with a PMU keeps one counter busy on every CPU;
//! - `proc/self/status`: the effective user id (`Uid:`, second field) and
//!   capability set (`CapEff:`) — CAP_PERFMON (38) or CAP_SYS_ADMIN (21) lift
//!   the paranoid limits, CAP_SYS_RAWIO (17) opens `/dev/cpu/N/msr`;
//! - `dev/cpu/*/msr`: the msr driver's devices;
//! - `sys/bus/event_source/devices/{cpu,cpu_core,cpu_atom}/rdpmc`: whether
//!   user space may read counters with the `rdpmc` instruction;
//! - `sys/kernel/security/lockdown`: kernel lockdown, which (in `integrity`
//!   mode and above) forbids writing MSRs.
//!
//! The `may_*` methods combine them the way the kernel does.

use crate::pmu::{CORE_PMU_NAMES, PMU_DIR};
use crate::root::{parse_i64, Problem, SysRoot};
use serde::Serialize;

/// CAP_SYS_RAWIO: raw I/O, needed for `/dev/cpu/N/msr`.
pub const CAP_SYS_RAWIO: u32 = 17;
/// CAP_SYS_ADMIN: the catch-all privilege; also lifts perf limits.
pub const CAP_SYS_ADMIN: u32 = 21;
/// CAP_PERFMON (Linux 5.8+): performance monitoring without full admin.
pub const CAP_PERFMON: u32 = 38;

/// The `rdpmc` attribute of a core PMU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rdpmc {
    /// The PMU the file belongs to (`cpu`, `cpu_core`, `cpu_atom`).
    pub pmu: String,
    /// 0: `rdpmc` faults in user space; 1: allowed while the task has a perf
    /// event mapped (the default); 2: always allowed.
    pub value: i64,
}

impl Rdpmc {
    /// The setting in words.
    pub fn meaning(&self) -> &'static str {
        match self.value {
            0 => "user-space rdpmc disabled",
            1 => "user-space rdpmc allowed for tasks with a perf event mapped",
            2 => "user-space rdpmc allowed for every task",
            _ => "unknown setting",
        }
    }
}

/// Everything that decides what this user may measure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Access {
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Option<i64>,
    /// `kernel.nmi_watchdog` is on.
    pub nmi_watchdog: Option<bool>,
    /// Effective user id.
    pub euid: Option<u32>,
    /// Effective capability set (`CapEff`).
    pub cap_eff: Option<u64>,
    /// CAP_PERFMON is effective.
    pub cap_perfmon: Option<bool>,
    /// CAP_SYS_ADMIN is effective.
    pub cap_sys_admin: Option<bool>,
    /// CAP_SYS_RAWIO is effective.
    pub cap_sys_rawio: Option<bool>,
    /// CPUs with a `dev/cpu/N/msr` device, ascending.
    pub msr_devices: Vec<u32>,
    /// The core PMU's `rdpmc` setting.
    pub rdpmc: Option<Rdpmc>,
    /// The active kernel lockdown mode (`none`, `integrity`,
    /// `confidentiality`), when the lockdown LSM is present.
    pub lockdown: Option<String>,
}

impl Access {
    /// Read the access facts under `root`.
    pub fn read(root: &SysRoot, problems: &mut Vec<Problem>) -> Access {
        let paranoid = root.read_parsed(
            "proc/sys/kernel/perf_event_paranoid",
            "a number",
            problems,
            parse_i64,
        );
        let nmi_watchdog = root
            .read_parsed(
                "proc/sys/kernel/nmi_watchdog",
                "a number",
                problems,
                parse_i64,
            )
            .map(|n| n != 0);
        let status = root.read("proc/self/status", problems).unwrap_or_default();
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
        };
        let euid = field("Uid:").and_then(|v| v.split_whitespace().nth(1)?.parse().ok());
        let cap_eff = field("CapEff:").and_then(|v| u64::from_str_radix(&v, 16).ok());
        if !status.is_empty() && (euid.is_none() || cap_eff.is_none()) {
            problems.push(Problem {
                path: "proc/self/status".into(),
                message: "no parsable Uid: or CapEff: line".into(),
            });
        }
        let cap = |bit: u32| cap_eff.map(|c| c & (1u64 << bit) != 0);

        let mut msr_devices: Vec<u32> = root
            .list("dev/cpu", problems)
            .iter()
            .filter_map(|n| n.parse::<u32>().ok())
            .filter(|n| root.exists(&format!("dev/cpu/{n}/msr")))
            .collect();
        msr_devices.sort_unstable();

        let rdpmc = CORE_PMU_NAMES.iter().find_map(|pmu| {
            let value = root.read_parsed(
                &format!("{PMU_DIR}/{pmu}/rdpmc"),
                "a number",
                problems,
                parse_i64,
            )?;
            Some(Rdpmc {
                pmu: pmu.to_string(),
                value,
            })
        });

        let lockdown = root
            .read("sys/kernel/security/lockdown", problems)
            .map(|text| {
                // "none [integrity] confidentiality": the bracketed word is active.
                text.split_whitespace()
                    .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
                    .unwrap_or(text.as_str())
                    .to_string()
            });

        Access {
            perf_event_paranoid: paranoid,
            nmi_watchdog,
            euid,
            cap_eff,
            cap_perfmon: cap(CAP_PERFMON),
            cap_sys_admin: cap(CAP_SYS_ADMIN),
            cap_sys_rawio: cap(CAP_SYS_RAWIO),
            msr_devices,
            rdpmc,
            lockdown,
        }
    }

    /// Whether the effective user is root; `None` when unknown.
    pub fn is_root(&self) -> Option<bool> {
        self.euid.map(|u| u == 0)
    }

    /// Whether perf's paranoid limits do not apply: CAP_PERFMON or
    /// CAP_SYS_ADMIN is effective (or, with no capability data, euid 0).
    pub fn perfmon_capable(&self) -> bool {
        match (self.cap_perfmon, self.cap_sys_admin) {
            (Some(p), Some(a)) => p || a,
            _ => self.is_root() == Some(true),
        }
    }

    fn paranoid_below(&self, level: i64) -> bool {
        // The kernel's default (2) when the file is missing.
        self.perf_event_paranoid.unwrap_or(2) < level
    }

    /// May open perf events at all. Debian and Ubuntu kernels add paranoid
    /// levels 3 and 4 that forbid unprivileged `perf_event_open`; a vanilla
    /// kernel treats them like 2, so this answer is the cautious one.
    pub fn may_open_events(&self) -> bool {
        self.perfmon_capable() || self.paranoid_below(3)
    }

    /// May count in kernel mode (paranoid < 2 or capable).
    pub fn may_count_kernel(&self) -> bool {
        self.perfmon_capable() || self.paranoid_below(2)
    }

    /// May open CPU-wide (system-wide, per-CPU) events (paranoid < 1 or
    /// capable); uncore PMUs need this.
    pub fn may_count_system_wide(&self) -> bool {
        self.perfmon_capable() || self.paranoid_below(1)
    }

    /// May use kprobe/uprobe PMUs, which always need CAP_PERFMON.
    pub fn may_probe(&self) -> bool {
        self.perfmon_capable()
    }

    /// May read and write MSRs through `/dev/cpu/N/msr`: the devices exist
    /// and CAP_SYS_RAWIO is effective (writes may still be refused under
    /// lockdown, see [`Self::msr_writes_locked_down`]).
    pub fn may_use_msr_device(&self) -> bool {
        !self.msr_devices.is_empty() && self.cap_sys_rawio.unwrap_or(self.is_root() == Some(true))
    }

    /// Kernel lockdown forbids MSR writes (`integrity` or `confidentiality`).
    pub fn msr_writes_locked_down(&self) -> bool {
        matches!(
            self.lockdown.as_deref(),
            Some("integrity" | "confidentiality")
        )
    }
}

/// What a `perf_event_paranoid` level means for users without CAP_PERFMON.
pub fn paranoid_meaning(level: i64) -> &'static str {
    match level {
        i64::MIN..=-1 => "no restrictions: any user may count anything, kernel and CPU-wide",
        0 => "any user may count kernel and CPU-wide, but not raw tracepoint data",
        1 => "any user may count user and kernel space of their own processes, not CPU-wide",
        2 => "any user may count only user space of their own processes",
        _ => "perf_event_open is forbidden to users without CAP_PERFMON (Debian and Ubuntu kernels; a vanilla kernel treats this like 2)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileges_follow_the_kernel_rules() {
        let user = Access {
            perf_event_paranoid: Some(2),
            euid: Some(1000),
            cap_eff: Some(0),
            cap_perfmon: Some(false),
            cap_sys_admin: Some(false),
            cap_sys_rawio: Some(false),
            msr_devices: vec![0, 1],
            ..Access::default()
        };
        assert!(!user.perfmon_capable());
        assert!(user.may_open_events() && !user.may_count_kernel());
        assert!(!user.may_count_system_wide() && !user.may_probe());
        assert!(!user.may_use_msr_device());
        let relaxed = Access {
            perf_event_paranoid: Some(-1),
            ..user.clone()
        };
        assert!(relaxed.may_count_kernel() && relaxed.may_count_system_wide());
        let locked = Access {
            perf_event_paranoid: Some(4),
            ..user.clone()
        };
        assert!(!locked.may_open_events());
        let perfmon = Access {
            cap_perfmon: Some(true),
            ..locked.clone()
        };
        assert!(perfmon.may_open_events() && perfmon.may_count_system_wide());
        // Root whose capabilities were dropped is not privileged.
        let root_no_caps = Access {
            euid: Some(0),
            ..user.clone()
        };
        assert!(!root_no_caps.perfmon_capable());
        // No capability data: root counts as privileged.
        let root_unknown = Access {
            euid: Some(0),
            ..Access::default()
        };
        assert!(root_unknown.perfmon_capable() && !root_unknown.may_use_msr_device());
    }

    #[test]
    fn meanings() {
        assert!(paranoid_meaning(2).contains("only user space"));
        assert!(paranoid_meaning(4).contains("forbidden"));
        assert!(paranoid_meaning(-1).contains("no restrictions"));
        assert_eq!(
            Rdpmc {
                pmu: "cpu".into(),
                value: 2
            }
            .meaning(),
            "user-space rdpmc allowed for every task"
        );
    }
}
