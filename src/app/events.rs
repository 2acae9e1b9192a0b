//! What the workers report, applied to the model; stale generations are dropped here.

use std::sync::Arc;

use chunkscope_core::chunk::ChunkSettings;
use chunkscope_core::engine::{Chunking, Engine, FileChunks};
use chunkscope_core::eval::Report;
use chunkscope_core::jobs::{Event, JobError};
use chunkscope_core::rerank::stage::Reranked;
use chunkscope_core::search::Results;

use super::{Cmd, Model, PartialChunks, Probe, View};

/// One handler per event; each returns the commands the event calls for.
pub(super) fn on_event(m: &mut Model, ev: Event) -> Vec<Cmd> {
    match ev {
        Event::FilesChanged { paths } => m.reload(format!("{paths} file events")),
        Event::StoreWindow {
            generation,
            tokens,
            source,
        } => on_store_window(m, generation, tokens, source),
        Event::Loaded {
            generation,
            result,
            tokenized,
        } => on_loaded(m, generation, result, tokenized),
        Event::Chunked {
            generation,
            engine,
            result,
            millis,
        } => on_chunked(m, generation, engine, result, millis),
        Event::FocusChunked {
            generation,
            engine,
            settings,
            files,
            done,
            total,
            head,
        } => on_focus_chunked(
            m,
            (generation, engine, settings),
            files,
            (done, total),
            head,
        ),
        Event::ChunkProgress {
            generation,
            done,
            total,
        } => on_chunk_progress(m, generation, done, total),
        Event::Reading {
            generation,
            files,
            converted,
        } => on_reading(m, generation, files, converted),
        Event::SentenceProgress {
            generation,
            done,
            total,
        } => on_sentence_progress(m, generation, done, total),
        Event::EmbedProgress {
            generation,
            done,
            total,
            embedded,
            per_second,
            requests,
            focus_fresh,
        } => on_embed_progress(
            m,
            generation,
            (done, total),
            embedded,
            per_second,
            requests,
            focus_fresh,
        ),
        Event::Embedded {
            generation,
            total,
            embedded,
            kept,
            seconds,
        } => on_embedded(m, generation, total, embedded, kept, seconds),
        Event::Failed(e) => on_failed(m, e),
        Event::QueryDone {
            id,
            generation,
            result,
        } => on_query_done(m, id, generation, result),
        Event::Reranked {
            id,
            generation,
            result,
        } => on_reranked(m, id, generation, result),
        Event::EvalDone {
            generation,
            window,
            result,
        } => on_eval_done(m, generation, window, result),
        Event::ProbeDone {
            generation,
            file_pos,
            chunk,
            cosine,
            window,
        } => on_probe_done(
            m,
            generation,
            Probe {
                file_pos,
                chunk,
                cosine,
                window,
            },
        ),
    }
}

/// A store's vectors were made at another window than auto's: in force while the window is auto.
fn on_store_window(m: &mut Model, generation: u64, tokens: usize, source: String) -> Vec<Cmd> {
    if generation == m.generation {
        m.info = Some(format!("window {tokens}: {source} (w sets another)"));
        m.detected_window = Some((tokens, source));
    }
    Vec::new()
}

/// The corpus was read: chunk it.
fn on_loaded(
    m: &mut Model,
    generation: u64,
    result: Result<Arc<Engine>, JobError>,
    tokenized: usize,
) -> Vec<Cmd> {
    if generation != m.generation {
        return Vec::new();
    }
    m.loading = false;
    m.reading = None;
    match result {
        Ok(engine) => {
            m.notes.extend(engine.corpus.notes());
            m.last_reload = m.last_reload.take().map(|w| {
                format!(
                    "{w}: {} files, {tokenized} tokenized again",
                    engine.corpus.docs.len()
                )
            });
            // The screen keeps the engine its chunking was made from until the new
            // chunking arrives: chunk ranges are only valid against their own texts.
            if m.chunking.is_none() {
                adopt_engine(m, engine);
            }
            m.rechunk()
        }
        Err(e) => {
            m.error = Some(e.to_string());
            Vec::new()
        }
    }
}

