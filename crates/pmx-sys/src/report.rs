//! One report about the machine, and a verdict in plain words.
//!
//! [`MachineReport::gather`] reads everything the other modules know how to
//! read — CPUID, the kernel's PMUs, the topology, the access rights — and
//! derives a [`Verdict`] from those facts alone: hardware counters are usable
//! when the kernel registered a core PMU; when it did not, the verdict says
//! what the data shows (a hypervisor bit, CPUID describing no PMU) and which
//! of the PMUs that are there this user can still use.

use crate::access::Access;
use crate::caps::PmuCaps;
use crate::cpuid::{CpuidSource, NativeCpuid};
use crate::hidden::{amd_hidden, HiddenFeature};
use crate::pmu::{read_pmus, KernelPmu};
use crate::root::{Problem, SysRoot};
use crate::topology::read_topology;
use pmx_model::topology::{format_cpu_list, Topology};
use serde::Serialize;

/// Everything pmx knows about the machine.
#[derive(Debug, Clone, Serialize)]
pub struct MachineReport {
    /// CPU identity and PMU as CPUID describes them; `None` without CPUID.
    pub cpu: Option<PmuCaps>,
    /// The kernel's PMUs, sorted by name.
    pub kernel_pmus: Vec<KernelPmu>,
    /// CPUs, cores, packages.
    pub topology: TopologyReport,
    /// What this user may do.
    pub access: Access,
    /// The conclusion.
    pub verdict: Verdict,
    /// AMD PMU features the microarchitecture has that CPUID or the kernel
    /// hides ([`crate::hidden::amd_hidden`]); empty elsewhere.
    pub hidden: Vec<HiddenFeature>,
    /// Files that could not be read or parsed (the facts they hold are
    /// reported as unknown).
    pub problems: Vec<Problem>,
}

/// The topology with its counts.
#[derive(Debug, Clone, Serialize)]
pub struct TopologyReport {
    /// Online CPUs in kernel list form (`0-7`).
    pub online: String,
    /// CPUs the kernel knows.
    pub cpu_count: usize,
    /// CPUs online.
    pub online_count: usize,
    /// Cores with an online CPU.
    pub core_count: usize,
    /// Packages with an online CPU.
    pub package_count: usize,
    /// Most hardware threads on one core.
    pub threads_per_core: Option<usize>,
    /// The CPUs themselves.
    #[serde(flatten)]
    pub topology: Topology,
}

impl TopologyReport {
    /// Counts for `topology`.
    pub fn new(topology: Topology) -> TopologyReport {
        TopologyReport {
            online: format_cpu_list(&topology.online_cpus()),
            cpu_count: topology.cpu_count(),
            online_count: topology.online_count(),
            core_count: topology.core_count(),
            package_count: topology.package_count(),
            threads_per_core: topology.threads_per_core(),
            topology,
        }
    }
}

/// What the facts add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The kernel exposes hardware counters (a core PMU is registered).
    pub hardware_counters: bool,
    /// The core PMUs (`cpu`, or `cpu_core` and `cpu_atom`).
    pub core_pmus: Vec<String>,
    /// Other PMUs this user can use with the current privileges.
    pub usable_pmus: Vec<String>,
    /// Other PMUs that need more privilege (or a lower paranoid level).
    pub restricted_pmus: Vec<String>,
    /// One line in plain words.
    pub summary: String,
}

impl MachineReport {
    /// Gather the report from a CPUID source and a file-system root.
    pub fn gather(cpuid: &dyn CpuidSource, root: &SysRoot) -> MachineReport {
        let mut problems = Vec::new();
        let cpu = PmuCaps::decode(cpuid);
        let kernel_pmus = read_pmus(root, &mut problems);
        let topology = TopologyReport::new(read_topology(root, &mut problems));
        let access = Access::read(root, &mut problems);
        let verdict = Verdict::derive(cpu.as_ref(), &kernel_pmus, &access);
        let hidden = cpu
            .as_ref()
            .map(|c| amd_hidden(c, &kernel_pmus))
            .unwrap_or_default();
        MachineReport {
            hidden,
            cpu,
            kernel_pmus,
            topology,
            access,
            verdict,
            problems,
        }
    }

