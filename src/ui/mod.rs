//! Pure view functions, one file per pane. They read the model and draw; nothing else.

pub mod chunks;
pub mod eval;
pub mod files;
pub mod find;
pub mod help;
pub mod query;
pub mod stats;
pub mod status;
pub mod theme;
pub mod worst;

use ratatui::layout::{Constraint, Direction, Layout};
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

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, m: &Model) {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(frame.area());
    status::top(frame, rows[0], m);
    // A third of the width for files and stats, at least 24 columns and at most 90.
    let left_width = (rows[1].width / 3).clamp(24, 90);
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(left_width), Constraint::Min(10)])
        .split(rows[1]);
    let left = Layout::default()
        .direction(Direction::Vertical)
        // Stats take 11 rows when there is room; on a short terminal the files keep half.
        .constraints([
            Constraint::Min(3),
            Constraint::Length(if cols[0].height >= 22 {
                11
            } else {
                cols[0].height / 2
            }),
        ])
        .split(cols[0]);
    files::draw(frame, left[0], m);
    stats::draw(frame, left[1], m);
    match m.view {
        crate::app::View::Chunks => chunks::draw(frame, cols[1], m),
        crate::app::View::Query => query::draw(frame, cols[1], m),
        crate::app::View::Eval => eval::draw(frame, cols[1], m),
        crate::app::View::Worst => worst::draw(frame, cols[1], m),
        crate::app::View::Find => find::draw(frame, cols[1], m),
    }
    status::bottom(frame, rows[2], m);
    status::hints(frame, rows[3], m);
    if m.show_help {
        help::draw(frame, frame.area(), m);
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

/// The stale mark for pane titles while results lag behind the knobs.
pub fn stale_mark(m: &Model) -> &'static str {
    if m.stale() {
        " · stale, working…"
    } else {
        ""
    }
}
