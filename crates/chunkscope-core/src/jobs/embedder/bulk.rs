//! The bulk job: make a chunking current with its indexes, embed the chunks without a vector in
//! slices (those of the files in focus first), answer urgent requests between slices, report
//! progress, and save the cache at the end.

use std::borrow::Cow;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Current, EmbedJob, Request, State};
use crate::embed::driver::Driver;
use crate::embed::{EmbedError, Embedder};
use crate::engine::{Chunking, Engine};
use crate::jobs::{CancelToken, Event, JobError, Stamped};
use crate::search::SearchIndex;

/// How long a forward pass waits, paused before a layer, for a chunking to end before it is
/// given up. A focused file's chunking (milliseconds) is waited for; a whole corpus's (a second
/// at 100 MB) is not: the pass's states (up to 4,096 tokens: about 40 MB with all-MiniLM-L6-v2)
/// would be held beside two chunkings at the workbench's memory peak, and the run is usually
/// cancelled when the new chunking arrives. A slice given up is embedded again, whole.
const PASS_GRACE: Duration = Duration::from_millis(150);

/// What became of a slice.
enum Slice {
    /// Embedded: whether the files in focus are fresh after it.
    Done(bool),
    /// Given up for a chunking that outlasted `PASS_GRACE`: to embed again once it is over.
    Again,
    /// The run stops here (cancelled, or failed and reported).
    Stop,
}

/// One embedding run of a chunking.
struct Run {
    generation: u64,
    cancel: CancelToken,
    engine: Arc<Engine>,
    chunking: Arc<Chunking>,
    window: usize,
    started: Instant,
    /// The chunks without a vector, in the order they are embedded.
    todo: Vec<u64>,
    /// Every chunk of the chunking.
    all: usize,
}

impl Run {
    /// Chunks with a vector once the first `done` of `todo` are embedded.
    fn with_vectors(&self, done: usize) -> usize {
        self.all - self.todo.len() + done
    }
}

pub(super) fn run_embed<M: From<Event>>(
    st: &mut State<M>,
    requests: &Receiver<Request>,
    job: Stamped<EmbedJob>,
) {
    let Stamped {
        generation,
        cancel,
        job: EmbedJob {
            engine,
            chunking,
            window,
        },
    } = job;
    let started = Instant::now();
    st.index_chunking(generation, (&engine, &chunking), window, &cancel);
    if cancel.is_cancelled() {
        // A newer chunking is waiting; this one's index may have been given up half-built.
        return;
    }
    let (todo, all) = st.missing_vectors();
    let Some(mut driver) = st.embedder.as_deref().map(Driver::new) else {
        return;
    };
    let mut run = Run {
        generation,
        cancel,
        engine,
        chunking,
        window,
        started,
        todo,
        all,
    };
    let total = run.todo.len();
    let mut done = 0usize;
    // The slice was given up once already: it waits for chunkings as between slices.
    let mut again = false;
    while done < total {
        if run.cancel.is_cancelled() {
            return;
        }
        st.serve_urgent(requests);
        if st.focus_changed {
            // The user looked elsewhere: what is left is reordered, their files first.
            st.refocus(&mut run.todo[done..]);
        }
        // A chunking the user waits for has the cores first; queries are still answered.
        let cores = st.cores.clone();
        cores.wait_idle(|| {
            st.serve_urgent(requests);
            run.cancel.is_cancelled()
        });
        if run.cancel.is_cancelled() {
            return;
        }
        let end = (done + driver.slice()).min(total);
        let focus_fresh = match st.embed_slice(&run, &mut driver, (done, end), again) {
            Slice::Done(fresh) => fresh,
            Slice::Again => {
                again = true;
                continue;
            }
            Slice::Stop => return,
        };
        again = false;
        done = end;
        if let Some(embedder) = st.embedder.as_deref() {
            st.out.emit(progress_event(
                &run,
                run.with_vectors(done),
                driver.embedded,
                embedder,
                focus_fresh,
            ));
        }
    }
    st.finish(&run, driver);
}

impl<M: From<Event>> State<M> {
    /// Chunks of the files in focus first in `todo`, the order otherwise kept.
    pub(super) fn refocus(&mut self, todo: &mut [u64]) {
        self.focus_changed = false;
        if let Some(ix) = self.current.as_ref().and_then(|c| c.index.as_ref()) {
            focus_first(todo, &self.focus, ix);
        }
    }

