//! A roofline chart as SVG: log-log axes of operational intensity
//! (FLOP/byte) and FLOP rate (FLOP/s), one sloped roof per memory
//! ceiling (rate = bandwidth × intensity), one flat roof per compute
//! ceiling, each labelled, and the measured point when there is one.
//! Labels are `<text>` elements, so the chart is searchable and a test
//! can read them back.

use crate::chart::palette;
use pmx_model::xml::escape;
use std::fmt::Write as _;

/// One roof.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    /// The label (`DRAM 12.3 GB/s`).
    pub label: String,
    /// Bytes/s for a memory roof, FLOP/s for a compute roof.
    pub value: f64,
}

/// What the chart shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Roofline {
    /// The title.
    pub title: String,
    /// Sloped roofs (bandwidths).
    pub memory: Vec<Roof>,
    /// Flat roofs (peak rates).
    pub compute: Vec<Roof>,
    /// The measured (intensity, FLOP/s) with its label.
    pub point: Option<(f64, f64, String)>,
    /// A note under the chart (why there is no point).
    pub note: Option<String>,
}

const W: f64 = 800.0;
const H: f64 = 560.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 90.0;

/// Decades covering `lo..hi` (at least one).
fn decades(lo: f64, hi: f64) -> (i32, i32) {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (a, b.max(a + 1))
}

/// The chart as SVG text; `None` without a memory and a compute roof.
pub fn svg(r: &Roofline) -> Option<String> {
    let bw_max = r.memory.iter().map(|m| m.value).fold(0.0, f64::max);
    let peak_max = r.compute.iter().map(|c| c.value).fold(0.0, f64::max);
    let bw_min = r.memory.iter().map(|m| m.value).fold(f64::MAX, f64::min);
    let peak_min = r.compute.iter().map(|c| c.value).fold(f64::MAX, f64::min);
    if !(bw_max > 0.0 && peak_max > 0.0 && bw_min > 0.0 && peak_min > 0.0) {
        return None;
    }
    let mut xs = vec![peak_min / bw_max / 8.0, peak_max / bw_min * 8.0];
    let mut ys = vec![bw_min * xs[0], peak_max * 2.0];
    if let Some((x, y, _)) = &r.point {
        xs.extend([*x, *x]);
        ys.extend([*y, *y]);
    }
    let (x0, x1) = decades(
        xs.iter().cloned().fold(f64::MAX, f64::min),
        xs.iter().cloned().fold(0.0, f64::max),
    );
    let (y0, y1) = decades(
        ys.iter().cloned().fold(f64::MAX, f64::min).max(1.0),
        ys.iter().cloned().fold(0.0, f64::max),
    );
    let px = |x: f64| LEFT + (x.log10() - x0 as f64) / (x1 - x0) as f64 * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y.log10() - y0 as f64) / (y1 - y0) as f64 * (H - TOP - BOTTOM);
    let (xmin, xmax) = (10f64.powi(x0), 10f64.powi(x1));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="{W}" height="{H}" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        W / 2.0,
        escape(&r.title)
    );
    axes(&mut s, (x0, x1), (y0, y1), &px, &py);
    for (i, m) in r.memory.iter().enumerate() {
        // The roof rises until the highest compute roof, then stops.
        let ridge = (peak_max / m.value).clamp(xmin, xmax);
        let (ax, ay) = (xmin, m.value * xmin);
        let color = palette(i).hex();
        let _ = writeln!(
            s,
            r#"<line class="memory-roof" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"/>"#,
            px(ax),
            py(ay),
            px(ridge),
            py(m.value * ridge)
        );
        let _ = writeln!(
            s,
            r#"<text class="memory-label" x="{:.1}" y="{:.1}" fill="{color}">{}</text>"#,
            px(ax) + 6.0,
            py(ay) - 6.0 - 14.0 * i as f64,
            escape(&m.label)
        );
    }
    for (i, c) in r.compute.iter().enumerate() {
        let from = (c.value / bw_max).clamp(xmin, xmax);
        let color = palette(i + r.memory.len()).hex();
        let _ = writeln!(
            s,
            r#"<line class="compute-roof" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"/>"#,
            px(from),
            py(c.value),
            px(xmax),
            py(c.value)
        );
        let _ = writeln!(
            s,
            r#"<text class="compute-label" x="{:.1}" y="{:.1}" text-anchor="end" fill="{color}">{}</text>"#,
            px(xmax) - 4.0,
            py(c.value) - 5.0,
            escape(&c.label)
        );
    }
    if let Some((x, y, label)) = &r.point {
        let _ = writeln!(
            s,
            r##"<circle class="point" cx="{:.1}" cy="{:.1}" r="5" fill="#d62728"/>"##,
            px(*x),
            py(*y)
        );
        let _ = writeln!(
            s,
            r#"<text class="point-label" x="{:.1}" y="{:.1}">{}</text>"#,
            px(*x) + 8.0,
            py(*y) + 4.0,
            escape(label)
        );
    }
    if let Some(note) = &r.note {
        let _ = writeln!(
            s,
            r#"<text class="note" x="{LEFT}" y="{}" font-size="11">{}</text>"#,
            H - 14.0,
            escape(note)
        );
    }
    s.push_str("</svg>\n");
    Some(s)
}

fn axes(
    s: &mut String,
    (x0, x1): (i32, i32),
    (y0, y1): (i32, i32),
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
) {
    let (l, r, t, b) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = writeln!(
        s,
        r##"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="#444444"/>"##,
        r - l,
        b - t
    );
    for d in x0..=x1 {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{t}" x2="{x:.1}" y2="{b}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text class="tick" x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            b + 16.0,
            tick(d)
        );
    }
    for d in y0..=y1 {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            l - 6.0,
            y + 4.0,
            tick(d)
        );
    }
    let _ = writeln!(
        s,
        r#"<text class="axis" x="{}" y="{}" text-anchor="middle">operational intensity (FLOP/byte)</text>"#,
        (l + r) / 2.0,
        b + 40.0
    );
    let _ = writeln!(
        s,
        r#"<text class="axis" x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">FLOP/s</text>"#,
        (t + b) / 2.0,
        (t + b) / 2.0
    );
}

/// `10^d` as a short label: `0.01`, `1`, `100`, `1e9`.
fn tick(d: i32) -> String {
    match d {
        -3..=-1 => format!("{}", 10f64.powi(d)),
        0..=3 => format!("{}", 10i64.pow(d as u32)),
        _ => format!("1e{d}"),
    }
}
