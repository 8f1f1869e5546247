//! The machine's topology as a perf.data header keeps it, both ways: the
//! `CPU_TOPOLOGY` feature (the package, core and thread sibling lists,
//! then each CPU's core and socket id, then the die sibling lists and each
//! CPU's die id; perf 6.1's layout, one entry per CPU of `NRCPUS`'
//! "available" count) and `NUMA_TOPOLOGY` (per node its number, memory
//! total and free in KiB, and its CPU list).
//!
//! `perf stat report --per-core/--per-socket/--per-die/--per-node` folds
//! a file's per-CPU counts with these; [`CpuIds`] and [`NumaNode`] are
//! what it needs of them. A node's CPU list is read with
//! `pmx_model::topology::parse_cpu_list`, the one reader of the kernel's
//! list syntax (a list it refuses makes the body malformed).

use crate::read::Cur;
use crate::write::perf_string;
use pmx_model::topology::parse_cpu_list;

/// One CPU's place: core, die and socket ids (`-1`: unknown, as perf
/// writes for a CPU that is offline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuIds {
    /// Core id within its die.
    pub core: i32,
    /// Die id within its socket.
    pub die: i32,
    /// Socket (package) id.
    pub socket: i32,
}

/// One NUMA node of `NUMA_TOPOLOGY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// The node's number.
    pub node: u32,
    /// Memory in KiB.
    pub mem_total: u64,
    /// Free memory in KiB.
    pub mem_free: u64,
    /// Its CPUs.
    pub cpus: Vec<u32>,
}

/// `n` strings after their count (the sibling lists).
fn strings(c: &mut Cur) -> Option<Vec<String>> {
    let n = c.u32("sibling lists").ok()?;
    (0..n).map(|_| c.string("sibling list").ok()).collect()
}

/// A CPU list as the kernel and perf write it (`0-3,8`): pmx-model's
/// one writer of the form.
pub use pmx_model::topology::format_cpu_list as cpu_list_text;

/// The ids of each CPU (index = CPU number) in a `CPU_TOPOLOGY` body;
/// `nr_cpus`: the file's `NRCPUS` "available" count, the number of
/// entries perf wrote. A body from an old perf without the ids gives
/// `None`; without the die section (older files) every die id is 0.
pub fn parse_cpu_topology(body: &[u8], nr_cpus: u32) -> Option<Vec<CpuIds>> {
    let mut c = Cur::new(body, 0);
    strings(&mut c)?; // package (core) siblings
    strings(&mut c)?; // thread siblings
    if c.rest() < nr_cpus as usize * 8 {
        return None;
    }
    let mut cpus = Vec::with_capacity(nr_cpus as usize);
    for _ in 0..nr_cpus {
        let core = c.u32("core id").ok()? as i32;
        let socket = c.u32("socket id").ok()? as i32;
        cpus.push(CpuIds {
            core,
            die: 0,
            socket,
        });
    }
    if c.rest() > 0 && strings(&mut c).is_some() && c.rest() >= nr_cpus as usize * 4 {
        for ids in cpus.iter_mut() {
            ids.die = c.u32("die id").ok()? as i32;
        }
    }
    Some(cpus)
}

