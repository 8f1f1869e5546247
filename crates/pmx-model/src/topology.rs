//! The machine's topology: logical CPU → core → die → package, and each
//! CPU's NUMA node and caches.
//!
//! A [`Topology`] is a list of [`LogicalCpu`]s, one per CPU number the kernel
//! knows (`/sys/devices/system/cpu/cpuN`), each with the core, die and package
//! it belongs to and the SMT siblings that share its core. Core numbers are
//! only unique inside a package (and die), so a core is named by a
//! [`CoreKey`] `{package, die, core}`.
//!
//! Counters live at different levels of this tree: core counters per logical
//! CPU, some MSRs per core, uncore and RAPL per package. The helpers here
//! answer the questions that follow — which packages exist, which CPUs share
//! a core, one CPU to read a package-scope register from.
//!
//! Offline CPUs are kept (the kernel removes their `topology/` directory, so
//! their core and package are usually unknown) but the counting helpers look
//! at online CPUs only.
//!
//! [`parse_cpu_list`] and [`format_cpu_list`] read and write the kernel's
//! CPU-list syntax (`0-3,8,10-11`).

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// One logical CPU (hardware thread) as the kernel numbers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogicalCpu {
    /// The kernel's CPU number (`cpuN`).
    pub cpu: u32,
    /// Whether the CPU is online.
    pub online: bool,
    /// Core number inside its package (`topology/core_id`), if known.
    pub core: Option<u32>,
    /// Die number inside its package (`topology/die_id`), if known.
    pub die: Option<u32>,
    /// Package (socket) number (`topology/physical_package_id`), if known.
    pub package: Option<u32>,
    /// The CPUs sharing this CPU's core, itself included
    /// (`topology/thread_siblings_list`); empty when unknown.
    pub siblings: Vec<u32>,
    /// NUMA node (`cpuN/nodeM`), if known.
    pub node: Option<u32>,
    /// The data or unified caches this CPU uses, by level: (level, id),
    /// the id unique among that level's instances (`cache/indexK/id`).
    pub caches: Vec<(u8, u32)>,
}

impl LogicalCpu {
    /// Online CPU `cpu` in `package`, `die` and `core` (in that order), with
    /// no sibling list.
    pub fn new(cpu: u32, package: u32, die: u32, core: u32) -> LogicalCpu {
        LogicalCpu {
            cpu,
            online: true,
            core: Some(core),
            die: Some(die),
            package: Some(package),
            siblings: Vec::new(),
            node: None,
            caches: Vec::new(),
        }
    }

    /// The id of this CPU's cache of `level`, if known.
    pub fn cache_id(&self, level: u8) -> Option<u32> {
        self.caches.iter().find(|c| c.0 == level).map(|c| c.1)
    }

    /// The core this CPU belongs to, when package and core are known (a
    /// missing die number counts as die 0, as on kernels before `die_id`).
    pub fn core_key(&self) -> Option<CoreKey> {
        Some(CoreKey {
            package: self.package?,
            die: self.die.unwrap_or(0),
            core: self.core?,
        })
    }
}

/// A physical core, named so that it is unique machine-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CoreKey {
    /// Package (socket).
    pub package: u32,
    /// Die inside the package.
    pub die: u32,
    /// Core inside the die/package.
    pub core: u32,
}

impl fmt::Display for CoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "package {} die {} core {}",
            self.package, self.die, self.core
        )
    }
}

/// All logical CPUs of the machine, sorted by CPU number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// The CPUs, sorted by [`LogicalCpu::cpu`], each number at most once.
    pub cpus: Vec<LogicalCpu>,
}

impl Topology {
    /// A topology from CPUs in any order; duplicates of a CPU number keep the
    /// first entry.
    pub fn new(mut cpus: Vec<LogicalCpu>) -> Topology {
        cpus.sort_by_key(|c| c.cpu);
        cpus.dedup_by_key(|c| c.cpu);
        Topology { cpus }
    }

