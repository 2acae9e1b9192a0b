//! A worker thread that reads and tokenizes the corpus and chunks it, latest wins: a new job
//! raises the cancel flag of the one in flight, queued jobs are skipped for the newest, and every
//! result carries its generation so the app can drop stale ones.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crate::app::Msg;
use crate::core::chunk::{ChunkSettings, Strategy};
use crate::core::corpus::CorpusRules;
use crate::core::embed::Embedder;
use crate::core::engine::Engine;
use crate::core::model::ModelInfo;
use crate::core::sentences::SentenceStore;
use crate::core::tokenize::EmbedTokenizer;

enum Job {
    Load {
        generation: u64,
    },
    Chunk {
        generation: u64,
        settings: ChunkSettings,
    },
}

pub struct Pipeline {
    jobs: Sender<Job>,
    cancel: Arc<Mutex<Arc<AtomicBool>>>,
}

/// What the worker needs to (re)load the corpus.
pub struct Source {
    pub corpus: PathBuf,
    pub rules: CorpusRules,
    pub model: ModelInfo,
    pub tok: Arc<EmbedTokenizer>,
}

impl Pipeline {
    pub fn spawn(source: Source, out: Sender<Msg>) -> Pipeline {
        let (jobs, rx) = channel();
        let cancel = Arc::new(Mutex::new(Arc::new(AtomicBool::new(false))));
        let flag = Arc::clone(&cancel);
        thread::Builder::new()
            .name("pipeline".into())
            .spawn(move || worker(source, rx, out, flag))
            .expect("spawn pipeline thread");
        Pipeline { jobs, cancel }
    }

    /// Cancel whatever runs and hand back the new job's cancel flag holder.
    fn fresh_flag(&self) {
        let mut guard = self.cancel.lock().unwrap_or_else(|p| p.into_inner());
        guard.store(true, Ordering::Relaxed);
        *guard = Arc::new(AtomicBool::new(false));
    }

    pub fn load(&self, generation: u64) {
        self.fresh_flag();
        let _ = self.jobs.send(Job::Load { generation });
    }

    pub fn rechunk(&self, generation: u64, settings: ChunkSettings) {
        self.fresh_flag();
        let _ = self.jobs.send(Job::Chunk {
            generation,
            settings,
        });
    }
}

