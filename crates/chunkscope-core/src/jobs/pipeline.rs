//! A worker thread that reads and tokenizes the corpus and chunks it, latest wins (see
//! [`Latest`]): every result carries its generation so the receiver can drop stale ones.

use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use super::{Emitter, Event, JobError, Latest, Stamped, Wait};
use crate::chunk::{ChunkSettings, Strategy};
use crate::corpus::CorpusRules;
use crate::embed::SharedEmbedder;
use crate::engine::{Chunking, Engine};
use crate::model::ModelInfo;
use crate::sentences::SentenceStore;
use crate::tokenize::EmbedTokenizer;

/// What the worker is asked: read the corpus again, chunk it, or both (a reload queued behind
/// a rechunk is kept, never overwritten).
#[derive(Debug, Default)]
struct Work {
    reload: bool,
    settings: Option<ChunkSettings>,
    /// Documents chunked ahead of the rest: the selected file, then the others on screen.
    focus: Focus,
}

/// What is on screen when a knob turns: the files in view by position, the selected one first,
/// and how many of the selected file's chunks the chunk pane reaches (its focused chunk and those
/// drawn below it). A large selected file has these chunked before the rest of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Focus {
    pub files: Vec<usize>,
    pub reach: usize,
}

pub struct Pipeline {
    jobs: Latest<Work>,
}

/// What the worker needs to (re)load the corpus.
pub struct Source {
    pub corpus: PathBuf,
    pub rules: CorpusRules,
    pub model: ModelInfo,
    pub tok: Arc<EmbedTokenizer>,
    /// A RAG store read instead of the folder (`store.uri` set): its chunks are the chunking,
    /// whatever the knobs say.
    pub store: Option<crate::store::StoreOptions>,
}

impl Pipeline {
    /// Start the worker; Max-Min loads the model through `embedder` when it first needs it.
    pub fn spawn<M: From<Event> + Send + 'static>(
        source: Source,
        embedder: SharedEmbedder,
        out: std::sync::mpsc::Sender<M>,
    ) -> Pipeline {
        let jobs = Latest::default();
        let worker_jobs = jobs.clone();
        let out = Emitter::new(out);
        thread::Builder::new()
            .name("pipeline".into())
            .spawn(move || {
                // A bug that panics the worker is reported, not left as a silent dead thread.
                let report = out.clone();
                if let Err(why) =
                    crate::panics::contain(move || worker(source, embedder, worker_jobs, out))
                {
                    log::error!("the chunking worker panicked: {why}");
                    report.emit(Event::Failed(JobError::WorkerDied {
                        worker: "chunking",
                        why: why.message,
                    }));
                }
            })
            .expect("spawn pipeline thread");
        Pipeline { jobs }
    }

    pub fn load(&self, generation: u64) {
        self.jobs.submit_with(generation, |pending| {
            let (settings, focus) =
                pending.map_or((None, Focus::default()), |p| (p.settings, p.focus));
            Work {
                reload: true,
                settings,
                focus,
            }
        });
    }

    /// Chunk the whole corpus with `settings`; the answer is one `Chunked`.
    pub fn rechunk(&self, generation: u64, settings: ChunkSettings) {
        self.rechunk_focused(generation, settings, Focus::default());
    }

    /// Chunk the documents in `focus` (positions in the corpus: the selected file first, then
    /// the others on screen) before the rest: the first of them is answered at once with a
    /// `FocusChunked` (a large one's first `focus.reach` chunks in one before it, `head` set),
    /// the others with another one, then the rest of the corpus follows across the cores with
    /// `ChunkProgress` and ends with `Chunked`.
    pub fn rechunk_focused(&self, generation: u64, settings: ChunkSettings, focus: Focus) {
        self.jobs.submit_with(generation, |pending| Work {
            reload: pending.is_some_and(|p| p.reload),
            settings: Some(settings),
            focus,
        });
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.jobs.close();
    }
}

