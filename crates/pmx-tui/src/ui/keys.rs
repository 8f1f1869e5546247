//! The keys of `pmx top`, from the bytes a terminal sends in raw mode:
//! pure, no terminal ([`terminal::Input`](super::terminal::Input) reads
//! the bytes).
//!
//! What a terminal sends (terminfo's `kcuu1`, `khome`, `kpp`, … of
//! xterm, screen and tmux, and the other forms in use):
//!
//! - text: UTF-8, one [`Code::Char`] per character; control bytes
//!   0x01–0x1a are Ctrl+letter (0x03 is Ctrl-C: raw mode sends it as a
//!   byte, no signal), except Tab (0x09), Enter (CR 0x0d, LF 0x0a; CR LF
//!   is one Enter) and Backspace (0x7f, 0x08);
//! - cursor keys in both modes: normal `ESC [ A` and application
//!   (DECCKM) `ESC O A` for ↑ ↓ → ← (A B C D), Home `ESC [ H`, `ESC O H`,
//!   `ESC [ 1 ~`, `ESC [ 7 ~`; End `ESC [ F`, `ESC O F`, `ESC [ 4 ~`,
//!   `ESC [ 8 ~`; PgUp/PgDn `ESC [ 5 ~`/`ESC [ 6 ~`; Insert/Delete
//!   `ESC [ 2 ~`/`ESC [ 3 ~`; Shift-Tab `ESC [ Z`; keypad Enter `ESC O M`;
//!   function keys `ESC O P`…`S`, `ESC [ 11 ~`…`ESC [ 24 ~`, the Linux
//!   console's `ESC [ [ A`…`E`;
//! - modifiers: xterm's `ESC [ 1 ; M X` and `ESC [ N ; M ~` (M − 1 is a
//!   bit set: 1 Shift, 2 Alt, 4 Ctrl), rxvt's `ESC [ a`…`d` (Shift),
//!   `ESC O a`…`d` (Ctrl), `^`/`$`/`@` for `~` (Ctrl, Shift, both);
//!   `ESC` before a key is Alt+key.
//!
//! A sequence is taken whole or not at all: a sequence split between
//! reads is held ([`Parser::pending`]) and joined to the next bytes; one
//! that is not a key pmx top knows is consumed whole and dropped, never
//! shown; an `ESC` with nothing after it is held until the caller says
//! no more bytes came ([`Parser::flush`]), then it is Esc.

/// A key's code, its modifiers aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A character: printable text, or a letter with Ctrl.
    Char(char),
    /// Esc.
    Esc,
    /// Enter (CR, LF, keypad Enter).
    Enter,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Backspace (DEL 0x7f, BS 0x08).
    Backspace,
    /// Insert.
    Insert,
    /// Delete.
    Delete,
    /// ↑.
    Up,
    /// ↓.
    Down,
    /// ←.
    Left,
    /// →.
    Right,
    /// Home.
    Home,
    /// End.
    End,
    /// Page Up.
    PageUp,
    /// Page Down.
    PageDown,
    /// A function key, F1 …
    F(u8),
}

/// The modifiers held with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mods {
    /// Shift.
    pub shift: bool,
    /// Alt (Meta): an `ESC` before the key, or xterm's modifier.
    pub alt: bool,
    /// Ctrl.
    pub ctrl: bool,
}

/// A key pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Which key.
    pub code: Code,
    /// With which modifiers.
    pub mods: Mods,
}

impl Key {
    /// `code` without modifiers.
    pub fn plain(code: Code) -> Key {
        Key {
            code,
            mods: Mods::default(),
        }
    }

    /// Ctrl + `c`.
    pub fn ctrl(c: char) -> Key {
        Key {
            code: Code::Char(c),
            mods: Mods {
                ctrl: true,
                ..Mods::default()
            },
        }
    }

    fn with(mut self, mods: Mods) -> Key {
        self.mods = self.mods.with_mods(mods);
        self
    }
}