    /// The CPU with this number.
    pub fn cpu(&self, cpu: u32) -> Option<&LogicalCpu> {
        self.cpus
            .binary_search_by_key(&cpu, |c| c.cpu)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// The online CPUs.
    pub fn online(&self) -> impl Iterator<Item = &LogicalCpu> {
        self.cpus.iter().filter(|c| c.online)
    }

    /// The numbers of the online CPUs, ascending.
    pub fn online_cpus(&self) -> Vec<u32> {
        self.online().map(|c| c.cpu).collect()
    }

    /// How many CPUs the kernel knows, online or not.
    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// How many CPUs are online.
    pub fn online_count(&self) -> usize {
        self.online().count()
    }

    /// The packages with at least one online CPU, ascending.
    pub fn packages(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self.online().filter_map(|c| c.package).collect();
        set.into_iter().collect()
    }

    /// How many packages have an online CPU.
    pub fn package_count(&self) -> usize {
        self.packages().len()
    }

    /// The cores with at least one online CPU, ascending.
    pub fn cores(&self) -> Vec<CoreKey> {
        let set: BTreeSet<CoreKey> = self.online().filter_map(LogicalCpu::core_key).collect();
        set.into_iter().collect()
    }

    /// How many cores have an online CPU.
    pub fn core_count(&self) -> usize {
        self.cores().len()
    }

    /// The online CPUs that share `cpu`'s core, `cpu` included, ascending.
    ///
    /// Uses the kernel's sibling list when there is one, otherwise the CPUs
    /// with the same [`CoreKey`]. `None` when `cpu` is unknown; just `[cpu]`
    /// when nothing says what it shares.
    pub fn siblings_of(&self, cpu: u32) -> Option<Vec<u32>> {
        let me = self.cpu(cpu)?;
        let mut set: BTreeSet<u32> = BTreeSet::new();
        if !me.siblings.is_empty() {
            set.extend(
                me.siblings
                    .iter()
                    .copied()
                    .filter(|&s| s == cpu || self.cpu(s).is_some_and(|c| c.online)),
            );
        } else if let Some(key) = me.core_key() {
            set.extend(
                self.online()
                    .filter(|c| c.core_key() == Some(key))
                    .map(|c| c.cpu),
            );
        }
        set.insert(cpu);
        Some(set.into_iter().collect())
    }

    /// The most online hardware threads any core has (1 without SMT, 2 with
    /// Hyper-Threading); `None` with no online CPU.
    pub fn threads_per_core(&self) -> Option<usize> {
        self.online()
            .filter_map(|c| self.siblings_of(c.cpu).map(|s| s.len()))
            .max()
    }

    /// Whether any core runs more than one online hardware thread.
    pub fn smt_active(&self) -> bool {
        self.threads_per_core().is_some_and(|n| n > 1)
    }

    /// The online CPUs of one package, ascending.
    pub fn cpus_in_package(&self, package: u32) -> Vec<u32> {
        self.online()
            .filter(|c| c.package == Some(package))
            .map(|c| c.cpu)
            .collect()
    }

    /// One online CPU per package — the lowest-numbered — to read a
    /// package-scope register from, as `(package, cpu)` pairs.
    pub fn package_leaders(&self) -> Vec<(u32, u32)> {
        self.packages()
            .into_iter()
            .filter_map(|p| self.cpus_in_package(p).first().map(|&cpu| (p, cpu)))
            .collect()
    }

    /// One online CPU per core — the lowest-numbered — to read a core-scope
    /// register from, as `(core, cpu)` pairs.
    pub fn core_leaders(&self) -> Vec<(CoreKey, u32)> {
        self.cores()
            .into_iter()
            .filter_map(|k| {
                self.online()
                    .find(|c| c.core_key() == Some(k))
                    .map(|c| (k, c.cpu))
            })
            .collect()
    }
}

/// The most CPU numbers one list may name; the kernel's own limit
/// (`NR_CPUS`) is at most 8192, so anything near this is a corrupt list.
pub const MAX_CPU_LIST_LEN: usize = 1 << 16;

/// A kernel CPU-list string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU list {input:?} at byte {position}: {problem}")]
pub struct CpuListError {
    /// The list as given.
    pub input: String,
    /// Byte offset of the offending item in `input`.
    pub position: usize,
    /// What is wrong.
    pub problem: CpuListProblem,
}

/// The specific fault in a CPU list; see [`CpuListError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListProblem {
    /// An empty item between commas (`0,,2`) or an empty range end (`3-`).
    #[error("empty item (expected a CPU number or a range like 0-3)")]
    EmptyItem,
    /// Not a decimal number.
    #[error("{0:?} is not a CPU number")]
    NotANumber(String),
    /// A range whose end is below its start.
    #[error("range {0}-{1} runs backwards")]
    Backwards(u32, u32),
    /// The list names more CPUs than any kernel supports.
    #[error("the list names more than {MAX_CPU_LIST_LEN} CPUs")]
    TooLarge,
}

