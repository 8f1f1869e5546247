//! What `perf stat`'s own options mean for a count ([`PerfStatOptions`]):
//! perf's default and detailed event sets (`-d`, `-dd`, `-ddd`, read off
//! perf's `builtin-stat.c`), `--all-user`/`--all-kernel`, the cgroups of
//! `-G`/`--for-each-cgroup`, `--null`, and the hooks around each run
//! (`--delay`, `--pre`, `--post`, `--sync`, in [`RunHooks`]).

use super::plan::{PlanGroup, StatPlan};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `-d` given this many times (0–3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DetailLevel(pub u8);

/// `--all-user` / `--all-kernel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Privilege {
    /// As each event says.
    #[default]
    Any,
    /// `--all-user`: `exclude_kernel` on every event.
    User,
    /// `--all-kernel`: `exclude_user` on every event.
    Kernel,
}

impl Privilege {
    /// From `--all-user` and `--all-kernel` (user wins both).
    pub fn from_flags(all_user: bool, all_kernel: bool) -> Privilege {
        match (all_user, all_kernel) {
            (true, _) => Privilege::User,
            (_, true) => Privilege::Kernel,
            _ => Privilege::Any,
        }
    }
}

/// The perf options that change what is counted.
#[derive(Debug, Clone, Default)]
pub struct PerfStatOptions {
    /// `-d` level.
    pub detail: DetailLevel,
    /// `--all-user` / `--all-kernel`.
    pub privilege: Privilege,
    /// `-G`: one cgroup per event in order (`""`: none); one name alone
    /// applies to every event.
    pub cgroups: Vec<String>,
    /// `--for-each-cgroup`: every event once per cgroup.
    pub for_each_cgroup: Vec<String>,
    /// `-n`: count nothing.
    pub null: bool,
    /// `-D MS` (-1: never start).
    pub delay_ms: Option<i64>,
    /// `-S`.
    pub sync: bool,
    /// `--pre CMD`.
    pub pre: Option<String>,
    /// `--post CMD`.
    pub post: Option<String>,
    /// `--no-merge`: a row per box of a PMU of numbered boxes
    /// ([`StatPlan::split_boxes`]).
    pub no_merge: bool,
}

/// When the command's counters start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// At the command's exec (or at once without a command).
    #[default]
    Now,
    /// This long after the command starts (`-D MS`).
    After(Duration),
    /// Never (`-D -1`: perf starts them disabled, for `--control`).
    Never,
}

/// What happens around each run.
#[derive(Debug, Clone, Default)]
pub struct RunHooks {
    /// When counting starts.
    pub start: Start,
    /// `sync()` before each run.
    pub sync: bool,
    /// A shell command before each run.
    pub pre: Option<String>,
    /// A shell command after each run.
    pub post: Option<String>,
}

/// A perf option pmx cannot honour as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PerfOptionError {
    /// `-G` names a cgroup that is not there.
    #[error("cgroup '{name}': no such cgroup ({} does not exist; cgroup paths are relative to the cgroup2 mount)", path.display())]
    NoCgroup {
        /// As given.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// More `-G` names than events.
    #[error("-G: {given} cgroups for {events} events (each cgroup goes with one event, in order)")]
    TooManyCgroups {
        /// Cgroups given.
        given: usize,
        /// Events.
        events: usize,
    },
    /// `-G` without `-a`/`-C`.
    #[error("-G/--for-each-cgroup count per CPU: give -a or -C")]
    CgroupsNeedCpus,
    /// `-D` below -1.
    #[error("-D {0}: give milliseconds, or -1 to start with the counters disabled")]
    BadDelay(i64),
}

/// Where cgroup v2 is usually mounted.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Where the cgroups `-G` names live: the cgroup2 mount (under
/// /sys/fs/cgroup itself, or `unified/` on hybrid systems), else a v1
/// hierarchy with the perf_event controller, from /proc/self/mounts (as
/// perf looks for it); [`CGROUP_ROOT`] when neither is listed.
pub fn cgroup_root() -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut v1 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(dir), Some(kind), Some(opts)) = (f.get(1), f.get(2), f.get(3)) else {
            continue;
        };
        if *kind == "cgroup2" {
            return PathBuf::from(dir);
        }
        if *kind == "cgroup" && opts.split(',').any(|o| o == "perf_event") {
            v1.get_or_insert_with(|| PathBuf::from(dir));
        }
    }
    v1.unwrap_or_else(|| PathBuf::from(CGROUP_ROOT))
}

/// The cgroup directory of a `-G` name (leading `/` allowed).
pub fn cgroup_path(name: &str) -> PathBuf {
    cgroup_root().join(name.trim_start_matches('/'))
}

/// perf's default events (perf 6.1 `builtin-stat.c`: `default_attrs0`,
/// the stalled-cycles events the core PMU exports, `default_attrs1`):
/// `cpu-clock` instead of `task-clock` when counting CPUs.
pub fn default_events(system_wide: bool, stalls: &[&str]) -> String {
    let clock = if system_wide {
        "cpu-clock"
    } else {
        "task-clock"
    };
    let mut s = format!("{clock},context-switches,cpu-migrations,page-faults,cycles");
    for e in stalls {
        s.push(',');
        s.push_str(e);
    }
    s.push_str(",instructions,branches,branch-misses");
    s
}

