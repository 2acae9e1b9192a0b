//! `chunkscope chunks` and `chunkscope embed`: every chunk (or its vector) as JSON Lines.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde_json::json;

use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::window::Window;

use super::knobs::Knobs;
use super::prepare::{chunk_vectors, prepare, say};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Jsonl,
}

/// Every chunk with its byte range, text and measurements.
#[derive(Args)]
pub struct ChunksArgs {
    /// The corpus folder (optional with --store).
    corpus: Option<PathBuf>,
    #[command(flatten)]
    knobs: Knobs,
    /// Output format (one JSON object per line).
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
}

/// Embed every chunk (through the cache) and write its vector.
#[derive(Args)]
pub struct EmbedArgs {
    /// The corpus folder (optional with --store).
    corpus: Option<PathBuf>,
    #[command(flatten)]
    knobs: Knobs,
    /// Output format (one JSON object per line: file, index, byte range, window, text, vector).
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
}

pub fn chunks(a: ChunksArgs) -> Result<ExitCode> {
    let mut out = io::BufWriter::new(super::out());
    if let Some(config) = super::store::wanted(&a.knobs, a.corpus.as_deref())? {
        let opened = super::store::open(config)?;
        let check = opened.vector_check()?;
        opened.write_chunks(&check, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let (_, engine, window, chunking) = prepare(&super::corpus_arg(&a.corpus)?, &a.knobs)?;
    write_chunks_jsonl(&engine, &chunking, &window, &mut out)?;
    out.flush()?;
    for note in engine.corpus.notes() {
        eprintln!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn embed(a: EmbedArgs) -> Result<ExitCode> {
    if let Some(config) = super::store::wanted(&a.knobs, a.corpus.as_deref())? {
        let opened = super::store::open(config)?;
        let (embedder, _, recomputed, check) = opened.check_vectors()?;
        let mut out = io::BufWriter::new(super::out());
        opened.write_vectors(&embedder.backend_name(), &recomputed, &check, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let (config, engine, window, chunking) = prepare(&super::corpus_arg(&a.corpus)?, &a.knobs)?;
    let (embedder, _, vectors) =
        chunk_vectors(&engine, &chunking, &window, &config.embed_spec(), &mut say)?;
    let mut out = io::BufWriter::new(super::out());
    let vectors = (embedder.backend_name(), vectors);
    write_vectors_jsonl(&engine, &chunking, &window, &vectors, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `chunkscope chunks --format jsonl`: one JSON object per chunk.
fn write_chunks_jsonl(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    out: &mut dyn Write,
) -> Result<()> {
    let specials = engine.specials();
    let unit = chunking.settings.unit;
    let policy = &chunking.settings.metadata;
    for f in &chunking.files {
        let doc = &engine.corpus.docs[f.doc];
        let front = chunkscope_core::metadata::front_matter(&doc.text).0;
        for c in f.chunks.iter() {
            let tail = c.tail(window.tokens, specials);
            let metadata: serde_json::Map<String, serde_json::Value> = policy
                .fields(&doc.path, c.heading(), c.index as usize, &front)
                .into_iter()
                .map(|(k, v, _)| (k, serde_json::Value::String(v)))
                .collect();
            let parent = c.parent().and_then(|p| f.parents.get(p));
            let (start, end) = (c.start(), c.end());
            let file_byte = |b: usize| doc.offsets.file_byte(b);
            let pages = doc.page_span(start, end);
            let line = json!({
                "file": doc.path,
                "index": c.index,
                // Offsets into the file's bytes (a BOM, UTF-16 or replaced bytes accounted for).
                "start_byte": file_byte(start),
                "end_byte": file_byte(end),
                "text": c.text(&doc.text),
                "source_format": doc.source_format,
                "page_start": pages.map(|p| p.0),
                "page_end": pages.map(|p| p.1),
                "verbatim": c.own_text().is_none() && doc.offsets.verbatim(start, end),
                "embed_tokens": c.embed_tokens(specials),
                "window": window.tokens,
                "tail_start": tail.map(|t| t.start_byte),
                "tail_tokens": tail.map_or(0, |t| t.tokens),
                "tail_in_unit": tail.map_or(0, |t| c.tail_in_unit(&doc.text, &t, unit)),
                "unit": unit.name(),
                "unit_len": c.unit_len(unit),
                "chars": c.chars,
                "cl100k_tokens": c.cl100k_tokens(&doc.text),
                "heading": c.heading(),
                "embedded_prefix": c.prefix(),
                "prefix_tokens": c.prefix_tokens(),
                "metadata": metadata,
                "parent": parent.map(|p| p.id(&doc.path)),
                "parent_start_byte": parent.map(|p| file_byte(p.start)),
                "parent_end_byte": parent.map(|p| file_byte(p.end)),
            });
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// `chunkscope embed --format jsonl`: each chunk's vector with its file and index.
fn write_vectors_jsonl(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    (embedder, vectors): &(String, Vec<Vec<f32>>),
    out: &mut dyn Write,
) -> Result<()> {
    let mut i = 0;
    for f in &chunking.files {
        let doc = &engine.corpus.docs[f.doc];
        for c in f.chunks.iter() {
            let line = json!({
                "file": doc.path,
                "index": c.index,
                "start_byte": doc.offsets.file_byte(c.start()),
                "end_byte": doc.offsets.file_byte(c.end()),
                "window": window.tokens,
                "text": c.text(&doc.text),
                "embedder": embedder,
                "vector": vectors.get(i),
            });
            writeln!(out, "{line}")?;
            i += 1;
        }
    }
    Ok(())
}
