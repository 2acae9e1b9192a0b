//! A one-line text box with readline editing, shared by the query pane and the find view.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextBox {
    pub text: String,
    /// Byte of `text` the cursor is at.
    pub cursor: usize,
    /// The whole text is selected: the next typed text replaces it.
    pub select_all: bool,
}

/// What a key did to the box, beyond editing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// The text changed (or the cursor moved).
    Edited,
    Enter,
    Esc,
    Tab,
    Up,
    Down,
    /// Not a key of the box.
    Ignored,
}

impl TextBox {
    /// Apply `ev`: readline keys (ctrl-a/e/u/k/w/b/f, alt-b/f, alt-backspace), arrows, home/end,
    /// backspace, delete and text; Enter, Esc, Tab and Up/Down are for the caller.
    pub fn key(&mut self, ev: &KeyEvent) -> Edit {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        let typing = matches!(ev.code, KeyCode::Char(_)) && !ctrl && !alt;
        if self.select_all && !typing && ev.code != KeyCode::Enter {
            self.select_all = false;
            if matches!(ev.code, KeyCode::Backspace | KeyCode::Delete) {
                self.clear();
                return Edit::Edited;
            }
        }
        let (t, at) = (&self.text, self.cursor);
        match ev.code {
            KeyCode::Enter => return Edit::Enter,
            KeyCode::Esc => return Edit::Esc,
            KeyCode::Tab | KeyCode::BackTab => return Edit::Tab,
            KeyCode::Up => return Edit::Up,
            KeyCode::Down => return Edit::Down,
            KeyCode::Left if alt => self.cursor = word_left(t, at),
            KeyCode::Right if alt => self.cursor = word_right(t, at),
            KeyCode::Left => self.cursor = prev_char(t, at),
            KeyCode::Right => self.cursor = next_char(t, at),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = t.len(),
            KeyCode::Backspace if alt => self.delete_back_to(word_left(t, at)),
            KeyCode::Backspace => self.delete_back_to(prev_char(t, at)),
            KeyCode::Delete => {
                let end = next_char(t, at);
                self.text.replace_range(at..end, "");
            }
            KeyCode::Char(c) if ctrl => match c {
                'a' => self.cursor = 0,
                'e' => self.cursor = t.len(),
                'u' => self.delete_back_to(0),
                'k' => self.text.truncate(at),
                'w' => self.delete_back_to(word_left(t, at)),
                'b' => self.cursor = prev_char(t, at),
                'f' => self.cursor = next_char(t, at),
                _ => return Edit::Ignored,
            },
            KeyCode::Char(c) if alt => match c {
                'b' => self.cursor = word_left(t, at),
                'f' => self.cursor = word_right(t, at),
                _ => return Edit::Ignored,
            },
            KeyCode::Char(c) => self.insert(&c.to_string()),
            _ => return Edit::Ignored,
        }
        Edit::Edited
    }

    /// Insert `s` at the cursor, replacing everything when the text was selected. Control
    /// characters (a pasted line break) become spaces.
    pub fn insert(&mut self, s: &str) {
        if std::mem::take(&mut self.select_all) {
            self.clear();
        }
        let flat: String = s
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        self.text.insert_str(self.cursor, &flat);
        self.cursor += flat.len();
    }

    /// Replace the text, the cursor at its end.
    pub fn set(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
        self.select_all = false;
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
    }

    fn delete_back_to(&mut self, to: usize) {
        self.text.replace_range(to..self.cursor, "");
        self.cursor = to;
    }
}

fn prev_char(s: &str, at: usize) -> usize {
    s[..at].char_indices().next_back().map_or(0, |(i, _)| i)
}

fn next_char(s: &str, at: usize) -> usize {
    s[at..].chars().next().map_or(at, |c| at + c.len_utf8())
}

/// The start of the word before `at` (spaces before it skipped), as readline's ctrl-w and alt-b.
fn word_left(s: &str, at: usize) -> usize {
    let before = s[..at].trim_end_matches(char::is_whitespace);
    before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    })
}

/// The end of the word after `at`, as readline's alt-f.
fn word_right(s: &str, at: usize) -> usize {
    let rest = &s[at..];
    let start = rest.len() - rest.trim_start_matches(char::is_whitespace).len();
    rest[start..]
        .find(char::is_whitespace)
        .map_or(s.len(), |i| at + start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        let s = "alpha  beta gamma";
        assert_eq!(word_left(s, s.len()), 12);
        assert_eq!(word_left(s, 12), 7);
        assert_eq!(word_left(s, 7), 0);
        assert_eq!(word_right(s, 0), 5);
        assert_eq!(word_right(s, 5), 11);
        assert_eq!(word_right(s, 11), s.len());
        let u = "zażółć gęślą";
        assert_eq!(word_left(u, u.len()), "zażółć ".len());
        assert_eq!(prev_char(u, 4), 2);
        assert_eq!(next_char(u, 2), 4);
    }
}
