//! Where `pmx plot` writes its chart and what it says about it: the output
//! chosen from the input's name and `-o` ([`Output::choose`]), the name the
//! title shows ([`source_name`]) and the one-line summary ([`summary`]).

use crate::{Chart, Format, PlotError, SeriesBy, Timeline};
use std::path::{Path, PathBuf};

/// Where the chart goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// SVG on standard output (`-o -`).
    Stdout,
    /// A file, in the format its extension names.
    File(PathBuf, Format),
}

impl Output {
    /// The output for `input` (`-`: standard input) and `-o` (`output`):
    /// `-` is standard output; a file's format is its extension's; without
    /// `-o`, the input with the extension `.svg` (an error for standard
    /// input or an input already ending in `.svg`).
    pub fn choose(input: &Path, output: Option<&Path>) -> Result<Output, PlotError> {
        let bad = |m: String| Err(PlotError::Output(m));
        let path = match output {
            Some(p) if p.as_os_str() == "-" => return Ok(Output::Stdout),
            Some(p) => p.to_path_buf(),
            None if input.as_os_str() == "-" => {
                return bad(
                    "give -o OUT.svg or -o OUT.png (or -o - for SVG on standard output) \
                     when reading standard input"
                        .to_string(),
                )
            }
            None => {
                let p = input.with_extension("svg");
                if p == input {
                    return bad(format!(
                        "{} already ends in .svg: give -o OUT.svg or -o OUT.png",
                        input.display()
                    ));
                }
                p
            }
        };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match Format::from_extension(ext) {
            Some(format) => Ok(Output::File(path, format)),
            None => bad(format!(
                "{}: unknown image format (use a name ending in .svg or .png)",
                path.display()
            )),
        }
    }

    /// The format to draw in (SVG on standard output).
    pub fn format(&self) -> Format {
        match self {
            Output::Stdout => Format::Svg,
            Output::File(_, f) => *f,
        }
    }
}

/// `pmx stat --plot FILE`: the chart's format from FILE's extension.
pub fn stat_plot(path: &Path) -> Result<Format, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    Format::from_extension(ext)
        .ok_or_else(|| format!("--plot {}: give a .svg or .png file name", path.display()))
}

/// The input's name for the title: `stdin` for `-`, else its file name.
pub fn source_name(input: &Path) -> String {
    if input.as_os_str() == "-" {
        return "stdin".to_string();
    }
    (input.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| input.display().to_string())
}

/// `--per-cpu`, `--per-event` or neither (the file decides).
pub fn series_by(per_cpu: bool, per_event: bool) -> Option<SeriesBy> {
    if per_cpu {
        Some(SeriesBy::Domain)
    } else if per_event {
        Some(SeriesBy::Event)
    } else {
        None
    }
}

/// What was drawn: `N lines in M chart(s), from FORMAT`.
pub fn summary(chart: &Chart, timeline: &Timeline) -> String {
    format!(
        "{} lines in {} chart{}, from {}",
        chart.series_count(),
        chart.panels.len(),
        if chart.panels.len() == 1 { "" } else { "s" },
        timeline.format.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_plot_is_svg_or_png_by_its_name() {
        assert_eq!(stat_plot(Path::new("a/b.SVG")), Ok(Format::Svg));
        assert_eq!(stat_plot(Path::new("c.png")), Ok(Format::Png));
        assert_eq!(
            stat_plot(Path::new("c.jpg")).unwrap_err(),
            "--plot c.jpg: give a .svg or .png file name"
        );
    }

    fn choose(input: &str, output: Option<&str>) -> Result<Output, String> {
        Output::choose(Path::new(input), output.map(Path::new)).map_err(|e| e.to_string())
    }

    #[test]
    fn output_follows_the_flags_and_the_input_name() {
        assert_eq!(choose("a.csv", Some("-")), Ok(Output::Stdout));
        assert_eq!(choose("-", Some("-")), Ok(Output::Stdout));
        assert_eq!(
            choose("run/a.csv", None),
            Ok(Output::File("run/a.svg".into(), Format::Svg))
        );
        assert_eq!(
            choose("a.csv", Some("x.PNG")),
            Ok(Output::File("x.PNG".into(), Format::Png))
        );
        assert_eq!(
            choose("a.svg", None),
            Err("a.svg already ends in .svg: give -o OUT.svg or -o OUT.png".into())
        );
        assert_eq!(
            choose("a.csv", Some("x.jpg")),
            Err("x.jpg: unknown image format (use a name ending in .svg or .png)".into())
        );
        assert!(choose("-", None)
            .unwrap_err()
            .contains("when reading standard input"));
        assert_eq!(Output::Stdout.format(), Format::Svg);
    }

    #[test]
    fn names_and_series() {
        assert_eq!(source_name(Path::new("-")), "stdin");
        assert_eq!(source_name(Path::new("/tmp/x/run.csv")), "run.csv");
        assert_eq!(series_by(true, false), Some(SeriesBy::Domain));
        assert_eq!(series_by(false, true), Some(SeriesBy::Event));
        assert_eq!(series_by(false, false), None);
    }
}
