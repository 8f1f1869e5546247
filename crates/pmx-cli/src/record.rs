//! `pmx record`: sample events into a perf.data file that `perf report`,
//! `perf script` and `pmx report` read.

use crate::db::DbArgs;
use crate::exit::UsageError;
use crate::sampling::failure;
use pmx::record::{self, RecordError, RecordOptions};
use std::path::PathBuf;

/// Arguments of `pmx record`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Default event: cycles where the PMU counts it (the most precise form this machine opens), else cpu-clock; pmx says which. Default rate: -F 4000.\n\nExit status: the command's own (128+N when killed by signal N); 127 when it cannot be run; 2 for bad input; 1 when recording failed."
)]
pub struct RecordArgs {
    #[command(flatten)]
    pub sampling: crate::sampling::SamplingArgs,
    #[command(flatten)]
    pub data: crate::sampling::DataArgs,
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
    /// Off-CPU profile without BPF: samples of offcpu-time, the nanoseconds each thread waited (S or D) where it blocked.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// With --off-cpu: waits shorter than MS milliseconds are summed per stack.
    #[arg(long = "off-cpu-thresh", value_name = "MS")]
    pub off_cpu_thresh: Option<f64>,
    /// Raw tracepoint data (what pmx always records for tracepoints).
    #[arg(short = 'R', long = "raw-samples")]
    pub raw_samples: bool,
    /// Record context switches (PERF_RECORD_SWITCH; SWITCH_CPU_WIDE with -a/-C).
    #[arg(long = "switch-events")]
    pub switch_events: bool,
    /// Record namespace changes (PERF_RECORD_NAMESPACES), with the existing tasks' namespaces.
    #[arg(long = "namespaces")]
    pub namespaces: bool,
    /// Build ids of every mapped binary, hit or not (what pmx always writes).
    #[arg(long = "buildid-all")]
    pub buildid_all: bool,
    /// Empty the rings on reader threads of their own: one per CPU (cpu), or N; the file stays one.
    #[arg(long, value_name = "SPEC", num_args = 0..=1, require_equals = true, default_missing_value = "cpu")]
    pub threads: Option<String>,
    /// No messages on standard error (errors still appear).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The command to run and its arguments (the first word that is not
    /// an option, or after `--`).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Run `pmx record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<i32> {
    let (target, db) = crate::target::perf_cpu(&args.target, &args.db);
    let scope = crate::target::scope(&target.flags(&args.command, false), "record")?;
    let duration = crate::target::duration(args.duration)?;
    let mut sampling = args.sampling.check(&db)?;
    args.data.flags().apply(&mut sampling);
    for n in sampling.notes.iter().filter(|_| !args.quiet) {
        eprintln!("pmx record: {n}");
    }
    let switch = args
        .switch_output
        .as_deref()
        .map(record::SwitchOutput::parse);
    let switch_output = switch.transpose().map_err(UsageError)?;
    let off_cpu = pmx_args::record_flags::off_cpu_flags(args.off_cpu, args.off_cpu_thresh)
        .map_err(|e| UsageError(e.to_string()))?;
    let opts = RecordOptions {
        scope,
        command: args.command.clone(),
        inherit: !args.no_inherit,
        rate: sampling.rate,
        call_graph: sampling.call_graph,
        mmap_pages: (sampling.mmap_pages).unwrap_or(record::default_mmap_pages(off_cpu.is_some())),
        duration,
        output: args.output.clone(),
        cmdline: std::env::args().collect(),
        spawn: pmx::launch::Spawn::for_preload(std::env::var_os("LD_PRELOAD").as_deref()),
        file: record::FileOptions {
            compression: args.compression,
            build_ids: !args.no_buildid,
            switch_output,
            switch_events: args.switch_events,
            off_cpu,
            namespaces: args.namespaces,
            reader_threads: pmx_args::record_flags::reader_threads(args.threads.as_deref())
                .map_err(failure)?,
        },
    };
    record::install_signal_handlers();
    match record::record(&sampling.events, &opts) {
        Ok(summary) => {
            for line in summary.messages().iter().filter(|_| !args.quiet) {
                eprintln!("pmx record: {line}");
            }
            let skip = args.no_buildid || args.no_buildid_cache;
            let w = pmx_symbols::buildid_cache::after_record(
                &pmx_io::dirs::Dirs::from_env().buildid,
                &summary.output,
                skip,
            );
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
