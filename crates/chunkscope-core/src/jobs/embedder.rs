//! The embedding worker: embeds a chunking's texts in slices (cancellable, latest wins), reports
//! progress, builds the BM25 index at once and the vector index when the embeddings are in, and
//! answers queries and tail probes between slices, ahead of the bulk work.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use super::{Emitter, Event, JobError, Latest, Stamped, Wait};
use crate::embed::cache::default_path;
use crate::embed::driver::Driver;
use crate::embed::lowp::Precision;
use crate::embed::{cosine, EmbedCache, EmbedError, Embedder, SharedEmbedder};
use crate::engine::{Chunking, Engine};
use crate::rerank::stage::{self, Stage};
use crate::rerank::Reranker;
use crate::search::SearchIndex;

/// The sentence appended by the tail probe: distinctive, and unlike any corpus text.
pub const PROBE_SENTENCE: &str =
    " Zebra xylophone quartz: the violet submarine juggles seventeen marmalade comets.";

/// The bulk job, latest wins: embed a chunking's texts at a window and index them.
struct EmbedJob {
    engine: Arc<Engine>,
    chunking: Arc<Chunking>,
    window: usize,
}

/// Requests answered between slices of the bulk job, ahead of it.
enum Request {
    Query {
        id: u64,
        text: String,
        k: usize,
        /// The chunk that should have been found: (file position, chunk index).
        expect: Option<(usize, usize)>,
    },
    Probe {
        file_pos: usize,
        chunk: usize,
    },
    /// Evaluate the current chunking once its vectors are in.
    Eval {
        cases: PathBuf,
    },
    /// The files the user looks at (by position in the chunking): their chunks go first.
    Focus {
        files: Vec<usize>,
    },
    /// A bug, on purpose: the test that a dead worker is reported sends it.
    #[cfg(test)]
    Crash,
}

pub struct EmbedWorker {
    jobs: Latest<EmbedJob>,
    requests: Sender<Request>,
}

impl EmbedWorker {
    pub fn spawn<M: From<Event> + Send + 'static>(
        embedder: SharedEmbedder,
        out: Sender<M>,
    ) -> EmbedWorker {
        Self::spawn_with(embedder, Options::default(), out)
    }

    /// `spawn`, with the hybrid ranking's fusion constant and a reranker.
    pub fn spawn_with<M: From<Event> + Send + 'static>(
        embedder: SharedEmbedder,
        options: Options,
        out: Sender<M>,
    ) -> EmbedWorker {
        let jobs = Latest::default();
        let (requests, rx) = channel();
        let worker_jobs = jobs.clone();
        let out = Emitter::new(out);
        thread::Builder::new()
            .name("embedder".into())
            .spawn(move || {
                // A bug that panics the worker is reported, not left as a silent dead thread.
                let report = out.clone();
                if let Err(why) =
                    crate::panics::contain(move || worker(embedder, options, worker_jobs, rx, out))
                {
                    log::error!("the embedding worker panicked: {why}");
                    report.emit(Event::Failed(JobError::WorkerDied {
                        worker: "embedding",
                        why,
                    }));
                }
            })
            .expect("spawn embedder thread");
        EmbedWorker { jobs, requests }
    }

    /// Embed a new chunking; cancels the one in flight.
    pub fn embed(
        &self,
        generation: u64,
        engine: Arc<Engine>,
        chunking: Arc<Chunking>,
        window: usize,
    ) {
        self.jobs.submit(
            generation,
            EmbedJob {
                engine,
                chunking,
                window,
            },
        );
    }

    fn request(&self, r: Request) {
        let _ = self.requests.send(r);
        self.jobs.wake();
    }

    /// Search; with `expect`, the results also say where that chunk ranked and why.
    pub fn query(&self, id: u64, text: String, k: usize, expect: Option<(usize, usize)>) {
        self.request(Request::Query {
            id,
            text,
            k,
            expect,
        });
    }

    /// Evaluate the current chunking once its vectors are in (queued behind the embedding).
    pub fn eval(&self, cases: PathBuf) {
        self.request(Request::Eval { cases });
    }

    pub fn probe(&self, file_pos: usize, chunk: usize) {
        self.request(Request::Probe { file_pos, chunk });
    }

    /// The files on screen and those the latest query touched (positions in the chunking on
    /// screen): their chunks are embedded before the rest, also in a run already going.
    pub fn focus(&self, files: Vec<usize>) {
        self.request(Request::Focus { files });
    }
}

