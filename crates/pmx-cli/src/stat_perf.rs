//! `perf stat`'s options that `pmx stat` takes with perf's meaning
//! ([`PerfFlags`], flattened into `StatArgs`; what each means is
//! `pmx::stat`'s [`PerfStatOptions`]) and the trailing command ([`command`]).

use clap::ArgAction;
use pmx::stat::{DetailLevel, PerfStatOptions, Privilege};

/// perf stat's options, as perf spells them (perf-stat(1)).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "perf stat options")]
pub struct PerfFlags {
    /// perf's detailed events: -d L1/LLC, -dd also L1i and TLB, -ddd also prefetches.
    #[arg(short = 'd', long = "detailed", action = ArgAction::Count)]
    pub detailed: u8,
    /// Top-down level 1 (or --td-level) of pmx's tma tree, as metrics.
    #[arg(long)]
    pub topdown: bool,
    /// Top-down down to this level (0: every level).
    #[arg(long = "td-level", value_name = "N")]
    pub td_level: Option<u32>,
    /// Count in these cgroups (v2 paths under /sys/fs/cgroup), one per -e event; needs -a or -C.
    #[arg(short = 'G', long = "cgroup", value_name = "NAME,…")]
    pub cgroup: Vec<String>,
    /// Count every event in each of these cgroups; needs -a or -C.
    #[arg(
        long = "for-each-cgroup",
        value_name = "NAME,…",
        conflicts_with = "cgroup"
    )]
    pub for_each_cgroup: Vec<String>,
    /// One row per die.
    #[arg(long = "per-die")]
    pub per_die: bool,
    /// One row per NUMA node.
    #[arg(long = "per-node")]
    pub per_node: bool,
    /// One row per cache instance of this level (L1, L2, L3; default L3).
    #[arg(long = "per-cache", value_name = "LEVEL", num_args = 0..=1, require_equals = true, default_missing_value = "L3", value_parser = ["L1", "L2", "L3", "L4"])]
    pub per_cache: Option<String>,
    /// Print only the metrics (-M, --topdown), not the counts.
    #[arg(long = "metric-only")]
    pub metric_only: bool,
    /// No thousands' separators.
    #[arg(long = "no-big-num")]
    pub no_big_num: bool,
    /// A row per box of an uncore PMU of numbered boxes (uncore_imc_0 …), not their sum.
    #[arg(long = "no-merge")]
    pub no_merge: bool,
    /// Taken as perf means them, already pmx's way: -B/--big-num (the default), -c/--scale (always scaled).
    #[arg(long = "big-num", short = 'B', aliases = ["scale"], short_alias = 'c', action = ArgAction::Count)]
    pub as_perf: u8,
    /// With -I, the totals too (pmx's formats always print them; perf's -x: a `summary` column).
    #[arg(long)]
    pub summary: bool,
    /// With --summary and -x: no `summary` column.
    #[arg(long = "no-csv-summary")]
    pub no_csv_summary: bool,
    /// Count nothing: only the elapsed time.
    #[arg(short = 'n', long = "null")]
    pub null: bool,
    /// Start counting MS milliseconds after the command starts (-1: never).
    #[arg(
        short = 'D',
        long = "delay",
        value_name = "MS",
        allow_negative_numbers = true
    )]
    pub delay: Option<i64>,
    /// Count in user space only (every event).
    #[arg(long = "all-user", conflicts_with = "all_kernel")]
    pub all_user: bool,
    /// Count in the kernel only (every event).
    #[arg(long = "all-kernel")]
    pub all_kernel: bool,
    /// Print nothing (the exit status still says how the command ended).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// With -o: append to the file.
    #[arg(long)]
    pub append: bool,
    /// Write the report to this file descriptor instead of stderr.
    #[arg(long = "log-fd", value_name = "FD", conflicts_with = "output")]
    pub log_fd: Option<i32>,
    /// With -I: clear the screen before each interval.
    #[arg(long = "interval-clear", requires = "interval")]
    pub interval_clear: bool,
    /// A shell command to run before each run of the command.
    #[arg(long, value_name = "CMD")]
    pub pre: Option<String>,
    /// A shell command to run after each run of the command.
    #[arg(long, value_name = "CMD")]
    pub post: Option<String>,
    /// With -r: the elapsed time of each run, as a table.
    #[arg(long)]
    pub table: bool,
    /// Print what was resolved and opened (-v) on stderr.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
    /// sync() before each run.
    #[arg(short = 'S', long = "sync")]
    pub sync: bool,
    /// Stop after MS milliseconds (perf's --timeout; see --duration).
    #[arg(long, value_name = "MS", conflicts_with = "duration")]
    pub timeout: Option<u64>,
}

impl PerfFlags {
    /// The flags' meaning, for `pmx::stat`.
    pub fn options(&self) -> PerfStatOptions {
        let names = |v: &[String]| {
            v.iter()
                .flat_map(|c| c.split(','))
                .map(String::from)
                .collect()
        };
        PerfStatOptions {
            detail: DetailLevel(self.detailed.min(3)),
            privilege: Privilege::from_flags(self.all_user, self.all_kernel),
            cgroups: names(&self.cgroup),
            for_each_cgroup: names(&self.for_each_cgroup),
            null: self.null,
            delay_ms: self.delay,
            sync: self.sync,
            pre: self.pre.clone(),
            post: self.post.clone(),
            no_merge: self.no_merge,
        }
    }
}