/// The worker's memory between jobs.
struct State {
    source: Source,
    embedder: SharedEmbedder,
    engine: Option<Arc<Engine>>,
    /// Max-Min's sentence vectors, opened on first use.
    sentences: Option<SentenceStore>,
    /// The last chunking and the engine it was made from: files a reload left unchanged keep
    /// their chunks.
    last: Option<(Arc<Engine>, Arc<Chunking>)>,
    /// A store's chunks, as read: every chunking job answers with them.
    stored: Option<Arc<Chunking>>,
}

fn worker<M: From<Event> + Send>(
    source: Source,
    embedder: SharedEmbedder,
    jobs: Latest<Work>,
    out: Emitter<M>,
) {
    let mut st = State {
        source,
        embedder,
        engine: None,
        sentences: None,
        last: None,
        stored: None,
    };
    while let Wait::Job(job) = jobs.wait() {
        if !st.answer(job, &out) {
            return;
        }
    }
}

impl State {
    /// One job: read the corpus again if asked, then chunk it if asked. False once nobody
    /// listens (the worker may stop).
    fn answer<M: From<Event> + Send>(&mut self, job: Stamped<Work>, out: &Emitter<M>) -> bool {
        let Stamped {
            generation,
            cancel,
            job: work,
        } = job;
        if work.reload {
            let (result, tokenized) = self.reload(generation, out);
            if !out.emit(Event::Loaded {
                generation,
                result,
                tokenized,
            }) {
                return false;
            }
        }
        let (Some(settings), Some(engine)) = (work.settings, self.engine.clone()) else {
            return true;
        };
        if let Some(stored) = &self.stored {
            let mut c = (**stored).clone();
            c.settings = settings;
            return out.emit(Event::Chunked {
                generation,
                engine,
                result: Ok(Arc::new(c)),
                millis: 0,
            });
        }
        let Some((result, started)) =
            self.chunk(generation, &cancel, (&engine, &settings), &work.focus, out)
        else {
            return true;
        };
        let millis = started.elapsed().as_millis() as u64;
        log::debug!("chunked generation {generation} in {millis} ms");
        out.emit(Event::Chunked {
            generation,
            engine,
            result,
            millis,
        })
    }

    /// Chunk `engine` with `settings`, `focus` first: the chunking (or why not) and when its
    /// timing started (after Max-Min's sentences, which have their own progress). None when
    /// there is nothing more to send: cancelled, nobody listens, or the failure already sent.
    fn chunk<M: From<Event> + Send>(
        &mut self,
        generation: u64,
        cancel: &super::CancelToken,
        (engine, settings): (&Arc<Engine>, &ChunkSettings),
        focus: &Focus,
        out: &Emitter<M>,
    ) -> Option<(Result<Arc<Chunking>, JobError>, Instant)> {
        let mut started = Instant::now();
        if let Err(e) = settings.validate() {
            return Some((Err(JobError::Chunk(e.to_string())), started));
        }
        let vectors = if settings.strategy == Strategy::MaxMin {
            match self.sentences_for(engine, settings, generation, cancel, out) {
                Err(e) => {
                    out.emit(Event::Chunked {
                        generation,
                        engine: Arc::clone(engine),
                        result: Err(e),
                        millis: 0,
                    });
                    return None;
                }
                Ok(false) => return None, // cancelled: a newer job is waiting
                Ok(true) => {
                    // The time shown excludes embedding sentences (it has its progress).
                    started = Instant::now();
                    self.sentences.as_ref()
                }
            }
        } else {
            None
        };
        let prev = self.last.as_ref().map(|(e, c)| (e.as_ref(), c.as_ref()));
        let vectors = vectors.map(|v| v as &dyn crate::chunk::SentenceVectors);
        let job = Rechunk {
            generation,
            engine,
            settings,
            vectors,
            prev,
            cancel,
        };
        // None: cancelled, or nobody listens. The embedding worker waits while it runs.
        let busy = self.embedder.cores().busy();
        let (c, reused) = job.run(focus, out)?;
        drop(busy);
        log::debug!("{reused} files kept their chunks");
        let c = Arc::new(c);
        self.last = Some((Arc::clone(engine), Arc::clone(&c)));
        Some((Ok(c), started))
    }
}

/// One chunking of the whole corpus, the files in focus first.
struct Rechunk<'a> {
    generation: u64,
    engine: &'a Arc<Engine>,
    settings: &'a ChunkSettings,
    vectors: Option<&'a dyn crate::chunk::SentenceVectors>,
    prev: Option<(&'a Engine, &'a Chunking)>,
    cancel: &'a super::CancelToken,
}

