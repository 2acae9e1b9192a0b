//! Chunking an engine's documents: one alone (whole, or its first chunks), the files in focus,
//! the rest of the corpus across the cores, taking unchanged files from an earlier chunking.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{parallel_map, Chunking, Engine, FileChunks, Parent};
use crate::chunk::{Chunk, ChunkSettings, Chunker, DocView, SentenceVectors, Strategy};
use crate::measure::MeasuredChunk;

/// A selected document of at least this many bytes, when its chunker can stop early, has the
/// chunks on screen chunked and sent before the rest of it (a 4 MB file takes tens of
/// milliseconds whole; these a few).
pub const HEAD_BYTES: usize = 256 * 1024;

impl Engine {
    /// Chunk and measure one document, with the sentence vectors Max-Min reads.
    pub fn chunk_doc_with(
        &self,
        doc: usize,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
    ) -> FileChunks {
        self.chunk_doc_by(doc, settings, vectors, |c, view| Some(c.chunk(view)))
            .expect("every chunker chunks a whole document")
    }

    /// The first chunks of document `doc`, at least `n` unless it has fewer, measured as
    /// `chunk_doc_with` measures them (they are its first ones), and whether they are all of
    /// them; None where the strategy cannot stop early (`Chunker::chunk_first`).
    pub fn chunk_doc_first(
        &self,
        doc: usize,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        n: usize,
    ) -> Option<(FileChunks, bool)> {
        let mut whole = false;
        let file = self.chunk_doc_by(doc, settings, vectors, |c, view| {
            let (chunks, all) = c.chunk_first(view, n)?;
            whole = all;
            Some(chunks)
        })?;
        Some((file, whole))
    }

    /// What a knob turn draws first of a large document: at least its first `reach` chunks
    /// (`chunk_doc_first`) when it holds `HEAD_BYTES` or more and its chunker can stop early,
    /// with whether they are all of them; None otherwise (it is chunked whole at once).
    pub fn chunk_doc_head(
        &self,
        doc: usize,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        reach: usize,
    ) -> Option<(FileChunks, bool)> {
        if reach == 0 || self.corpus.docs[doc].text.len() < HEAD_BYTES {
            return None;
        }
        self.chunk_doc_first(doc, settings, vectors, reach)
    }

    /// Chunk one document with `chunk` (given the strategy's chunker) and measure its chunks.
    fn chunk_doc_by(
        &self,
        doc: usize,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        chunk: impl FnOnce(&dyn Chunker, &DocView) -> Option<Vec<Chunk>>,
    ) -> Option<FileChunks> {
        let view = self.view(doc);
        let policy = &settings.metadata;
        let path = self.corpus.docs[doc].path.as_str();
        let spans = (settings.strategy == Strategy::MaxMin)
            .then(|| self.sentence_spans(doc, settings.unit, settings.size));
        let markdown = self.corpus.docs[doc].is_markdown();
        let mut raw = chunk(
            settings.chunker_for(vectors, spans, markdown).as_ref(),
            &view,
        )?;
        let front = if policy.embeds_anything() {
            crate::metadata::front_matter(view.text).0
        } else {
            Vec::new()
        };
        let mut parents: Vec<Parent> = Vec::new();
        let mut parent_of: Vec<Option<usize>> = vec![None; raw.len()];
        let secs = self.sections(doc);
        for (c, slot) in raw.iter_mut().zip(parent_of.iter_mut()) {
            let a = secs
                .partition_point(|s| s.end <= c.start)
                .min(secs.len() - 1);
            // Every strategy's chunk carries the heading path of the section it starts in.
            if c.heading.is_none() {
                c.heading = secs[a].heading.clone();
            }
            if !settings.parents {
                continue;
            }
            let b = secs
                .partition_point(|s| s.start < c.end)
                .saturating_sub(1)
                .max(a);
            let p = match parents.iter().position(|p| p.sections == (a, b)) {
                Some(p) => p,
                None => {
                    parents.push(Parent {
                        start: secs[a].start.min(c.start),
                        end: secs[b].end.max(c.end),
                        heading: secs[a].heading.as_deref().cloned(),
                        sections: (a, b),
                    });
                    parents.len() - 1
                }
            };
            *slot = Some(p);
        }
        // Every chunk's token starts in one buffer for the file.
        let mut starts = Vec::with_capacity(view.text.len() / 3);
        let mut chunks: Vec<MeasuredChunk> = raw
            .into_iter()
            .zip(parent_of)
            .enumerate()
            .map(|(i, (c, parent))| {
                // The model's document prompt comes first, then the embedded metadata: both
                // take window tokens, as the prompt does in sentence-transformers.
                let prompt = self.model.modules.document_prompt();
                let meta = policy.prefix(path, c.heading.as_deref().map(String::as_str), i, &front);
                let prefix = match (prompt, meta) {
                    ("", None) => None,
                    (p, m) => Some(format!("{p}{}", m.unwrap_or_default())),
                }
                .map(|p| {
                    let n = self.tok.prefix_count(&p);
                    (p, n)
                });
                let mut m = MeasuredChunk::measure_into(&view, i, c, settings.unit, &mut starts)
                    .with_prefix(prefix);
                m.set_parent(parent);
                m
            })
            .collect();
        crate::measure::share_starts(&mut chunks, starts, &view);
        Some(FileChunks {
            doc,
            chunks: Arc::new(chunks),
            parents: Arc::new(parents),
        })
    }