/// A `CPU_TOPOLOGY` body for `cpus` (index = CPU number; one entry per
/// CPU of `NRCPUS`' available count), as perf 6.1 writes it: the sibling
/// lists of packages, cores (thread siblings) and dies, each list once.
pub fn cpu_topology(cpus: &[CpuIds]) -> Vec<u8> {
    let lists = |key: &dyn Fn(&CpuIds) -> (i32, i32, i32)| {
        let mut seen: Vec<((i32, i32, i32), Vec<u32>)> = Vec::new();
        for (n, ids) in cpus.iter().enumerate().filter(|(_, c)| c.socket >= 0) {
            let k = key(ids);
            match seen.iter_mut().find(|(s, _)| *s == k) {
                Some((_, v)) => v.push(n as u32),
                None => seen.push((k, vec![n as u32])),
            }
        }
        let mut b = (seen.len() as u32).to_le_bytes().to_vec();
        for (_, v) in &seen {
            b.extend(perf_string(&cpu_list_text(v)));
        }
        b
    };
    let mut b = lists(&|c| (c.socket, 0, 0));
    b.extend(lists(&|c| (c.socket, c.die, c.core)));
    for c in cpus {
        b.extend_from_slice(&(c.core as u32).to_le_bytes());
        b.extend_from_slice(&(c.socket as u32).to_le_bytes());
    }
    b.extend(lists(&|c| (c.socket, c.die, 0)));
    for c in cpus {
        b.extend_from_slice(&(c.die as u32).to_le_bytes());
    }
    b
}

/// The nodes of a `NUMA_TOPOLOGY` body; `None` when it is malformed.
pub fn parse_numa_topology(body: &[u8]) -> Option<Vec<NumaNode>> {
    let mut c = Cur::new(body, 0);
    let n = c.u32("nodes").ok()?;
    let mut nodes = Vec::new();
    for _ in 0..n {
        let node = c.u32("node").ok()?;
        let mem_total = c.u64("memory").ok()?;
        let mem_free = c.u64("free memory").ok()?;
        let cpus = parse_cpu_list(&c.string("cpu list").ok()?).ok()?;
        nodes.push(NumaNode {
            node,
            mem_total,
            mem_free,
            cpus,
        });
    }
    Some(nodes)
}

/// A `NUMA_TOPOLOGY` body for `nodes`.
pub fn numa_topology(nodes: &[NumaNode]) -> Vec<u8> {
    let mut b = (nodes.len() as u32).to_le_bytes().to_vec();
    for n in nodes {
        b.extend_from_slice(&n.node.to_le_bytes());
        b.extend_from_slice(&n.mem_total.to_le_bytes());
        b.extend_from_slice(&n.mem_free.to_le_bytes());
        b.extend(perf_string(&cpu_list_text(&n.cpus)));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_both_ways() {
        assert_eq!(cpu_list_text(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        let back = parse_cpu_list(&cpu_list_text(&[3, 0, 1, 2, 8, 10, 11])).unwrap();
        assert_eq!(back, [0, 1, 2, 3, 8, 10, 11]);
    }

    #[test]
    fn topology_bodies_round_trip_and_bad_ones_are_none() {
        // Two sockets of two cores, the second CPU of each core its SMT
        // sibling; CPU 8 offline.
        let id = |socket, core| CpuIds {
            core,
            die: 0,
            socket,
        };
        let mut cpus = vec![id(0, 0), id(0, 1), id(1, 0), id(1, 1)];
        cpus.extend([id(0, 0), id(0, 1), id(1, 0), id(1, 1)]);
        cpus.push(CpuIds {
            core: -1,
            die: -1,
            socket: -1,
        });
        let body = cpu_topology(&cpus);
        assert_eq!(parse_cpu_topology(&body, 9), Some(cpus.clone()));
        // The lists: "0-1,4-5" and "2-3,6-7" for the packages.
        let mut c = Cur::new(&body, 0);
        assert_eq!(
            strings(&mut c),
            Some(vec!["0-1,4-5".into(), "2-3,6-7".into()])
        );
        assert_eq!(strings(&mut c).map(|s| s.len()), Some(4));
        assert_eq!(parse_cpu_topology(&body[..40], 9), None);
        let nodes = vec![NumaNode {
            node: 0,
            mem_total: 1 << 20,
            mem_free: 1 << 19,
            cpus: vec![0, 1],
        }];
        let body = numa_topology(&nodes);
        assert_eq!(parse_numa_topology(&body), Some(nodes));
        assert_eq!(parse_numa_topology(&body[..10]), None);
    }
}
