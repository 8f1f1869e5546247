//! `pmx report`: a perf.data file (pmx's or perf's, file or pipe mode,
//! zstd-compressed or not) → hotspots per event, folded stacks or a flame
//! graph. The report is `pmx_profile::report` (reading in `pmx-perfdata`,
//! symbolization and aggregation in `pmx-profile`); this module turns
//! flags into its options and picks a renderer.
//! A truncated or unfinished file (perf record killed, a cut copy) is
//! reported as far as its complete records go, with a `WARNING` line in
//! the header (and a `truncated` object in the JSON).
//! `--diff BASE NEW` compares two files (`pmx_profile::diff`).

mod branch;
mod wall;

use crate::exit::UsageError;
use pmx_output::progress::Progress;
use pmx_profile::{default_sort, render, DiffOptions, Report, ReportError, ReportOptions};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `pmx report`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Overhead is each row's share of the event's total period (the sum of the \
samples' periods), for the leaf frame of each sample: what \
`perf report --stdio --no-children` shows. User addresses are resolved \
from the ELF symbol tables of the mapped files (a file whose build-id \
differs from the recorded one is not used); JIT code in anonymous \
mappings from /tmp/perf-PID.map; [vdso] addresses from the running \
kernel's vDSO and kernel addresses from /proc/kallsyms when the file was \
recorded on this machine. A truncated file (perf record killed, a cut \
copy) is read up to its last complete record, with a warning.")]
pub struct ReportArgs {
    /// Input file ('-' reads a pipe-mode stream from standard input).
    #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
    pub input: PathBuf,
    /// Annotate this function instead (`pmx annotate SYMBOL`), with --event, -M.
    #[arg(long, value_name = "SYMBOL", conflicts_with = "diff")]
    pub annotate: Option<String>,
    /// Row keys, comma-separated: comm, pid, tid, dso, symbol, cpu [default:
    /// comm,dso,symbol; dso,symbol with --diff, as perf diff].
    #[arg(short, long, value_name = "KEYS")]
    pub sort: Option<String>,
    /// Compare two files: per row both shares and the change, rows matched
    /// by names (DSO base name, symbol), never addresses; with
    /// --flamegraph a differential flame graph, with --folded both counts.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"], conflicts_with_all = ["input", "lines"])]
    pub diff: Option<Vec<PathBuf>>,
    /// With --diff: delta-abs (order by the size of the change), delta, or
    /// ratio (NEW period / BASE period, as perf diff).
    #[arg(long, value_name = "HOW", default_value = "delta-abs")]
    pub compute: pmx_profile::Compute,
    /// Only this event (its name as in the file, e.g. cpu-clock or cycles:u).
    #[arg(long, value_name = "E")]
    pub event: Option<String>,
    /// JSON instead of the table.
    #[arg(long, conflicts_with_all = ["folded"])]
    pub json: bool,
    /// Folded stacks (comm;outer;…;inner count) on standard output.
    #[arg(long)]
    pub folded: bool,
    /// Write a flame graph SVG (alone it prints no table; add --stdio for one).
    #[arg(long, value_name = "OUT.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Write a Firefox Profiler profile (gzip-compressed when named *.gz).
    #[arg(long, value_name = "OUT.json[.gz]", conflicts_with = "diff")]
    pub firefox: Option<PathBuf>,
    /// Write a pprof profile (profile.proto, gzip-compressed).
    #[arg(long, value_name = "OUT.pb.gz", conflicts_with = "diff")]
    pub pprof: Option<PathBuf>,
    /// Hide rows below this overhead (percent).
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Show at most N rows per event.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Add a Children column: each row's inclusive share (every sample
    /// counts once for each distinct function on its call chain), and sort
    /// by it, like perf's default `--children`.
    #[arg(long)]
    pub children: bool,
    /// Table on standard output (the default; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// Add the source file:line (DWARF) of each row's first sample.
    #[arg(long)]
    pub lines: bool,
    /// Call chains show inlined functions as frames of their own (DWARF).
    #[arg(long)]
    pub inline: bool,
    /// Look binaries up under this directory (like perf's --symfs).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Symbol names: short (perf's: no parameters), full (signatures), none (mangled).
    #[arg(long, value_name = "STYLE", default_value = "short")]
    pub demangle: pmx_symbols::Demangle,
    /// No progress bar or notes on standard error (warnings still appear).
    #[arg(short, long)]
    pub quiet: bool,
    /// Each sample-read group ({A,B}:S) as one table: every member's share and count.
    #[arg(long)]
    pub group: bool,
    /// Metrics per row of each sample-read group (IPC, …) with a 95% interval; implies --group.
    #[arg(short = 'M', long = "metrics", value_name = "LIST")]
    pub metrics: Option<String>,
    /// Per-thread totals from the READ records (perf record -s), as perf report -T.
    #[arg(short = 'T', long)]
    pub threads: bool,
    /// Threads reading the samples (0: the machine's cores); the report is the same with any number.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Wall-clock time per thread and function: on the CPU (cpu-clock or
    /// task-clock periods) and off it (offcpu-time, record --off-cpu) in ms;
    /// with --folded, --flamegraph, --json, --firefox, --pprof the same.
    #[arg(long, conflicts_with_all = ["diff", "annotate", "csv", "group"])]
    pub wall_clock: bool,
    /// The group tables as CSV.
    #[arg(long, conflicts_with_all = ["json", "folded"])]
    pub csv: bool,
    #[command(flatten)]
    pub optimizers: branch::OptimizerArgs,
    #[command(flatten)]
    pub perf: crate::report_perf::PerfReportArgs,
}

/// Run `pmx report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let symbols = crate::symbols::options(args.demangle);
    if let Some(symbol) = &args.annotate {
        let mut o = pmx_profile::annotate::AnnotateOptions::default();
        (o.input, o.symbol, o.event) = (args.input.clone(), symbol.into(), args.event.clone());
        (o.symfs, o.symbols) = (args.symfs.clone(), symbols);
        return crate::annotate::show(&o, args.metrics.as_deref(), args.json);
    }
    let p = &args.perf;
    if p.tasks {
        return p.tasks(&args.input);
    }
    if let Some(done) = branch::dispatch(args, symbols.clone()) {
        return done;
    }
    let (fields, mut cols) = p.fields(args.sort.as_deref(), args.percent_limit)?;
    cols.quiet = args.quiet && crate::report_perf::PerfReportArgs::as_perf();
    let (filter, perf_layout) = (p.filter()?, p.layout());
    let shown = (perf_layout
        .then(|| fields.sort.clone())
        .or(args.sort.clone()))
    .unwrap_or_else(|| default_sort(args.diff.is_some()).into());
    let shown = pmx_profile::report::sort_keys(&shown).map_err(failure)?;
    p.notes();
    let chains = perf_layout && pmx_profile::perf_text::call_chains(&args.input) != Some(false);
    let options = ReportOptions {
        input: args.input.clone(),
        sort: filter.sort(&shown),
        event: args.event.clone(),
        stacks: args.folded || args.flamegraph.is_some(),
        graphs: chains,
        children: (args.children || chains) && !p.no_children,
        lines: args.lines,
        inline: args.inline || (chains && !p.no_inline),
        symfs: args.symfs.clone(),
        percent_limit: args.percent_limit,
        limit: args.limit,
        tids: p.tids()?,
        symbols,
        stitch_lbr: p.stitch_lbr,
    };
    if let Some(files) = &args.diff {
        return diff(args, options, files);
    }
    if args.wall_clock {
        return wall::run(args, &options, failure);
    }
    pmx_profile::set_jobs(args.jobs);
    let mut progress = Progress::new(args.quiet);
    let to = pmx_profile::export::targets(&args.firefox, &args.pprof);
    let mut step = |d, t| progress.update(d, t);
    if options.tids.is_some() && !to.is_empty() {
        Err(UsageError("--tid: not with --firefox/--pprof".into()))?;
    }
    let result = pmx_profile::export::report(&options, &to, &mut step);
    progress.finish();
    let (mut report, x) = result.map_err(failure)?;
    filter.apply(&mut report, &shown);
    (report.profile.warnings.iter()).for_each(|w| eprintln!("pmx: warning: {w}"));
    for (p, f) in &to {
        let mut out = pmx_io::OutFile::create(p, Default::default())?;
        x.write(*f, &mut out)?;
        out.commit()?;
    }
    let gm = args.metrics.as_ref().map(|l| metrics(l, &report));
    let gm = gm.transpose()?.unwrap_or_default();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(svg_path) = &args.flamegraph {
        let ev = stack_event(&report)?;
        pmx_io::write(svg_path, report.flame_svg(ev).as_bytes())?;
        if !args.folded && !args.json && !args.quiet {
            eprintln!("pmx: {}", report.flame_note(ev, svg_path));
        }
    }
    if perf_layout && !args.folded && !args.json && !args.csv {
        pmx_profile::perf_text::print(&mut out, &report, &cols)?;
    } else if args.folded {
        let ev = stack_event(&report)?;
        out.write_all(report.folded(ev).as_bytes())?;
    } else if args.json {
        writeln!(out, "{:#}", render::group::json(&report, &gm))?;
    } else if args.csv {
        render::group::csv(&mut out, &report, &gm)?;
    } else if (args.flamegraph.is_none() && to.is_empty()) || args.stdio {
        let grouped = args.group || args.metrics.is_some();
        render::group::table(&mut out, &report, grouped.then_some(&gm[..]))?;
        if args.threads {
            render::threads::table(&mut out, &report)?;
        }
    }
    out.flush()?;
    std::mem::forget(report); // one-shot: freed by the exit, not table by table
    Ok(crate::exit::OK)
}

