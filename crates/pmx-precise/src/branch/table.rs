//! A branch report in perf report's `--branch-stack --stdio` layout
//! (the lines before the table as perf's, `Samples` counting branches),
//! and as JSON.

use super::{BranchEvent, BranchKey, BranchReport, End};
use pmx_profile::perf_text::abbreviated;
use pmx_profile::report::{pct, Report};
use std::fmt::Write as _;
use std::io::Write;

/// perf's lines before a branch or block table: where the header is, the
/// lost samples.
pub(crate) fn preamble(out: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    writeln!(
        out,
        "# To display the perf.data header info, please use --header/--header-only options.\n#"
    )?;
    let lost = report.profile.stats.lost_samples;
    writeln!(out, "#\n# Total Lost Samples: {lost}\n#")
}

/// The report to `out`: perf's table, or JSON; flushed.
pub fn write(out: &mut dyn Write, r: &BranchReport, json: bool) -> std::io::Result<()> {
    match json {
        true => writeln!(out, "{:#}", self::json(r))?,
        false => print(out, r)?,
    }
    out.flush()
}

/// perf's table of every event with branches.
pub fn print(out: &mut dyn Write, r: &BranchReport) -> std::io::Result<()> {
    preamble(out, &r.report)?;
    for (n, e) in r.events.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\n")?;
        }
        writeln!(
            out,
            "# Samples: {} of event '{}'",
            abbreviated(e.branches),
            e.name
        )?;
        writeln!(out, "# Event count (approx.): {}\n#", e.branches)?;
        event_table(out, (&r.keys, &r.ends), e, r.report.options.percent_limit)?;
    }
    writeln!(
        out,
        "\n\n#\n# (Tip: pmx script -F ip,brstack prints every branch of every sample)\n#"
    )
}

fn event_table(
    out: &mut dyn Write,
    (keys, ends): (&[BranchKey], &[End]),
    e: &BranchEvent,
    limit: f64,
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = keys.iter().map(|k| k.heading().len()).collect();
    for row in &e.rows {
        for (w, k) in widths.iter_mut().zip(keys) {
            *w = (*w).max(k.width(ends, row));
        }
    }
    // perf pads every cell but a function or address in the last
    // column of a row (its headings are padded).
    let line = |l: &mut String, cells: &[&str], row: bool| {
        for (j, (c, (&w, k))) in cells.iter().zip(widths.iter().zip(keys)).enumerate() {
            padded(
                l,
                c,
                w,
                k.cut(),
                !(row && j + 1 == keys.len() && k.unpadded_last()),
            );
        }
    };
    let mut l = String::new();
    let heads: Vec<&str> = keys.iter().map(|k| k.heading()).collect();
    line(&mut l, &heads, false);
    writeln!(out, "# Overhead{l}")?;
    let dots: Vec<String> = widths.iter().map(|&w| ".".repeat(w)).collect();
    l.clear();
    line(
        &mut l,
        &dots.iter().map(|d| &**d).collect::<Vec<_>>(),
        false,
    );
    writeln!(out, "# ........{l}\n#")?;
    let mut cell = String::new();
    for row in &e.rows {
        let share = pct(row.count, e.branches);
        if share < limit {
            continue;
        }
        l.clear();
        share_into(&mut l, share);
        for (j, (k, &w)) in keys.iter().zip(&widths).enumerate() {
            cell.clear();
            k.cell_into(ends, row, &mut cell);
            let pad = !(j + 1 == keys.len() && k.unpadded_last());
            padded(&mut l, &cell, w, k.cut(), pad);
        }
        l.push('\n');
        out.write_all(l.as_bytes())?;
    }
    Ok(())
}

