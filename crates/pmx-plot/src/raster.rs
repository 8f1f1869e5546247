//! The chart as pixels, and as a PNG.
//!
//! Strokes are drawn anti-aliased: a pixel's coverage is how far its
//! centre lies inside the stroke (half the width, plus half a pixel), so
//! lines of any width and direction come out smooth. Each stroke first
//! collects the largest coverage per pixel over all its segments, then is
//! blended once, so joins do not darken. The image is 8-bit RGB on white.

use super::chart::{Chart, Rgb};
use super::scene::{layout, Item, Scene};
use super::PlotError;

/// An RGB image, row by row, three bytes a pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

/// Draw the chart at `width` × `height` pixels.
pub fn rasterize(chart: &Chart, width: u32, height: u32) -> Image {
    draw(&layout(chart, width, height))
}

/// The chart as PNG bytes.
pub fn render_png(chart: &Chart, width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
    encode_png(&rasterize(chart, width, height))
}

/// Encode an image as PNG.
pub fn encode_png(image: &Image) -> Result<Vec<u8>, PlotError> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, image.width, image.height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let err = |e: png::EncodingError| PlotError::Encode(e.to_string());
    let mut writer = enc.write_header().map_err(err)?;
    writer.write_image_data(&image.rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}

pub(crate) fn draw(scene: &Scene) -> Image {
    let (w, h) = (scene.width as usize, scene.height as usize);
    let mut img = Image {
        width: scene.width,
        height: scene.height,
        rgb: vec![0xff; w * h * 3],
    };
    for item in &scene.items {
        match item {
            Item::Fill {
                x,
                y,
                w: fw,
                h: fh,
                color,
            } => fill(&mut img, (*x, *y, *fw, *fh), *color),
            Item::Stroke {
                paths,
                color,
                width,
                ..
            } => stroke(&mut img, paths, *color, *width),
        }
    }
    img
}

/// Clamp a pixel-space range to `0..limit`.
fn span(lo: f64, hi: f64, limit: usize) -> (usize, usize) {
    let cap = limit as f64;
    let a = lo.floor().clamp(0.0, cap) as usize;
    let b = hi.ceil().clamp(0.0, cap) as usize;
    (a, b.max(a))
}

fn fill(img: &mut Image, (x, y, w, h): (f64, f64, f64, f64), c: Rgb) {
    let (x0, x1) = span(x, x + w, img.width as usize);
    let (y0, y1) = span(y, y + h, img.height as usize);
    for py in y0..y1 {
        for px in x0..x1 {
            let i = (py * img.width as usize + px) * 3;
            img.rgb[i..i + 3].copy_from_slice(&[c.0, c.1, c.2]);
        }
    }
}

/// Distance from `p` to the segment `a`–`b`.
fn distance(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (qx, qy) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
    (qx * qx + qy * qy).sqrt()
}

fn stroke(img: &mut Image, paths: &[Vec<(f64, f64)>], c: Rgb, width: f64) {
    let reach = width / 2.0 + 0.5;
    let pts = || {
        paths
            .iter()
            .flatten()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
    };
    if pts().next().is_none() {
        return;
    }
    let (mut minx, mut miny, mut maxx, mut maxy) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for &(x, y) in pts() {
        minx = minx.min(x);
        maxx = maxx.max(x);
        miny = miny.min(y);
        maxy = maxy.max(y);
    }
    let (bx0, bx1) = span(minx - reach, maxx + reach, img.width as usize);
    let (by0, by1) = span(miny - reach, maxy + reach, img.height as usize);
    let bw = bx1 - bx0;
    if bw == 0 || by1 == by0 {
        return;
    }
    let mut cover = vec![0u8; bw * (by1 - by0)];
    let thin = width.min(1.0);
    for path in paths {
        let segments: Vec<((f64, f64), (f64, f64))> = match path.as_slice() {
            [] => continue,
            [p] => vec![(*p, *p)],
            many => many.windows(2).map(|s| (s[0], s[1])).collect(),
        };
        for (a, b) in segments {
            let (x0, x1) = span(a.0.min(b.0) - reach, a.0.max(b.0) + reach, bx1);
            let (y0, y1) = span(a.1.min(b.1) - reach, a.1.max(b.1) + reach, by1);
            for py in y0.max(by0)..y1 {
                for px in x0.max(bx0)..x1 {
                    let d = distance((px as f64 + 0.5, py as f64 + 0.5), a, b);
                    let k = ((reach - d).clamp(0.0, 1.0) * thin * 255.0).round() as u8;
                    let slot = &mut cover[(py - by0) * bw + (px - bx0)];
                    *slot = (*slot).max(k);
                }
            }
        }
    }
    for py in by0..by1 {
        for px in bx0..bx1 {
            let k = u32::from(cover[(py - by0) * bw + (px - bx0)]);
            if k == 0 {
                continue;
            }
            let i = (py * img.width as usize + px) * 3;
            for (ch, v) in [c.0, c.1, c.2].into_iter().enumerate() {
                let old = u32::from(img.rgb[i + ch]);
                img.rgb[i + ch] = ((old * (255 - k) + u32::from(v) * k + 127) / 255) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stroke_covers_its_pixels_and_nothing_far_away() {
        let mut img = Image {
            width: 10,
            height: 10,
            rgb: vec![0xff; 300],
        };
        stroke(
            &mut img,
            &[vec![(0.0, 5.5), (10.0, 5.5)]],
            Rgb(0, 0, 0),
            1.0,
        );
        let at = |x: usize, y: usize| img.rgb[(y * 10 + x) * 3];
        assert_eq!(at(4, 5), 0);
        assert_eq!(at(4, 1), 0xff);
        assert_eq!(at(4, 8), 0xff);
        // Off-canvas and degenerate input draws nothing and does not panic.
        stroke(
            &mut img,
            &[vec![(-50.0, -50.0), (-40.0, -60.0)]],
            Rgb(0, 0, 0),
            1.0,
        );
        stroke(
            &mut img,
            &[vec![(f64::NAN, 1.0)], vec![]],
            Rgb(0, 0, 0),
            1.0,
        );
        fill(&mut img, (-5.0, -5.0, 100.0, 2.0), Rgb(0, 0, 0));
    }
}