    /// The chunks of the current index without a vector (the model reads their prefix + text),
    /// those of the files in focus first, and the number of chunks in all.
    fn missing_vectors(&mut self) -> (Vec<u64>, usize) {
        let (mut todo, all) = match self.current.as_ref().and_then(|c| c.index.as_ref()) {
            Some(ix) => (ix.missing_vectors(), ix.len()),
            None => (Vec::new(), 0),
        };
        self.refocus(&mut todo);
        (todo, all)
    }

    /// Make `chunking` current with its indexes: the previous ones updated in place when there
    /// are some (only chunks whose key changed are deleted or added; a new window drops every
    /// vector but not BM25), else built; stored vectors go in at once.
    fn index_chunking(
        &mut self,
        generation: u64,
        (engine, chunking): (&Arc<Engine>, &Arc<Chunking>),
        window: usize,
        cancel: &CancelToken,
    ) {
        let dim = self.embedder.as_ref().map_or(0, |e| e.dim());
        let started = Instant::now();
        // Before each chunk: a running chunking first, then on unless a newer one is queued.
        let cores = self.cores.clone();
        let go_on = || {
            cores.wait_idle(|| cancel.is_cancelled());
            !cancel.is_cancelled()
        };
        let index = match self.current.take() {
            Some(Current {
                index: Some(ix),
                window: old_window,
                chunking: old,
                ..
            }) => {
                // The app and the chunking worker have moved to the new chunking: the old one
                // goes before the new index is built, not after (at 400,000 chunks it is 90 MB).
                drop(old);
                ix.update_unless(engine, chunking, &go_on).map(|moved| {
                    moved.map(|(mut ix, ch)| {
                        log::info!(
                            "generation {generation}: index updated in {:.1} ms: +{} -{} ={}",
                            started.elapsed().as_secs_f64() * 1000.0,
                            ch.added,
                            ch.removed,
                            ch.kept
                        );
                        if old_window != window {
                            ix.clear_vectors();
                        }
                        ix
                    })
                })
            }
            _ => SearchIndex::build_unless(engine, chunking, dim, &go_on).map(|built| {
                built.map(|mut ix| {
                    ix.rrf_k = self.rrf_k;
                    ix
                })
            }),
        };
        if matches!(index, Ok(None)) {
            log::info!("generation {generation}: index given up for a newer chunking");
        }
        if let Err(e) = &index {
            self.out
                .emit(Event::Failed(JobError::Index(format!("{e:#}"))));
        }
        let mut index = index.ok().flatten();
        if let Some(ix) = index.as_mut() {
            ix.add_stored_vectors(chunking);
        }
        self.current = Some(Current {
            generation,
            engine: Arc::clone(engine),
            chunking: Arc::clone(chunking),
            window,
            index,
        });
    }

