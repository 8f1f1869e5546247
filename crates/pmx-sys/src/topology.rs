//! Reading the topology from `sys/devices/system/cpu`.
//!
//! For each `cpuN` directory: `topology/core_id`, `topology/die_id`,
//! `topology/physical_package_id` and `topology/thread_siblings_list`
//! (`core_cpus_list` on newer kernels says the same). Which CPUs are online
//! comes from `sys/devices/system/cpu/online`, else from `cpuN/online`, else
//! a CPU counts as online (cpu0 often has no `online` file). The kernel
//! removes `topology/` of an offline CPU, so its place stays unknown.

use crate::root::{parse_i64, Problem, SysRoot};
use pmx_model::topology::{parse_cpu_list, LogicalCpu, Topology};

/// Where the kernel lists CPUs, relative to the root.
pub const CPU_DIR: &str = "sys/devices/system/cpu";

/// Read the topology under `root`.
pub fn read_topology(root: &SysRoot, problems: &mut Vec<Problem>) -> Topology {
    let online_list = read_cpu_list(root, &format!("{CPU_DIR}/online"), problems);
    let mut numbers: Vec<u32> = root
        .list(CPU_DIR, problems)
        .iter()
        .filter_map(|name| name.strip_prefix("cpu"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse().ok())
        .collect();
    if numbers.is_empty() {
        // No per-CPU directories: the online list is all there is.
        numbers = online_list.clone().unwrap_or_default();
    }
    let cpus = numbers
        .into_iter()
        .map(|cpu| {
            let dir = format!("{CPU_DIR}/cpu{cpu}");
            let online = match &online_list {
                Some(list) => list.contains(&cpu),
                None => {
                    root.read_parsed(&format!("{dir}/online"), "0 or 1", problems, parse_i64)
                        != Some(0)
                }
            };
            // -1 means "unknown" to the kernel.
            let id = |file: &str, problems: &mut Vec<Problem>| {
                root.read_parsed(
                    &format!("{dir}/topology/{file}"),
                    "a number",
                    problems,
                    parse_i64,
                )
                .and_then(|n| u32::try_from(n).ok())
            };
            let core = id("core_id", problems);
            let die = id("die_id", problems);
            let package = id("physical_package_id", problems);
            let siblings = ["thread_siblings_list", "core_cpus_list"]
                .iter()
                .find_map(|f| read_cpu_list(root, &format!("{dir}/topology/{f}"), problems))
                .unwrap_or_default();
            LogicalCpu {
                cpu,
                online,
                core,
                die,
                package,
                siblings,
                node: node_of(root, &dir),
                caches: caches_of(root, &dir),
            }
        })
        .collect();
    Topology::new(cpus)
}

/// The NUMA node of the CPU in `dir`: its `nodeN` link.
fn node_of(root: &SysRoot, dir: &str) -> Option<u32> {
    root.list(dir, &mut Vec::new())
        .iter()
        .filter_map(|n| n.strip_prefix("node")?.parse().ok())
        .next()
}

/// The data and unified caches of the CPU in `dir` as (level, id); the
/// id is the kernel's `id`, else the first CPU sharing the cache.
fn caches_of(root: &SysRoot, dir: &str) -> Vec<(u8, u32)> {
    let mut quiet = Vec::new();
    let mut out: Vec<(u8, u32)> = Vec::new();
    for index in root.list(&format!("{dir}/cache"), &mut quiet) {
        let at = format!("{dir}/cache/{index}");
        let mut problems = Vec::new();
        let mut text = |f: &str| root.read(&format!("{at}/{f}"), &mut problems);
        if !index.starts_with("index") || text("type").as_deref() == Some("Instruction") {
            continue;
        }
        let Some(level) = text("level").and_then(|l| l.parse::<u8>().ok()) else {
            continue;
        };
        let id = text("id").and_then(|i| i.parse::<u32>().ok()).or_else(|| {
            read_cpu_list(root, &format!("{at}/shared_cpu_list"), &mut quiet)?
                .first()
                .copied()
        });
        if let (Some(id), false) = (id, out.iter().any(|c| c.0 == level)) {
            out.push((level, id));
        }
    }
    out.sort_unstable();
    out
}

/// Read a kernel CPU-list file; a list that does not parse is a problem.
pub fn read_cpu_list(root: &SysRoot, rel: &str, problems: &mut Vec<Problem>) -> Option<Vec<u32>> {
    let text = root.read(rel, problems)?;
    match parse_cpu_list(&text) {
        Ok(list) => Some(list),
        Err(e) => {
            problems.push(Problem {
                path: rel.to_string(),
                message: e.to_string(),
            });
            None
        }
    }
}
