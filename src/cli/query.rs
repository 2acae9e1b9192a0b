//! `chunkscope query`: BM25 and vector search side by side, each hit placed in its chunk.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use chunkscope_core::embed::{cosine, EmbedCache, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::explain::{self, WhyNot};
use chunkscope_core::search::{Results, SearchIndex};
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
    /// [CORPUS] TEXT: the corpus folder (optional with --store) and the query text (any text:
    /// syntax errors fall back to plain terms).
    #[arg(num_args = 1..=2, value_names = ["CORPUS", "TEXT"], required = true)]
    args: Vec<String>,
    #[command(flatten)]
    knobs: Knobs,
    /// Hits per retriever.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = QueryFormat::Text)]
    format: QueryFormat,
    /// Why not this chunk? Its id (a stored chunk's id, or FILE#INDEX): its rank and score in
    /// every retriever, and what of the query lies in its tail.
    #[arg(long)]
    expect: Option<String>,
    /// The same for the first chunk whose text holds TEXT (and where TEXT lies).
    #[arg(long)]
    expect_text: Option<String>,
}

pub fn run(a: QueryArgs) -> Result<ExitCode> {
    let (corpus, text) = match a.args.as_slice() {
        [t] => (None, t.clone()),
        [c, t] => (Some(PathBuf::from(c)), t.clone()),
        _ => anyhow::bail!("expected [CORPUS] TEXT"),
    };
    let json = matches!(a.format, QueryFormat::Json);
    let expect = (a.expect.as_deref(), a.expect_text.as_deref());
    let mut out = io::stdout().lock();
    if let Some(config) = super::store::wanted(&a.knobs, corpus.as_deref())? {
        let opened = super::store::open(config)?;
        let (embedder, mut cache, index) = opened.searchable()?;
        let search = Search {
            engine: &opened.engine,
            chunking: &opened.chunking,
            index: &index,
            window: &opened.window,
        };
        let mut results = search.run(&embedder, &mut cache, &text, a.k)?;
        for h in results
            .bm25
            .iter_mut()
            .chain(results.vector.iter_mut())
            .chain(results.hybrid.iter_mut())
        {
            h.id = Some(h.file.clone());
        }
        let mut why = search.explain(&embedder, &mut cache, &results, expect)?;
        if let Some(w) = why.as_mut() {
            // Does the expected chunk's stored vector still match its text?
            let i = w.chunk_id as usize;
            if let Some(stored) = &opened.store.chunks[i].vector {
                let m = &opened.chunking.files[i].chunks[0];
                let text = m.embed_text(&opened.store.chunks[i].text);
                let now = embedder.embed(&[text.as_ref()], opened.window.tokens)?;
                w.stored_vector_cos = now.first().map(|v| cosine(stored, v));
            }
        }
        return write_results(&results, why.as_ref(), json, &mut out).map(|()| ExitCode::SUCCESS);
    }
    let corpus = super::corpus_arg(&corpus)?;
    let (config, engine, window, chunking) = prepare(&corpus, &a.knobs)?;
    let spec = config.embed_spec();
    let (embedder, mut cache, vectors) =
        chunk_vectors(&engine, &chunking, &window, &spec, &mut say)?;
    let mut index = SearchIndex::build(&engine, &chunking, Some(&vectors), embedder.dim())?;
    index.rrf_k = config.search_rrf_k;
    let search = Search {
        engine: &engine,
        chunking: &chunking,
        index: &index,
        window: &window,
    };
    let results = search.run(&embedder, &mut cache, &text, a.k)?;
    let why = search.explain(&embedder, &mut cache, &results, expect)?;
    write_results(&results, why.as_ref(), json, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// One search over a corpus or a store.
struct Search<'a> {
    engine: &'a Engine,
    chunking: &'a Chunking,
    index: &'a SearchIndex,
    window: &'a Window,
}

impl Search<'_> {
    fn run(
        &self,
        embedder: &Embedder,
        cache: &mut EmbedCache,
        text: &str,
        k: usize,
    ) -> Result<Results> {
        let results = self.index.search(
            self.engine,
            self.chunking,
            embedder,
            cache,
            text,
            k,
            self.window.tokens,
        )?;
        let _ = cache.save();
        Ok(results)
    }

    /// `--expect` / `--expect-text`: the chunk named, explained; an error when none matches.
    fn explain(
        &self,
        embedder: &Embedder,
        cache: &mut EmbedCache,
        results: &Results,
        (id, text): (Option<&str>, Option<&str>),
    ) -> Result<Option<WhyNot>> {
        if id.is_none() && text.is_none() {
            return Ok(None);
        }
        let Some(chunk) = explain::find_chunk(self.engine, self.chunking, id, text) else {
            anyhow::bail!(
                "--expect: no chunk {}",
                id.map(|i| format!("with id {i}"))
                    .unwrap_or_else(|| format!("holds {:?}", text.unwrap_or("")))
            );
        };
        // A query that could not be embedded was already said in the results
        // (`vector_error`); the explanation then has no vector side.
        let qv = explain::query_vector(
            self.index,
            embedder,
            cache,
            &results.query,
            self.window.tokens,
        )
        .unwrap_or_default();
        explain::why_not(
            self.index,
            self.engine,
            self.chunking,
            results,
            &qv,
            chunk,
            text,
        )
        .map(Some)
    }
}

