//! What every headless command starts from: workbench.toml and flags, the model, the corpus read
//! and tokenized once, its chunking, and (for search) a vector per chunk.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};

use chunkscope_core::chunk::Strategy;
use chunkscope_core::config::Config;
use chunkscope_core::corpus::Corpus;
use chunkscope_core::embed::driver::Driver;
use chunkscope_core::embed::{cache, EmbedCache, EmbedError, EmbedSpec, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::model;
use chunkscope_core::sentences::SentenceStore;
use chunkscope_core::tokenize::EmbedTokenizer;
use chunkscope_core::window::Window;

use super::knobs::Knobs;

/// Progress lines go to stderr.
pub(crate) fn say(line: &str) {
    eprintln!("{line}");
}

/// workbench.toml and flags, the engine over the corpus, the window in force and the chunking.
pub(crate) fn prepare(corpus: &Path, knobs: &Knobs) -> Result<(Config, Engine, Window, Chunking)> {
    let config = knobs.config(Some(corpus))?;
    let engine = open_engine(corpus, &config, &mut say)?;
    let window = window_for(&engine, &config);
    let chunking = chunk(&engine, &config, &mut say)?;
    Ok((config, engine, window, chunking))
}

/// The window in force: the model's, or with an embedding server, the one it enforces.
pub(crate) fn window_for(engine: &Engine, config: &Config) -> Window {
    let w = engine.model.windows.resolve(config.window);
    match config.remote() {
        Some(r) => {
            let count = |t: &str| {
                engine
                    .tok
                    .tokenizer()
                    .encode(t, true)
                    .map_or(0, |e| e.len())
            };
            let server = chunkscope_core::embed::remote::ServerWindow::probe(&r, &count);
            if let Some(note) = &server.tokenizer_mismatch {
                say(&format!("warning: {note}"));
            }
            server.apply(config.window, w)
        }
        None => w,
    }
}

/// Find the model, read the corpus and tokenize it once. Progress goes to `say`.
pub(crate) fn open_engine(
    corpus: &Path,
    config: &Config,
    say: &mut dyn FnMut(&str),
) -> Result<Engine> {
    let corpus = Corpus::load(corpus, &config.corpus)?;
    engine_for(corpus, config, say)
}

/// The engine over a corpus already in memory (e.g. built from SQuAD JSON).
pub(crate) fn engine_for(
    corpus: Corpus,
    config: &Config,
    say: &mut dyn FnMut(&str),
) -> Result<Engine> {
    let info = model::locate(&config.model, say)?;
    let tok = EmbedTokenizer::from_file(&info.tokenizer_path())?;
    Ok(Engine::new(info, Arc::new(tok), corpus)?)
}

pub(crate) fn chunk(
    engine: &Engine,
    config: &Config,
    say: &mut dyn FnMut(&str),
) -> Result<Chunking> {
    let settings = &config.chunking;
    settings.validate()?;
    let never = AtomicBool::new(false);
    if settings.strategy != Strategy::MaxMin {
        return engine
            .chunk_all(settings, &never)
            .context("chunking was cancelled");
    }
    // Max-Min reads sentence vectors: embed the sentences the cache lacks, once.
    let embedder = Embedder::open(&engine.model, &config.embed_spec())
        .context("maxmin needs the embedding model")?;
    let mut store = SentenceStore::on_disk(engine, embedder.dim());
    let started = std::time::Instant::now();
    let mut last = std::time::Instant::now();
    let (embedded, _) = store.embed_missing(engine, settings, &embedder, |done, total| {
        if last.elapsed().as_millis() > 500 {
            say(&format!("maxmin: embedding sentences {done}/{total}…"));
            last = std::time::Instant::now();
        }
        true
    })?;
    if embedded == 0 {
        say("maxmin: every sentence vector from the cache, nothing embedded");
    } else {
        say(&format!(
            "maxmin: embedded {embedded} sentences in {:.1} s",
            started.elapsed().as_secs_f64()
        ));
    }
    engine
        .chunk_all_with(settings, Some(&store), &never)
        .context("chunking was cancelled")
}

/// The embedder (the model, or the configured server), its cache (loaded from disk), and one
/// vector per chunk of `chunking`, embedding only what the cache lacks. Progress goes to `say`.
/// Vectors are stored as they arrive (appended to the cache file every few seconds and when the
/// run fails), so a rerun embeds only what is still missing.
pub(crate) fn chunk_vectors(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    spec: &EmbedSpec,
    say: &mut dyn FnMut(&str),
) -> Result<(Embedder, EmbedCache, Vec<Vec<f32>>)> {
    let embedder = Embedder::open(&engine.model, spec)?;
    let mut cache = EmbedCache::open(&cache::default_path(&embedder.model_key), embedder.dim());
    let owned = chunking.embed_texts(engine);
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let started = std::time::Instant::now();
    let mut last = std::time::Instant::now();
    let mut driver = Driver::new(&embedder);
    let total = texts.len();
    let mut vectors = Vec::with_capacity(total);
    for part in texts.chunks(driver.slice()) {
        let done_before = vectors.len();
        let vs = driver
            .run(
                &embedder,
                &mut cache,
                part,
                window.tokens,
                |done| {
                    if last.elapsed().as_millis() > 500 {
                        say(&format!("embedding {}/{total} chunks…", done_before + done));
                        last = std::time::Instant::now();
                    }
                    true
                },
                // Headless: nothing to give the cores to.
                &|| true,
            )
            .map_err(|e| match e {
                EmbedError::Server(_) => anyhow::anyhow!(
                    "{e}; the vectors received so far are kept, a rerun embeds only the rest"
                ),
                e => anyhow::anyhow!("{e}"),
            })?;
        vectors.extend(vs);
    }
    let embedded = driver.embedded;
    if embedded == 0 {
        say(&format!(
            "{total} chunks, all embeddings from the cache: nothing embedded"
        ));
    } else {
        say(&format!(
            "embedded {embedded} of {total} chunks in {:.1} s ({} from the cache)",
            started.elapsed().as_secs_f64(),
            total - embedded
        ));
    }
    driver.save(&mut cache);
    if let Some(e) = &driver.unsaved {
        say(&format!("embedding cache not saved: {e}"));
    }
    Ok((embedder, cache, vectors))
}
