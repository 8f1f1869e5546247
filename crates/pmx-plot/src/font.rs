//! A small stroke font, drawn for pmx: every printable ASCII character as
//! line segments on a grid, so charts need no system font.
//!
//! Grid: x grows to the right from 0; y grows downwards, 0 is the top of
//! capitals and ascenders, 4 the top of lower-case letters, 12 the baseline
//! and 15 the bottom of descenders. A font of size `s` pixels draws one grid
//! unit as `s / 16` pixels, so capitals are `0.75 s` tall. Each glyph has
//! an advance (its width plus 2 units to the next glyph; drawing adds one
//! more unit of tracking) and strokes, each a
//! polyline written as `x,y` points; `;` separates strokes. A stroke of two
//! points one unit apart, drawn with round caps, makes a dot.
//!
//! Characters outside printable ASCII are drawn as an empty box.

use std::sync::OnceLock;

/// Grid units per pixel of font size.
const UNITS: f64 = 16.0;
/// The baseline, in grid units from the top.
const BASELINE: f64 = 12.0;
/// Extra space between glyphs, added to every advance.
const TRACKING: f64 = 1.0;
/// Space after the last glyph that is not part of a text's width: the
/// tracking and the 2 units each glyph keeps to its right.
const GAP: f64 = 2.0 + TRACKING;