impl Rechunk<'_> {
    /// Chunk `focus` first (the first document alone, then the others), each step answered with
    /// a `FocusChunked`; then the rest across the cores, with progress. `None` when cancelled
    /// by a newer job (checked between documents) or when nobody listens any more.
    fn run<M: From<Event> + Send>(
        &self,
        focus: &Focus,
        out: &Emitter<M>,
    ) -> Option<(Chunking, usize)> {
        let total = self.engine.corpus.docs.len();
        let mut order: Vec<usize> = Vec::with_capacity(focus.files.len());
        for &d in &focus.files {
            if d < total && !order.contains(&d) {
                order.push(d);
            }
        }
        let mut ready: Vec<crate::engine::FileChunks> = Vec::with_capacity(order.len());
        let send = |files: Vec<crate::engine::FileChunks>, done: usize, head: bool| {
            out.emit(Event::FocusChunked {
                generation: self.generation,
                engine: Arc::clone(self.engine),
                settings: self.settings.clone(),
                files,
                done,
                total,
                head,
            })
        };
        // The selected file is what the user waits for: alone first (a large one's chunks on
        // screen before the rest of it), then the rest on screen.
        let (first, others) = order.split_at(order.len().min(1));
        if let Some(&d) = first.first() {
            if let Some((head, whole)) = self.head(d, focus.reach) {
                if whole {
                    ready.push(head.clone());
                }
                if !send(vec![head], ready.len(), !whole) {
                    return None;
                }
            }
        }
        for step in [first, others] {
            let step: Vec<usize> = step
                .iter()
                .copied()
                .filter(|d| ready.iter().all(|f| f.doc != *d))
                .collect();
            if step.is_empty() {
                continue;
            }
            if self.cancel.is_cancelled() {
                return None;
            }
            let files = self
                .engine
                .chunk_docs(&step, self.settings, self.vectors, self.prev);
            ready.extend(files.iter().cloned());
            if !send(files, ready.len(), false) {
                return None;
            }
        }
        // A few progress events a second, from whichever thread finishes a file.
        let last = std::sync::Mutex::new(Instant::now());
        let progress = |done: usize| {
            let Ok(mut at) = last.try_lock() else {
                return;
            };
            if at.elapsed().as_millis() >= 100 {
                *at = Instant::now();
                out.emit(Event::ChunkProgress {
                    generation: self.generation,
                    done,
                    total,
                });
            }
        };
        self.engine.chunk_rest(
            self.settings,
            self.vectors,
            self.prev,
            &ready,
            self.cancel.flag(),
            &progress,
        )
    }

    /// The selected document `d`'s first chunks (`Engine::chunk_doc_head`) unless this chunking
    /// takes its files from the previous one; with whether they are all of its chunks.
    fn head(&self, d: usize, reach: usize) -> Option<(crate::engine::FileChunks, bool)> {
        let reused = self.prev.is_some_and(|(_, c)| c.settings == *self.settings);
        if reused {
            return None;
        }
        self.engine
            .chunk_doc_head(d, self.settings, self.vectors, reach)
    }
}

impl State {
    /// Read the corpus again; unchanged files keep their tokens.
    fn reload<M: From<Event>>(
        &mut self,
        generation: u64,
        out: &Emitter<M>,
    ) -> (Result<Arc<Engine>, JobError>, usize) {
        if let Some(opts) = self.source.store.clone() {
            return self.read_store(&opts, generation, out);
        }
        let started = Instant::now();
        let s = &self.source;
        let mut last = Instant::now();
        let mut progress = |p: crate::corpus::ReadProgress| {
            // A few updates a second are enough for the status line.
            if last.elapsed().as_millis() >= 100 {
                last = Instant::now();
                out.emit(Event::Reading {
                    generation,
                    files: p.files,
                    converted: p.converted,
                });
            }
        };
        let result = crate::cases::load_corpus(&s.corpus, &s.rules, &mut progress)
            .map(|c| {
                Engine::refreshed(
                    self.engine.as_deref(),
                    s.model.clone(),
                    Arc::clone(&s.tok),
                    c,
                )
            })
            .map(|(e, n)| (Arc::new(e), n))
            .map_err(|e| JobError::Read(format!("{e:#}")));
        let tokenized = result.as_ref().map_or(0, |r| r.1);
        log::info!(
            "corpus loaded in {:?}, {tokenized} files tokenized",
            started.elapsed()
        );
        let result = result.map(|r| r.0);
        self.engine = result.as_ref().ok().cloned();
        (result, tokenized)
    }

