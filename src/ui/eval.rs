//! The eval pane: recall@k of BM25 and vectors, by where the answer sits, beside a pinned
//! configuration A; the cases with every miss explained; Enter opens the chunk holding the answer.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, ListItem, Paragraph};
use ratatui::Frame;

use crate::app::keymap::Layer;
use crate::app::Model;
use chunkscope_core::eval::{CaseResult, Report};

fn pct(v: f64) -> String {
    if v.is_nan() {
        "   -".into()
    } else {
        format!("{v:.2}")
    }
}

fn hit(rank: Option<usize>, k: usize) -> bool {
    rank.is_some_and(|r| r <= k)
}

pub fn draw(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let Some(r) = &m.eval.report else {
        let msg = if m.eval.running || m.embeddings_stale() {
            "evaluating: waiting for the vectors of this chunking…"
        } else {
            "no report yet"
        };
        frame.render_widget(
            Paragraph::new(Line::styled(msg, t.dim)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(" eval ", t.title)),
            ),
            area,
        );
        return;
    };
    let a = m.eval.pinned.as_deref();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(14),
            Constraint::Min(4),
            Constraint::Length(1),
        ])
        .split(area);
    let k = r.k;
    let stale =
        if m.eval.running || m.eval.made_for != Some((m.chunked_generation, m.window().tokens)) {
            " · stale, re-evaluating…"
        } else {
            ""
        };
    let mut lines = vec![Line::from(vec![Span::styled(
        format!(
            "B (now): {} ({}) · {} · window {} · {} vectors",
            r.model, r.embedder, r.settings, r.window, r.vectors
        ),
        t.title,
    )])];
    if let Some(a) = a {
        lines.push(Line::styled(
            format!(
                "A (pinned): {} ({}) · {} · window {} · {} vectors",
                a.model, a.embedder, a.settings, a.window, a.vectors
            ),
            t.dim,
        ));
    }
    let mut head = "               ".to_string();
    for kk in &r.ks {
        head.push_str(&format!(" @{kk:<4}"));
    }
    head.push_str("  MRR");
    lines.push(Line::styled(head, t.dim));
    for (name, rec) in [
        ("BM25  ", &r.bm25),
        ("vector", &r.vector),
        ("hybrid", &r.hybrid),
    ] {
        let mut s = format!("  {name}       ");
        for (_, v) in &rec.at {
            s.push_str(&format!(" {:<5}", pct(*v)));
        }
        s.push_str(&format!(" {}", pct(rec.mrr)));
        lines.push(Line::raw(s));
    }
    lines.push(Line::styled(
        format!(
            "by answer position      n   BM25@{k} vector@{k} hybrid@{k}{}",
            if a.is_some() {
                "  |  A: n  BM25  vector".to_string()
            } else {
                String::new()
            }
        ),
        t.dim,
    ));
    for (i, b) in r.by_bucket.iter().enumerate() {
        let mut s = format!(
            "  {:<20} {:>4}   {}   {}     {}",
            b.group.label(),
            b.bm25.n,
            pct(b.bm25.at(k)),
            pct(b.vector.at(k)),
            pct(b.hybrid.at(k))
        );
        if let Some(ab) = a.and_then(|a| a.by_bucket.get(i)) {
            s.push_str(&format!(
                "  | {:>4}  {}  {}",
                ab.bm25.n,
                pct(ab.bm25.at(k)),
                pct(ab.vector.at(k))
            ));
        }
        let style = if b.group == chunkscope_core::eval::Bucket::InTheTail {
            t.tail
        } else {
            t.text
        };
        lines.push(Line::styled(s, style));
    }
    if let Some(a) = a {
        lines.push(Line::raw(flips(a, r)));
    } else {
        for th in &r.by_third {
            lines.push(Line::raw(format!(
                "  {:<20} {:>4}   {}   {}     {}",
                th.group.label(),
                th.bm25.n,
                pct(th.bm25.at(k)),
                pct(th.vector.at(k)),
                pct(th.hybrid.at(k))
            )));
        }
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(Span::styled(
            format!(
                " eval · {} · {} cases{stale} ",
                r.cases_file,
                r.results.len()
            ),
            t.title,
        ))),
        rows[0],
    );
    let list_rows = m.eval_rows();
    let items: Vec<ListItem> = list_rows.iter().map(|c| case_item(c, k, m)).collect();
    let title = format!(
        " cases{}{} · ✓/✗ BM25 vector hybrid at k {k} ",
        if m.eval.misses_only {
            " · misses only"
        } else {
            ""
        },
        if m.eval.flipped_only {
            " · flipped A -> B only"
        } else {
            ""
        }
    );
    let hint = format!(" {}", super::pane_keys(m, Layer::Eval));
    super::list_with_hint(
        frame,
        (rows[1], rows[2]),
        items,
        (title, m.eval.selected),
        hint,
        t,
    );
}

fn case_item<'a>(c: &CaseResult, k: usize, m: &Model) -> ListItem<'a> {
    let t = &m.theme;
    let mark = |ok: bool| {
        if ok {
            Span::raw("✓")
        } else {
            Span::styled("✗", t.warn)
        }
    };
    let place = match (c.holding, c.answer_token) {
        (Some((_, ci)), Some(tok)) => format!("{} #{} @tok {}", c.file, ci + 1, tok),
        _ => c.file.clone(),
    };
    let first = vec![
        mark(hit(c.bm25_rank, k)),
        Span::raw(" "),
        mark(hit(c.vector_rank, k)),
        Span::raw(" "),
        mark(hit(c.hybrid_rank, k)),
        Span::raw(format!(" {:>4} ", c.line)),
        Span::styled(
            format!("[{}] ", c.bucket_label()),
            if c.bucket == chunkscope_core::eval::Bucket::InTheTail {
                t.tail
            } else {
                t.dim
            },
        ),
        Span::raw(c.question.clone()),
    ];
    let mut lines = Vec::new();
    let why = |x: &Option<chunkscope_core::eval::MissReason>| x.as_ref().map(|r| r.describe(k));
    let mut second = format!("        {:?} in {place}", c.answer);
    if let Some(w) = why(&c.bm25_miss) {
        second.push_str(&format!(" · BM25: {w}"));
    }
    if let Some(w) = why(&c.vector_miss) {
        second.push_str(&format!(" · vector: {w}"));
    }
    if let Some(w) = why(&c.hybrid_miss) {
        second.push_str(&format!(" · hybrid: {w}"));
    }
    lines.push(Line::from(first));
    lines.push(Line::styled(second, t.dim));
    ListItem::new(lines)
}

/// Cases that flipped between A and B, matched by question and line.
fn flips(a: &Report, b: &Report) -> String {
    let f = chunkscope_core::eval::flips(a, b);
    format!(
        "flipped A -> B at k {}: BM25 +{} -{} · vector +{} -{} · vectors {} -> {}",
        f.k, f.bm25.0, f.bm25.1, f.vector.0, f.vector.1, a.vectors, b.vectors
    )
}
