//! Folded stacks (`comm;outer;…;inner count`, one line per distinct stack,
//! the format of Brendan Gregg's stackcollapse scripts) and a flame graph
//! SVG drawn from them: one rectangle per frame, width proportional to its
//! samples, children above their caller and sorted by name, a colour
//! derived from the name, `<title>` tooltips. Same input, same bytes.
//! [`diff`] draws the differential flame graph of two profiles.
//!
//! Names and titles are escaped by `pmx_model::xml::escape`, the rule of
//! every pmx SVG: `'` is written `&apos;`, and the characters XML cannot
//! hold (C0 controls other than tab, newline and carriage return; U+FFFE,
//! U+FFFF) become U+FFFD (before, such controls became a space and
//! U+FFFE/U+FFFF were written as they were, which no XML parser takes).

pub mod diff;

use pmx_model::xml::escape;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The last frame of an off-CPU stack in the wall-clock view's folded
/// stacks and flame graphs (drawn blue).
pub const OFF_CPU_FRAME: &str = "[off-CPU]";

/// Folded-stack text: `frames joined by ';' count` per line, sorted.
pub fn folded(stacks: &[(Vec<String>, u64, u64)]) -> String {
    let mut out = String::new();
    for (frames, samples, _) in stacks {
        let line: Vec<String> = frames.iter().map(|f| f.replace(';', ":")).collect();
        let _ = writeln!(out, "{} {samples}", line.join(";"));
    }
    out
}

#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

/// Options of a flame graph.
#[derive(Debug, Clone)]
pub struct FlameOptions {
    /// Title at the top.
    pub title: String,
    /// Width in pixels.
    pub width: u32,
    /// What a count is (`samples`).
    pub unit: String,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            title: "Flame Graph".into(),
            width: 1200,
            unit: "samples".into(),
        }
    }
}

const FRAME_H: f64 = 16.0;
const PAD_TOP: f64 = 36.0;
const PAD_BOTTOM: f64 = 12.0;
const PAD_X: f64 = 10.0;
const CHAR_W: f64 = 6.6;

/// FNV-1a over the name: the colour is a function of the name only.
fn colour(name: &str) -> (u8, u8, u8) {
    let h = crate::fnv1a(name.as_bytes());
    let r = 205 + (h % 50) as u8;
    let g = ((h >> 16) % 190) as u8;
    let b = ((h >> 32) % 55) as u8;
    (r, g, b)
}

/// Draw the flame graph of folded stacks as SVG.
pub fn svg(stacks: &[(Vec<String>, u64, u64)], opts: &FlameOptions) -> String {
    let mut root = Node::default();
    let mut depth_max = 0;
    for (frames, samples, _) in stacks {
        root.value += samples;
        let mut node = &mut root;
        for f in frames {
            node = node.children.entry(f.clone()).or_default();
            node.value += samples;
        }
        depth_max = depth_max.max(frames.len());
    }
    let width = f64::from(opts.width.max(200));
    // Only frames wide enough to draw count for the height.
    let min_value = root.value as f64 * 0.1 / (width - 2.0 * PAD_X);
    let depth_max = depth_max.min(visible_depth(&root, min_value));
    let height = PAD_TOP + PAD_BOTTOM + FRAME_H * (depth_max as f64 + 1.0);
    let mut out = open_svg(width, height, &opts.title);
    if root.value == 0 {
        out.push_str("<text x=\"10\" y=\"50\">no samples</text>\n</svg>\n");
        return out;
    }
    let scale = (width - 2.0 * PAD_X) / root.value as f64;
    let total = root.value;
    draw(
        &mut out, "all", &root, 0, PAD_X, scale, height, total, &opts.unit,
    );
    out.push_str("</svg>\n");
    out
}

/// The SVG's start: its size, style, background and centred title.
fn open_svg(width: f64, height: f64, title: &str) -> String {
    format!(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n\
         <svg version=\"1.1\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n\
         <style>text {{ font-family: Verdana, sans-serif; font-size: 11px; fill: #000; }} \
         rect:hover {{ stroke: #000; stroke-width: 0.5; }}</style>\n\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#f8f8f0\"/>\n\
         <text x=\"{cx}\" y=\"22\" text-anchor=\"middle\" style=\"font-size:16px\">{title}</text>\n",
        w = width,
        h = height,
        cx = width / 2.0,
        title = escape(title)
    )
}

