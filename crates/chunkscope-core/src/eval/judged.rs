//! Evaluation against relevance judgments. Per retriever (BM25, vectors, their hybrid) every
//! chunk is ranked; a document ranks where its best chunk ranks (as MTEB's chunked evaluation
//! does: a document's score is its best chunk's), so chunks inherit their document's judgment;
//! trec_eval's measures (nDCG@k, MAP@k, recall@k, P@k, MRR) are taken over those document
//! rankings ([`crate::metrics`]).
//!
//! Per query and judged document: its rank in each retriever, the chunk it ranks at, and whether
//! that chunk is cut by the window (has a tail: tokens past the window that its vector never
//! saw). When the query log gives an answer: where the answer lies in that document's chunks,
//! bucketed as the span evaluation buckets answers (inside the window, in the tail, split across
//! chunks, in no chunk).

use std::collections::HashMap;

use serde::Serialize;

use super::{place, Bucket, RerankMeter};
use crate::cases::{locate, Case, JudgedCases};
use crate::engine::{Chunking, Engine};
use crate::judgments::Judged;
use crate::metrics::{self, Metrics, QueryEval};
use crate::search::{rrf, SearchIndex};

mod markdown;
pub use markdown::{compare_markdown, judged_doc_line, markdown};

/// How a chunk ranking becomes a document ranking, as reports say it.
pub const BEST_CHUNK_RULE: &str =
    "a document ranks at its best chunk (as MTEB's chunked evaluation)";

/// The cutoff of the headline measures (nDCG@10, MAP@10, MRR@10), measured whatever `ks` are.
pub const HEADLINE_K: usize = 10;

/// The retrievers measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ranker {
    Bm25,
    Vector,
    Hybrid,
    /// The reranker's order of BM25's and the vectors' candidates.
    Rerank,
}

impl Ranker {
    /// The first stage, always measured.
    pub const ALL: [Ranker; 3] = [Ranker::Bm25, Ranker::Vector, Ranker::Hybrid];

    pub fn label(self) -> &'static str {
        match self {
            Ranker::Bm25 => "BM25",
            Ranker::Vector => "vector",
            Ranker::Hybrid => "hybrid",
            Ranker::Rerank => "rerank",
        }
    }
}

/// The judged evaluation of one chunking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgedReport {
    /// The qrels file or the query log.
    pub source: String,
    /// [`BEST_CHUNK_RULE`].
    pub rule: String,
    pub queries: usize,
    /// The cutoffs measured: the report's ks and [`HEADLINE_K`].
    pub ks: Vec<usize>,
    /// Judged names that match no document: relevant, never retrieved.
    pub not_in_corpus: Vec<String>,
    /// Mean measures over every judged query, one per k of `ks`.
    pub bm25: Vec<Metrics>,
    pub vector: Vec<Metrics>,
    pub hybrid: Vec<Metrics>,
    /// The reranker's, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<Vec<Metrics>>,
    pub per_query: Vec<JudgedQuery>,
}

impl JudgedReport {
    /// The retrievers measured: the first stage, and the reranker when there is one.
    pub fn rankers(&self) -> Vec<Ranker> {
        let mut rs = Ranker::ALL.to_vec();
        if self.rerank.is_some() {
            rs.push(Ranker::Rerank);
        }
        rs
    }

    /// A retriever's mean measures, one per k of `ks` (none for a reranker not run).
    pub fn means(&self, r: Ranker) -> &[Metrics] {
        match r {
            Ranker::Bm25 => &self.bm25,
            Ranker::Vector => &self.vector,
            Ranker::Hybrid => &self.hybrid,
            Ranker::Rerank => self.rerank.as_deref().unwrap_or(&[]),
        }
    }

    /// A retriever's mean measures at `k`, when `k` was measured.
    pub fn mean_at(&self, r: Ranker, k: usize) -> Option<Metrics> {
        self.means(r).iter().find(|m| m.k == k).copied()
    }

