//! The differential flame graph of two profiles (BASE, NEW): frames
//! matched by name along the stack, each box as wide as its samples in
//! NEW, coloured by the change of its share of samples (NEW share − BASE
//! share, in percentage points): red for growth, blue for shrinkage, the
//! deeper the larger the change (full colour at the largest change of the
//! graph), grey when it changed by less than a twentieth of that (and at
//! least 0.1 points). A legend says so; the frames of BASE only, which
//! have no width in NEW, are named under it. Tooltips give both shares.
//! [`folded`] writes the stacks with both counts (`stack base new`, the
//! format of Brendan Gregg's `difffolded.pl`, which his `flamegraph.pl`
//! draws).

use super::{label, open_svg, FRAME_H, PAD_BOTTOM, PAD_X};
use pmx_model::xml::escape;
use pmx_symbols::symbolize::is_address;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The stacks of one event in both files, matched by frame names (an
/// unresolved address is `[unknown]` on both sides: addresses never pair).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffStacks {
    /// Frames root → leaf (the command first) → (BASE samples, NEW samples).
    pub stacks: BTreeMap<Vec<String>, (u64, u64)>,
    /// BASE's samples with a stack.
    pub base_total: u64,
    /// NEW's samples with a stack.
    pub new_total: u64,
}

impl DiffStacks {
    /// Pair the stacks (frames, samples, period) of BASE and NEW.
    pub fn new(base: &[(Vec<String>, u64, u64)], new: &[(Vec<String>, u64, u64)]) -> DiffStacks {
        let mut d = DiffStacks::default();
        let names = |frames: &[String]| -> Vec<String> {
            frames
                .iter()
                .map(|f| {
                    if is_address(f) {
                        "[unknown]".to_string()
                    } else {
                        f.clone()
                    }
                })
                .collect()
        };
        for (frames, samples, _) in base {
            d.stacks.entry(names(frames)).or_default().0 += samples;
            d.base_total += samples;
        }
        for (frames, samples, _) in new {
            d.stacks.entry(names(frames)).or_default().1 += samples;
            d.new_total += samples;
        }
        d
    }
}

/// `frames;joined count_base count_new` per stack, sorted by stack.
pub fn folded(d: &DiffStacks) -> String {
    let mut out = String::new();
    for (frames, (b, n)) in &d.stacks {
        let line: Vec<String> = frames.iter().map(|f| f.replace(';', ":")).collect();
        let _ = writeln!(out, "{} {b} {n}", line.join(";"));
    }
    out
}

#[derive(Default)]
struct Node {
    base: u64,
    new: u64,
    children: BTreeMap<String, Node>,
}

/// What every box needs: the scale, the totals and the colour scale.
struct Scale {
    px: f64,
    height: f64,
    base_total: u64,
    new_total: u64,
    /// The largest |change| of a drawn frame (full colour).
    max: f64,
    /// Changes smaller than this are grey.
    grey: f64,
}

const PAD_TOP: f64 = 72.0;
const GREY: (u8, u8, u8) = (200, 200, 200);

fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

impl Scale {
    fn delta(&self, n: &Node) -> f64 {
        share(n.new, self.new_total) - share(n.base, self.base_total)
    }
}

/// The colour of a change of `delta` points.
fn tint(delta: f64, s: &Scale) -> (u8, u8, u8) {
    if delta.abs() < s.grey || s.max <= 0.0 {
        return GREY;
    }
    let t = (delta.abs() / s.max).min(1.0);
    let level = (215.0 - 185.0 * t).round() as u8;
    if delta > 0.0 {
        (255, level, level)
    } else {
        (level, level, 255)
    }
}

fn tree(d: &DiffStacks) -> Node {
    let mut root = Node {
        base: d.base_total,
        new: d.new_total,
        ..Node::default()
    };
    for (frames, &(b, n)) in &d.stacks {
        let mut node = &mut root;
        for f in frames {
            node = node.children.entry(f.clone()).or_default();
            node.base += b;
            node.new += n;
        }
    }
    root
}

