//! The terminal as found, given back on every way out: raw mode and the
//! alternate screen entered by [`Screen::enter`], left by its drop (a
//! quit, an error, a signal, the target's exit) and by the panic hook
//! it installs (a panic's message is then printed on the normal screen).
//!
//! The keys: [`Input`] reads the terminal's bytes itself — `poll(2)`,
//! then a non-blocking `read(2)` — and parses them with
//! [`keys::Parser`]. crossterm's event reader is not used: after a
//! hang-up it can loop for ever reading end-of-file. Here end-of-file,
//! `EIO`, `POLLHUP` or `POLLERR` is [`Gone`], and the UI leaves.

use super::keys::{self, Key};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use std::io::Stdout;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

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

/// The terminal has hung up (its window closed) or is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// How long bytes that may start a sequence (a lone `ESC`, `ESC [ 1 ;`)
/// wait for the rest before they are taken as they stand: a terminal
/// sends a key's sequence in one write, a person types slower.
pub const ESC_WAIT: Duration = Duration::from_millis(40);

/// The terminal's keys, read by us.
pub struct Input {
    /// Our own open file description of the terminal, non-blocking; or
    /// standard input itself (then read only after `poll(2)` said it is
    /// readable: in raw mode a read then returns what is there).
    fd: Fd,
    parser: keys::Parser,
    /// [`ESC_WAIT`] (longer in tests).
    esc_wait: Duration,
}

enum Fd {
    Own(OwnedFd),
    Stdin,
}

impl Input {
    /// The terminal crossterm puts in raw mode: standard input when it is
    /// a terminal, else `/dev/tty`. Opened again (`/proc/self/fd/0`), so
    /// `O_NONBLOCK` is ours alone and never left on the shell's terminal.
    pub fn open() -> Input {
        // SAFETY: isatty on a descriptor number; no memory passed.
        let stdin_tty = unsafe { libc::isatty(0) } == 1;
        let path: &[u8] = if stdin_tty {
            b"/proc/self/fd/0\0"
        } else {
            b"/dev/tty\0"
        };
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { libc::open(path.as_ptr().cast(), flags) };
        let fd = if fd >= 0 {
            // SAFETY: a descriptor just opened, owned by nothing else.
            Fd::Own(unsafe { OwnedFd::from_raw_fd(fd) })
        } else {
            Fd::Stdin
        };
        Input {
            fd,
            parser: keys::Parser::default(),
            esc_wait: ESC_WAIT,
        }
    }

    /// Read keys from `fd`, a terminal opened with `O_NONBLOCK`.
    pub fn from_fd(fd: OwnedFd) -> Input {
        Input {
            fd: Fd::Own(fd),
            parser: keys::Parser::default(),
            esc_wait: ESC_WAIT,
        }
    }

    fn raw(&self) -> RawFd {
        match &self.fd {
            Fd::Own(f) => f.as_raw_fd(),
            Fd::Stdin => 0,
        }
    }

    /// Wait up to `wait` for input, then every key it holds, in order,
    /// onto `out`. A lone `ESC` (or a cut sequence) waits [`ESC_WAIT`]
    /// for the rest. `Err(Gone)` when the terminal has hung up: no more
    /// keys will ever come.
    pub fn keys(&mut self, wait: Duration, out: &mut Vec<Key>) -> Result<(), Gone> {
        if !self.ready(wait)? {
            return Ok(());
        }
        loop {
            self.read_into(out)?;
            if !self.parser.pending() {
                return Ok(());
            }
            if !self.ready(self.esc_wait)? {
                self.parser.flush(out);
                return Ok(());
            }
        }
    }

    /// Whether there are bytes to read within `wait`.
    fn ready(&self, wait: Duration) -> Result<bool, Gone> {
        let mut p = libc::pollfd {
            fd: self.raw(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            // EINTR (a signal: the caller looks) or no memory: nothing yet.
            return Ok(false);
        }
        if n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(Gone);
        }
        Ok(n > 0 && p.revents & libc::POLLIN != 0)
    }

