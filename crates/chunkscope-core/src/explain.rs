//! "Why not this chunk?": for a chunk that should have been found, where each retriever ranked it,
//! with what score against the last hit shown, and whether the query's terms or the expected
//! text lie in its invisible tail, where the embedder never reads.

use serde::Serialize;

use crate::engine::{Chunking, Engine};
use crate::search::{rrf, term_spans, Results, SearchIndex};

/// Why a chunk could not be explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The id names no chunk of the index.
    #[error("no chunk {id}")]
    NoChunk { id: u64 },
    #[error(transparent)]
    Index(#[from] crate::index::bm25::Bm25Error),
}

/// One retriever's view of the expected chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Place {
    pub retriever: &'static str,
    /// 1-based rank in the full ranking (`None`: not ranked at all, e.g. no BM25 term matched).
    pub rank: Option<usize>,
    pub score: Option<f32>,
    /// The score of the last hit shown (the k-th), the bar the chunk had to pass.
    pub last_shown_score: Option<f32>,
    pub shown: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhyNot {
    /// The chunk's id in the search index (chunking order), its file (or stored id) and index.
    #[serde(skip)]
    pub chunk_id: u64,
    pub file: String,
    pub chunk: usize,
    pub places: Vec<Place>,
    /// Byte in the chunk text where the tail begins (`None`: the window holds it all).
    pub tail_start: Option<usize>,
    /// The query's terms found in the chunk, split by where they lie.
    pub terms_in_window: Vec<String>,
    pub terms_in_tail: Vec<String>,
    /// Where the expected text starts in the chunk, and whether that is in the tail.
    pub expected_at: Option<usize>,
    pub expected_in_tail: Option<bool>,
    /// For a store: the stored vector's cosine to the one recomputed from the text its framework
    /// embedded (below 0.999 it differs: stale text, another model or a missing prefix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_vector_cos: Option<f32>,
}

/// The chunk an expectation names: by `file#index` or the file (stored id) itself, else the
/// first chunk whose text holds `text`.
pub fn find_chunk(
    engine: &Engine,
    chunking: &Chunking,
    id: Option<&str>,
    text: Option<&str>,
) -> Option<u64> {
    let mut n = 0u64;
    for f in &chunking.files {
        let doc = &engine.corpus.docs[f.doc];
        for c in f.chunks.iter() {
            let named = id.is_some_and(|id| {
                id == format!("{}#{}", doc.path, c.index) || (id == doc.path && f.chunks.len() == 1)
            });
            let holds = id.is_none() && text.is_some_and(|t| c.text(&doc.text).contains(t));
            if named || holds {
                return Some(n);
            }
            n += 1;
        }
    }
    None
}

/// The query's vector as the search embeds it (its query prompt, through the cache); empty when
/// the index has no vector side.
pub fn query_vector(
    index: &SearchIndex,
    embedder: &crate::embed::Embedder,
    cache: &mut crate::embed::EmbedCache,
    query: &str,
    window: usize,
) -> Result<Vec<f32>, crate::embed::EmbedError> {
    if !index.has_vectors() {
        return Ok(Vec::new());
    }
    let q = embedder.query_text(query);
    let (v, _) =
        crate::embed::driver::embed_cached(embedder, cache, &[q.as_ref()], window, |_, _| true)?;
    Ok(v.into_iter().next().unwrap_or_default())
}

/// Explain chunk `id` for the search that gave `results` (`qv`: the query's vector, empty when
/// there is no vector side).
pub fn why_not(
    index: &SearchIndex,
    engine: &Engine,
    chunking: &Chunking,
    results: &Results,
    qv: &[f32],
    id: u64,
    expected_text: Option<&str>,
) -> Result<WhyNot, ExplainError> {
    let (fp, ci) = index.chunk_ref(id).ok_or(ExplainError::NoChunk { id })?;
    let f = &chunking.files[fp];
    let doc = &engine.corpus.docs[f.doc];
    let chunk = &f.chunks[ci];
    let text = chunk.text(&doc.text);
    let bm = index.bm25_scored(&results.query)?;
    let vs = if qv.is_empty() {
        Vec::new()
    } else {
        index.vector_scored(qv)
    };
    let bm_ids: Vec<u64> = bm.iter().map(|h| h.0).collect();
    let vs_ids: Vec<u64> = vs.iter().map(|h| h.0).collect();
    let fused: Vec<(u64, f32)> = rrf(&[&bm_ids, &vs_ids], results.rrf_k)
        .into_iter()
        .map(|(i, s)| (i, s as f32))
        .collect();
    let place = |retriever, ranking: &[(u64, f32)], shown: &[crate::search::Hit]| {
        let at = ranking.iter().position(|h| h.0 == id);
        Place {
            retriever,
            rank: at.map(|r| r + 1),
            score: at.map(|r| ranking[r].1),
            last_shown_score: shown.last().map(|h| h.score),
            shown: shown.iter().any(|h| h.file_pos == fp && h.chunk == ci),
        }
    };
    let places = vec![
        place("bm25", &bm, &results.bm25),
        place("vector", &vs, &results.vector),
        place("hybrid", &fused, &results.hybrid),
    ];
    let tail = chunk.tail(results.window, engine.specials());
    let tail_start = tail.map(|t| t.start_byte);
    let in_tail = |at: usize| tail_start.is_some_and(|t| at >= t);
    let (mut terms_in_window, mut terms_in_tail) = (Vec::new(), Vec::new());
    for (a, b) in term_spans(text, &results.query) {
        let term = text[a..b].to_lowercase();
        let list = if in_tail(a) {
            &mut terms_in_tail
        } else {
            &mut terms_in_window
        };
        if !list.contains(&term) {
            list.push(term);
        }
    }
    let expected_at = expected_text.and_then(|t| text.find(t));
    Ok(WhyNot {
        chunk_id: id,
        file: doc.path.clone(),
        chunk: chunk.index as usize,
        places,
        tail_start,
        terms_in_window,
        terms_in_tail,
        expected_at,
        expected_in_tail: expected_at.map(in_tail),
        stored_vector_cos: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_kind() {
        let e = ExplainError::NoChunk { id: 7 };
        assert_eq!(e.to_string(), "no chunk 7");
        let index: crate::index::bm25::Bm25Error =
            tantivy::TantivyError::InvalidArgument("x".into()).into();
        assert!(matches!(ExplainError::from(index), ExplainError::Index(_)));
    }
}
