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
//!
//! The crate's trimming is done here instead of inside it, with the same rules (`trim`): the
//! crate trims every candidate before sizing it, and its Markdown rule scans the whole candidate
//! for a line break char by char, which was a fifth of a whole-corpus re-chunking. Sizing the
//! trimmed candidate in our sizer gives the crate the sizes it would have computed; trimming the
//! chunks it returns, dropping the empty ones and those ending where an earlier one ended, is
//! what its iterator does after trimming.

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

/// The crate's trimming of a chunk at byte `at`: `Trim::All` (surrounding whitespace) for text;
/// for Markdown, `Trim::PreserveIndentation`: when the trimmed chunk holds a line break, only
/// leading line breaks go at the front (the indentation stays), otherwise as for text.
fn trim(markdown: bool, at: usize, chunk: &str) -> (usize, &str) {
    let kept = if markdown && memchr::memchr2(b'\n', b'\r', chunk.trim().as_bytes()).is_some() {
        chunk.trim_start_matches(['\n', '\r'])
    } else {
        chunk.trim_start()
    };
    (at + chunk.len() - kept.len(), kept.trim_end())
}

/// The unit's count of a chunk trimmed as the crate trims it, through the document's tokens
/// when the chunk is a slice of it.
struct Sizer<'a> {
    doc: &'a DocView<'a>,
    unit: Unit,
    markdown: bool,
}

impl ChunkSizer for Sizer<'_> {
    fn size(&self, chunk: &str) -> usize {
        let (_, chunk) = trim(self.markdown, 0, chunk);
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
        let sizer = || Sizer {
            doc,
            unit: self.unit,
            markdown: self.markdown,
        };
        let config = || {
            ChunkConfig::new(self.size.max(1))
                .with_trim(false)
                .with_sizer(sizer())
        };
        // Settings are validated (overlap < size) before a chunker is made; keep 0 otherwise.
        let config = config()
            .with_overlap(self.overlap)
            .unwrap_or_else(|_| config());
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
        let mut last_end = 0;
        slices
            .into_iter()
            .filter_map(|(s, e)| {
                let (s, kept) = trim(self.markdown, s, &doc.text[s..e]);
                let e = s + kept.len();
                // The crate's iterator: no empty chunk, none ending where one already ended.
                if kept.is_empty() || e <= last_end {
                    return None;
                }
                last_end = e;
                Some(Chunk::slice(s, e))
            })
            .collect()
    }
}
