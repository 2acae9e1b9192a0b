//! Sentence embeddings for Max-Min chunking: every distinct sentence of the corpus embedded once,
//! kept on disk (a cache file of its own) and, for the sentences of the corpus at hand, in memory,
//! so that turning a threshold or the maximum size re-chunks from stored vectors without
//! embedding anything.

use std::collections::HashSet;

use super::chunk::maxmin::sentence_text;
use super::chunk::{ChunkSettings, SentenceVectors};
use super::embed::cache::{default_path, key, SAVE_EVERY_SECS};
use super::embed::{EmbedCache, EmbedError, Embedder};
use super::engine::{parallel_map, Engine};
use super::tokenize::Unit;
use super::window::WindowSpec;

pub struct SentenceStore {
    /// The disk file; None for a store that lives as long as the process.
    cache: Option<EmbedCache>,
    /// The vectors Max-Min reads in its inner loop, in memory: those of the sentences asked for
    /// (`missing`, `fill`), not every one the cache file holds.
    loaded: EmbedCache,
    model_key: String,
    /// (engine id, unit, size) whose sentences all have vectors: a threshold turn on the same
    /// corpus and sizes skips the search for missing sentences.
    complete: Option<(u64, Unit, usize)>,
    /// Sentences are embedded at the model's own sentence-transformers window, whatever window
    /// the chunks are measured against, so a window change does not re-chunk.
    pub window: usize,
}

impl SentenceStore {
    /// The store of `engine`'s model, kept in the cache directory between runs.
    pub fn on_disk(engine: &Engine, dim: usize) -> SentenceStore {
        let path = default_path(&format!(
            "{}+sentences",
            super::embed::model_key(&engine.model)
        ));
        SentenceStore::with_cache(engine, Some(EmbedCache::open(&path, dim)), dim)
    }

    /// A store that lives as long as the process (benchmarks and tests).
    pub fn in_memory(engine: &Engine, dim: usize) -> SentenceStore {
        SentenceStore::with_cache(engine, None, dim)
    }

    fn with_cache(engine: &Engine, cache: Option<EmbedCache>, dim: usize) -> SentenceStore {
        SentenceStore {
            cache,
            loaded: EmbedCache::in_memory(dim),
            model_key: super::embed::model_key(&engine.model),
            complete: None,
            window: engine.model.windows.resolve(WindowSpec::St).tokens,
        }
    }

    /// Sentences with a vector: in the cache file, or in memory for a store without one.
    pub fn len(&self) -> usize {
        self.cache.as_ref().unwrap_or(&self.loaded).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distinct sentences that `settings` would split the corpus into, in corpus order.
    pub fn sentences_of(engine: &Engine, settings: &ChunkSettings) -> Vec<String> {
        let ids: Vec<usize> = (0..engine.corpus.docs.len()).collect();
        let per_doc = parallel_map(&ids, |&d| {
            let text = engine.corpus.docs[d].text.as_str();
            engine
                .sentence_spans(d, settings.unit, settings.size)
                .iter()
                .map(|&(s, e)| sentence_text(text, (s as usize, e as usize)).to_string())
                .collect::<Vec<_>>()
        });
        let mut seen = HashSet::new();
        per_doc
            .into_iter()
            .flatten()
            .filter(|s| seen.insert(s.clone()))
            .collect()
    }

    /// The sentences of `settings`' chunking that have no vector yet; those the cache file holds
    /// are brought into memory.
    pub fn missing(&mut self, engine: &Engine, settings: &ChunkSettings) -> Vec<String> {
        Self::sentences_of(engine, settings)
            .into_iter()
            .filter(|s| {
                let k = key(&self.model_key, self.window, s);
                if self.loaded.contains(k) {
                    return false;
                }
                match self.cache.as_ref().and_then(|c| c.get(k)) {
                    Some(v) => {
                        self.loaded.insert(k, &v);
                        false
                    }
                    None => true,
                }
            })
            .collect()
    }

    /// Embed `texts` in slices of `slice`; `go(done, total)` is asked between slices and stops the
    /// run by returning false (what was embedded stays). Returns how many were embedded, or why
    /// a slice failed (the slices before it stay).
    pub fn fill(
        &mut self,
        embedder: &Embedder,
        texts: &[String],
        slice: usize,
        mut go: impl FnMut(usize, usize) -> bool,
    ) -> Result<usize, EmbedError> {
        let total = texts.len();
        let mut done = 0;
        let mut saved = std::time::Instant::now();
        for part in texts.chunks(slice.max(1)) {
            if !go(done, total) {
                break;
            }
            let refs: Vec<&str> = part.iter().map(String::as_str).collect();
            for (t, v) in part.iter().zip(embedder.embed(&refs, self.window)?) {
                let k = key(&self.model_key, self.window, t);
                if let Some(c) = self.cache.as_mut() {
                    c.insert(k, &v);
                }
                self.loaded.insert(k, &v);
            }
            done += part.len();
            // A first Max-Min run over a large corpus embeds for minutes: what it made is kept
            // if the workbench is closed half way.
            if saved.elapsed().as_secs() >= SAVE_EVERY_SECS {
                self.save();
                saved = std::time::Instant::now();
            }
        }
        go(done, total);
        Ok(done)
    }

    /// Max-Min's one preparation, for the pipeline, the headless commands and the benchmarks:
    /// embed the sentences of `settings`' chunking that have no vector yet, in slices of 64, and
    /// save what was added. `go(done, total)` is asked between slices (only when something is
    /// missing) and stops the run by returning false. Returns (embedded, missing): all missing
    /// sentences have vectors when the two are equal. Once an engine's sentences are complete
    /// for a unit and size, asking again costs nothing. A failed slice is an error (what came
    /// before it is saved).
    pub fn embed_missing(
        &mut self,
        engine: &Engine,
        settings: &ChunkSettings,
        embedder: &Embedder,
        go: impl FnMut(usize, usize) -> bool,
    ) -> Result<(usize, usize), EmbedError> {
        let marker = (engine.id, settings.unit, settings.size);
        if self.complete == Some(marker) {
            return Ok((0, 0));
        }
        let missing = self.missing(engine, settings);
        let done = if missing.is_empty() {
            0
        } else {
            let done = self.fill(embedder, &missing, 64, go);
            self.save();
            done?
        };
        if done == missing.len() {
            self.complete = Some(marker);
        }
        Ok((done, missing.len()))
    }

    /// Append to the disk file what was added (nothing when nothing was).
    pub fn save(&mut self) {
        if let Err(e) = self.cache.as_mut().map_or(Ok(()), EmbedCache::save) {
            log::warn!("sentence embedding cache not saved: {e}");
        }
    }
}

impl SentenceVectors for SentenceStore {
    fn vector(&self, sentence: &str) -> Option<&[f32]> {
        self.loaded
            .held(key(&self.model_key, self.window, sentence))
    }
}
