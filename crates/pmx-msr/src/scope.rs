//! Scopes resolved with the topology: which CPU reads a register for which
//! domain.
//!
//! A thread-scope register is read on every selected CPU. A core- or
//! package-scope register exists once per core or package: reading it on
//! every CPU would report the same value several times (and add it up
//! several times in a total), so [`domains`] groups the selected CPUs by
//! core or package and names one CPU per group to read it from — the
//! lowest-numbered selected CPU of the group, which with `-a` is the
//! group's first online CPU. A CPU the topology does not place (no
//! `topology/` directory) forms a domain of its own.

use crate::catalogue::Scope;
use pmx_model::topology::{CoreKey, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// One domain of a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "scope", rename_all = "lowercase")]
pub enum DomainId {
    /// A logical CPU (thread scope, or a CPU the topology does not place).
    Cpu {
        /// The CPU.
        cpu: u32,
    },
    /// A physical core.
    Core {
        /// The core.
        core: CoreKey,
    },
    /// A package.
    Package {
        /// The package.
        package: u32,
    },
}

impl fmt::Display for DomainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DomainId::Cpu { cpu } => write!(f, "cpu {cpu}"),
            DomainId::Core { core } => {
                write!(f, "core {}:{}:{}", core.package, core.die, core.core)
            }
            DomainId::Package { package } => write!(f, "package {package}"),
        }
    }
}

/// A domain, the CPU to access it through, and the selected CPUs in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Domain {
    /// Which domain.
    pub id: DomainId,
    /// The CPU that reads or writes the domain's register.
    pub cpu: u32,
    /// The selected CPUs that belong to it, ascending.
    pub cpus: Vec<u32>,
}

/// The domains of `scope` that the selected `cpus` cover, in order of their
/// first CPU.
pub fn domains(scope: Scope, cpus: &[u32], topology: &Topology) -> Vec<Domain> {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut groups: BTreeMap<DomainId, Vec<u32>> = BTreeMap::new();
    let mut order: Vec<DomainId> = Vec::new();
    for cpu in sorted {
        let place = topology.cpu(cpu);
        let id = match scope {
            Scope::Thread => None,
            Scope::Core => place
                .and_then(|c| c.core_key())
                .map(|core| DomainId::Core { core }),
            Scope::Package => place
                .and_then(|c| c.package)
                .map(|package| DomainId::Package { package }),
        }
        .unwrap_or(DomainId::Cpu { cpu });
        let members = groups.entry(id).or_default();
        if members.is_empty() {
            order.push(id);
        }
        members.push(cpu);
    }
    order
        .into_iter()
        .map(|id| {
            let cpus = groups.remove(&id).unwrap_or_default();
            Domain {
                id,
                cpu: cpus.first().copied().unwrap_or(0),
                cpus,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmx_model::topology::LogicalCpu;

    fn two_packages() -> Topology {
        // cpu: package, core; SMT siblings n and n+4.
        let mut cpus = Vec::new();
        for (cpu, package, core) in [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)] {
            cpus.push(LogicalCpu::new(cpu, package, 0, core));
            cpus.push(LogicalCpu::new(cpu + 4, package, 0, core));
        }
        Topology::new(cpus)
    }

    #[test]
    fn one_domain_per_package_and_core() {
        let t = two_packages();
        let all: Vec<u32> = (0..8).collect();
        let p = domains(Scope::Package, &all, &t);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].cpu, p[0].cpus.clone()), (0, vec![0, 1, 4, 5]));
        assert_eq!((p[1].cpu, p[1].cpus.clone()), (2, vec![2, 3, 6, 7]));
        let c = domains(Scope::Core, &all, &t);
        assert_eq!(c.len(), 4);
        assert_eq!(c[3].cpus, vec![3, 7]);
        assert_eq!(domains(Scope::Thread, &all, &t).len(), 8);
        // Only CPUs of package 1 selected, unsorted: read from the lowest.
        let p = domains(Scope::Package, &[7, 3], &t);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].cpu, 3);
        assert_eq!(p[0].id.to_string(), "package 1");
    }

    #[test]
    fn unplaced_cpus_are_their_own_domain() {
        let t = Topology::default();
        let p = domains(Scope::Package, &[0, 1], &t);
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].id, DomainId::Cpu { cpu: 1 });
    }
}
