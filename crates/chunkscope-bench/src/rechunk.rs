//! `chunkscope-bench rechunk`: knob turns and file saves to updated chunks, stats and indexes.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use chunkscope_core::model::ModelInfo;
use chunkscope_core::search::SearchIndex;
use chunkscope_core::tokenize::EmbedTokenizer;

use crate::common::{generate_corpus, python_json, report, TempDir, STS_RECHUNK};

/// `chunkscope bench rechunk`: on a generated corpus of about `megabytes` MB (the example corpus
/// repeated with varied words, written under a temporary directory), the time from a knob change
/// (size, overlap, window) to updated chunks and stats without embedding, and from a file save to
/// its updated chunks.
pub fn rechunk(
    info: &ModelInfo,
    megabytes: usize,
    presses: usize,
    reference: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    let tmp = TempDir::new("bench");
    let dir = tmp.0.clone();
    let (n, written) = generate_corpus(&dir, megabytes)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let t0 = Instant::now();
    let corpus = Corpus::load(&dir, &CorpusRules::default())?;
    let engine = Engine::new(info.clone(), Arc::clone(&tok), corpus)?;
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB, read and tokenized once in {:.2} s",
        written as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    )?;
    let mut settings = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut settings);
    knobs(&engine, &mut settings, presses, out)?;
    saves(engine, &settings, &dir, presses, out)?;
    if let Some(py) = reference {
        semantic_text_splitter(py, info, &dir, presses, out)?;
    }
    Ok(())
}

/// Size, overlap and window turns on the whole corpus (leaves `settings` at the last turn).
fn knobs(
    engine: &Engine,
    settings: &mut ChunkSettings,
    presses: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let never = AtomicBool::new(false);
    let time = |s: &ChunkSettings, window: usize| {
        let t = Instant::now();
        let c = engine.chunk_all(s, &never).expect("not cancelled");
        let _ = c.stats(window, engine.specials());
        t.elapsed().as_secs_f64() * 1000.0
    };
    time(settings, 128);
    let mut size_ms = Vec::new();
    for i in 0..presses {
        settings.size = if i % 2 == 0 { 270 } else { 240 };
        size_ms.push(time(settings, 128));
    }
    report(out, "size knob (langchain embed)", size_ms)?;
    let mut ov_ms = Vec::new();
    for i in 0..presses {
        settings.overlap = if i % 2 == 0 { 40 } else { 32 };
        ov_ms.push(time(settings, 128));
    }
    report(out, "overlap knob", ov_ms)?;
    // A window change recomputes tails from stored offsets: stats only.
    let chunking = engine.chunk_all(settings, &never).expect("not cancelled");
    let mut win_ms = Vec::new();
    for i in 0..presses {
        let t = Instant::now();
        let _ = chunking.stats(if i % 2 == 0 { 256 } else { 128 }, engine.specials());
        win_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "window knob (stats only)", win_ms)
}

/// Saves of the first file of the corpus in `dir`: the time to its updated chunks and stats, and
/// to the updated search indexes.
fn saves(
    engine: Engine,
    settings: &ChunkSettings,
    dir: &Path,
    presses: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let never = AtomicBool::new(false);
    let mut save_ms = Vec::new();
    let victim = engine
        .corpus
        .docs
        .first()
        .map(|d| dir.join(&d.path))
        .context("no files")?;
    let mut prev_chunking = engine.chunk_all(settings, &never).expect("not cancelled");
    let t = Instant::now();
    let mut index = SearchIndex::build(&engine, &prev_chunking, None, 384)?;
    writeln!(
        out,
        "BM25 index over {} chunks built in {:.0} ms",
        index.len(),
        t.elapsed().as_secs_f64() * 1000.0
    )?;
    let mut prev = engine;
    let mut index_ms = Vec::new();
    for i in 0..presses.min(10) {
        std::fs::write(
            &victim,
            format!("# Saved {i}\n\nThe file was saved again with new text.\n"),
        )?;
        let t = Instant::now();
        let corpus = Corpus::load(dir, &CorpusRules::default())?;
        let (next, _) = Engine::refreshed(
            Some(&prev),
            prev.model.clone(),
            Arc::clone(&prev.tok),
            corpus,
        );
        let (c, _) = next
            .chunk_all_reusing(settings, None, Some((&prev, &prev_chunking)), &never)
            .expect("not cancelled");
        let _ = c.stats(128, next.specials());
        save_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        index.update(&next, &c)?;
        index_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        prev = next;
        prev_chunking = c;
    }
    report(out, "file save -> chunks + stats", save_ms)?;
    report(out, "file save -> BM25/vector update", index_ms)
}

/// semantic-text-splitter (under the Python `py`) on the same files and tokenizer, one full
/// re-chunk per press.
fn semantic_text_splitter(
    py: &str,
    info: &ModelInfo,
    dir: &Path,
    presses: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let sizes: Vec<usize> = (0..presses.min(6))
        .map(|i| if i % 2 == 0 { 270 } else { 240 })
        .collect();
    let req = json!({"dir": dir, "tokenizer_json": info.tokenizer_path(), "sizes": sizes});
    let v = python_json(py, &STS_RECHUNK, &req, "pip install semantic-text-splitter")?;
    let ms: Vec<f64> = v["millis"]
        .as_array()
        .context("millis")?
        .iter()
        .filter_map(|x| x.as_f64())
        .collect();
    report(out, "semantic-text-splitter size", ms)?;
    writeln!(
        out,
        "(semantic-text-splitter: {} files, re-tokenizes the corpus on every change)",
        v["files"]
    )?;
    Ok(())
}
