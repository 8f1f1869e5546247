//! `pmx plot`: an interval file (`pmx stat -I`, or perf's) → a line chart
//! (SVG or PNG). Reading, the chart model and drawing live in
//! `pmx_plot`; this module turns flags into options, reads and
//! writes files, and maps bad input to exit code 2.

use crate::exit::UsageError;
use pmx_plot::{self as plot, Chart, ChartOptions, Format, SeriesBy, Timeline};
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

/// Where the chart goes.
enum Output {
    Stdout,
    File(PathBuf, Format),
}

fn output(args: &PlotArgs, stdin: bool) -> Result<Output, UsageError> {
    let path = match &args.output {
        Some(p) if p.as_os_str() == "-" => return Ok(Output::Stdout),
        Some(p) => p.clone(),
        None if stdin => {
            return Err(UsageError(
                "give -o OUT.svg or -o OUT.png (or -o - for SVG on standard output) \
                 when reading standard input"
                    .to_string(),
            ))
        }
        None => {
            let p = args.file.with_extension("svg");
            if p == args.file {
                return Err(UsageError(format!(
                    "{} already ends in .svg: give -o OUT.svg or -o OUT.png",
                    args.file.display()
                )));
            }
            p
        }
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let format = Format::from_extension(ext).ok_or_else(|| {
        UsageError(format!(
            "{}: unknown image format (use a name ending in .svg or .png)",
            path.display()
        ))
    })?;
    Ok(Output::File(path, format))
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
    let stdin = args.file.as_os_str() == "-";
    let out = output(args, stdin)?;
    let name = if stdin {
        "stdin".to_string()
    } else {
        args.file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| args.file.display().to_string())
    };
    let bytes = read_input(&args.file)?;
    let text = String::from_utf8_lossy(&bytes);
    let bad = |e: plot::PlotError| UsageError(format!("{}: {e}", args.file.display()));
    let timeline = Timeline::parse(&text).map_err(bad)?;
    let options = ChartOptions {
        events: args.events.clone(),
        series_by: if args.per_cpu {
            Some(SeriesBy::Domain)
        } else if args.per_event {
            Some(SeriesBy::Event)
        } else {
            None
        },
        title: args.title.clone(),
        source_name: name,
    };
    let chart = Chart::build(&timeline, &options).map_err(bad)?;
    let height = args.height.unwrap_or_else(|| chart.default_height());
    let format = match &out {
        Output::Stdout => Format::Svg,
        Output::File(_, f) => *f,
    };
    let image = plot::render(&chart, format, args.width, height)?;
    let what = format!(
        "{} lines in {} chart{}, from {}",
        chart.series_count(),
        chart.panels.len(),
        if chart.panels.len() == 1 { "" } else { "s" },
        timeline.format.describe()
    );
    match out {
        Output::Stdout => {
            let mut so = std::io::stdout().lock();
            so.write_all(&image)?;
            so.flush()?;
        }
        Output::File(path, _) => {
            std::fs::write(&path, &image)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("pmx: wrote {} ({what})", path.display());
        }
    }
    Ok(crate::exit::OK)
}
