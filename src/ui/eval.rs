//! The eval pane: recall@k of BM25 and vectors, by where the answer sits, beside a pinned
//! configuration A; the cases with every miss explained; Enter opens the chunk holding the answer.
//! With relevance judgments, a block of document-level measures (nDCG@10, MAP@10, recall@k,
//! MRR@10 per retriever, A under B when pinned) and nDCG@10 as a bar chart.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, Block, Borders, ListItem, Paragraph};
use ratatui::Frame;

use super::files::shorten_middle;
use crate::app::keymap::Layer;
use crate::app::Model;
use chunkscope_core::eval::judged::{judged_doc_line, JudgedQuery, JudgedReport, Ranker};
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
    let Some(r) = &m.eval.report else {
        no_report(frame, area, m);
        return;
    };
    let a = m.eval.pinned.as_deref();
    let judged = r.judged.as_ref();
    // Span tables when there are span cases (or no judgments to show instead).
    let spans = !r.results.is_empty() || judged.is_none();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints(block_heights(r, a, spans))
        .split(area);
    let stale =
        if m.eval.running || m.eval.made_for != Some((m.chunked_generation, m.window().tokens)) {
            " · stale, re-evaluating…"
        } else {
            ""
        };
    let mut next = 0;
    if let Some(j) = judged {
        let title = format!(
            " eval · {} · {} judged queries{stale} · {} ",
            shorten_middle(&r.cases_file, FILE_COLUMNS),
            j.queries,
            j.rule
        );
        let a_judged = a.and_then(|a| a.judged.as_ref());
        judged_block(
            frame,
            rows[0],
            m,
            (j, a_judged),
            (config_lines(m, r, a), title),
        );
        next = 1;
    }
    if spans {
        let head = if judged.is_some() {
            Vec::new()
        } else {
            config_lines(m, r, a)
        };
        span_block(frame, rows[next], m, head, stale);
        next += 1;
    }
    let list_area = (rows[next], rows[next + 1]);
    let judged_rows = m.judged_rows();
    if !judged_rows.is_empty() || !spans {
        judged_list(frame, list_area, m, (r, &judged_rows));
    } else {
        case_list(frame, list_area, m, r);
    }
}

/// The pane before its first report: waiting for vectors, or nothing asked yet.
fn no_report(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
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
}

/// The heights of the pane's rows: the judged block (when judged), the span block (when
/// `spans`), the list and its hint line.
fn block_heights(r: &Report, a: Option<&Report>, spans: bool) -> Vec<Constraint> {
    let mut heights = Vec::new();
    if let Some(j) = &r.judged {
        let config = 1 + usize::from(a.is_some()) + usize::from(r.reranker.is_some());
        let n = j.rankers().len();
        let a_judged = a.is_some_and(|a| a.judged.is_some());
        let rows = if a_judged { 2 * n } else { n };
        heights.push(Constraint::Length((2 + config + 1 + rows) as u16));
    }
    if spans {
        // With a reranker: its row of recall, and its line under B's.
        heights.push(Constraint::Length(14 + 2 * u16::from(r.rerank.is_some())));
    }
    heights.extend([Constraint::Min(4), Constraint::Length(1)]);
    heights
}

fn misses_label(m: &Model) -> &'static str {
    if m.eval.misses_only {
        " · misses only"
    } else {
        ""
    }
}

/// The judged queries with ✓/✗ per retriever, and the pane's hint under them.
fn judged_list(
    frame: &mut Frame,
    area: (Rect, Rect),
    m: &Model,
    (r, rows): (&Report, &[&JudgedQuery]),
) {
    let rankers = r
        .judged
        .as_ref()
        .map_or(Ranker::ALL.to_vec(), |j| j.rankers());
    let items: Vec<ListItem> = rows
        .iter()
        .map(|q| judged_item(q, &rankers, r.k, m))
        .collect();
    let names: Vec<&str> = rankers.iter().map(|r| r.label()).collect();
    let title = format!(
        " judged queries{} · ✓/✗ {}: every relevant document in the first {} · rank at chunk #N, TAIL: that chunk is cut by the window ",
        misses_label(m),
        names.join(" "),
        r.k
    );
    let hint = format!(" {}", super::pane_keys(m, Layer::Eval));
    super::list_with_hint(frame, area, items, (title, m.eval.selected), hint, &m.theme);
}