/// `pmx report --diff BASE NEW`: the differential table, JSON, folded
/// stacks or flame graph.
fn diff(args: &ReportArgs, report: ReportOptions, files: &[PathBuf]) -> anyhow::Result<i32> {
    let options = DiffOptions::new(report, &files[0], &files[1], args.compute);
    let mut progress = Progress::new(args.quiet);
    let result = pmx_profile::diff(&options, &mut |d, t| progress.update(d, t));
    progress.finish();
    let d = result.map_err(failure)?;
    for w in d.warnings() {
        eprintln!("pmx: warning: {w}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let ev = (args.folded || args.flamegraph.is_some()).then(|| d.stack_event());
    let ev = ev.transpose()?;
    if let (Some((i, note)), Some(svg)) = (ev, &args.flamegraph) {
        pmx_io::write(svg, d.flame_svg(i).as_bytes())?;
        (note || !args.quiet).then(|| eprintln!("pmx: {}", d.flame_note(i, svg)));
    }
    match ev {
        Some((i, _)) if args.folded => out.write_all(d.folded(i).as_bytes())?,
        _ if args.json => writeln!(out, "{:#}", render::diff::json(&d))?,
        _ if args.flamegraph.is_none() || args.stdio => render::diff::table(&mut out, &d)?,
        _ => {}
    }
    out.flush()?;
    Ok(crate::exit::OK)
}

/// The report's error as the CLI reports it: the flag at fault for a
/// usage error (after the warnings found before it).
pub(crate) fn failure(e: ReportError) -> anyhow::Error {
    if let ReportError::UnknownEvent { ref warnings, .. } = e {
        warnings.iter().for_each(|w| eprintln!("pmx: warning: {w}"));
    }
    e.bad_input()
        .map_or_else(|| anyhow::anyhow!("{e}"), |m| UsageError(m).into())
}

/// `-M`'s metrics over each group's rows, chosen for the file's events.
fn metrics(list: &str, r: &Report) -> anyhow::Result<Vec<render::group::GroupMetrics>> {
    let cpuid = r.profile.features.cpuid.as_deref();
    let dirs = pmx::events_dirs::from_env();
    let set = pmx::metrics::MetricSet::for_recording(list, cpuid, &r.event_names(), &dirs)
        .map_err(|e| UsageError(format!("-M: {e}")))?;
    let eval = |g: &dyn Fn(&str) -> Option<f64>| set.evaluate_exact(g);
    Ok(render::group::evaluate(r, &set.names(), &eval))
}

/// The event to draw stacks of, with a note when others have samples too.
fn stack_event(report: &Report) -> anyhow::Result<usize> {
    let s = report.stack_event()?;
    if let Some(note) = report.stack_note(&s) {
        eprintln!("pmx: {note}");
    }
    Ok(s.index)
}