/// `(character, advance, strokes)` for ' ' to '~'.
const GLYPHS: &[(char, u8, &str)] = &[
    (' ', 6, ""),
    ('!', 4, "1,0 1,8; 1,11 1,12"),
    ('"', 7, "1,0 1,3; 4,0 4,3"),
    ('#', 11, "3,0 2,12; 7,0 6,12; 0,4 9,4; 0,8 9,8"),
    (
        '$',
        10,
        "8,2 6,1 2,1 0,3 0,4 2,6 6,6 8,8 8,9 6,11 2,11 0,10; 4,0 4,12",
    ),
    (
        '%',
        10,
        "0,12 8,0; 2,0 0,2 2,4 4,2 2,0; 6,8 4,10 6,12 8,10 6,8",
    ),
    (
        '&',
        10,
        "8,12 2,4 2,2 3,0 5,0 6,2 6,3 0,8 0,10 2,12 4,12 8,7",
    ),
    ('\'', 4, "1,0 1,3"),
    ('(', 6, "3,0 1,2 0,5 0,8 1,11 3,13"),
    (')', 6, "0,0 2,2 3,5 3,8 2,11 0,13"),
    ('*', 8, "3,1 3,7; 0,2 6,6; 6,2 0,6"),
    ('+', 10, "4,3 4,11; 0,7 8,7"),
    (',', 4, "1,11 1,12 0,14"),
    ('-', 8, "0,7 6,7"),
    ('.', 4, "1,11 1,12"),
    ('/', 8, "0,13 6,0"),
    (
        '0',
        10,
        "3,0 5,0 6,1 7,3 7,9 6,11 5,12 3,12 2,11 1,9 1,3 2,1 3,0",
    ),
    ('1', 10, "1,2 4,0 4,12; 1,12 7,12"),
    ('2', 10, "0,3 1,1 3,0 5,0 7,1 8,3 8,4 7,6 0,12 8,12"),
    (
        '3',
        10,
        "0,1 2,0 6,0 8,2 8,4 6,6 3,6; 6,6 8,8 8,10 6,12 2,12 0,11",
    ),
    ('4', 10, "6,12 6,0 0,8 8,8"),
    ('5', 10, "8,0 1,0 1,5 3,4 6,4 8,6 8,10 6,12 2,12 0,11"),
    (
        '6',
        10,
        "7,1 5,0 3,0 1,1 0,3 0,9 1,11 3,12 5,12 7,11 8,9 8,7 7,5 5,4 3,4 1,5 0,7",
    ),
    ('7', 10, "0,0 8,0 3,12"),
    (
        '8',
        10,
        "4,6 1,5 1,1 2,0 6,0 7,1 7,5 4,6 1,7 0,9 0,10 1,11 3,12 5,12 7,11 8,10 8,9 7,7 4,6",
    ),
    (
        '9',
        10,
        "1,11 3,12 5,12 7,11 8,9 8,3 7,1 5,0 3,0 1,1 0,3 0,5 1,7 3,8 5,8 7,7 8,5",
    ),
    (':', 4, "1,5 1,6; 1,11 1,12"),
    (';', 4, "1,5 1,6; 1,11 1,12 0,14"),
    ('<', 10, "8,2 0,7 8,12"),
    ('=', 10, "0,5 8,5; 0,9 8,9"),
    ('>', 10, "0,2 8,7 0,12"),
    ('?', 10, "0,2 2,0 6,0 8,2 8,4 4,7 4,8; 4,11 4,12"),
    (
        '@',
        13,
        "8,8 8,4 6,3 4,3 3,5 3,8 4,9 6,9 8,8 9,7 10,5 10,3 8,1 6,0 4,0 1,1 0,3 0,9 1,11 4,12 7,12",
    ),
    ('A', 10, "0,12 4,0 8,12; 1,9 7,9"),
    (
        'B',
        10,
        "0,12 0,0 5,0 7,1 7,5 5,6 0,6; 5,6 7,7 8,9 7,11 5,12 0,12",
    ),
    ('C', 10, "8,2 6,0 3,0 1,1 0,3 0,9 1,11 3,12 6,12 8,10"),
    ('D', 10, "0,0 0,12 4,12 7,11 8,9 8,3 7,1 4,0 0,0"),
    ('E', 10, "8,0 0,0 0,12 8,12; 0,6 6,6"),
    ('F', 10, "8,0 0,0 0,12; 0,6 6,6"),
    (
        'G',
        10,
        "8,2 6,0 3,0 1,1 0,3 0,9 1,11 3,12 6,12 8,10 8,7 5,7",
    ),
    ('H', 10, "0,0 0,12; 8,0 8,12; 0,6 8,6"),
    ('I', 7, "0,0 4,0; 2,0 2,12; 0,12 4,12"),
    ('J', 10, "8,0 8,9 7,11 5,12 3,12 1,11 0,9"),
    ('K', 10, "0,0 0,12; 8,0 0,8; 3,5 8,12"),
    ('L', 10, "0,0 0,12 8,12"),
    ('M', 12, "0,12 0,0 5,8 10,0 10,12"),
    ('N', 10, "0,12 0,0 8,12 8,0"),
    (
        'O',
        11,
        "3,0 6,0 8,2 9,4 9,8 8,10 6,12 3,12 1,10 0,8 0,4 1,2 3,0",
    ),
    ('P', 10, "0,12 0,0 6,0 8,2 8,4 6,6 0,6"),
    (
        'Q',
        11,
        "3,0 6,0 8,2 9,4 9,8 8,10 6,12 3,12 1,10 0,8 0,4 1,2 3,0; 6,9 9,13",
    ),
    ('R', 10, "0,12 0,0 6,0 8,2 8,4 6,6 0,6; 5,6 8,12"),
    (
        'S',
        10,
        "8,2 6,0 2,0 0,2 0,4 2,6 6,6 8,8 8,10 6,12 2,12 0,10",
    ),
    ('T', 10, "0,0 8,0; 4,0 4,12"),
    ('U', 10, "0,0 0,9 1,11 3,12 5,12 7,11 8,9 8,0"),
    ('V', 10, "0,0 4,12 8,0"),
    ('W', 12, "0,0 2,12 5,4 8,12 10,0"),
    ('X', 10, "0,0 8,12; 8,0 0,12"),
    ('Y', 10, "0,0 4,6 8,0; 4,6 4,12"),
    ('Z', 10, "0,0 8,0 0,12 8,12"),
    ('[', 6, "4,0 1,0 1,13 4,13"),
    ('\\', 8, "0,0 6,13"),
    (']', 6, "0,0 3,0 3,13 0,13"),
    ('^', 10, "0,4 4,0 8,4"),
    ('_', 10, "0,14 8,14"),
    ('`', 4, "0,0 2,2"),
    ('a', 9, "7,4 7,12; 7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,10"),
    ('b', 9, "0,0 0,12; 0,6 2,4 5,4 7,6 7,10 5,12 2,12 0,10"),
    ('c', 9, "7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,10"),
    ('d', 9, "7,0 7,12; 7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,10"),
    ('e', 9, "0,8 7,8 7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,11"),
    ('f', 7, "6,1 5,0 3,0 2,1 2,12; 0,4 5,4"),
    (
        'g',
        9,
        "7,4 7,14 5,15 2,15 0,14; 7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,10",
    ),
    ('h', 9, "0,0 0,12; 0,6 2,4 5,4 7,6 7,12"),
    ('i', 4, "1,4 1,12; 1,1 1,2"),
    ('j', 6, "3,4 3,14 2,15 0,15; 3,1 3,2"),
    ('k', 8, "0,0 0,12; 6,4 0,10; 2,8 6,12"),
    ('l', 5, "1,0 1,11 2,12"),
    (
        'm',
        11,
        "0,4 0,12; 0,6 1,4 3,4 4,6 4,12; 4,6 5,4 7,4 8,6 8,12",
    ),
    ('n', 9, "0,4 0,12; 0,6 2,4 5,4 7,6 7,12"),
    ('o', 9, "2,4 5,4 7,6 7,10 5,12 2,12 0,10 0,6 2,4"),
    ('p', 9, "0,4 0,15; 0,6 2,4 5,4 7,6 7,10 5,12 2,12 0,10"),
    ('q', 9, "7,4 7,15; 7,6 5,4 2,4 0,6 0,10 2,12 5,12 7,10"),
    ('r', 8, "0,4 0,12; 0,7 3,4 6,4"),
    (
        's',
        9,
        "7,5 5,4 2,4 0,5 0,7 2,8 5,8 7,9 7,11 5,12 2,12 0,11",
    ),
    ('t', 7, "2,0 2,11 3,12 5,12; 0,4 5,4"),
    ('u', 9, "0,4 0,10 2,12 5,12 7,10; 7,4 7,12"),
    ('v', 10, "0,4 4,12 8,4"),
    ('w', 12, "0,4 2,12 5,6 8,12 10,4"),
    ('x', 9, "0,4 7,12; 7,4 0,12"),
    ('y', 10, "0,4 4,12; 8,4 3,14 2,15 0,15"),
    ('z', 9, "0,4 7,4 0,12 7,12"),
    ('{', 6, "4,0 3,0 2,1 2,5 0,6 2,7 2,12 3,13 4,13"),
    ('|', 4, "1,0 1,14"),
    ('}', 6, "0,0 1,0 2,1 2,5 4,6 2,7 2,12 1,13 0,13"),
    ('~', 10, "0,7 1,6 3,6 5,8 7,8 8,7"),
];

