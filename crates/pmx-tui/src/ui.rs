//! The terminal UI of `pmx top`: `app` (the state and the keys, no
//! terminal) → `draw` (ratatui) on a `terminal::Screen` (raw mode and the
//! alternate screen, given back on every way out). The loop waits for a
//! key at most 100 ms, so a signal or the refresh time is never missed.

pub mod app;
pub mod draw;
pub mod terminal;

use crate::top::{Aging, Session, TopError, TopOptions, TopOutcome, DECAY};
use app::{Action, App, View};
use crossterm::event::{self, Event, KeyEventKind};
use std::time::{Duration, Instant};

/// Run the UI on this terminal until the user quits, a signal comes, the
/// `-n` refreshes are shown or the targets are gone.
pub fn run(session: &mut Session, opts: &TopOptions) -> Result<TopOutcome, TopError> {
    let mut screen = terminal::Screen::enter()?;
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
        // forever, and crossterm would spin on it: the wait is ours, and
        // crossterm only reads what is there.
        // crossterm is asked only when there is input: asked on a terminal
        // that hangs up meanwhile, it would spin in its read.
        let input = match wait_for_input(wait.min(Duration::from_millis(100))) {
            Input::HungUp => return Ok(TopOutcome::Signal(libc::SIGHUP)),
            Input::Ready => true,
            Input::None => false,
        };
        while input && event::poll(Duration::ZERO)? {
            let Event::Key(k) = event::read()? else {
                continue;
            };
            if k.kind == KeyEventKind::Release {
                continue;
            }
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

/// What the terminal has after a wait.
enum Input {
    /// Nothing to read.
    None,
    /// Bytes to read.
    Ready,
    /// It has hung up or is gone.
    HungUp,
}

/// Wait up to `d` for input on standard input (the terminal).
fn wait_for_input(d: Duration) -> Input {
    let mut p = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, d.as_millis() as i32) };
    if n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::HungUp
    } else if n > 0 {
        Input::Ready
    } else {
        Input::None
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