/// The whole chunking arrived: show it with its engine, and embed it.
fn on_chunked(
    m: &mut Model,
    generation: u64,
    engine: Arc<Engine>,
    result: Result<Arc<Chunking>, JobError>,
    millis: u64,
) -> Vec<Cmd> {
    if generation != m.generation {
        return Vec::new();
    }
    m.sentences = None;
    // The whole chunking (or its failure) replaces what was chunked ahead of it.
    m.partial = None;
    match result {
        Ok(c) => {
            if !m.engine.as_ref().is_some_and(|e| Arc::ptr_eq(e, &engine)) {
                adopt_engine(m, engine);
            }
            m.chunking = Some(c);
            // An expected chunk is a position in the old chunking: forget it (a store's
            // chunks never move).
            if m.store.is_none() {
                m.query.expect = None;
            }
            m.chunked_generation = generation;
            // The find view's results point into the old chunking: find them again.
            m.find.found = super::find::results(m);
            m.find.selected = m.find.selected.min(m.find.found.len().saturating_sub(1));
            m.last_chunk_millis = Some(millis);
            m.chunks.highlight = None;
            m.chunks.probe = None;
            m.clamp_focus();
            return m.embed_cmd();
        }
        Err(e) => m.error = Some(e.to_string()),
    }
    Vec::new()
}

fn on_chunk_progress(m: &mut Model, generation: u64, done: usize, total: usize) -> Vec<Cmd> {
    if generation == m.generation {
        let settings = m.settings.clone();
        let p = m.partial.get_or_insert_with(|| PartialChunks {
            generation,
            settings,
            files: Default::default(),
            head: None,
            done: 0,
            total,
        });
        if p.generation == generation {
            p.done = p.done.max(done);
            p.total = total;
        }
    }
    Vec::new()
}

fn on_reading(m: &mut Model, generation: u64, files: usize, converted: usize) -> Vec<Cmd> {
    if generation == m.generation {
        m.reading = Some((files, converted));
    }
    Vec::new()
}

fn on_sentence_progress(m: &mut Model, generation: u64, done: usize, total: usize) -> Vec<Cmd> {
    if generation == m.generation {
        m.sentences = (done < total).then_some((done, total));
    }
    Vec::new()
}

fn on_embed_progress(
    m: &mut Model,
    generation: u64,
    (done, total): (usize, usize),
    embedded: usize,
    per_second: f64,
    requests: Option<(usize, usize)>,
    focus_fresh: bool,
) -> Vec<Cmd> {
    if let Some(e) = m.embed.as_mut().filter(|e| e.generation == generation) {
        e.focus_fresh = focus_fresh;
        e.done = done;
        e.total = total;
        e.embedded = embedded;
        e.per_second = per_second;
        e.requests = requests;
    }
    Vec::new()
}

/// The vectors are ready: the eval pane, when open, evaluates the chunking with them.
fn on_embedded(
    m: &mut Model,
    generation: u64,
    total: usize,
    embedded: usize,
    kept: usize,
    seconds: f64,
) -> Vec<Cmd> {
    if let Some(e) = m.embed.as_mut().filter(|e| e.generation == generation) {
        e.kept = kept;
        e.done = total;
        e.total = total;
        e.embedded = embedded;
        e.finished = true;
        e.seconds = seconds;
    }
    if m.view == View::Eval {
        return m.start_eval();
    }
    Vec::new()
}

fn on_failed(m: &mut Model, e: JobError) -> Vec<Cmd> {
    m.error = Some(e.to_string());
    Vec::new()
}

/// The first stage's hits of query `id`, kept only for the latest query on the chunking shown.
fn on_query_done(
    m: &mut Model,
    id: u64,
    generation: u64,
    result: Result<Results, JobError>,
) -> Vec<Cmd> {
    if m.query.pending == Some(id) {
        m.query.pending = None;
        match result {
            Ok(r) if generation == m.chunked_generation => {
                m.query.results = Some(r);
                m.query.reranked = None;
                m.query.rerank_for = Some(id);
                m.query.selected = 0;
            }
            Ok(_) => {}
            Err(e) => m.error = Some(format!("query: {e}")),
        }
    }
    Vec::new()
}