/// Parse a kernel CPU list (`0-3,8,10-11`) into ascending, distinct CPU
/// numbers.
///
/// Whitespace around the list and around items is ignored (sysfs files end
/// with a newline); an empty list is valid and means no CPU. Overlapping
/// items are merged.
///
/// ```
/// use pmx_model::topology::parse_cpu_list;
/// assert_eq!(parse_cpu_list("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
/// assert!(parse_cpu_list("3-1").unwrap_err().to_string().contains("runs backwards"));
/// ```
pub fn parse_cpu_list(input: &str) -> Result<Vec<u32>, CpuListError> {
    let mut set = BTreeSet::new();
    if input.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut offset = 0;
    for item in input.split(',') {
        let position = offset + (item.len() - item.trim_start().len());
        offset += item.len() + 1;
        let err = |problem| CpuListError {
            input: input.to_string(),
            position,
            problem,
        };
        let item = item.trim();
        if item.is_empty() {
            return Err(err(CpuListProblem::EmptyItem));
        }
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => (parse_cpu(a).map_err(&err)?, parse_cpu(b).map_err(&err)?),
            None => {
                let n = parse_cpu(item).map_err(&err)?;
                (n, n)
            }
        };
        if last < first {
            return Err(err(CpuListProblem::Backwards(first, last)));
        }
        if (last - first) as usize >= MAX_CPU_LIST_LEN
            || set.len() + (last - first) as usize >= MAX_CPU_LIST_LEN
        {
            return Err(err(CpuListProblem::TooLarge));
        }
        set.extend(first..=last);
    }
    Ok(set.into_iter().collect())
}

fn parse_cpu(text: &str) -> Result<u32, CpuListProblem> {
    let text = text.trim();
    if text.is_empty() {
        return Err(CpuListProblem::EmptyItem);
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListProblem::NotANumber(text.to_string()));
    }
    text.parse()
        .map_err(|_| CpuListProblem::NotANumber(text.to_string()))
}

/// Write CPU numbers in the kernel's list syntax, folding runs into ranges:
/// `[0, 1, 2, 3, 8, 10, 11]` → `0-3,8,10-11`. Input order and duplicates do
/// not matter; no CPU gives the empty string.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let set: BTreeSet<u32> = cpus.iter().copied().collect();
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    for cpu in set {
        run = match run {
            Some((start, end)) if end.checked_add(1) == Some(cpu) => Some((start, cpu)),
            Some(done) => {
                parts.push(range_text(done));
                Some((cpu, cpu))
            }
            None => Some((cpu, cpu)),
        };
    }
    if let Some(done) = run {
        parts.push(range_text(done));
    }
    parts.join(",")
}