/// The glyph drawn for characters the font does not have.
const MISSING: (u8, &str) = (10, "0,0 7,0 7,12 0,12 0,0");

/// One parsed glyph.
#[derive(Debug, Clone)]
struct Glyph {
    advance: f64,
    strokes: Vec<Vec<(f64, f64)>>,
}

fn parse_strokes(spec: &str) -> Vec<Vec<(f64, f64)>> {
    spec.split(';')
        .map(|stroke| {
            stroke
                .split_whitespace()
                .filter_map(|pt| {
                    let (x, y) = pt.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect::<Vec<(f64, f64)>>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// Glyphs for ' '..='~' (index `c - ' '`), then the missing-glyph box.
fn glyphs() -> &'static [Glyph] {
    static TABLE: OnceLock<Vec<Glyph>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut v: Vec<Glyph> = GLYPHS
            .iter()
            .map(|&(_, advance, spec)| Glyph {
                advance: f64::from(advance) + TRACKING,
                strokes: parse_strokes(spec),
            })
            .collect();
        v.push(Glyph {
            advance: f64::from(MISSING.0) + TRACKING,
            strokes: parse_strokes(MISSING.1),
        });
        v
    })
}

fn glyph(c: char) -> &'static Glyph {
    let table = glyphs();
    let i = (c as u32).wrapping_sub(' ' as u32) as usize;
    if c == '\t' {
        return &table[0];
    }
    table
        .get(i)
        .filter(|_| i < GLYPHS.len())
        .unwrap_or(&table[GLYPHS.len()])
}

/// Where a text's anchor point sits along the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The anchor is the start of the text.
    Start,
    /// The anchor is the middle.
    Middle,
    /// The anchor is the end.
    End,
}