/// perf's default set on this machine (`sysfs_root`: `/` unless testing).
pub fn host_default_events(system_wide: bool, sysfs_root: Option<&Path>) -> String {
    let root = sysfs_root.unwrap_or(Path::new("/"));
    default_events(system_wide, &host_stall_events(root))
}

/// The stalled-cycles events this machine's core PMU exports (perf adds
/// them to its default set only then): AMD Zen 1 exports both, later
/// Zens the frontend one, Intel since Haswell neither.
pub fn host_stall_events(sysfs_root: &Path) -> Vec<&'static str> {
    let dir = sysfs_root.join("sys/bus/event_source/devices/cpu/events");
    ["stalled-cycles-frontend", "stalled-cycles-backend"]
        .into_iter()
        .filter(|e| dir.join(e).exists())
        .collect()
}

/// The events `-d` adds at each level (perf's `detailed_attrs`,
/// `very_detailed_attrs`, `very_very_detailed_attrs`).
pub fn detailed_events(level: DetailLevel) -> Vec<&'static str> {
    const SETS: [&str; 3] = [
        "L1-dcache-loads,L1-dcache-load-misses,LLC-loads,LLC-load-misses",
        "L1-icache-loads,L1-icache-load-misses,dTLB-loads,dTLB-load-misses,iTLB-loads,iTLB-load-misses",
        "L1-dcache-prefetches,L1-dcache-prefetch-misses",
    ];
    SETS[..usize::from(level.0.min(3))].to_vec()
}

impl PerfStatOptions {
    /// The `-e` lists to count: `given`, or perf's default set (`default`)
    /// when none; plus the `-d` sets; nothing with `--null`.
    pub fn event_lists(&self, given: &[String], default: impl FnOnce() -> String) -> Vec<String> {
        if self.null {
            return Vec::new();
        }
        let mut lists = if given.is_empty() {
            vec![default()]
        } else {
            given.to_vec()
        };
        lists.extend(detailed_events(self.detail).into_iter().map(String::from));
        lists
    }

    /// The hooks of each run; `cpus`: the run counts CPUs (`-a`/`-C`),
    /// which cgroups need.
    pub fn hooks(&self, cpus: bool) -> Result<RunHooks, PerfOptionError> {
        let cgroups = !(self.cgroups.is_empty() && self.for_each_cgroup.is_empty());
        if cgroups && !cpus {
            return Err(PerfOptionError::CgroupsNeedCpus);
        }
        let start = match self.delay_ms {
            None | Some(0) => Start::Now,
            Some(-1) => Start::Never,
            Some(ms) if ms > 0 => Start::After(Duration::from_millis(ms as u64)),
            Some(ms) => return Err(PerfOptionError::BadDelay(ms)),
        };
        Ok(RunHooks {
            start,
            sync: self.sync,
            pre: self.pre.clone(),
            post: self.post.clone(),
        })
    }

    /// Apply the privilege and the cgroups to a planned set of events; an
    /// event counted in a cgroup is named `EVENT (cgroup NAME)` in every
    /// output (its `cgroup` keeps the name alone).
    pub fn apply(&self, plan: &mut StatPlan) -> Result<(), PerfOptionError> {
        if self.no_merge {
            plan.split_boxes();
        }
        for e in &mut plan.events {
            if let Ok(a) = e.attr.as_mut() {
                match self.privilege {
                    Privilege::Any => {}
                    Privilege::User => (a.exclude_kernel, a.exclude_user) = (true, false),
                    Privilege::Kernel => (a.exclude_kernel, a.exclude_user) = (false, true),
                }
            }
        }
        for name in self.cgroups.iter().chain(&self.for_each_cgroup) {
            let path = cgroup_path(name);
            if !name.is_empty() && !path.is_dir() {
                return Err(PerfOptionError::NoCgroup {
                    name: name.clone(),
                    path,
                });
            }
        }
        if !self.for_each_cgroup.is_empty() {
            *plan = for_each_cgroup(plan, &self.for_each_cgroup);
        } else if self.cgroups.len() == 1 {
            for e in &mut plan.events {
                e.cgroup = Some(self.cgroups[0].clone()).filter(|c| !c.is_empty());
            }
        } else if !self.cgroups.is_empty() {
            if self.cgroups.len() > plan.events.len() {
                return Err(PerfOptionError::TooManyCgroups {
                    given: self.cgroups.len(),
                    events: plan.events.len(),
                });
            }
            for (e, c) in plan.events.iter_mut().zip(&self.cgroups) {
                e.cgroup = Some(c.clone()).filter(|c| !c.is_empty());
            }
        }
        for e in &mut plan.events {
            if let Some(cg) = &e.cgroup {
                e.name = format!("{} (cgroup {cg})", e.name);
            }
        }
        Ok(())
    }
}

