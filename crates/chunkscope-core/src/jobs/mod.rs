//! Work off the caller's thread: the pipeline (read, tokenize, chunk), the embedding worker
//! (vectors, indexes, queries) and the corpus watcher. They speak [`Event`]; a caller (the TUI, a
//! test, a service) maps events to its own messages through `From<Event>`.

mod cores;
pub mod embedder;
mod latest;
pub mod pipeline;
pub mod watcher;

use std::sync::Arc;

pub use cores::{Busy, Cores};
pub use latest::{CancelToken, Latest, Stamped, Wait};

use crate::embed::EmbedError;
use crate::engine::{Chunking, Engine};
use crate::eval::Report;
use crate::search::Results;

/// Why a worker's job gave no result, by stage. The messages name the file, line or server they
/// concern, as the stage's own error does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JobError {
    /// The corpus (or store) could not be read.
    #[error("{0}")]
    Read(String),
    /// The chunking failed (Max-Min without its sentence vectors, a bad setting).
    #[error("{0}")]
    Chunk(String),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("BM25 index: {0}")]
    Index(String),
    /// A query asked before the chunking's index exists.
    #[error("no index yet")]
    NoIndex,
    #[error("{0}")]
    Search(String),
    #[error("{0}")]
    Eval(String),
    /// The reranker could not be loaded or could not score (the query's first stage stands).
    #[error("reranker: {0}")]
    Rerank(String),
    /// A worker's thread stopped on a bug (a panic); its stage does no more work this session.
    #[error("the {worker} worker stopped: {why}; restart chunkscope (the log has the details)")]
    WorkerDied { worker: &'static str, why: String },
}

/// What the workers report.
#[derive(Debug)]
pub enum Event {
    /// The corpus was read and tokenized.
    Loaded {
        generation: u64,
        result: Result<Arc<Engine>, JobError>,
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
    FilesChanged { paths: usize },
    /// A chunking finished.
    Chunked {
        generation: u64,
        /// The engine (corpus and tokens) the chunking was made from.
        engine: Arc<Engine>,
        result: Result<Arc<Chunking>, JobError>,
        millis: u64,
    },
    /// The files in focus (the selected one, then the others on screen) re-chunked ahead of the
    /// rest of the corpus: a partial result for the screen, followed by `Chunked` of the same
    /// generation. Indexes, vectors and searches wait for `Chunked`.
    FocusChunked {
        generation: u64,
        /// The engine the files were chunked from (their ranges index its texts).
        engine: Arc<Engine>,
        settings: crate::chunk::ChunkSettings,
        /// The files, by document position (`FileChunks::doc`).
        files: Vec<crate::engine::FileChunks>,
        /// Files re-chunked so far in this generation (these included), of `total`.
        done: usize,
        total: usize,
        /// `files` is the selected file's first chunks only, those on screen
        /// (`pipeline::Focus::reach`): the whole file follows in the next `FocusChunked`.
        head: bool,
    },
    /// The rest of the corpus is being re-chunked: files done of `total` (a few times a second).
    ChunkProgress {
        generation: u64,
        done: usize,
        total: usize,
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
    /// A failure outside one generation's result: an embedding run (what was embedded is kept),
    /// the model's loading, the BM25 index, a worker that stopped.
    Failed(JobError),
    QueryDone {
        id: u64,
        generation: u64,
        result: Result<Results, JobError>,
    },
    /// The reranker's column for query `id`, after its `QueryDone`.
    Reranked {
        id: u64,
        generation: u64,
        result: Result<crate::rerank::stage::Reranked, JobError>,
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
        result: Result<Arc<Report>, JobError>,
    },
}

/// Where a worker sends its events: any channel whose message type can be made from one.
pub struct Emitter<M>(std::sync::mpsc::Sender<M>);

impl<M> Clone for Emitter<M> {
    fn clone(&self) -> Self {
        Emitter(self.0.clone())
    }
}

impl<M: From<Event>> Emitter<M> {
    pub fn new(out: std::sync::mpsc::Sender<M>) -> Emitter<M> {
        Emitter(out)
    }

    /// False once the receiver is gone (the worker may stop).
    pub fn emit(&self, ev: Event) -> bool {
        self.0.send(M::from(ev)).is_ok()
    }
}