    /// Embed `run.todo[done..end]` and add the vectors to the index.
    fn embed_slice(
        &mut self,
        run: &Run,
        driver: &mut Driver,
        (done, end): (usize, usize),
        again: bool,
    ) -> Slice {
        let Some(ix) = self.current.as_ref().and_then(|c| c.index.as_ref()) else {
            return Slice::Stop;
        };
        let owned = embed_texts(ix, (&run.engine, &run.chunking), &run.todo[done..end]);
        let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
        // The focused files are fresh once none of their chunks is left in the queue.
        let fresh_from = |from: usize| {
            run.todo[from..]
                .iter()
                .all(|&id| !in_focus(ix, id, &self.focus))
        };
        let (fresh_before, focus_fresh) = (fresh_from(done), fresh_from(end));
        let (Some(embedder), Some(cache)) = (self.embedder.as_ref(), self.cache.as_mut()) else {
            return Slice::Stop;
        };
        let (out, before) = (&self.out, driver.embedded);
        let cores = self.cores.clone();
        let mut heard = Instant::now();
        // Within a slice too (two or three forward passes of up to 4,096 tokens), before each
        // layer: a chunking the user waits for has the cores first, and one that outlasts
        // `PASS_GRACE` has the pass given up (once per slice: a slice given up before waits as
        // long as between slices, then shares the cores).
        let cancelled = || run.cancel.is_cancelled();
        let pause = || {
            if again {
                cores.wait_idle(cancelled);
                !cancelled()
            } else {
                cores.idle_within(PASS_GRACE, cancelled)
            }
        };
        let progress = |d: usize| {
            // A server answers slowly: progress (with requests in flight and retries) goes out
            // as batches arrive and while waiting for them, not only per slice.
            if embedder.remote().is_some() && heard.elapsed().as_millis() >= 250 {
                heard = Instant::now();
                out.emit(progress_event(
                    run,
                    run.with_vectors(done + d),
                    before + d,
                    embedder,
                    fresh_before,
                ));
            }
            !run.cancel.is_cancelled()
        };
        let vs = match driver.run(embedder, cache, &texts, run.window, progress, &pause) {
            Ok(vs) => vs,
            Err(EmbedError::Cancelled) if run.cancel.is_cancelled() => return Slice::Stop,
            Err(EmbedError::Cancelled) => return Slice::Again,
            Err(e) => {
                // Keep what arrived, say why, and stop this chunking's run.
                self.out.emit(Event::Failed(e.into()));
                return Slice::Stop;
            }
        };
        // Vectors go in slice by slice: a cancelled run leaves them for the next update.
        if let Some(ix) = self.current.as_mut().and_then(|c| c.index.as_mut()) {
            ix.add_vectors(&run.todo[done..end], &vs);
        }
        Slice::Done(focus_fresh)
    }

    /// Every slice is in: save the cache, report the run, and start the approximate index.
    fn finish(&mut self, run: &Run, mut driver: Driver) {
        if let Some(cache) = self.cache.as_mut() {
            driver.save(cache);
        }
        let (generation, all, total) = (run.generation, run.all, run.todo.len());
        let embedded = driver.embedded;
        let seconds = run.started.elapsed().as_secs_f64();
        log::info!(
            "generation {generation}: {all} chunks, {total} without a vector, {embedded} embedded in {seconds:.2} s"
        );
        self.out.emit(Event::Embedded {
            generation,
            total: all,
            embedded,
            kept: all - total,
            seconds,
        });
        // Past the threshold, an approximate index is built in the background from these
        // vectors (nothing happens below it, or when the graph is fresh).
        if let Some(ix) = self.current.as_mut().and_then(|c| c.index.as_mut()) {
            ix.start_ann_build();
        }
    }
}

/// The texts the model reads for chunks `ids` (prefix + text).
fn embed_texts<'a>(
    ix: &SearchIndex,
    (engine, chunking): (&'a Engine, &'a Chunking),
    ids: &[u64],
) -> Vec<Cow<'a, str>> {
    ids.iter()
        .filter_map(|&id| ix.chunk_ref(id))
        .map(|(fp, c)| {
            let f = &chunking.files[fp];
            f.chunks[c].embed_text(&engine.corpus.docs[f.doc].text)
        })
        .collect()
}

/// Progress of `run`: `done` of its chunks with a vector, `embedded` by this run so far; with a
/// server, its requests in flight and retries.
fn progress_event(
    run: &Run,
    done: usize,
    embedded: usize,
    embedder: &Embedder,
    focus_fresh: bool,
) -> Event {
    use std::sync::atomic::Ordering::Relaxed;
    let secs = run.started.elapsed().as_secs_f64();
    Event::EmbedProgress {
        generation: run.generation,
        done,
        total: run.all,
        embedded,
        per_second: if secs > 0.0 {
            embedded as f64 / secs
        } else {
            0.0
        },
        requests: embedder.remote().map(|r| {
            (
                r.traffic.in_flight.load(Relaxed),
                r.traffic.retries.load(Relaxed),
            )
        }),
        focus_fresh,
    }
}

/// True when chunk `id` belongs to a file in `focus`.
fn in_focus(ix: &SearchIndex, id: u64, focus: &[usize]) -> bool {
    ix.chunk_ref(id).is_some_and(|(fp, _)| focus.contains(&fp))
}

/// Chunks of the files in `focus` first, the order otherwise kept.
fn focus_first(todo: &mut [u64], focus: &[usize], ix: &SearchIndex) {
    todo.sort_by_key(|&id| !in_focus(ix, id, focus));
}
