//! The judged evaluation as Markdown: the measures per retriever, the tail counts, the queries
//! with a relevant document ranked past k, and one report against another.

use super::{Bucket, DocPlace, JudgedDoc, JudgedQuery, JudgedReport, Ranker, HEADLINE_K};

fn fmt(v: f64) -> String {
    format!("{v:.2}")
}

/// The judged measures as a Markdown table, the tail counts, and the queries with a relevant
/// document past `at` in some retriever (the first `show`).
pub fn markdown(j: &JudgedReport, rrf_k: usize, at: usize, show: usize) -> String {
    let judged: usize = j.per_query.iter().map(|q| q.judged.len()).sum();
    let mut s = format!(
        "{} queries, {judged} judged documents (grade 0: judged not relevant)",
        j.queries
    );
    if !j.not_in_corpus.is_empty() {
        let mut names = j.not_in_corpus.iter().take(5).cloned().collect::<Vec<_>>();
        if j.not_in_corpus.len() > 5 {
            names.push("...".into());
        }
        s.push_str(&format!(
            " ({} names in no document: {})",
            j.not_in_corpus.len(),
            names.join(", ")
        ));
    }
    s.push_str(&format!("\n{}\n\n", j.rule));
    s.push_str(&table(j, rrf_k));
    s.push_str(&tails(j));
    s.push_str(&queries(j, at, show));
    s
}

/// nDCG@10, MAP@10, recall at every k and MRR@10 per retriever.
fn table(j: &JudgedReport, rrf_k: usize) -> String {
    let h = HEADLINE_K;
    let mut s = format!("| retriever | nDCG@{h} | MAP@{h} |");
    for k in &j.ks {
        s.push_str(&format!(" recall@{k} |"));
    }
    s.push_str(&format!(" MRR@{h} |\n|---|---|---|"));
    for _ in &j.ks {
        s.push_str("---|");
    }
    s.push_str("---|\n");
    for r in j.rankers() {
        let name = match r {
            Ranker::Hybrid => format!("hybrid (RRF k={rrf_k})"),
            r => r.label().to_string(),
        };
        let head = j.mean_at(r, h).unwrap_or_default();
        s.push_str(&format!(
            "| {name} | {} | {} |",
            fmt(head.ndcg),
            fmt(head.map)
        ));
        for m in j.means(r) {
            s.push_str(&format!(" {} |", fmt(m.recall)));
        }
        s.push_str(&format!(" {} |\n", fmt(head.mrr)));
    }
    s
}

/// How many relevant documents each retriever ranks at a chunk with a tail, and where the query
/// log's answers lie.
fn tails(j: &JudgedReport) -> String {
    let relevant = || {
        j.per_query
            .iter()
            .flat_map(|q| &q.judged)
            .filter(|d| d.grade > 0)
    };
    let mut parts = Vec::new();
    for r in j.rankers() {
        let ranked: Vec<&DocPlace> = relevant().filter_map(|d| d.place(r)).collect();
        let tail = ranked.iter().filter(|p| p.tail).count();
        parts.push(format!("{} {tail} of {}", r.label(), ranked.len()));
    }
    let mut s = format!(
        "\nrelevant documents whose best chunk is cut by the window (TAIL): {} ranked\n",
        parts.join(", ")
    );
    let placed: Vec<Bucket> = relevant().filter_map(|d| d.answer_at).collect();
    if !placed.is_empty() {
        let counts: Vec<String> = Bucket::ALL
            .iter()
            .map(|b| {
                let n = placed.iter().filter(|p| *p == b).count();
                format!("{n} {}", b.label())
            })
            .collect();
        s.push_str(&format!(
            "answers in their relevant documents: {}\n",
            counts.join(", ")
        ));
    }
    s
}

/// The queries with a relevant document past `at` (or unranked) in some retriever.
fn queries(j: &JudgedReport, at: usize, show: usize) -> String {
    let rankers = j.rankers();
    let missed = |q: &&JudgedQuery| rankers.iter().any(|&r| !q.found_at(r, at));
    let listed: Vec<&JudgedQuery> = j.per_query.iter().filter(missed).collect();
    if listed.is_empty() || show == 0 {
        return String::new();
    }
    let mut s = format!(
        "\nqueries with a relevant document past k = {at} ({}; first {}): rank per retriever, at chunk #N of the document, TAIL when that chunk is cut by the window\n",
        listed.len(),
        show.min(listed.len())
    );
    for q in listed.into_iter().take(show) {
        s.push_str(&format!("- {} {:?}:", q.id, q.query));
        let docs: Vec<String> = q
            .judged
            .iter()
            .filter(|d| d.grade > 0)
            .map(|d| judged_doc_line(d, &rankers))
            .collect();
        s.push_str(&format!(" {}\n", docs.join("; ")));
    }
    s
}

/// `doc (grade g): BM25 3 at #2, vector 12 at #4 TAIL, hybrid -` (a stored chunk by its id
/// instead of `#N`) for each of `rankers`, and the answer's place.
pub fn judged_doc_line(d: &JudgedDoc, rankers: &[Ranker]) -> String {
    let places: Vec<String> = rankers
        .iter()
        .map(|&r| match d.place(r) {
            Some(p) => format!(
                "{} {} at {}{}",
                r.label(),
                p.rank,
                // A folder's chunk by its number in the document; a stored chunk by its id.
                if p.file == d.doc {
                    format!("#{}", p.chunk + 1)
                } else {
                    p.file.clone()
                },
                if p.tail { " TAIL" } else { "" }
            ),
            None => format!("{} -", r.label()),
        })
        .collect();
    let mut s = format!("{} (grade {}): {}", d.doc, d.grade, places.join(", "));
    if !d.in_corpus {
        s.push_str(" (in no document)");
    }
    if let Some(b) = d.answer_at {
        s.push_str(&format!("; answer {}", b.label()));
    }
    s
}

/// A -> B for every headline measure and recall@`at`, per retriever, as a Markdown table.
pub fn compare_markdown(a: &JudgedReport, b: &JudgedReport, at: usize) -> String {
    let h = HEADLINE_K;
    let mut s = format!(
        "| retriever | nDCG@{h} A -> B | MAP@{h} A -> B | recall@{at} A -> B | MRR@{h} A -> B |\n|---|---|---|---|---|\n"
    );
    let rankers: Vec<Ranker> = a
        .rankers()
        .into_iter()
        .filter(|r| b.rankers().contains(r))
        .collect();
    for r in rankers {
        let (ha, hb) = (
            a.mean_at(r, h).unwrap_or_default(),
            b.mean_at(r, h).unwrap_or_default(),
        );
        let (ka, kb) = (
            a.mean_at(r, at).unwrap_or_default(),
            b.mean_at(r, at).unwrap_or_default(),
        );
        let cell = |x: f64, y: f64| format!("{} -> {} ({:+.2})", fmt(x), fmt(y), y - x);
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.label(),
            cell(ha.ndcg, hb.ndcg),
            cell(ha.map, hb.map),
            cell(ka.recall, kb.recall),
            cell(ha.mrr, hb.mrr)
        ));
    }
    s
}
