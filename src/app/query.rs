//! The query pane: a text box, then BM25 and vector hits to browse and open. Printable keys are
//! always text here (typing a word never turns a knob or quits); results are browsed with the
//! query layer's keys, and other keys (ctrl-c, F-keys) keep their global meaning.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::{Action, Layer};
use super::textbox::Edit;
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
                q.input.select_all = true;
            } else {
                q.input.cursor = q.input.text.len();
                q.input.insert(&c.to_string());
            }
            Vec::new()
        }
        KeyCode::Backspace => {
            m.query.editing = true;
            m.query.input.cursor = m.query.input.text.len();
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
    match m.query.input.key(ev) {
        Edit::Enter => return run(m),
        Edit::Esc => {
            m.query.editing = false;
            m.view = View::Chunks;
        }
        Edit::Tab => m.query.editing = false,
        Edit::Up => recall(m, -1),
        Edit::Down => recall(m, 1),
        Edit::Edited => m.query.history_pos = None,
        // F-keys are never text: help (F1) opens from inside the box too.
        Edit::Ignored if matches!(ev.code, KeyCode::F(_)) => {
            if let Some(a) = m.keymap.action_for(Layer::Global, ev) {
                return act(m, Layer::Global, a);
            }
        }
        Edit::Ignored => {}
    }
    Vec::new()
}

/// Pasted text goes into the box at the cursor (line breaks become spaces).
pub(super) fn paste(m: &mut Model, text: &str) {
    if m.view != View::Query {
        return;
    }
    m.query.editing = true;
    m.query.input.insert(text);
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
    q.input
        .set(pos.map(|p| q.history[p].clone()).unwrap_or_default());
}

fn run(m: &mut Model) -> Vec<Cmd> {
    let q = &mut m.query;
    q.input.select_all = false;
    if q.input.text.trim().is_empty() || m.chunking.is_none() {
        return Vec::new();
    }
    if q.history.last() != Some(&q.input.text) {
        q.history.push(q.input.text.clone());
    }
    q.history_pos = None;
    // The results get the focus; typing a letter comes back here.
    q.editing = false;
    q.next_id += 1;
    q.pending = Some(q.next_id);
    vec![Cmd::Query {
        id: q.next_id,
        text: q.input.text.clone(),
        k: q.k,
        expect: q.expect,
    }]
}

/// The query layer's actions on the results; `None` when `a` is not one of them.
fn act_on_results(m: &mut Model, a: Action) -> Option<Vec<Cmd>> {
    let q = &mut m.query;
    let last = q.hits().len().saturating_sub(1);
    match a {
        Action::NextRetriever => {
            q.column = q.next_column();
            q.selected = 0;
        }
        Action::MoreHits | Action::FewerHits => {
            q.k = if a == Action::MoreHits {
                (q.k + 1).min(100)
            } else {
                q.k.saturating_sub(1).max(1)
            };
            // Run again with the new k when a query is on screen.
            if !q.input.text.trim().is_empty() && m.chunking.is_some() {
                q.next_id += 1;
                q.pending = Some(q.next_id);
                return Some(vec![Cmd::Query {
                    id: q.next_id,
                    text: q.input.text.clone(),
                    k: q.k,
                    expect: q.expect,
                }]);
            }
        }
        Action::CopyCase => {
            let Some(r) = m.query.results.clone() else {
                return Some(Vec::new());
            };
            let text = case_markdown(m, &r);
            m.info = Some("copied the case as Markdown (OSC 52)".into());
            return Some(vec![Cmd::Copy { text }]);
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

/// The query as a case to paste into an issue or a chat: the query, the settings as a command
/// line, the three result lists, and the expected chunk with its ranks and its tail marked.
pub(super) fn case_markdown(m: &Model, r: &chunkscope_core::search::Results) -> String {
    let mut s = format!(
        "### chunkscope: query {:?}\n\n`{}`\n\nwindow {} tokens · k {} · {}\n",
        r.query,
        super::chunks::command_line(m),
        r.window,
        r.k,
        r.embedder
    );
    let mut lists = vec![
        ("BM25", &r.bm25),
        ("vector", &r.vector),
        ("hybrid", &r.hybrid),
    ];
    if let Some(Ok(rr)) = &m.query.reranked {
        lists.push(("rerank", &rr.hits));
    }
    for (name, hits) in lists {
        s.push_str(&format!(
            "\n**{name}**\n\n| rank | score | chunk | @tok | |\n|---|---|---|---|---|\n"
        ));
        for h in hits {
            s.push_str(&format!(
                "| {} | {:.3} | {} #{} | {} | {} |\n",
                h.rank,
                h.score,
                h.file,
                h.chunk + 1,
                h.token_offset.map_or("-".into(), |t| t.to_string()),
                if h.in_tail { "TAIL" } else { "window" }
            ));
        }
    }
    if let Some(w) = &r.expect {
        s.push_str(&format!("\n**expected: {} #{}**\n\n", w.file, w.chunk + 1));
        for p in &w.places {
            s.push_str(&format!(
                "- {}: {}{}, last shown {}\n",
                p.retriever,
                p.rank.map_or("not ranked".into(), |r| format!("rank {r}")),
                p.score
                    .map_or(String::new(), |x| format!(" (score {x:.3})")),
                p.last_shown_score.map_or("-".into(), |x| format!("{x:.3}"))
            ));
        }
        if !w.terms_in_tail.is_empty() {
            s.push_str(&format!(
                "- query terms only in the invisible tail: {}\n",
                w.terms_in_tail.join(", ")
            ));
        }
        if let Some(text) = m.chunk_text(
            m.query.expect.map_or(0, |e| e.0),
            m.query.expect.map_or(0, |e| e.1),
        ) {
            let cut = w.tail_start.unwrap_or(text.len()).min(text.len());
            s.push_str(&format!("\n```text\n{}\n```\n", &text[..cut]));
            if cut < text.len() {
                s.push_str(&format!(
                    "\ninvisible tail (never embedded):\n\n```text\n{}\n```\n",
                    &text[cut..]
                ));
            }
        }
    }
    s
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
    let terms = term_spans(text, &m.query.input.text);
    let mut spans = match m.query.column {
        Retriever::Bm25 => terms,
        Retriever::Vector => sentence_span(text, at).into_iter().collect(),
        // The fused hit's match is BM25's first term when it has one, else the best sentence.
        Retriever::Hybrid if terms.iter().any(|&(a, _)| a == at) => terms,
        Retriever::Hybrid => sentence_span(text, at).into_iter().collect(),
        // The reranker read the pair; its hit's match is the query's first term.
        Retriever::Rerank => terms,
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
