//! How the indexes know a chunk: a key made of its file, index, range, heading and text, so a
//! new chunking updates them in place.

use crate::engine::{Chunking, Engine};
use crate::index::bm25::Bm25Doc;
use crate::measure::MeasuredChunk;

/// The key of a chunk: its file, index, byte range, heading and embedded text.
fn chunk_key(path: &str, c: &MeasuredChunk, doc: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    (c.index, c.start(), c.end()).hash(&mut h);
    c.heading().hash(&mut h);
    c.prefix().hash(&mut h);
    c.text(doc).hash(&mut h);
    h.finish()
}

/// (file position, chunk index) and key of every chunk, in chunking order.
pub(super) fn refs_and_keys(
    engine: &Engine,
    chunking: &Chunking,
) -> (Vec<(usize, usize)>, Vec<u64>) {
    let per_file = crate::engine::parallel_map(&chunking.files, |f| {
        let doc = &engine.corpus.docs[f.doc];
        f.chunks
            .iter()
            .map(|c| chunk_key(&doc.path, c, &doc.text))
            .collect::<Vec<u64>>()
    });
    let mut refs = Vec::new();
    let mut keys = Vec::new();
    for (fp, ks) in per_file.into_iter().enumerate() {
        for (c, k) in ks.into_iter().enumerate() {
            refs.push((fp, c));
            keys.push(k);
        }
    }
    (refs, keys)
}

pub(super) fn bm25_doc<'a>(
    engine: &'a Engine,
    chunking: &'a Chunking,
    (fp, c): (usize, usize),
    key: u64,
) -> Bm25Doc<'a> {
    let f = &chunking.files[fp];
    let doc = &engine.corpus.docs[f.doc];
    let ch = &f.chunks[c];
    Bm25Doc {
        id: key,
        text: ch.text(&doc.text),
        file: doc.path.as_str(),
        heading: ch.heading().unwrap_or(""),
    }
}
