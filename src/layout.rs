//! Where each part of the screen goes: geometry only, shared by the views (which draw there) and
//! the app (which maps a mouse click to what was drawn there).

use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// Where each part of the screen goes in `area`.
pub struct Areas {
    pub top: Rect,
    pub files: Rect,
    pub stats: Rect,
    pub main: Rect,
    pub status: Rect,
    pub hints: Rect,
}

/// The screen's layout: a third of the width for files and stats (24 to 90 columns), the rest
/// for the pane in view; stats take 11 rows when there is room, else the files keep half.
pub fn areas(area: Rect) -> Areas {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    let left_width = (rows[1].width / 3).clamp(24, 90);
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(left_width), Constraint::Min(10)])
        .split(rows[1]);
    let stats_rows = if cols[0].height >= 22 {
        11
    } else {
        cols[0].height / 2
    };
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(3), Constraint::Length(stats_rows)])
        .split(cols[0]);
    Areas {
        top: rows[0],
        files: left[0],
        stats: left[1],
        main: cols[1],
        status: rows[2],
        hints: rows[3],
    }
}