/// Cap height in pixels for a font of `size` pixels.
pub fn cap_height(size: f64) -> f64 {
    size * BASELINE / UNITS
}

/// Descender depth in pixels for a font of `size` pixels.
pub fn descent(size: f64) -> f64 {
    size * 3.0 / UNITS
}

/// Width in pixels of `text` at `size`.
pub fn text_width(text: &str, size: f64) -> f64 {
    let units: f64 = text.chars().map(|c| glyph(c).advance).sum();
    if units == 0.0 {
        return 0.0;
    }
    (units - GAP).max(0.0) * size / UNITS
}

/// The strokes that draw `text` with its baseline through `(x, y)`, placed
/// along the baseline by `anchor`. `vertical` turns the text a quarter turn
/// counter-clockwise (reading upwards, for a y-axis label).
pub fn text_strokes(
    text: &str,
    (x, y): (f64, f64),
    size: f64,
    anchor: Anchor,
    vertical: bool,
) -> Vec<Vec<(f64, f64)>> {
    let scale = size / UNITS;
    let width = text_width(text, size);
    let start = match anchor {
        Anchor::Start => 0.0,
        Anchor::Middle => -width / 2.0,
        Anchor::End => -width,
    };
    let place = |along: f64, across: f64| -> (f64, f64) {
        if vertical {
            (x + across, y - along)
        } else {
            (x + along, y + across)
        }
    };
    let mut out = Vec::new();
    let mut pen = start;
    for c in text.chars() {
        let g = glyph(c);
        for stroke in &g.strokes {
            out.push(
                stroke
                    .iter()
                    .map(|&(gx, gy)| place(pen + gx * scale, (gy - BASELINE) * scale))
                    .collect(),
            );
        }
        pen += g.advance * scale;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printable_ascii_character_has_a_glyph() {
        for (i, &(c, advance, spec)) in GLYPHS.iter().enumerate() {
            assert_eq!(
                c as usize,
                ' ' as usize + i,
                "glyph table out of order at {c:?}"
            );
            let strokes = parse_strokes(spec);
            let points: usize = spec.split(';').map(|s| s.split_whitespace().count()).sum();
            let parsed: usize = strokes.iter().map(Vec::len).sum();
            assert_eq!(points, parsed, "{c:?}: a point did not parse");
            for &(x, y) in strokes.iter().flatten() {
                assert!(
                    x >= 0.0 && x < f64::from(advance),
                    "{c:?}: x {x} outside the advance"
                );
                assert!((0.0..=15.0).contains(&y), "{c:?}: y {y} outside the grid");
            }
            if c != ' ' {
                assert!(!strokes.is_empty(), "{c:?} draws nothing");
                assert!(
                    strokes.iter().all(|s| s.len() >= 2),
                    "{c:?}: a stroke of one point"
                );
            }
        }
        assert_eq!(GLYPHS.last().map(|g| g.0), Some('~'));
    }

    #[test]
    fn widths_and_placement() {
        assert_eq!(text_width("", 16.0), 0.0);
        // '1' advances 10 + 1 units, minus the trailing gap of 3.
        assert_eq!(text_width("1", 16.0), 8.0);
        assert_eq!(text_width("11", 16.0), 19.0);
        assert_eq!(text_width("\u{e9}", 16.0), 8.0);
        let s = text_strokes("-", (100.0, 50.0), 16.0, Anchor::End, false);
        // '-' is "0,7 6,7": 6 units long, ends 2 units before the advance.
        assert_eq!(s, vec![vec![(94.0, 45.0), (100.0, 45.0)]]);
        let v = text_strokes("-", (100.0, 50.0), 16.0, Anchor::Start, true);
        assert_eq!(v, vec![vec![(95.0, 50.0), (95.0, 44.0)]]);
    }
}
