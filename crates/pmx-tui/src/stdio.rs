//! `pmx top --stdio` (and `pmx top` when standard output is not a
//! terminal): the header and a table of the heaviest rows every refresh.

use crate::table::{by_time, columns, extra, lines, widths, Order};
use crate::top::{Aging, Frame, Session, TopError, TopOptions, TopOutcome, DECAY};
use std::io::Write;
use std::time::{Duration, Instant};

/// Refresh every `opts.delay` into `out` until `-n` refreshes, a signal
/// or the targets' end.
pub fn run(
    session: &mut Session,
    opts: &TopOptions,
    out: &mut dyn Write,
) -> Result<TopOutcome, TopError> {
    let aging = if opts.zero {
        Aging::Zero
    } else {
        Aging::Decay(DECAY)
    };
    let mut shown = 0u64;
    loop {
        let signal = wait(opts.delay);
        let frame = session.frame(aging)?;
        write(out, &frame, opts.entries)?;
        out.flush()?;
        shown += 1;
        if frame.ended {
            return Ok(TopOutcome::TargetsGone);
        }
        if let Some(s) = signal {
            return Ok(TopOutcome::Signal(s));
        }
        if opts.refreshes.is_some_and(|n| shown >= n) {
            return Ok(TopOutcome::Quit);
        }
    }
}

/// Sleep `d` in steps of 100 ms; a signal cuts it short.
fn wait(d: Duration) -> Option<i32> {
    let end = Instant::now() + d;
    loop {
        if let Some(s) = crate::signals::received() {
            return Some(s);
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// One refresh as text: the header, then per event its `entries`
/// heaviest rows (a sample-read group's with each member's count and
/// the `-M` metrics).
pub fn write(out: &mut dyn Write, frame: &Frame, entries: usize) -> std::io::Result<()> {
    writeln!(out, "{}", frame.header.line())?;
    for (i, ev) in frame.profile.events.iter().enumerate() {
        let rows = lines(frame, i, Order::Samples, "");
        if rows.is_empty() && ev.samples == 0 {
            continue;
        }
        let rows = &rows[..rows.len().min(entries)];
        let columns = columns(frame, i);
        let widths = widths(&columns);
        let children = rows.iter().any(|l| l.children.is_some());
        // Waits are weighed by their time: the share is of it, in ms.
        let (waited, unit) = match by_time(&ev.name) {
            true => (format!(", {} ms waited", ev.period / 1_000_000), "ms"),
            false => (String::new(), "samples"),
        };
        writeln!(out, "\n{}: {} samples{waited} (aged)", ev.name, ev.samples)?;
        let w = rows
            .iter()
            .map(|l| l.dso.len())
            .max()
            .unwrap_or(0)
            .clamp(6, 40);
        let head = if children {
            "children     self"
        } else {
            "    self"
        };
        let extra_head: String = (columns.iter().zip(&widths))
            .map(|(c, w)| format!("{c:>w$}  "))
            .collect();
        writeln!(
            out,
            "{head}  {:>8}  {extra_head}{:<15} {:<w$} symbol",
            unit, "command", "binary"
        )?;
        for l in rows {
            if let Some(c) = l.children {
                write!(out, "{c:>7.2}%  ")?;
            }
            writeln!(
                out,
                "{:>7.2}%  {:>8}  {}{:<15} {:<w$} {} {}",
                l.share,
                l.samples,
                extra(l, &widths),
                l.comm,
                l.dso,
                l.mode(),
                l.symbol
            )?;
        }
    }
    if frame.ended {
        writeln!(out, "\n(the sampled tasks have all exited)")?;
    }
    writeln!(out)
}
