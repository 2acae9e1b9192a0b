//! Evaluation: recall@k and MRR for BM25 and vectors over the same chunks, broken down by where the
//! answer sits in its chunk (inside the window, in the tail, split across chunks, in no chunk) and
//! in its document (first, middle, last third), with the reason for every miss. Cases that come
//! with relevance judgments are also measured at document level ([`judged`]).

use serde::Serialize;

use super::cases::Cases;
use super::embed::driver::embed_cached;
use super::embed::{EmbedCache, Embedder};
use super::engine::{Chunking, Engine};
use super::rerank::stage::{self, Stage};
use super::search::SearchIndex;

pub mod judged;
mod spans;
use judged::{JudgedReport, Ranker};
use spans::{place, HitTexts, SpanScorer};

/// Why an evaluation could not finish.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The questions could not be embedded (the vector side has nothing to rank with).
    #[error("the questions could not be embedded: {0}")]
    Questions(#[source] crate::embed::EmbedError),
    /// A BM25 ranking failed (the in-memory index).
    #[error(transparent)]
    Search(#[from] crate::index::bm25::Bm25Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Bucket {
    InsideWindow,
    InTheTail,
    SplitAcrossChunks,
    InNoChunk,
}

impl Bucket {
    pub const ALL: [Bucket; 4] = [
        Bucket::InsideWindow,
        Bucket::InTheTail,
        Bucket::SplitAcrossChunks,
        Bucket::InNoChunk,
    ];
    pub fn label(self) -> &'static str {
        match self {
            Bucket::InsideWindow => "inside window",
            Bucket::InTheTail => "in the tail",
            Bucket::SplitAcrossChunks => "split across chunks",
            Bucket::InNoChunk => "in no chunk",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Third {
    First,
    Middle,
    Last,
}

impl Third {
    pub const ALL: [Third; 3] = [Third::First, Third::Middle, Third::Last];
    pub fn label(self) -> &'static str {
        match self {
            Third::First => "first third",
            Third::Middle => "middle third",
            Third::Last => "last third",
        }
    }
}

/// Why a retriever missed a case at k.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum MissReason {
    /// The splitter dropped the answer.
    AnswerInNoChunk,
    /// No chunk holds the whole answer.
    SplitAcrossChunks,
    /// The answer lies past the window: its chunk's vector never saw it.
    AnswerInTheTail,
    /// The chunk holding the answer ranked below k.
    RankedBelowK { rank: usize },
    /// BM25 matched no term of the question in any chunk holding the answer.
    NotRetrieved,
}

impl MissReason {
    pub fn describe(&self, k: usize) -> String {
        match self {
            MissReason::AnswerInNoChunk => "answer in no chunk (dropped by the splitter)".into(),
            MissReason::SplitAcrossChunks => "answer split across chunks".into(),
            MissReason::AnswerInTheTail => "answer in the tail, never embedded".into(),
            MissReason::RankedBelowK { rank } => format!("best chunk ranked {rank} > {k}"),
            MissReason::NotRetrieved => "no chunk holding the answer was retrieved".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub line: usize,
    pub question: String,
    pub answer: String,
    pub file: String,
    pub bucket: Bucket,
    pub third: Third,
    /// The chunk holding the answer: (file position in the chunking, chunk index).
    pub holding: Option<(usize, usize)>,
    /// Position of the answer's first token in the model's input ([CLS] = 0) of that chunk.
    pub answer_token: Option<usize>,
    /// 1-based rank of the first retrieved chunk containing the answer.
    pub bm25_rank: Option<usize>,
    pub vector_rank: Option<usize>,
    /// Rank in BM25 and vector fused by reciprocal rank fusion.
    pub hybrid_rank: Option<usize>,
    pub bm25_miss: Option<MissReason>,
    pub vector_miss: Option<MissReason>,
    pub hybrid_miss: Option<MissReason>,
    /// Rank in the reranker's order of the first stage's candidates (with a reranker).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_miss: Option<MissReason>,
}

impl CaseResult {
    pub fn bucket_label(&self) -> &'static str {
        match self.bucket {
            Bucket::InsideWindow => "window",
            Bucket::InTheTail => "TAIL",
            Bucket::SplitAcrossChunks => "split",
            Bucket::InNoChunk => "no chunk",
        }
    }
}

/// Recall@k for each k, and MRR, of one retriever over some cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recall {
    pub n: usize,
    pub at: Vec<(usize, f64)>,
    pub mrr: f64,
}

impl Recall {
    fn of(ranks: &[Option<usize>], ks: &[usize]) -> Recall {
        let n = ranks.len();
        let frac = |k: usize| {
            if n == 0 {
                f64::NAN
            } else {
                ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n as f64
            }
        };
        Recall {
            n,
            at: ks.iter().map(|&k| (k, frac(k))).collect(),
            mrr: if n == 0 {
                f64::NAN
            } else {
                ranks
                    .iter()
                    .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
                    .sum::<f64>()
                    / n as f64
            },
        }
    }

    pub fn at(&self, k: usize) -> f64 {
        self.at
            .iter()
            .find(|(x, _)| *x == k)
            .map_or(f64::NAN, |(_, v)| *v)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakdown<T> {
    pub group: T,
    pub bm25: Recall,
    pub vector: Recall,
    pub hybrid: Recall,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<Recall>,
}

/// How the reranker stage ran over an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankRun {
    /// The CrossEncoder folder.
    pub model: String,
    /// Its pair window (query and passage, specials included).
    pub window: usize,
    /// How deep it read into BM25's and the vectors' rankings, each.
    pub candidates: usize,
    pub queries: usize,
    /// Time spent scoring per query: mean and 95th percentile.
    pub mean_millis: f64,
    pub p95_millis: f64,
    /// Pairs scored in all, and of those, how many the pair window cut.
    pub scored: usize,
    pub truncated: usize,
}

/// The reranker stage during an evaluation: each query's order of its candidates, timed.
pub struct RerankMeter<'a> {
    stage: Stage<'a>,
    millis: Vec<f64>,
    scored: usize,
    truncated: usize,
}

impl<'a> RerankMeter<'a> {
    pub fn new(stage: Stage<'a>) -> RerankMeter<'a> {
        RerankMeter {
            stage,
            millis: Vec::new(),
            scored: 0,
            truncated: 0,
        }
    }

    /// The reranked chunk ids of `query`'s candidates (`qv` its vector, empty for none).
    fn ranking(
        &mut self,
        index: &SearchIndex,
        searched: (&Engine, &Chunking),
        query: &str,
        qv: &[f32],
    ) -> Result<Vec<u64>, EvalError> {
        let started = std::time::Instant::now();
        let scored = stage::score(self.stage, index, searched, query, qv)?;
        self.millis.push(started.elapsed().as_secs_f64() * 1000.0);
        self.scored += scored.candidates;
        self.truncated += scored.cuts.iter().filter(|c| c.is_some()).count();
        Ok(scored.ids)
    }

    fn run(self) -> RerankRun {
        let mut sorted = self.millis.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        RerankRun {
            model: self.stage.reranker.dir().display().to_string(),
            window: self.stage.reranker.pair_window(),
            candidates: self.stage.candidates,
            queries: n,
            mean_millis: if n == 0 {
                0.0
            } else {
                sorted.iter().sum::<f64>() / n as f64
            },
            p95_millis: sorted
                .get((n * 95).div_ceil(100).saturating_sub(1))
                .copied()
                .unwrap_or(0.0),
            scored: self.scored,
            truncated: self.truncated,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub cases_file: String,
    pub settings: String,
    /// The model whose tokenizer counted the windows and whose vectors ranked (its short name).
    pub model: String,
    /// The embedder's backend and precision, e.g. `native int8`.
    pub embedder: String,
    pub window: usize,
    /// Chunks (= vectors) this configuration needs.
    pub vectors: usize,
    pub ks: Vec<usize>,
    /// The k that misses are explained at.
    pub k: usize,
    pub bm25: Recall,
    pub vector: Recall,
    /// BM25 and vector fused by reciprocal rank fusion, with its constant.
    pub hybrid: Recall,
    pub rrf_k: usize,
    /// The reranker's recall over the same cases, and how it ran (with a reranker).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<Recall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranker: Option<RerankRun>,
    pub by_bucket: Vec<Breakdown<Bucket>>,
    pub by_third: Vec<Breakdown<Third>>,
    pub results: Vec<CaseResult>,
    pub bad_lines: Vec<super::cases::BadLine>,
    /// Document-level measures against relevance judgments, when the cases have them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<JudgedReport>,
}

impl Report {
    /// The checked retrievers whose recall@`at` falls below `floor`, named with their figure.
    /// Without span cases, the judged (document) recall@`at` is checked.
    pub fn below(
        &self,
        floor: f64,
        at: usize,
        bm25: bool,
        vector: bool,
        hybrid: bool,
    ) -> Vec<String> {
        let checked = [
            (Ranker::Bm25, bm25, &self.bm25),
            (Ranker::Vector, vector, &self.vector),
            (Ranker::Hybrid, hybrid, &self.hybrid),
        ];
        let judged = self.judged.as_ref().filter(|_| self.results.is_empty());
        checked
            .into_iter()
            .filter(|(_, on, _)| *on)
            .filter_map(|(r, _, recall)| match judged {
                Some(j) => {
                    let v = j.mean_at(r, at).map_or(0.0, |m| m.recall);
                    (v < floor).then(|| format!("{} document recall@{at} {v:.3}", r.label()))
                }
                None => (recall.at(at) < floor)
                    .then(|| format!("{} recall@{at} {:.3}", r.label(), recall.at(at))),
            })
            .collect()
    }
}

/// Cases whose answer was retrieved at `k` by one report and not by the other (matched by line
/// and question): (gained, lost) from `a` to `b`, per retriever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flips {
    pub k: usize,
    pub bm25: (usize, usize),
    pub vector: (usize, usize),
    pub hybrid: (usize, usize),
    pub rerank: (usize, usize),
}

/// The flips from `a` to `b` at `b`'s k.
pub fn flips(a: &Report, b: &Report) -> Flips {
    let k = b.k;
    let hit = |r: Option<usize>| r.is_some_and(|r| r <= k);
    let mut f = Flips {
        k,
        ..Flips::default()
    };
    for cb in &b.results {
        let Some(ca) = a
            .results
            .iter()
            .find(|x| x.line == cb.line && x.question == cb.question)
        else {
            continue;
        };
        for (slot, ra, rb) in [
            (&mut f.bm25, ca.bm25_rank, cb.bm25_rank),
            (&mut f.vector, ca.vector_rank, cb.vector_rank),
            (&mut f.hybrid, ca.hybrid_rank, cb.hybrid_rank),
            (&mut f.rerank, ca.rerank_rank, cb.rerank_rank),
        ] {
            match (hit(ra), hit(rb)) {
                (false, true) => slot.0 += 1,
                (true, false) => slot.1 += 1,
                _ => {}
            }
        }
    }
    f
}

/// The k values of recall@k, with the k misses are explained at among them, in order.
pub fn ks_with(ks: &[usize], at: usize) -> Vec<usize> {
    let mut ks = ks.to_vec();
    if !ks.contains(&at) {
        ks.push(at);
        ks.sort_unstable();
    }
    ks
}

/// Run every case through BM25, vectors and their fusion.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    engine: &Engine,
    chunking: &Chunking,
    index: &SearchIndex,
    embedder: &Embedder,
    cache: &mut EmbedCache,
    cases: &Cases,
    window: usize,
    ks: &[usize],
    k: usize,
) -> Result<Report, EvalError> {
    evaluate_with(
        (engine, chunking, index),
        embedder,
        cache,
        cases,
        window,
        (ks, k),
        None,
    )
}

/// [`evaluate`], and with `rerank` the reranker's order of each query's candidates as a fourth
/// retriever.
pub fn evaluate_with(
    (engine, chunking, index): (&Engine, &Chunking, &SearchIndex),
    embedder: &Embedder,
    cache: &mut EmbedCache,
    cases: &Cases,
    window: usize,
    (ks, k): (&[usize], usize),
    rerank: Option<Stage>,
) -> Result<Report, EvalError> {
    let mut meter = rerank.map(RerankMeter::new);
    let qvs = embed_questions(embedder, cache, cases, window)?;
    let scorer = SpanScorer {
        engine,
        chunking,
        index,
        texts: HitTexts::new(engine, chunking, index),
        window,
        k,
    };
    let results = (cases.cases.iter().enumerate())
        .map(|(i, case)| scorer.score(case, qvs.get(i), meter.as_mut()))
        .collect::<Result<Vec<_>, _>>()?;
    let judged = match &cases.judged {
        Some(j) => {
            let searched = judged::Searched {
                engine,
                chunking,
                index,
                window,
            };
            let qvs = qvs.get(cases.cases.len()..).unwrap_or(&[]);
            Some(judged::evaluate(&searched, j, qvs, ks, meter.as_mut())?)
        }
        None => None,
    };
    let recall = |sel: &dyn Fn(&CaseResult) -> bool| recalls(&results, ks, meter.is_some(), sel);
    let (bm25, vector, hybrid, rerank) = recall(&|_| true);
    let by_bucket = Bucket::ALL
        .iter()
        .map(|&b| breakdown(b, recall(&|r| r.bucket == b)))
        .collect();
    let by_third = Third::ALL
        .iter()
        .map(|&t| breakdown(t, recall(&|r| r.third == t)))
        .collect();
    Ok(Report {
        cases_file: cases.file.clone(),
        settings: chunking.settings.label(),
        model: engine.model.short_name(),
        embedder: embedder.backend_name(),
        window,
        vectors: index.len(),
        ks: ks.to_vec(),
        k,
        bm25,
        vector,
        hybrid,
        rrf_k: index.rrf_k,
        rerank,
        reranker: meter.map(RerankMeter::run),
        by_bucket,
        by_third,
        results,
        bad_lines: cases.bad.clone(),
        judged,
    })
}

/// The vectors of the span cases' questions, then of the judged queries: embedded as queries
/// (with the model's query prompt).
fn embed_questions(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    cases: &Cases,
    window: usize,
) -> Result<Vec<Vec<f32>>, EvalError> {
    let judged_queries = cases.judged.iter().flat_map(|j| &j.judgments.cases);
    let prompted: Vec<std::borrow::Cow<str>> = cases
        .cases
        .iter()
        .map(|c| embedder.query_text(&c.question))
        .chain(judged_queries.map(|q| embedder.query_text(&q.query)))
        .collect();
    let questions: Vec<&str> = prompted.iter().map(|q| q.as_ref()).collect();
    let (qvs, _) = embed_cached(embedder, cache, &questions, window, |_, _| true)
        .map_err(EvalError::Questions)?;
    Ok(qvs)
}

/// Recall of BM25, vectors, hybrid and the reranker.
type Recalls = (Recall, Recall, Recall, Option<Recall>);

/// Recall of each retriever over the results `sel` keeps (the reranker's with `reranked`).
fn recalls(
    results: &[CaseResult],
    ks: &[usize],
    reranked: bool,
    sel: &dyn Fn(&CaseResult) -> bool,
) -> Recalls {
    let rs: Vec<&CaseResult> = results.iter().filter(|r| sel(r)).collect();
    let of = |rank: fn(&CaseResult) -> Option<usize>| {
        Recall::of(&rs.iter().map(|r| rank(r)).collect::<Vec<_>>(), ks)
    };
    (
        of(|r| r.bm25_rank),
        of(|r| r.vector_rank),
        of(|r| r.hybrid_rank),
        reranked.then(|| of(|r| r.rerank_rank)),
    )
}

fn breakdown<T: Copy>(group: T, (bm25, vector, hybrid, rerank): Recalls) -> Breakdown<T> {
    Breakdown {
        group,
        bm25,
        vector,
        hybrid,
        rerank,
    }
}

/// The report as a Markdown table plus the misses.
pub fn markdown(r: &Report, show_misses: usize) -> String {
    let f = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.2}")
        }
    };
    let usable = match &r.judged {
        Some(j) if r.results.is_empty() => format!("{} judged queries", j.queries),
        Some(j) => format!(
            "{} judged queries, {} answer spans",
            j.queries,
            r.results.len()
        ),
        None => format!("{} usable", r.results.len()),
    };
    let mut s = format!(
        "cases {} ({usable}, {} unusable lines)  {}  window {}  {} vectors  model {} ({})\n\n",
        r.cases_file,
        r.bad_lines.len(),
        r.settings,
        r.window,
        r.vectors,
        r.model,
        r.embedder
    );
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
    s.push_str("| retriever |");
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
            s.push_str(&format!(" {} |", f(*v)));
        }
        s.push_str(&format!(" {} |\n", f(rec.mrr)));
    }
    let (rerank_head, rerank_rule) = match r.rerank {
        Some(_) => (format!(" rerank recall@{} |", r.k), "---|"),
        None => (String::new(), ""),
    };
    s.push_str(&format!(
        "\n| answer position | n | BM25 recall@{k} | vector recall@{k} | hybrid recall@{k} |{rerank_head}\n|---|---|---|---|---|{rerank_rule}\n",
        k = r.k
    ));
    let row = |label: String, b: (&Recall, &Recall, &Recall, &Option<Recall>)| {
        let rerank =
            b.3.as_ref()
                .map_or(String::new(), |x| format!(" {} |", f(x.at(r.k))));
        format!(
            "| {label} | {} | {} | {} | {} |{rerank}\n",
            b.0.n,
            f(b.0.at(r.k)),
            f(b.1.at(r.k)),
            f(b.2.at(r.k))
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
    let misses: Vec<&CaseResult> = r
        .results
        .iter()
        .filter(|c| c.bm25_miss.is_some() || c.vector_miss.is_some())
        .collect();
    if !misses.is_empty() && show_misses > 0 {
        s.push_str(&format!(
            "\nmisses at k = {} ({} cases; first {}):\n",
            r.k,
            misses.len(),
            show_misses.min(misses.len())
        ));
        for c in misses.iter().take(show_misses) {
            let place = match (c.holding, c.answer_token) {
                (Some((_, ci)), Some(t)) => format!("{} #{} @tok {}", c.file, ci + 1, t),
                _ => c.file.clone(),
            };
            let why =
                |m: &Option<MissReason>| m.as_ref().map_or("hit".to_string(), |m| m.describe(r.k));
            let rerank = match &r.reranker {
                Some(_) => format!("; rerank: {}", why(&c.rerank_miss)),
                None => String::new(),
            };
            s.push_str(&format!(
                "- line {}: {:?} -> {:?} in {place}; BM25: {}; vector: {}; hybrid: {}{rerank}\n",
                c.line,
                c.question,
                c.answer,
                why(&c.bm25_miss),
                why(&c.vector_miss),
                why(&c.hybrid_miss)
            ));
        }
    }
    s.push_str(&unusable(r));
    s
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_and_mrr() {
        let r = Recall::of(&[Some(1), Some(3), None, Some(6)], &[1, 5, 10]);
        assert_eq!(r.at(1), 0.25);
        assert_eq!(r.at(5), 0.5);
        assert_eq!(r.at(10), 0.75);
        assert!((r.mrr - (1.0 + 1.0 / 3.0 + 1.0 / 6.0) / 4.0).abs() < 1e-12);
        assert!(Recall::of(&[], &[5]).at(5).is_nan());
    }
}
