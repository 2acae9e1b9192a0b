//! The chunk pane: the selected file's chunks one after another, boundaries and overlaps marked,
//! and the invisible tail drawn in its own style from the exact byte where it begins. Every line
//! carries a gutter mark ("▌" read by the embedder, "░" tail) so the tail is visible without colour.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthChar;

use super::{stale_mark, thousands};
use crate::app::Model;
use crate::core::measure::MeasuredChunk;
use crate::ui::theme::Theme;

pub const GUTTER_VISIBLE: &str = "▌ ";
pub const GUTTER_TAIL: &str = "░ ";

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let inner_width = area.width.saturating_sub(2) as usize;
    let height = area.height.saturating_sub(2) as usize;
    let (title, lines) = match (&m.engine, &m.chunking) {
        (Some(engine), Some(c)) if m.selected < c.files.len() => {
            let file = &c.files[m.selected];
            let doc = &engine.corpus.docs[file.doc];
            let focus = m.focus_chunk.min(file.chunks.len().saturating_sub(1));
            let title = match file.chunks.get(focus) {
                Some(ch) => chunk_title(m, &doc.path, ch, file.chunks.len()),
                None => format!(" {} · no chunks ", doc.path),
            };
            let mut lines = Vec::new();
            let want = m.scroll + height;
            for i in focus..file.chunks.len() {
                let prev_end = i.checked_sub(1).map(|p| file.chunks[p].chunk.end);
                lines.extend(render_chunk(
                    m,
                    &doc.text,
                    &file.chunks[i],
                    prev_end,
                    file.chunks.len(),
                    inner_width,
                ));
                if lines.len() >= want {
                    break;
                }
            }
            let skip = m.scroll.min(lines.len().saturating_sub(1));
            (title, lines.into_iter().skip(skip).take(height).collect())
        }
        _ => (
            " chunks ".to_string(),
            vec![Line::styled(
                if m.loading {
                    "reading and tokenizing the corpus…"
                } else {
                    "no files"
                },
                t.dim,
            )],
        ),
    };
    let title = format!("{title}{}", stale_mark(m));
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title)),
        ),
        area,
    );
}

fn chunk_title(m: &Model, path: &str, ch: &MeasuredChunk, total: usize) -> String {
    let w = m.window().tokens;
    let mut s = format!(
        " {} · chunk {}/{} · {} {} · {} embed tokens",
        path,
        ch.index + 1,
        total,
        thousands(ch.unit_len),
        ch_unit(m),
        thousands(ch.embed_tokens(m.specials))
    );
    if let Some(tail) = ch.tail(w, m.specials) {
        s.push_str(&format!(" · tail {} ", thousands(tail.tokens)));
    } else {
        s.push(' ');
    }
    s
}

fn ch_unit(m: &Model) -> &'static str {
    m.chunking.as_ref().map_or("", |c| c.settings.unit.name())
}

/// The lines of one chunk: a boundary header, then its text with overlap and tail styles.
pub fn render_chunk<'a>(
    m: &Model,
    doc: &'a str,
    ch: &'a MeasuredChunk,
    prev_end: Option<usize>,
    total: usize,
    width: usize,
) -> Vec<Line<'a>> {
    let t = &m.theme;
    let window = m.window().tokens;
    let tail = ch.tail(window, m.specials);
    let text = ch.text(doc);
    let overlap = match (prev_end, &ch.chunk.text) {
        (Some(p), None) if p > ch.chunk.start => (p - ch.chunk.start).min(text.len()),
        _ => 0,
    };
    let mut head = format!(
        "─── chunk {}/{} · {} {} · {} embed tokens",
        ch.index + 1,
        total,
        thousands(ch.unit_len),
        ch_unit(m),
        thousands(ch.embed_tokens(m.specials)),
    );
    if let Some(tl) = tail {
        head.push_str(&format!(
            " · tail from token {} ({} never embedded) ",
            tl.first_token + m.specials / 2,
            thousands(tl.tokens)
        ));
    } else {
        head.push_str(" · fits the window ");
    }
    if overlap > 0 {
        head.push_str(&format!("· overlap {} B ", overlap));
    }
    let fill = width.saturating_sub(head.chars().count());
    let mut lines = vec![Line::styled(
        format!("{head}{}", "─".repeat(fill)),
        t.boundary,
    )];
    if ch.chunk.text.is_some() {
        lines.push(Line::styled(
            "  (the splitter's text differs from the file here: a window was cut inside a character)",
            t.dim,
        ));
    }
    let tail_start = tail.map(|x| x.start_byte);
    lines.extend(wrap_styled(text, overlap, tail_start, width, t));
    lines
}

/// Wrap `text` to `width` columns (gutter included), styling bytes before `overlap` as overlap and
/// bytes from `tail_start` on as tail. Tabs become spaces and control characters a visible mark,
/// so no input can move the cursor or corrupt the screen.
pub fn wrap_styled<'a>(
    text: &str,
    overlap: usize,
    tail_start: Option<usize>,
    width: usize,
    t: &Theme,
) -> Vec<Line<'a>> {
    let body_width = width.saturating_sub(2).max(1);
    let in_tail = |b: usize| tail_start.is_some_and(|s| b >= s);
    let style_at = |b: usize| -> Style {
        let base = if in_tail(b) { t.tail } else { t.text };
        if b < overlap {
            base.patch(t.overlap)
        } else {
            base
        }
    };
    let mut lines = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut run = String::new();
    let mut run_style: Option<Style> = None;
    let mut col = 0usize;
    let mut line_tail = in_tail(0);
    let flush_line = |spans: &mut Vec<Span<'a>>,
                      run: &mut String,
                      run_style: &mut Option<Style>,
                      line_tail: bool,
                      lines: &mut Vec<Line<'a>>| {
        if let Some(s) = run_style.take() {
            spans.push(Span::styled(std::mem::take(run), s));
        }
        let (mark, gs) = if line_tail {
            (GUTTER_TAIL, t.tail_gutter)
        } else {
            (GUTTER_VISIBLE, t.gutter)
        };
        let mut all = vec![Span::styled(mark, gs)];
        all.append(spans);
        lines.push(Line::from(all));
    };
    for (b, c) in text.char_indices() {
        if c == '\n' {
            flush_line(&mut spans, &mut run, &mut run_style, line_tail, &mut lines);
            col = 0;
            line_tail = in_tail(b + 1);
            continue;
        }
        let shown: String = match c {
            '\t' => "    ".into(),
            c if c.is_control() => "·".into(),
            c => c.to_string(),
        };
        let w: usize = shown.chars().map(|x| x.width().unwrap_or(0)).sum();
        if col + w > body_width && col > 0 {
            flush_line(&mut spans, &mut run, &mut run_style, line_tail, &mut lines);
            col = 0;
            line_tail = in_tail(b);
        }
        line_tail |= in_tail(b);
        let st = style_at(b);
        if run_style != Some(st) {
            if let Some(s) = run_style.take() {
                spans.push(Span::styled(std::mem::take(&mut run), s));
            }
            run_style = Some(st);
        }
        run.push_str(&shown);
        col += w;
    }
    if run_style.is_some() || !spans.is_empty() || lines.is_empty() {
        flush_line(&mut spans, &mut run, &mut run_style, line_tail, &mut lines);
    }
    lines
}
