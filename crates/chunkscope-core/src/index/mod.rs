//! Retrieval indexes over chunks: BM25 (tantivy, in memory) and exact vector search.

pub mod bm25;
pub mod vector;

pub use bm25::Bm25;
pub use vector::VectorIndex;
