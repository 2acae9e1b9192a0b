//! The query pane: BM25 and vector hits side by side on the same chunks, each placed at the token
//! offset of its match and marked inside the window or in the tail.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::Frame;

use crate::app::keymap::{Action, Layer};
use crate::app::{Model, Retriever};
use chunkscope_core::search::Hit;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let why = m.query.results.as_ref().and_then(|r| r.expect.as_ref());
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Min(3),
            Constraint::Length(if why.is_some() { 7 } else { 0 }),
            Constraint::Length(1),
        ])
        .split(area);
    if let Some(w) = why {
        why_not(frame, rows[2], m, w);
    }
    query_box(frame, rows[0], m);
    let reranker = m.query.reranker.is_some();
    let cols = column_areas(rows[1], reranker);
    hit_columns(frame, &cols, m);
    if reranker {
        rerank_column(frame, cols[3], m);
    }
    frame.render_widget(Paragraph::new(hint(m)), rows[3]);
}

/// The query's text box, its title saying k and whether the search is running or BM25 only.
fn query_box(frame: &mut Frame, area: Rect, m: &Model) {
    let state = if m.query.pending.is_some() {
        " · searching…"
    } else if m.embeddings_stale() {
        " · vectors not ready: BM25 only until embedding ends"
    } else {
        ""
    };
    frame.render_widget(
        Paragraph::new(query_line(m)).block(Block::default().borders(Borders::ALL).title(
            Span::styled(format!(" query · k {}{state} ", m.query.k), m.theme.title),
        )),
        area,
    );
}

/// Where the hit columns go: side by side when each gets 50 columns; else BM25 and vector side
/// by side and the hybrid column (and the reranker's) under them.
fn column_areas(area: Rect, reranker: bool) -> Vec<Rect> {
    let n = if reranker { 4 } else { 3 };
    if area.width >= 50 * n {
        Layout::default()
            .direction(Direction::Horizontal)
            .constraints(vec![Constraint::Ratio(1, n as u32); n as usize])
            .split(area)
            .to_vec()
    } else if reranker {
        let halves = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)])
            .split(area);
        let side = |r: Rect| {
            Layout::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
                .split(r)
        };
        let (top, bottom) = (side(halves[0]), side(halves[1]));
        vec![top[0], top[1], bottom[0], bottom[1]]
    } else {
        let halves = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Ratio(3, 5), Constraint::Ratio(2, 5)])
            .split(area);
        let top = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(halves[0]);
        vec![top[0], top[1], halves[1]]
    }
}

/// The first stage's columns: BM25, vector (with the approximate search's recall when it was
/// used) and hybrid, in the first three of `cols`.
fn hit_columns(frame: &mut Frame, cols: &[Rect], m: &Model) {
    let results = m.query.results.as_ref();
    let window = results.map_or(m.window().tokens, |r| r.window);
    let empty = Vec::new();
    let (bm, vec, hybrid) = results.map_or((&empty, &empty, &empty), |r| {
        (&r.bm25, &r.vector, &r.hybrid)
    });
    let rrf_k = results.map_or(0, |r| r.rrf_k);
    let failed = results.and_then(|r| r.vector_error.as_deref());
    column(
        frame,
        cols[0],
        m,
        (" BM25 (tantivy) ".to_string(), bm, None),
        Retriever::Bm25,
    );
    column(
        frame,
        cols[1],
        m,
        (
            format!(" vector ({}, window {window}) ", m.model_name),
            vec,
            failed,
        ),
        Retriever::Vector,
    );
    if let Some(a) = results.and_then(|r| r.approximate.as_ref()) {
        // Past the threshold the column comes from the HNSW graph: said on its bottom border,
        // with its recall@10 against exact search measured on this corpus.
        let note = format!(" approximate (HNSW) · recall@10 {:.2} ", a.recall_at_10);
        bottom_note(frame, cols[1], Line::styled(note, m.theme.warn));
    }
    column(
        frame,
        cols[2],
        m,
        (format!(" hybrid (RRF k={rrf_k}) "), hybrid, None),
        Retriever::Hybrid,
    );
}

/// The pane's key hint: the text box's keys while typing, else the pane's and its legend.
fn hint(m: &Model) -> Line<'static> {
    Line::styled(
        if m.query.editing {
            " type the query: enter runs it · up/down earlier queries · tab to the hits · esc back · ctrl-a/e/u/w/k, alt-b/f edit".to_string()
        } else {
            format!(
                " {}   typing goes back to the query   TAIL = match past the window   ◆ only here   ↳ parent section returned ({}), its size for the generator",
                super::pane_keys(m, Layer::Query),
                m.keymap.keys_of(Action::Parents).first().map_or("", String::as_str),
            )
        },
        m.theme.dim,
    )
}

/// The expected chunk (`x` in the chunks pane): its rank and score in each retriever against the
/// last hit shown, and what of the query lies in its invisible tail.
fn why_not(frame: &mut Frame, area: Rect, m: &Model, w: &chunkscope_core::explain::WhyNot) {
    let t = &m.theme;
    let mut lines: Vec<Line> = w
        .places
        .iter()
        .map(|p| {
            let rank = match p.rank {
                Some(r) if p.shown => Span::styled(format!("rank {r} (shown)"), t.title),
                Some(r) => Span::styled(format!("rank {r}"), t.warn),
                None => Span::styled("not ranked".to_string(), t.warn),
            };
            let score = p.score.map_or(String::new(), |s| format!("  score {s:.3}"));
            let bar = p
                .last_shown_score
                .map_or(String::new(), |s| format!("  (last shown {s:.3})"));
            Line::from(vec![
                Span::raw(format!("{:<7} ", p.retriever)),
                rank,
                Span::raw(format!("{score}{bar}")),
            ])
        })
        .collect();
    lines.push(if w.terms_in_tail.is_empty() {
        Line::styled(
            match w.tail_start {
                Some(_) => "no query term lies only in its tail".to_string(),
                None => "the window holds the whole chunk".to_string(),
            },
            t.dim,
        )
    } else {
        Line::from(vec![
            Span::raw("query terms only in the invisible tail (never embedded): "),
            Span::styled(w.terms_in_tail.join(", "), t.tail),
        ])
    });
    let title = format!(
        " why not {} #{}? · {} copies the case as Markdown ",
        w.file,
        w.chunk + 1,
        m.keymap
            .keys_of(Action::CopyCase)
            .first()
            .map_or("", String::as_str)
    );
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title)),
        ),
        area,
    );
}

