//! The top bar (corpus, model, window, settings) and the bottom bar (key hints, progress, errors).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::keymap::Action;
use crate::app::Model;

pub fn top(frame: &mut Frame, area: Rect, m: &Model) {
    let w = m.window();
    let others: Vec<String> = [
        ("st", m.windows.sentence_transformers),
        ("max", m.windows.max_positions),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
    .collect();
    let text = format!(
        " chunkscope  {}  window {} ({}{}{})  model {}  {}",
        m.settings.label(),
        w.tokens,
        w.source,
        if others.is_empty() { "" } else { "; " },
        others.join(", "),
        m.model_name,
        m.corpus_path.display(),
    );
    frame.render_widget(Paragraph::new(text).style(m.theme.status), area);
}

pub fn bottom(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let mut spans: Vec<Span> = Vec::new();
    for b in m.keymap.active(m.layer()).filter(|b| b.hint) {
        let key = match b.action {
            Action::SizeUp => "+/-".to_string(),
            Action::OverlapUp => "[/]".to_string(),
            Action::SizeDown | Action::OverlapDown => continue,
            _ => b.keys.first().cloned().unwrap_or_default(),
        };
        let word = match b.action {
            Action::SizeUp => "size",
            Action::OverlapUp => "overlap",
            _ => b.name,
        };
        spans.push(Span::styled(format!(" {key}"), t.title));
        spans.push(Span::raw(format!(" {word} ")));
    }
    let right = if let Some(e) = &m.error {
        Span::styled(format!(" {e} "), t.error)
    } else if m.loading {
        Span::styled(" reading and tokenizing the corpus… ", t.warn)
    } else if let Some((done, total)) = m.sentences.filter(|_| m.stale()) {
        Span::styled(
            format!(" maxmin: embedding sentences {done}/{total} (once; thresholds reuse them)… "),
            t.warn,
        )
    } else if m.stale() {
        Span::styled(" chunking… ", t.warn)
    } else if let Some(p) = m.probe {
        let verdict = if p.cosine >= 0.99995 {
            "the end of this chunk never reaches the vector"
        } else {
            "the appended text moves the vector"
        };
        Span::styled(
            format!(
                " tail probe chunk {}: cosine {:.4} at window {}: {verdict} ",
                p.chunk + 1,
                p.cosine,
                p.window
            ),
            if p.cosine >= 0.99995 { t.tail } else { t.text },
        )
    } else if let Some(e) = m.embed.filter(|e| !e.finished) {
        let eta = if e.per_second > 0.0 && e.total > e.done {
            format!(" · ETA {:.0} s", (e.total - e.done) as f64 / e.per_second)
        } else {
            String::new()
        };
        Span::styled(
            format!(
                " chunked in {} ms · embedding {}/{} · {:.0} chunks/s{eta} ",
                m.last_chunk_millis.unwrap_or(0),
                e.done,
                e.total,
                e.per_second
            ),
            t.warn,
        )
    } else if let Some(e) = m.embed {
        let what = if e.embedded == 0 && e.kept == e.total {
            format!("all {} vectors kept, nothing embedded", e.total)
        } else if e.embedded == 0 {
            format!(
                "all {} vectors from the index or cache, nothing embedded",
                e.total
            )
        } else if e.kept > 0 {
            format!(
                "{} vectors kept, embedded {} in {:.1} s",
                e.kept, e.embedded, e.seconds
            )
        } else {
            format!(
                "embedded {} of {} in {:.1} s",
                e.embedded, e.total, e.seconds
            )
        };
        Span::styled(
            format!(
                " chunked in {} ms · {what} ",
                m.last_chunk_millis.unwrap_or(0)
            ),
            t.dim,
        )
    } else if let Some(ms) = m.last_chunk_millis {
        Span::styled(format!(" chunked in {ms} ms "), t.dim)
    } else {
        Span::raw("")
    };
    let right = match (&m.last_reload, m.error.is_none() && !m.stale()) {
        (Some(r), true) => Span::styled(format!(" {r} ·{}", right.content), right.style),
        _ => right,
    };
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let free = (area.width as usize).saturating_sub(used + right.width());
    if free > 0 {
        spans.push(Span::raw(" ".repeat(free)));
    } else {
        // Errors win over hints when space is short.
        spans.clear();
    }
    spans.push(right);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
