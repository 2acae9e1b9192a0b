//! Threads and messages: the pipeline worker that loads and chunks off the UI thread.

pub mod embedder;
pub mod pipeline;
pub mod watcher;
