//! Side-by-side retrieval over one chunking: BM25 and vectors on the same chunks, each hit placed at
//! the embed-token offset of its match and marked inside the window or in the tail.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::embed::{EmbedCache, Embedder};
use super::engine::{Chunking, Engine};
use super::index::ann::AnnBuild;
use super::index::bm25::{Bm25Doc, Bm25Error, Bm25Hit};
use super::index::{AnnIndex, AnnInfo, AnnParams, Bm25, VectorIndex};
use super::measure::MeasuredChunk;

mod approximate;
mod hits;
mod keys;
mod spans;
mod vectors;
use hits::HitMaker;
use keys::{bm25_doc, refs_and_keys};
use spans::best_sentence;
pub use spans::{sentence_span, term_spans};

/// Every failure of a search index is its BM25 side's (the vector side cannot fail; a query
/// vector that could not be made is reported in [`Results`], not as an error).
type Result<T> = std::result::Result<T, Bm25Error>;

/// One retrieved chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub rank: usize,
    pub score: f32,
    pub file: String,
    /// The stored chunk's id, for a store opened as the corpus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
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
    /// For paged documents (PDF): the first and last page the chunk lies on.
    pub page_start: Option<usize>,
    pub page_end: Option<usize>,
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
    /// BM25 and vector fused by reciprocal rank fusion (`rrf_k`), over their full rankings.
    pub hybrid: Vec<Hit>,
    pub rrf_k: usize,
    /// The embedder's backend and precision the vector column came from.
    pub embedder: String,
    /// Why the vector column is empty when the query could not be embedded (a server down, a
    /// failed forward pass); BM25 still answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_error: Option<String>,
    /// The chunk that should have been found, explained (`--expect`, the workbench's `x`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Box<crate::explain::WhyNot>>,
    /// Set when the vector column came from the approximate index (past
    /// `AnnParams::threshold` vectors): its measured recall@10 and the candidates rescored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate: Option<AnnInfo>,
}

/// Both indexes over one chunking. Inside the indexes a chunk is known by a key made of its file,
/// index, range and text, so a new chunking of a changed corpus updates them in place: chunks
/// whose key is gone are deleted, new keys are added, and the rest keep their BM25 entry and
/// their vector. Outside, a chunk is known by its id: its position in chunking order.
pub struct SearchIndex {
    /// (file position in the chunking, chunk index) for each id.
    refs: Vec<(usize, usize)>,
    /// Key of each id, and id of each key.
    keys: Vec<u64>,
    ids: HashMap<u64, u64>,
    bm25: Bm25,
    vectors: VectorIndex,
    dim: usize,
    /// Reciprocal rank fusion's constant for the hybrid ranking (60 as in Cormack et al. 2009).
    pub rrf_k: usize,
    /// The approximate index over `vectors` (used only while it describes them), and a build of
    /// one running in the background.
    ann: Option<AnnIndex>,
    ann_build: Option<AnnBuild>,
    /// When an approximate index is built and used (`threshold`), and how.
    pub ann_params: AnnParams,
    /// Whether the last vector search was answered by the approximate index.
    last_approximate: AtomicBool,
}

/// The usual constant of reciprocal rank fusion.
pub const RRF_K: usize = 60;

/// Reciprocal rank fusion of rankings (best first): each id scores the sum of 1 / (k + rank) over
/// the rankings it appears in; ties keep the order ids were first met in. Returns (id, score),
/// best first.
pub fn rrf(rankings: &[&[u64]], k: usize) -> Vec<(u64, f64)> {
    let mut score: HashMap<u64, f64> = HashMap::new();
    let mut first_seen: Vec<u64> = Vec::new();
    for ranking in rankings {
        for (i, &id) in ranking.iter().enumerate() {
            let s = score.entry(id).or_insert_with(|| {
                first_seen.push(id);
                0.0
            });
            *s += 1.0 / (k + i + 1) as f64;
        }
    }
    let mut fused: Vec<(u64, f64)> = first_seen.into_iter().map(|id| (id, score[&id])).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

/// What `SearchIndex::update` changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexChanges {
    pub added: usize,
    pub removed: usize,
    pub kept: usize,
}

