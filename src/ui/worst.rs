//! The worst-chunks view: the chunks past the window across the corpus, worst first.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::ListItem;
use ratatui::Frame;

use super::{stale_mark, thousands};
use crate::app::keymap::Layer;
use crate::app::Model;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(3), Constraint::Length(1)])
        .split(area);
    let worst = m.worst_chunks();
    let paths: Vec<&str> = worst
        .iter()
        .map(|w| match (&m.engine, &m.chunking) {
            (Some(e), Some(c)) => e.corpus.docs[c.files[w.file_pos].doc].path.as_str(),
            _ => "",
        })
        .collect();
    let items: Vec<ListItem> = worst
        .iter()
        .zip(&paths)
        .enumerate()
        .map(|(i, (w, path))| {
            ListItem::new(Line::from(vec![
                Span::styled(format!("{:>4} ", i + 1), t.dim),
                Span::raw(format!("{path} #{}", w.index)),
                Span::raw(format!("  {} embed tokens, ", thousands(w.embed_tokens))),
                Span::styled(
                    format!("{} never embedded", thousands(w.tail_tokens)),
                    t.tail,
                ),
            ]))
        })
        .collect();
    let title = format!(
        " worst chunks · {} past the {}-token window{} ",
        worst.len(),
        m.window().tokens,
        stale_mark(m)
    );
    let hint = format!(" {}", super::pane_keys(m, Layer::Worst));
    super::list_with_hint(
        frame,
        (rows[0], rows[1]),
        items,
        (title, m.worst.selected),
        hint,
        t,
    );
}
