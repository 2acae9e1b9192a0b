//! The embedding worker: embeds a chunking's texts in slices (cancellable, latest wins), reports
//! progress, builds the BM25 index at once and the vector index when the embeddings are in, and
//! answers queries and tail probes between slices, ahead of the bulk work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crate::app::Msg;
use crate::core::embed::cache::default_path;
use crate::core::embed::{cosine, EmbedCache, Embedder};
use crate::core::engine::{Chunking, Engine};
use crate::core::model::ModelInfo;
use crate::core::search::{embed_cached, SearchIndex};

/// Texts embedded between two looks at the queue.
const SLICE: usize = 64;

/// The sentence appended by the tail probe: distinctive, and unlike any corpus text.
pub const PROBE_SENTENCE: &str =
    " Zebra xylophone quartz: the violet submarine juggles seventeen marmalade comets.";

pub enum Job {
    Embed {
        generation: u64,
        engine: Arc<Engine>,
        chunking: Arc<Chunking>,
        window: usize,
    },
    Query {
        id: u64,
        text: String,
        k: usize,
    },
    Probe {
        file_pos: usize,
        chunk: usize,
    },
    Eval {
        cases: std::path::PathBuf,
    },
    /// Sent on the bulk queue after an urgent job, so an idle worker can block on one queue.
    Wake,
}

pub struct EmbedWorker {
    jobs: Sender<Job>,
    urgent: Sender<Job>,
    cancel: Arc<Mutex<Arc<AtomicBool>>>,
}

impl EmbedWorker {
    pub fn spawn(model: ModelInfo, out: Sender<Msg>) -> EmbedWorker {
        let (jobs, rx) = channel();
        let (urgent, urx) = channel();
        let cancel = Arc::new(Mutex::new(Arc::new(AtomicBool::new(false))));
        let flag = Arc::clone(&cancel);
        thread::Builder::new()
            .name("embedder".into())
            .spawn(move || worker(model, rx, urx, out, flag))
            .expect("spawn embedder thread");
        EmbedWorker {
            jobs,
            urgent,
            cancel,
        }
    }

    /// Embed a new chunking; cancels the one in flight.
    pub fn embed(
        &self,
        generation: u64,
        engine: Arc<Engine>,
        chunking: Arc<Chunking>,
        window: usize,
    ) {
        let mut g = self.cancel.lock().unwrap_or_else(|p| p.into_inner());
        g.store(true, Ordering::Relaxed);
        *g = Arc::new(AtomicBool::new(false));
        drop(g);
        let _ = self.jobs.send(Job::Embed {
            generation,
            engine,
            chunking,
            window,
        });
    }

    pub fn query(&self, id: u64, text: String, k: usize) {
        let _ = self.urgent.send(Job::Query { id, text, k });
        let _ = self.jobs.send(Job::Wake);
    }

    /// Evaluate the current chunking once its vectors are in (queued behind the embedding).
    pub fn eval(&self, cases: std::path::PathBuf) {
        let _ = self.jobs.send(Job::Eval { cases });
    }