impl Drop for EmbedWorker {
    fn drop(&mut self) {
        self.jobs.close();
    }
}

/// How the worker searches beyond BM25 and vectors.
#[derive(Debug, Clone)]
pub struct Options {
    /// Reciprocal rank fusion's constant for the hybrid column.
    pub rrf_k: usize,
    /// A CrossEncoder folder that reranks every query's first stage (`[rerank] model`), in the
    /// precision asked for, reading `candidates` deep into BM25 and vectors each.
    pub rerank: Option<RerankSetup>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rrf_k: crate::search::RRF_K,
            rerank: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RerankSetup {
    pub model: String,
    pub precision: Precision,
    pub candidates: usize,
}

/// The reranker, loaded on the worker on first use; a failure is kept (and reported once).
enum RerankerSlot {
    None,
    Wanted(RerankSetup),
    Loaded(Box<Reranker>, usize),
    Failed(String),
}

impl RerankerSlot {
    /// The reranker and its depth, loaded now if it is wanted and not yet loaded; None when
    /// there is none; the reason when it cannot load.
    fn ready(&mut self) -> Result<Option<Stage<'_>>, JobError> {
        if let RerankerSlot::Wanted(setup) = self {
            let started = Instant::now();
            *self = match stage::open(&setup.model, setup.precision) {
                Ok(r) => {
                    log::info!(
                        "reranker {} loaded in {:.2} s",
                        setup.model,
                        started.elapsed().as_secs_f64()
                    );
                    RerankerSlot::Loaded(Box::new(r), setup.candidates)
                }
                Err(e) => RerankerSlot::Failed(e.to_string()),
            };
        }
        match self {
            RerankerSlot::None | RerankerSlot::Wanted(_) => Ok(None),
            RerankerSlot::Loaded(r, candidates) => Ok(Some(Stage {
                reranker: r,
                candidates: *candidates,
            })),
            RerankerSlot::Failed(why) => Err(JobError::Rerank(why.clone())),
        }
    }
}

/// What the worker holds of the current chunking.
struct Current {
    generation: u64,
    engine: Arc<Engine>,
    chunking: Arc<Chunking>,
    window: usize,
    index: Option<SearchIndex>,
}

impl Current {
    fn has_vectors(&self) -> bool {
        self.index.as_ref().is_some_and(|i| i.has_vectors())
    }
}

struct State<M> {
    embedder: Option<Arc<Embedder>>,
    cache: Option<EmbedCache>,
    current: Option<Current>,
    /// An evaluation waiting for the vectors of the current chunking.
    pending_eval: Option<PathBuf>,
    /// Queries and probes asked before the first chunking arrived: answered once it has.
    early: Vec<Request>,
    /// Files whose chunks are embedded first, and whether that changed since the last look.
    focus: Vec<usize>,
    focus_changed: bool,
    rrf_k: usize,
    reranker: RerankerSlot,
    out: Emitter<M>,
}

fn worker<M: From<Event>>(
    shared: SharedEmbedder,
    options: Options,
    jobs: Latest<EmbedJob>,
    requests: Receiver<Request>,
    out: Emitter<M>,
) {
    let mut st = State {
        embedder: None,
        cache: None,
        current: None,
        pending_eval: None,
        early: Vec::new(),
        focus: Vec::new(),
        focus_changed: false,
        rrf_k: options.rrf_k,
        reranker: options
            .rerank
            .map_or(RerankerSlot::None, RerankerSlot::Wanted),
        out,
    };
    loop {
        let job = jobs.wait();
        if matches!(job, Wait::Closed) {
            return;
        }
        if !st.load(&shared) {
            // Drop the requests: without a model there is nothing to answer with.
            requests.try_iter().for_each(drop);
            continue;
        }
        if let Wait::Job(job) = job {
            run_embed(&mut st, &requests, job);
        }
        st.serve_requests(&requests);
    }
}

impl<M: From<Event>> State<M> {
    /// The model and its cache, loaded on first use; false (and reported) when it cannot load.
    fn load(&mut self, shared: &SharedEmbedder) -> bool {
        if self.embedder.is_some() {
            return true;
        }
        match shared.get() {
            Ok(e) => {
                self.cache = Some(EmbedCache::open(&default_path(&e.model_key), e.dim()));
                self.embedder = Some(e);
                true
            }
            Err(e) => {
                self.out.emit(Event::Failed(e.into()));
                false
            }
        }
    }

