//! The evaluation report as Markdown: a header line, the recall table, recall by where the
//! answer sits, the misses explained, and the case lines that could not be used.

use super::judged;
use super::{CaseResult, MissReason, Recall, Report, RerankRun};

/// The report as a Markdown table plus the misses.
pub fn markdown(r: &Report, show_misses: usize) -> String {
    let mut s = header(r);
    if let Some(x) = &r.reranker {
        s.push_str(&rerank_line(x));
    }
    if let Some(j) = &r.judged {
        s.push_str(&judged::markdown(j, r.rrf_k, r.k, show_misses));
        if r.results.is_empty() {
            s.push_str(&unusable(r));
            return s;
        }
        s.push_str("\nanswer spans of the query log:\n\n");
    }
    s.push_str(&recall_table(r));
    s.push_str(&position_table(r));
    s.push_str(&misses(r, show_misses));
    s.push_str(&unusable(r));
    s
}

/// A figure with two decimals, `-` for none (no cases).
fn figure(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else {
        format!("{v:.2}")
    }
}

/// The cases file and how many cases it held, the settings, window, vectors and model.
fn header(r: &Report) -> String {
    let usable = match &r.judged {
        Some(j) if r.results.is_empty() => format!("{} judged queries", j.queries),
        Some(j) => format!(
            "{} judged queries, {} answer spans",
            j.queries,
            r.results.len()
        ),
        None => format!("{} usable", r.results.len()),
    };
    format!(
        "cases {} ({usable}, {} unusable lines)  {}  window {}  {} vectors  model {} ({})\n\n",
        r.cases_file,
        r.bad_lines.len(),
        r.settings,
        r.window,
        r.vectors,
        r.model,
        r.embedder
    )
}

/// Recall at each k and MRR, one row per retriever.
fn recall_table(r: &Report) -> String {
    let mut s = String::from("| retriever |");
    for k in &r.ks {
        s.push_str(&format!(" recall@{k} |"));
    }
    s.push_str(" MRR |\n|---|");
    for _ in &r.ks {
        s.push_str("---|");
    }
    s.push_str("---|\n");
    let hybrid = format!("hybrid (RRF k={})", r.rrf_k);
    let mut rows = vec![
        ("BM25", &r.bm25),
        ("vector", &r.vector),
        (hybrid.as_str(), &r.hybrid),
    ];
    if let Some(rr) = &r.rerank {
        rows.push(("rerank", rr));
    }
    for (name, rec) in rows {
        s.push_str(&format!("| {name} |"));
        for (_, v) in &rec.at {
            s.push_str(&format!(" {} |", figure(*v)));
        }
        s.push_str(&format!(" {} |\n", figure(rec.mrr)));
    }
    s
}

/// Recall at the report's k by where the answer sits in its chunk and in its document.
fn position_table(r: &Report) -> String {
    let (rerank_head, rerank_rule) = match r.rerank {
        Some(_) => (format!(" rerank recall@{} |", r.k), "---|"),
        None => (String::new(), ""),
    };
    let mut s = format!(
        "\n| answer position | n | BM25 recall@{k} | vector recall@{k} | hybrid recall@{k} |{rerank_head}\n|---|---|---|---|---|{rerank_rule}\n",
        k = r.k
    );
    let row = |label: String, b: (&Recall, &Recall, &Recall, &Option<Recall>)| {
        let rerank =
            b.3.as_ref()
                .map_or(String::new(), |x| format!(" {} |", figure(x.at(r.k))));
        format!(
            "| {label} | {} | {} | {} | {} |{rerank}\n",
            b.0.n,
            figure(b.0.at(r.k)),
            figure(b.1.at(r.k)),
            figure(b.2.at(r.k))
        )
    };
    for b in &r.by_bucket {
        let label = b.group.label().into();
        s.push_str(&row(label, (&b.bm25, &b.vector, &b.hybrid, &b.rerank)));
    }
    for t in &r.by_third {
        let label = format!("{} of the document", t.group.label());
        s.push_str(&row(label, (&t.bm25, &t.vector, &t.hybrid, &t.rerank)));
    }
    s
}

/// The first `show_misses` cases BM25 or the vectors missed, each with every retriever's reason.
fn misses(r: &Report, show_misses: usize) -> String {
    let misses: Vec<&CaseResult> = r
        .results
        .iter()
        .filter(|c| c.bm25_miss.is_some() || c.vector_miss.is_some())
        .collect();
    if misses.is_empty() || show_misses == 0 {
        return String::new();
    }
    let mut s = format!(
        "\nmisses at k = {} ({} cases; first {}):\n",
        r.k,
        misses.len(),
        show_misses.min(misses.len())
    );
    for c in misses.iter().take(show_misses) {
        s.push_str(&miss_line(r, c));
    }
    s
}

/// One missed case: its line, question, answer, where the answer lies, and why each retriever
/// missed it.
fn miss_line(r: &Report, c: &CaseResult) -> String {
    let place = match (c.holding, c.answer_token) {
        (Some((_, ci)), Some(t)) => format!("{} #{} @tok {}", c.file, ci + 1, t),
        _ => c.file.clone(),
    };
    let why = |m: &Option<MissReason>| m.as_ref().map_or("hit".to_string(), |m| m.describe(r.k));
    let rerank = match &r.reranker {
        Some(_) => format!("; rerank: {}", why(&c.rerank_miss)),
        None => String::new(),
    };
    format!(
        "- line {}: {:?} -> {:?} in {place}; BM25: {}; vector: {}; hybrid: {}{rerank}\n",
        c.line,
        c.question,
        c.answer,
        why(&c.bm25_miss),
        why(&c.vector_miss),
        why(&c.hybrid_miss)
    )
}

/// How the reranker ran: its model and window, depth, time per query and the pairs it cut.
fn rerank_line(x: &RerankRun) -> String {
    format!(
        "rerank: {} (pair window {}) over BM25's and the vectors' top {} each: {} queries, {:.1} ms per query (p95 {:.1} ms), {} of {} pairs cut by the window\n\n",
        x.model, x.window, x.candidates, x.queries, x.mean_millis, x.p95_millis, x.truncated, x.scored
    )
}

/// The case lines that could not be used, one a line.
fn unusable(r: &Report) -> String {
    r.bad_lines
        .iter()
        .map(|b| format!("unusable: {}:{}: {}\n", r.cases_file, b.line, b.reason))
        .collect()
}
