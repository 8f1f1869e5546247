//! Layout: a [`Chart`] and a size become a [`Scene`] of pixel-space shapes
//! that the SVG writer and the rasterizer both draw.
//!
//! From top to bottom: the title; the panels, separated by a gap, each with
//! its grid, axes, ticks, tick labels and a y-axis label turned upright at
//! the left; the x tick labels and the x-axis label under the last panel.
//! The legend runs down the right side, in as many columns as it needs.
//! Tick values are "nice" (1, 2 or 5 times a power of ten); the y axis
//! includes 0 and ends on a tick; y labels use k/M/G/T suffixes.

use super::chart::{Chart, Panel, Rgb};
use super::font::{self, Anchor};
use super::{MAX_SIZE, MIN_SIZE};

/// Pixel-space shapes, drawn in order.
#[derive(Debug, Clone)]
pub(crate) struct Scene {
    pub width: u32,
    pub height: u32,
    pub title: String,
    pub items: Vec<Item>,
}

/// A shape.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// A filled rectangle.
    Fill {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        color: Rgb,
    },
    /// Polylines stroked with round caps and joins.
    Stroke {
        paths: Vec<Vec<(f64, f64)>>,
        color: Rgb,
        width: f64,
        role: Role,
    },
}

/// What a stroke is, for the SVG writer.
#[derive(Debug, Clone)]
pub(crate) enum Role {
    /// Grid, axes, ticks, legend swatches.
    Rule,
    /// A data line (one path), with its label.
    Series(String),
    /// Text, with the string it draws.
    Text(String),
}

const PAD: f64 = 12.0;
const TITLE_SIZE: f64 = 16.0;
const LABEL_SIZE: f64 = 12.0;
const TICK_SIZE: f64 = 11.0;
const LEGEND_SIZE: f64 = 11.0;
const TICK: f64 = 4.0;
const PANEL_GAP: f64 = 22.0;
const LEGEND_ROW: f64 = 17.0;
const SWATCH: f64 = 18.0;
const LINE_WIDTH: f64 = 1.5;

const WHITE: Rgb = Rgb(0xff, 0xff, 0xff);
const INK: Rgb = Rgb(0x22, 0x22, 0x22);
const AXIS: Rgb = Rgb(0x44, 0x44, 0x44);
const GRID: Rgb = Rgb(0xe2, 0xe2, 0xe2);
/// Shading for intervals a line has no value for.
const GAP_SHADE: Rgb = Rgb(0xf1, 0xea, 0xdc);
/// The legend entry for the shading.
const GAP_LABEL: &str = "not counted";

/// An axis: its extent, tick values and their labels.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub labels: Vec<String>,
}

/// 1, 2 or 5 times a power of ten, about `range / target`.
pub(crate) fn nice_step(range: f64, target: usize) -> f64 {
    let raw = range / target.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * mag
}

/// Decimals needed to tell ticks `step` apart.
fn decimals(step: f64) -> usize {
    let k = (step.log10() + 1e-9).floor();
    if k.is_finite() && k < 0.0 {
        (-k).min(12.0) as usize
    } else {
        0
    }
}

