//! The find view: the text box, then the files and lines it finds.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::Frame;

use crate::app::find::{results, Found};
use crate::app::Model;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .split(area);
    frame.render_widget(
        Paragraph::new(super::query::text_line(&m.find.input, true, t)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(" find: file names (fuzzy) and text ", t.title)),
        ),
        rows[0],
    );
    let found = results(m);
    let path = |fp: usize| match (&m.engine, &m.chunking) {
        (Some(e), Some(c)) => e.corpus.docs[c.files[fp].doc].path.clone(),
        _ => String::new(),
    };
    let items: Vec<ListItem> = found
        .iter()
        .map(|f| match f {
            Found::File { file_pos } => ListItem::new(Line::from(vec![
                Span::styled("file ", t.dim),
                Span::raw(path(*file_pos)),
            ])),
            Found::Line {
                file_pos,
                chunk,
                line,
                text,
                ..
            } => ListItem::new(Line::from(vec![
                Span::styled(
                    format!("{}:{}:{} ", path(*file_pos), chunk + 1, line),
                    t.title,
                ),
                Span::raw(text.clone()),
            ])),
        })
        .collect();
    let mut state = ListState::default();
    if !items.is_empty() {
        state.select(Some(m.find.selected.min(items.len() - 1)));
    }
    let title = format!(" {} found · file:chunk:line ", found.len());
    frame.render_stateful_widget(
        List::new(items)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, t.title)),
            )
            .highlight_style(t.selected),
        rows[1],
        &mut state,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(
            " type to find · up/down pick · enter opens (a line: its chunk, centred on the match) · esc back",
            t.dim,
        )),
        rows[2],
    );
}
