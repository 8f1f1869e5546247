//! A roofline chart as SVG ([`svg`]) or PNG ([`png()`]): log-log axes of
//! operational intensity (FLOP/byte) and FLOP rate (FLOP/s), one sloped
//! roof per memory ceiling (rate = bandwidth × intensity), one flat roof
//! per compute ceiling, each labelled, and the measured point when there
//! is one. In the SVG, labels are `<text>` elements, so the chart is
//! searchable and a test can read them back; the PNG draws the same
//! geometry as a scene of strokes through the rasterizer of `pmx plot`
//! ([`crate::raster`]), text in its stroke font.

use crate::chart::{palette, Rgb};
use crate::font::{text_strokes, Anchor};
use crate::scene::{Item, Role, Scene};
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

impl Roofline {
    /// `pmx roofline`'s chart: the all-core `ceilings` as (name, kind,
    /// rate) — kind `memory` (bytes/s) or `compute` (FLOP/s) — labelled
    /// `DRAM 12.3 GB/s`, and the point (intensity, FLOP/s) or why there is
    /// none.
    pub fn measured<'a>(
        threads: usize,
        ceilings: impl IntoIterator<Item = (&'a str, &'a str, f64)>,
        point: Option<(f64, f64)>,
        reason: Option<&str>,
    ) -> Roofline {
        let mut r = Roofline {
            title: format!("Roofline ({threads} threads)"),
            ..Roofline::default()
        };
        for (name, kind, value) in ceilings {
            let unit = if kind == "memory" { "B/s" } else { "FLOP/s" };
            let roof = Roof {
                label: format!("{name} {}{unit}", si(value)),
                value,
            };
            match kind {
                "memory" => r.memory.push(roof),
                _ => r.compute.push(roof),
            }
        }
        r.point = point.map(|(i, f)| (i, f, format!("command: {i:.2} FLOP/B, {}FLOP/s", si(f))));
        r.note = reason.map(|w| format!("point unavailable: {w}"));
        r
    }
}

/// A rate with an SI prefix: `12.3 G`.
fn si(v: f64) -> String {
    let (d, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v >= *d)
        .unwrap_or((1.0, ""));
    format!("{:.1} {p}", v / d)
}

