//! Side-by-side retrieval over one chunking: BM25 and vectors on the same chunks, each hit placed at
//! the embed-token offset of its match and marked inside the window or in the tail.

use std::collections::HashSet;

use anyhow::Result;
use serde::Serialize;

use super::embed::cache::key;
use super::embed::{EmbedCache, Embedder};
use super::engine::{Chunking, Engine};
use super::index::{Bm25, VectorIndex};
use super::measure::MeasuredChunk;

/// Embed `texts` at `window`, taking what the cache has and embedding only the rest.
/// `progress(done, total)` is called between passes and may stop the run by returning false.
pub fn embed_cached(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    texts: &[&str],
    window: usize,
    mut progress: impl FnMut(usize, usize) -> bool,
) -> Option<(Vec<Vec<f32>>, usize)> {
    let keys: Vec<u128> = texts
        .iter()
        .map(|t| key(&embedder.model_key, window, t))
        .collect();
    let mut missing: Vec<usize> = Vec::new();
    let mut seen = HashSet::new();
    for (i, k) in keys.iter().enumerate() {
        if cache.get(*k).is_none() && seen.insert(*k) {
            missing.push(i);
        }
    }
    let total = missing.len();
    if total > 0 {
        let todo: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let (vectors, _) = embedder.embed_with(&todo, window, |done| progress(done, total))?;
        for (&i, v) in missing.iter().zip(vectors) {
            cache.insert(keys[i], v);
        }
    }
    let out = keys
        .iter()
        .map(|k| cache.get(*k).cloned().unwrap_or_default())
        .collect();
    Some((out, total))
}

/// One retrieved chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub rank: usize,
    pub score: f32,
    pub file: String,
    /// Position of the file in the chunking, and the chunk's index in it.
    #[serde(skip)]
    pub file_pos: usize,
    pub chunk: usize,
    pub heading: Option<String>,
    /// Byte in the chunk text where the match starts (BM25: first matched term; vector: the
    /// best-matching sentence).
    pub match_byte: Option<usize>,
    /// Position of the match in the model's input ([CLS] = 0).
    pub token_offset: Option<usize>,
    /// True when the match lies past the window, where the embedder never reads.
    pub in_tail: bool,
    /// True when the other retriever did not return this chunk (or, in parent mode, this
    /// parent) in its top k.
    pub only_here: bool,
    /// Embed small, return big: the section this hit returns.
    pub parent: Option<ParentHit>,
}

/// The parent section a hit returns, with its size in the generation budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParentHit {
    pub id: String,
    pub heading: Option<String>,
    pub start_byte: usize,
    pub end_byte: usize,
    pub chars: usize,
    pub cl100k_tokens: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Results {
    pub query: String,
    pub k: usize,
    pub window: usize,
    pub bm25: Vec<Hit>,
    pub vector: Vec<Hit>,
}

/// Both indexes over one chunking.
pub struct SearchIndex {
    /// (file position in the chunking, chunk index) for each id.
    refs: Vec<(usize, usize)>,
    bm25: Bm25,
    vectors: VectorIndex,
}

impl SearchIndex {
    /// Build both indexes; `vectors` holds one embedding per chunk in chunking order (the vector
    /// side stays empty when it is `None`, to be filled by `set_vectors`).
    pub fn build(
        engine: &Engine,
        chunking: &Chunking,
        vectors: Option<&[Vec<f32>]>,
        dim: usize,
    ) -> Result<SearchIndex> {
        let mut refs = Vec::new();
        for (fp, f) in chunking.files.iter().enumerate() {
            for c in 0..f.chunks.len() {
                refs.push((fp, c));
            }
        }
        let bm25 = Bm25::build(refs.iter().enumerate().map(|(id, &(fp, c))| {
            let f = &chunking.files[fp];
            let doc = &engine.corpus.docs[f.doc];
            let ch = &f.chunks[c];
            (
                id as u64,
                ch.text(&doc.text),
                doc.path.as_str(),
                ch.chunk.heading.as_deref().unwrap_or(""),
            )
        }))?;
        let mut index = SearchIndex {
            refs,
            bm25,
            vectors: VectorIndex::new(dim),
        };
        if let Some(v) = vectors {
            index.set_vectors(v, dim);
        }
        Ok(index)
    }

