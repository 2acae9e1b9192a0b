//! Pure logic: no terminal code, no threads.

pub mod cases;
pub mod chunk;
pub mod config;
pub mod corpus;
pub mod embed;
pub mod engine;
pub mod eval;
pub mod index;
pub mod measure;
pub mod metadata;
pub mod model;
pub mod search;
pub mod sentences;
pub mod stats;
pub mod text;
pub mod tokenize;
pub mod window;