    /// Chunk the whole corpus; `None` when `cancel` was raised part-way.
    pub fn chunk_all(&self, settings: &ChunkSettings, cancel: &AtomicBool) -> Option<Chunking> {
        self.chunk_all_with(settings, None, cancel)
    }

    /// `chunk_all_with`, taking the chunks of every file that `prev` chunked with the same
    /// settings and whose path and tokens are unchanged (a reload shares an unchanged file's
    /// tokens): after a save, only the saved file is chunked again. Returns how many files were
    /// taken from `prev`.
    pub fn chunk_all_reusing(
        &self,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        prev: Option<(&Engine, &Chunking)>,
        cancel: &AtomicBool,
    ) -> Option<(Chunking, usize)> {
        self.chunk_rest(settings, vectors, prev, &[], cancel, &|_| {})
    }

    /// Chunk the documents `docs` (the files on screen, ahead of the rest), in their order,
    /// taking unchanged files from `prev` as `chunk_all_reusing` does; spread over the cores.
    pub fn chunk_docs(
        &self,
        docs: &[usize],
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        prev: Option<(&Engine, &Chunking)>,
    ) -> Vec<FileChunks> {
        let known = reusable(settings, prev);
        let docs: Vec<usize> = docs
            .iter()
            .copied()
            .filter(|&d| d < self.corpus.docs.len())
            .collect();
        parallel_map(&docs, |&d| {
            self.chunk_or_take(d, settings, vectors, &known).0
        })
    }

    /// `chunk_all_reusing` after the files in `ready` were chunked with the same settings
    /// (`chunk_docs`): they are taken as they are. `progress` hears the number of files done
    /// (`ready` included) after each file, from the thread that chunked it; `cancel` is read
    /// between files. Returns how many files were taken from `prev`.
    pub fn chunk_rest(
        &self,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        prev: Option<(&Engine, &Chunking)>,
        ready: &[FileChunks],
        cancel: &AtomicBool,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Option<(Chunking, usize)> {
        let known = reusable(settings, prev);
        let ready: std::collections::HashMap<usize, &FileChunks> =
            ready.iter().map(|f| (f.doc, f)).collect();
        let done = std::sync::atomic::AtomicUsize::new(ready.len());
        let ids: Vec<usize> = (0..self.corpus.docs.len()).collect();
        let files = parallel_map(&ids, |&d| {
            if let Some(f) = ready.get(&d) {
                return Some(((*f).clone(), false));
            }
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let r = self.chunk_or_take(d, settings, vectors, &known);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            Some(r)
        });
        let files: Option<Vec<(FileChunks, bool)>> = files.into_iter().collect();
        let files = files?;
        let reused = files.iter().filter(|f| f.1).count();
        Some((
            Chunking {
                settings: settings.clone(),
                files: files.into_iter().map(|f| f.0).collect(),
                stored_vectors: None,
            },
            reused,
        ))
    }

    /// Document `d`'s chunks: taken from `known` (an earlier chunking's, same settings, same
    /// path and tokens) when there, else chunked now. True when taken.
    fn chunk_or_take(
        &self,
        d: usize,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        known: &Reusable<'_>,
    ) -> (FileChunks, bool) {
        let key = (
            Arc::as_ptr(&self.tokens[d]) as usize,
            self.corpus.docs[d].path.as_str(),
        );
        match known.get(&key) {
            Some(f) => (
                FileChunks {
                    doc: d,
                    chunks: Arc::clone(&f.chunks),
                    parents: Arc::clone(&f.parents),
                },
                true,
            ),
            None => (self.chunk_doc_with(d, settings, vectors), false),
        }
    }

    /// `chunk_all` with the sentence vectors Max-Min reads.
    pub fn chunk_all_with(
        &self,
        settings: &ChunkSettings,
        vectors: Option<&dyn SentenceVectors>,
        cancel: &AtomicBool,
    ) -> Option<Chunking> {
        self.chunk_all_reusing(settings, vectors, None, cancel)
            .map(|(c, _)| c)
    }
}

/// An earlier chunking's files by (tokens' address, path): a file whose tokens a reload shared
/// and whose path is the same has the same chunks under the same settings.
type Reusable<'a> = std::collections::HashMap<(usize, &'a str), &'a FileChunks>;

/// What `prev` offers to a chunking with `settings`: nothing unless its settings are these.
fn reusable<'a>(
    settings: &ChunkSettings,
    prev: Option<(&'a Engine, &'a Chunking)>,
) -> Reusable<'a> {
    prev.filter(|(_, c)| c.settings == *settings)
        .map(|(e, c)| {
            c.files
                .iter()
                .map(|f| {
                    let key = (
                        Arc::as_ptr(&e.tokens[f.doc]) as usize,
                        e.corpus.docs[f.doc].path.as_str(),
                    );
                    (key, f)
                })
                .collect()
        })
        .unwrap_or_default()
}