    /// Fill the vector side: one embedding per chunk in chunking order.
    pub fn set_vectors(&mut self, vectors: &[Vec<f32>], dim: usize) {
        let mut vix = VectorIndex::new(dim);
        for (id, v) in vectors.iter().enumerate() {
            if v.len() == dim {
                vix.push(id as u64, v);
            }
        }
        self.vectors = vix;
    }

    /// Every chunk id ranked by BM25 for `query` (chunks without a matching term are left out).
    pub fn bm25_ranking(&self, query: &str) -> Result<Vec<u64>> {
        Ok(self
            .bm25
            .search(query, self.refs.len(), |_| None)?
            .into_iter()
            .map(|h| h.id)
            .collect())
    }

    /// Every chunk id ranked by cosine to `qv`.
    pub fn vector_ranking(&self, qv: &[f32]) -> Vec<u64> {
        self.vectors
            .search(qv, self.refs.len())
            .into_iter()
            .map(|h| h.0)
            .collect()
    }

    /// (file position, chunk index) of an id.
    pub fn chunk_ref(&self, id: u64) -> Option<(usize, usize)> {
        self.refs.get(id as usize).copied()
    }

    pub fn has_vectors(&self) -> bool {
        !self.vectors.is_empty()
    }

    /// The chunk id of (file position, chunk index), as the indexes know it.
    pub fn id_of(&self, file_pos: usize, chunk: usize) -> Option<u64> {
        self.refs
            .iter()
            .position(|&r| r == (file_pos, chunk))
            .map(|i| i as u64)
    }

    pub fn len(&self) -> usize {
        self.refs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    fn chunk<'a>(
        &self,
        engine: &'a Engine,
        chunking: &'a Chunking,
        id: u64,
    ) -> Option<(&'a str, &'a MeasuredChunk, &'a str)> {
        let &(fp, c) = self.refs.get(id as usize)?;
        let f = &chunking.files[fp];
        let doc = &engine.corpus.docs[f.doc];
        Some((doc.path.as_str(), &f.chunks[c], doc.text.as_str()))
    }

