//! The one way texts become cached vectors: through the cache, in slices, the cache saved every
//! few seconds as vectors arrive and when a run fails. The workbench's worker and every headless
//! command drive embedding with it.

use std::collections::HashSet;
use std::time::Instant;

use super::cache::{key, SAVE_EVERY_SECS};
use super::{EmbedCache, EmbedError, Embedder};

/// Texts embedded between two looks at the caller (its requests, its cancel flag).
pub const SLICE: usize = 64;

/// Embed `texts` at `window`, taking what the cache has and embedding only the rest (each
/// distinct text once). `progress(done, total)` is called between passes and may stop the run by
/// returning false. Returns the vectors in the order of `texts` and how many were embedded. On a
/// failure the vectors that were made are put in the cache before the error is returned.
pub fn embed_cached(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    texts: &[&str],
    window: usize,
    progress: impl FnMut(usize, usize) -> bool,
) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
    embed_cached_pausing(embedder, cache, texts, window, progress, &|| true)
}

/// `embed_cached`, calling `pause()` before each layer (`Embedder::embed_pausing`); a pause
/// that answers false gives the run up (`EmbedError::Cancelled`, the passes done before it
/// unsaved).
pub fn embed_cached_pausing(
    embedder: &Embedder,
    cache: &mut EmbedCache,
    texts: &[&str],
    window: usize,
    mut progress: impl FnMut(usize, usize) -> bool,
    pause: &dyn Fn() -> bool,
) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
    let keys: Vec<u128> = texts
        .iter()
        .map(|t| key(&embedder.model_key, window, t))
        .collect();
    let mut missing: Vec<usize> = Vec::new();
    let mut seen = HashSet::new();
    for (i, k) in keys.iter().enumerate() {
        if !cache.contains(*k) && seen.insert(*k) {
            missing.push(i);
        }
    }
    let total = missing.len();
    if total > 0 {
        let todo: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let done = embedder
            .embed_pausing(&todo, window, |done| progress(done, total), pause)
            .ok_or(EmbedError::Cancelled)?;
        // The cache takes only vectors of the model's width: a failed text's empty one is left.
        for (&i, v) in missing.iter().zip(done.vectors) {
            cache.insert(keys[i], &v);
        }
        if let Some(e) = done.error {
            return Err(e);
        }
    }
    let out = keys
        .iter()
        .map(|k| cache.get(*k).unwrap_or_default())
        .collect();
    Ok((out, total))
}

/// One bulk embedding run: the slice size for the embedder, what was embedded so far, and when
/// the cache was last written.
pub struct Driver {
    slice: usize,
    saved: Instant,
    /// Texts embedded by this run (the others came from the cache).
    pub embedded: usize,
    /// Why the cache file could not be written, the last time it could not.
    pub unsaved: Option<String>,
}

impl Driver {
    pub fn new(embedder: &Embedder) -> Driver {
        // A server gets enough texts per slice to keep every request slot busy.
        let slice = embedder.remote().map_or(SLICE, |r| {
            SLICE.max(r.config.batch * r.config.in_flight * 2)
        });
        Driver {
            slice,
            saved: Instant::now(),
            embedded: 0,
            unsaved: None,
        }
    }

    /// How many texts to hand `run` at a time.
    pub fn slice(&self) -> usize {
        self.slice
    }

    /// Embed one slice through the cache (`progress(done)` as in `embed_cached`). New vectors
    /// are saved every few seconds; when the run fails, what arrived is saved before the
    /// error is returned, so a rerun embeds only the rest.
    pub fn run(
        &mut self,
        embedder: &Embedder,
        cache: &mut EmbedCache,
        texts: &[&str],
        window: usize,
        mut progress: impl FnMut(usize) -> bool,
        pause: &dyn Fn() -> bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        match embed_cached_pausing(embedder, cache, texts, window, |d, _| progress(d), pause) {
            Ok((vectors, new)) => {
                self.embedded += new;
                if self.saved.elapsed().as_secs() >= SAVE_EVERY_SECS {
                    self.save(cache);
                }
                Ok(vectors)
            }
            Err(e) => {
                if e != EmbedError::Cancelled {
                    self.save(cache);
                }
                Err(e)
            }
        }
    }

    /// Append what was added to the cache file (nothing when nothing was).
    pub fn save(&mut self, cache: &mut EmbedCache) {
        self.saved = Instant::now();
        if let Err(e) = cache.save() {
            log::warn!("embedding cache not saved: {e}");
            self.unsaved = Some(e.to_string());
        }
    }
}
