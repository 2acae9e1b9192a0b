//! `--store URI`: the commands over what a RAG system stored instead of a folder. The store is
//! read (with progress), measured as one chunk per stored chunk with the framework's header and
//! the model's prompt ahead of it, and checked: duplicates, empty chunks, stored vectors against
//! vectors recomputed from the reconstructed text.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::json;

use chunkscope_core::config::Config;
use chunkscope_core::embed::{cache, EmbedCache, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::model;
use chunkscope_core::search::SearchIndex;
use chunkscope_core::store::check::{self, VectorCheck, AGREE};
use chunkscope_core::store::{self, Store};
use chunkscope_core::tokenize::EmbedTokenizer;
use chunkscope_core::window::{Window, WindowSpec};

use super::knobs::Knobs;
use super::prepare::{chunk_vectors, say, window_for};

/// From this many chunks on, the steps after the read say what they do (each takes seconds).
const BIG: usize = 100_000;

/// A store read, measured and checked for duplicates.
pub(crate) struct Opened {
    pub config: Config,
    pub engine: Engine,
    pub window: Window,
    pub chunking: Chunking,
    pub store: Store,
    pub duplicate_of: Vec<Option<usize>>,
}

/// The store `--store` or `[store] uri` names, if any.
pub(crate) fn wanted(knobs: &Knobs, corpus: Option<&Path>) -> Result<Option<Config>> {
    let config = knobs.config(corpus)?;
    Ok(config.store.uri.is_some().then_some(config))
}

/// Read the store of `config` and measure it with the model's tokenizer.
pub(crate) fn open(config: Config) -> Result<Opened> {
    let uri = config.store.uri.clone().context("no store")?;
    let mut last = std::time::Instant::now();
    let shown = store::redact(&uri);
    let mut store = store::open(&uri, &config.store, &mut |n, total| {
        if last.elapsed().as_millis() > 500 {
            match total {
                Some(t) => say(&format!("{shown}: read {n}/{t} chunks…")),
                None => say(&format!("{shown}: read {n} chunks…")),
            }
            last = std::time::Instant::now();
        }
    })?;
    say(&format!(
        "{}: {} chunks, {} with stored vectors",
        store.uri,
        store.chunks.len(),
        store.vectors()
    ));
    let info = model::locate(&config.model, &mut say)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let big = store.chunks.len() >= BIG;
    if big {
        say(&format!(
            "{}: measuring {} chunks with {}'s tokenizer…",
            store.uri,
            store.chunks.len(),
            info.id
        ));
    }
    let (engine, chunking) = check::engine_for(&mut store, info, tok, &config.chunking)?;
    let mut window = window_for(&engine, &config);
    if config.window == WindowSpec::Auto && config.remote().is_none() && store.vectors() > 0 {
        if let Some(found) = detect_window(&engine, &chunking, &store, &config, &window)? {
            window = found;
        }
    }
    let duplicate_of = check::duplicates(&engine.corpus.docs);
    Ok(Opened {
        config,
        engine,
        window,
        chunking,
        store,
        duplicate_of,
    })
}

/// With the window left to `auto`, the window the store's vectors were embedded at (of the
/// model's three), when a sample of the longest chunks says so more clearly than auto's.
fn detect_window(
    engine: &Engine,
    chunking: &Chunking,
    store: &Store,
    config: &Config,
    auto: &Window,
) -> Result<Option<Window>> {
    let embedder = Embedder::open(&engine.model, &config.embed_spec())?;
    let found = check::store_window(store, engine, chunking, auto.tokens, &mut |t, w| {
        embedder.embed(t, w)
    })?;
    Ok(found.map(|(tokens, source)| {
        say(&format!("window {tokens}, {source}; --window sets another"));
        Window {
            tokens,
            source,
            rejects: false,
        }
    }))
}

impl Opened {
    /// The stored vectors checked (`audit`, `chunks`): nothing is embedded when the store holds
    /// no vector to compare.
    pub fn vector_check(&self) -> Result<VectorCheck> {
        if self.store.vectors() == 0 {
            return Ok(VectorCheck::none(self.store.chunks.len()));
        }
        Ok(self.check_vectors()?.3)
    }

    /// Recompute every chunk's vector from its reconstructed text (through the cache) and compare
    /// the stored ones; the variants of differing chunks are embedded directly.
    pub fn check_vectors(&self) -> Result<(Embedder, EmbedCache, Vec<Vec<f32>>, VectorCheck)> {
        let spec = self.config.embed_spec();
        let (embedder, cache, recomputed) =
            chunk_vectors(&self.engine, &self.chunking, &self.window, &spec, &mut say)?;
        let windows = &self.engine.model.windows;
        let others: Vec<usize> = [WindowSpec::Auto, WindowSpec::St, WindowSpec::Max]
            .iter()
            .map(|s| windows.resolve(*s).tokens)
            .collect();
        let result = check::check_vectors(
            &self.store,
            &self.engine,
            &recomputed,
            self.window.tokens,
            &others,
            &mut |texts, w| embedder.embed(texts, w),
        )?;
        Ok((embedder, cache, recomputed, result))
    }

    /// One measured chunk per stored chunk, in store order.
    fn measured(&self, i: usize) -> &chunkscope_core::measure::MeasuredChunk {
        &self.chunking.files[i].chunks[0]
    }

    /// Stored chunk `i`'s text, which the engine holds once measured.
    pub fn text(&self, i: usize) -> &str {
        &self.engine.corpus.docs[i].text
    }

    /// `chunks --store ... --format jsonl`: one line per stored chunk.
    pub fn write_chunks(&self, check: &VectorCheck, out: &mut dyn Write) -> Result<()> {
        let specials = self.engine.specials();
        for (i, c) in self.store.chunks.iter().enumerate() {
            let m = self.measured(i);
            let (tail_start, tail_in_header) = check::tail_of(m, self.window.tokens, specials);
            let line = json!({
                "id": c.id,
                "text": self.text(i),
                "source": c.source,
                "start_char": c.start_char,
                "end_char": c.end_char,
                "metadata": c.metadata.to_json(),
                "embedded_prefix": m.prefix(),
                "prefix_tokens": m.prefix_tokens(),
                "embed_tokens": m.embed_tokens(specials),
                "window": self.window.tokens,
                "tail_start": tail_start,
                "tail_tokens": m.tail(self.window.tokens, specials).map_or(0, |t| t.tokens),
                "tail_in_header": tail_in_header,
                "has_vector": self.store.vector(i).is_some(),
                "stored_vector_cos": check.cos[i],
                "stored_vector_cause": check.cause[i].as_ref().map(|c| c.to_string()),
                "duplicate_of": self.duplicate_of[i].map(|j| self.store.chunks[j].id.as_str()),
                "empty": self.text(i).trim().is_empty(),
            });
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// `embed --store`: each stored chunk's vector recomputed from the text its framework
    /// embedded, beside the stored one's cosine to it.
    pub fn write_vectors(
        &self,
        embedder: &str,
        recomputed: &[Vec<f32>],
        check: &VectorCheck,
        out: &mut dyn Write,
    ) -> Result<()> {
        for (i, c) in self.store.chunks.iter().enumerate() {
            let m = self.measured(i);
            let line = json!({
                "id": c.id,
                "window": self.window.tokens,
                "text": m.embed_text(self.text(i)),
                "embedder": embedder,
                "vector": recomputed.get(i),
                "stored_vector_cos": check.cos[i],
            });
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// `audit --store`: totals, the vector summary, differing and duplicate chunks.
    pub fn write_audit(
        &self,
        check: &VectorCheck,
        as_json: bool,
        out: &mut dyn Write,
    ) -> Result<bool> {
        let specials = self.engine.specials();
        let stats = self.chunking.stats(self.window.tokens, specials);
        let differing: Vec<serde_json::Value> = (0..self.store.chunks.len())
            .filter_map(|i| {
                let cause = check.cause[i].as_ref()?;
                Some(json!({
                    "id": self.store.chunks[i].id,
                    "cos": check.cos[i],
                    "cause": cause,
                    "why": cause.to_string(),
                }))
            })
            .collect();
        let duplicates: Vec<serde_json::Value> = (0..self.store.chunks.len())
            .filter_map(|i| {
                let j = self.duplicate_of[i]?;
                Some(
                    json!({"id": self.store.chunks[i].id, "duplicate_of": self.store.chunks[j].id}),
                )
            })
            .collect();
        let empty = check::empties(&self.engine.corpus.docs);
        if as_json {
            let v = json!({
                "store": self.store.uri,
                "model": self.engine.model.id,
                "document_prompt": self.engine.model.modules.document_prompt(),
                "window": self.window.tokens,
                "window_source": self.window.source,
                "total": {
                    "chunks": stats.chunks,
                    "over_window": stats.over_window,
                    "never_embedded_tokens": stats.never_embedded_tokens,
                    "max_embed_tokens": stats.max_embed_tokens,
                    "median_embed_tokens": stats.median_embed_tokens,
                    "p95_embed_tokens": stats.p95_embed_tokens,
                    "stored_vectors": self.store.vectors(),
                    "stored_vectors_checked": check.checked(),
                    "stored_vectors_differ": check.differ(),
                    "duplicates": duplicates.len(),
                    "empty": empty,
                },
                "differing": differing,
                "duplicates": duplicates,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            return Ok(stats.over_window > 0);
        }
        self.write_audit_text(&stats, check, (&differing, &duplicates, empty), out)?;
        Ok(stats.over_window > 0)
    }

    /// `audit --store` as text: the header, the totals, the vector summary, each differing and
    /// duplicate chunk.
    fn write_audit_text(
        &self,
        stats: &chunkscope_core::stats::Stats,
        check: &VectorCheck,
        (differing, duplicates, empty): (&[serde_json::Value], &[serde_json::Value], usize),
        out: &mut dyn Write,
    ) -> Result<()> {
        let model = self.engine.model.short_name();
        writeln!(
            out,
            "store {}  model {} ({})  window {} ({})",
            self.store.uri,
            model,
            self.engine.model.modules.describe(),
            self.window.tokens,
            self.window.source
        )?;
        writeln!(
            out,
            "{} chunks; {} ({:.1} %) overflow the window; {} embed tokens are never embedded.",
            stats.chunks,
            stats.over_window,
            stats.over_percent(),
            stats.never_embedded_tokens
        )?;
        if check.checked() > 0 {
            writeln!(
                out,
                "{} of {} stored vectors agree with {model} at cos >= {AGREE}; {} differ.",
                check.checked() - check.differ(),
                check.checked(),
                check.differ()
            )?;
        } else {
            writeln!(out, "no stored vectors to check.")?;
        }
        for d in differing {
            writeln!(
                out,
                "  differs {} (cos {:.4}): {}",
                d["id"].as_str().unwrap_or(""),
                d["cos"].as_f64().unwrap_or(0.0),
                d["why"].as_str().unwrap_or("")
            )?;
        }
        writeln!(out, "{} duplicate chunks, {empty} empty.", duplicates.len())?;
        for d in duplicates {
            writeln!(
                out,
                "  duplicate {} of {}",
                d["id"].as_str().unwrap_or(""),
                d["duplicate_of"].as_str().unwrap_or("")
            )?;
        }
        Ok(())
    }

    /// The embedder, its cache and the search index over the store: BM25 on the stored texts,
    /// the stored vectors; chunks stored without a vector are searched by the one recomputed from
    /// their text (embedded only when there are such chunks).
    pub fn searchable(&self) -> Result<(Embedder, EmbedCache, SearchIndex)> {
        let spec = self.config.embed_spec();
        let (embedder, cache, recomputed) = if self.store.vectors() < self.store.chunks.len() {
            chunk_vectors(&self.engine, &self.chunking, &self.window, &spec, &mut say)?
        } else {
            let e = Embedder::open(&self.engine.model, &spec)?;
            let c = EmbedCache::open(&cache::default_path(&e.model_key), e.dim());
            (e, c, Vec::new())
        };
        let index = self.index(&embedder, &recomputed)?;
        Ok((embedder, cache, index))
    }

    fn index(&self, embedder: &Embedder, recomputed: &[Vec<f32>]) -> Result<SearchIndex> {
        let dim = self.store.dim().unwrap_or(embedder.dim());
        if self.store.vectors() > 0 && dim != embedder.dim() {
            return Err(store::StoreError::Dimension {
                stored: dim,
                ours: embedder.dim(),
                model: self.engine.model.id.clone(),
            }
            .into());
        }
        if self.store.chunks.len() >= BIG {
            say(&format!(
                "{}: indexing {} stored texts (BM25)…",
                self.store.uri,
                self.store.chunks.len()
            ));
        }
        let mut index = SearchIndex::build(&self.engine, &self.chunking, None, dim)?;
        index.add_stored_vectors(&self.chunking);
        // Chunks stored without a vector: the one recomputed from their text.
        let missing = index.missing_vectors();
        let vectors: Vec<Vec<f32>> = missing
            .iter()
            .map(|&id| recomputed.get(id as usize).cloned().unwrap_or_default())
            .collect();
        index.add_vectors(&missing, &vectors);
        index.rrf_k = self.config.search_rrf_k;
        Ok(index)
    }
}
