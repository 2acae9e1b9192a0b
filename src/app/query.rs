//! The query pane: a line to edit, then BM25 and vector hits to browse and open.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::Action;
use super::{Cmd, Model, Retriever, View};

/// Keys while the query line is being edited: text goes into the line.
pub(super) fn edit(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    match ev.code {
        KeyCode::Char('c') if ev.modifiers.contains(KeyModifiers::CONTROL) => {
            m.quit = true;
            return vec![Cmd::Quit];
        }
        KeyCode::Char(c) => m.query.input.push(c),
        KeyCode::Backspace => {
            m.query.input.pop();
        }
        KeyCode::Esc => {
            m.query.editing = false;
            if m.query.input.is_empty() && m.query.results.is_none() {
                m.view = View::Chunks;
            }
        }
        KeyCode::Enter => {
            m.query.editing = false;
            return run(m);
        }
        _ => {}
    }
    Vec::new()
}

fn run(m: &mut Model) -> Vec<Cmd> {
    if m.query.input.trim().is_empty() || m.chunking.is_none() {
        return Vec::new();
    }
    m.query.next_id += 1;
    m.query.pending = Some(m.query.next_id);
    vec![Cmd::Query {
        id: m.query.next_id,
        text: m.query.input.clone(),
        k: m.query.k,
    }]
}

/// The query pane's own actions; false when `a` is not one of them.
pub(super) fn act(m: &mut Model, a: Action) -> bool {
    let q = &mut m.query;
    let last = q.hits().len().saturating_sub(1);
    match a {
        Action::NextRetriever => {
            q.column = match q.column {
                Retriever::Bm25 => Retriever::Vector,
                Retriever::Vector => Retriever::Bm25,
            };
            q.selected = 0;
        }
        Action::NextHit => q.selected = (q.selected + 1).min(last),
        Action::PrevHit => q.selected = q.selected.saturating_sub(1),
        Action::CloseQuery => m.view = View::Chunks,
        Action::OpenHit => {
            if let Some(h) = q.hits().get(q.selected).cloned() {
                m.open_chunk(h.file_pos, h.chunk, h.match_byte);
            }
        }
        _ => return false,
    }
    true
}