    /// Answer queued queries and probes; an evaluation waits for the vectors.
    fn serve_urgent(&mut self, requests: &Receiver<Request>) {
        // A finished approximate index is installed before the next query is answered.
        if let Some(stats) = self
            .current
            .as_mut()
            .and_then(|c| c.index.as_mut())
            .and_then(|ix| ix.poll_ann())
        {
            log::info!("approximate vector index installed: {stats:?}");
        }
        if self.current.is_some() {
            for r in std::mem::take(&mut self.early) {
                serve(self, r);
            }
        }
        while let Ok(r) = requests.try_recv() {
            match r {
                Request::Eval { cases } => self.pending_eval = Some(cases),
                #[cfg(test)]
                Request::Crash => panic!("crash requested by a test"),
                Request::Focus { files } => {
                    self.focus_changed |= files != self.focus;
                    self.focus = files;
                }
                // Typed before the worker had a chunking: kept, not dropped.
                other if self.current.is_none() => self.early.push(other),
                other => serve(self, other),
            }
        }
    }

    /// Answer every queued request, and a waiting evaluation once the vectors are in.
    fn serve_requests(&mut self, requests: &Receiver<Request>) {
        self.serve_urgent(requests);
        if self.current.as_ref().is_some_and(Current::has_vectors) {
            if let Some(cases) = self.pending_eval.take() {
                serve(self, Request::Eval { cases });
            }
        }
    }
}

impl<M: From<Event>> State<M> {
    /// Chunks of the files in focus first in `todo`, the order otherwise kept.
    fn refocus(&mut self, todo: &mut [u64]) {
        self.focus_changed = false;
        if let Some(ix) = self.current.as_ref().and_then(|c| c.index.as_ref()) {
            focus_first(todo, &self.focus, ix);
        }
    }

