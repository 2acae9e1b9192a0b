//! Headless commands over the same engine as the screen: `audit` and `chunks`.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;

use crate::core::cases::Cases;
use crate::core::chunk::Strategy;
use crate::core::config::Config;
use crate::core::corpus::Corpus;
use crate::core::embed::{cache, EmbedCache, Embedder};
use crate::core::engine::{Chunking, Engine};
use crate::core::eval::{evaluate, Report};
use crate::core::model;
use crate::core::search::{embed_cached, SearchIndex};
use crate::core::sentences::SentenceStore;
use crate::core::stats::Stats;
use crate::core::tokenize::EmbedTokenizer;
use crate::core::window::Window;

/// Find the model, read the corpus and tokenize it once. Progress goes to `say`.
pub fn open_engine(corpus: &Path, config: &Config, say: &mut dyn FnMut(&str)) -> Result<Engine> {
    let corpus = Corpus::load(corpus, &config.corpus)?;
    engine_for(corpus, config, say)
}

/// The engine over a corpus already in memory (e.g. built from SQuAD JSON).
pub fn engine_for(corpus: Corpus, config: &Config, say: &mut dyn FnMut(&str)) -> Result<Engine> {
    let info = model::locate(&config.model, say)?;
    let tok = EmbedTokenizer::from_file(&info.tokenizer_path())?;
    Engine::new(info, Arc::new(tok), corpus)
}

/// What `chunkscope eval` reads: SQuAD JSON gives corpus and cases; a directory needs a TSV
/// (default CORPUS/cases.tsv).
pub fn open_eval(
    corpus: &Path,
    cases: Option<&Path>,
    config: &Config,
    say: &mut dyn FnMut(&str),
) -> Result<(Engine, Cases)> {
    if corpus.extension().is_some_and(|e| e == "json") {
        let (c, from_json) = Cases::from_squad(corpus)?;
        let engine = engine_for(c, config, say)?;
        let cases = match cases {
            Some(p) if p != corpus => Cases::from_tsv(p, &engine.corpus)?,
            _ => from_json,
        };
        return Ok((engine, cases));
    }
    let engine = open_engine(corpus, config, say)?;
    let path = match cases {
        Some(p) => p.to_path_buf(),
        None => corpus.join("cases.tsv"),
    };
    let cases = if path.extension().is_some_and(|e| e == "json") {
        Cases::from_squad(&path)?.1
    } else {
        Cases::from_tsv(&path, &engine.corpus)?
    };
    Ok((engine, cases))
}

/// `chunkscope eval`: the report, and the recall figures a floor is checked against.
#[allow(clippy::too_many_arguments)]
pub fn eval(
    engine: &Engine,
    chunking: &Chunking,
    cases: &Cases,
    window: &Window,
    ks: &[usize],
    k: usize,
    say: &mut dyn FnMut(&str),
) -> Result<Report> {
    let (embedder, mut cache, vectors) = chunk_vectors(engine, chunking, window, say)?;
    let index = SearchIndex::build(engine, chunking, Some(&vectors), embedder.dim())?;
    let report = evaluate(
        engine,
        chunking,
        &index,
        &embedder,
        &mut cache,
        cases,
        window.tokens,
        ks,
        k,
    )?;
    let _ = cache.save();
    Ok(report)
}

