//! The files pane: one line per file (chunks, chunks over the window), in the order the user
//! picked; then the files that were skipped, with the reason.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use crate::app::Model;

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let window = m.window().tokens;
    let inner = area.width.saturating_sub(2) as usize;
    let mut items: Vec<ListItem> = Vec::new();
    let order = m.file_order();
    if let Some(engine) = &m.engine {
        for &i in &order {
            let doc = &engine.corpus.docs[i];
            let file = m.file_chunks(i);
            // A large selected file's first chunks, the rest of it still being chunked: "64+".
            let more = if m.head_only(i) { "+" } else { "" };
            let count = file.map_or("…".to_string(), |f| format!("{}{more}", f.chunks.len()));
            let over = file.map_or(0, |f| {
                f.chunks
                    .iter()
                    .filter(|c| c.tail(window, m.specials).is_some())
                    .count()
            });
            let over_mark = if over > 0 {
                format!(" !{over}")
            } else {
                String::new()
            };
            let lossy = if doc.lossy { " ≈" } else { "" };
            let right = format!(" {count}{over_mark}{lossy}");
            let name = shorten_middle(&doc.path, inner.saturating_sub(right.width()));
            let pad = inner.saturating_sub(name.width() + right.width());
            items.push(ListItem::new(Line::from(vec![
                Span::raw(format!("{name}{}", " ".repeat(pad))),
                Span::raw(format!(" {count}")),
                Span::styled(over_mark, t.warn),
                Span::styled(lossy, t.dim),
            ])));
        }
        for s in &engine.corpus.skipped {
            items.push(ListItem::new(Line::styled(
                shorten_middle(&format!("× {}: {}", s.path, s.reason), inner),
                t.dim,
            )));
        }
    }
    let title = format!(
        " files {} · {}{}{} ",
        m.file_count(),
        m.chunks.file_sort.label(),
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
    if let Some(row) = order.iter().position(|&fp| fp == m.chunks.selected) {
        state.select(Some(row));
    }
    frame.render_stateful_widget(list, area, &mut state);
}

/// `s` in at most `width` columns, shortened in the middle ("prometheus-…/Operator.md").
pub fn shorten_middle(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    if width <= 1 {
        return "…".chars().take(width).collect();
    }
    let keep = width - 1;
    let (head_w, tail_w) = (keep / 2, keep - keep / 2);
    let mut head = String::new();
    for c in s.chars() {
        if head.width() + c.to_string().width() > head_w {
            break;
        }
        head.push(c);
    }
    let mut tail: Vec<char> = Vec::new();
    let mut w = 0;
    for c in s.chars().rev() {
        let cw = c.to_string().width();
        if w + cw > tail_w {
            break;
        }
        w += cw;
        tail.push(c);
    }
    let tail: String = tail.into_iter().rev().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::shorten_middle;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn shortened_in_the_middle() {
        let s = "prometheus-operator/PrometheusOperatorNotReady.md";
        let short = shorten_middle(s, 30);
        assert_eq!(short.width(), 30);
        assert!(short.starts_with("prometheus-op") && short.ends_with("NotReady.md"));
        assert_eq!(shorten_middle("short.md", 30), "short.md");
        assert!(shorten_middle("检索增强生成的质量.md", 9).width() <= 9);
    }
}
