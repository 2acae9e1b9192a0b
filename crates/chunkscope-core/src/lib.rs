//! The engine of chunkscope: what an embedder never reads, measured exactly.
//!
//! Files become [`corpus::Document`]s, tokenized once with the model's own tokenizer
//! ([`engine::Engine`]); a [`chunk::ChunkSettings`] chunks them ([`engine::Chunking`]), and each
//! [`measure::MeasuredChunk`] knows where the model's window ends: its
//! [`window::InvisibleTail`] is the text stored and returned but never embedded. [`search`]
//! builds BM25 (tantivy) and vector indexes over a chunking, [`eval`] measures recall by where
//! answers sit and, against [`judgments`] (BEIR folders, query logs), trec_eval's [`metrics`] by
//! document, and [`jobs`] runs all of it off the caller's thread, latest wins, reporting
//! [`jobs::Event`]s. No terminal code lives here.
//!
//! Audit a folder: every chunk that loses text past a 128-token window, and how much.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use std::sync::Arc;
//!
//! use chunkscope_core::chunk::{ChunkSettings, Preset};
//! use chunkscope_core::corpus::{Corpus, CorpusRules};
//! use chunkscope_core::engine::Engine;
//! use chunkscope_core::model;
//! use chunkscope_core::tokenize::EmbedTokenizer;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let folder = std::path::Path::new("../../examples"); // doctests run in the crate folder
//! let info = model::locate(model::DEFAULT_MODEL, &mut |line| eprintln!("{line}"))?;
//! let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
//! let corpus = Corpus::load(&folder, &CorpusRules::default())?;
//! let engine = Engine::new(info, tok, corpus)?;
//!
//! let mut settings = ChunkSettings::default(); // Spring AI's 800 cl100k tokens
//! Preset::SpringAi.apply(&mut settings);
//! let never = AtomicBool::new(false);
//! let chunking = engine.chunk_all(&settings, &never).expect("not cancelled");
//!
//! let mut lost = 0;
//! for file in &chunking.files {
//!     let doc = &engine.corpus.docs[file.doc];
//!     for chunk in file.chunks.iter() {
//!         if let Some(tail) = chunk.tail(128, engine.specials()) {
//!             let text = &chunk.text(&doc.text)[tail.start_byte..];
//!             let from: String = text.chars().take(30).collect();
//!             let (path, n) = (&doc.path, chunk.index);
//!             println!("{path} #{n}: {} tokens never embedded, from {from:?}", tail.tokens);
//!             lost += tail.tokens;
//!         }
//!     }
//! }
//! assert!(lost > 0, "800-token chunks overflow a 128-token window");
//! # Ok(())
//! # }
//! ```

pub mod cases;
pub mod chunk;
pub mod config;
pub mod corpus;
pub mod embed;
pub mod engine;
pub mod eval;
pub mod explain;
mod http;
pub mod index;
pub mod jobs;
pub mod judgments;
pub mod measure;
pub mod metadata;
pub mod metrics;
pub mod model;
pub mod names;
pub mod panics;
pub mod reclaim;
pub mod rerank;
pub mod search;
pub mod sentences;
pub mod stats;
pub mod store;
pub mod text;
pub mod tokenize;
pub mod window;