/// A BM25 index of every chunk of `chunking` (`refs` and `keys` in chunking order); None when
/// `go_on()` (asked before each chunk; it may wait) said no before it was done.
fn bm25_of(
    engine: &Engine,
    chunking: &Chunking,
    (refs, keys): (&[(usize, usize)], &[u64]),
    go_on: &dyn Fn() -> bool,
) -> Result<Option<Bm25>> {
    let stopped = std::cell::Cell::new(false);
    let bm25 = Bm25::build(
        refs.iter()
            .zip(keys)
            .take_while(|_| {
                stopped.set(!go_on());
                !stopped.get()
            })
            .map(|(&r, &k)| bm25_doc(engine, chunking, r, k)),
    )?;
    Ok((!stopped.get()).then_some(bm25))
}

impl SearchIndex {
    /// Build both indexes; `vectors` holds one embedding per chunk in chunking order (the vector
    /// side stays empty when it is `None`, to be filled by `add_vectors`).
    pub fn build(
        engine: &Engine,
        chunking: &Chunking,
        vectors: Option<&[Vec<f32>]>,
        dim: usize,
    ) -> Result<SearchIndex> {
        let mut index = Self::build_unless(engine, chunking, dim, &|| true)?
            .expect("a build nobody stops finishes");
        if let Some(v) = vectors {
            index.set_vectors(v, dim);
        }
        Ok(index)
    }

