//! Drawing the state: the header, the table (or help, or a function's
//! instructions) and the key line; a terminal too small says so.

use super::app::{App, View};
use crate::table::{columns, extra, widths};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// The smallest terminal the table fits in.
pub const MIN_SIZE: (u16, u16) = (60, 10);

const KEYS: &str =
    "q quit  ↑↓ PgUp PgDn Home End move  s sort  / filter  z zero  p pause  Enter annotate  h help";

const HELP: &[&str] = &[
    "pmx top: live hotspots, refreshed every -d seconds (older samples decay by 1/8 each time;",
    "-z forgets them instead).",
    "",
    "  q, Esc, Ctrl-C   quit (in the annotate view: Esc or ← goes back)",
    "  ↑ ↓ PgUp PgDn    move the selection",
    "  Home End         first, last row",
    "  s                next sort key: samples, children, command, binary, symbol",
    "  Tab              next event (with several -e)",
    "  /                filter by symbol, binary or command (Enter keeps it, Esc clears it)",
    "  z                zero the counts now",
    "  p                pause (the counts go on; the screen stays)",
    "  Enter            the selected function's instructions with their samples",
    "  h, ?             this help (any key returns)",
];

/// Draw `app` on `f`.
pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let msg = format!(
            "terminal too small ({}x{}): pmx top needs at least {}x{}",
            area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
        );
        f.render_widget(Paragraph::new(msg), area);
        return;
    }
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(header(app)), head);
    app.page = body.height.saturating_sub(1) as usize;
    match &app.view {
        View::Table => table(f, app, body),
        View::Help => f.render_widget(Paragraph::new(HELP.join("\n")), body),
        View::Annotate {
            title,
            lines,
            scroll,
        } => {
            let mut text = vec![Line::styled(
                format!("{title}   (Esc: back)"),
                Style::default().add_modifier(Modifier::BOLD),
            )];
            text.extend(lines.iter().skip(*scroll).map(|l| Line::raw(l.clone())));
            f.render_widget(Paragraph::new(text), body);
        }
    }
    let footer = if app.typing {
        format!("/{}▏  (Enter: keep, Esc: clear)", app.filter)
    } else {
        KEYS.to_string()
    };
    f.render_widget(Paragraph::new(footer).style(reverse()), foot);
}

fn reverse() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// The header's two lines.
fn header(app: &App) -> Vec<Line<'static>> {
    let first = match &app.frame {
        Some(f) => f.header.line(),
        None => "pmx top: waiting for the first refresh…".to_string(),
    };
    let mut second = format!("sort: {}", app.order.name());
    if !app.filter.is_empty() {
        second.push_str(&format!("   filter: {}", app.filter));
    }
    if let Some(f) = &app.frame {
        second.push_str(&format!("   rows: {}", app.rows.len()));
        if f.ended {
            second.push_str("   the sampled tasks have all exited");
        }
    }
    if app.paused {
        second.push_str("   [paused]");
    }
    if !app.status.is_empty() {
        second.push_str(&format!("   {}", app.status));
    }
    vec![
        Line::styled(first, Style::default().add_modifier(Modifier::BOLD)),
        Line::raw(second),
    ]
}

/// The table: a heading, then the rows from the offset, the selected
/// one reversed.
fn table(f: &mut Frame, app: &App, area: Rect) {
    let children = app.rows.iter().any(|l| l.children.is_some());
    let shown = &app.rows[app.offset.min(app.rows.len())..];
    let shown = &shown[..shown.len().min(app.page)];
    let w = shown
        .iter()
        .map(|l| l.dso.len())
        .max()
        .unwrap_or(0)
        .clamp(6, 32);
    let lead = if children {
        "children     self"
    } else {
        "    self"
    };
    let columns = (app.frame.as_ref())
        .map(|f| columns(f, app.event))
        .unwrap_or_default();
    let widths = widths(&columns);
    let extra_head: String = (columns.iter().zip(&widths))
        .map(|(c, w)| format!("{c:>w$}  "))
        .collect();
    // An off-CPU table's cells are milliseconds waited.
    let event = (app.frame.as_ref()).and_then(|f| f.profile.events.get(app.event));
    let unit = match event.is_some_and(|e| crate::table::by_time(&e.name)) {
        true => "ms",
        false => "samples",
    };
    let mut text = vec![Line::styled(
        format!(
            "{lead}  {:>8}  {extra_head}{:<15} {:<w$} symbol",
            unit, "command", "binary"
        ),
        Style::default().add_modifier(Modifier::UNDERLINED),
    )];
    for (i, l) in shown.iter().enumerate() {
        let c = l
            .children
            .map(|c| format!("{c:>7.2}%  "))
            .unwrap_or_default();
        let dso: String = l.dso.chars().take(w).collect();
        let s = format!(
            "{c}{:>7.2}%  {:>8}  {}{:<15} {:<w$} {} {}",
            l.share,
            l.samples,
            extra(l, &widths),
            l.comm,
            dso,
            l.mode(),
            l.symbol
        );
        let style = if app.offset + i == app.selected {
            reverse()
        } else {
            Style::default()
        };
        text.push(Line::styled(s, style));
    }
    if shown.is_empty() {
        text.push(Line::raw(if app.filter.is_empty() {
            "(no samples yet)"
        } else {
            "(no row matches the filter)"
        }));
    }
    f.render_widget(Paragraph::new(text), area);
}