    /// Search both ways. The query and the candidate sentences are embedded through the cache.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        engine: &Engine,
        chunking: &Chunking,
        embedder: &Embedder,
        cache: &mut EmbedCache,
        query: &str,
        k: usize,
        window: usize,
    ) -> Result<Results> {
        let specials = engine.specials();
        let parents = chunking.settings.parents;
        // In parent mode several children may share a parent: look deeper, keep k parents.
        let depth = if parents { k.saturating_mul(8) } else { k };
        let parent_of = |id: u64| -> Option<(usize, usize)> {
            let &(fp, c) = self.refs.get(id as usize)?;
            Some((fp, chunking.files[fp].chunks[c].parent?))
        };
        let mut bm = self.bm25.search(query, depth, |id| {
            self.chunk(engine, chunking, id)
                .map(|(_, c, doc)| c.text(doc))
        })?;
        let qv = if self.has_vectors() {
            embed_cached(embedder, cache, &[query], window, |_, _| true)
                .map(|(v, _)| v.into_iter().next().unwrap_or_default())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut vec_hits = if qv.is_empty() {
            Vec::new()
        } else {
            self.vectors.search(&qv, depth)
        };
        if parents {
            let mut seen = HashSet::new();
            bm.retain(|h| seen.insert(parent_of(h.id)));
            seen.clear();
            vec_hits.retain(|h| seen.insert(parent_of(h.0)));
        }
        bm.truncate(k);
        vec_hits.truncate(k);
        // What "the other retriever returned it too" compares: chunks, or parents in parent mode.
        let same = |id: u64| -> (Option<(usize, usize)>, u64) {
            if parents {
                (parent_of(id), 0)
            } else {
                (None, id)
            }
        };
        let bm_ids: HashSet<_> = bm.iter().map(|h| same(h.id)).collect();
        let vec_ids: HashSet<_> = vec_hits.iter().map(|h| same(h.0)).collect();
        let make = |rank: usize,
                    id: u64,
                    score: f32,
                    match_byte: Option<usize>,
                    only_here: bool|
         -> Option<Hit> {
            let &(fp, c) = self.refs.get(id as usize)?;
            let (path, chunk, _) = self.chunk(engine, chunking, id)?;
            let token = match_byte.map(|b| {
                chunk
                    .token_starts
                    .partition_point(|&s| s as usize <= b)
                    .saturating_sub(1)
            });
            let readable = chunk.readable(window, specials);
            let parent = chunk.parent.and_then(|p| {
                let p = chunking.files[fp].parents.get(p)?;
                let text = &engine.corpus.docs[chunking.files[fp].doc].text[p.start..p.end];
                Some(ParentHit {
                    id: p.id(path),
                    heading: p.heading.clone(),
                    start_byte: p.start,
                    end_byte: p.end,
                    chars: text.chars().count(),
                    cl100k_tokens: crate::core::tokenize::cl100k_count(text),
                })
            });
            Some(Hit {
                rank,
                score,
                file: path.to_string(),
                file_pos: fp,
                chunk: c,
                heading: chunk.chunk.heading.clone(),
                match_byte,
                token_offset: token.map(|t| chunk.input_position(t, specials)),
                in_tail: token.is_some_and(|t| t >= readable),
                only_here,
                parent,
            })
        };
        let bm25 = bm
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                make(
                    i + 1,
                    h.id,
                    h.score,
                    h.first_match,
                    !vec_ids.contains(&same(h.id)),
                )
            })
            .collect();
        let mut vector = Vec::new();
        for (i, &(id, score)) in vec_hits.iter().enumerate() {
            let best = self
                .chunk(engine, chunking, id)
                .and_then(|(_, c, doc)| best_sentence(embedder, cache, c.text(doc), &qv, window));
            if let Some(h) = make(i + 1, id, score, best, !bm_ids.contains(&same(id))) {
                vector.push(h);
            }
        }
        Ok(Results {
            query: query.to_string(),
            k,
            window,
            bm25,
            vector,
        })
    }
}

/// Byte ranges of the sentences of `text`: cut after . ! ? (and CJK full stops) followed by
/// whitespace, and at blank lines.
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        let cut = match prev {
            Some('.' | '!' | '?') => c.is_whitespace(),
            Some('。' | '！' | '？') => true,
            Some('\n') => c == '\n',
            _ => false,
        };
        if cut && i > start {
            out.push((start, i));
            start = i;
        }
        prev = Some(c);
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out.into_iter()
        .filter_map(|(a, b)| {
            let s = &text[a..b];
            let lead = s.len() - s.trim_start().len();
            let t = s.trim();
            (!t.is_empty()).then_some((a + lead, a + lead + t.len()))
        })
        .collect()
}

/// Start byte of the sentence of `text` closest to the query vector.
fn best_sentence(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    text: &str,
    qv: &[f32],
    window: usize,
) -> Option<usize> {
    let spans = sentences(text);
    let texts: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
    let (vs, _) = embed_cached(embedder, cache, &texts, window, |_, _| true)?;
    vs.iter()
        .zip(&spans)
        .map(|(v, &(a, _))| (v.iter().zip(qv).map(|(x, y)| x * y).sum::<f32>(), a))
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::sentences;

    #[test]
    fn splits_sentences() {
        let t = "One two. Three four? Five\n\nSix. 七八。九";
        let parts: Vec<&str> = sentences(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(
            parts,
            vec!["One two.", "Three four?", "Five", "Six.", "七八。", "九"]
        );
    }
}
