//! The stats pane: chunk counts, embed-token percentiles, tokens never embedded, and a histogram
//! of chunk lengths with the window drawn on it.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::{partial_label, stale_mark, thousands};
use crate::app::Model;
use crate::theme::Theme;
use chunkscope_core::stats::{histogram, Stats};

const BARS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let window = m.window().tokens;
    // While the whole chunking runs, the stats are the finished one's with the files chunked
    // ahead of it in place, and say so.
    let mark = match partial_label(m) {
        Some(p) => format!(" · {p}"),
        None => stale_mark(m).to_string(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(format!(" stats{mark} "), t.title));
    let files = m.shown_files();
    if files.is_empty() {
        frame.render_widget(
            Paragraph::new("waiting for the first chunking…").block(block),
            area,
        );
        return;
    }
    let s = Stats::of(
        files.iter().flat_map(|f| f.chunks.iter()),
        window,
        m.specials,
    );
    let mut lines = count_lines(&s, t);
    lines.extend(sentences_line(m, s.chunks));
    let lens: Vec<usize> = files
        .iter()
        .flat_map(|f| f.chunks.iter().map(|c| c.embed_tokens(m.specials)))
        .collect();
    let bins = area.width.saturating_sub(2).max(1) as usize;
    lines.extend(histogram_lines(&lens, window, bins, t));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Chunks and how many pass the window, the embed-token percentiles, the tokens never embedded.
fn count_lines(s: &Stats, t: &Theme) -> Vec<Line<'static>> {
    vec![
        Line::from(vec![
            Span::raw(format!("chunks {}   over window ", thousands(s.chunks))),
            Span::styled(
                format!("{} ({:.0} %)", thousands(s.over_window), s.over_percent()),
                if s.over_window > 0 { t.warn } else { t.text },
            ),
        ]),
        Line::raw(format!(
            "embed tokens  max {}",
            thousands(s.max_embed_tokens)
        )),
        Line::raw(format!(
            "  median {}   p95 {}",
            thousands(s.median_embed_tokens),
            thousands(s.p95_embed_tokens)
        )),
        Line::from(vec![
            Span::raw("never embedded "),
            Span::styled(
                format!("{} tok", thousands(s.never_embedded_tokens)),
                t.tail,
            ),
        ]),
    ]
}

/// Max-Min: how many sentences the `chunks` group (1.0 per chunk: every sentence stands alone,
/// the floor is too high for this model's similarities). None for other strategies, while the
/// whole chunking runs, or before every file's sentences are counted.
fn sentences_line(m: &Model, chunks: usize) -> Option<Line<'static>> {
    let whole = m.chunking.as_ref().filter(|_| m.partial.is_none());
    let c = whole.filter(|c| c.settings.strategy == chunkscope_core::chunk::Strategy::MaxMin)?;
    let engine = m.engine.as_ref()?;
    let n: usize = c
        .files
        .iter()
        .map(|f| engine.cached_sentence_count(f.doc, c.settings.unit, c.settings.size))
        .sum::<Option<usize>>()?;
    Some(Line::raw(format!(
        "sentences {}  {:.1} per chunk",
        thousands(n),
        n as f64 / chunks.max(1) as f64
    )))
}

/// The chunk lengths (`lens`, embed tokens) in `bins` columns: two rows of bars, eighths within
/// each, the window marked on them and labelled under them.
fn histogram_lines(lens: &[usize], window: usize, bins: usize, t: &Theme) -> Vec<Line<'static>> {
    let (counts, width) = histogram(lens, window, bins);
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    let mark = (window / width).min(bins - 1);
    let mut lines = Vec::new();
    for row in (0..2).rev() {
        let spans: Vec<Span> = counts
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let level = if n == 0 { 0 } else { (n * 16).div_ceil(top) };
                let cell = level.saturating_sub(row * 8).min(8);
                let style = if i >= mark { t.tail } else { t.bar };
                let ch = if cell == 0 && i == mark {
                    '│'
                } else {
                    BARS[cell]
                };
                Span::styled(
                    ch.to_string(),
                    if i == mark && cell == 0 {
                        t.window_mark
                    } else {
                        style
                    },
                )
            })
            .collect();
        lines.push(Line::from(spans));
    }
    let label = format!("|{window}");
    let pad = mark.min(bins.saturating_sub(label.len()));
    lines.push(Line::from(vec![
        Span::raw(" ".repeat(pad)),
        Span::styled(label, t.window_mark),
        Span::styled(format!("  0..{} tok", thousands(width * bins)), t.dim),
    ]));
    lines
}