/// The span cases with ✓/✗ per retriever and every miss explained, and the pane's hint under
/// them.
fn case_list(frame: &mut Frame, area: (Rect, Rect), m: &Model, r: &Report) {
    let items: Vec<ListItem> = m.eval_rows().iter().map(|c| case_item(c, r.k, m)).collect();
    let title = format!(
        " cases{}{} · ✓/✗ BM25 vector hybrid at k {} ",
        misses_label(m),
        if m.eval.flipped_only {
            " · flipped A -> B only"
        } else {
            ""
        },
        r.k
    );
    let hint = format!(" {}", super::pane_keys(m, Layer::Eval));
    super::list_with_hint(frame, area, items, (title, m.eval.selected), hint, &m.theme);
}

/// The B (now) line and, when pinned, the A line: model, embedder, knobs, window, vectors.
fn config_lines<'a>(m: &Model, r: &Report, a: Option<&Report>) -> Vec<Line<'a>> {
    let t = &m.theme;
    let mut lines = vec![Line::from(vec![Span::styled(
        format!(
            "B (now): {} ({}) · {} · window {} · {} vectors",
            r.model, r.embedder, r.settings, r.window, r.vectors
        ),
        t.title,
    )])];
    if let Some(x) = &r.reranker {
        lines.push(Line::styled(
            format!(
                "rerank {} (pair window {}): {:.0} ms/query, p95 {:.0} · {} of {} pairs cut",
                x.model
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(""),
                x.window,
                x.mean_millis,
                x.p95_millis,
                x.truncated,
                x.scored
            ),
            t.dim,
        ));
    }
    if let Some(a) = a {
        lines.push(Line::styled(
            format!(
                "A (pinned): {} ({}) · {} · window {} · {} vectors",
                a.model, a.embedder, a.settings, a.window, a.vectors
            ),
            t.dim,
        ));
    }
    lines
}

/// The judged measures per retriever (A's under B's when pinned) beside the nDCG@10 bars, under
/// the B and A lines.
fn judged_block(
    frame: &mut Frame,
    area: Rect,
    m: &Model,
    (j, a): (&JudgedReport, Option<&JudgedReport>),
    (config, title): (Vec<Line>, String),
) {
    let t = &m.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, t.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(config.len() as u16), Constraint::Min(1)])
        .split(inner);
    frame.render_widget(Paragraph::new(config), parts[0]);
    // The table's width with every recall@k; the bars take what is left (22 to 40 columns),
    // and on a narrow pane the table keeps the recall columns of the largest k that fit.
    let full = TABLE_FIXED + RECALL_WIDTH * j.ks.len();
    let chart = (inner.width as usize)
        .saturating_sub(full + 1)
        .clamp(22, 40) as u16;
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Min(1),
            Constraint::Length(1),
            Constraint::Length(chart),
        ])
        .split(parts[1]);
    let fit = (cols[0].width as usize).saturating_sub(TABLE_FIXED) / RECALL_WIDTH;
    let ks = &j.ks[j.ks.len().saturating_sub(fit)..];
    let mut head = format!(" {:<7}{:>7} {:>6}", "", "nDCG@10", "MAP@10");
    for k in ks {
        head.push_str(&format!(" {:>5}", format!("R@{k}")));
    }
    head.push_str(&format!(" {:>6}", "MRR@10"));
    let mut lines = vec![Line::styled(head, t.dim)];
    for r in j.rankers() {
        lines.push(Line::styled(measures_row(r.label(), j, r, ks), t.text));
        if let Some(a) = a.filter(|a| a.rankers().contains(&r)) {
            lines.push(Line::styled(measures_row("A", a, r, ks), t.dim));
        }
    }
    frame.render_widget(Paragraph::new(lines), cols[0]);
    frame.render_widget(ndcg_chart(j, a, (t.bar, t.dim)), cols[2]);
}

/// Columns of a measures row without its recall columns: label, nDCG@10, MAP@10, MRR@10.
/// Columns the cases file takes at most in a title: the counts after it stay on screen.
const FILE_COLUMNS: usize = 32;

