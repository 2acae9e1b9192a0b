//! The embedding worker: embeds a chunking's texts in slices (cancellable, latest wins), reports
//! progress, builds the BM25 index at once and the vector index when the embeddings are in, and
//! answers queries and tail probes between slices, ahead of the bulk work.

mod bulk;
mod rerank_slot;
mod serve;

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;

use super::{Emitter, Event, JobError, Latest, Wait};
use crate::embed::cache::default_path;
use crate::embed::lowp::Precision;
use crate::embed::{EmbedCache, Embedder, SharedEmbedder};
use crate::engine::{Chunking, Engine};
use crate::search::SearchIndex;
use bulk::run_embed;
use rerank_slot::RerankerSlot;
use serve::serve;

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
                        why: why.message,
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
    /// Whether the pipeline is chunking: vectors and index builds wait for it between steps.
    cores: crate::jobs::Cores,
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
        cores: shared.cores().clone(),
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
