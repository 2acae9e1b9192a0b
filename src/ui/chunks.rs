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
use crate::theme::Theme;
use chunkscope_core::corpus::Document;
use chunkscope_core::measure::MeasuredChunk;

pub const GUTTER_VISIBLE: &str = "▌ ";
pub const GUTTER_TAIL: &str = "░ ";

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let inner_width = area.width.saturating_sub(2) as usize;
    let height = area.height.saturating_sub(2) as usize;
    let (title, lines) = match (&m.engine, m.file_chunks(m.chunks.selected)) {
        (Some(engine), Some(file)) if file.doc < engine.corpus.docs.len() => {
            let doc = &engine.corpus.docs[file.doc];
            let focus = m
                .chunks
                .focus_chunk
                .min(file.chunks.len().saturating_sub(1));
            let title = match file.chunks.get(focus) {
                Some(ch) => chunk_title(m, &doc.path, ch, file.chunks.len()),
                None => format!(" {} · no chunks ", doc.path),
            };
            let mut lines = Vec::new();
            // Centred on a match: the line it is on, half a pane down.
            let mut first_line = m.chunks.scroll;
            for i in focus..file.chunks.len() {
                let prev_end = i.checked_sub(1).map(|p| file.chunks[p].end());
                let parent = file.chunks[i]
                    .parent()
                    .and_then(|p| file.parents.get(p))
                    .map(|p| (p.id(&doc.path), p.start, p.end));
                let (chunk_lines, match_line) = render_chunk(
                    m,
                    doc,
                    &file.chunks[i],
                    prev_end,
                    file.chunks.len(),
                    inner_width,
                    parent,
                );
                if let (true, Some(l)) = (i == focus && m.chunks.centre_on_match, match_line) {
                    let centred = l as isize - (height / 2) as isize + m.chunks.match_scroll;
                    first_line = centred.max(0) as usize;
                }
                lines.extend(chunk_lines);
                if lines.len() >= first_line + height {
                    break;
                }
            }
            let skip = first_line.min(lines.len().saturating_sub(1));
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
    // The selected file chunked ahead of the rest shows the knobs as they are: not stale.
    let mark = if m.selected_ahead() {
        ""
    } else {
        stale_mark(m)
    };
    let title = format!("{title}{mark}");
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title)),
        ),
        area,
    );
}

/// "+" after the selected file's chunk count while only its first chunks are in ("chunk
/// 3/64+"): the rest of the file is still being chunked.
fn more_mark(m: &Model) -> &'static str {
    if m.head_only(m.chunks.selected) {
        "+"
    } else {
        ""
    }
}

fn chunk_title(m: &Model, path: &str, ch: &MeasuredChunk, total: usize) -> String {
    let w = m.window().tokens;
    let mut s = format!(
        " {} · chunk {}/{}{} · {}",
        path,
        ch.index + 1,
        total,
        more_mark(m),
        sizes(m, ch)
    );
    if let Some(tail) = ch.tail(w, m.specials) {
        s.push_str(&format!(" · tail {} ", thousands(tail.tokens)));
    } else {
        s.push(' ');
    }
    s
}

/// A chunk's size in the chunking's unit and in what the model reads, one unit name each:
/// "1,392 chars · 304 embed tokens", or for the embed unit "90 embed tokens + 2 specials" (and
/// the embedded prefix's tokens when there is one).
fn sizes(m: &Model, ch: &MeasuredChunk) -> String {
    let embed = ch.embed_tokens(m.specials);
    let Some(unit) = m.settings_of(m.chunks.selected).map(|s| s.unit) else {
        return format!("{} embed tokens", thousands(embed));
    };
    let len = ch.unit_len(unit);
    match unit.name() {
        "embed" if ch.prefix_tokens() > 0 => format!(
            "{} embed tokens + {} prefix + {} specials",
            thousands(len),
            ch.prefix_tokens(),
            m.specials
        ),
        "embed" => format!("{} embed tokens + {} specials", thousands(len), m.specials),
        unit => format!(
            "{} {unit} · {} embed tokens",
            thousands(len),
            thousands(embed)
        ),
    }
}

