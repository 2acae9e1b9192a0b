//! A RAG system's store opened as the corpus, read-only: the chunks its framework stored, the text
//! its embedder really saw (with what the framework put ahead of it) and the vectors it stored.
//! One file per kind of store (`jsonl`, `llamaindex`, `chroma`, `postgres`); another kind
//! (Qdrant, Weaviate, OpenSearch) is one more file that returns [`StoredChunk`]s.

pub mod check;
pub mod chroma;
mod json;
pub mod jsonl;
pub mod llamaindex;
mod meta;
pub mod postgres;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::index::vector::StoredVectors;

pub use meta::{python_str, Meta};

/// Why a store could not be read. Each names the store (its URI, never a password) and, for
/// files, the line.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("--store {0}: not a store URI (expected jsonl:PATH, llamaindex:DIR, chroma://HOST:PORT/COLLECTION or postgres://USER@HOST:PORT/DB?table=T)")]
    Uri(String),
    #[error("{file}:{line}: {what}")]
    Line {
        file: PathBuf,
        line: usize,
        what: String,
    },
    #[error("{uri}: {what}")]
    Read { uri: String, what: String },
    #[error("{uri}: cannot reach the server: {why}")]
    Unreachable { uri: String, why: String },
    #[error("{uri}: the read stopped after {read} of {expected} chunks: {why} (nothing is shown as complete)")]
    Interrupted {
        uri: String,
        read: usize,
        expected: usize,
        why: String,
    },
    #[error("stored vectors have {stored} dimensions, {model} makes {ours}: another model wrote them (pass the --model that did)")]
    Dimension {
        stored: usize,
        ours: usize,
        model: String,
    },
    /// The vectors to check the stored ones against could not be made.
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
}

impl StoreError {
    pub(crate) fn read(uri: &str, what: impl Into<String>) -> StoreError {
        StoreError::Read {
            uri: uri.to_string(),
            what: what.into(),
        }
    }
}

/// `[store]` in workbench.toml: the URI and, for stores whose names vary, which fields or columns
/// hold what. Every key is optional; the URI's own settings win over these.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreOptions {
    /// `jsonl:PATH`, `llamaindex:DIR`, `chroma://HOST:PORT/COLLECTION`,
    /// `postgres://USER@HOST:PORT/DB?table=T`.
    pub uri: Option<String>,
    /// Field (JSONL) or column (Postgres) names.
    pub id: Option<String>,
    pub text: Option<String>,
    pub vector: Option<String>,
    pub metadata: Option<String>,
    /// The metadata key naming the source document.
    pub source: Option<String>,
    /// Postgres: the table, and LangChain PGVector's collection name.
    pub table: Option<String>,
    pub collection: Option<String>,
    /// The environment variable holding the Postgres password (default PGPASSWORD).
    pub password_env: Option<String>,
    /// Chroma's tenant and database (default_tenant, default_database).
    pub tenant: Option<String>,
    pub database: Option<String>,
    /// Chunks asked per request or fetch (default 1,000).
    pub page: Option<usize>,
}

impl StoreOptions {
    pub(crate) fn page(&self) -> usize {
        self.page.unwrap_or(1000).clamp(1, 100_000)
    }
}

/// One chunk as the store holds it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredChunk {
    pub id: String,
    /// The text as stored.
    pub text: String,
    /// The metadata in stored order.
    pub metadata: Meta,
    /// The source document (metadata `source`, `file_path`, `doc_id` or `ref_doc_id`).
    pub source: Option<String>,
    /// Character offsets in the source document, where the framework kept them.
    pub start_char: Option<usize>,
    pub end_char: Option<usize>,
    /// What the framework put ahead of the text when it embedded it (LlamaIndex: the metadata
    /// not excluded from embedding, as `key: value` lines, and a blank line); empty for none.
    pub header: String,
    /// Bytes of `text` the embedder was given (LlamaIndex strips the embedded string's end).
    pub embedded_len: usize,
}

impl StoredChunk {
    /// A chunk whose whole text was embedded as it is.
    pub fn plain(id: String, text: String) -> StoredChunk {
        StoredChunk {
            id,
            embedded_len: text.len(),
            text,
            ..StoredChunk::default()
        }
    }

    /// Take `metadata` with what it says: the source document (`source_key`, else the names the
    /// frameworks use) and the offsets (LlamaIndex's `start_char_idx`/`end_char_idx`, LangChain's
    /// `start_index`, whose end is the start plus the text's characters).
    pub fn with_metadata(mut self, metadata: Meta, source_key: Option<&str>) -> StoredChunk {
        let offset = |k: &str| {
            metadata
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .map(|n| n as usize)
        };
        self.source = source_of(&metadata, source_key);
        self.start_char = offset("start_char_idx").or_else(|| offset("start_index"));
        self.end_char = offset("end_char_idx")
            .or_else(|| offset("start_index").map(|s| s.saturating_add(self.text.chars().count())));
        self.metadata = metadata;
        self
    }

    /// What the framework embedded of `text`: the header, then the text's first `embedded_len`
    /// bytes. The chunk's own text moves to the engine once measured (see
    /// [`check::engine_for`]), so the text is always passed in.
    pub fn embedded(&self, text: &str) -> String {
        format!("{}{}", self.header, &text[..self.embedded_len])
    }
}

