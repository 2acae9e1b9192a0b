//! Retrieval indexes over chunks: BM25 (tantivy, in memory), exact vector search, and an
//! approximate (HNSW) one for large corpora.

pub mod ann;
pub mod bm25;
pub mod vector;

pub use ann::{AnnIndex, AnnInfo, AnnParams, AnnStats, ANN_THRESHOLD};
pub use bm25::Bm25;
pub use vector::VectorIndex;
