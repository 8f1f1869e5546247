//! The flags of `pmx stat`, shared by both backends, `-M` and
//! `--regions`, and what some flags mean once checked: the interval, the
//! output (`-o`), the events. What the renderers read (aggregation,
//! format, interval layout, `--plot`) is derived once into
//! `stat_render::StatView`.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::database::Database;
use pmx_args::stat_events::{stat_events, StatEventFlags, StatEventsError};
use pmx_args::stat_fast::CommonStat;
use pmx_output::sink::{Opened, Sink, SinkError};
use pmx_output::stat_render::StatMetrics;
use std::path::PathBuf;
use std::time::Duration;

/// A usage error (exit 2) of `pmx stat`'s flags.
pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// Arguments of `pmx stat`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(
    after_help = "Exit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when counting failed."
)]
pub struct StatArgs {
    /// Events: names, pmu/…/ forms, raw rNNN, {a,b} groups; repeatable.
    /// Default: perf's set (task-clock, context-switches, cpu-migrations,
    /// page-faults, cycles, instructions, branches, branch-misses).
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Count these processes (every thread), comma-separated pids.
    #[arg(short = 'p', long = "pid", value_name = "PID,…", conflicts_with_all = ["tid", "all_cpus", "cpus"])]
    pub pid: Option<String>,
    /// Count these threads, comma-separated tids.
    #[arg(short = 't', long = "tid", value_name = "TID,…", conflicts_with_all = ["all_cpus", "cpus"])]
    pub tid: Option<String>,
    /// Count every task on every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Count every task on these CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SEC")]
    pub duration: Option<f64>,
    /// Pin the launched command to these CPUs.
    #[arg(long, value_name = "LIST")]
    pub pin: Option<String>,
    /// Do not count the command's children.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// One row per CPU.
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// One row per physical core.
    #[arg(long = "per-core", conflicts_with_all = ["no_aggr", "per_socket", "per_thread"])]
    pub per_core: bool,
    /// One row per package.
    #[arg(long = "per-socket", conflicts_with_all = ["no_aggr", "per_thread"])]
    pub per_socket: bool,
    /// One row per thread (-p/-t).
    #[arg(long = "per-thread", conflicts_with = "no_aggr")]
    pub per_thread: bool,
    /// Run the command N times: mean, standard deviation, spread.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// CSV with this separator (columns: see docs/stat.md).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
    /// Print a header line in CSV output.
    #[arg(long = "csv-header")]
    pub csv_header: bool,
    /// JSON output.
    #[arg(
        short = 'j',
        long,
        visible_alias = "json-output",
        conflicts_with = "separator"
    )]
    pub json: bool,
    /// Print the counts every MS milliseconds (at least 1): one row per
    /// interval (per CPU with -A), written as it is measured.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval: Option<u64>,
    /// Stop after N intervals.
    #[arg(long = "interval-count", value_name = "N", requires = "interval")]
    pub interval_count: Option<u64>,
    /// Interval time stamps: relative (seconds since the start) or absolute
    /// (seconds since the epoch).
    #[arg(long, value_name = "KIND", default_value = "relative", value_parser = ["relative", "absolute"])]
    pub timestamps: String,
    /// With -I: also draw the intervals as a chart (.svg or .png).
    #[arg(long, value_name = "OUT", requires = "interval")]
    pub plot: Option<PathBuf>,
    /// Derived metrics to compute beside the counts: names or groups
    /// (IPC, CPI, TopdownL1, …), comma-separated. Without -e, only their
    /// inputs are counted.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// How to reach the counters: perf (perf_event_open, default) or msr
    /// (program the PMU directly through /dev/cpu/N/msr; needs -a or -C).
    #[arg(long, value_name = "KIND", default_value = "perf", value_parser = ["perf", "msr"])]
    pub backend: String,
    /// With --backend msr: program the counters even if something else has
    /// them enabled.
    #[arg(long)]
    pub force: bool,
    /// With --backend msr: where the msr devices are (default /dev/cpu).
    #[arg(long, value_name = "DIR", hide = true)]
    pub msr_root: Option<PathBuf>,
    /// Never multiplex: when the events do not fit the counters at once, run
    /// the command once per set that fits and merge the results.
    #[arg(long = "no-multiplex")]
    pub no_multiplex: bool,
    /// Output layout: pmx's own, or perf's (perf stat's table, -x and JSON
    /// byte for byte in layout, for scripts written against perf).
    #[arg(long, value_name = "FORM", default_value = "pmx", value_parser = ["pmx", "perf"])]
    pub format: String,
    /// Write the report to FILE (put in place when complete; - is stdout)
    /// instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also report the command's regions (pmx::region, pmx.h) per region
    /// and thread, counting the -e events and -M metrics.
    #[arg(long)]
    pub regions: bool,
    /// Run two commands interleaved (-r N rounds of A then B) and compare
    /// them: -- A ARGS… ::: B ARGS…
    #[arg(long)]
    pub compare: bool,
    /// With --compare: run each command N times first, uncounted.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "compare")]
    pub warmup: u32,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub perf: crate::stat_perf::PerfFlags,
    /// `stat record`'s file (perf's subcommand: the counts kept in
    /// perf.data; `-o` names it, before or after `record`).
    #[arg(skip)]
    pub record: Option<PathBuf>,
    /// The command to run and its arguments (after the options, or `--`).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl StatArgs {
    /// perf's spellings made pmx's: the command after the options,
    /// `--cpu LIST` (perf's long -C; pmx's `--cpu` names a CPU model, so a
    /// CPU list is read as -C), `--timeout MS`.
    pub(crate) fn normalized(&self) -> StatArgs {
        let mut a = self.clone();
        a.command = pmx_args::stat_flags::command(&self.command);
        let list = |c: &&String| pmx_model::topology::parse_cpu_list(c).is_ok();
        if a.cpus.is_none() {
            a.cpus = a.db.cpu.take_if(|c| list(&&*c));
        }
        a.duration = a.perf.timeout.map(|ms| ms as f64 / 1000.0).or(a.duration);
        a
    }

    /// A common line read without clap ([`pmx_args::stat_fast`]); the rest at clap's defaults.
    pub(crate) fn common(c: CommonStat) -> StatArgs {
        StatArgs {
            events: c.events,
            all_cpus: c.all_cpus,
            repeat: c.repeat,
            separator: c.separator,
            json: c.json,
            output: c.output,
            command: c.command,
            timestamps: "relative".into(),
            backend: "perf".into(),
            format: "pmx".into(),
            ..Default::default()
        }
    }

    /// These flags for `stat record`: `-o` names the data file (`-`: a
    /// pipe stream on stdout, nothing printed), as perf.
    pub(crate) fn recording(mut self) -> StatArgs {
        let file = self.output.take().unwrap_or_else(|| "perf.data".into());
        (self.perf.quiet, self.record) = (self.perf.quiet || file == *"-", Some(file));
        self
    }

    /// `-o FILE` (with `%h %p %r %j` expanded; appended to with `append`),
    /// `--log-fd N`, nothing with `-q`, or stderr.
    pub(crate) fn output(&self, append: bool) -> anyhow::Result<Opened> {
        let (quiet, fd, file) = (self.perf.quiet, self.perf.log_fd, self.output.as_ref());
        Sink::of(quiet, fd, file, append)
            .open()
            .map_err(|e| match e {
                SinkError::Usage(m) => usage(m),
                SinkError::Open(m) => anyhow::anyhow!("{m}"),
            })
    }

    /// `-I MS`: at least 1 ms (a warning under 10 ms), not with `-r`.
    pub(crate) fn interval(&self) -> anyhow::Result<Option<Duration>> {
        let (ms, warning) =
            pmx_args::stat_flags::interval(self.interval, self.repeat).map_err(|e| usage(e.0))?;
        warning.iter().for_each(|w| eprintln!("pmx stat: {w}"));
        Ok(ms)
    }

    /// The `-e` groups (or `default_events` when there is no `-e` and no
    /// `-M`) plus the `-M`/`--topdown` metrics' inputs; the metrics; and
    /// the database when the metrics loaded it.
    pub(crate) fn event_groups(
        &self,
        default_events: impl FnOnce() -> String,
    ) -> anyhow::Result<(Vec<pmx::EventGroup>, Option<StatMetrics>, Option<Database>)> {
        let perf = self.perf.options();
        let flags = StatEventFlags {
            events: &self.events,
            metrics: self.metrics.as_deref(),
            topdown: self.perf.topdown,
            td_level: self.perf.td_level,
            perf: &perf,
        };
        let s = stat_events(&flags, default_events, &self.db.options()).map_err(|e| match e {
            StatEventsError::Usage(m) => usage(m),
            e => anyhow::anyhow!("{e}"),
        })?;
        Ok((s.groups, s.metrics.map(StatMetrics::new), s.database))
    }
}