    /// nDCG@10 of each retriever measured.
    pub fn ndcg10(&self) -> Vec<(Ranker, f64)> {
        self.rankers()
            .into_iter()
            .map(|r| (r, self.mean_at(r, HEADLINE_K).map_or(0.0, |m| m.ndcg)))
            .collect()
    }
}

/// One judged query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgedQuery {
    pub id: String,
    pub query: String,
    pub answer: Option<String>,
    /// Every judged document (grade 0: judged not relevant), highest grade first.
    pub judged: Vec<JudgedDoc>,
    pub bm25: QueryRun,
    pub vector: QueryRun,
    pub hybrid: QueryRun,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<QueryRun>,
}

impl JudgedQuery {
    /// A retriever's run (the hybrid's for a reranker not run).
    pub fn run(&self, r: Ranker) -> &QueryRun {
        match r {
            Ranker::Bm25 => &self.bm25,
            Ranker::Vector => &self.vector,
            Ranker::Hybrid => &self.hybrid,
            Ranker::Rerank => self.rerank.as_ref().unwrap_or(&self.hybrid),
        }
    }

    /// True when every relevant document (grade > 0) ranks within the first `k` in `r`.
    pub fn found_at(&self, r: Ranker, k: usize) -> bool {
        self.judged
            .iter()
            .filter(|d| d.grade > 0)
            .all(|d| d.place(r).is_some_and(|p| p.rank <= k))
    }

    /// The place to open for this query: where its first relevant document ranks in vectors,
    /// else BM25, else hybrid.
    pub fn best_place(&self) -> Option<&DocPlace> {
        let first = self.judged.iter().find(|d| d.grade > 0)?;
        [Ranker::Vector, Ranker::Bm25, Ranker::Hybrid]
            .iter()
            .find_map(|&r| first.place(r))
    }
}

/// One retriever's document ranking for one query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryRun {
    /// The first documents, best first, each at its best chunk: as many as the largest k.
    pub ranking: Vec<String>,
    /// Documents ranked in all (those with a chunk in the chunk ranking).
    pub ranked: usize,
    /// The measures at each k of the report's `ks`.
    pub metrics: Vec<Metrics>,
}

/// A judged document of one query, where each retriever ranks it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgedDoc {
    pub doc: String,
    pub grade: u32,
    /// False when no corpus document has this id.
    pub in_corpus: bool,
    pub bm25: Option<DocPlace>,
    pub vector: Option<DocPlace>,
    pub hybrid: Option<DocPlace>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<DocPlace>,
    /// Where the query's answer lies in this document's chunks; null without an answer or when
    /// the document does not hold it.
    pub answer_at: Option<Bucket>,
}

impl JudgedDoc {
    pub fn place(&self, r: Ranker) -> Option<&DocPlace> {
        match r {
            Ranker::Bm25 => self.bm25.as_ref(),
            Ranker::Vector => self.vector.as_ref(),
            Ranker::Hybrid => self.hybrid.as_ref(),
            Ranker::Rerank => self.rerank.as_ref(),
        }
    }
}

/// Where a document ranks: at its best chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocPlace {
    /// 1-based rank among documents.
    pub rank: usize,
    /// 1-based rank of its best chunk among chunks.
    pub chunk_rank: usize,
    /// The corpus file the chunk is in (a store's chunk id) and its index there.
    pub file: String,
    pub chunk: usize,
    /// The chunk is cut by the window: its end was never embedded.
    pub tail: bool,
    /// (file position in the chunking, chunk index): what the workbench opens.
    #[serde(skip)]
    pub at: (usize, usize),
}

/// The cutoffs measured: `ks` and the headline k, sorted.
pub fn judged_ks(ks: &[usize]) -> Vec<usize> {
    let mut ks: Vec<usize> = ks.iter().copied().filter(|&k| k > 0).collect();
    ks.push(HEADLINE_K);
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// What one chunking offers the judged evaluation.
pub(super) struct Searched<'a> {
    pub engine: &'a Engine,
    pub chunking: &'a Chunking,
    pub index: &'a SearchIndex,
    pub window: usize,
}

