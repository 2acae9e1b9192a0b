//! The find view: the text box, then the files and lines it finds.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, ListItem, Paragraph};
use ratatui::Frame;

use crate::app::find::Found;
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
    let found = &m.find.found;
    let path = |fp: usize| match (&m.engine, &m.chunking) {
        (Some(e), Some(c)) => c
            .files
            .get(fp)
            .and_then(|f| e.corpus.docs.get(f.doc))
            .map_or_else(String::new, |d| d.path.clone()),
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
    let title = format!(" {} found · file:chunk:line ", found.len());
    let hint = " type to find · up/down pick · enter opens (a line: its chunk, centred on the match) · esc back";
    super::list_with_hint(
        frame,
        (rows[1], rows[2]),
        items,
        (title, m.find.selected),
        hint.to_string(),
        t,
    );
}