    /// Make `chunking` current with its indexes: the previous ones updated in place when there
    /// are some (only chunks whose key changed are deleted or added; a new window drops every
    /// vector but not BM25), else built; stored vectors go in at once.
    fn index_chunking(
        &mut self,
        generation: u64,
        (engine, chunking): (&Arc<Engine>, &Arc<Chunking>),
        window: usize,
    ) {
        let dim = self.embedder.as_ref().map_or(0, |e| e.dim());
        let started = Instant::now();
        let index = match self.current.take() {
            Some(Current {
                index: Some(mut ix),
                window: old_window,
                ..
            }) => ix.update(engine, chunking).map(|ch| {
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
            }),
            _ => SearchIndex::build(engine, chunking, None, dim).map(|mut ix| {
                ix.rrf_k = self.rrf_k;
                ix
            }),
        };
        if let Err(e) = &index {
            self.out
                .emit(Event::Failed(JobError::Index(format!("{e:#}"))));
        }
        let mut index = index.ok();
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
}

fn run_embed<M: From<Event>>(
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
    st.index_chunking(generation, (&engine, &chunking), window);
    // Only the chunks without a vector are embedded (their embedded text: prefix + text), those
    // of the files in focus first.
    let (mut todo, all) = match st.current.as_ref().and_then(|c| c.index.as_ref()) {
        Some(ix) => (ix.missing_vectors(), ix.len()),
        None => (Vec::new(), 0),
    };
    st.refocus(&mut todo);
    let total = todo.len();
    let Some(mut driver) = st.embedder.as_deref().map(Driver::new) else {
        return;
    };
    let mut done = 0usize;
    while done < total {
        if cancel.is_cancelled() {
            return;
        }
        st.serve_urgent(requests);
        if st.focus_changed {
            // The user looked elsewhere: what is left is reordered, their files first.
            st.refocus(&mut todo[done..]);
        }
        let end = (done + driver.slice()).min(total);
        let Some(ix) = st.current.as_ref().and_then(|c| c.index.as_ref()) else {
            return;
        };
        let owned = embed_texts(ix, (&engine, &chunking), &todo[done..end]);
        let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
        // The focused files are fresh once none of their chunks is left in the queue.
        let fresh_from = |from: usize| todo[from..].iter().all(|&id| !in_focus(ix, id, &st.focus));
        let (fresh_before, focus_fresh) = (fresh_from(done), fresh_from(end));
        let (Some(embedder), Some(cache)) = (st.embedder.as_ref(), st.cache.as_mut()) else {
            return;
        };
        let (out, before) = (&st.out, driver.embedded);
        let mut heard = Instant::now();
        let progress = |d: usize| {
            // A server answers slowly: progress (with requests in flight and retries) goes out
            // as batches arrive and while waiting for them, not only per slice.
            if embedder.remote().is_some() && heard.elapsed().as_millis() >= 250 {
                heard = Instant::now();
                out.emit(progress_event(
                    generation,
                    (all - total + done + d, all),
                    before + d,
                    started,
                    embedder,
                    fresh_before,
                ));
            }
            !cancel.is_cancelled()
        };
        let vs = match driver.run(embedder, cache, &texts, window, progress) {
            Ok(vs) => vs,
            Err(EmbedError::Cancelled) => return,
            Err(e) => {
                // Keep what arrived, say why, and stop this chunking's run.
                st.out.emit(Event::Failed(e.into()));
                return;
            }
        };
        // Vectors go in slice by slice: a cancelled run leaves them for the next update.
        if let Some(ix) = st.current.as_mut().and_then(|c| c.index.as_mut()) {
            ix.add_vectors(&todo[done..end], &vs);
        }
        done = end;
        if let Some(embedder) = st.embedder.as_deref() {
            st.out.emit(progress_event(
                generation,
                (all - total + done, all),
                driver.embedded,
                started,
                embedder,
                focus_fresh,
            ));
        }
    }
    if let Some(cache) = st.cache.as_mut() {
        driver.save(cache);
    }
    let embedded = driver.embedded;
    let seconds = started.elapsed().as_secs_f64();
    log::info!(
        "generation {generation}: {all} chunks, {total} without a vector, {embedded} embedded in {seconds:.2} s"
    );
    st.out.emit(Event::Embedded {
        generation,
        total: all,
        embedded,
        kept: all - total,
        seconds,
    });
    // Past the threshold, an approximate index is built in the background from these vectors
    // (nothing happens below it, or when the graph is fresh).
    if let Some(ix) = st.current.as_mut().and_then(|c| c.index.as_mut()) {
        ix.start_ann_build();
    }
}

/// The texts the model reads for chunks `ids` (prefix + text).
fn embed_texts<'a>(
    ix: &SearchIndex,
    (engine, chunking): (&'a Engine, &'a Chunking),
    ids: &[u64],
) -> Vec<std::borrow::Cow<'a, str>> {
    ids.iter()
        .filter_map(|&id| ix.chunk_ref(id))
        .map(|(fp, c)| {
            let f = &chunking.files[fp];
            f.chunks[c].embed_text(&engine.corpus.docs[f.doc].text)
        })
        .collect()
}