    /// Read the store (chunks read so far reported as files), measured as one chunk per stored
    /// chunk; the chunking is kept for every later chunking job.
    fn read_store<M: From<Event>>(
        &mut self,
        opts: &crate::store::StoreOptions,
        generation: u64,
        out: &Emitter<M>,
    ) -> (Result<Arc<Engine>, JobError>, usize) {
        let uri = opts.uri.clone().unwrap_or_default();
        let mut last = Instant::now();
        let read = crate::store::open(&uri, opts, &mut |n, _| {
            if last.elapsed().as_millis() >= 100 {
                last = Instant::now();
                out.emit(Event::Reading {
                    generation,
                    files: n,
                    converted: 0,
                });
            }
        });
        let s = &self.source;
        let result = read
            .map_err(|e| JobError::Read(e.to_string()))
            .and_then(|mut store| {
                crate::store::check::engine_for(
                    &mut store,
                    s.model.clone(),
                    Arc::clone(&s.tok),
                    &ChunkSettings::default(),
                )
                .map(|(engine, chunking)| (store, engine, chunking))
                .map_err(|e| JobError::Read(format!("{e:#}")))
            });
        match result {
            Ok((store, engine, chunking)) => {
                self.detect_window(&store, (&engine, &chunking), generation, out);
                let engine = Arc::new(engine);
                let n = engine.corpus.docs.len();
                self.stored = Some(Arc::new(chunking));
                self.engine = Some(Arc::clone(&engine));
                (Ok(engine), n)
            }
            Err(e) => (Err(e), 0),
        }
    }

    /// Which of the model's windows the store's vectors were made at, said when it is not
    /// `auto`'s (the screen then uses it while the window is left to auto).
    fn detect_window<M: From<Event>>(
        &self,
        store: &crate::store::Store,
        (engine, chunking): (&Engine, &Chunking),
        generation: u64,
        out: &Emitter<M>,
    ) {
        use crate::window::WindowSpec;
        if store.vectors() == 0 {
            return;
        }
        let Ok(embedder) = self.embedder.get() else {
            return;
        };
        let auto = engine.model.windows.resolve(WindowSpec::Auto).tokens;
        let found =
            crate::store::check::store_window(store, engine, chunking, auto, &mut |t, w| {
                embedder.embed(t, w)
            });
        if let Ok(Some((tokens, source))) = found {
            out.emit(Event::StoreWindow {
                generation,
                tokens,
                source,
            });
        }
    }

    /// Give every sentence `settings` needs a vector, reporting progress; `Ok(false)` when
    /// cancelled by a newer job (what was embedded is kept).
    fn sentences_for<M: From<Event>>(
        &mut self,
        engine: &Engine,
        settings: &ChunkSettings,
        generation: u64,
        cancel: &super::CancelToken,
        out: &Emitter<M>,
    ) -> Result<bool, JobError> {
        let embedder = self
            .embedder
            .get()
            .map_err(|e| JobError::Chunk(format!("maxmin needs the embedding model: {e}")))?;
        let store = self
            .sentences
            .get_or_insert_with(|| SentenceStore::on_disk(engine, embedder.dim()));
        let started = Instant::now();
        let (done, missing) = store
            .embed_missing(engine, settings, &embedder, |done, total| {
                out.emit(Event::SentenceProgress {
                    generation,
                    done,
                    total,
                });
                !cancel.is_cancelled()
            })
            .map_err(|e| JobError::Chunk(format!("maxmin could not embed its sentences: {e}")))?;
        if missing > 0 {
            log::info!(
                "embedded {done} of {missing} sentences in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(done == missing)
    }
}
