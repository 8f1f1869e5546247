//! Fuzz `pmx plot`'s input side and drawing: any bytes, read as an
//! interval file (pmx CSV or JSON lines, perf's CSV or JSON), give a
//! timeline or an error; a timeline gives a chart or an error in both line
//! modes; a chart draws as SVG and PNG. Nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmx_plot as plot;
use pmx_plot::{Chart, ChartOptions, Format, SeriesBy, Timeline};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(timeline) = Timeline::read(&text) else {
        return;
    };
    let _ = timeline.events();
    for series_by in [None, Some(SeriesBy::Domain), Some(SeriesBy::Event)] {
        let options = ChartOptions {
            events: Vec::new(),
            series_by,
            title: None,
            source_name: "fuzz".to_string(),
        };
        let Ok(chart) = Chart::build(&timeline, &options) else {
            continue;
        };
        // The smallest size keeps each run fast; the drawing code is the
        // same at every size.
        let _ = plot::render(&chart, Format::Svg, plot::MIN_SIZE, plot::MIN_SIZE);
        let _ = plot::render(&chart, Format::Png, plot::MIN_SIZE, plot::MIN_SIZE);
    }
});