fn on_reranked(
    m: &mut Model,
    id: u64,
    generation: u64,
    result: Result<Reranked, JobError>,
) -> Vec<Cmd> {
    // Only for the results on screen: a later query's first stage replaced them.
    if m.query.rerank_for == Some(id) && generation == m.chunked_generation {
        m.query.reranked = Some(result.map_err(|e| e.to_string()));
    }
    Vec::new()
}

/// An eval report, kept only when made for the chunking and window on screen.
fn on_eval_done(
    m: &mut Model,
    generation: u64,
    window: usize,
    result: Result<Arc<Report>, JobError>,
) -> Vec<Cmd> {
    m.eval.running = false;
    match result {
        Ok(r) if generation == m.chunked_generation && window == m.window().tokens => {
            m.eval.report = Some(r);
            m.eval.made_for = Some((generation, window));
            m.eval.selected = m.eval.selected.min(m.eval_len().saturating_sub(1));
        }
        Ok(_) => {}
        Err(e) => m.error = Some(format!("eval: {e}")),
    }
    Vec::new()
}

fn on_probe_done(m: &mut Model, generation: u64, probe: Probe) -> Vec<Cmd> {
    if generation == m.chunked_generation {
        m.chunks.probe = Some(probe);
    }
    Vec::new()
}

/// Files chunked ahead of the rest: shown at once when they were chunked from the texts on
/// screen (after a reload they wait for the whole chunking, which brings its engine). What
/// pointed into their old chunks (a highlight, a probe) is dropped, as a whole chunking does.
fn on_focus_chunked(
    m: &mut Model,
    (generation, engine, settings): (u64, Arc<Engine>, ChunkSettings),
    files: Vec<FileChunks>,
    (done, total): (usize, usize),
    head: bool,
) -> Vec<Cmd> {
    if generation != m.generation || !m.engine.as_ref().is_some_and(|e| Arc::ptr_eq(e, &engine)) {
        return Vec::new();
    }
    let p = match m.partial.take() {
        Some(p) if p.generation == generation => m.partial.insert(p),
        _ => m.partial.insert(PartialChunks {
            generation,
            settings: settings.clone(),
            files: Default::default(),
            head: None,
            done: 0,
            total,
        }),
    };
    p.settings = settings;
    p.done = p.done.max(done);
    p.total = total;
    // A file's first chunks only, or the whole file after them.
    p.head = match (head, files.first()) {
        (true, Some(f)) => Some(f.doc),
        _ => p.head.filter(|d| files.iter().all(|f| f.doc != *d)),
    };
    for f in files {
        if m.chunks
            .highlight
            .as_ref()
            .is_some_and(|h| h.file_pos == f.doc)
        {
            m.chunks.highlight = None;
            m.chunks.centre_on_match = false;
        }
        if m.chunks.probe.is_some_and(|pr| pr.file_pos == f.doc) {
            m.chunks.probe = None;
        }
        p.files.insert(f.doc, f);
    }
    m.clamp_focus();
    Vec::new()
}

/// Show `engine` (a reload's corpus): the selected file stays selected by its path.
fn adopt_engine(m: &mut Model, engine: Arc<Engine>) {
    let path = m
        .engine
        .as_ref()
        .and_then(|e| e.corpus.docs.get(m.chunks.selected))
        .map(|d| d.path.clone());
    let found = path.and_then(|p| engine.corpus.docs.iter().position(|d| d.path == p));
    if found != Some(m.chunks.selected) {
        m.chunks.focus_chunk = 0;
        m.chunks.scroll = 0;
    }
    m.chunks.selected = found
        .unwrap_or(m.chunks.selected)
        .min(engine.corpus.docs.len().saturating_sub(1));
    m.engine = Some(engine);
}
