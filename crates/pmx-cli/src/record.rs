//! `pmx record`: sample events into a perf.data file that `perf report`,
//! `perf script` and `pmx report` read.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx::record::{self, RecordError, RecordEvent, RecordOptions, SampleRate};
use std::path::PathBuf;

/// Arguments of `pmx record`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Default event: cycles where the PMU counts it (the most precise form this machine opens), else cpu-clock; pmx says which. Default rate: -F 4000.\n\nExit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when recording failed."
)]
pub struct RecordArgs {
    /// Events to sample: names, pmu/…/ forms, raw rNNN; modifiers
    /// (:u, :k, :p, :pp, :ppp, period=N, freq=N) apply. Repeatable.
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Sample every PERIOD events (the sample-after value).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    pub count: Option<u64>,
    /// Sample about HZ times a second (the kernel adjusts the period), or
    /// `max` for kernel.perf_event_max_sample_rate.
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<String>,
    /// Record call chains (frame pointers: build the program with
    /// -fno-omit-frame-pointer).
    #[arg(short = 'g')]
    pub callgraph: bool,
    /// Call chains: fp (as -g), dwarf[,SIZE] (SIZE bytes of user stack per
    /// sample, default 8192; pmx report unwinds them), or lbr (Intel).
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Where (the command's tasks by default).
    #[command(flatten)]
    pub target: crate::target::SampleTargets,
    /// The file to write, put in place when complete (a non-empty one is
    /// kept as FILE.old); - streams pipe-mode perf.data to stdout.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: PathBuf,
    /// Data pages of each CPU's ring buffer: a power of two.
    #[arg(short = 'm', long = "mmap-pages", value_name = "N", default_value_t = record::DEFAULT_MMAP_PAGES)]
    pub mmap_pages: usize,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SEC")]
    pub duration: Option<f64>,
    /// Do not sample the command's children.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    #[command(flatten)]
    pub db: DbArgs,
    /// zstd-compress the records (PERF_RECORD_COMPRESSED) at level N (1-22).
    #[arg(short = 'z', long = "compression-level", value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "1", value_parser = clap::value_parser!(u32).range(1..=22))]
    pub compression: Option<u32>,
    /// Write no build ids (and cache no binaries).
    #[arg(short = 'B', long = "no-buildid")]
    pub no_buildid: bool,
    /// Copy no binaries into the build-id cache (~/.debug).
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// New files (OUT.TIMESTAMP) on SIGUSR2 (signal), a size (100M) or a time (30s, 5m).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "signal")]
    pub switch_output: Option<String>,
    /// Build ids of every mapped binary, hit or not (what pmx always writes).
    #[arg(long = "buildid-all")]
    pub buildid_all: bool,
    /// No messages on standard error (errors still appear).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The command to run and its arguments (the first word that is not
    /// an option, or after `--`).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The `-e` events as sampling events (the default event without `-e`),
/// with notes on what was chosen (also `pmx top`'s).
pub(crate) fn events(
    specs: &[String],
    db: &DbArgs,
    rate: SampleRate,
) -> anyhow::Result<(Vec<RecordEvent>, Vec<String>)> {
    if specs.is_empty() {
        let (ev, notes) = record::default_event(rate);
        return Ok((vec![ev], notes));
    }
    let groups = record::event_groups(specs).map_err(failure)?;
    let events = record::sampling_events(db.plan(&groups, None)?, &groups);
    Ok((events.map_err(failure)?, Vec::new()))
}

/// A recording's failure as the CLI reports it (bad input: exit 2).
pub(crate) fn failure(e: RecordError) -> anyhow::Error {
    match e {
        RecordError::Invalid(m) => UsageError(m).into(),
        e => anyhow::anyhow!("{e}"),
    }
}

/// Run `pmx record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<i32> {
    let (target, db) = crate::target::perf_cpu(&args.target, &args.db);
    let scope = crate::target::scope(&target.flags(&args.command, false), "record")?;
    if args.mmap_pages == 0 || !args.mmap_pages.is_power_of_two() {
        return Err(UsageError(format!(
            "-m {}: the ring size must be a power of two of pages (1, 2, 4 … 128 …)",
            args.mmap_pages
        ))
        .into());
    }
    let duration = crate::target::duration(args.duration)?;
    let (rate, mut notes) =
        record::sample_rate(args.count, args.freq.as_deref()).map_err(failure)?;
    let (events, more) = events(&args.events, &db, rate)?;
    notes.extend(more);
    for n in notes.iter().filter(|_| !args.quiet) {
        eprintln!("pmx record: {n}");
    }
    let opts = RecordOptions {
        scope,
        command: args.command.clone(),
        inherit: !args.no_inherit,
        rate,
        call_graph: record::CallGraph::from_flags(args.callgraph, args.call_graph.as_deref())
            .map_err(|e| failure(e.into()))?,
        mmap_pages: args.mmap_pages,
        duration,
        output: args.output.clone(),
        cmdline: std::env::args().collect(),
        file: record::FileOptions {
            compression: args.compression,
            build_ids: !args.no_buildid,
            switch_output: (args
                .switch_output
                .as_deref()
                .map(record::SwitchOutput::parse))
            .transpose()
            .map_err(UsageError)?,
        },
    };
    record::install_signal_handlers();
    match record::record(&events, &opts) {
        Ok(summary) => {
            for line in summary.messages().iter().filter(|_| !args.quiet) {
                eprintln!("pmx record: {line}");
            }
            let skip = args.no_buildid || args.no_buildid_cache;
            let w = pmx_profile::buildid_cache::after_record(&summary.output, skip);
            w.iter().for_each(|w| eprintln!("pmx record: {w}"));
            Ok(summary.exit.map_or(0, |e| e.shell_code()))
        }
        Err(RecordError::Exec { cmd, reason }) => {
            eprintln!("pmx record: cannot run '{cmd}': {reason}");
            Ok(127)
        }
        Err(e) => Err(failure(e)),
    }
}