/// For a `.png` `path`, write the chart of `report` (the JSON of `pmx
/// roofline --json`: `threads`, `ceilings[]` with `name`, `kind`,
/// `all_cores`, and `point` with `intensity`, `flop_rate`, `reason`)
/// there as PNG; `None` for another name.
pub fn write_png_of(
    report: &serde_json::Value,
    path: &std::path::Path,
) -> Option<Result<String, String>> {
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let ceilings = report["ceilings"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let roofs = ceilings.iter().filter_map(|c| {
        Some((
            c["name"].as_str()?,
            c["kind"].as_str()?,
            c["all_cores"].as_f64()?,
        ))
    });
    let p = &report["point"];
    let point = p["intensity"].as_f64().zip(p["flop_rate"].as_f64());
    let threads = report["threads"].as_u64().unwrap_or(0) as usize;
    let chart = || Roofline::measured(threads, roofs, point, p["reason"].as_str());
    png.then(|| write_png(&chart(), path))
}

/// Write the chart to `path` as PNG; what to tell the user.
pub fn write_png(r: &Roofline, path: &std::path::Path) -> Result<String, String> {
    let png = png(r).ok_or("no memory or no compute ceiling could be measured")?;
    let bytes = png.map_err(|e| e.to_string())?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("pmx roofline: chart written to {}", path.display()))
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

/// The axes' decades and the largest bandwidth and peak, shared by both
/// outputs; `None` without a memory and a compute roof.
struct Frame {
    x: (i32, i32),
    y: (i32, i32),
    bw_max: f64,
    peak_max: f64,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        let (x0, x1) = self.x;
        LEFT + (x.log10() - x0 as f64) / (x1 - x0) as f64 * (W - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        let (y0, y1) = self.y;
        H - BOTTOM - (y.log10() - y0 as f64) / (y1 - y0) as f64 * (H - TOP - BOTTOM)
    }
    fn xrange(&self) -> (f64, f64) {
        (10f64.powi(self.x.0), 10f64.powi(self.x.1))
    }
}

fn frame(r: &Roofline) -> Option<Frame> {
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
    Some(Frame {
        x: (x0, x1),
        y: (y0, y1),
        bw_max,
        peak_max,
    })
}

/// The chart as SVG text; `None` without a memory and a compute roof.
pub fn svg(r: &Roofline) -> Option<String> {
    let f = frame(r)?;
    let (bw_max, peak_max) = (f.bw_max, f.peak_max);
    let ((x0, x1), (y0, y1)) = (f.x, f.y);
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

/// The chart as PNG bytes, `W` × `H` pixels; `None` without a memory and
/// a compute roof.
pub fn png(r: &Roofline) -> Option<Result<Vec<u8>, crate::PlotError>> {
    let scene = scene(r)?;
    Some(crate::raster::encode_png(&crate::raster::draw(&scene)))
}

const INK: Rgb = Rgb(0x22, 0x22, 0x22);

fn scene(r: &Roofline) -> Option<Scene> {
    let f = frame(r)?;
    let mut items = vec![Item::Fill {
        x: 0.0,
        y: 0.0,
        w: W,
        h: H,
        color: Rgb(0xff, 0xff, 0xff),
    }];
    let line = |items: &mut Vec<Item>, paths: Vec<Vec<(f64, f64)>>, color: Rgb, width: f64| {
        items.push(Item::Stroke {
            paths,
            color,
            width,
            role: Role::Rule,
        });
    };
    let text = |items: &mut Vec<Item>, s: &str, at: (f64, f64), size: f64, anchor, color| {
        items.push(Item::Stroke {
            paths: text_strokes(s, at, size, anchor, false),
            color,
            width: (size * 0.085).max(0.8),
            role: Role::Text(s.to_string()),
        });
    };
    let (l, rt, t, b) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let grid = Rgb(0xdd, 0xdd, 0xdd);
    for d in f.x.0..=f.x.1 {
        let x = f.px(10f64.powi(d));
        line(&mut items, vec![vec![(x, t), (x, b)]], grid, 1.0);
        text(
            &mut items,
            &tick(d),
            (x, b + 16.0),
            11.0,
            Anchor::Middle,
            INK,
        );
    }
    for d in f.y.0..=f.y.1 {
        let y = f.py(10f64.powi(d));
        line(&mut items, vec![vec![(l, y), (rt, y)]], grid, 1.0);
        text(
            &mut items,
            &tick(d),
            (l - 6.0, y + 4.0),
            11.0,
            Anchor::End,
            INK,
        );
    }
    let frame_path = vec![(l, t), (rt, t), (rt, b), (l, b), (l, t)];
    line(&mut items, vec![frame_path], Rgb(0x44, 0x44, 0x44), 1.0);
    let axis = "operational intensity (FLOP/byte)";
    text(
        &mut items,
        axis,
        ((l + rt) / 2.0, b + 40.0),
        12.0,
        Anchor::Middle,
        INK,
    );
    items.push(Item::Stroke {
        paths: text_strokes("FLOP/s", (24.0, (t + b) / 2.0), 12.0, Anchor::Middle, true),
        color: INK,
        width: 1.0,
        role: Role::Text("FLOP/s".into()),
    });
    text(
        &mut items,
        &r.title,
        (W / 2.0, 28.0),
        16.0,
        Anchor::Middle,
        INK,
    );
    let (xmin, xmax) = f.xrange();
    for (i, m) in r.memory.iter().enumerate() {
        let ridge = (f.peak_max / m.value).clamp(xmin, xmax);
        let (ax, ay) = (f.px(xmin), f.py(m.value * xmin));
        let color = palette(i);
        line(
            &mut items,
            vec![vec![(ax, ay), (f.px(ridge), f.py(m.value * ridge))]],
            color,
            2.0,
        );
        let at = (ax + 6.0, ay - 6.0 - 14.0 * i as f64);
        text(&mut items, &m.label, at, 12.0, Anchor::Start, color);
    }
    for (i, c) in r.compute.iter().enumerate() {
        let from = (c.value / f.bw_max).clamp(xmin, xmax);
        let (y, color) = (f.py(c.value), palette(i + r.memory.len()));
        line(
            &mut items,
            vec![vec![(f.px(from), y), (f.px(xmax), y)]],
            color,
            2.0,
        );
        text(
            &mut items,
            &c.label,
            (f.px(xmax) - 4.0, y - 5.0),
            12.0,
            Anchor::End,
            color,
        );
    }
    if let Some((x, y, label)) = &r.point {
        let (cx, cy) = (f.px(*x), f.py(*y));
        line(
            &mut items,
            vec![vec![(cx, cy)]],
            Rgb(0xd6, 0x27, 0x28),
            10.0,
        );
        text(
            &mut items,
            label,
            (cx + 8.0, cy + 4.0),
            12.0,
            Anchor::Start,
            INK,
        );
    }
    if let Some(note) = &r.note {
        text(&mut items, note, (l, H - 14.0), 11.0, Anchor::Start, INK);
    }
    Some(Scene {
        width: W as u32,
        height: H as u32,
        title: r.title.clone(),
        items,
    })
}

/// `10^d` as a short label: `0.01`, `1`, `100`, `1e9`.
fn tick(d: i32) -> String {
    match d {
        -3..=-1 => format!("{}", 10f64.powi(d)),
        0..=3 => format!("{}", 10i64.pow(d as u32)),
        _ => format!("1e{d}"),
    }
}
