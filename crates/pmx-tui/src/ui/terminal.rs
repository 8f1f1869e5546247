//! The terminal as found, given back on every way out: raw mode and the
//! alternate screen entered by [`Screen::enter`], left by its drop (a
//! quit, an error, a signal, the target's exit) and by the panic hook
//! it installs (a panic's message is then printed on the normal screen).

use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use std::io::Stdout;

/// The terminal in the UI's mode; restored when dropped.
pub struct Screen {
    /// The ratatui terminal drawing on standard output.
    pub terminal: ratatui::Terminal<CrosstermBackend<Stdout>>,
}

/// Leave raw mode and the alternate screen, show the cursor.
pub fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
}

impl Screen {
    /// Raw mode, the alternate screen, the cursor hidden; a panic hook
    /// that restores the terminal before the message.
    pub fn enter() -> std::io::Result<Screen> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        terminal::enable_raw_mode()?;
        let mut out = std::io::stdout();
        if let Err(e) = execute!(out, terminal::EnterAlternateScreen, cursor::Hide) {
            restore();
            return Err(e);
        }
        let terminal =
            ratatui::Terminal::new(CrosstermBackend::new(out)).inspect_err(|_| restore())?;
        Ok(Screen { terminal })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}