/// A whole store, read to the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    /// The URI, as given (a password in it is never kept: see [`redact`]).
    pub uri: String,
    pub chunks: Vec<StoredChunk>,
    /// Chunk `i`'s stored vector in row `i` (unit length), one block shared with the search
    /// index.
    pub vectors: Arc<StoredVectors>,
}

impl Store {
    /// The stored vectors' dimension; `None` without vectors.
    pub fn dim(&self) -> Option<usize> {
        (self.vectors.count() > 0).then(|| self.vectors.dim())
    }

    /// Chunks with a stored vector.
    pub fn vectors(&self) -> usize {
        self.vectors.count()
    }

    /// Chunk `i`'s stored vector (unit length).
    pub fn vector(&self, i: usize) -> Option<&[f32]> {
        self.vectors.get(i)
    }
}

/// Progress while a store is read: chunks read so far and the total when the store says it.
pub type Progress<'a> = &'a mut dyn FnMut(usize, Option<usize>);

/// A store's chunks as they are read: each vector goes into the block as it comes, so a million
/// vectors are held once, not once per chunk and again in the block.
pub struct Sink<'a> {
    chunks: Vec<StoredChunk>,
    vectors: StoredVectors,
    progress: Progress<'a>,
    expected: Option<usize>,
}

impl<'a> Sink<'a> {
    fn new(progress: Progress<'a>) -> Sink<'a> {
        Sink {
            chunks: Vec::new(),
            vectors: StoredVectors::default(),
            progress,
            expected: None,
        }
    }

    /// The store says how many chunks it holds.
    pub(crate) fn expect(&mut self, n: usize) {
        self.expected = Some(n);
        self.chunks.reserve(n.saturating_sub(self.chunks.len()));
    }

    /// The next chunk and its vector; what is wrong with the vector otherwise.
    pub(crate) fn push(
        &mut self,
        chunk: StoredChunk,
        vector: Option<&[f32]>,
    ) -> Result<(), String> {
        self.vectors
            .push(vector)
            .map_err(|e| format!("chunk {}: {e}", chunk.id))?;
        self.chunks.push(chunk);
        if self.chunks.len().is_multiple_of(1000) {
            (self.progress)(self.chunks.len(), self.expected);
        }
        Ok(())
    }

    /// The vector of chunk `i` (pushed before), for stores that keep vectors apart.
    pub(crate) fn set_vector(&mut self, i: usize, v: &[f32]) -> Result<(), String> {
        self.vectors.set(i, v)
    }

    /// Chunks read so far.
    pub(crate) fn len(&self) -> usize {
        self.chunks.len()
    }
}

/// Open `uri` (laid over `opts`) and read every chunk.
pub fn open(uri: &str, opts: &StoreOptions, progress: Progress) -> Result<Store, StoreError> {
    let (kind, rest) = uri
        .split_once(':')
        .ok_or_else(|| StoreError::Uri(redact(uri)))?;
    let mut sink = Sink::new(progress);
    match kind {
        "jsonl" => jsonl::read(std::path::Path::new(rest), opts, &mut sink)?,
        "llamaindex" => llamaindex::read(std::path::Path::new(rest), &mut sink)?,
        "chroma" | "chroma+http" => chroma::read(uri, opts, &mut sink)?,
        "postgres" | "postgresql" => postgres::read(uri, opts, &mut sink)?,
        _ => return Err(StoreError::Uri(redact(uri))),
    }
    let Sink {
        chunks,
        vectors,
        progress,
        ..
    } = sink;
    progress(chunks.len(), Some(chunks.len()));
    let mut seen = std::collections::HashSet::new();
    if let Some(c) = chunks.iter().find(|c| !seen.insert(c.id.as_str())) {
        return Err(StoreError::read(
            &redact(uri),
            format!("id {} is stored twice", c.id),
        ));
    }
    Ok(Store {
        uri: redact(uri),
        chunks,
        vectors: Arc::new(vectors),
    })
}

/// The URI with any password taken out (`postgres://user:secret@host` -> `postgres://user@host`).
pub fn redact(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_string();
    };
    let (auth, tail) = match rest.find('@') {
        Some(at) if rest[..at].find('/').is_none() => (&rest[..at], &rest[at..]),
        _ => return uri.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}{tail}"),
        None => uri.to_string(),
    }
}

/// The value of `key` in a URI's query string (`a=1&b=2`).
pub(crate) fn query_param(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

/// The source of a chunk from its metadata, as the frameworks name it.
pub(crate) fn source_of(meta: &Meta, key: Option<&str>) -> Option<String> {
    let keys: &[&str] = match key {
        Some(k) => &[k][..],
        None => &["source", "file_path", "doc_id", "ref_doc_id"][..],
    };
    keys.iter().find_map(|k| match meta.get(k)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_kept() {
        assert_eq!(
            redact("postgres://app:s3cret@127.0.0.1:5432/rag?table=t"),
            "postgres://app@127.0.0.1:5432/rag?table=t"
        );
        assert_eq!(redact("postgres://app@h/db"), "postgres://app@h/db");
        assert_eq!(redact("jsonl:a@b:c"), "jsonl:a@b:c");
        let e = open(
            "postgres://app:s3cret@/x",
            &StoreOptions::default(),
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn unknown_kinds_are_named() {
        let e = open("qdrant://x", &StoreOptions::default(), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("qdrant://x"), "{e}");
    }
}
