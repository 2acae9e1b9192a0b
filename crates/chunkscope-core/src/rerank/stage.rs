//! The reranking stage: the first stage's best chunks (BM25 and vectors, `candidates` of each,
//! their union) scored as pairs with the query, best first. A passage longer than the reranker's
//! pair window is scored on its head only: a match past the cut cannot lift it, and its hit says
//! so (`in_tail`).

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use super::Reranker;
use crate::engine::{Chunking, Engine};
use crate::search::{term_spans, Hit, SearchIndex};

/// The first stage's depth reranked by default (`[rerank] candidates`).
pub const CANDIDATES: usize = 50;

/// How a reranked column was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankInfo {
    /// The reranker's folder.
    pub model: String,
    /// Its pair window: query and passage together, specials included.
    pub window: usize,
    /// Distinct chunks scored (the union of BM25's and the vectors' top `candidates`).
    pub candidates: usize,
    /// Of those, how many were cut by the pair window.
    pub truncated: usize,
    /// Time spent scoring, for this query.
    pub millis: f64,
}

/// Rerank the union of BM25's and the vectors' (`qv`, empty for none) top `candidates` for
/// `query`; the best `k`, each hit's score the reranker's.
#[allow(clippy::too_many_arguments)]
pub fn rerank(
    reranker: &Reranker,
    index: &SearchIndex,
    (engine, chunking): (&Engine, &Chunking),
    query: &str,
    qv: &[f32],
    candidates: usize,
    k: usize,
) -> anyhow::Result<(Vec<Hit>, RerankInfo)> {
    let started = Instant::now();
    let mut seen = HashSet::new();
    let mut ids: Vec<u64> = Vec::new();
    let vector = if qv.is_empty() {
        Vec::new()
    } else {
        index.vector_ranking(qv)
    };
    for ranking in [index.bm25_ranking(query)?, vector] {
        ids.extend(
            ranking
                .into_iter()
                .take(candidates)
                .filter(|id| seen.insert(*id)),
        );
    }
    // Each candidate's file position, chunk index and text.
    let texts: Vec<(u64, usize, usize, &str)> = ids
        .iter()
        .filter_map(|&id| {
            let (fp, c) = index.chunk_ref(id)?;
            let f = chunking.files.get(fp)?;
            let chunk = f.chunks.get(c)?;
            Some((id, fp, c, chunk.text(&engine.corpus.docs[f.doc].text)))
        })
        .collect();
    let passages: Vec<&str> = texts.iter().map(|t| t.3).collect();
    let scores = reranker.score(query, &passages);
    let cuts: Vec<Option<usize>> = passages
        .iter()
        .map(|p| reranker.pair_tail(query, p))
        .collect();
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let hits = order
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, &i)| {
            let (_, fp, c, text) = texts[i];
            let f = &chunking.files[fp];
            let chunk = &f.chunks[c];
            let doc = &engine.corpus.docs[f.doc];
            let first = term_spans(text, query).first().map(|s| s.0);
            let pages = doc.page_span(chunk.chunk.start, chunk.chunk.end);
            Hit {
                rank: rank + 1,
                score: scores[i],
                file: doc.path.clone(),
                id: None,
                file_pos: fp,
                chunk: c,
                heading: chunk.chunk.heading.clone(),
                match_byte: first,
                token_offset: None,
                // The query's first term lies past the pair window's cut: the reranker never
                // read it.
                in_tail: matches!((first, cuts[i]), (Some(m), Some(cut)) if m >= cut),
                only_here: false,
                parent: None,
                page_start: pages.map(|p| p.0),
                page_end: pages.map(|p| p.1),
            }
        })
        .collect();
    let info = RerankInfo {
        model: reranker.dir().display().to_string(),
        window: reranker.pair_window(),
        candidates: texts.len(),
        truncated: cuts.iter().filter(|c| c.is_some()).count(),
        millis,
    };
    Ok((hits, info))
}
