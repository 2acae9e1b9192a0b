//! The query pane: a text box, then BM25 and vector hits to browse and open. Printable keys are
//! always text here (typing a word never turns a knob or quits); results are browsed with the
//! query layer's keys, and other keys (ctrl-c, F-keys) keep their global meaning.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::{Action, Layer};
use super::{act, Cmd, Model, Retriever, View};

/// Keys while the query pane has the focus.
pub(super) fn key(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && ev.code == KeyCode::Char('c') {
        m.quit = true;
        return vec![Cmd::Quit];
    }
    if m.query.editing {
        return edit(m, ev);
    }
    if let Some(a) = m.keymap.action_for(Layer::Query, ev) {
        if let Some(cmds) = act_on_results(m, a) {
            return cmds;
        }
    }
    match ev.code {
        // Typing goes back to the box: the letters are text, never commands.
        KeyCode::Char(c) if !ctrl && !ev.modifiers.contains(KeyModifiers::ALT) => {
            let q = &mut m.query;
            q.editing = true;
            if c == '/' {
                q.select_all = true;
            } else {
                q.cursor = q.input.len();
                insert(m, &c.to_string());
            }
            Vec::new()
        }
        KeyCode::Backspace => {
            m.query.editing = true;
            m.query.cursor = m.query.input.len();
            edit(m, ev)
        }
        _ => match m.keymap.action_for(Layer::Global, ev) {
            Some(a) => act(m, Layer::Global, a),
            None => Vec::new(),
        },
    }
}

/// Keys in the text box: readline editing, history, Enter runs, Tab goes to the results.
fn edit(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let alt = ev.modifiers.contains(KeyModifiers::ALT);
    let q = &mut m.query;
    let keep_selection = matches!(ev.code, KeyCode::Char(_) | KeyCode::Enter) && !ctrl && !alt;
    if q.select_all && !keep_selection {
        q.select_all = false;
        if matches!(ev.code, KeyCode::Backspace | KeyCode::Delete) {
            q.input.clear();
            q.cursor = 0;
            return Vec::new();
        }
    }
    match ev.code {
        KeyCode::Enter => {
            q.select_all = false;
            return run(m);
        }
        KeyCode::Esc => {
            q.editing = false;
            m.view = View::Chunks;
        }
        KeyCode::Tab | KeyCode::BackTab => q.editing = false,
        KeyCode::Up => recall(m, -1),
        KeyCode::Down => recall(m, 1),
        KeyCode::Left if alt => q.cursor = word_left(&q.input, q.cursor),
        KeyCode::Right if alt => q.cursor = word_right(&q.input, q.cursor),
        KeyCode::Left => q.cursor = prev_char(&q.input, q.cursor),
        KeyCode::Right => q.cursor = next_char(&q.input, q.cursor),
        KeyCode::Home => q.cursor = 0,
        KeyCode::End => q.cursor = q.input.len(),
        KeyCode::Backspace if alt => delete_to(q, word_left(&q.input, q.cursor)),
        KeyCode::Backspace => delete_to(q, prev_char(&q.input, q.cursor)),
        KeyCode::Delete => {
            let end = next_char(&q.input, q.cursor);
            q.input.replace_range(q.cursor..end, "");
        }
        KeyCode::Char(c) if ctrl => match c {
            'a' => q.cursor = 0,
            'e' => q.cursor = q.input.len(),
            'u' => delete_to(q, 0),
            'k' => q.input.truncate(q.cursor),
            'w' => delete_to(q, word_left(&q.input, q.cursor)),
            'b' => q.cursor = prev_char(&q.input, q.cursor),
            'f' => q.cursor = next_char(&q.input, q.cursor),
            _ => {}
        },
        KeyCode::Char(c) if alt => match c {
            'b' => q.cursor = word_left(&q.input, q.cursor),
            'f' => q.cursor = word_right(&q.input, q.cursor),
            _ => {}
        },
        KeyCode::Char(c) => insert(m, &c.to_string()),
        _ => {}
    }
    Vec::new()
}

/// Pasted text goes into the box at the cursor (line breaks become spaces).
pub(super) fn paste(m: &mut Model, text: &str) {
    if m.view != View::Query {
        return;
    }
    m.query.editing = true;
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    insert(m, &flat);
}