pub fn chunk(engine: &Engine, config: &Config, say: &mut dyn FnMut(&str)) -> Result<Chunking> {
    let settings = &config.chunking;
    settings.validate().map_err(|m| anyhow::anyhow!(m))?;
    let never = AtomicBool::new(false);
    if settings.strategy != Strategy::MaxMin {
        return engine
            .chunk_all(settings, &never)
            .context("chunking was cancelled");
    }
    // Max-Min reads sentence vectors: embed the sentences the cache lacks, once.
    let embedder = Embedder::load(&engine.model).context("maxmin needs the embedding model")?;
    let mut store = SentenceStore::open(engine, embedder.dim(), true);
    let started = std::time::Instant::now();
    let mut last = std::time::Instant::now();
    let (embedded, _) = store.embed_missing(engine, settings, &embedder, |done, total| {
        if last.elapsed().as_millis() > 500 {
            say(&format!("maxmin: embedding sentences {done}/{total}…"));
            last = std::time::Instant::now();
        }
        true
    });
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

/// `chunkscope chunks --format jsonl`: one JSON object per chunk.
pub fn write_chunks_jsonl(
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
        let front = crate::core::metadata::front_matter(&doc.text).0;
        for c in f.chunks.iter() {
            let tail = c.tail(window.tokens, specials);
            let metadata: serde_json::Map<String, serde_json::Value> = policy
                .fields(&doc.path, c.chunk.heading.as_deref(), c.index, &front)
                .into_iter()
                .map(|(k, v, _)| (k, serde_json::Value::String(v)))
                .collect();
            let parent = c.parent.and_then(|p| f.parents.get(p));
            let line = json!({
                "file": doc.path,
                "index": c.index,
                "start_byte": c.chunk.start,
                "end_byte": c.chunk.end,
                "text": c.text(&doc.text),
                "verbatim": c.chunk.text.is_none(),
                "embed_tokens": c.embed_tokens(specials),
                "window": window.tokens,
                "tail_start": tail.map(|t| t.start_byte),
                "tail_tokens": tail.map_or(0, |t| t.tokens),
                "tail_in_unit": tail.map_or(0, |t| c.tail_in_unit(&doc.text, &t, unit)),
                "unit": unit.name(),
                "unit_len": c.unit_len,
                "chars": c.chars,
                "cl100k_tokens": c.cl100k_tokens(&doc.text),
                "heading": c.chunk.heading,
                "embedded_prefix": c.prefix.as_deref(),
                "prefix_tokens": c.prefix_tokens,
                "metadata": metadata,
                "parent": parent.map(|p| p.id(&doc.path)),
                "parent_start_byte": parent.map(|p| p.start),
                "parent_end_byte": parent.map(|p| p.end),
            });
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct FileAudit<'a> {
    file: &'a str,
    #[serde(flatten)]
    stats: Stats,
}

#[derive(Serialize)]
struct Worst<'a> {
    file: &'a str,
    index: usize,
    embed_tokens: usize,
    tail_tokens: usize,
}

/// The audit: the stats pane's figures per file and in total. Returns whether any chunk overflows.
pub fn audit(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    let specials = engine.specials();
    let files: Vec<FileAudit> = chunking
        .files
        .iter()
        .map(|f| FileAudit {
            file: &engine.corpus.docs[f.doc].path,
            stats: Stats::of(f.chunks.iter(), window.tokens, specials),
        })
        .collect();
    let total = chunking.stats(window.tokens, specials);
    let mut worst: Vec<Worst> = chunking
        .files
        .iter()
        .flat_map(|f| {
            f.chunks.iter().filter_map(move |c| {
                c.tail(window.tokens, specials).map(|t| Worst {
                    file: &engine.corpus.docs[f.doc].path,
                    index: c.index,
                    embed_tokens: c.embed_tokens(specials),
                    tail_tokens: t.tokens,
                })
            })
        })
        .collect();
    worst.sort_by(|a, b| b.embed_tokens.cmp(&a.embed_tokens).then(a.file.cmp(b.file)));
    worst.truncate(10);
    if as_json {
        let v = json!({
            "model": engine.model.id,
            "window": window.tokens,
            "window_source": window.source,
            "settings": chunking.settings.label(),
            "total": total,
            "files": files,
            "worst": worst,
            "skipped": engine.corpus.skipped,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        writeln!(
            out,
            "model {}  window {} ({})  {}",
            engine.model.short_name(),
            window.tokens,
            window.source,
            chunking.settings.label()
        )?;
        writeln!(
            out,
            "{:<40} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
            "file", "chunks", "over", "max", "median", "p95", "unseen"
        )?;
        let row = |name: &str, s: &Stats| {
            format!(
                "{:<40} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
                name,
                s.chunks,
                s.over_window,
                s.max_embed_tokens,
                s.median_embed_tokens,
                s.p95_embed_tokens,
                s.never_embedded_tokens
            )
        };
        for f in &files {
            writeln!(out, "{}", row(f.file, &f.stats))?;
        }
        writeln!(out, "{}", row("TOTAL", &total))?;
        writeln!(
            out,
            "{} of {} chunks ({:.1} %) overflow the window; {} embed tokens are never embedded.",
            total.over_window,
            total.chunks,
            total.over_percent(),
            total.never_embedded_tokens
        )?;
        for s in &engine.corpus.skipped {
            writeln!(out, "skipped {}: {}", s.path, s.reason)?;
        }
        for d in engine.corpus.docs.iter().filter(|d| d.lossy) {
            writeln!(out, "note {}: invalid UTF-8 replaced by U+FFFD", d.path)?;
        }
        if !worst.is_empty() {
            writeln!(
                out,
                "worst chunks (embed tokens incl. specials, tokens past the window):"
            )?;
            for w in &worst {
                writeln!(
                    out,
                    "  {} #{}  {} tokens, {} unseen",
                    w.file, w.index, w.embed_tokens, w.tail_tokens
                )?;
            }
        }
    }
    Ok(total.over_window > 0)
}

/// The embedder, its cache (loaded from disk), and one vector per chunk of `chunking`, embedding
/// only what the cache lacks. Progress goes to `say`.
pub fn chunk_vectors(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    say: &mut dyn FnMut(&str),
) -> Result<(Embedder, EmbedCache, Vec<Vec<f32>>)> {
    let embedder = Embedder::load(&engine.model)?;
    let mut cache = EmbedCache::open(&cache::default_path(&embedder.model_key), embedder.dim());
    let owned = chunking.embed_texts(engine);
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let started = std::time::Instant::now();
    let mut last = std::time::Instant::now();
    let (vectors, embedded) = embed_cached(
        &embedder,
        &mut cache,
        &texts,
        window.tokens,
        |done, total| {
            if last.elapsed().as_millis() > 500 {
                say(&format!("embedding {done}/{total} chunks…"));
                last = std::time::Instant::now();
            }
            true
        },
    )
    .context("embedding stopped")?;
    if embedded == 0 {
        say(&format!(
            "{} chunks, all embeddings from the cache: nothing embedded",
            texts.len()
        ));
    } else {
        say(&format!(
            "embedded {embedded} of {} chunks in {:.1} s ({} from the cache)",
            texts.len(),
            started.elapsed().as_secs_f64(),
            texts.len() - embedded
        ));
    }
    if let Err(e) = cache.save() {
        say(&format!("embedding cache not saved: {e}"));
    }
    Ok((embedder, cache, vectors))
}

/// `chunkscope embed --format jsonl`: each chunk's vector with its file and index.
pub fn write_vectors_jsonl(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    vectors: &[Vec<f32>],
    out: &mut dyn Write,
) -> Result<()> {
    let mut i = 0;
    for f in &chunking.files {
        let doc = &engine.corpus.docs[f.doc];
        for c in f.chunks.iter() {
            let line = json!({
                "file": doc.path,
                "index": c.index,
                "start_byte": c.chunk.start,
                "end_byte": c.chunk.end,
                "window": window.tokens,
                "text": c.text(&doc.text),
                "vector": vectors.get(i),
            });
            writeln!(out, "{line}")?;
            i += 1;
        }
    }
    Ok(())
}

/// `chunkscope query`: both result lists.
#[allow(clippy::too_many_arguments)]
pub fn query(
    engine: &Engine,
    chunking: &Chunking,
    window: &Window,
    text: &str,
    k: usize,
    as_json: bool,
    say: &mut dyn FnMut(&str),
    out: &mut dyn Write,
) -> Result<()> {
    let (embedder, mut cache, vectors) = chunk_vectors(engine, chunking, window, say)?;
    let index = SearchIndex::build(engine, chunking, Some(&vectors), embedder.dim())?;
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
        "query {:?}  k {}  window {}",
        results.query, k, window.tokens
    )?;
    for (name, hits) in [
        ("BM25 (tantivy)", &results.bm25),
        ("vector", &results.vector),
    ] {
        writeln!(out, "{name}:")?;
        for h in hits.iter() {
            writeln!(
                out,
                "  {:>2} {:>7.3} {} #{} @tok {} {}{}",
                h.rank,
                h.score,
                h.file,
                h.chunk,
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
