//! `pmx plot`: an interval file (`pmx stat -I`, or perf's) → a line chart
//! (SVG or PNG). Reading, the chart model and drawing live in
//! `pmx_plot` (the output file and the summary line: `pmx_plot::output`);
//! this module turns flags into options, reads and writes files, and maps
//! bad input to exit code 2.

use crate::exit::UsageError;
use pmx_plot::output::{self, Output};
use pmx_plot::{self as plot, Chart, ChartOptions, Timeline};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Arguments of `pmx plot`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Lines: --per-cpu draws one line per CPU (core, socket, thread) and one chart \
per event, stacked; --per-event draws one line per event (summed over the \
domains when the file has no totals) and one chart per unit. The default is \
--per-cpu for a file with per-CPU rows, else --per-event.

Inputs: pmx stat -I MS -x SEP (with or without a header), pmx stat -I MS \
--json, perf stat -I MS -x SEP (with or without -A, --per-core, \
--per-socket), perf stat -I MS -j.")]
pub struct PlotArgs {
    /// Interval file to draw ('-' reads standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Output file: .svg or .png, by its extension ('-' writes SVG to
    /// standard output). Default: FILE with the extension .svg.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Event to draw; repeat for more. Default: the first event in the
    /// file (--per-cpu) or every event (--per-event).
    #[arg(short, long = "event", value_name = "E")]
    pub events: Vec<String>,
    /// One line per CPU (or core, socket, thread); one chart per event.
    #[arg(long, visible_alias = "per-domain", conflicts_with = "per_event")]
    pub per_cpu: bool,
    /// One line per event; one chart per unit.
    #[arg(long)]
    pub per_event: bool,
    /// Title (default: the file name and the events).
    #[arg(long, value_name = "T")]
    pub title: Option<String>,
    /// Width in pixels.
    #[arg(long, value_name = "W", default_value_t = 960,
          value_parser = clap::value_parser!(u32).range(i64::from(plot::MIN_SIZE)..=i64::from(plot::MAX_SIZE)))]
    pub width: u32,
    /// Height in pixels (default: 540, plus 260 for each further chart).
    #[arg(long, value_name = "H",
          value_parser = clap::value_parser!(u32).range(i64::from(plot::MIN_SIZE)..=i64::from(plot::MAX_SIZE)))]
    pub height: Option<u32>,
}

fn read_input(file: &Path) -> anyhow::Result<Vec<u8>> {
    if file.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::stdin().read_to_end(&mut v)?;
        return Ok(v);
    }
    std::fs::read(file).map_err(|e| UsageError(format!("{}: {e}", file.display())).into())
}

/// Run `pmx plot`.
pub fn run(args: &PlotArgs) -> anyhow::Result<i32> {
    let out = Output::choose(&args.file, args.output.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    let bytes = read_input(&args.file)?;
    let text = String::from_utf8_lossy(&bytes);
    let bad = |e: plot::PlotError| UsageError(format!("{}: {e}", args.file.display()));
    let timeline = Timeline::parse(&text).map_err(bad)?;
    let options = ChartOptions {
        events: args.events.clone(),
        series_by: output::series_by(args.per_cpu, args.per_event),
        title: args.title.clone(),
        source_name: output::source_name(&args.file),
    };
    let chart = Chart::build(&timeline, &options).map_err(bad)?;
    let height = args.height.unwrap_or_else(|| chart.default_height());
    let image = plot::render(&chart, out.format(), args.width, height)?;
    match out {
        Output::Stdout => {
            let mut so = std::io::stdout().lock();
            so.write_all(&image)?;
            so.flush()?;
        }
        Output::File(path, _) => {
            pmx_io::write(&path, &image).map_err(|e| anyhow::anyhow!("cannot write {e}"))?;
            let what = output::summary(&chart, &timeline);
            eprintln!("pmx: wrote {} ({what})", path.display());
        }
    }
    Ok(crate::exit::OK)
}