/// The longest escape sequence held while waiting for its end: a longer
/// one is garbage, dropped.
const MAX_SEQUENCE: usize = 32;

const ESC: u8 = 0x1b;

/// Bytes in, keys out; a sequence cut by the end of a read is held for
/// the next.
#[derive(Debug, Default)]
pub struct Parser {
    held: Vec<u8>,
}

/// One step of parsing.
#[derive(Debug, PartialEq)]
enum Step {
    /// This many bytes read: a key, or nothing pmx top knows (dropped).
    Took(usize, Option<Key>),
    /// The bytes so far are the start of a sequence: more are needed.
    Incomplete,
}

impl Parser {
    /// Parse `bytes` after those held: every whole key, in order, onto
    /// `keys`; an incomplete sequence at the end is held.
    pub fn feed(&mut self, bytes: &[u8], keys: &mut Vec<Key>) {
        self.held.extend_from_slice(bytes);
        let mut at = 0;
        while at < self.held.len() {
            match step(&self.held[at..]) {
                Step::Took(n, key) => {
                    keys.extend(key);
                    at += n;
                }
                Step::Incomplete => break,
            }
        }
        self.held.drain(..at);
    }

    /// Whether bytes are held: a lone `ESC`, or the start of a sequence
    /// or of a UTF-8 character.
    pub fn pending(&self) -> bool {
        !self.held.is_empty()
    }

    /// No more bytes came: what is held is taken as it stands. A lone
    /// `ESC` is Esc (`ESC ESC` Alt+Esc); a cut sequence is dropped.
    pub fn flush(&mut self, keys: &mut Vec<Key>) {
        let held = std::mem::take(&mut self.held);
        match held.as_slice() {
            [ESC] => keys.push(Key::plain(Code::Esc)),
            [ESC, ESC] => keys.push(Key::plain(Code::Esc).with(ALT)),
            _ => {}
        }
    }
}

const ALT: Mods = Mods {
    shift: false,
    alt: true,
    ctrl: false,
};
const SHIFT: Mods = Mods {
    shift: true,
    alt: false,
    ctrl: false,
};
const CTRL: Mods = Mods {
    shift: false,
    alt: false,
    ctrl: true,
};

/// The first key of `b` (not empty).
fn step(b: &[u8]) -> Step {
    match b[0] {
        ESC => escape(b),
        b'\r' if b.get(1) == Some(&b'\n') => Step::Took(2, Some(Key::plain(Code::Enter))),
        _ => unescaped(b),
    }
}

/// A key that does not start with `ESC`.
fn unescaped(b: &[u8]) -> Step {
    let key = |code| Step::Took(1, Some(Key::plain(code)));
    match b[0] {
        b'\r' | b'\n' => key(Code::Enter),
        b'\t' => key(Code::Tab),
        0x7f | 0x08 => key(Code::Backspace),
        c @ 0x01..=0x1a => Step::Took(1, Some(Key::ctrl((b'a' + c - 1) as char))),
        // NUL (Ctrl-Space), Ctrl-\ ] ^ _: not keys of pmx top.
        0x00..=0x1f => Step::Took(1, None),
        c @ 0x20..=0x7e => key(Code::Char(c as char)),
        _ => utf8(b),
    }
}

/// A UTF-8 character of two to four bytes; an invalid byte is dropped.
fn utf8(b: &[u8]) -> Step {
    let len = match b[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Step::Took(1, None),
    };
    // The continuation bytes present so far must be 0x80–0xbf.
    let present = &b[1..b.len().min(len)];
    if let Some(bad) = present.iter().position(|&c| c & 0xc0 != 0x80) {
        return Step::Took(1 + bad, None);
    }
    if b.len() < len {
        return Step::Incomplete;
    }
    match std::str::from_utf8(&b[..len])
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) if !c.is_control() => Step::Took(len, Some(Key::plain(Code::Char(c)))),
        // Overlong, surrogate or C1 control: not text.
        _ => Step::Took(len, None),
    }
}