    pub fn probe(&self, file_pos: usize, chunk: usize) {
        let _ = self.urgent.send(Job::Probe { file_pos, chunk });
        let _ = self.jobs.send(Job::Wake);
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

struct State {
    embedder: Option<Embedder>,
    cache: Option<EmbedCache>,
    current: Option<Current>,
    out: Sender<Msg>,
}

fn worker(
    model: ModelInfo,
    rx: Receiver<Job>,
    urgent: Receiver<Job>,
    out: Sender<Msg>,
    cancel: Arc<Mutex<Arc<AtomicBool>>>,
) {
    let mut st = State {
        embedder: None,
        cache: None,
        current: None,
        out,
    };
    let load = |st: &mut State| -> bool {
        if st.embedder.is_some() {
            return true;
        }
        match Embedder::load(&model) {
            Ok(e) => {
                st.cache = Some(EmbedCache::open(&default_path(&e.model_key), e.dim()));
                st.embedder = Some(e);
                true
            }
            Err(e) => {
                let _ = st.out.send(Msg::EmbedFailed(format!("{e:#}")));
                false
            }
        }
    };
    let mut pending_eval: Option<Job> = None;
    loop {
        if let Some(e) = pending_eval.take() {
            if st
                .current
                .as_ref()
                .is_some_and(|c| c.index.as_ref().is_some_and(|i| i.has_vectors()))
            {
                serve(&mut st, e);
            } else {
                pending_eval = Some(e);
            }
        }
        // Urgent jobs first; otherwise wait for either queue.
        let job = match urgent.try_recv() {
            Ok(j) => j,
            Err(TryRecvError::Disconnected) => return,
            // Idle: block until a job (or the wake-up that follows an urgent one) arrives.
            Err(TryRecvError::Empty) => match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            },
        };
        let job = match job {
            // Only the newest bulk job matters; an evaluation queued behind it still runs.
            Job::Embed { .. } => {
                let mut newest = job;
                let mut eval = None;
                for j in rx.try_iter() {
                    match j {
                        Job::Eval { .. } => eval = Some(j),
                        Job::Wake => {}
                        other => newest = other,
                    }
                }
                if let Some(e) = eval {
                    pending_eval = Some(e);
                }
                newest
            }
            Job::Wake => continue,
            other => other,
        };
        if !load(&mut st) {
            continue;
        }
        match job {
            Job::Embed {
                generation,
                engine,
                chunking,
                window,
            } => {
                let flag = Arc::clone(&cancel.lock().unwrap_or_else(|p| p.into_inner()));
                run_embed(
                    &mut st, &urgent, &flag, generation, engine, chunking, window,
                );
            }
            Job::Eval { cases } => {
                let ready = st
                    .current
                    .as_ref()
                    .is_some_and(|c| c.index.as_ref().is_some_and(|i| i.has_vectors()));
                if ready {
                    serve(&mut st, Job::Eval { cases });
                } else {
                    pending_eval = Some(Job::Eval { cases });
                }
            }
            other => serve(&mut st, other),
        }
    }
}

fn run_embed(
    st: &mut State,
    urgent: &Receiver<Job>,
    flag: &AtomicBool,
    generation: u64,
    engine: Arc<Engine>,
    chunking: Arc<Chunking>,
    window: usize,
) {
    let dim = st.embedder.as_ref().map_or(0, Embedder::dim);
    let started = Instant::now();
    // Update the indexes in place when there are some: only chunks whose key changed are deleted
    // or added, and only chunks without a vector are embedded. A new window invalidates every
    // vector but not BM25.
    let previous = st.current.take();
    let index = match previous {
        Some(Current {
            index: Some(mut ix),
            window: old_window,
            ..
        }) => ix.update(&engine, &chunking).map(|ch| {
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
        _ => SearchIndex::build(&engine, &chunking, None, dim),
    };
    if let Err(e) = &index {
        let _ = st.out.send(Msg::EmbedFailed(format!("BM25 index: {e:#}")));
    }
    st.current = Some(Current {
        generation,
        engine: Arc::clone(&engine),
        chunking: Arc::clone(&chunking),
        window,
        index: index.ok(),
    });
    // Only the chunks without a vector are embedded (their embedded text: prefix + text).
    let (todo, owned, all) = match st.current.as_ref().and_then(|c| c.index.as_ref()) {
        Some(ix) => {
            let todo = ix.missing_vectors();
            let owned: Vec<std::borrow::Cow<str>> = todo
                .iter()
                .filter_map(|&id| ix.chunk_ref(id))
                .map(|(fp, c)| {
                    let f = &chunking.files[fp];
                    f.chunks[c].embed_text(&engine.corpus.docs[f.doc].text)
                })
                .collect();
            (todo, owned, ix.len())
        }
        None => (Vec::new(), Vec::new(), 0),
    };
    let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
    let total = texts.len();
    let mut embedded = 0usize;
    let mut done = 0usize;
    while done < total {
        if flag.load(Ordering::Relaxed) {
            return;
        }
        while let Ok(j) = urgent.try_recv() {
            serve(st, j);
        }
        let end = (done + SLICE).min(total);
        let (Some(embedder), Some(cache)) = (st.embedder.as_ref(), st.cache.as_mut()) else {
            return;
        };
        let Some((vs, new)) = embed_cached(embedder, cache, &texts[done..end], window, |_, _| {
            !flag.load(Ordering::Relaxed)
        }) else {
            return;
        };
        embedded += new;
        // Vectors go in slice by slice: a cancelled run leaves them for the next update.
        if let Some(ix) = st.current.as_mut().and_then(|c| c.index.as_mut()) {
            ix.add_vectors(&todo[done..end], &vs);
        }
        done = end;
        let secs = started.elapsed().as_secs_f64();
        let _ = st.out.send(Msg::EmbedProgress {
            generation,
            done: all - total + done,
            total: all,
            embedded,
            per_second: if secs > 0.0 {
                embedded as f64 / secs
            } else {
                0.0
            },
        });
    }
    if let Some(cache) = st.cache.as_mut() {
        if let Err(e) = cache.save() {
            log::warn!("embedding cache not saved: {e}");
        }
    }
    log::info!(
        "generation {generation}: {all} chunks, {total} without a vector, {embedded} embedded in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let _ = st.out.send(Msg::Embedded {
        generation,
        total: all,
        embedded,
        kept: all - total,
        seconds: started.elapsed().as_secs_f64(),
    });
}

fn serve(st: &mut State, job: Job) {
    let (Some(embedder), Some(cache), Some(cur)) =
        (st.embedder.as_ref(), st.cache.as_mut(), st.current.as_ref())
    else {
        return;
    };
    match job {
        Job::Query { id, text, k } => {
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
                    .map_err(|e| format!("{e:#}")),
                None => Err("no index yet".into()),
            };
            let _ = st.out.send(Msg::QueryDone {
                id,
                generation: cur.generation,
                result,
            });
        }
        Job::Probe { file_pos, chunk } => {
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
            let vs = embedder.embed(&[text.as_ref(), probed.as_str()], cur.window);
            let cos = vs.get(1).map_or(0.0, |b| cosine(&vs[0], b));
            let _ = st.out.send(Msg::ProbeDone {
                generation: cur.generation,
                file_pos,
                chunk,
                cosine: cos,
                window: cur.window,
            });
        }
        Job::Eval { cases } => {
            let result = load_cases(&cases, &cur.engine).and_then(|c| {
                let index = cur
                    .index
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("no index yet"))?;
                crate::core::eval::evaluate(
                    &cur.engine,
                    &cur.chunking,
                    index,
                    embedder,
                    cache,
                    &c,
                    cur.window,
                    &[1, 3, 5, 10],
                    5,
                )
            });
            let _ = st.out.send(Msg::EvalDone {
                generation: cur.generation,
                window: cur.window,
                result: result.map(Arc::new).map_err(|e| format!("{e:#}")),
            });
        }
        Job::Embed { .. } | Job::Wake => {}
    }
}

fn load_cases(
    path: &std::path::Path,
    engine: &Engine,
) -> anyhow::Result<crate::core::cases::Cases> {
    use crate::core::cases::Cases;
    if path.extension().is_some_and(|e| e == "json") {
        Ok(Cases::from_squad(path)?.1)
    } else {
        Cases::from_tsv(path, &engine.corpus)
    }
}