const TABLE_FIXED: usize = 1 + 7 + 7 + 1 + 6 + 7;
/// Columns of one recall@k.
const RECALL_WIDTH: usize = 6;

/// One retriever's mean measures: nDCG@10, MAP@10, recall at each of `ks`, MRR@10.
fn measures_row(label: &str, j: &JudgedReport, r: Ranker, ks: &[usize]) -> String {
    let head = j.mean_at(r, 10).unwrap_or_default();
    let mut s = format!(" {label:<7}{:>7} {:>6}", pct(head.ndcg), pct(head.map));
    for &k in ks {
        let recall = j.mean_at(r, k).map_or(f64::NAN, |m| m.recall);
        s.push_str(&format!(" {:>5}", pct(recall)));
    }
    s.push_str(&format!(" {:>6}", pct(head.mrr)));
    s
}

/// nDCG@10 per retriever as horizontal bars (0 to 1), A's bar above B's when pinned.
pub fn ndcg_chart<'a>(
    j: &JudgedReport,
    a: Option<&JudgedReport>,
    (b_style, a_style): (Style, Style),
) -> BarChart<'a> {
    let bar = |label: String, v: f64, style: Style| {
        Bar::with_label(label, (v.clamp(0.0, 1.0) * 100.0).round() as u64)
            .text_value(format!("{v:.2}"))
            .style(style)
    };
    let pinned = a.map(|a| a.ndcg10());
    let mut bars = Vec::new();
    for (r, v) in j.ndcg10() {
        let before = pinned
            .as_ref()
            .and_then(|p| p.iter().find(|(x, _)| *x == r).map(|p| p.1));
        match (pinned.is_some(), before) {
            (true, Some(p)) => {
                bars.push(bar(format!("A {}", r.label()), p, a_style));
                bars.push(bar(format!("B {}", r.label()), v, b_style));
            }
            (true, None) => bars.push(bar(format!("B {}", r.label()), v, b_style)),
            (false, _) => bars.push(bar(r.label().to_string(), v, b_style)),
        }
    }
    BarChart::horizontal(bars)
        .max(100)
        .bar_width(1)
        .bar_gap(0)
        .block(Block::default().title(Span::styled("nDCG@10", a_style)))
}

/// A judged query: ✓/✗ per retriever (every relevant document within k), its id and text, and
/// each relevant document's rank per retriever.
fn judged_item<'a>(q: &JudgedQuery, rankers: &[Ranker], k: usize, m: &Model) -> ListItem<'a> {
    let t = &m.theme;
    let mark = |ok: bool| {
        if ok {
            Span::raw("✓")
        } else {
            Span::styled("✗", t.warn)
        }
    };
    let mut first = Vec::new();
    for &r in rankers {
        first.push(mark(q.found_at(r, k)));
        first.push(Span::raw(" "));
    }
    first.push(Span::raw(format!("{:>4} ", q.id)));
    first.push(Span::raw(q.query.clone()));
    let first = Line::from(first);
    let docs: Vec<String> = q
        .judged
        .iter()
        .filter(|d| d.grade > 0)
        .map(|d| judged_doc_line(d, rankers))
        .collect();
    let second = Line::styled(format!("        {}", docs.join("; ")), t.dim);
    ListItem::new(vec![first, second])
}

/// recall@k by retriever and by answer position (A beside B when pinned), the flips or thirds.
fn span_block(frame: &mut Frame, area: Rect, m: &Model, mut lines: Vec<Line>, stale: &str) {
    let t = &m.theme;
    let Some(r) = &m.eval.report else {
        return;
    };
    let a = m.eval.pinned.as_deref();
    let k = r.k;
    let mut head = "               ".to_string();
    for kk in &r.ks {
        head.push_str(&format!(" @{kk:<4}"));
    }
    head.push_str("  MRR");
    lines.push(Line::styled(head, t.dim));
    let mut rows = vec![
        ("BM25  ", &r.bm25),
        ("vector", &r.vector),
        ("hybrid", &r.hybrid),
    ];
    if let Some(rr) = &r.rerank {
        rows.push(("rerank", rr));
    }
    for (name, rec) in rows {
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
                shorten_middle(&r.cases_file, FILE_COLUMNS),
                r.results.len()
            ),
            t.title,
        ))),
        area,
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