fn range_text((start, end): (u32, u32)) -> String {
    if start == end {
        start.to_string()
    } else {
        format!("{start}-{end}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_siblings(mut cpu: LogicalCpu, siblings: &[u32]) -> LogicalCpu {
        cpu.siblings = siblings.to_vec();
        cpu
    }

    /// 2 packages × 2 cores × 2 threads, Linux numbering (siblings n and n+4),
    /// core ids with a gap as on Xeons.
    fn two_socket() -> Topology {
        let mut cpus = Vec::new();
        for (cpu, package, core) in [(0, 0, 0), (1, 0, 4), (2, 1, 0), (3, 1, 4)] {
            cpus.push(with_siblings(
                LogicalCpu::new(cpu, package, 0, core),
                &[cpu, cpu + 4],
            ));
            cpus.push(with_siblings(
                LogicalCpu::new(cpu + 4, package, 0, core),
                &[cpu, cpu + 4],
            ));
        }
        cpus.reverse();
        Topology::new(cpus)
    }

    #[test]
    fn counts_and_helpers() {
        let t = two_socket();
        assert_eq!(
            t.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        assert_eq!(t.cpu_count(), 8);
        assert_eq!(t.online_count(), 8);
        assert_eq!(t.packages(), vec![0, 1]);
        assert_eq!(
            t.core_count(),
            4,
            "core 0 of package 0 is not core 0 of package 1"
        );
        assert_eq!(
            t.cores()[1],
            CoreKey {
                package: 0,
                die: 0,
                core: 4
            }
        );
        assert_eq!(t.siblings_of(1), Some(vec![1, 5]));
        assert_eq!(t.siblings_of(6), Some(vec![2, 6]));
        assert_eq!(t.siblings_of(99), None);
        assert_eq!(t.threads_per_core(), Some(2));
        assert!(t.smt_active());
        assert_eq!(t.cpus_in_package(1), vec![2, 3, 6, 7]);
        assert_eq!(t.package_leaders(), vec![(0, 0), (1, 2)]);
        assert_eq!(t.core_leaders().len(), 4);
        assert_eq!(
            t.core_leaders()[3],
            (
                CoreKey {
                    package: 1,
                    die: 0,
                    core: 4
                },
                3
            )
        );
    }

    #[test]
    fn offline_cpus_are_kept_but_not_counted() {
        let mut t = two_socket();
        for c in t.cpus.iter_mut().filter(|c| c.cpu >= 4) {
            *c = LogicalCpu {
                cpu: c.cpu,
                online: false,
                core: None,
                die: None,
                package: None,
                siblings: vec![],
                node: None,
                caches: vec![],
            };
        }
        assert_eq!(t.cpu_count(), 8);
        assert_eq!(t.online_count(), 4);
        assert_eq!(t.online_cpus(), vec![0, 1, 2, 3]);
        assert_eq!(
            t.siblings_of(0),
            Some(vec![0]),
            "the offline sibling is left out"
        );
        assert_eq!(t.threads_per_core(), Some(1));
        assert!(!t.smt_active());
        assert_eq!(t.core_count(), 4);
    }

    #[test]
    fn siblings_fall_back_to_the_core_key() {
        let t = Topology::new(vec![
            LogicalCpu::new(0, 0, 0, 0),
            LogicalCpu::new(1, 0, 0, 0),
            LogicalCpu::new(2, 0, 0, 1),
        ]);
        assert_eq!(t.siblings_of(1), Some(vec![0, 1]));
        assert_eq!(t.siblings_of(2), Some(vec![2]));
        let unknown = Topology::new(vec![LogicalCpu {
            cpu: 0,
            online: true,
            core: None,
            die: None,
            package: None,
            siblings: vec![],
            node: None,
            caches: vec![],
        }]);
        assert_eq!(unknown.siblings_of(0), Some(vec![0]));
        assert_eq!(unknown.packages(), Vec::<u32>::new());
        assert_eq!(Topology::default().threads_per_core(), None);
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("0\n").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list(" 4, 0-1 ,1-2").unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(parse_cpu_list("7-7").unwrap(), vec![7]);
    }

    #[test]
    fn cpu_list_errors_point_at_the_item() {
        let cases: &[(&str, usize, CpuListProblem)] = &[
            ("0,,2", 2, CpuListProblem::EmptyItem),
            ("0,", 2, CpuListProblem::EmptyItem),
            ("3-", 0, CpuListProblem::EmptyItem),
            ("-3", 0, CpuListProblem::EmptyItem),
            ("0-3,x", 4, CpuListProblem::NotANumber("x".into())),
            ("0-3, 5-1", 5, CpuListProblem::Backwards(5, 1)),
            ("+1", 0, CpuListProblem::NotANumber("+1".into())),
            ("0-1-2", 0, CpuListProblem::NotANumber("1-2".into())),
            (
                "0-99999999999",
                0,
                CpuListProblem::NotANumber("99999999999".into()),
            ),
            ("0-4294967295", 0, CpuListProblem::TooLarge),
            ("0-40000,50000-90000", 8, CpuListProblem::TooLarge),
        ];
        for (input, position, problem) in cases {
            let err = parse_cpu_list(input).unwrap_err();
            assert_eq!(
                (&err.problem, err.position),
                (problem, *position),
                "{input:?}"
            );
        }
        let message = parse_cpu_list("0-3,x").unwrap_err().to_string();
        assert_eq!(
            message,
            "bad CPU list \"0-3,x\" at byte 4: \"x\" is not a CPU number"
        );
    }

    #[test]
    fn cpu_lists_format_and_round_trip() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5, 3, 4, 4]), "3-5");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(
            format_cpu_list(&[u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
        for text in ["0", "0-1", "0,2,4-7,9", "1-3,100-103"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
    }
}