/// A key that starts with `ESC`.
fn escape(b: &[u8]) -> Step {
    match b.get(1) {
        None => Step::Incomplete,
        Some(b'[') => csi(b),
        Some(b'O') => ss3(b),
        // ESC ESC [ A and the like: Alt + the key after the first ESC.
        Some(_) => match step(&b[1..]) {
            Step::Took(n, key) => Step::Took(1 + n, key.map(|k| k.with(ALT))),
            Step::Incomplete => Step::Incomplete,
        },
    }
}

/// xterm's modifier parameter (1 + a bit set: 1 Shift, 2 Alt, 4 Ctrl,
/// 8 Meta) as [`Mods`].
fn modifiers(m: u32) -> Mods {
    let bits = m.saturating_sub(1);
    Mods {
        shift: bits & 1 != 0,
        alt: bits & (2 | 8) != 0,
        ctrl: bits & 4 != 0,
    }
}

/// The key of a cursor-like final byte (`A` … `D`, `H`, `F`; rxvt's
/// `a` … `d`).
fn cursor_final(f: u8) -> Option<Code> {
    Some(match f {
        b'A' | b'a' => Code::Up,
        b'B' | b'b' => Code::Down,
        b'C' | b'c' => Code::Right,
        b'D' | b'd' => Code::Left,
        b'H' => Code::Home,
        b'F' => Code::End,
        _ => return None,
    })
}

/// `ESC [ …`: parameter bytes 0x30–0x3f, intermediate bytes 0x20–0x2f,
/// one final byte 0x40–0x7e (ECMA-48). rxvt's `$`, `^`, `@` after a
/// number also end it.
fn csi(b: &[u8]) -> Step {
    // The Linux console's F1–F5: ESC [ [ A … E.
    if b.get(2) == Some(&b'[') {
        return match b.get(3) {
            None => Step::Incomplete,
            Some(&c @ b'A'..=b'E') => Step::Took(4, Some(Key::plain(Code::F(c - b'A' + 1)))),
            Some(_) => Step::Took(4, None),
        };
    }
    let mut i = 2;
    loop {
        let Some(&c) = b.get(i) else {
            return unended(b);
        };
        // rxvt's `ESC [ 6 $`: `$` after a number ends it.
        let rxvt_dollar = c == b'$' && i > 2 && b[2..i].iter().all(u8::is_ascii_digit);
        match c {
            _ if rxvt_dollar => break,
            0x20..=0x3f => i += 1,
            0x40..=0x7e => break,
            // A control byte or ESC inside: the sequence was cut; what
            // came so far is dropped, the byte starts the next key.
            _ => return Step::Took(i, None),
        }
    }
    Step::Took(i + 1, csi_key(&b[2..i], b[i]))
}

/// A sequence whose end has not come: held, unless it is already too
/// long to be a key (garbage, dropped whole).
fn unended(b: &[u8]) -> Step {
    if b.len() >= MAX_SEQUENCE {
        Step::Took(b.len(), None)
    } else {
        Step::Incomplete
    }
}

/// The key of `ESC [ params final`, if pmx top knows it.
fn csi_key(params: &[u8], f: u8) -> Option<Key> {
    // Only digits and `;`: a private marker (`?`, `<`, `>`, `=`) or an
    // intermediate byte is a report or a mode, not a key.
    if !params.iter().all(|&c| c.is_ascii_digit() || c == b';') {
        return None;
    }
    let nums: Vec<u32> = params
        .split(|&c| c == b';')
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1)
        })
        .collect();
    let mods = nums.get(1).map_or(Mods::default(), |&m| modifiers(m));
    // `ESC [ 1 ; 5 A`: the first number is 1 when a modifier follows.
    let one = nums.len() == 1 || (nums.len() == 2 && nums[0] == 1);
    if let Some(code) = cursor_final(f) {
        if !one {
            return None;
        }
        // rxvt's `ESC [ a` is Shift + ↑.
        let rxvt = if f.is_ascii_lowercase() {
            SHIFT
        } else {
            Mods::default()
        };
        return Some(Key::plain(code).with(mods).with(rxvt));
    }
    let code = match f {
        b'Z' if params.is_empty() => Code::BackTab,
        // `ESC [ 1 ; 5 P` … `S`: F1–F4 with modifiers (not a cursor
        // position report `ESC [ 12 ; 34 R`).
        b'P'..=b'S' if one && nums[0] == 1 => Code::F(f - b'P' + 1),
        b'~' | b'^' | b'$' | b'@' if !params.is_empty() => tilde_key(nums[0])?,
        _ => return None,
    };
    let rxvt = match f {
        b'^' => CTRL,
        b'$' => SHIFT,
        b'@' => SHIFT.with_mods(CTRL),
        _ => Mods::default(),
    };
    Some(Key::plain(code).with(mods).with(rxvt))
}