/// The text box: the input with its cursor, all of it highlighted when selected (typing replaces
/// it).
fn query_line(m: &Model) -> Line<'static> {
    text_line(&m.query.input, m.query.editing, &m.theme)
}

/// A text box: its text with the cursor when it has the focus, all of it highlighted when
/// selected (typing replaces it).
pub fn text_line(
    b: &crate::app::textbox::TextBox,
    focused: bool,
    t: &crate::theme::Theme,
) -> Line<'static> {
    if b.select_all {
        return Line::from(Span::styled(b.text.clone(), t.selected));
    }
    let at = b.cursor.min(b.text.len());
    let mut spans = vec![Span::raw(b.text[..at].to_string())];
    if focused {
        spans.push(Span::styled("▏", t.title));
    }
    spans.push(Span::raw(b.text[at..].to_string()));
    Line::from(spans)
}

/// The reranker's column: its order of the first stage's candidates, with the pair window and
/// the time it took; "reranking…" while it scores, the reason when it failed.
fn rerank_column(frame: &mut Frame, area: Rect, m: &Model) {
    let q = &m.query;
    let name = q.reranker.as_deref().map_or("", short_name);
    let (title, hits, why) = match &q.reranked {
        Some(Ok(r)) => (format!(" rerank ({name}) "), r.hits.as_slice(), None),
        Some(Err(e)) => (format!(" rerank ({name}) "), &[][..], Some(e.as_str())),
        None if q.results.is_some() => (format!(" rerank ({name}) "), &[][..], Some("reranking…")),
        None => (format!(" rerank ({name}) "), &[][..], None),
    };
    column(frame, area, m, (title, hits, why), Retriever::Rerank);
    if let Some(Ok(r)) = &q.reranked {
        // How it was made, on the column's bottom border.
        let info = format!(
            " {} tok · {} scored · {} cut · {:.0} ms ",
            r.info.window, r.info.candidates, r.info.truncated, r.info.millis
        );
        bottom_note(frame, area, Line::styled(info, m.theme.dim));
    }
}

/// A line on a column's bottom border.
fn bottom_note(frame: &mut Frame, area: Rect, line: Line) {
    let bottom = Rect {
        x: area.x + 1,
        y: area.y + area.height.saturating_sub(1),
        width: area.width.saturating_sub(2),
        height: 1.min(area.height),
    };
    frame.render_widget(Paragraph::new(line), bottom);
}

/// A folder's last component, as a column title names a model.
fn short_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// One retriever's hits; `failed` says why the column is empty (the query's vector could not be
/// made).
fn column(
    frame: &mut Frame,
    area: Rect,
    m: &Model,
    (title, hits, failed): (String, &[Hit], Option<&str>),
    col: Retriever,
) {
    let t = &m.theme;
    let mut items: Vec<ListItem> = hits
        .iter()
        .map(|h| {
            let place = match (h.token_offset, h.in_tail) {
                (Some(tok), true) => Span::styled(format!("@tok {tok} TAIL"), t.tail),
                (Some(tok), false) => Span::raw(format!("@tok {tok} window")),
                // The reranker's hit: its match lies past the pair window it read.
                (None, true) => Span::styled("TAIL past the pair window".to_string(), t.tail),
                (None, false) => Span::styled("@tok -".to_string(), t.dim),
            };
            let mut first = vec![
                Span::raw(format!("{:>2} {:>6.3} ", h.rank, h.score)),
                Span::styled(format!("{} #{}", h.file, h.chunk + 1), t.title),
            ];
            if let (Some(a), Some(b)) = (h.page_start, h.page_end) {
                first.push(Span::raw(format!(" {}", super::pages_label((a, b)))));
            }
            if let Some(hd) = &h.heading {
                first.push(Span::raw(format!(" \"{hd}\"")));
            }
            let mut second = vec![Span::raw("   "), place];
            if h.only_here {
                second.push(Span::styled("  ◆ only here", t.warn));
            }
            let mut lines = vec![Line::from(first), Line::from(second)];
            if let Some(p) = &h.parent {
                lines.push(Line::from(vec![
                    Span::raw("   ↳ parent "),
                    Span::styled(p.id.clone(), t.title),
                    Span::raw(format!(
                        " · {} cl100k tok",
                        super::thousands(p.cl100k_tokens)
                    )),
                ]));
            }
            ListItem::new(lines)
        })
        .collect();
    if let (true, Some(why)) = (hits.is_empty(), failed) {
        items.push(ListItem::new(Line::styled(why.to_string(), t.warn)));
    }
    let focused = m.query.column == col && !m.query.editing;
    let list = List::new(items)
        .block(Block::default().borders(Borders::ALL).title(Span::styled(
            title,
            if focused { t.selected } else { t.title },
        )))
        .highlight_style(t.selected);
    let mut state = ListState::default();
    if focused && !hits.is_empty() {
        state.select(Some(m.query.selected.min(hits.len() - 1)));
    }
    frame.render_stateful_widget(list, area, &mut state);
}
