//! `chunkscope query`: BM25 and vector search side by side, each hit placed in its chunk.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use chunkscope_core::embed::EmbedSpec;
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::search::SearchIndex;
use chunkscope_core::window::Window;

use super::knobs::Knobs;
use super::prepare::{chunk_vectors, prepare, say};

#[derive(Clone, Copy, ValueEnum)]
pub enum QueryFormat {
    Text,
    Json,
}

/// BM25, vector and hybrid (reciprocal rank fusion) search side by side; each hit with its file,
/// chunk, the token offset of the match and whether it lies inside the window or in the tail.
#[derive(Args)]
pub struct QueryArgs {
    corpus: PathBuf,
    /// The query text (any text: syntax errors fall back to plain terms).
    text: String,
    #[command(flatten)]
    knobs: Knobs,
    /// Hits per retriever.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = QueryFormat::Text)]
    format: QueryFormat,
}

pub fn run(a: QueryArgs) -> Result<ExitCode> {
    let (config, engine, window, chunking) = prepare(&a.corpus, &a.knobs)?;
    let mut out = io::stdout().lock();
    let json = matches!(a.format, QueryFormat::Json);
    let k = (a.k, config.search_rrf_k);
    let spec = config.embed_spec();
    write_results(
        &engine,
        &chunking,
        (&window, &spec),
        &a.text,
        k,
        json,
        &mut say,
        &mut out,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `chunkscope query`: the three result lists (BM25, vector, hybrid).
#[allow(clippy::too_many_arguments)]
fn write_results(
    engine: &Engine,
    chunking: &Chunking,
    (window, spec): (&Window, &EmbedSpec),
    text: &str,
    (k, rrf_k): (usize, usize),
    as_json: bool,
    say: &mut dyn FnMut(&str),
    out: &mut dyn Write,
) -> Result<()> {
    let (embedder, mut cache, vectors) = chunk_vectors(engine, chunking, window, spec, say)?;
    let mut index = SearchIndex::build(engine, chunking, Some(&vectors), embedder.dim())?;
    index.rrf_k = rrf_k;
    let results = index.search(
        engine,
        chunking,
        &embedder,
        &mut cache,
        text,
        k,
        window.tokens,
    )?;
    let _ = cache.save();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&results)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "query {:?}  k {}  window {}  {}",
        results.query, k, window.tokens, results.embedder
    )?;
    let hybrid = format!("hybrid (RRF k={})", results.rrf_k);
    for (name, hits) in [
        ("BM25 (tantivy)", &results.bm25),
        ("vector", &results.vector),
        (hybrid.as_str(), &results.hybrid),
    ] {
        writeln!(out, "{name}:")?;
        for h in hits.iter() {
            writeln!(
                out,
                "  {:>2} {:>7.3} {} #{}{} @tok {} {}{}",
                h.rank,
                h.score,
                h.file,
                h.chunk,
                match (h.page_start, h.page_end) {
                    (Some(a), Some(b)) if a == b => format!(" p. {a}"),
                    (Some(a), Some(b)) => format!(" p. {a}-{b}"),
                    _ => String::new(),
                },
                h.token_offset.map_or("-".to_string(), |t| t.to_string()),
                if h.in_tail { "TAIL" } else { "window" },
                if h.only_here { "  only here" } else { "" }
            )?;
            if let Some(hd) = &h.heading {
                writeln!(out, "       § {hd}")?;
            }
            if let Some(p) = &h.parent {
                writeln!(
                    out,
                    "       ↳ parent {} · {} cl100k tokens · {} chars",
                    p.id, p.cl100k_tokens, p.chars
                )?;
            }
        }
    }
    Ok(())
}