    /// Read what is there (after `ready`) and parse it.
    fn read_into(&mut self, out: &mut Vec<Key>) -> Result<(), Gone> {
        let mut buf = [0u8; 1024];
        loop {
            // SAFETY: `buf` is valid for its length.
            let n = unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), buf.len()) };
            match n {
                // End of file: the terminal hung up.
                0 => return Err(Gone),
                n if n > 0 => {
                    self.parser.feed(&buf[..n as usize], out);
                    // Standard input may block: one read per poll.
                    if matches!(self.fd, Fd::Stdin) || (n as usize) < buf.len() {
                        return Ok(());
                    }
                }
                _ => match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => {}
                    Some(libc::EAGAIN) => return Ok(()),
                    // EIO after a hang-up, EBADF, …: gone.
                    _ => return Err(Gone),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keys::Code;
    use std::ffi::CStr;

    /// A pseudo-terminal: the master (the "terminal emulator" side) and
    /// an [`Input`] on its slave, in raw mode.
    fn pty() -> (OwnedFd, Input) {
        // SAFETY: plain libc calls on descriptors this function owns;
        // `name` is a buffer of its length.
        unsafe {
            let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(m >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            let master = OwnedFd::from_raw_fd(m);
            assert_eq!(libc::grantpt(m), 0);
            assert_eq!(libc::unlockpt(m), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
            let flags = libc::O_RDWR | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
            let s = libc::open(name.as_ptr(), flags);
            assert!(
                s >= 0,
                "{:?}: {}",
                CStr::from_ptr(name.as_ptr()),
                std::io::Error::last_os_error()
            );
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(s, &mut t), 0);
            libc::cfmakeraw(&mut t);
            assert_eq!(libc::tcsetattr(s, libc::TCSANOW, &t), 0);
            (master, Input::from_fd(OwnedFd::from_raw_fd(s)))
        }
    }

    fn send(master: &OwnedFd, bytes: &[u8]) {
        // SAFETY: `bytes` is valid for its length.
        let n = unsafe { libc::write(master.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        assert_eq!(n, bytes.len() as isize);
    }

    /// Keys until `n` came, or 10 s.
    fn keys_until(input: &mut Input, n: usize) -> Vec<Key> {
        let mut out = Vec::new();
        let start = std::time::Instant::now();
        while out.len() < n && start.elapsed() < Duration::from_secs(10) {
            input.keys(Duration::from_millis(100), &mut out).unwrap();
        }
        out
    }

    #[test]
    fn keys_through_a_real_pty() {
        let (master, mut input) = pty();
        // Nothing typed: nothing after the wait.
        let mut out = Vec::new();
        input.keys(Duration::from_millis(20), &mut out).unwrap();
        assert!(out.is_empty());
        // Several keys in one write, in both cursor modes.
        send(&master, b"\x1b[B\x1bOBq");
        assert_eq!(
            keys_until(&mut input, 3),
            vec![
                Key::plain(Code::Down),
                Key::plain(Code::Down),
                Key::plain(Code::Char('q'))
            ]
        );
        // A lone ESC: Esc after the short wait, not held for ever.
        send(&master, b"\x1b");
        assert_eq!(keys_until(&mut input, 1), vec![Key::plain(Code::Esc)]);
        // A sequence cut between two writes 200 ms apart, read by one
        // call: the cut start held, the rest waited for (10 s here, so a
        // loaded machine cannot make it flaky) and joined: one key.
        input.esc_wait = Duration::from_secs(10);
        send(&master, b"\x1b[5");
        let writer = {
            let m = master.try_clone().unwrap();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                send(&m, b"~")
            })
        };
        let mut got = Vec::new();
        input.keys(Duration::from_secs(10), &mut got).unwrap();
        writer.join().unwrap();
        assert_eq!(got, vec![Key::plain(Code::PageUp)]);
        input.esc_wait = ESC_WAIT;
        // Ctrl-C is a byte in raw mode.
        send(&master, b"\x03");
        assert_eq!(keys_until(&mut input, 1), vec![Key::ctrl('c')]);
    }

    /// The terminal closes (the master side, as a window closed): the
    /// input is gone — no spinning on end-of-file, no keys.
    #[test]
    fn a_hang_up_is_gone() {
        let (master, mut input) = pty();
        send(&master, b"j");
        assert_eq!(keys_until(&mut input, 1), vec![Key::plain(Code::Char('j'))]);
        drop(master);
        let mut out = Vec::new();
        let start = std::time::Instant::now();
        let r = loop {
            match input.keys(Duration::from_millis(100), &mut out) {
                Ok(()) if start.elapsed() < Duration::from_secs(10) => {}
                r => break r,
            }
        };
        assert_eq!(r, Err(Gone));
        assert!(out.is_empty(), "{out:?}");
        // And it stays gone.
        assert_eq!(input.keys(Duration::from_millis(10), &mut out), Err(Gone));
    }
}
