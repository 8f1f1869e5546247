//! `pmx top`: a live profile, as `perf top` — flags to
//! [`pmx_tui::top::TopOptions`], one call, the outcome to an exit code.

use crate::db::DbArgs;
use crate::exit::UsageError;
use pmx_tui::top::{self, TopOptions};
use std::io::IsTerminal;

/// Arguments of `pmx top`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Default: every CPU, cycles where the PMU counts it (else cpu-clock; pmx says which), -F 4000, a refresh every 2 s with perf top's decay (7/8 kept).\n\nKeys: q/Esc/Ctrl-C quit, arrows/PgUp/PgDn/Home/End move, s sort key, / filter, z zero, p pause, Enter annotate, h help.\n\nExit status: 0 (also when the -p/-t tasks are gone); 2 for bad input (a pid that does not exist); 1 when sampling failed."
)]
pub struct TopArgs {
    #[command(flatten)]
    pub sampling: crate::sampling::SamplingArgs,
    /// Where (every CPU by default).
    #[command(flatten)]
    pub target: crate::target::SampleTargets,
    /// Seconds between refreshes.
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECS",
        default_value_t = 2.0
    )]
    pub delay: f64,
    /// Stop after COUNT refreshes.
    #[arg(short = 'n', long = "refreshes", value_name = "COUNT")]
    pub refreshes: Option<u64>,
    /// Zero the counts at every refresh instead of decaying them.
    #[arg(short, long)]
    pub zero: bool,
    /// Plain tables on standard output (automatic when it is not a TTY).
    #[arg(long)]
    pub stdio: bool,
    /// Metrics per row of a {A,B}:S group, with their 95% interval.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// Where threads wait (offcpu-time from sched_switch, as record --off-cpu; without -e the waits alone).
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// Rows of a --stdio table.
    #[arg(short = 'E', long = "entries", value_name = "N", default_value_t = 20)]
    pub entries: usize,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Run `pmx top`.
pub fn run(args: &TopArgs) -> anyhow::Result<i32> {
    let flags = args.target.flags(&[], true);
    let scope = crate::target::scope(&flags, "sample")?;
    top::check_targets(&scope).map_err(|e| UsageError(e.to_string()))?;
    let mut sampling = args.sampling.clone();
    sampling.events = pmx_args::record_flags::top_off_cpu_events(&sampling.events, args.off_cpu);
    let sampling = sampling.check(&args.db)?;
    let mut opts = TopOptions::new(sampling.events, scope, sampling.rate);
    opts.delay = crate::target::duration(Some(args.delay))?.expect("a delay");
    opts.record.call_graph = sampling.call_graph;
    opts.record.file.off_cpu = args.off_cpu.then(Default::default);
    opts.record.mmap_pages =
        (sampling.mmap_pages).unwrap_or(pmx::record::default_mmap_pages(args.off_cpu));
    (opts.refreshes, opts.zero, opts.entries) = (args.refreshes, args.zero, args.entries);
    (opts.metrics, opts.events_dir_default) = (args.metrics.clone(), pmx::events_dirs::from_env());
    opts.symbols = crate::symbols::options(pmx_symbols::Demangle::Short);
    opts.stdio = args.stdio || !std::io::stdout().is_terminal();
    opts.notes = sampling.notes;
    let bad = |e: top::TopError| e.bad_input().map_or(e.into(), |m| UsageError(m).into());
    pmx_tui::run(&opts).map(|_| crate::exit::OK).map_err(bad)
}