/// Progress of a run: (done, total) chunks with a vector, `embedded` by this run since
/// `started`; with a server, its requests in flight and retries.
fn progress_event(
    generation: u64,
    (done, total): (usize, usize),
    embedded: usize,
    started: Instant,
    embedder: &Embedder,
    focus_fresh: bool,
) -> Event {
    use std::sync::atomic::Ordering::Relaxed;
    let secs = started.elapsed().as_secs_f64();
    Event::EmbedProgress {
        generation,
        done,
        total,
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

fn serve<M: From<Event>>(st: &mut State<M>, request: Request) {
    let (Some(embedder), Some(cache), Some(cur)) =
        (st.embedder.as_ref(), st.cache.as_mut(), st.current.as_ref())
    else {
        return;
    };
    match request {
        // Taken by `serve_urgent` before anything is served.
        Request::Focus { .. } => {}
        #[cfg(test)]
        Request::Crash => {}
        Request::Query {
            id,
            text,
            k,
            expect,
        } => {
            let result = match &cur.index {
                Some(ix) => ix
                    .search(
                        &cur.engine,
                        &cur.chunking,
                        embedder,
                        cache,
                        &text,
                        k,
                        cur.window,
                    )
                    .map_err(crate::explain::ExplainError::from)
                    .and_then(|mut r| {
                        let Some(id) = expect.and_then(|(f, c)| ix.id_of(f, c)) else {
                            return Ok(r);
                        };
                        // A query that could not be embedded says so in `vector_error`; the
                        // explanation then has no vector side.
                        let qv =
                            crate::explain::query_vector(ix, embedder, cache, &text, cur.window)
                                .unwrap_or_default();
                        r.expect = Some(Box::new(crate::explain::why_not(
                            ix,
                            &cur.engine,
                            &cur.chunking,
                            &r,
                            &qv,
                            id,
                            None,
                        )?));
                        Ok(r)
                    })
                    .map_err(|e| JobError::Search(format!("{e:#}"))),
                None => Err(JobError::NoIndex),
            };
            let answered = result.is_ok();
            st.out.emit(Event::QueryDone {
                id,
                generation: cur.generation,
                result,
            });
            // The reranker's column follows the first stage's, so those show at once.
            let Some(ix) = cur.index.as_ref().filter(|_| answered) else {
                return;
            };
            let result = match st.reranker.ready() {
                Ok(None) => return,
                Ok(Some(stage)) => stage::rerank_query(
                    stage,
                    ix,
                    (&cur.engine, &cur.chunking),
                    embedder,
                    cache,
                    &text,
                    cur.window,
                    k,
                )
                .map_err(|e| JobError::Rerank(format!("{e:#}"))),
                Err(e) => Err(e),
            };
            st.out.emit(Event::Reranked {
                id,
                generation: cur.generation,
                result,
            });
        }
        Request::Probe { file_pos, chunk } => {
            let Some(c) = cur
                .chunking
                .files
                .get(file_pos)
                .and_then(|f| f.chunks.get(chunk).map(|c| (f, c)))
            else {
                return;
            };
            let text = c.1.embed_text(&cur.engine.corpus.docs[c.0.doc].text);
            let probed = format!("{text}{PROBE_SENTENCE}");
            let vs = match embedder.embed(&[text.as_ref(), probed.as_str()], cur.window) {
                Ok(vs) => vs,
                Err(e) => {
                    st.out.emit(Event::Failed(e.into()));
                    return;
                }
            };
            let cos = vs.get(1).map_or(0.0, |b| cosine(&vs[0], b));
            st.out.emit(Event::ProbeDone {
                generation: cur.generation,
                file_pos,
                chunk,
                cosine: cos,
                window: cur.window,
            });
        }
        Request::Eval { cases } => {
            // The reranker is a fourth retriever when one is set; one that cannot load is
            // reported and the first stage evaluated without it.
            let stage = st.reranker.ready().unwrap_or_else(|e| {
                st.out.emit(Event::Failed(e));
                None
            });
            let result = load_cases(&cases, &cur.engine).and_then(|c| {
                let index = cur
                    .index
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("no index yet"))?;
                Ok(crate::eval::evaluate_with(
                    (&cur.engine, &cur.chunking, index),
                    embedder,
                    cache,
                    &c,
                    cur.window,
                    (&[1, 3, 5, 10], 5),
                    stage,
                )?)
            });
            st.out.emit(Event::EvalDone {
                generation: cur.generation,
                window: cur.window,
                result: result
                    .map(Arc::new)
                    .map_err(|e| JobError::Eval(format!("{e:#}"))),
            });
        }
    }
}

fn load_cases(path: &std::path::Path, engine: &Engine) -> anyhow::Result<crate::cases::Cases> {
    // TSV, SQuAD JSON, a JSONL query log, a BEIR folder or one of its qrels files.
    Ok(crate::cases::Cases::load(path, None, &engine.corpus)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic on the worker's thread becomes one `WorkerDied` event naming the panic, and the
    /// thread's death does not take the caller down.
    #[test]
    fn a_dead_worker_is_reported() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/tiny/bert-relu");
        let info = crate::model::ModelInfo::from_dir("tiny-bert", &dir, "test").unwrap();
        let (tx, rx) = channel::<Event>();
        let worker = EmbedWorker::spawn(SharedEmbedder::new(info), tx);
        worker.request(Request::Crash);
        let deadline = std::time::Duration::from_secs(60);
        loop {
            match rx.recv_timeout(deadline) {
                Ok(Event::Failed(JobError::WorkerDied { worker, why })) => {
                    assert_eq!(worker, "embedding");
                    assert!(why.contains("crash requested by a test"), "{why}");
                    break;
                }
                Ok(_) => {}
                Err(e) => panic!("no report of the dead worker: {e}"),
            }
        }
    }
}
