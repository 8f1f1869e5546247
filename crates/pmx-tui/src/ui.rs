//! The terminal UI of `pmx top`: `app` (the state and what each key
//! does, no terminal) → `draw` (ratatui) on a `terminal::Screen` (raw
//! mode and the alternate screen, given back on every way out); the keys
//! are read by `terminal::Input` (`poll(2)` and `read(2)`, no crossterm
//! event reader) and parsed by `keys`. The loop waits for a key at most
//! 100 ms, so a signal or the refresh time is never missed; each draw
//! asks the terminal's size (ratatui's autoresize, `TIOCGWINSZ`), so a
//! resized window is drawn anew within 100 ms, no SIGWINCH needed.

pub mod app;
pub mod draw;
pub mod keys;
pub mod terminal;

use crate::top::{Aging, Session, TopError, TopOptions, TopOutcome, DECAY};
use app::{Action, App, View};
use std::time::{Duration, Instant};

/// Run the UI on this terminal until the user quits, a signal comes, the
/// `-n` refreshes are shown or the targets are gone.
pub fn run(session: &mut Session, opts: &TopOptions) -> Result<TopOutcome, TopError> {
    let mut screen = terminal::Screen::enter()?;
    let mut input = terminal::Input::open();
    let mut keys = Vec::new();
    let aging = if opts.zero {
        Aging::Zero
    } else {
        Aging::Decay(DECAY)
    };
    let mut app = App {
        status: opts.notes.join("; "),
        ..App::default()
    };
    // The first table soon, then one every delay.
    let mut next = Instant::now() + opts.delay.min(Duration::from_secs(1));
    let mut shown = 0u64;
    loop {
        if let Some(s) = crate::signals::received() {
            return Ok(TopOutcome::Signal(s));
        }
        screen.terminal.draw(|f| draw::draw(f, &mut app))?;
        let wait = next.saturating_duration_since(Instant::now());
        // A terminal that hung up (its window closed) reads end-of-file
        // for ever: that is the end, as SIGHUP.
        keys.clear();
        if input
            .keys(wait.min(Duration::from_millis(100)), &mut keys)
            .is_err()
        {
            return Ok(TopOutcome::Signal(libc::SIGHUP));
        }
        for &k in &keys {
            match app.key(k) {
                Action::None => {}
                Action::Quit => return Ok(TopOutcome::Quit),
                Action::Zero => {
                    session.frame(Aging::Zero)?;
                    app.set_frame(session.frame(Aging::Keep)?);
                }
                Action::Annotate(symbol, dso) => {
                    app.view = annotate(session, &symbol, &dso);
                }
            }
        }
        if Instant::now() < next {
            continue;
        }
        next += opts.delay;
        if app.paused {
            continue;
        }
        let frame = session.frame(aging)?;
        let ended = frame.ended;
        app.set_frame(frame);
        shown += 1;
        if ended {
            return Ok(TopOutcome::TargetsGone);
        }
        if opts.refreshes.is_some_and(|n| shown >= n) {
            return Ok(TopOutcome::Quit);
        }
    }
}

/// The annotate view of `symbol` in `dso`: `pmx annotate`'s text of the
/// samples so far, or why there is none.
fn annotate(session: &mut Session, symbol: &str, dso: &str) -> View {
    let lines = match session.annotate(symbol, Some(dso)) {
        Ok(a) => {
            let mut buf = Vec::new();
            match pmx_profile::annotate::render::text(&a, false, &mut buf) {
                Ok(()) => String::from_utf8_lossy(&buf)
                    .lines()
                    .map(str::to_string)
                    .collect(),
                Err(e) => vec![e.to_string()],
            }
        }
        Err(e) => vec![e],
    };
    View::Annotate {
        title: format!("{symbol} in {dso}"),
        lines,
        scroll: 0,
    }
}