/// The largest |change| among frames drawn (`new` at least `min`), and
/// the depth of the deepest such frame.
fn survey(node: &Node, s: &Scale, min: f64, depth: usize) -> (f64, usize) {
    let mut out = (s.delta(node).abs(), depth);
    for c in node.children.values().filter(|c| c.new as f64 >= min) {
        let (m, d) = survey(c, s, min, depth + 1);
        out = (out.0.max(m), out.1.max(d));
    }
    out
}

/// Frames of BASE only whose caller is in NEW: (path, BASE share).
fn gone(node: &Node, path: &str, s: &Scale, out: &mut Vec<(String, f64)>) {
    for (name, c) in &node.children {
        let p = if path.is_empty() {
            name.clone()
        } else {
            format!("{path};{name}")
        };
        if c.new == 0 {
            out.push((p, share(c.base, s.base_total)));
        } else {
            gone(c, &p, s, out);
        }
    }
}

/// Draw the differential flame graph of `d` titled `title`.
pub fn svg(d: &DiffStacks, title: &str) -> String {
    let root = tree(d);
    let width = 1200.0;
    let mut s = Scale {
        px: (width - 2.0 * PAD_X) / root.new.max(1) as f64,
        height: 0.0,
        base_total: d.base_total,
        new_total: d.new_total,
        max: 0.0,
        grey: 0.0,
    };
    let min = root.new as f64 * 0.1 / (width - 2.0 * PAD_X);
    let (max, depth) = survey(&root, &s, min, 0);
    s.max = max;
    s.grey = (max / 20.0).max(0.1);
    s.height = PAD_TOP + PAD_BOTTOM + FRAME_H * (depth as f64 + 1.0);
    let mut out = open_svg(width, s.height, title);
    legend(&mut out, &s);
    let mut lost = Vec::new();
    gone(&root, "", &s, &mut lost);
    lost.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !lost.is_empty() {
        let shown: Vec<String> = lost
            .iter()
            .take(3)
            .map(|(p, sh)| format!("{} ({sh:.2}% in BASE)", p.rsplit(';').next().unwrap_or(p)))
            .collect();
        let more = if lost.len() > 3 { ", …" } else { "" };
        let _ = writeln!(
            out,
            "<text x=\"{PAD_X}\" y=\"62\">gone from NEW (no width, not drawn): {}{more}</text>",
            escape(&shown.join(", "))
        );
    }
    if root.new == 0 {
        out.push_str("<text x=\"10\" y=\"90\">no samples in NEW</text>\n</svg>\n");
        return out;
    }
    draw(&mut out, "all", &root, 0, PAD_X, &s);
    out.push_str("</svg>\n");
    out
}

