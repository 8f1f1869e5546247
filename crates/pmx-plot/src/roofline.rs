//! A roofline chart as SVG ([`svg`]) or PNG ([`png()`]): log-log axes of
//! operational intensity (FLOP/byte) and FLOP rate (FLOP/s), one sloped
//! roof per memory ceiling (rate = bandwidth × intensity), one flat roof
//! per compute ceiling, each labelled, and the measured point when there
//! is one. In the SVG, labels are `<text>` elements, so the chart is
//! searchable and a test can read them back; the PNG draws the same
//! geometry as a scene of strokes through the rasterizer of `pmx plot`
//! ([`crate::raster`]), text in its stroke font.

use crate::chart::{palette, Rgb};
use crate::font::{text_strokes, text_width, Anchor};
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
    /// A note under the chart (why there is no point), wrapped at words
    /// to the plot's width, three lines at most.
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
    for (line, y) in note_lines(r) {
        let _ = writeln!(
            s,
            r#"<text class="note" x="{LEFT}" y="{y}" font-size="{NOTE_SIZE}">{}</text>"#,
            escape(&line)
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
    for (line, y) in note_lines(r) {
        text(&mut items, &line, (l, y), NOTE_SIZE, Anchor::Start, INK);
    }
    Some(Scene {
        width: W as u32,
        height: H as u32,
        title: r.title.clone(),
        items,
    })
}

const NOTE_SIZE: f64 = 11.0;
/// Lines of the note at most: they sit between the axis title and the
/// bottom edge.
const NOTE_LINES: usize = 3;

/// The width of `text` at `size` as either output may draw it: the
/// stroke font's (the PNG's) or 0.6 em a character, about the widest a
/// sans-serif font sets (the SVG's), whichever is wider.
pub fn note_width(text: &str, size: f64) -> f64 {
    text_width(text, size).max(text.chars().count() as f64 * 0.6 * size)
}

/// The note wrapped at words to the plot's width (from `LEFT` to the
/// frame's right edge), at most [`NOTE_LINES`] lines (the last cut with
/// an ellipsis), each with its baseline; the last line 14 px above the
/// bottom edge.
fn note_lines(r: &Roofline) -> Vec<(String, f64)> {
    let Some(note) = &r.note else {
        return Vec::new();
    };
    let room = W - RIGHT - LEFT;
    let fits = |s: &str| note_width(s, NOTE_SIZE) <= room;
    let mut lines: Vec<String> = Vec::new();
    for word in note.split_whitespace() {
        match lines.last_mut() {
            Some(last) if fits(&format!("{last} {word}")) => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    let cut = lines.len() > NOTE_LINES;
    lines.truncate(NOTE_LINES);
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter_mut().enumerate() {
        let more = if cut && i == last { "…" } else { "" };
        while !line.is_empty() && !fits(&format!("{line}{more}")) {
            line.pop();
        }
        line.push_str(more);
    }
    let n = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| (l, H - 14.0 - 13.0 * (n - 1 - i) as f64))
        .collect()
}

/// `10^d` as a short label: `0.01`, `1`, `100`, `1e9`.
fn tick(d: i32) -> String {
    match d {
        -3..=-1 => format!("{}", 10f64.powi(d)),
        0..=3 => format!("{}", 10i64.pow(d as u32)),
        _ => format!("1e{d}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(note: &str) -> Roofline {
        let roofs = [
            ("DRAM", "memory", 12e9),
            ("L2", "memory", 80e9),
            ("scalar", "compute", 4e9),
        ];
        Roofline::measured(2, roofs, None, Some(note))
    }

    /// The reason `pmx roofline` gives on a machine without FP counters.
    const LONG: &str = "no FP_ARITH_INST_RETIRED or FP_RET_SSE_AVX_OPS event counts here (not supported: the kernel exposes no hardware PMU, as under a hypervisor that does not pass one through), and no memory-controller PMU is exposed (no uncore_imc_*, amd_umc_* or amd_df under /sys/bus/event_source/devices); hypervisors and most cloud instances hide them";

    #[test]
    fn a_long_note_wraps_inside_the_frame_in_both_outputs() {
        let r = chart(LONG);
        let svg = svg(&r).unwrap();
        let notes: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains(r#"class="note""#))
            .map(|l| l.split('>').nth(1).unwrap().trim_end_matches("</text"))
            .collect();
        assert!(notes.len() > 1 && notes.len() <= NOTE_LINES, "{svg}");
        for n in &notes {
            assert!(LEFT + note_width(n, NOTE_SIZE) <= W - RIGHT, "{n}");
        }
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let shown = words(&notes.join(" "));
        let whole = words(&format!("point unavailable: {LONG}"));
        match shown.last().unwrap().ends_with('…') {
            true => assert!(shown.len() <= whole.len()),
            false => assert_eq!(shown, whole),
        }
        // The PNG: nothing drawn right of the frame in the note's band
        // (below the tick labels and the axis title), where a note that
        // overran would land.
        let img = crate::raster::draw(&scene(&r).unwrap());
        let top = note_lines(&r)[0].1 - 12.0;
        let ink: Vec<(u32, u32)> = (top as u32..H as u32)
            .flat_map(|y| (W as u32 - RIGHT as u32 + 2..W as u32).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let i = 3 * (y * img.width + x) as usize;
                img.rgb[i..i + 3] != [0xff, 0xff, 0xff]
            })
            .collect();
        assert!(ink.is_empty(), "{} pixels right of the frame", ink.len());
        let inked = |y: u32| {
            (LEFT as u32..W as u32).any(|x| {
                let i = 3 * (y * img.width + x) as usize;
                img.rgb[i..i + 3] != [0xff, 0xff, 0xff]
            })
        };
        for (_, base) in note_lines(&r) {
            assert!((base as u32 - 8..=base as u32).any(inked), "line at {base}");
        }
    }

    #[test]
    fn a_note_too_long_for_three_lines_ends_with_an_ellipsis() {
        let r = chart(&LONG.repeat(4));
        let lines = note_lines(&r);
        assert_eq!(lines.len(), NOTE_LINES);
        assert!(lines[2].0.ends_with('…'), "{lines:?}");
        assert!(lines
            .iter()
            .all(|(l, _)| LEFT + note_width(l, NOTE_SIZE) <= W - RIGHT));
        assert_eq!(lines[2].1, H - 14.0);
        assert!(
            lines[0].1 > H - BOTTOM + 40.0,
            "below the axis title: {lines:?}"
        );
        let short = note_lines(&chart("no point"));
        assert_eq!(
            short,
            vec![("point unavailable: no point".to_string(), H - 14.0)]
        );
    }
}
