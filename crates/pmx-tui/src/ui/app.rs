//! The UI's state and what each key does to it: pure, no terminal.

use super::keys::{Code as KeyCode, Key};
use crate::table::{lines, Line, Order};
use crate::top::Frame;

/// What is on screen.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum View {
    /// The table of rows.
    #[default]
    Table,
    /// The keys.
    Help,
    /// A function's instructions (its title, the lines, the first shown).
    Annotate {
        /// `symbol in binary`.
        title: String,
        /// `pmx annotate`'s text (or why there is none).
        lines: Vec<String>,
        /// The first line shown.
        scroll: usize,
    },
}

/// What the loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond a redraw.
    None,
    /// Leave (q, Esc, Ctrl-C).
    Quit,
    /// Forget the counts now.
    Zero,
    /// Open the annotate view of (symbol, binary).
    Annotate(String, String),
}

/// The UI's state.
#[derive(Debug, Default)]
pub struct App {
    /// The last refresh.
    pub frame: Option<Frame>,
    /// Its rows as shown (event [`App::event`], filtered, ordered).
    pub rows: Vec<Line>,
    /// The event shown (Tab cycles).
    pub event: usize,
    /// The order of the rows.
    pub order: Order,
    /// Rows shown contain this (symbol, binary or command).
    pub filter: String,
    /// The filter is being typed.
    pub typing: bool,
    /// The selected row.
    pub selected: usize,
    /// The first row shown.
    pub offset: usize,
    /// Refreshes are paused.
    pub paused: bool,
    /// The view.
    pub view: View,
    /// Rows of the table area at the last draw (for PgUp/PgDn).
    pub page: usize,
    /// A message for the status line.
    pub status: String,
}

impl App {
    /// Show `frame`, the selection kept on the same function if it is
    /// still there.
    pub fn set_frame(&mut self, frame: Frame) {
        let keep = self
            .rows
            .get(self.selected)
            .map(|l| (l.symbol.clone(), l.dso.clone()));
        self.frame = Some(frame);
        self.relist();
        if let Some((s, d)) = keep {
            if let Some(i) = self.rows.iter().position(|l| l.symbol == s && l.dso == d) {
                self.selected = i;
            }
        }
        self.clamp();
    }

    /// Recompute the rows after a change of event, order or filter.
    pub fn relist(&mut self) {
        self.rows = match &self.frame {
            Some(f) => lines(f, self.event, self.order, &self.filter),
            None => Vec::new(),
        };
        self.clamp();
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
        let page = self.page.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + page {
            self.offset = self.selected + 1 - page;
        }
    }

    /// Apply a key. Shift or Ctrl with a cursor key is the cursor key;
    /// a letter with Ctrl (but Ctrl-C, quit) or anything with Alt is not
    /// a key of pmx top.
    pub fn key(&mut self, k: Key) -> Action {
        if k.code == KeyCode::Char('c') && k.mods.ctrl {
            return Action::Quit;
        }
        if k.mods.alt || (k.mods.ctrl && matches!(k.code, KeyCode::Char(_))) {
            return Action::None;
        }
        if self.typing {
            self.filter_key(k.code);
            return Action::None;
        }
        match &mut self.view {
            View::Table => self.table_key(k.code),
            View::Help => {
                if matches!(k.code, KeyCode::Char('q')) {
                    return Action::Quit;
                }
                self.view = View::Table;
                Action::None
            }
            View::Annotate { lines, scroll, .. } => {
                let last = lines.len().saturating_sub(1);
                let page = self.page.max(1);
                match k.code {
                    KeyCode::Char('q') => return Action::Quit,
                    KeyCode::Esc | KeyCode::Left | KeyCode::Backspace => self.view = View::Table,
                    KeyCode::Down => *scroll = (*scroll + 1).min(last),
                    KeyCode::Up => *scroll = scroll.saturating_sub(1),
                    KeyCode::PageDown => *scroll = (*scroll + page).min(last),
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(page),
                    KeyCode::Home => *scroll = 0,
                    KeyCode::End => *scroll = last,
                    _ => {}
                }
                Action::None
            }
        }
    }

    fn table_key(&mut self, code: KeyCode) -> Action {
        let page = self.page.max(1);
        let last = self.rows.len().saturating_sub(1);
        match code {
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected = (self.selected + page).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(page),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Char('s') => {
                self.order = self.order.next();
                self.relist();
            }
            KeyCode::Tab => {
                let n = self
                    .frame
                    .as_ref()
                    .map_or(1, |f| f.profile.events.len().max(1));
                self.event = (self.event + 1) % n;
                self.relist();
            }
            KeyCode::Char('/') => self.typing = true,
            KeyCode::Char('z') => return Action::Zero,
            KeyCode::Char('p') => self.paused = !self.paused,
            KeyCode::Char('h') | KeyCode::Char('?') => self.view = View::Help,
            KeyCode::Enter => {
                if let Some(l) = self.rows.get(self.selected) {
                    return Action::Annotate(l.symbol.clone(), l.dso.clone());
                }
            }
            _ => {}
        }
        self.clamp();
        Action::None
    }

    fn filter_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Enter => self.typing = false,
            KeyCode::Esc => {
                self.typing = false;
                self.filter.clear();
            }
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => self.filter.push(c),
            _ => return,
        }
        self.selected = 0;
        self.relist();
    }
}