fn worker(
    source: Source,
    rx: Receiver<Job>,
    out: Sender<Msg>,
    cancel: Arc<Mutex<Arc<AtomicBool>>>,
) {
    let mut engine: Option<Arc<Engine>> = None;
    let mut semantic = Semantic::default();
    // The last chunking and the engine it was made from: files a reload left unchanged keep
    // their chunks.
    let mut last: Option<(Arc<Engine>, Arc<crate::core::engine::Chunking>)> = None;
    while let Ok(mut job) = rx.recv() {
        // Skip to the newest job; a pending load must still happen before any chunking.
        let mut must_load = matches!(job, Job::Load { .. });
        while let Ok(newer) = rx.try_recv() {
            must_load |= matches!(newer, Job::Load { .. });
            job = newer;
        }
        let flag = Arc::clone(&cancel.lock().unwrap_or_else(|p| p.into_inner()));
        let generation = match &job {
            Job::Load { generation } | Job::Chunk { generation, .. } => *generation,
        };
        if must_load {
            let started = Instant::now();
            let result = crate::core::cases::load_corpus(&source.corpus, &source.rules)
                .and_then(|c| {
                    Engine::refreshed(
                        engine.as_deref(),
                        source.model.clone(),
                        Arc::clone(&source.tok),
                        c,
                    )
                })
                .map(|(e, n)| (Arc::new(e), n))
                .map_err(|e| format!("{e:#}"));
            let tokenized = result.as_ref().map_or(0, |r| r.1);
            let result = result.map(|r| r.0);
            log::info!(
                "corpus loaded in {:?}, {tokenized} files tokenized",
                started.elapsed()
            );
            engine = result.as_ref().ok().cloned();
            let load_generation = match &job {
                Job::Load { generation } => *generation,
                // A chunk job queued behind a load: report the load under the generation the app
                // waits for, then chunk below.
                Job::Chunk { .. } => generation,
            };
            if out
                .send(Msg::Loaded {
                    generation: load_generation,
                    result,
                    tokenized,
                })
                .is_err()
            {
                return;
            }
            if matches!(job, Job::Load { .. }) {
                continue;
            }
        }
        if let (Job::Chunk { settings, .. }, Some(e)) = (&job, &engine) {
            let mut started = Instant::now();
            let prev = last.as_ref().map(|(le, lc)| (le.as_ref(), lc.as_ref()));
            let result = match settings.validate() {
                Err(m) => Some(Err(m)),
                Ok(()) if settings.strategy == Strategy::MaxMin => {
                    match semantic.ready(e, settings, generation, &flag, &out) {
                        Err(m) => Some(Err(m)),
                        Ok(None) => None,
                        Ok(Some(store)) => {
                            // The chunking time shown excludes a first embedding of sentences
                            // (which has its own progress).
                            started = Instant::now();
                            e.chunk_all_reusing(settings, Some(store), prev, &flag)
                                .map(Ok)
                        }
                    }
                }
                Ok(()) => e.chunk_all_reusing(settings, None, prev, &flag).map(Ok),
            };
            let result = result.map(|r| {
                r.map(|(c, reused)| {
                    log::debug!("{reused} files kept their chunks");
                    let c = Arc::new(c);
                    last = Some((Arc::clone(e), Arc::clone(&c)));
                    c
                })
            });
            let Some(result) = result else {
                continue; // cancelled: a newer job is queued
            };
            let millis = started.elapsed().as_millis() as u64;
            log::debug!("chunked generation {generation} in {millis} ms");
            if out
                .send(Msg::Chunked {
                    generation,
                    engine: Arc::clone(e),
                    result,
                    millis,
                })
                .is_err()
            {
                return;
            }
        }
    }
}

/// What Max-Min chunking needs beyond the tokens: the embedder (loaded on first use) and the
/// sentence vectors embedded so far.
#[derive(Default)]
struct Semantic {
    embedder: Option<Embedder>,
    store: Option<SentenceStore>,
    /// (engine, unit, size) whose sentences all have vectors: a threshold turn on the same
    /// corpus and sizes skips the search for missing sentences.
    complete: Option<(Arc<Engine>, crate::core::tokenize::Unit, usize)>,
}

impl Semantic {
    /// Embed the sentences `settings` needs that have no vector yet, reporting progress; `Ok(None)`
    /// when cancelled by a newer job (what was embedded is kept).
    fn ready(
        &mut self,
        engine: &Arc<Engine>,
        settings: &ChunkSettings,
        generation: u64,
        cancel: &AtomicBool,
        out: &Sender<Msg>,
    ) -> Result<Option<&SentenceStore>, String> {
        if self.embedder.is_none() {
            let e = Embedder::load(&engine.model)
                .map_err(|e| format!("maxmin needs the embedding model: {e:#}"))?;
            self.store = Some(SentenceStore::open(engine, e.dim(), true));
            self.embedder = Some(e);
        }
        let (Some(embedder), Some(store)) = (self.embedder.as_ref(), self.store.as_mut()) else {
            return Err("maxmin: no embedder".into());
        };
        if self.complete.as_ref().is_some_and(|(e, unit, size)| {
            Arc::ptr_eq(e, engine) && *unit == settings.unit && *size == settings.size
        }) {
            return Ok(self.store.as_ref());
        }
        let started = Instant::now();
        let (done, missing) = store.embed_missing(engine, settings, embedder, |done, total| {
            let _ = out.send(Msg::SentenceProgress {
                generation,
                done,
                total,
            });
            !cancel.load(Ordering::Relaxed)
        });
        if missing > 0 {
            log::info!(
                "embedded {done} of {missing} sentences in {:.2} s",
                started.elapsed().as_secs_f64()
            );
        }
        if done < missing {
            return Ok(None);
        }
        self.complete = Some((Arc::clone(engine), settings.unit, settings.size));
        Ok(self.store.as_ref())
    }
}