/// The colour key: seven swatches from the largest shrinkage to the
/// largest growth, with what they mean.
fn legend(out: &mut String, s: &Scale) {
    let _ = writeln!(
        out,
        "<g id=\"legend\"><text x=\"{PAD_X}\" y=\"44\">share NEW − BASE:</text>"
    );
    for (i, t) in [-1.0, -2.0 / 3.0, -1.0 / 3.0, 0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0]
        .into_iter()
        .enumerate()
    {
        let delta = t * s.max;
        let (r, g, b) = tint(delta, s);
        let _ = writeln!(
            out,
            "<g><title>{delta:+.2} points</title><rect x=\"{:.1}\" y=\"34\" width=\"24\" height=\"12\" fill=\"rgb({r},{g},{b})\"/></g>",
            120.0 + 26.0 * i as f64
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"310\" y=\"44\">blue: shrank, red: grew (full colour at ±{:.2} points); grey: changed by less than {:.2} points; widths from NEW</text></g>",
        s.max, s.grey
    );
}

fn draw(out: &mut String, name: &str, node: &Node, depth: usize, x: f64, s: &Scale) {
    let w = node.new as f64 * s.px;
    if w < 0.1 {
        return;
    }
    let y = s.height - PAD_BOTTOM - FRAME_H * (depth as f64 + 1.0);
    let delta = s.delta(node);
    let (r, g, b) = tint(delta, s);
    let _ = write!(
        out,
        "<g><title>{} — BASE {:.2}% ({} samples), NEW {:.2}% ({} samples), {delta:+.2} points</title>\
         <rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{fh:.1}\" fill=\"rgb({r},{g},{b})\" rx=\"2\" ry=\"2\"/>",
        escape(name),
        share(node.base, s.base_total),
        node.base,
        share(node.new, s.new_total),
        node.new,
        fh = FRAME_H - 1.0
    );
    label(out, name, x, y, w);
    out.push_str("</g>\n");
    let mut cx = x;
    for (child_name, child) in &node.children {
        draw(out, child_name, child, depth + 1, cx, s);
        cx += child.new as f64 * s.px;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// BASE: 80 of 100 samples in alpha, 20 in common; NEW: 10 of 100 in
    /// alpha, 70 in beta, 20 in common; an unresolved address in both.
    fn stacks() -> DiffStacks {
        DiffStacks::new(
            &[
                (s(&["m", "main", "alpha"]), 75, 0),
                (s(&["m", "main", "common"]), 20, 0),
                (s(&["m", "main", "0x0000000000401136"]), 5, 0),
            ],
            &[
                (s(&["m", "main", "alpha"]), 10, 0),
                (s(&["m", "main", "beta"]), 65, 0),
                (s(&["m", "main", "common"]), 20, 0),
                (s(&["m", "main", "0x0000000000401200"]), 5, 0),
            ],
        )
    }

    #[test]
    fn folded_has_both_counts_and_unknown_for_addresses() {
        assert_eq!(
            folded(&stacks()),
            "m;main;[unknown] 5 5\nm;main;alpha 75 10\nm;main;beta 0 65\nm;main;common 20 20\n"
        );
    }

    #[test]
    fn colours_follow_the_change_of_share() {
        let svg = svg(&stacks(), "t");
        // beta: 0% → 65%, the largest change: full red (215 − 185 = 30).
        assert!(
            svg.contains("<title>beta — BASE 0.00% (0 samples), NEW 65.00% (65 samples), +65.00 points</title><rect x=")
                && svg.contains("fill=\"rgb(255,30,30)\" rx"),
            "{svg}"
        );
        // alpha: 75% → 10%, −65 points: full blue.
        assert!(svg.contains("NEW 10.00% (10 samples), -65.00 points</title>"));
        assert!(svg.contains("fill=\"rgb(30,30,255)\" rx"));
        // common and main (100% → 100%) unchanged: grey.
        let common = svg.split("<title>common").nth(1).unwrap();
        assert!(common
            .split("</g>")
            .next()
            .unwrap()
            .contains("rgb(200,200,200)"));
        // The legend: seven swatches, full blue to full red, and its text.
        assert!(svg.contains("<g id=\"legend\">"));
        assert!(svg.contains("<title>-65.00 points</title><rect x=\"120.0\" y=\"34\" width=\"24\" height=\"12\" fill=\"rgb(30,30,255)\"/>"));
        assert!(svg.contains("<title>+65.00 points</title><rect x=\"276.0\" y=\"34\" width=\"24\" height=\"12\" fill=\"rgb(255,30,30)\"/>"));
        assert!(
            svg.contains("full colour at ±65.00 points); grey: changed by less than 3.25 points"),
            "{svg}"
        );
        // Widths from NEW: beta is 65 of 100 samples of 1180 pixels.
        assert!(svg.contains("width=\"767.0\""), "{svg}");
        // Addresses were merged into [unknown] on both sides: unchanged.
        let unknown = svg.split("<title>[unknown]").nth(1).unwrap();
        assert!(
            unknown.starts_with(" — BASE 5.00% (5 samples), NEW 5.00% (5 samples), +0.00 points")
        );
    }

    #[test]
    fn gone_frames_are_named_and_empty_new_says_so() {
        let d = DiffStacks::new(
            &[
                (s(&["m", "main", "alpha"]), 60, 0),
                (s(&["m", "main", "common"]), 40, 0),
            ],
            &[(s(&["m", "main", "common"]), 50, 0)],
        );
        let svg = svg(&d, "t");
        assert!(
            svg.contains("gone from NEW (no width, not drawn): alpha (60.00% in BASE)"),
            "{svg}"
        );
        assert!(!svg.contains("<title>alpha"));
        let empty = DiffStacks::new(&[(s(&["m"]), 1, 0)], &[]);
        assert!(super::svg(&empty, "t").contains("no samples in NEW"));
    }
}
