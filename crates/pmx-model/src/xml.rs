//! Text for XML (and so SVG) content and attributes: the one escaping
//! every pmx SVG writer uses (`pmx-plot`'s charts, `pmx-profile`'s flame
//! graphs).

/// `s` as XML character data or a quoted attribute value: the five
/// markup characters as entities (`&amp; &lt; &gt; &quot; &apos;`), tab,
/// newline and carriage return as a space (a label is one line), and the
/// characters XML 1.0 cannot hold (the other C0 controls, U+FFFE,
/// U+FFFF) as U+FFFD, so the document always parses.
///
/// ```
/// use pmx_model::xml::escape;
/// assert_eq!(escape("a<b & \"c\" 'd'\t\u{1}"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos; \u{fffd}");
/// ```
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