/// Tick labels with SI suffixes, each by its own size, trailing zeros
/// dropped (`800`, `1k`, `1.2k`; `500M`, `1G`, `1.5G`).
pub(crate) fn si_labels(ticks: &[f64], step: f64) -> Vec<String> {
    ticks
        .iter()
        .map(|&t| {
            if t.abs() < step * 1e-6 {
                return "0".to_string();
            }
            let (scale, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
                .into_iter()
                .find(|&(s, _)| t.abs() >= s * 0.999_999)
                .unwrap_or((1.0, ""));
            let mut n = format!("{:.*}", decimals(step / scale), t / scale);
            if n.contains('.') {
                n = n.trim_end_matches('0').trim_end_matches('.').to_string();
            }
            format!("{n}{suffix}")
        })
        .collect()
}

/// Plain tick labels (`0`, `0.5`, `1.0`).
fn plain_labels(ticks: &[f64], step: f64) -> Vec<String> {
    let d = decimals(step);
    ticks
        .iter()
        .map(|&t| {
            if t.abs() < step * 1e-6 {
                "0".to_string()
            } else {
                format!("{t:.d$}")
            }
        })
        .collect()
}

/// The y axis for a panel: from 0 (or below, for negative values) up to a
/// tick at or above the largest value.
pub(crate) fn y_axis(panel: &Panel, height: f64) -> Axis {
    let ys = panel.series.iter().flat_map(|s| &s.points).map(|p| p.1);
    let (mut lo, mut hi) = ys.fold((0.0f64, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if hi <= lo {
        hi = lo + 1.0;
    }
    let target = ((height / 45.0) as usize).clamp(2, 8);
    let step = nice_step(hi - lo, target);
    let (k0, k1) = ((lo / step).floor(), (hi / step).ceil());
    lo = k0 * step;
    hi = k1 * step;
    if hi <= lo {
        hi = lo + step;
    }
    let n = ((k1 - k0) as usize).min(40);
    let ticks: Vec<f64> = (0..=n).map(|i| (k0 + i as f64) * step).collect();
    Axis {
        lo,
        hi,
        labels: si_labels(&ticks, step),
        ticks,
    }
}

/// The x axis over `range`, ticks inside it.
pub(crate) fn x_axis((lo, hi): (f64, f64), width: f64) -> Axis {
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let target = ((width / 90.0) as usize).clamp(2, 10);
    let step = nice_step(hi - lo, target);
    let k0 = (lo / step - 1e-9).ceil();
    let k1 = (hi / step + 1e-9).floor();
    let n = if k1 >= k0 {
        ((k1 - k0) as usize).min(40) + 1
    } else {
        0
    };
    let ticks: Vec<f64> = (0..n).map(|i| (k0 + i as f64) * step).collect();
    Axis {
        lo,
        hi,
        labels: plain_labels(&ticks, step),
        ticks,
    }
}

/// Middle of a pixel, for crisp one-pixel rules.
fn snap(v: f64) -> f64 {
    v.floor() + 0.5
}

/// The font size at which `text` fits in `room` pixels (never above `size`).
fn fit(text: &str, size: f64, room: f64) -> f64 {
    let w = font::text_width(text, size);
    if w > room && w > 0.0 {
        (size * room / w).max(5.0)
    } else {
        size
    }
}

fn text(items: &mut Vec<Item>, s: &str, at: (f64, f64), size: f64, anchor: Anchor, vertical: bool) {
    if s.is_empty() {
        return;
    }
    items.push(Item::Stroke {
        paths: font::text_strokes(s, at, size, anchor, vertical),
        color: INK,
        width: (size * 0.085).max(0.8),
        role: Role::Text(s.to_string()),
    });
}

fn rule(items: &mut Vec<Item>, paths: Vec<Vec<(f64, f64)>>, color: Rgb, width: f64) {
    if !paths.is_empty() {
        items.push(Item::Stroke {
            paths,
            color,
            width,
            role: Role::Rule,
        });
    }
}

/// Lay `chart` out on `width` × `height` pixels (each clamped to the
/// allowed sizes).
pub(crate) fn layout(chart: &Chart, width: u32, height: u32) -> Scene {
    let (width, height) = (
        width.clamp(MIN_SIZE, MAX_SIZE),
        height.clamp(MIN_SIZE, MAX_SIZE),
    );
    let (w, h) = (f64::from(width), f64::from(height));
    let mut items = vec![Item::Fill {
        x: 0.0,
        y: 0.0,
        w,
        h,
        color: WHITE,
    }];

    let title_base = PAD + font::cap_height(TITLE_SIZE);
    let title_size = fit(&chart.title, TITLE_SIZE, w - 2.0 * PAD);
    text(
        &mut items,
        &chart.title,
        (w / 2.0, title_base),
        title_size,
        Anchor::Middle,
        false,
    );

    let top = (title_base + font::descent(TITLE_SIZE) + 12.0).round();
    let x_label_base = h - PAD - font::descent(LABEL_SIZE);
    let x_tick_base = x_label_base - font::cap_height(LABEL_SIZE) - 10.0;
    let bottom = (x_tick_base - font::cap_height(TICK_SIZE) - TICK - 5.0)
        .round()
        .max(top + 10.0);

    let n = chart.panels.len().max(1) as f64;
    let panel_h = ((bottom - top - PANEL_GAP * (n - 1.0)) / n).max(10.0);
    let y_axes: Vec<Axis> = chart.panels.iter().map(|p| y_axis(p, panel_h)).collect();
    let tick_w = y_axes
        .iter()
        .flat_map(|a| &a.labels)
        .map(|l| font::text_width(l, TICK_SIZE))
        .fold(0.0, f64::max);
    let y_label_x = PAD + font::cap_height(LABEL_SIZE);
    let left = (y_label_x + font::descent(LABEL_SIZE) + 8.0 + tick_w + TICK + 4.0).round();

    let shaded = chart
        .panels
        .iter()
        .flat_map(|p| &p.series)
        .any(|s| !s.gaps.is_empty() && !s.points.is_empty());
    let legend_len = chart.legend.len() + usize::from(shaded);
    let rows = (((bottom - top) / LEGEND_ROW).floor() as usize).max(1);
    let cols = legend_len.div_ceil(rows);
    let legend_label_w = chart
        .legend
        .iter()
        .map(|e| e.label.as_str())
        .chain(shaded.then_some(GAP_LABEL))
        .map(|l| font::text_width(l, LEGEND_SIZE))
        .fold(0.0, f64::max);
    let col_w = SWATCH + 6.0 + legend_label_w + 14.0;
    let legend_w = if cols == 0 {
        0.0
    } else {
        cols as f64 * col_w + 6.0
    };
    let right = (w - PAD - legend_w).round().max(left + 20.0);
    let plot_w = right - left;
    let xa = x_axis(chart.x_range, plot_w);
    let px = |x: f64| left + (x - xa.lo) / (xa.hi - xa.lo) * plot_w;

    for (i, (panel, ya)) in chart.panels.iter().zip(&y_axes).enumerate() {
        let ptop = (top + i as f64 * (panel_h + PANEL_GAP)).round();
        let pbot = (ptop + panel_h).round();
        let ph = pbot - ptop;
        let py = |y: f64| pbot - (y - ya.lo) / (ya.hi - ya.lo) * ph;

        let mut spans: Vec<(f64, f64)> = Vec::new();
        // A line never counted is marked in the legend, not shaded.
        let gaps = panel.series.iter().filter(|s| !s.points.is_empty());
        for &(a, b) in gaps.flat_map(|s| &s.gaps) {
            let (x0, x1) = (px(a).round(), px(b).round());
            spans.push((x0.min(x1 - 2.0).max(left), x1.max(x0 + 2.0).min(right)));
        }
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        spans.dedup();
        for (x0, x1) in spans.into_iter().filter(|(a, b)| b > a) {
            items.push(Item::Fill {
                x: x0,
                y: ptop,
                w: x1 - x0,
                h: ph,
                color: GAP_SHADE,
            });
        }

        let mut grid = Vec::new();
        for &t in &ya.ticks {
            let y = snap(py(t));
            if y < pbot - 1.0 {
                grid.push(vec![(left, y), (right, y)]);
            }
        }
        for &t in &xa.ticks {
            let x = snap(px(t));
            if x > left + 1.0 {
                grid.push(vec![(x, ptop), (x, pbot)]);
            }
        }
        rule(&mut items, grid, GRID, 1.0);

        let mut axes = vec![
            vec![(snap(left), ptop), (snap(left), snap(pbot))],
            vec![(snap(left), snap(pbot)), (right, snap(pbot))],
        ];
        for &t in &ya.ticks {
            let y = snap(py(t));
            axes.push(vec![(left - TICK, y), (snap(left), y)]);
        }
        for &t in &xa.ticks {
            let x = snap(px(t));
            axes.push(vec![(x, snap(pbot)), (x, pbot + TICK)]);
        }
        rule(&mut items, axes, AXIS, 1.0);

        let cap = font::cap_height(TICK_SIZE);
        for (&t, l) in ya.ticks.iter().zip(&ya.labels) {
            text(
                &mut items,
                l,
                (left - TICK - 4.0, py(t) + cap / 2.0),
                TICK_SIZE,
                Anchor::End,
                false,
            );
        }
        if i + 1 == chart.panels.len() {
            for (&t, l) in xa.ticks.iter().zip(&xa.labels) {
                text(
                    &mut items,
                    l,
                    (px(t), x_tick_base),
                    TICK_SIZE,
                    Anchor::Middle,
                    false,
                );
            }
        }
        let size = fit(&panel.y_label, LABEL_SIZE, ph);
        text(
            &mut items,
            &panel.y_label,
            (y_label_x, (ptop + pbot) / 2.0),
            size,
            Anchor::Middle,
            true,
        );

        for s in &panel.series {
            let mut pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (px(x), py(y))).collect();
            if pts.len() == 1 {
                pts.push(pts[0]);
            }
            items.push(Item::Stroke {
                paths: vec![pts],
                color: s.color,
                width: LINE_WIDTH,
                role: Role::Series(s.label.clone()),
            });
        }
    }

    text(
        &mut items,
        &chart.x_label,
        ((left + right) / 2.0, x_label_base),
        fit(&chart.x_label, LABEL_SIZE, plot_w),
        Anchor::Middle,
        false,
    );

    let cap = font::cap_height(LEGEND_SIZE);
    for (j, e) in chart.legend.iter().enumerate() {
        let (col, row) = (j / rows, j % rows);
        let lx = right + 16.0 + col as f64 * col_w;
        let ly = top + row as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        rule(
            &mut items,
            vec![vec![(lx, ly), (lx + SWATCH, ly)]],
            e.color,
            2.5,
        );
        text(
            &mut items,
            &e.label,
            (lx + SWATCH + 6.0, ly + cap / 2.0),
            LEGEND_SIZE,
            Anchor::Start,
            false,
        );
    }
    if shaded {
        let j = chart.legend.len();
        let lx = right + 16.0 + (j / rows) as f64 * col_w;
        let ly = top + (j % rows) as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        items.push(Item::Fill {
            x: lx,
            y: ly - 5.0,
            w: SWATCH,
            h: 10.0,
            color: GAP_SHADE,
        });
        text(
            &mut items,
            GAP_LABEL,
            (lx + SWATCH + 6.0, ly + cap / 2.0),
            LEGEND_SIZE,
            Anchor::Start,
            false,
        );
    }

    Scene {
        width,
        height,
        title: chart.title.clone(),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(7.0, 5), 2.0);
        assert_eq!(nice_step(1e9, 4), 5e8);
        assert_eq!(nice_step(0.0, 5), 1.0);
        assert_eq!(nice_step(f64::NAN, 5), 1.0);
    }

    #[test]
    fn labels() {
        assert_eq!(
            si_labels(&[0.0, 5e5, 1e6, 1.5e6], 5e5),
            ["0", "500k", "1M", "1.5M"]
        );
        assert_eq!(si_labels(&[0.0, 2e3, 4e3], 2e3), ["0", "2k", "4k"]);
        assert_eq!(
            si_labels(&[800.0, 1000.0, 1200.0], 200.0),
            ["800", "1k", "1.2k"]
        );
        assert_eq!(si_labels(&[0.0, 0.05, 0.1], 0.05), ["0", "0.05", "0.1"]);
        assert_eq!(si_labels(&[0.0, 2e9, 1e13], 2e9), ["0", "2G", "10T"]);
        assert_eq!(si_labels(&[-2e3, 0.0], 1e3), ["-2k", "0"]);
        assert_eq!(plain_labels(&[0.0, 0.5, 1.0], 0.5), ["0", "0.5", "1.0"]);
    }

    #[test]
    fn axes() {
        let x = x_axis((0.0, 10.3), 900.0);
        assert_eq!(x.ticks, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let x = x_axis((0.0, 0.0), 900.0);
        assert!(x.hi > x.lo);
        let panel = Panel {
            y_label: String::new(),
            series: vec![super::super::Series {
                label: String::new(),
                color: WHITE,
                points: vec![(0.0, 103.0), (1.0, 20.0)],
                gaps: Vec::new(),
            }],
        };
        let y = y_axis(&panel, 400.0);
        assert_eq!((y.lo, y.hi), (0.0, 120.0));
        assert_eq!(y.labels.first().map(String::as_str), Some("0"));
    }
}