    /// The report for the machine this runs on.
    pub fn this_machine() -> MachineReport {
        MachineReport::gather(&NativeCpuid, &SysRoot::host())
    }

    /// The kernel PMU called `name`.
    pub fn pmu(&self, name: &str) -> Option<&KernelPmu> {
        self.kernel_pmus.iter().find(|p| p.name == name)
    }
}

/// What a PMU needs before a user may open its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Per-task counting in user space is enough.
    PerTask,
    /// Its events cannot exclude the kernel (`msr`), so kernel counting must
    /// be allowed.
    Kernel,
    /// Only CPU-wide events (uncore, RAPL, C-states, …).
    SystemWide,
    /// kprobe/uprobe: CAP_PERFMON always.
    Privilege,
}

fn needs(pmu: &str) -> Needs {
    match pmu {
        "software" | "breakpoint" | "tracepoint" | "intel_pt" | "intel_bts" | "ibs_op"
        | "ibs_fetch" | "cpu" | "cpu_core" | "cpu_atom" => Needs::PerTask,
        "msr" => Needs::Kernel,
        "kprobe" | "uprobe" => Needs::Privilege,
        _ => Needs::SystemWide,
    }
}

fn usable(needs: Needs, access: &Access) -> bool {
    access.may_open_events()
        && match needs {
            Needs::PerTask => true,
            Needs::Kernel => access.may_count_kernel(),
            Needs::SystemWide => access.may_count_system_wide(),
            Needs::Privilege => access.may_probe(),
        }
}

/// The order PMUs are named in the verdict: the always-there ones first.
const PREFERRED_ORDER: [&str; 6] = [
    "software",
    "msr",
    "breakpoint",
    "tracepoint",
    "kprobe",
    "uprobe",
];

fn verdict_order(name: &str) -> (usize, &str) {
    let rank = PREFERRED_ORDER
        .iter()
        .position(|&p| p == name)
        .unwrap_or(PREFERRED_ORDER.len());
    (rank, name)
}

