//! The reranking stage: the first stage's best chunks (BM25 and vectors, `candidates` of each,
//! their union) scored as pairs with the query, best first. A passage longer than the reranker's
//! pair window is scored on its head only: a match past the cut cannot lift it, and its hit says
//! so (`in_tail`).

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use std::path::Path;

use super::{RerankError, Reranker};
use crate::embed::lowp::Precision;
use crate::embed::{EmbedCache, Embedder};
use crate::engine::{Chunking, Engine};
use crate::index::bm25::Bm25Error;
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

/// A reranker with how deep it reads into each first-stage ranking (`[rerank] candidates`).
#[derive(Clone, Copy)]
pub struct Stage<'a> {
    pub reranker: &'a Reranker,
    pub candidates: usize,
}

/// The reranker's column of one query: its hits, best first, and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reranked {
    pub hits: Vec<Hit>,
    pub info: RerankInfo,
}

/// The candidates reranked: chunk ids, best first, with their scores and whether the pair window
/// cut each one (the position in the chunk's text where the reranker stopped reading).
pub struct Scored {
    pub ids: Vec<u64>,
    pub scores: Vec<f32>,
    pub cuts: Vec<Option<usize>>,
    /// Distinct chunks scored.
    pub candidates: usize,
}

/// Score the union of BM25's and the vectors' (`qv`, empty for none) top `stage.candidates` for
/// `query`, best first.
pub fn score(
    stage: Stage,
    index: &SearchIndex,
    (engine, chunking): (&Engine, &Chunking),
    query: &str,
    qv: &[f32],
) -> Result<Scored, Bm25Error> {
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
                .take(stage.candidates)
                .filter(|id| seen.insert(*id)),
        );
    }
    let texts: Vec<(u64, &str)> = ids
        .iter()
        .filter_map(|&id| Some((id, chunk_text(index, (engine, chunking), id)?)))
        .collect();
    let passages: Vec<&str> = texts.iter().map(|t| t.1).collect();
    let scores = stage.reranker.score(query, &passages);
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    Ok(Scored {
        ids: order.iter().map(|&i| texts[i].0).collect(),
        cuts: order
            .iter()
            .map(|&i| stage.reranker.pair_tail(query, passages[i]))
            .collect(),
        scores: order.iter().map(|&i| scores[i]).collect(),
        candidates: texts.len(),
    })
}

/// A chunk's text by its id.
fn chunk_text<'a>(
    index: &SearchIndex,
    (engine, chunking): (&'a Engine, &'a Chunking),
    id: u64,
) -> Option<&'a str> {
    let (fp, c) = index.chunk_ref(id)?;
    let f = chunking.files.get(fp)?;
    let chunk = f.chunks.get(c)?;
    Some(chunk.text(&engine.corpus.docs[f.doc].text))
}

/// Rerank the first stage for `query` (`qv` its vector, empty for none): the best `k`, each
/// hit's score the reranker's.
pub fn rerank(
    stage: Stage,
    index: &SearchIndex,
    (engine, chunking): (&Engine, &Chunking),
    query: &str,
    qv: &[f32],
    k: usize,
) -> Result<Reranked, Bm25Error> {
    let started = Instant::now();
    let scored = score(stage, index, (engine, chunking), query, qv)?;
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let hits = scored
        .ids
        .iter()
        .take(k)
        .enumerate()
        .filter_map(|(rank, &id)| {
            let (fp, c) = index.chunk_ref(id)?;
            let f = &chunking.files[fp];
            let chunk = &f.chunks[c];
            let doc = &engine.corpus.docs[f.doc];
            let text = chunk.text(&doc.text);
            let first = term_spans(text, query).first().map(|s| s.0);
            let pages = doc.page_span(chunk.start(), chunk.end());
            Some(Hit {
                rank: rank + 1,
                score: scored.scores[rank],
                file: doc.path.clone(),
                id: None,
                file_pos: fp,
                chunk: c,
                heading: chunk.heading().map(str::to_owned),
                match_byte: first,
                token_offset: None,
                // The query's first term lies past the pair window's cut: the reranker never
                // read it.
                in_tail: matches!((first, scored.cuts[rank]), (Some(m), Some(cut)) if m >= cut),
                only_here: false,
                parent: None,
                page_start: pages.map(|p| p.0),
                page_end: pages.map(|p| p.1),
            })
        })
        .collect();
    let info = RerankInfo {
        model: stage.reranker.dir().display().to_string(),
        window: stage.reranker.pair_window(),
        candidates: scored.candidates,
        truncated: scored.cuts.iter().filter(|c| c.is_some()).count(),
        millis,
    };
    Ok(Reranked { hits, info })
}

/// [`rerank`] for a query the first stage answered: its vector embedded (through the cache) as
/// the vector column's was; a query that could not be embedded reranks BM25's candidates alone.
#[allow(clippy::too_many_arguments)]
pub fn rerank_query(
    stage: Stage,
    index: &SearchIndex,
    searched: (&Engine, &Chunking),
    embedder: &Embedder,
    cache: &mut EmbedCache,
    query: &str,
    window: usize,
    k: usize,
) -> Result<Reranked, Bm25Error> {
    let qv =
        crate::explain::query_vector(index, embedder, cache, query, window).unwrap_or_default();
    rerank(stage, index, searched, query, &qv, k)
}

/// The reranker `[rerank] model` names, loaded in `precision`: a CrossEncoder folder, or a hub
/// id found as the embedder's are (the Hugging Face hub cache, else a download).
pub fn open(model: &str, precision: Precision) -> Result<Reranker, RerankError> {
    let dir = Path::new(model);
    if dir.is_dir() {
        return Reranker::load(dir, precision);
    }
    let looks_like_path = dir.exists() || model.starts_with('.') || model.starts_with('/');
    if looks_like_path || !model.contains('/') {
        return Err(RerankError::File {
            path: dir.to_path_buf(),
            why: "not a folder (a CrossEncoder folder as sentence-transformers saves it: \
                  config.json, model.safetensors, tokenizer.json; or a hub id such as \
                  cross-encoder/ms-marco-MiniLM-L6-v2)"
                .into(),
        });
    }
    let info = crate::model::locate(model, &mut |line| log::info!("{line}"))
        .map_err(|e| RerankError::NotFound(format!("rerank model {model}: {e}")))?;
    Reranker::load(&info.dir, precision)
}
