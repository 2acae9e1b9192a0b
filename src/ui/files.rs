//! The files pane: each file with its chunk count and how many chunks overflow the window.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState};
use ratatui::Frame;

use crate::app::Model;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let window = m.window().tokens;
    let mut items: Vec<ListItem> = Vec::new();
    if let Some(engine) = &m.engine {
        for (i, doc) in engine.corpus.docs.iter().enumerate() {
            let file = m.chunking.as_ref().and_then(|c| c.files.get(i));
            let count = file.map_or("…".to_string(), |f| f.chunks.len().to_string());
            let over = file.map_or(0, |f| {
                f.chunks
                    .iter()
                    .filter(|c| c.tail(window, m.specials).is_some())
                    .count()
            });
            let width = area.width.saturating_sub(2 + count.len() as u16 + 1) as usize;
            let mut lines = vec![Line::from(vec![
                Span::raw(format!("{:<width$.width$}", doc.path)),
                Span::raw(" "),
                Span::raw(count),
            ])];
            if over > 0 {
                lines.push(Line::styled(format!("  ! {over} over window"), t.warn));
            }
            if doc.lossy {
                lines.push(Line::styled("  invalid UTF-8 replaced", t.dim));
            }
            items.push(ListItem::new(lines));
        }
        for s in &engine.corpus.skipped {
            items.push(ListItem::new(Line::styled(
                format!("× {}: {}", s.path, s.reason),
                t.dim,
            )));
        }
    }
    let title = format!(
        " files {}{}{} ",
        m.file_count(),
        if m.watch.is_empty() {
            String::new()
        } else {
            format!(" · {}", m.watch)
        },
        if m.loading { " · loading…" } else { "" }
    );
    let list = List::new(items)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title)),
        )
        .highlight_style(t.selected);
    let mut state = ListState::default();
    if m.file_count() > 0 {
        state.select(Some(m.selected));
    }
    frame.render_stateful_widget(list, area, &mut state);
}
