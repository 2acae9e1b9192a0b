//! What the workers report, applied to the model; stale generations are dropped here.

use std::sync::Arc;

use chunkscope_core::engine::Engine;
use chunkscope_core::jobs::Event;

use super::{Cmd, Model, PartialChunks, Probe, View};

pub(super) fn on_event(m: &mut Model, ev: Event) -> Vec<Cmd> {
    match ev {
        Event::FilesChanged { paths } => m.reload(format!("{paths} file events")),
        Event::StoreWindow {
            generation,
            tokens,
            source,
        } => {
            if generation == m.generation {
                m.info = Some(format!("window {tokens}: {source} (w sets another)"));
                m.detected_window = Some((tokens, source));
            }
            Vec::new()
        }
        Event::Loaded {
            generation,
            result,
            tokenized,
        } => {
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
        Event::Chunked {
            generation,
            engine,
            result,
            millis,
        } => {
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
        Event::FocusChunked {
            generation,
            engine,
            settings,
            files,
            done,
            total,
        } => {
            on_focus_chunked(m, (generation, engine, settings), files, (done, total));
            Vec::new()
        }
        Event::ChunkProgress {
            generation,
            done,
            total,
        } => {
            if generation == m.generation {
                let settings = m.settings.clone();
                let p = m.partial.get_or_insert_with(|| PartialChunks {
                    generation,
                    settings,
                    files: Default::default(),
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
        Event::Reading {
            generation,
            files,
            converted,
        } => {
            if generation == m.generation {
                m.reading = Some((files, converted));
            }
            Vec::new()
        }
        Event::SentenceProgress {
            generation,
            done,
            total,
        } => {
            if generation == m.generation {
                m.sentences = (done < total).then_some((done, total));
            }
            Vec::new()
        }
        Event::EmbedProgress {
            generation,
            done,
            total,
            embedded,
            per_second,
            requests,
            focus_fresh,
        } => {
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
        Event::Embedded {
            generation,
            total,
            embedded,
            kept,
            seconds,
        } => {
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
        Event::Failed(e) => {
            m.error = Some(e.to_string());
            Vec::new()
        }
        Event::QueryDone {
            id,
            generation,
            result,
        } => {
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
        Event::Reranked {
            id,
            generation,
            result,
        } => {
            // Only for the results on screen: a later query's first stage replaced them.
            if m.query.rerank_for == Some(id) && generation == m.chunked_generation {
                m.query.reranked = Some(result.map_err(|e| e.to_string()));
            }
            Vec::new()
        }
        Event::EvalDone {
            generation,
            window,
            result,
        } => {
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
        Event::ProbeDone {
            generation,
            file_pos,
            chunk,
            cosine,
            window,
        } => {
            if generation == m.chunked_generation {
                m.chunks.probe = Some(Probe {
                    file_pos,
                    chunk,
                    cosine,
                    window,
                });
            }
            Vec::new()
        }
    }
}

/// Files chunked ahead of the rest: shown at once when they were chunked from the texts on
/// screen (after a reload they wait for the whole chunking, which brings its engine). What
/// pointed into their old chunks (a highlight, a probe) is dropped, as a whole chunking does.
fn on_focus_chunked(
    m: &mut Model,
    (generation, engine, settings): (u64, Arc<Engine>, chunkscope_core::chunk::ChunkSettings),
    files: Vec<chunkscope_core::engine::FileChunks>,
    (done, total): (usize, usize),
) {
    if generation != m.generation || !m.engine.as_ref().is_some_and(|e| Arc::ptr_eq(e, &engine)) {
        return;
    }
    let p = match m.partial.take() {
        Some(p) if p.generation == generation => m.partial.insert(p),
        _ => m.partial.insert(PartialChunks {
            generation,
            settings: settings.clone(),
            files: Default::default(),
            done: 0,
            total,
        }),
    };
    p.settings = settings;
    p.done = p.done.max(done);
    p.total = total;
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
