//! Work off the caller's thread: the pipeline (read, tokenize, chunk), the embedding worker
//! (vectors, indexes, queries) and the corpus watcher. They speak [`Event`]; a caller (the TUI, a
//! test, a service) maps events to its own messages through `From<Event>`.

pub mod embedder;
mod latest;
pub mod pipeline;
pub mod watcher;

use std::sync::Arc;

pub use latest::{CancelToken, Latest, Stamped, Wait};

use crate::engine::{Chunking, Engine};
use crate::eval::Report;
use crate::search::Results;

/// What the workers report.
#[derive(Debug)]
pub enum Event {
    /// The corpus was read and tokenized.
    Loaded {
        generation: u64,
        result: Result<Arc<Engine>, String>,
        /// Files tokenized by this load (the others kept their tokens).
        tokenized: usize,
    },
    /// The corpus is being read (documents converted on the way).
    Reading {
        generation: u64,
        files: usize,
        converted: usize,
    },
    /// A store's vectors agree with the model at this window more than at the one `auto`
    /// resolves to (the 16 longest chunks embedded at the model's windows).
    StoreWindow {
        generation: u64,
        tokens: usize,
        source: String,
    },
    /// The corpus changed on disk (a debounced burst of `paths` events).
    FilesChanged {
        paths: usize,
    },
    /// A chunking finished.
    Chunked {
        generation: u64,
        /// The engine (corpus and tokens) the chunking was made from.
        engine: Arc<Engine>,
        result: Result<Arc<Chunking>, String>,
        millis: u64,
    },
    /// Max-Min chunking is embedding the sentences it needs (once; later turns reuse them).
    SentenceProgress {
        generation: u64,
        done: usize,
        total: usize,
    },
    /// Embedding progress of a chunking.
    EmbedProgress {
        generation: u64,
        done: usize,
        total: usize,
        embedded: usize,
        per_second: f64,
        /// With an embedding server: requests in flight and retries so far.
        requests: Option<(usize, usize)>,
        /// Every chunk of the files in focus (on screen, touched by the latest query) has its
        /// vector.
        focus_fresh: bool,
    },
    /// Every chunk of a chunking has its vector; the vector index is ready.
    Embedded {
        generation: u64,
        total: usize,
        embedded: usize,
        /// Vectors the index kept from the previous chunking (unchanged chunks).
        kept: usize,
        seconds: f64,
    },
    EmbedFailed(String),
    QueryDone {
        id: u64,
        generation: u64,
        result: Result<Results, String>,
    },
    ProbeDone {
        generation: u64,
        file_pos: usize,
        chunk: usize,
        cosine: f32,
        window: usize,
    },
    EvalDone {
        generation: u64,
        window: usize,
        result: Result<Arc<Report>, String>,
    },
}

/// Where a worker sends its events: any channel whose message type can be made from one.
pub struct Emitter<M>(std::sync::mpsc::Sender<M>);

impl<M: From<Event>> Emitter<M> {
    pub fn new(out: std::sync::mpsc::Sender<M>) -> Emitter<M> {
        Emitter(out)
    }

    /// False once the receiver is gone (the worker may stop).
    pub fn emit(&self, ev: Event) -> bool {
        self.0.send(M::from(ev)).is_ok()
    }
}