/// The lines of one chunk: a boundary header, then its text with overlap and tail styles and its
/// matches marked; with the index of the line holding the current match.
pub fn render_chunk<'a>(
    m: &Model,
    document: &'a Document,
    ch: &'a MeasuredChunk,
    prev_end: Option<usize>,
    total: usize,
    width: usize,
    parent: Option<(String, usize, usize)>,
) -> (Vec<Line<'a>>, Option<usize>) {
    let t = &m.theme;
    let doc = document.text.as_str();
    let window = m.window().tokens;
    let tail = ch.tail(window, m.specials);
    let text = ch.text(doc);
    let overlap = match (prev_end, ch.own_text()) {
        (Some(p), None) if p > ch.start() => (p - ch.start()).min(text.len()),
        _ => 0,
    };
    let mut head = format!(
        "─── chunk {}/{}{} · {}",
        ch.index + 1,
        total,
        more_mark(m),
        sizes(m, ch)
    );
    if let Some(pages) = document.page_span(ch.start(), ch.end()) {
        head.push_str(&format!(" · {}", super::pages_label(pages)));
    }
    if tail.is_some() && m.window().rejects {
        head.push_str(&format!(
            " · REJECTED: longer than the server's {window} tokens, no vector "
        ));
    } else if let Some(tl) = tail {
        head.push_str(&format!(
            " · tail from token {} ({} never embedded) ",
            ch.input_position(tl.first_token, m.specials),
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
    if let Some(h) = ch.heading() {
        lines.push(Line::styled(format!("  § {h}"), t.title));
    }
    if let Some(prefix) = ch.prefix() {
        lines.push(Line::styled(
            format!(
                "  embedded ahead of the text ({} tokens of the window):",
                ch.prefix_tokens()
            ),
            t.dim,
        ));
        for l in prefix.lines().filter(|l| !l.is_empty()) {
            lines.push(Line::styled(format!("  + {l}"), t.overlap));
        }
    }
    if let Some((id, start, end)) = parent {
        let chars = doc[start..end].chars().count();
        lines.push(Line::styled(
            format!(
                "  a hit returns its parent {id}: {} chars ({}x this chunk)",
                thousands(chars),
                (chars as f64 / ch.chars.max(1) as f64 * 10.0).round() / 10.0
            ),
            t.dim,
        ));
    }
    if ch.own_text().is_some() {
        lines.push(Line::styled(
            "  (the splitter's text differs from the file here: a window was cut inside a character)",
            t.dim,
        ));
    }
    let tail_start = tail.map(|x| x.start_byte);
    let mut body = wrap_styled(text, overlap, tail_start, width, t);
    let mut match_line = None;
    if let Some(h) = m
        .chunks
        .highlight
        .as_ref()
        .filter(|h| h.file_pos == m.chunks.selected && h.chunk == ch.index as usize)
    {
        let rows = visual_lines(text, width.saturating_sub(2).max(1));
        for &span in &h.spans {
            mark_match(&mut body, &rows, text, span, t);
        }
        match_line = h
            .current_span()
            .map(|(at, _)| lines.len() + rows.iter().rposition(|&(a, _)| a <= at).unwrap_or(0));
    }
    lines.extend(body);
    (lines, match_line)
}

/// Restyle a match (bytes `at..end` of the chunk text; an empty range: the word at `at`) on the
/// wrapped lines, whose byte ranges are `rows`.
fn mark_match(
    lines: &mut [Line],
    rows: &[(usize, usize)],
    text: &str,
    span: (usize, usize),
    t: &Theme,
) {
    let at = span.0.min(text.len());
    let end = if span.1 > at {
        span.1.min(text.len())
    } else {
        text[at..]
            .find(|c: char| c.is_whitespace())
            .map_or(text.len(), |e| at + e)
    };
    for (line, &(a, b)) in lines.iter_mut().zip(rows) {
        if b <= at || a >= end {
            continue;
        }
        // Rebuild this line's body: before, match, after.
        let gutter = line.spans.first().cloned();
        let mut spans: Vec<Span> = gutter.into_iter().collect();
        let mut shown = |s: usize, e: usize, style: Style| {
            let mut out = String::new();
            for c in text[s..e].chars() {
                push_shown(&mut out, c);
            }
            if !out.is_empty() {
                spans.push(Span::styled(out, style));
            }
        };
        let (ms, me) = (at.max(a), end.min(b));
        let base = line.spans.get(1).map_or(t.text, |s| s.style);
        shown(a, ms, base);
        shown(ms, me, base.patch(t.selected));
        shown(me, b, base);
        *line = Line::from(spans);
    }
}

/// Wrap `text` to `width` columns (gutter included) at spaces where it can, styling bytes before
/// `overlap` as overlap and bytes from `tail_start` on as tail. Tabs become spaces and control
/// characters a visible mark, so no input can move the cursor or corrupt the screen.
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
    visual_lines(text, body_width)
        .into_iter()
        .map(|(a, b)| {
            let has_tail = in_tail(a) || (a < b && in_tail(b - 1));
            let (mark, gs) = if has_tail {
                (GUTTER_TAIL, t.tail_gutter)
            } else {
                (GUTTER_VISIBLE, t.gutter)
            };
            let mut spans = vec![Span::styled(mark, gs)];
            let mut run = String::new();
            let mut run_style: Option<Style> = None;
            for (i, c) in text[a..b].char_indices() {
                let st = style_at(a + i);
                if run_style != Some(st) {
                    if let Some(prev) = run_style {
                        spans.push(Span::styled(std::mem::take(&mut run), prev));
                    }
                    run_style = Some(st);
                }
                push_shown(&mut run, c);
            }
            if let Some(prev) = run_style {
                spans.push(Span::styled(run, prev));
            }
            Line::from(spans)
        })
        .collect()
}

fn push_shown(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("    "),
        c if c.is_control() => out.push('·'),
        c => out.push(c),
    }
}

fn shown_width(c: char) -> usize {
    match c {
        '\t' => 4,
        c if c.is_control() => 1,
        c => c.width().unwrap_or(0),
    }
}

/// Byte ranges of the visual lines of `text`: split at newlines (which belong to no line), then
/// greedily wrapped to `width` columns, breaking after the last space when there is one.
pub fn visual_lines(text: &str, width: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for logical in text.split('\n') {
        let mut start = 0;
        let mut col = 0;
        // Byte just past the last space on this visual line, and the column there.
        let mut brk: Option<(usize, usize)> = None;
        for (i, c) in logical.char_indices() {
            let w = shown_width(c);
            if col + w > width && col > 0 {
                match brk.filter(|&(b, _)| b > start) {
                    Some((b, bcol)) => {
                        out.push((offset + start, offset + b));
                        start = b;
                        col -= bcol;
                    }
                    None => {
                        out.push((offset + start, offset + i));
                        start = i;
                        col = 0;
                    }
                }
                brk = None;
            }
            col += w;
            if c == ' ' {
                brk = Some((i + 1, col));
            }
        }
        out.push((offset + start, offset + logical.len()));
        offset += logical.len() + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::visual_lines;

    #[test]
    fn wraps_at_spaces_and_keeps_every_byte() {
        let text = "alpha beta gamma delta\nepsilon";
        let lines = visual_lines(text, 11);
        let parts: Vec<&str> = lines.iter().map(|&(a, b)| &text[a..b]).collect();
        assert_eq!(parts, vec!["alpha beta ", "gamma delta", "epsilon"]);
        let long = "x".repeat(25);
        assert_eq!(visual_lines(&long, 10).len(), 3);
        assert_eq!(visual_lines("", 10), vec![(0, 0)]);
        assert_eq!(visual_lines("a\n\nb", 10).len(), 3);
    }
}
