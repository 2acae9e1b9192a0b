//! `chunkscope query`: BM25 and vector search side by side, each hit placed in its chunk.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use chunkscope_core::config::Config;
use chunkscope_core::embed::{cosine, EmbedCache, Embedder};
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::explain::{self, WhyNot};
use chunkscope_core::rerank::stage::{self, Reranked, Stage};
use chunkscope_core::rerank::Reranker;
use chunkscope_core::search::{Hit, Results, SearchIndex};
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
    let mut out = super::out();
    if let Some(config) = super::store::wanted(&a.knobs, corpus.as_deref())? {
        let reranker = reranker(&config)?;
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
            if let Some(stored) = opened.store.vector(i) {
                let m = &opened.chunking.files[i].chunks[0];
                let text = m.embed_text(opened.text(i));
                let now = embedder.embed(&[text.as_ref()], opened.window.tokens)?;
                w.stored_vector_cos = now.first().map(|v| cosine(stored, v));
            }
        }
        let mut reranked = search.rerank(reranker.as_ref(), &embedder, &mut cache, &results)?;
        if let Some(r) = reranked.as_mut() {
            r.hits.iter_mut().for_each(|h| h.id = Some(h.file.clone()));
        }
        let written = Written {
            results: &results,
            why: why.as_ref(),
            reranked: reranked.as_ref(),
        };
        return write_results(&written, &search, json, &mut out).map(|()| ExitCode::SUCCESS);
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
    let reranker = reranker(&config)?;
    let reranked = search.rerank(reranker.as_ref(), &embedder, &mut cache, &results)?;
    let written = Written {
        results: &results,
        why: why.as_ref(),
        reranked: reranked.as_ref(),
    };
    write_results(&written, &search, json, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// The reranker asked for (`--rerank`, `[rerank] model`) and how deep it reads; None for none.
pub(super) fn reranker(config: &Config) -> Result<Option<(Reranker, usize)>> {
    let Some(model) = &config.rerank_model else {
        return Ok(None);
    };
    let r = stage::open(model, config.precision)?;
    say(&format!(
        "reranker {model} ({}, pair window {}, {} candidates per retriever)",
        r.activation().name(),
        r.pair_window(),
        config.rerank_candidates
    ));
    Ok(Some((r, config.rerank_candidates)))
}

/// What `query` prints: the first stage, the expected chunk, the reranked column.
struct Written<'a> {
    results: &'a Results,
    why: Option<&'a WhyNot>,
    reranked: Option<&'a Reranked>,
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

    /// The reranker's column over the first stage's candidates, when one is asked for.
    fn rerank(
        &self,
        reranker: Option<&(Reranker, usize)>,
        embedder: &Embedder,
        cache: &mut EmbedCache,
        results: &Results,
    ) -> Result<Option<Reranked>> {
        let Some((reranker, candidates)) = reranker else {
            return Ok(None);
        };
        let stage = Stage {
            reranker,
            candidates: *candidates,
        };
        stage::rerank_query(
            stage,
            self.index,
            (self.engine, self.chunking),
            embedder,
            cache,
            &results.query,
            self.window.tokens,
            results.k,
        )
        .map(Some)
        .map_err(Into::into)
    }

    /// The text of a hit's chunk.
    fn text_of(&self, h: &Hit) -> Option<&str> {
        let f = self.chunking.files.get(h.file_pos)?;
        let c = f.chunks.get(h.chunk)?;
        Some(c.text(&self.engine.corpus.docs[f.doc].text))
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
        .map_err(Into::into)
    }
}

/// `chunkscope query`: the result lists (BM25, vector, hybrid, and the reranker's when there is
/// one), and the expected chunk. In JSON every hit carries its chunk's `text`.
fn write_results(w: &Written, search: &Search, as_json: bool, out: &mut dyn Write) -> Result<()> {
    let results = w.results;
    if as_json {
        let mut r = results.clone();
        r.expect = w.why.cloned().map(Box::new);
        let mut v = serde_json::to_value(&r)?;
        let with_text = |hits: &[Hit]| -> Result<serde_json::Value> {
            let mut list = serde_json::to_value(hits)?;
            if let Some(items) = list.as_array_mut() {
                for (item, h) in items.iter_mut().zip(hits) {
                    item["text"] = search.text_of(h).unwrap_or_default().into();
                }
            }
            Ok(list)
        };
        v["bm25"] = with_text(&results.bm25)?;
        v["vector"] = with_text(&results.vector)?;
        v["hybrid"] = with_text(&results.hybrid)?;
        if let Some(r) = w.reranked {
            v["rerank"] = with_text(&r.hits)?;
            v["rerank_info"] = serde_json::to_value(&r.info)?;
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "query {:?}  k {}  window {}  {}",
        results.query, results.k, results.window, results.embedder
    )?;
    let hybrid = format!("hybrid (RRF k={})", results.rrf_k);
    let vector = match &results.approximate {
        Some(a) => format!(
            "vector (approximate: HNSW, recall@10 {:.2} against exact search on this corpus, {} candidates rescored exactly)",
            a.recall_at_10, a.candidates
        ),
        None => "vector".to_string(),
    };
    for (name, hits) in [
        ("BM25 (tantivy)", &results.bm25),
        (vector.as_str(), &results.vector),
        (hybrid.as_str(), &results.hybrid),
    ] {
        writeln!(out, "{name}:")?;
        let vector_column = std::ptr::eq(hits, &results.vector);
        if let (true, Some(why)) = (hits.is_empty() && vector_column, &results.vector_error) {
            writeln!(out, "  {why}")?;
        }
        write_hits(hits, "window", out)?;
    }
    if let Some(Reranked { hits, info }) = w.reranked {
        writeln!(
            out,
            "rerank ({}, pair window {}, {} candidates, {} cut by the window, {:.1} ms):",
            info.model, info.window, info.candidates, info.truncated, info.millis
        )?;
        write_hits(hits, "read", out)?;
    }
    if let Some(why) = w.why {
        write_why_not(why, out)?;
    }
    Ok(())
}

/// One list of hits; `inside` names a match the model read (TAIL: past its window).
fn write_hits(hits: &[Hit], inside: &str, out: &mut dyn Write) -> Result<()> {
    for h in hits {
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
            if h.in_tail { "TAIL" } else { inside },
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