/// The key of `ESC [ N ~` (VT220's editing keypad and function keys).
fn tilde_key(n: u32) -> Option<Code> {
    Some(match n {
        1 | 7 => Code::Home,
        2 => Code::Insert,
        3 => Code::Delete,
        4 | 8 => Code::End,
        5 => Code::PageUp,
        6 => Code::PageDown,
        11..=15 => Code::F((n - 10) as u8),
        17..=21 => Code::F((n - 11) as u8),
        23 | 24 => Code::F((n - 12) as u8),
        _ => return None,
    })
}

/// `ESC O X`: application-mode cursor keys, keypad Enter, F1–F4; rxvt's
/// `ESC O a` … `d` are Ctrl + a cursor key; a modifier may come between
/// (`ESC O 5 A`, `ESC O 1 ; 5 A`).
fn ss3(b: &[u8]) -> Step {
    let mut i = 2;
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b';') {
        i += 1;
    }
    let Some(&f) = b.get(i) else {
        return unended(b);
    };
    if !(0x40..=0x7e).contains(&f) {
        // Cut short: dropped, the byte starts the next key.
        return Step::Took(i, None);
    }
    let params = &b[2..i];
    let m = params
        .split(|&c| c == b';')
        .next_back()
        .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok())
        .map_or(Mods::default(), modifiers);
    let key = match f {
        b'M' => Some(Key::plain(Code::Enter)),
        b'P'..=b'S' => Some(Key::plain(Code::F(f - b'P' + 1))),
        b'a'..=b'd' => cursor_final(f).map(|code| Key::plain(code).with(CTRL)),
        _ => cursor_final(f).map(Key::plain),
    };
    Step::Took(i + 1, key.map(|k| k.with(m)))
}