/// `"  {share:>7.2}%"` without `fmt`'s float formatting (a table may
/// have millions of rows). `{:.2}` rounds the share's exact value; the
/// product `share × 100` is within 10⁻¹¹ of it for a share up to 100,
/// so where its fraction is not within 10⁻⁶ of a half both round to
/// the same integer. Near a half, and for any other value, `fmt` does it.
fn share_into(l: &mut String, share: f64) {
    let x = share * 100.0;
    if !(0.0..=1e12).contains(&x) || ((x - x.floor()) - 0.5).abs() < 1e-6 {
        _ = write!(l, "  {share:>7.2}%");
        return;
    }
    let n = x.round() as u64;
    let mut b = [b' '; 32];
    let mut i = b.len() - 1;
    b[i] = b'%';
    // The digits from the last: two decimals, the point, the whole part.
    let mut rest = n;
    for k in 0.. {
        if k == 2 {
            i -= 1;
            b[i] = b'.';
        }
        i -= 1;
        b[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if k >= 2 && rest == 0 {
            break;
        }
    }
    // Right-aligned in 7 characters, after two spaces.
    let start = i.min(b.len() - 1 - 7) - 2;
    l.push_str(std::str::from_utf8(&b[start..]).unwrap_or_default());
}

/// A cell after its two spaces: cut to `w` characters when `cut`,
/// padded to `w` when `pad` (perf's `%-*.*s` and `%-*s`).
/// An ASCII cell (the usual one) is cut and counted by its bytes, the
/// padding written in runs of spaces, not a character at a time.
fn padded(l: &mut String, c: &str, w: usize, cut: bool, pad: bool) {
    const SPACES: &str = "                                ";
    l.push_str("  ");
    let ascii = c.is_ascii();
    let c = match cut {
        true if ascii => &c[..c.len().min(w)],
        true => c.char_indices().nth(w).map_or(c, |(i, _)| &c[..i]),
        false => c,
    };
    l.push_str(c);
    if pad {
        let n = if ascii { c.len() } else { c.chars().count() };
        let mut rest = w.saturating_sub(n);
        while rest > 0 {
            let k = rest.min(SPACES.len());
            l.push_str(&SPACES[..k]);
            rest -= k;
        }
    }
}

/// The report as JSON: per event its branches and rows (each key's cell
/// by perf's key name, the branches and their share).
pub fn json(r: &BranchReport) -> serde_json::Value {
    let events: Vec<serde_json::Value> = (r.events.iter())
        .map(|e| {
            let rows: Vec<serde_json::Value> = (e.rows.iter())
                .filter(|row| pct(row.count, e.branches) >= r.report.options.percent_limit)
                .map(|row| {
                    let mut m = serde_json::Map::new();
                    for k in &r.keys {
                        m.insert(k.name().into(), k.cell(&r.ends, row).into());
                    }
                    m.insert("branches".into(), row.count.into());
                    m.insert("overhead".into(), pct(row.count, e.branches).into());
                    m.into()
                })
                .collect();
            serde_json::json!({ "event": e.name, "branches": e.branches, "rows": rows })
        })
        .collect();
    serde_json::json!({ "file": r.report.file, "events": events })
}

#[cfg(test)]
mod tests {
    use super::share_into;
    use std::fmt::Write as _;

    /// The shares of every count of small and odd totals, ties of the
    /// product and large values: as `fmt` writes them.
    #[test]
    fn shares_are_written_as_fmt_writes_them() {
        let mut shares: Vec<f64> = Vec::new();
        for total in [1u64, 3, 7, 8, 16, 200, 999, 1000, 29_696, 65_536, 1_000_003] {
            let step = (total / 5000).max(1);
            for part in (0..=total).step_by(step as usize) {
                shares.push(pmx_profile::report::pct(part, total));
            }
        }
        shares.extend([
            0.125, 0.005, 0.015, 1.005, 99.995, 100.0, 12345.678, 1e7, 5e-3,
        ]);
        let (mut ours, mut theirs) = (String::new(), String::new());
        for s in shares {
            ours.clear();
            theirs.clear();
            share_into(&mut ours, s);
            _ = write!(theirs, "  {s:>7.2}%");
            assert_eq!(ours, theirs, "share {s:e}");
        }
    }
}
