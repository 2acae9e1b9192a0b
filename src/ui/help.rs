//! The help overlay, generated from the keymap.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::app::Model;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let mut lines: Vec<Line> = m
        .keymap
        .bindings
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!(" {:<22}", b.keys.join(", ")), t.title),
                Span::raw(b.description),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        " ▌ the embedder reads this   ░ invisible tail: past the window, never embedded",
        t.dim,
    ));
    lines.push(Line::styled(
        " Keys are remapped in workbench.toml [keys]. Any other key closes help.",
        t.dim,
    ));
    let width = area.width.min(96);
    let height = (lines.len() as u16 + 2).min(area.height);
    // Too short for all of it: scroll with the file and scroll keys.
    let hidden = (lines.len() as u16 + 2).saturating_sub(height);
    let scroll = m.help_scroll.min(hidden);
    let title = if hidden > 0 {
        format!(" help · {}/{} · j/k scroll ", scroll, hidden)
    } else {
        " help ".to_string()
    };
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title)),
        ),
        rect,
    );
}