impl Mods {
    const fn with_mods(self, o: Mods) -> Mods {
        Mods {
            shift: self.shift || o.shift,
            alt: self.alt || o.alt,
            ctrl: self.ctrl || o.ctrl,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut p = Parser::default();
        let mut out = Vec::new();
        p.feed(bytes, &mut out);
        p.flush(&mut out);
        out
    }

    fn one(bytes: &[u8]) -> Key {
        let k = keys(bytes);
        assert_eq!(k.len(), 1, "{bytes:?}: {k:?}");
        k[0]
    }

    fn plain(code: Code) -> Key {
        Key::plain(code)
    }

    fn with(code: Code, shift: bool, alt: bool, ctrl: bool) -> Key {
        Key {
            code,
            mods: Mods { shift, alt, ctrl },
        }
    }

    #[test]
    fn text_and_control_bytes() {
        assert_eq!(one(b"q"), plain(Code::Char('q')));
        assert_eq!(one(b"/"), plain(Code::Char('/')));
        assert_eq!(one(b" "), plain(Code::Char(' ')));
        assert_eq!(one(b"~"), plain(Code::Char('~')));
        assert_eq!(one(b"\x03"), Key::ctrl('c'));
        assert_eq!(one(b"\x1a"), Key::ctrl('z'));
        assert_eq!(one(b"\r"), plain(Code::Enter));
        assert_eq!(one(b"\n"), plain(Code::Enter));
        assert_eq!(one(b"\r\n"), plain(Code::Enter), "CR LF is one Enter");
        assert_eq!(keys(b"\n\r"), vec![plain(Code::Enter); 2]);
        assert_eq!(one(b"\t"), plain(Code::Tab));
        assert_eq!(one(b"\x7f"), plain(Code::Backspace));
        assert_eq!(one(b"\x08"), plain(Code::Backspace));
        assert_eq!(keys(b"\x00\x1c\x1d\x1e\x1f"), vec![]);
    }

    #[test]
    fn utf8_text() {
        assert_eq!(one("é".as_bytes()), plain(Code::Char('é')));
        assert_eq!(one("→".as_bytes()), plain(Code::Char('→')));
        assert_eq!(one("🦀".as_bytes()), plain(Code::Char('🦀')));
        let typed: Vec<Key> = "añ€𝄞b".chars().map(|c| plain(Code::Char(c))).collect();
        assert_eq!(keys("añ€𝄞b".as_bytes()), typed);
        // Invalid bytes are dropped, the text around them kept.
        assert_eq!(
            keys(b"a\xffb\x80c\xc3(d"),
            "abc(d"
                .chars()
                .map(|c| plain(Code::Char(c)))
                .collect::<Vec<_>>()
        );
        // Overlong forms and C1 controls are not text.
        assert_eq!(keys(b"\xe0\x80\xaf"), vec![]);
        assert_eq!(keys("\u{85}".as_bytes()), vec![]);
    }

    /// Every cursor sequence of `infocmp -1 xterm-256color`,
    /// `screen-256color` and `tmux-256color` (ncurses 6.4), and the
    /// normal-mode forms terminals send without `smkx`.
    #[test]
    fn terminfo_cursor_keys_both_modes() {
        for (seq, code) in [
            // kcuu1, kcud1, and → ← in application mode (DECCKM set).
            (&b"\x1bOA"[..], Code::Up),
            (b"\x1bOB", Code::Down),
            (b"\x1bOC", Code::Right),
            (b"\x1bOD", Code::Left),
            // Normal mode.
            (b"\x1b[A", Code::Up),
            (b"\x1b[B", Code::Down),
            (b"\x1b[C", Code::Right),
            (b"\x1b[D", Code::Left),
            // khome, kend: xterm's application and normal forms,
            // screen's and tmux's `ESC [ 1 ~`/`ESC [ 4 ~`, rxvt's 7/8.
            (b"\x1bOH", Code::Home),
            (b"\x1bOF", Code::End),
            (b"\x1b[H", Code::Home),
            (b"\x1b[F", Code::End),
            (b"\x1b[1~", Code::Home),
            (b"\x1b[4~", Code::End),
            (b"\x1b[7~", Code::Home),
            (b"\x1b[8~", Code::End),
            // kpp, knp, kich1, kdch1, kcbt, kent, kf1, kf5.
            (b"\x1b[5~", Code::PageUp),
            (b"\x1b[6~", Code::PageDown),
            (b"\x1b[2~", Code::Insert),
            (b"\x1b[3~", Code::Delete),
            (b"\x1b[Z", Code::BackTab),
            (b"\x1bOM", Code::Enter),
            (b"\x1bOP", Code::F(1)),
            (b"\x1bOS", Code::F(4)),
            (b"\x1b[15~", Code::F(5)),
            (b"\x1b[24~", Code::F(12)),
            // The Linux console's F1.
            (b"\x1b[[A", Code::F(1)),
        ] {
            assert_eq!(one(seq), plain(code), "{seq:?}");
        }
    }

    #[test]
    fn modifiers_are_parsed() {
        // xterm's (terminfo kri, kind, kLFT, kRIT, kHOM, kEND: Shift).
        assert_eq!(one(b"\x1b[1;2A"), with(Code::Up, true, false, false));
        assert_eq!(one(b"\x1b[1;2B"), with(Code::Down, true, false, false));
        assert_eq!(one(b"\x1b[1;2D"), with(Code::Left, true, false, false));
        assert_eq!(one(b"\x1b[1;2C"), with(Code::Right, true, false, false));
        assert_eq!(one(b"\x1b[1;2H"), with(Code::Home, true, false, false));
        assert_eq!(one(b"\x1b[1;2F"), with(Code::End, true, false, false));
        assert_eq!(one(b"\x1b[1;5A"), with(Code::Up, false, false, true));
        assert_eq!(one(b"\x1b[1;3B"), with(Code::Down, false, true, false));
        assert_eq!(one(b"\x1b[1;8D"), with(Code::Left, true, true, true));
        assert_eq!(one(b"\x1b[5;5~"), with(Code::PageUp, false, false, true));
        assert_eq!(one(b"\x1b[6;2~"), with(Code::PageDown, true, false, false));
        assert_eq!(one(b"\x1b[1;5P"), with(Code::F(1), false, false, true));
        // Modifiers inside SS3 (`ESC O 5 A`, some terminals).
        assert_eq!(one(b"\x1bO5A"), with(Code::Up, false, false, true));
        assert_eq!(one(b"\x1bO1;2B"), with(Code::Down, true, false, false));
        // rxvt: `ESC [ a` Shift, `ESC O a` Ctrl, `^` Ctrl, `$` Shift.
        assert_eq!(one(b"\x1b[a"), with(Code::Up, true, false, false));
        assert_eq!(one(b"\x1bOd"), with(Code::Left, false, false, true));
        assert_eq!(one(b"\x1b[5^"), with(Code::PageUp, false, false, true));
        assert_eq!(one(b"\x1b[6$"), with(Code::PageDown, true, false, false));
        assert_eq!(one(b"\x1b[7@"), with(Code::Home, true, false, true));
        // ESC before a key: Alt.
        assert_eq!(one(b"\x1bq"), with(Code::Char('q'), false, true, false));
        assert_eq!(one(b"\x1b\x1b[A"), with(Code::Up, false, true, false));
        assert_eq!(one(b"\x1b\x1bOB"), with(Code::Down, false, true, false));
        assert_eq!(
            one("\x1bé".as_bytes()),
            with(Code::Char('é'), false, true, false)
        );
        assert_eq!(one(b"\x1b\x1b"), with(Code::Esc, false, true, false));
    }

    #[test]
    fn several_keys_in_one_read_in_order() {
        assert_eq!(
            keys(b"\x1b[Bj\x1bOA\x1b[6~/ab\x7f\r\x03"),
            vec![
                plain(Code::Down),
                plain(Code::Char('j')),
                plain(Code::Up),
                plain(Code::PageDown),
                plain(Code::Char('/')),
                plain(Code::Char('a')),
                plain(Code::Char('b')),
                plain(Code::Backspace),
                plain(Code::Enter),
                Key::ctrl('c'),
            ]
        );
        assert_eq!(keys(b"\x1b[A\x1b[A\x1b[A"), vec![plain(Code::Up); 3]);
    }

    /// Every sequence cut at every place, fed in two reads: the same keys.
    #[test]
    fn a_sequence_split_across_reads_is_joined() {
        let all: &[&[u8]] = &[
            b"\x1b[A",
            b"\x1bOB",
            b"\x1b[1;5C",
            b"\x1b[5~",
            b"\x1b[24~",
            b"\x1b[[B",
            b"\x1bO1;2H",
            b"\x1b\x1b[D",
            "€".as_bytes(),
            "𝄞".as_bytes(),
        ];
        for seq in all {
            let whole = keys(seq);
            assert_eq!(whole.len(), 1, "{seq:?}");
            for cut in 1..seq.len() {
                let mut p = Parser::default();
                let mut out = Vec::new();
                p.feed(&seq[..cut], &mut out);
                assert!(out.is_empty() && p.pending(), "{seq:?} cut at {cut}");
                p.feed(&seq[cut..], &mut out);
                assert!(!p.pending());
                assert_eq!(out, whole, "{seq:?} cut at {cut}");
            }
        }
        // Byte by byte, with keys around.
        let bytes = b"x\x1b[6~\x1bOA\x1b[1;2By";
        let mut p = Parser::default();
        let mut out = Vec::new();
        for b in bytes {
            p.feed(std::slice::from_ref(b), &mut out);
        }
        assert!(!p.pending());
        assert_eq!(out, keys(bytes));
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn a_lone_esc_waits_for_the_flush() {
        let mut p = Parser::default();
        let mut out = Vec::new();
        p.feed(b"\x1b", &mut out);
        assert!(out.is_empty() && p.pending(), "held: may start a sequence");
        p.flush(&mut out);
        assert_eq!(out, vec![plain(Code::Esc)]);
        assert!(!p.pending());
        // A key before it is taken at once; the ESC held.
        out.clear();
        p.feed(b"/\x1b", &mut out);
        assert_eq!(out, vec![plain(Code::Char('/'))]);
        assert!(p.pending());
        p.flush(&mut out);
        assert_eq!(out, vec![plain(Code::Char('/')), plain(Code::Esc)]);
    }

    #[test]
    fn unknown_and_garbage_sequences_are_dropped_whole() {
        for seq in [
            &b"\x1b[?1;2c"[..], // a device attributes report
            b"\x1b[<0;3;4M",    // an SGR mouse report
            b"\x1b[I",          // focus in
            b"\x1b[200~",       // bracketed paste's start
            b"\x1b[99~",        // no such key
            b"\x1b[1;2;3A",     // too many parameters
            b"\x1b[2;5A",
            b"\x1b[ q", // an intermediate byte
            b"\x1bOx",  // keypad 8 in application keypad mode
            b"\x1b[[z",
            b"\x1b[12;34R", // a cursor position report
        ] {
            let mut with_text = seq.to_vec();
            with_text.push(b'k');
            assert_eq!(keys(&with_text), vec![plain(Code::Char('k'))], "{seq:?}");
        }
        // A sequence cut by another key: dropped, the key kept.
        assert_eq!(keys(b"\x1b[1;\x1b[B"), vec![plain(Code::Down)]);
        assert_eq!(
            keys(b"\x1b[1;\rq"),
            vec![plain(Code::Enter), plain(Code::Char('q'))]
        );
        assert_eq!(keys(b"\x1bO\x03"), vec![Key::ctrl('c')]);
        // A sequence never ended: dropped at the flush, or when too long.
        assert_eq!(keys(b"\x1b[1;5"), vec![]);
        assert_eq!(keys(b"\x1bO"), vec![]);
        assert_eq!(keys(b"\x1b["), vec![]);
        let mut p = Parser::default();
        let mut out = Vec::new();
        let long: Vec<u8> = std::iter::once(ESC)
            .chain(std::iter::once(b'['))
            .chain(std::iter::repeat_n(b'1', 100))
            .collect();
        p.feed(&long, &mut out);
        assert!(!p.pending() && out.is_empty());
        p.feed(b"q", &mut out);
        assert_eq!(out, vec![plain(Code::Char('q'))]);
    }

    /// Every byte string of up to three bytes from a set of awkward
    /// bytes, fed whole and byte by byte: no panic, nothing held after
    /// a flush, the same keys both ways.
    #[test]
    fn no_panic_on_any_short_input() {
        let alphabet = [
            0x00, 0x03, 0x0d, 0x1b, b'[', b'O', b'1', b';', b'5', b'~', b'A', b'a', 0x7f, 0x80,
            0xc3, 0xe2, 0xf0, 0xff,
        ];
        let mut input = Vec::new();
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    input.clear();
                    input.extend([a, b, c]);
                    let whole = keys(&input);
                    let mut p = Parser::default();
                    let mut out = Vec::new();
                    for x in &input {
                        p.feed(std::slice::from_ref(x), &mut out);
                    }
                    p.flush(&mut out);
                    assert!(!p.pending());
                    assert_eq!(out, whole, "{input:?}");
                }
            }
        }
    }
}