/// `chunkscope query`: the three result lists (BM25, vector, hybrid), and the expected chunk.
fn write_results(
    results: &Results,
    why: Option<&WhyNot>,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let k = results.k;
    let window = results.window;
    if as_json {
        let mut r = results.clone();
        r.expect = why.cloned().map(Box::new);
        writeln!(out, "{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "query {:?}  k {}  window {}  {}",
        results.query, k, window, results.embedder
    )?;
    let hybrid = format!("hybrid (RRF k={})", results.rrf_k);
    for (name, hits) in [
        ("BM25 (tantivy)", &results.bm25),
        ("vector", &results.vector),
        (hybrid.as_str(), &results.hybrid),
    ] {
        writeln!(out, "{name}:")?;
        if let (true, Some(why)) = (hits.is_empty() && name == "vector", &results.vector_error) {
            writeln!(out, "  {why}")?;
        }
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
    if let Some(w) = why {
        write_why_not(w, out)?;
    }
    Ok(())
}

/// The expected chunk, retriever by retriever.
fn write_why_not(w: &WhyNot, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "expected {} #{}:", w.file, w.chunk)?;
    for p in &w.places {
        let rank = p
            .rank
            .map_or("not ranked".to_string(), |r| format!("rank {r}"));
        let score = p.score.map_or(String::new(), |s| format!(" score {s:.3}"));
        let bar = p
            .last_shown_score
            .map_or(String::new(), |s| format!(" (last shown {s:.3})"));
        let shown = if p.shown { "  shown" } else { "" };
        writeln!(out, "  {:<7} {rank}{score}{bar}{shown}", p.retriever)?;
    }
    match w.tail_start {
        None => writeln!(out, "  the window holds the whole chunk")?,
        Some(t) => writeln!(out, "  tail from byte {t}")?,
    }
    if !w.terms_in_tail.is_empty() {
        writeln!(
            out,
            "  query terms only past the window (never embedded): {}",
            w.terms_in_tail.join(", ")
        )?;
    }
    if let Some(c) = w.stored_vector_cos {
        writeln!(
            out,
            "  stored vector: cos {c:.4} to its text as embedded{}",
            if c < chunkscope_core::store::check::AGREE {
                " (DIFFERS: stale text, another model or a missing prefix; audit --store names the cause)"
            } else {
                ""
            }
        )?;
    }
    if let (Some(at), Some(tail)) = (w.expected_at, w.expected_in_tail) {
        writeln!(
            out,
            "  the expected text starts at byte {at}, {}",
            if tail {
                "in the TAIL: the vector never saw it"
            } else {
                "inside the window"
            }
        )?;
    }
    Ok(())
}
