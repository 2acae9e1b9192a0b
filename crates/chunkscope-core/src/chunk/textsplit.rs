//! benbrandt's `text-splitter` crate (the library behind the Python package
//! semantic-text-splitter), used as it is: `TextSplitter`, and `MarkdownSplitter` for Markdown
//! files, with capacity = `size`, overlap = `overlap` and its default trimming. Chunks are sized by
//! the unit: characters (the crate's `Characters`), the embedder's tokenizer (what the crate's
//! `tokenizers::Tokenizer` sizer counts: the content tokens of the chunk encoded alone, no
//! specials, truncation and padding off) or cl100k (its `CoreBPE` sizer: `encode_ordinary`).
//!
//! The sizers are ours so that the crate's `tokenizers` feature (which turns on the onig regex
//! engine for the whole tokenizers crate) stays off; their counts are the crate's own, taken from
//! the document's tokens where the chunk is a slice of it.

use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};

use super::{Chunk, Chunker, DocView};
use crate::tokenize::{count, Unit};

pub struct TextSplitterChunker {
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
    /// Markdown files go through `MarkdownSplitter`, everything else through `TextSplitter`.
    pub markdown: bool,
}

/// The unit's count of a chunk, through the document's tokens when the chunk is a slice of it.
struct Sizer<'a> {
    doc: &'a DocView<'a>,
    unit: Unit,
}

impl ChunkSizer for Sizer<'_> {
    fn size(&self, chunk: &str) -> usize {
        let base = self.doc.text.as_ptr() as usize;
        let at = (chunk.as_ptr() as usize).wrapping_sub(base);
        if at <= self.doc.text.len() && at + chunk.len() <= self.doc.text.len() {
            self.doc.count(self.unit, at, at + chunk.len())
        } else {
            count(self.unit, chunk, self.doc.tok)
        }
    }
}

impl Chunker for TextSplitterChunker {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let sizer = Sizer {
            doc,
            unit: self.unit,
        };
        let config = ChunkConfig::new(self.size.max(1)).with_sizer(sizer);
        // Settings are validated (overlap < size) before a chunker is made; keep 0 otherwise.
        let config = match config.with_overlap(self.overlap) {
            Ok(c) => c,
            Err(_) => ChunkConfig::new(self.size.max(1)).with_sizer(Sizer {
                doc,
                unit: self.unit,
            }),
        };
        let slices: Vec<(usize, usize)> = if self.markdown {
            MarkdownSplitter::new(config)
                .chunk_indices(doc.text)
                .map(|(at, s)| (at, at + s.len()))
                .collect()
        } else {
            TextSplitter::new(config)
                .chunk_indices(doc.text)
                .map(|(at, s)| (at, at + s.len()))
                .collect()
        };
        slices
            .into_iter()
            .map(|(s, e)| Chunk::slice(s, e))
            .collect()
    }
}
