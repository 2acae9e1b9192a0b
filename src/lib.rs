//! chunkscope: see what your embedder never reads.
//!
//! The library is the engine; `main.rs` is a thin shell over it.
//! - [`core`]: pure logic (corpus, tokenize, chunk, window, measure, stats, model, config).
//! - [`work`]: threads and messages (the chunking pipeline).
//! - [`app`]: the TUI's model and update function.
//! - [`ui`]: pure view functions.
//! - [`tui`]: the terminal guard and the event loop.

pub mod app;
pub mod bench;
pub mod core;
pub mod headless;
pub mod tui;
pub mod ui;
pub mod work;