/// Document ids interned: one key per distinct id.
struct DocKeys<'a> {
    names: Vec<&'a str>,
    key_of: HashMap<&'a str, u32>,
    /// The key of each chunk id.
    of_chunk: Vec<u32>,
    /// The corpus documents of each key.
    docs: Vec<Vec<usize>>,
}

impl<'a> DocKeys<'a> {
    fn new(doc_ids: &'a [String], s: &Searched) -> DocKeys<'a> {
        let mut k = DocKeys {
            names: Vec::new(),
            key_of: HashMap::new(),
            of_chunk: Vec::with_capacity(s.index.len()),
            docs: Vec::new(),
        };
        let mut of_doc = Vec::with_capacity(doc_ids.len());
        for (d, id) in doc_ids.iter().enumerate() {
            let next = k.names.len() as u32;
            let key = *k.key_of.entry(id.as_str()).or_insert(next);
            if key == next {
                k.names.push(id.as_str());
                k.docs.push(Vec::new());
            }
            k.docs[key as usize].push(d);
            of_doc.push(key);
        }
        for id in 0..s.index.len() as u64 {
            let (fp, _) = s.index.chunk_ref(id).expect("id in range");
            k.of_chunk.push(of_doc[s.chunking.files[fp].doc]);
        }
        k
    }
}

/// A chunk ranking as a document ranking: each document at its first (best) chunk, with that
/// chunk's id and 0-based position among chunks.
struct DocRun {
    keys: Vec<u32>,
    best: Vec<(u64, usize)>,
}

impl DocRun {
    fn of(keys: &DocKeys, chunks: &[u64]) -> DocRun {
        let mut seen = vec![false; keys.names.len()];
        let mut run = DocRun {
            keys: Vec::new(),
            best: Vec::new(),
        };
        for (pos, &id) in chunks.iter().enumerate() {
            let k = keys.of_chunk[id as usize];
            if !std::mem::replace(&mut seen[k as usize], true) {
                run.keys.push(k);
                run.best.push((id, pos));
            }
        }
        run
    }
}

/// Every judged query through BM25, vectors (`qvs`, one per query, empty without vectors),
/// their fusion and the reranker (with `meter`), measured at `judged_ks(ks)`.
pub(super) fn evaluate(
    s: &Searched,
    j: &JudgedCases,
    qvs: &[Vec<f32>],
    ks: &[usize],
    mut meter: Option<&mut RerankMeter>,
) -> Result<JudgedReport, super::EvalError> {
    let ks = judged_ks(ks);
    let keys = DocKeys::new(&j.doc_ids, s);
    let mut per_query = Vec::with_capacity(j.judgments.cases.len());
    for (i, q) in j.judgments.cases.iter().enumerate() {
        let bm = s.index.bm25_ranking(&q.query)?;
        let vr = match qvs.get(i) {
            Some(qv) if s.index.has_vectors() => s.index.vector_ranking(qv),
            _ => Vec::new(),
        };
        let fused: Vec<u64> = rrf(&[&bm, &vr], s.index.rrf_k)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let reranked = match meter.as_deref_mut() {
            Some(m) => {
                Some(m.ranking(s.index, (s.engine, s.chunking), &q.query, &vr_qv(qvs, i, s))?)
            }
            None => None,
        };
        let runs = [&bm, &vr, &fused].map(|r| DocRun::of(&keys, r));
        let rerank_run = reranked.as_ref().map(|r| DocRun::of(&keys, r));
        per_query.push(judge_query(s, &keys, q, (&runs, rerank_run.as_ref()), &ks));
    }
    let mean = |r: Ranker| -> Vec<Metrics> {
        ks.iter()
            .enumerate()
            .map(|(i, &k)| {
                let each: Vec<Metrics> = per_query.iter().map(|q| q.run(r).metrics[i]).collect();
                metrics::mean(k, &each)
            })
            .collect()
    };
    Ok(JudgedReport {
        source: j.source.clone(),
        rule: BEST_CHUNK_RULE.to_string(),
        queries: per_query.len(),
        bm25: mean(Ranker::Bm25),
        vector: mean(Ranker::Vector),
        hybrid: mean(Ranker::Hybrid),
        rerank: meter.is_some().then(|| mean(Ranker::Rerank)),
        ks,
        not_in_corpus: j.not_in_corpus.clone(),
        per_query,
    })
}

/// One query's document rankings measured, and its judged documents placed in them.
fn judge_query(
    s: &Searched,
    keys: &DocKeys,
    q: &Judged,
    (runs, rerank): (&[DocRun; 3], Option<&DocRun>),
    ks: &[usize],
) -> JudgedQuery {
    let depth = ks.last().copied().unwrap_or(0);
    let query_run = |run: &DocRun| {
        let names: Vec<&str> = run.keys.iter().map(|&k| keys.names[k as usize]).collect();
        let eval = QueryEval::new(&names, &q.relevant);
        QueryRun {
            ranking: names.iter().take(depth).map(|n| n.to_string()).collect(),
            ranked: names.len(),
            metrics: ks.iter().map(|&k| eval.at(k)).collect(),
        }
    };
    let judged = q
        .relevant
        .iter()
        .map(|(doc, grade)| {
            let key = keys.key_of.get(doc.as_str()).copied();
            let at = |run: &DocRun| key.and_then(|k| doc_place(s, run, k));
            JudgedDoc {
                doc: doc.clone(),
                grade: *grade,
                in_corpus: key.is_some(),
                bm25: at(&runs[0]),
                vector: at(&runs[1]),
                hybrid: at(&runs[2]),
                rerank: rerank.and_then(at),
                answer_at: key.and_then(|k| answer_at(s, &keys.docs[k as usize], q)),
            }
        })
        .collect();
    JudgedQuery {
        id: q.id.clone(),
        query: q.query.clone(),
        answer: q.answer.clone(),
        judged,
        bm25: query_run(&runs[0]),
        vector: query_run(&runs[1]),
        hybrid: query_run(&runs[2]),
        rerank: rerank.map(query_run),
    }
}

/// The query vector of judged query `i` for the reranker's candidates (empty without vectors).
fn vr_qv(qvs: &[Vec<f32>], i: usize, s: &Searched) -> Vec<f32> {
    match qvs.get(i) {
        Some(qv) if s.index.has_vectors() => qv.clone(),
        _ => Vec::new(),
    }
}

/// Where the document of `key` ranks in `run`, at its best chunk.
fn doc_place(s: &Searched, run: &DocRun, key: u32) -> Option<DocPlace> {
    let pos = run.keys.iter().position(|&k| k == key)?;
    let (id, chunk_pos) = run.best[pos];
    let (fp, ci) = s.index.chunk_ref(id)?;
    let f = &s.chunking.files[fp];
    let chunk = f.chunks.get(ci)?;
    Some(DocPlace {
        rank: pos + 1,
        chunk_rank: chunk_pos + 1,
        file: s.engine.corpus.docs[f.doc].path.clone(),
        chunk: chunk.index as usize,
        tail: chunk.tail(s.window, s.engine.specials()).is_some(),
        at: (fp, ci),
    })
}

/// Where the query's answer lies in the first of `docs` that holds it.
fn answer_at(s: &Searched, docs: &[usize], q: &Judged) -> Option<Bucket> {
    let answer = q.answer.as_deref().filter(|a| !a.trim().is_empty())?;
    docs.iter().find_map(|&d| {
        let (start, end) = locate(&s.engine.corpus.docs[d].text, answer)?;
        let case = Case {
            line: 0,
            question: q.query.clone(),
            answer: answer.to_string(),
            doc: d,
            start,
            end,
        };
        Some(place(s.engine, s.chunking, &case, s.window).0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headline_k_is_always_measured() {
        assert_eq!(judged_ks(&[1, 3, 5, 10]), [1, 3, 5, 10]);
        assert_eq!(judged_ks(&[5, 1, 0]), [1, 5, 10]);
        assert_eq!(judged_ks(&[20]), [10, 20]);
    }
}