/// Every event and group of `plan` once per cgroup, cgroup by cgroup (as
/// perf's `evlist__expand_cgroup`).
fn for_each_cgroup(plan: &StatPlan, cgroups: &[String]) -> StatPlan {
    let mut out = StatPlan {
        events: Vec::new(),
        groups: Vec::new(),
    };
    for cg in cgroups {
        let base = out.events.len();
        let group_base = out.groups.len();
        for e in &plan.events {
            let mut e = e.clone();
            e.group += group_base;
            e.cgroup = Some(cg.clone()).filter(|c| !c.is_empty());
            out.events.push(e);
        }
        for g in &plan.groups {
            out.groups.push(PlanGroup {
                members: g.members.iter().map(|m| m + base).collect(),
                explicit: g.explicit,
            });
        }
    }
    out
}

/// perf stat's options that pmx does not take, and why (the README's
/// table says the same).
pub const REFUSED_PERF_OPTIONS: &[(&str, &str)] = &[
    (
        "--no-scale",
        "pmx always scales multiplexed counts and shows the running share",
    ),
    ("-b", "pmx counts no BPF programs"),
    ("--bpf-prog", "pmx counts no BPF programs"),
    (
        "--bpf-counters",
        "pmx reads counters with read(2), not through BPF",
    ),
    (
        "--bpf-attr-map",
        "pmx reads counters with read(2), not through BPF",
    ),
    (
        "--control",
        "pmx has no control fifo; use -D/--delay or Ctrl-C",
    ),
    (
        "-T",
        "TSX transaction counters are Intel-only and pmx has no TSX set",
    ),
    (
        "--transaction",
        "TSX transaction counters are Intel-only and pmx has no TSX set",
    ),
    (
        "--smi-cost",
        "SMI counting needs the freeze-on-SMI MSR, which pmx does not set",
    ),
    (
        "--iostat",
        "the I/O stack's uncore PMUs are not modelled by pmx",
    ),
    (
        "--cputype",
        "pmx resolves for one core type; use cpu_core/…/ or cpu_atom/…/ events",
    ),
    ("--hybrid-merge", "pmx keeps each hybrid PMU's counts apart"),
    ("--percore-show-thread", "pmx has no percore event term"),
    ("--filter", "pmx passes no tracepoint filters"),
    ("--per-cluster", "the topology pmx reads has no clusters"),
    ("--metric-no-group", "pmx packs metric inputs itself"),
    ("--metric-no-merge", "pmx shares metric inputs itself"),
    ("--metric-no-threshold", "pmx prints no metric thresholds"),
    (
        "--no-csv-summary",
        "with -I pmx always prints the totals after the intervals",
    ),
    ("--pfm-events", "pmx resolves libpfm4 names in -e"),
    (
        "-g",
        "perf's -g/--group is not pmx's: write {a,b} groups in -e",
    ),
    (
        "--group",
        "perf's -g/--group is not pmx's: write {a,b} groups in -e",
    ),
    ("--record-tpebs", "pmx does not sample in pmx stat"),
];

/// The message for a perf stat option pmx does not take (`--smi-cost`),
/// naming it; `None` for any other name.
pub fn refused_perf_option(name: &str) -> Option<String> {
    let (opt, why) = REFUSED_PERF_OPTIONS.iter().find(|(o, _)| *o == name)?;
    Some(format!(
        "perf stat option {opt} is not supported by pmx stat: {why}"
    ))
}

/// Run `--pre`/`--post` through the shell; a failure is reported by the
/// caller as perf does (the count goes on).
pub fn run_hook(cmd: &str) -> std::io::Result<std::process::ExitStatus> {
    std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .status()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf 6.1's sets, written from builtin-stat.c and checked against
    /// `perf stat -d true` on this machine.
    #[test]
    fn perf_sets() {
        assert_eq!(
            default_events(false, &[]),
            "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses"
        );
        assert_eq!(
            default_events(true, &["stalled-cycles-frontend"]),
            "cpu-clock,context-switches,cpu-migrations,page-faults,cycles,stalled-cycles-frontend,instructions,branches,branch-misses"
        );
        assert!(detailed_events(DetailLevel(0)).is_empty());
        assert_eq!(detailed_events(DetailLevel(1)).len(), 1);
        assert_eq!(
            detailed_events(DetailLevel(3))[2],
            "L1-dcache-prefetches,L1-dcache-prefetch-misses"
        );
        let o = PerfStatOptions {
            null: true,
            ..Default::default()
        };
        assert!(o.event_lists(&["cycles".into()], String::new).is_empty());
    }

    #[test]
    fn delays() {
        let at = |ms| PerfStatOptions {
            delay_ms: Some(ms),
            ..Default::default()
        };
        assert_eq!(at(-1).hooks(false).unwrap().start, Start::Never);
        assert_eq!(at(0).hooks(false).unwrap().start, Start::Now);
        assert_eq!(
            at(250).hooks(false).unwrap().start,
            Start::After(Duration::from_millis(250))
        );
        assert_eq!(
            at(-2).hooks(false).unwrap_err(),
            PerfOptionError::BadDelay(-2)
        );
    }
}
