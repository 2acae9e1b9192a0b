//! Pure view functions, one file per pane. They read the model and draw; nothing else.

pub mod chunks;
pub mod eval;
pub mod files;
pub mod find;
pub mod help;
pub mod query;
pub mod stats;
pub mod status;
pub mod worst;

use ratatui::layout::Rect;
use ratatui::Frame;

use crate::app::Model;

/// The hint keys of one pane's own layer, from the keymap: "enter open   esc close".
pub fn pane_keys(m: &Model, layer: crate::app::keymap::Layer) -> String {
    m.keymap
        .bindings
        .iter()
        .filter(|b| b.layer == layer && b.hint)
        .filter_map(|b| Some(format!("{} {}", b.keys.first()?, b.name)))
        .collect::<Vec<_>>()
        .join("   ")
}

/// A bordered list titled `title` with row `selected` highlighted (clamped to the list), and
/// `hint` on the line under it: the shape of the eval, worst-chunks and find views.
pub fn list_with_hint(
    frame: &mut Frame,
    (list_area, hint_area): (Rect, Rect),
    items: Vec<ratatui::widgets::ListItem>,
    (title, selected): (String, usize),
    hint: String,
    t: &crate::theme::Theme,
) {
    use ratatui::text::{Line, Span};
    use ratatui::widgets::{Block, Borders, List, ListState, Paragraph};
    let mut state = ListState::default();
    if !items.is_empty() {
        state.select(Some(selected.min(items.len() - 1)));
    }
    frame.render_stateful_widget(
        List::new(items)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, t.title)),
            )
            .highlight_style(t.selected),
        list_area,
        &mut state,
    );
    frame.render_widget(Paragraph::new(Line::styled(hint, t.dim)), hint_area);
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, m: &Model) {
    let a = crate::layout::areas(frame.area());
    status::top(frame, a.top, m);
    files::draw(frame, a.files, m);
    stats::draw(frame, a.stats, m);
    match m.view {
        crate::app::View::Chunks => chunks::draw(frame, a.main, m),
        crate::app::View::Query => query::draw(frame, a.main, m),
        crate::app::View::Eval => eval::draw(frame, a.main, m),
        crate::app::View::Worst => worst::draw(frame, a.main, m),
        crate::app::View::Find => find::draw(frame, a.main, m),
    }
    status::bottom(frame, a.status, m);
    status::hints(frame, a.hints, m);
    if m.show_help {
        help::draw(frame, frame.area(), m);
    }
}

/// Pages of a paged document: "p. 12" or "p. 12-13".
pub fn pages_label((first, last): (usize, usize)) -> String {
    if first == last {
        format!("p. {first}")
    } else {
        format!("p. {first}-{last}")
    }
}

/// Thousands separators: 8912 -> "8,912".
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "partial: 3/11,120 files" (re-chunked so far) while the files in focus show the knobs as they
/// are and the rest of the corpus is still being chunked; short enough for the stats title.
pub fn partial_label(m: &Model) -> Option<String> {
    let p = m.partial.as_ref().filter(|_| m.stale())?;
    Some(format!(
        "partial: {}/{} files",
        thousands(p.done),
        thousands(p.total)
    ))
}

/// The stale mark for pane titles while results lag behind the knobs.
pub fn stale_mark(m: &Model) -> &'static str {
    if m.stale() {
        " · stale, working…"
    } else {
        ""
    }
}