/// Insert `s` at the cursor, replacing everything when the old query was selected.
fn insert(m: &mut Model, s: &str) {
    let q = &mut m.query;
    if std::mem::take(&mut q.select_all) {
        q.input.clear();
        q.cursor = 0;
    }
    q.input.insert_str(q.cursor, s);
    q.cursor += s.len();
    q.history_pos = None;
}

/// Delete from `to` (before the cursor) up to the cursor.
fn delete_to(q: &mut super::QueryState, to: usize) {
    q.input.replace_range(to..q.cursor, "");
    q.cursor = to;
}

/// Step through the queries run so far (-1 older, +1 newer; past the newest, an empty box).
fn recall(m: &mut Model, step: isize) {
    let q = &mut m.query;
    if q.history.is_empty() {
        return;
    }
    let last = q.history.len() - 1;
    let pos = match (q.history_pos, step < 0) {
        (None, true) => Some(last),
        (None, false) => None,
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) => (p < last).then_some(p + 1),
    };
    q.history_pos = pos;
    q.input = pos.map(|p| q.history[p].clone()).unwrap_or_default();
    q.cursor = q.input.len();
    q.select_all = false;
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

fn run(m: &mut Model) -> Vec<Cmd> {
    let q = &mut m.query;
    if q.input.trim().is_empty() || m.chunking.is_none() {
        return Vec::new();
    }
    if q.history.last() != Some(&q.input) {
        q.history.push(q.input.clone());
    }
    q.history_pos = None;
    // The results get the focus; typing a letter comes back here.
    q.editing = false;
    q.next_id += 1;
    q.pending = Some(q.next_id);
    vec![Cmd::Query {
        id: q.next_id,
        text: q.input.clone(),
        k: q.k,
    }]
}

/// The query layer's actions on the results; `None` when `a` is not one of them.
fn act_on_results(m: &mut Model, a: Action) -> Option<Vec<Cmd>> {
    let q = &mut m.query;
    let last = q.hits().len().saturating_sub(1);
    match a {
        Action::NextRetriever => {
            q.column = match q.column {
                Retriever::Bm25 => Retriever::Vector,
                Retriever::Vector => Retriever::Hybrid,
                Retriever::Hybrid => Retriever::Bm25,
            };
            q.selected = 0;
        }
        Action::MoreHits | Action::FewerHits => {
            q.k = if a == Action::MoreHits {
                (q.k + 1).min(100)
            } else {
                q.k.saturating_sub(1).max(1)
            };
            // Run again with the new k when a query is on screen.
            if !q.input.trim().is_empty() && m.chunking.is_some() {
                q.next_id += 1;
                q.pending = Some(q.next_id);
                return Some(vec![Cmd::Query {
                    id: q.next_id,
                    text: q.input.clone(),
                    k: q.k,
                }]);
            }
        }
        Action::NextHit => q.selected = (q.selected + 1).min(last),
        Action::PrevHit => q.selected = q.selected.saturating_sub(1),
        Action::CloseQuery => m.view = View::Chunks,
        Action::OpenHit => {
            if let Some(h) = q.hits().get(q.selected).cloned() {
                let (spans, current) = match_spans(m, &h);
                m.open_chunk(h.file_pos, h.chunk, spans, current);
            }
        }
        _ => return None,
    }
    Some(Vec::new())
}

/// What to highlight of a hit's chunk: BM25, every matched term; vector, the best sentence.
/// Without the chunk's text (not on screen), the match's first byte. Returns the spans in order
/// and the one the retriever reported.
fn match_spans(m: &Model, h: &chunkscope_core::search::Hit) -> (Vec<(usize, usize)>, usize) {
    use chunkscope_core::search::{sentence_span, term_spans};
    let Some(at) = h.match_byte else {
        return (Vec::new(), 0);
    };
    let Some(text) = m.chunk_text(h.file_pos, h.chunk) else {
        return (vec![(at, at)], 0);
    };
    let terms = term_spans(text, &m.query.input);
    let mut spans = match m.query.column {
        Retriever::Bm25 => terms,
        Retriever::Vector => sentence_span(text, at).into_iter().collect(),
        // The fused hit's match is BM25's first term when it has one, else the best sentence.
        Retriever::Hybrid if terms.iter().any(|&(a, _)| a == at) => terms,
        Retriever::Hybrid => sentence_span(text, at).into_iter().collect(),
    };
    if spans.is_empty() {
        spans.push((at, at));
    }
    let current = spans
        .iter()
        .position(|&(a, b)| a <= at && at <= b)
        .unwrap_or(0);
    (spans, current)
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
