//! Why a row cannot run, in one sentence with its fix: from what the
//! kernel says at run time (which PMUs sysfs lists, the open failure,
//! the NMI watchdog, `perf_event_paranoid`, how long a counter ran),
//! never from the vendor or from "this is a VM".

use std::path::{Path, PathBuf};

/// What the machine says about its counters, read once.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// The PMUs sysfs lists.
    pub pmus: Vec<String>,
    /// `/proc/sys/kernel/nmi_watchdog` is 1.
    pub nmi_watchdog: bool,
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// CPUID's hypervisor bit (`hypervisor` in `/proc/cpuinfo`'s flags).
    pub hypervisor: bool,
    /// The core types of a hybrid CPU: (PMU, its CPUs); empty otherwise.
    pub core_types: Vec<(String, Vec<u32>)>,
}

impl Machine {
    /// Read under `root` (`/` on a live system).
    pub fn read(root: &Path) -> Machine {
        let devices = root.join("sys/bus/event_source/devices");
        let mut pmus: Vec<String> = std::fs::read_dir(&devices)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        pmus.sort();
        let text = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        let flags = text(root.join("proc/cpuinfo"));
        let flags = flags.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        let core_types = ["cpu_core", "cpu_atom"]
            .iter()
            .filter(|p| pmus.iter().any(|q| q == *p))
            .filter_map(|p| {
                let cpus = text(devices.join(p).join("cpus"));
                let cpus = pmx_model::topology::parse_cpu_list(cpus.trim()).ok()?;
                Some((p.to_string(), cpus))
            })
            .collect();
        Machine {
            nmi_watchdog: text(root.join("proc/sys/kernel/nmi_watchdog")).trim() == "1",
            paranoid: text(root.join("proc/sys/kernel/perf_event_paranoid"))
                .trim()
                .parse()
                .ok(),
            hypervisor: flags.split_whitespace().any(|f| f == "hypervisor"),
            pmus,
            core_types,
        }
    }

    /// A core PMU is listed (`cpu`, `cpu_core`, `cpu_atom`, Arm's).
    pub fn has_core_pmu(&self) -> bool {
        self.pmus
            .iter()
            .any(|n| pmx_model::encoding::is_core_pmu(n) || n.starts_with("armv"))
    }

    /// Why a hardware event gave no value (`failure`: what the open or
    /// the read said).
    pub fn no_value(&self, failure: &str) -> String {
        if !self.has_core_pmu() {
            let mut s = String::from(
                "not supported here: the kernel exposes no hardware PMU (no cpu PMU under /sys/bus/event_source/devices)",
            );
            if self.hypervisor {
                s.push_str(", as under a hypervisor that does not pass one through (KVM: -cpu host,pmu=on; in a cloud, an instance type with a virtual PMU)");
            }
            return s;
        }
        let mut s = format!("not counted: {failure}");
        if self.paranoid.is_some_and(|p| p > 2) && !is_root() {
            s.push_str(&format!(
                "; perf_event_paranoid is {} (run as root, or sysctl kernel.perf_event_paranoid=2)",
                self.paranoid.unwrap_or_default()
            ));
        }
        s
    }

    /// Why a count that ran only `share` of the time cannot be checked.
    pub fn multiplexed(&self, share: f64) -> String {
        let mut s = format!(
            "multiplexed: the counter ran {:.0}% of the time, so the count is an estimate",
            share * 100.0
        );
        if self.nmi_watchdog {
            s.push_str(
                "; the NMI watchdog holds a counter (sysctl kernel.nmi_watchdog=0 frees it)",
            );
        } else {
            s.push_str("; another user holds the counters (perf, a profiler, a monitoring agent)");
        }
        s
    }

    /// A system-wide box family is listed (`prefix` followed by a number
    /// or nothing).
    pub fn boxes(&self, prefix: &str) -> Vec<String> {
        self.pmus
            .iter()
            .filter(|p| {
                p.strip_prefix(prefix).is_some_and(|rest| {
                    rest.is_empty()
                        || rest
                            .trim_start_matches('_')
                            .chars()
                            .all(|c| c.is_ascii_digit())
                })
            })
            .cloned()
            .collect()
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
