//! Evaluation: recall@k and MRR for BM25 and vectors over the same chunks, broken down by where the
//! answer sits in its chunk (inside the window, in the tail, split across chunks, in no chunk) and
//! in its document (first, middle, last third), with the reason for every miss. Cases that come
//! with relevance judgments are also measured at document level ([`judged`]).

use serde::Serialize;

use super::cases::Cases;
use super::embed::driver::embed_cached;
use super::embed::{EmbedCache, Embedder};
use super::engine::{Chunking, Engine};
use super::rerank::stage::Stage;
use super::search::SearchIndex;

mod flips;
pub mod judged;
mod markdown;
mod rerank;
mod spans;
pub use flips::{flips, Flips};
use judged::{JudgedReport, Ranker};
pub use markdown::markdown;
pub use rerank::{RerankMeter, RerankRun};
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