/// Depth of the deepest node at least `min_value` wide (the root is 0).
fn visible_depth(node: &Node, min_value: f64) -> usize {
    node.children
        .values()
        .filter(|c| c.value as f64 >= min_value)
        .map(|c| 1 + visible_depth(c, min_value))
        .max()
        .unwrap_or(0)
}

/// The frame's name at (x, y) in a box `w` wide: shortened with `..`,
/// or nothing when fewer than 3 characters fit.
fn label(out: &mut String, name: &str, x: f64, y: f64, w: f64) {
    let fit = ((w - 6.0) / CHAR_W).floor();
    if fit >= 3.0 {
        let fit = fit as usize;
        let label: String = if name.chars().count() <= fit {
            name.to_string()
        } else {
            let mut s: String = name.chars().take(fit - 2).collect();
            s.push_str("..");
            s
        };
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 3.0,
            y + FRAME_H - 5.0,
            escape(&label)
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn draw(
    out: &mut String,
    name: &str,
    node: &Node,
    depth: usize,
    x: f64,
    scale: f64,
    height: f64,
    total: u64,
    unit: &str,
) {
    let w = node.value as f64 * scale;
    if w < 0.1 {
        return;
    }
    let y = height - PAD_BOTTOM - FRAME_H * (depth as f64 + 1.0);
    let (r, g, b) = if depth == 0 {
        (220, 220, 220)
    } else if name == OFF_CPU_FRAME {
        // Time off the CPU: blue, apart from the warm colours of code.
        (90, 140, 220)
    } else {
        colour(name)
    };
    let pct = node.value as f64 * 100.0 / total as f64;
    let _ = write!(
        out,
        "<g><title>{} ({} {unit}, {pct:.2}%)</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{fh:.1}\" \
         fill=\"rgb({r},{g},{b})\" rx=\"2\" ry=\"2\"/>",
        escape(name),
        node.value,
        fh = FRAME_H - 1.0
    );
    label(out, name, x, y, w);
    out.push_str("</g>\n");
    let mut cx = x;
    for (child_name, child) in &node.children {
        draw(
            out,
            child_name,
            child,
            depth + 1,
            cx,
            scale,
            height,
            total,
            unit,
        );
        cx += child.value as f64 * scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks() -> Vec<(Vec<String>, u64, u64)> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        vec![
            (s(&["prog", "main", "hot<T>"]), 90, 900),
            (s(&["prog", "main", "cold;x"]), 10, 100),
        ]
    }

    #[test]
    fn folded_lines() {
        assert_eq!(
            folded(&stacks()),
            "prog;main;hot<T> 90\nprog;main;cold:x 10\n"
        );
    }

    #[test]
    fn svg_has_frames_titles_and_is_deterministic() {
        let a = svg(&stacks(), &FlameOptions::default());
        assert_eq!(a, svg(&stacks(), &FlameOptions::default()));
        assert!(a.starts_with("<?xml"));
        assert!(
            a.contains("<title>hot&lt;T&gt; (90 samples, 90.00%)</title>"),
            "{a}"
        );
        assert!(a.contains(">main</text>"));
        assert_eq!(a.matches("<rect").count(), 1 + 5);
        // The same name always gets the same colour.
        assert_eq!(colour("main"), colour("main"));
        assert!(svg(&[], &FlameOptions::default()).contains("no samples"));
        // A deep stack too thin to draw does not make the picture taller.
        let mut deep = stacks();
        deep.push(((0..200).map(|i| format!("f{i}")).collect(), 1, 1));
        deep[0].1 = 1_000_000;
        let d = svg(&deep, &FlameOptions::default());
        // Background, all, prog, main, hot<T> (cold is now too thin).
        assert_eq!(d.matches("<rect").count(), 5);
        assert!(d.contains("height=\"112\""), "{}", &d[..300]);
    }
}
