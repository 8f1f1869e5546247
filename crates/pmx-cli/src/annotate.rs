//! `pmx annotate SYMBOL`: `pmx_profile::annotate`, rendered as text or JSON
//! (with `--metrics`: a sample-read group's metrics per instruction).
use crate::exit::UsageError;
use pmx_profile::annotate::{annotate, render, AnnotateError, AnnotateOptions, Syntax};

/// Arguments of `pmx annotate` (skid, colours and marks: see its header).
#[derive(Debug, clap::Args)]
pub struct AnnotateArgs {
    /// The function, as `pmx report` names it (or -s, as perf); none:
    /// every sampled function, heaviest first (as perf annotate).
    symbol: Option<String>,
    /// The function (perf's -s/--symbol).
    #[arg(short = 's', long = "symbol", conflicts_with = "symbol")]
    sym: Option<String>,
    /// Text output (the default; accepted as perf's --stdio and --stdio2).
    #[arg(long, visible_alias = "stdio2")]
    stdio: bool,
    /// Input file ('-' reads a pipe-mode stream from standard input).
    #[arg(short, long, default_value = "perf.data")]
    input: std::path::PathBuf,
    /// The function's binary (base name or path), when several have one.
    #[arg(short, long)]
    dso: Option<String>,
    /// Only this event (its name as in the file, or without modifiers).
    #[arg(long, value_name = "E")]
    event: Option<String>,
    /// Look binaries up under this directory (like perf's --symfs).
    #[arg(long, value_name = "DIR")]
    symfs: Option<std::path::PathBuf>,
    /// Assembly syntax: att (objdump's default) or intel.
    #[arg(short = 'M', long, default_value = "att")]
    syntax: Syntax,
    /// Metrics of a sample-read group per instruction (IPC, …), as report -M.
    #[arg(long, value_name = "LIST")]
    metrics: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Run `pmx annotate`.
pub fn run(a: &AnnotateArgs) -> anyhow::Result<i32> {
    let sym = a.symbol.clone().or(a.sym.clone());
    let mut o = AnnotateOptions::default();
    (o.input, o.symbol, o.dso) = (
        a.input.clone(),
        sym.clone().unwrap_or_default(),
        a.dso.clone(),
    );
    (o.event, o.symfs, o.syntax) = (a.event.clone(), a.symfs.clone(), a.syntax);
    o.symbols = crate::symbols::options(pmx_symbols::Demangle::Short);
    if sym.is_some() {
        return show(&o, a.metrics.as_deref(), a.json);
    }
    for (name, r) in pmx_profile::annotate_all(&o, &mut |_, _| {}).map_err(failure)? {
        match r {
            Ok(x) => render::to_stdout(&x, a.json, colour())?,
            Err(e) => eprintln!("pmx: warning: {name}: {e}"),
        }
    }
    Ok(crate::exit::OK)
}

/// Annotate, add the metrics and print (`pmx report --annotate` too). A
/// function without samples, an event or metric not in the file: exit 2;
/// its code unreadable: exit 1.
pub fn show(o: &AnnotateOptions, metrics: Option<&str>, json: bool) -> anyhow::Result<i32> {
    let mut progress = pmx_output::progress::Progress::new(false);
    let a = annotate(o, &mut |d, t| progress.update(d, t));
    progress.finish();
    let mut a = a.map_err(failure)?;
    if let Some(list) = metrics {
        let (cpuid, dirs) = (a.cpuid.as_deref(), pmx::events_dirs::from_env());
        let set = pmx::metrics::MetricSet::for_recording(list, cpuid, &a.group_events(), &dirs);
        let set = set.map_err(|e| UsageError(format!("--metrics: {e}")))?;
        let eval = |g: &dyn Fn(&str) -> Option<f64>| set.evaluate_exact(g);
        a.add_metrics(&set.names(), &eval).map_err(failure)?;
    }
    render::to_stdout(&a, json, colour())?;
    Ok(crate::exit::OK)
}

/// Bad input (a name, an event, metrics the file cannot give): exit 2.
fn failure(e: AnnotateError) -> anyhow::Error {
    e.bad_input()
        .map_or_else(|| e.into(), |m| UsageError(m).into())
}

/// Whether colour is allowed: `NO_COLOR` not set (read here, at the edge).
fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none()
}