/// Numbered PMUs folded into one name: `uncore_cbox_0` … `uncore_cbox_3`
/// become `uncore_cbox_{0-3}`; order is kept, by first appearance.
fn fold_numbered(names: &[String]) -> Vec<String> {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for name in names {
        let split = name
            .rsplit_once('_')
            .and_then(|(prefix, n)| Some((prefix, n.parse::<u32>().ok()?)));
        match split {
            Some((prefix, n)) => match groups
                .iter_mut()
                .find(|(p, ns)| p == prefix && !ns.is_empty())
            {
                Some((_, numbers)) => numbers.push(n),
                None => groups.push((prefix.to_string(), vec![n])),
            },
            None => groups.push((name.clone(), Vec::new())),
        }
    }
    groups
        .into_iter()
        .map(|(prefix, numbers)| match numbers.as_slice() {
            [] => prefix,
            [one] => format!("{prefix}_{one}"),
            _ => format!("{prefix}_{{{}}}", format_cpu_list(&numbers)),
        })
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn forbidden_note(access: &Access) -> String {
    format!(
        "perf_event_open is forbidden to this user ({}, as Debian and Ubuntu kernels read it)",
        paranoid_note(access)
    )
}

fn paranoid_note(access: &Access) -> String {
    match access.perf_event_paranoid {
        Some(level) => format!("perf_event_paranoid={level}"),
        None => "perf_event_paranoid unknown".to_string(),
    }
}

impl Verdict {
    /// Derive the verdict from the facts.
    pub fn derive(cpu: Option<&PmuCaps>, pmus: &[KernelPmu], access: &Access) -> Verdict {
        let core_pmus: Vec<String> = pmus
            .iter()
            .filter(|p| p.is_core())
            .map(|p| p.name.clone())
            .collect();
        let mut others: Vec<&str> = pmus
            .iter()
            .filter(|p| !p.is_core())
            .map(|p| p.name.as_str())
            .collect();
        others.sort_by_key(|n| verdict_order(n));
        let (usable_pmus, restricted_pmus): (Vec<String>, Vec<String>) = {
            let (u, r): (Vec<&str>, Vec<&str>) =
                others.iter().partition(|n| usable(needs(n), access));
            (
                u.into_iter().map(String::from).collect(),
                r.into_iter().map(String::from).collect(),
            )
        };
        let hardware_counters = !core_pmus.is_empty();
        let forbidden = !access.may_open_events();

        let summary = if hardware_counters {
            let names: Vec<String> = core_pmus.iter().map(|n| format!("`{n}`")).collect();
            let mut s = format!(
                "hardware counters are available through the {} PMU{}",
                join_words(&names),
                if names.len() > 1 { "s" } else { "" }
            );
            if let Some(c) = cpu.and_then(|c| c.counters) {
                s += &format!(
                    " ({} general-purpose counter{} of {} bits",
                    c.general,
                    if c.general == 1 { "" } else { "s" },
                    c.general_width
                );
                if c.fixed > 0 {
                    s += &format!(" and {} fixed of {} bits", c.fixed, c.fixed_width);
                }
                s += " per CPU)";
            }
            s += &if forbidden {
                format!(", but {}", forbidden_note(access))
            } else if access.perfmon_capable() {
                ": you may count user and kernel space, per task and CPU-wide".to_string()
            } else if access.may_count_system_wide() {
                format!(
                    ": you may count user and kernel space, per task and CPU-wide ({})",
                    paranoid_note(access)
                )
            } else if access.may_count_kernel() {
                format!(
                    ": you may count user and kernel space of your own processes, not CPU-wide ({})",
                    paranoid_note(access)
                )
            } else {
                format!(
                    ": you may count only user space of your own processes ({}; CAP_PERFMON lifts this)",
                    paranoid_note(access)
                )
            };
            if access.nmi_watchdog == Some(true) {
                s += "; the NMI watchdog holds one counter on every CPU";
            }
            s
        } else {
            let virtual_machine = cpu.is_some_and(|c| c.hypervisor.is_some());
            let mut s = if virtual_machine {
                "hardware counters are not exposed on this virtual machine".to_string()
            } else {
                "hardware counters are not available".to_string()
            };
            let mut reasons = vec!["no `cpu` PMU in sysfs".to_string()];
            match cpu {
                Some(c) => match c.counters {
                    None => reasons.push("CPUID reports no PMU".to_string()),
                    Some(n) => reasons.push(format!(
                        "although CPUID describes {} counters",
                        n.general + n.fixed
                    )),
                },
                None => reasons.push("no CPUID on this architecture".to_string()),
            }
            s += &format!(" ({})", reasons.join(", "));
            s += &if forbidden {
                format!(": {}", forbidden_note(access))
            } else if usable_pmus.is_empty() {
                ": no PMU is usable".to_string()
            } else {
                format!(": {} events work", join_words(&fold_numbered(&usable_pmus)))
            };
            s
        };
        let summary = if !forbidden && !restricted_pmus.is_empty() {
            let folded = fold_numbered(&restricted_pmus);
            format!(
                "{summary}; {} need{} CAP_PERFMON or a lower perf_event_paranoid",
                join_words(&folded),
                if restricted_pmus.len() == 1 { "s" } else { "" }
            )
        } else {
            summary
        };
        Verdict {
            hardware_counters,
            core_pmus,
            usable_pmus,
            restricted_pmus,
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::{CoreCounters, Hypervisor};
    use pmx_model::cpu::CpuId;

    fn pmu(name: &str) -> KernelPmu {
        KernelPmu {
            name: name.into(),
            type_id: None,
            format: vec![],
            events: vec![],
            cpumask: None,
            caps: Default::default(),
        }
    }

    fn caps(hypervisor: bool, counters: Option<CoreCounters>) -> PmuCaps {
        let cpu: CpuId = "AuthenticAMD-25-11-1".parse().unwrap();
        PmuCaps {
            vendor: cpu.vendor.clone(),
            key: cpu.to_string(),
            microarch: cpu.microarch(),
            cpu,
            brand: None,
            max_leaf: 0x10,
            max_ext_leaf: 0x8000_0021,
            hypervisor: hypervisor.then(|| Hypervisor {
                signature: "KVMKVMKVM".into(),
                name: "KVM".into(),
                max_leaf: 0x4000_0001,
            }),
            hybrid: false,
            intel: None,
            amd: None,
            counters,
            no_counters_reason: None,
        }
    }

    fn root_access() -> Access {
        Access {
            perf_event_paranoid: Some(2),
            euid: Some(0),
            cap_eff: Some(0x1ff_feff_ffff),
            cap_perfmon: Some(true),
            cap_sys_admin: Some(true),
            cap_sys_rawio: Some(true),
            ..Access::default()
        }
    }

    fn vm_pmus() -> Vec<KernelPmu> {
        ["breakpoint", "msr", "software", "tracepoint", "uprobe"]
            .map(pmu)
            .to_vec()
    }

    #[test]
    fn vm_without_pmu_as_root() {
        let v = Verdict::derive(Some(&caps(true, None)), &vm_pmus(), &root_access());
        assert!(!v.hardware_counters);
        assert_eq!(
            v.summary,
            "hardware counters are not exposed on this virtual machine (no `cpu` PMU in sysfs, \
             CPUID reports no PMU): software, msr, breakpoint, tracepoint and uprobe events work"
        );
        assert!(v.restricted_pmus.is_empty());
    }

    #[test]
    fn vm_without_pmu_as_user() {
        let user = Access {
            euid: Some(1000),
            cap_eff: Some(0),
            cap_perfmon: Some(false),
            cap_sys_admin: Some(false),
            cap_sys_rawio: Some(false),
            ..root_access()
        };
        let v = Verdict::derive(Some(&caps(true, None)), &vm_pmus(), &user);
        assert_eq!(v.usable_pmus, vec!["software", "breakpoint", "tracepoint"]);
        assert_eq!(v.restricted_pmus, vec!["msr", "uprobe"]);
        assert!(v.summary.ends_with(
            "software, breakpoint and tracepoint events work; msr and uprobe need CAP_PERFMON or a lower perf_event_paranoid"
        ), "{}", v.summary);
        let locked = Access {
            perf_event_paranoid: Some(4),
            ..user
        };
        let v = Verdict::derive(Some(&caps(true, None)), &vm_pmus(), &locked);
        assert!(
            v.summary
                .ends_with("perf_event_open is forbidden to this user (perf_event_paranoid=4, as Debian and Ubuntu kernels read it)"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn bare_metal_with_core_pmu() {
        let counters = CoreCounters {
            general: 4,
            general_width: 48,
            fixed: 3,
            fixed_width: 48,
            source: "CPUID 0xA",
        };
        let mut pmus = vm_pmus();
        pmus.push(pmu("cpu"));
        let access = Access {
            nmi_watchdog: Some(true),
            ..root_access()
        };
        let v = Verdict::derive(Some(&caps(false, Some(counters))), &pmus, &access);
        assert!(v.hardware_counters);
        assert_eq!(
            v.summary,
            "hardware counters are available through the `cpu` PMU (4 general-purpose counters \
             of 48 bits and 3 fixed of 48 bits per CPU): you may count user and kernel space, per \
             task and CPU-wide; the NMI watchdog holds one counter on every CPU"
        );
    }

    #[test]
    fn no_pmu_without_hypervisor_and_no_cpuid() {
        let v = Verdict::derive(None, &[pmu("software")], &root_access());
        assert_eq!(
            v.summary,
            "hardware counters are not available (no `cpu` PMU in sysfs, no CPUID on this \
             architecture): software events work"
        );
        let counters = CoreCounters {
            general: 6,
            general_width: 48,
            fixed: 0,
            fixed_width: 0,
            source: "PerfCtrExtCore",
        };
        let v = Verdict::derive(Some(&caps(false, Some(counters))), &[], &root_access());
        assert_eq!(
            v.summary,
            "hardware counters are not available (no `cpu` PMU in sysfs, although CPUID \
             describes 6 counters): no PMU is usable"
        );
    }

    #[test]
    fn numbered_pmus_fold() {
        let names: Vec<String> = [
            "msr",
            "uncore_cbox_0",
            "uncore_cbox_1",
            "uncore_cbox_3",
            "uncore_imc",
            "uncore_imc_0",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            fold_numbered(&names),
            vec!["msr", "uncore_cbox_{0-1,3}", "uncore_imc", "uncore_imc_0"]
        );
    }

    #[test]
    fn join() {
        let w = |v: &[&str]| join_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&[]), "");
        assert_eq!(w(&["a"]), "a");
        assert_eq!(w(&["a", "b"]), "a and b");
        assert_eq!(w(&["a", "b", "c"]), "a, b and c");
    }
}