    /// `build` without vectors, asking `go_on()` before each chunk (it may wait, to leave the
    /// cores to a chunking); None when it says no: a newer chunking is waiting, and half a BM25
    /// index of 400,000 chunks is seconds and tens of megabytes spent for nothing.
    pub fn build_unless(
        engine: &Engine,
        chunking: &Chunking,
        dim: usize,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Option<SearchIndex>> {
        let (refs, keys) = refs_and_keys(engine, chunking);
        let Some(bm25) = bm25_of(engine, chunking, (&refs, &keys), go_on)? else {
            return Ok(None);
        };
        let ids = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u64))
            .collect();
        Ok(Some(SearchIndex {
            refs,
            keys,
            ids,
            bm25,
            vectors: VectorIndex::new(dim),
            dim,
            rrf_k: RRF_K,
            ann: None,
            ann_build: None,
            ann_params: AnnParams::default(),
            last_approximate: AtomicBool::new(false),
        }))
    }

    /// Move the index to a new chunking of the same (possibly changed) corpus: delete the chunks
    /// that are gone, add the new ones to BM25; vectors of kept chunks stay, new chunks have none
    /// until `add_vectors` (see `missing_vectors`).
    pub fn update(&mut self, engine: &Engine, chunking: &Chunking) -> Result<IndexChanges> {
        Ok(self
            .move_to(engine, chunking, &|| true)?
            .expect("an update nobody stops finishes"))
    }

    /// `update` asking `go_on()` before each chunk of a fresh BM25 index (most chunks changed;
    /// it may wait): when it says no, None, the index gone with its half-built BM25 side (a
    /// newer chunking builds its own; vectors come back from the embedding cache).
    pub fn update_unless(
        mut self,
        engine: &Engine,
        chunking: &Chunking,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Option<(SearchIndex, IndexChanges)>> {
        Ok(self.move_to(engine, chunking, go_on)?.map(|c| (self, c)))
    }

    /// `update`'s work; None when `go_on` cut a fresh BM25 build short, which leaves `self`
    /// half-moved: only `update_unless`, which drops it then, passes a `go_on` that can say no.
    fn move_to(
        &mut self,
        engine: &Engine,
        chunking: &Chunking,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Option<IndexChanges>> {
        let (refs, keys) = refs_and_keys(engine, chunking);
        let new: HashMap<u64, u64> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u64))
            .collect();
        let removed: Vec<u64> = self
            .keys
            .iter()
            .copied()
            .filter(|k| !new.contains_key(k))
            .collect();
        let added: Vec<usize> = (0..keys.len())
            .filter(|&i| !self.ids.contains_key(&keys[i]))
            .collect();
        if removed.len() * 2 > self.keys.len() {
            // Most chunks changed (a knob turned): a fresh index. Deleted documents stay in
            // tantivy's segments until a merge, so deleting them one by one kept every earlier
            // chunking's postings alive; the old index goes before the new one is built.
            self.bm25 = Bm25::build(std::iter::empty::<Bm25Doc>())?;
            // The old chunking's places are not read again (a failed build drops the index).
            self.refs = Vec::new();
            self.ids = HashMap::new();
            match bm25_of(engine, chunking, (&refs, &keys), go_on)? {
                Some(bm25) => self.bm25 = bm25,
                None => return Ok(None),
            }
        } else {
            self.bm25.update(
                &removed,
                added
                    .iter()
                    .map(|&i| bm25_doc(engine, chunking, refs[i], keys[i])),
            )?;
        }
        self.vectors.remove(&removed.iter().copied().collect());
        self.drop_stale_ann();
        let changes = IndexChanges {
            added: added.len(),
            removed: removed.len(),
            kept: keys.len() - added.len(),
        };
        self.refs = refs;
        self.keys = keys;
        self.ids = new;
        Ok(Some(changes))
    }

    /// The chunk keys in BM25 and in the vector index, sorted: what a fresh build must equal.
    pub fn contents(&self) -> Result<(Vec<u64>, Vec<u64>)> {
        let mut bm = self.bm25.ids()?;
        bm.sort_unstable();
        let mut vs = self.vectors.ids().to_vec();
        vs.sort_unstable();
        Ok((bm, vs))
    }

    /// BM25 documents held in memory, deleted ones not yet merged away included.
    pub fn bm25_held(&self) -> u64 {
        self.bm25.held()
    }

    /// Every chunk id ranked by BM25 for `query` (chunks without a matching term are left out).
    pub fn bm25_ranking(&self, query: &str) -> Result<Vec<u64>> {
        Ok(self
            .bm25_scored(query)?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// Every chunk that matches `query`, with its BM25 score, best first.
    pub fn bm25_scored(&self, query: &str) -> Result<Vec<(u64, f32)>> {
        Ok(self
            .bm25
            .search(query, self.refs.len(), |_| None)?
            .into_iter()
            .filter_map(|h| Some((*self.ids.get(&h.id)?, h.score)))
            .collect())
    }

    /// (file position, chunk index) of an id.
    pub fn chunk_ref(&self, id: u64) -> Option<(usize, usize)> {
        self.refs.get(id as usize).copied()
    }

    /// The id of (file position, chunk index).
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
        let hits = HitMaker {
            index: self,
            engine,
            chunking,
            window,
        };
        // In parent mode several children may share a parent: look deeper, keep k parents.
        let depth = if chunking.settings.parents {
            k.saturating_mul(8)
        } else {
            k
        };
        let bm = self.bm25_top(engine, chunking, query, depth)?;
        let (qv, vector_error) =
            match crate::explain::query_vector(self, embedder, cache, query, window) {
                Ok(v) => (v, None),
                Err(e) => (Vec::new(), Some(format!("vector search failed: {e}"))),
            };
        let (vec_hits, approximate) = if qv.is_empty() {
            (Vec::new(), None)
        } else {
            self.vector_top(&qv, depth)
        };
        let fused = self.fused_top(&hits, query, &qv, k)?;
        let mut bm = hits.one_per_parent(bm, |h| h.id);
        let mut vec_hits = hits.one_per_parent(vec_hits, |h| h.0);
        bm.truncate(k);
        vec_hits.truncate(k);
        let bm_ids: HashSet<_> = bm.iter().map(|h| hits.same(h.id)).collect();
        let vec_ids: HashSet<_> = vec_hits.iter().map(|h| hits.same(h.0)).collect();
        // The match of a vector hit: its sentence nearest the query.
        let mut best = |id: u64| {
            self.chunk(engine, chunking, id)
                .and_then(|(_, c, doc)| best_sentence(embedder, cache, c.text(doc), &qv, window))
        };
        let bm25 = (bm.iter().enumerate())
            .filter_map(|(i, h)| {
                let only_here = !vec_ids.contains(&hits.same(h.id));
                hits.hit(i + 1, h.id, h.score, h.first_match, only_here)
            })
            .collect();
        let vector = (vec_hits.iter().enumerate())
            .filter_map(|(i, &(id, score))| {
                let only_here = !bm_ids.contains(&hits.same(id));
                hits.hit(i + 1, id, score, best(id), only_here)
            })
            .collect();
        let hybrid = (fused.iter().enumerate())
            .filter_map(|(i, &(id, score))| {
                // The match: BM25's first term when it has one, else the best sentence.
                let first_term = bm.iter().find(|h| h.id == id).and_then(|h| h.first_match);
                let at = first_term.or_else(|| best(id));
                hits.hit(i + 1, id, score as f32, at, false)
            })
            .collect();
        Ok(Results {
            query: query.to_string(),
            k,
            window,
            bm25,
            vector,
            hybrid,
            rrf_k: self.rrf_k,
            embedder: embedder.backend_name(),
            vector_error,
            expect: None,
            approximate,
        })
    }

    /// BM25's top `depth`, its hits carrying chunk ids (the index answers with chunk keys).
    fn bm25_top(
        &self,
        engine: &Engine,
        chunking: &Chunking,
        query: &str,
        depth: usize,
    ) -> Result<Vec<Bm25Hit>> {
        let mut bm = self.bm25.search(query, depth, |key| {
            let id = *self.ids.get(&key)?;
            self.chunk(engine, chunking, id)
                .map(|(_, c, doc)| c.text(doc))
        })?;
        bm.retain_mut(|h| match self.ids.get(&h.id) {
            Some(&id) => {
                h.id = id;
                true
            }
            None => false,
        });
        Ok(bm)
    }

    /// Hybrid: the full rankings fused, so a chunk ranked below k by both can still rise.
    fn fused_top(
        &self,
        hits: &HitMaker,
        query: &str,
        qv: &[f32],
        k: usize,
    ) -> Result<Vec<(u64, f64)>> {
        let full_bm = hits.one_per_parent(self.bm25_ranking(query)?, |&id| id);
        let full_vec = if qv.is_empty() {
            Vec::new()
        } else {
            hits.one_per_parent(self.vector_ranking(qv), |&id| id)
        };
        let mut fused = rrf(&[&full_bm, &full_vec], self.rrf_k);
        fused.truncate(k);
        Ok(fused)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let fused = super::rrf(&[&[1, 2, 3], &[3, 4, 1]], 60);
        let ids: Vec<u64> = fused.iter().map(|f| f.0).collect();
        // 1: 1/61 + 1/63, 3: 1/63 + 1/61 (a tie, first met order), 2: 1/62, 4: 1/62.
        assert_eq!(ids, [1, 3, 2, 4]);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
    }

    #[test]
    fn term_and_sentence_spans() {
        let text = "Rotate the keys. Keys rotate every 90 days; ROTATE-KEYS is the runbook.";
        let spans = super::term_spans(text, "rotate KEYS");
        let words: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
        assert_eq!(
            words,
            ["Rotate", "keys", "Keys", "rotate", "ROTATE", "KEYS"]
        );
        let (a, b) = super::sentence_span(text, 20).unwrap();
        assert_eq!(
            &text[a..b],
            "Keys rotate every 90 days; ROTATE-KEYS is the runbook."
        );
    }
}
