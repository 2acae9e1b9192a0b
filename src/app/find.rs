//! The find view: a text box whose text filters the files (fuzzy: its letters in order) and
//! finds the lines of the corpus that hold it (case folded), as file:chunk:line. Enter opens a
//! file, or a chunk centred on the line's match. Printable keys are text here, as in the query
//! pane.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::textbox::{Edit, TextBox};
use super::{Cmd, Model, View};

/// At most this many lines are listed.
const MAX_LINES: usize = 200;

/// The find view's state.
#[derive(Debug, Clone, Default)]
pub struct FindState {
    pub input: TextBox,
    pub selected: usize,
    /// What the text found, computed when it changes (not on every frame).
    pub found: Vec<Found>,
}

/// One row of the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A file whose path holds the typed letters in order.
    File { file_pos: usize },
    /// A line holding the text: the chunk that holds the match, the 1-based line in the file,
    /// and the match as a byte range of the chunk's text.
    Line {
        file_pos: usize,
        chunk: usize,
        line: usize,
        span: (usize, usize),
        text: String,
    },
}

/// True when the letters of `needle` appear in `hay` in order (case folded).
fn fuzzy(hay: &str, needle: &str) -> bool {
    let mut want = needle
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase);
    let mut next = want.next();
    for c in hay.chars().flat_map(char::to_lowercase) {
        match next {
            Some(w) if w == c => next = want.next(),
            Some(_) => {}
            None => break,
        }
    }
    next.is_none()
}

/// The files and lines the typed text finds, files first.
pub fn results(m: &Model) -> Vec<Found> {
    let needle = m.find.input.text.trim();
    let (Some(engine), Some(chunking)) = (&m.engine, &m.chunking) else {
        return Vec::new();
    };
    if needle.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Found> = m
        .file_order()
        .into_iter()
        .filter(|&fp| fuzzy(&engine.corpus.docs[chunking.files[fp].doc].path, needle))
        .map(|file_pos| Found::File { file_pos })
        .collect();
    if needle.chars().count() < 2 {
        return out;
    }
    let lower_needle = needle.to_lowercase();
    let mut lines = 0;
    'files: for (file_pos, f) in chunking.files.iter().enumerate() {
        let doc = &engine.corpus.docs[f.doc].text;
        let mut line_start = 0;
        for (n, line) in doc.split('\n').enumerate() {
            let lower = line.to_lowercase();
            // Case folding can change byte lengths; only lines where it does not are mapped back.
            if let Some(at) = lower
                .find(&lower_needle)
                .filter(|_| lower.len() == line.len())
            {
                let (start, end) = (line_start + at, line_start + at + needle.len());
                // The chunk holding the match (the first one, when chunks overlap).
                if let Some(c) = f
                    .chunks
                    .iter()
                    .find(|c| c.start() <= start && start < c.end())
                {
                    let rel = (start - c.start(), end.min(c.end()) - c.start());
                    out.push(Found::Line {
                        file_pos,
                        chunk: c.index as usize,
                        line: n + 1,
                        span: rel,
                        text: line.trim().chars().take(200).collect(),
                    });
                    lines += 1;
                    if lines >= MAX_LINES {
                        break 'files;
                    }
                }
            }
            line_start += line.len() + 1;
        }
    }
    out
}

/// Keys in the find view.
pub(super) fn key(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    if ev.modifiers.contains(KeyModifiers::CONTROL) && ev.code == KeyCode::Char('c') {
        m.quit = true;
        return vec![Cmd::Quit];
    }
    match ev.code {
        KeyCode::PageDown => m.find.selected += 10,
        KeyCode::PageUp => m.find.selected = m.find.selected.saturating_sub(10),
        _ => match m.find.input.key(ev) {
            Edit::Esc => m.view = View::Chunks,
            Edit::Down | Edit::Tab => m.find.selected += 1,
            Edit::Up => m.find.selected = m.find.selected.saturating_sub(1),
            Edit::Edited => {
                m.find.selected = 0;
                m.find.found = results(m);
            }
            Edit::Enter => open(m),
            Edit::Ignored => {}
        },
    }
    let n = m.find.found.len();
    m.find.selected = m.find.selected.min(n.saturating_sub(1));
    Vec::new()
}

fn open(m: &mut Model) {
    match m.find.found.get(m.find.selected).cloned() {
        Some(Found::File { file_pos }) => {
            m.chunks.select_file(file_pos);
            m.view = View::Chunks;
        }
        Some(Found::Line {
            file_pos,
            chunk,
            span,
            ..
        }) => m.open_chunk(file_pos, chunk, vec![span], 0),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fuzzy_letters_in_order() {
        assert!(super::fuzzy("prometheus-operator/NotReady.md", "promnot"));
        assert!(super::fuzzy("runbooks/rotate-keys.md", "RK"));
        assert!(!super::fuzzy("runbooks/rotate-keys.md", "kr z"));
    }
}
