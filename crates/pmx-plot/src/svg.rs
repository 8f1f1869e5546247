//! The chart as SVG text.
//!
//! One `<polyline>` per series (with a `<title>` naming it); grid, axes
//! and legend swatches as `<path>`s; text as stroked `<path>`s drawn with
//! pmx's own font, each with an `aria-label` holding the string, so the
//! file looks the same everywhere and needs no font. Coordinates are
//! written with at most two decimals.

use super::chart::Chart;
use super::scene::{layout, Item, Role};
use pmx_model::xml::escape;
use std::fmt::Write as _;

/// A number with at most two decimals, trailing zeros dropped.
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The chart as an SVG document of `width` × `height` pixels.
pub fn render(chart: &Chart, width: u32, height: u32) -> String {
    let scene = layout(chart, width, height);
    let (w, h) = (scene.width, scene.height);
    let title = escape(&scene.title);
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{title}\">"
    );
    let _ = writeln!(s, "<title>{title}</title>");
    s.push_str("<g fill=\"none\" stroke-linecap=\"round\" stroke-linejoin=\"round\">\n");
    for item in &scene.items {
        match item {
            Item::Fill { x, y, w, h, color } => {
                let _ = writeln!(
                    s,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                    num(*x),
                    num(*y),
                    num(*w),
                    num(*h),
                    color.hex()
                );
            }
            Item::Stroke {
                paths,
                color,
                width,
                role,
            } => {
                let stroke = format!(
                    "stroke=\"{}\" stroke-width=\"{}\"",
                    color.hex(),
                    num(*width)
                );
                match role {
                    Role::Series(label) => {
                        let points: Vec<String> = paths
                            .iter()
                            .flatten()
                            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
                            .collect();
                        let _ = writeln!(
                            s,
                            "<polyline points=\"{}\" {stroke}><title>{}</title></polyline>",
                            points.join(" "),
                            escape(label)
                        );
                    }
                    Role::Rule | Role::Text(_) => {
                        let mut d = String::new();
                        for path in paths {
                            for (i, &(x, y)) in path.iter().enumerate() {
                                d.push(if i == 0 { 'M' } else { 'L' });
                                let _ = write!(d, "{} {}", num(x), num(y));
                            }
                        }
                        if let Role::Text(t) = role {
                            let _ = writeln!(
                                s,
                                "<path aria-label=\"{}\" d=\"{d}\" {stroke}/>",
                                escape(t)
                            );
                        } else {
                            let _ = writeln!(s, "<path d=\"{d}\" {stroke}/>");
                        }
                    }
                }
            }
        }
    }
    s.push_str("</g>\n</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_escapes() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(100.0), "100");
        assert_eq!(
            escape("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{fffd}"
        );
    }
}
