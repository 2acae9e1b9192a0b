//! The help overlay, generated from the keymap.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::app::keymap::Layer;
use crate::app::{Model, View};

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    // The pane under the overlay: its own keys first, then those of every pane.
    let pane = match m.view {
        View::Chunks => Layer::Chunks,
        View::Query => Layer::Query,
        View::Eval => Layer::Eval,
        View::Worst => Layer::Worst,
        View::Find => Layer::Global,
    };
    let mut lines: Vec<Line> = Vec::new();
    for layer in [pane, Layer::Global] {
        if layer == Layer::Global {
            lines.push(Line::styled(" in every pane:", t.dim));
        }
        lines.extend(
            m.keymap
                .bindings
                .iter()
                .filter(|b| b.layer == layer)
                .map(|b| {
                    Line::from(vec![
                        Span::styled(format!(" {:<22}", b.keys.join(", ")), t.title),
                        Span::raw(b.description),
                    ])
                }),
        );
    }
    lines.push(Line::styled(
        " ▌ the embedder reads this   ░ invisible tail: past the window, never embedded",
        t.dim,
    ));
    lines.push(Line::styled(
        " Remap keys in workbench.toml [keys] and [keys.PANE]. Any other key closes help.",
        t.dim,
    ));
    let width = area.width.min(96);
    let height = (lines.len() as u16 + 2).min(area.height);
    // Too short for all of it: scroll with the file and scroll keys.
    let hidden = (lines.len() as u16 + 2).saturating_sub(height);
    let scroll = m.help_scroll.min(hidden);
    let title = if hidden > 0 {
        format!(
            " help · {} pane · {}/{} · j/k scroll ",
            pane.name(),
            scroll,
            hidden
        )
    } else {
        format!(" help · {} pane ", pane.name())
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
