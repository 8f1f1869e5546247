//! # pmx-plot — line charts of counter timelines (`pmx plot`)
//!
//! An interval file (`pmx stat -I`, or perf's) becomes a chart in four
//! steps, each a pure function on values:
//!
//! 1. [`read`] (`pmx_formats::timeline`): the text becomes a [`Timeline`],
//!    a list of [`Sample`]s (time, domain, event, unit, value).
//! 2. [`chart`]: the timeline and the [`ChartOptions`] become a [`Chart`]:
//!    panels stacked vertically that share the time axis, each with its
//!    lines ([`Series`]), a y-axis label with the unit, one legend and a
//!    title. Per domain ([`SeriesBy::Domain`]): one panel per event, one
//!    line per CPU (core, socket, thread). Per event ([`SeriesBy::Event`]):
//!    one panel per unit, one line per event.
//! 3. A private layout step turns the chart and a size in pixels into a
//!    scene: filled rectangles and stroked polylines, text included (drawn
//!    with pmx's own stroke font, so no system font is needed).
//! 4. [`svg`] writes the scene as SVG text (one `<polyline>` per series,
//!    everything else as `<path>`); [`raster`] draws it into pixels and
//!    encodes a PNG.
//!
//! [`roofline`] is the other chart: `pmx roofline`'s ceilings and point
//! on log-log axes, as SVG.
//!
//! [`output`] chooses where `pmx plot` writes (the format from the file
//! name) and words the summary it prints.
//!
//! The same input gives byte-identical output: a fixed palette, series in
//! a stable order (domains in natural order: `CPU2` before `CPU10`; events
//! in file order), numbers written with fixed precision, no timestamps.

pub mod chart;
mod font;
pub mod output;
pub mod raster;
pub mod roofline;
mod scene;
pub mod svg;

pub use chart::{Chart, ChartOptions, LegendEntry, Panel, Rgb, Series, SeriesBy};
pub use pmx_formats::timeline as read;
pub use read::{EventInfo, Sample, SourceFormat, Timeline};

/// Smallest width or height [`render`] draws, in pixels.
pub const MIN_SIZE: u32 = 100;
/// Largest width or height [`render`] draws, in pixels.
pub const MAX_SIZE: u32 = 8192;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SVG text.
    Svg,
    /// A PNG image (8-bit RGB).
    Png,
}

impl Format {
    /// The format for a file name's extension (`.svg`, `.png`, any case).
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "svg" => Some(Format::Svg),
            "png" => Some(Format::Png),
            _ => None,
        }
    }
}

/// Why a file could not be charted.
#[derive(Debug, Clone, PartialEq)]
pub enum PlotError {
    /// No interval rows at all.
    Empty,
    /// A line that is not an interval row.
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// An event the file does not have.
    UnknownEvent {
        /// The event asked for.
        event: String,
        /// The events the file has, in file order.
        available: Vec<String>,
    },
    /// The selected events have no counted value anywhere.
    NoValues {
        /// The selected events.
        events: Vec<String>,
    },
    /// The PNG encoder failed.
    Encode(String),
    /// No output can be chosen from the input's name and `-o`
    /// ([`output::Output::choose`]): the message says what to give.
    Output(String),
}

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlotError::Empty => f.write_str(
                "no interval rows (expected the output of 'pmx stat -I MS -x,' or \
                 'pmx stat -I MS --json', or of 'perf stat -I MS -x,')",
            ),
            PlotError::Line { line, message } => write!(f, "line {line}: {message}"),
            PlotError::UnknownEvent { event, available } => write!(
                f,
                "no event '{event}' in the file; it has: {}",
                available.join(", ")
            ),
            PlotError::NoValues { events } => write!(
                f,
                "nothing to draw: {} never counted in any interval",
                events.join(", ")
            ),
            PlotError::Encode(e) => write!(f, "PNG encoding failed: {e}"),
            PlotError::Output(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PlotError {}

impl From<read::TimelineError> for PlotError {
    fn from(e: read::TimelineError) -> PlotError {
        match e {
            read::TimelineError::Empty => PlotError::Empty,
            read::TimelineError::Line { line, message } => PlotError::Line { line, message },
        }
    }
}

/// Draw `chart` at `width` × `height` pixels (each clamped to
/// [`MIN_SIZE`]..=[`MAX_SIZE`]) in `format`.
pub fn render(
    chart: &Chart,
    format: Format,
    width: u32,
    height: u32,
) -> Result<Vec<u8>, PlotError> {
    let (w, h) = (
        width.clamp(MIN_SIZE, MAX_SIZE),
        height.clamp(MIN_SIZE, MAX_SIZE),
    );
    match format {
        Format::Svg => Ok(svg::render(chart, w, h).into_bytes()),
        Format::Png => raster::render_png(chart, w, h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random timelines drawn at random sizes, in both formats: nothing
    /// panics, and the output is deterministic.
    #[test]
    fn random_charts_draw() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        for round in 0..24 {
            let events = 1 + next(12);
            let domains = next(5);
            let intervals = 1 + next(30);
            let mut samples = Vec::new();
            for i in 0..intervals {
                for e in 0..events {
                    for d in 0..domains.max(1) {
                        let value = match next(6) {
                            0 => None,
                            1 => Some(-(next(1000) as f64)),
                            2 => Some(next(u64::MAX) as f64 * 1e10),
                            _ => Some(next(1000) as f64 / 7.0),
                        };
                        samples.push(Sample {
                            time: if round % 3 == 0 {
                                1.7e9 + i as f64
                            } else {
                                i as f64 * 0.001
                            },
                            domain: if domains == 0 {
                                String::new()
                            } else {
                                format!("CPU{d}")
                            },
                            event: format!("event-{e}\u{e9}"),
                            unit: if e % 2 == 0 {
                                "msec".into()
                            } else {
                                String::new()
                            },
                            value,
                        });
                    }
                }
            }
            let t = Timeline {
                format: SourceFormat::PmxCsv,
                samples,
            };
            let series_by = [None, Some(SeriesBy::Domain), Some(SeriesBy::Event)][round % 3];
            let Ok(chart) = Chart::build(
                &t,
                &ChartOptions {
                    series_by,
                    ..ChartOptions::default()
                },
            ) else {
                continue;
            };
            let (w, h) = (100 + next(400) as u32, 100 + next(300) as u32);
            for format in [Format::Svg, Format::Png] {
                let a = render(&chart, format, w, h).unwrap();
                let b = render(&chart, format, w, h).unwrap();
                assert!(a == b, "round {round}: output differs");
            }
        }
    }
}
