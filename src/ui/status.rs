//! The top bar (settings, window, model, theme, corpus), the status line (progress, results,
//! refusals) and the key-hint line of the focused pane.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::keymap::Action;
use crate::app::{EmbedStatus, Model, Probe};

pub fn top(frame: &mut Frame, area: Rect, m: &Model) {
    let w = m.window();
    let others: Vec<String> = [
        ("st", m.windows.sentence_transformers),
        ("max", m.windows.max_positions),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
    .collect();
    let chunks = match &m.store {
        // A long path would push the window and the model off the line.
        Some(uri) => format!("stored chunks of {}", super::files::shorten_middle(uri, 48)),
        None => m.settings.label(),
    };
    let text = format!(
        " chunkscope  {}  window {} ({}{}{})  model {} ({})  theme {}  {}",
        chunks,
        w.tokens,
        w.source,
        if others.is_empty() { "" } else { "; " },
        others.join(", "),
        m.model_name,
        m.backend,
        m.theme.name,
        m.corpus_path.display(),
    );
    frame.render_widget(Paragraph::new(text).style(m.theme.status), area);
}

/// The key hints of the focused pane, generated from the keymap; always on screen (cut with "…"
/// when the terminal is narrow, never hidden by a message).
pub fn hints(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0;
    let width = area.width as usize;
    for b in m.keymap.active(m.layer()).filter(|b| b.hint) {
        // In a text box printable keys are text: show only the keys that still work there.
        let Some(first) = b.hint_key(m.text_box_focused()) else {
            continue;
        };
        let key = match b.action {
            Action::SizeUp => "+/-".to_string(),
            Action::OverlapUp => "[/]".to_string(),
            Action::SizeDown | Action::OverlapDown => continue,
            _ => first.to_string(),
        };
        let word = match b.action {
            Action::SizeUp => "size",
            Action::OverlapUp => "overlap",
            _ => b.name,
        };
        let (k, w) = (format!(" {key}"), format!(" {word} "));
        if used + k.len() + w.len() > width {
            spans.push(Span::styled(" …", t.dim));
            break;
        }
        used += k.len() + w.len();
        spans.push(Span::styled(k, t.title));
        spans.push(Span::raw(w));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The status line: the latest refusal or failure, else what runs (progress) or what the last
/// job did.
pub fn bottom(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let right = notice(m)
        .or_else(|| chunking(m))
        .or_else(|| m.chunks.probe.map(|p| probe(p, m)))
        .or_else(|| m.embed.map(|e| embedding(e, m)))
        .or_else(|| {
            let ms = m.last_chunk_millis?;
            Some(Span::styled(format!(" chunked in {ms} ms "), t.dim))
        })
        .unwrap_or_else(|| Span::raw(""));
    let right = match (&m.last_reload, m.error.is_none() && !m.stale()) {
        (Some(r), true) => Span::styled(format!(" {r} ·{}", right.content), right.style),
        _ => right,
    };
    frame.render_widget(Paragraph::new(Line::from(vec![right])), area);
}

/// What comes before any progress: the number being typed, a refusal, what the last key did.
fn notice(m: &Model) -> Option<Span<'static>> {
    let t = &m.theme;
    Some(if let Some(p) = &m.prompt {
        Span::styled(
            format!(
                " {}: {}▏  (digits, enter applies, esc cancels) ",
                p.kind.label(),
                p.input
            ),
            t.title,
        )
    } else if let Some(e) = &m.error {
        Span::styled(format!(" {e} "), t.error)
    } else {
        Span::styled(format!(" {} ", m.info.as_ref()?), t.title)
    })
}

/// The corpus being read, Max-Min's sentences embedded, or the chunking under way.
fn chunking(m: &Model) -> Option<Span<'static>> {
    let t = &m.theme;
    Some(if m.loading {
        let read = match m.reading {
            Some((files, 0)) => format!(": {files} files"),
            Some((files, converted)) => {
                format!(": {files} files, {converted} documents converted")
            }
            None => String::new(),
        };
        Span::styled(
            format!(" reading and tokenizing the corpus{read}… "),
            t.warn,
        )
    } else if !m.stale() {
        return None;
    } else if let Some((done, total)) = m.sentences {
        Span::styled(
            format!(" maxmin: embedding sentences {done}/{total} (once; thresholds reuse them)… "),
            t.warn,
        )
    } else if let Some(p) = &m.partial {
        // The files on screen were chunked first; the rest of the corpus follows.
        Span::styled(
            format!(
                " chunking… {} of {} files (the files on screen first) ",
                super::thousands(p.done),
                super::thousands(p.total)
            ),
            t.warn,
        )
    } else {
        Span::styled(" chunking… ", t.warn)
    })
}

/// The last tail probe's verdict.
fn probe(p: Probe, m: &Model) -> Span<'static> {
    let t = &m.theme;
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
}

/// The embedding's progress while it runs, or what it did.
fn embedding(e: EmbedStatus, m: &Model) -> Span<'static> {
    let t = &m.theme;
    let chunked = m.last_chunk_millis.unwrap_or(0);
    if !e.finished && e.total == 0 {
        // The worker moves the search index to the new chunks before it counts what to embed.
        return Span::styled(
            format!(" chunked in {chunked} ms · indexing the new chunks, then embedding "),
            t.warn,
        );
    }
    if !e.finished {
        let eta = if e.per_second > 0.0 && e.total > e.done {
            format!(" · ETA {:.0} s", (e.total - e.done) as f64 / e.per_second)
        } else {
            String::new()
        };
        let mut server = e.requests.map_or(String::new(), |(flying, retries)| {
            format!(" · {flying} requests in flight · {retries} retries")
        });
        if e.focus_fresh {
            server.push_str(" · this file and the query's hits fresh");
        }
        return Span::styled(
            format!(
                " chunked in {chunked} ms · embedding {}/{} · {:.0} chunks/s{server}{eta} ",
                e.done, e.total, e.per_second
            ),
            t.warn,
        );
    }
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
    Span::styled(format!(" chunked in {chunked} ms · {what} "), t.dim)
}
