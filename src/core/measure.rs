//! Per-chunk measurements in the three units, and the invisible tail at any window.

use super::chunk::{Chunk, DocView};
use super::tokenize::{cl100k_count, Unit};
use super::window::{invisible_tail, InvisibleTail};

/// A chunk with everything the screens and exports need, independent of the window in force.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredChunk {
    pub index: usize,
    pub chunk: Chunk,
    /// Start byte, relative to the chunk text, of each content embed token (specials excluded).
    pub token_starts: Vec<u32>,
    pub chars: usize,
    /// Known when the splitter counts cl100k; otherwise computed on demand (`cl100k_tokens()`),
    /// since encoding every chunk again would dominate a knob change.
    cl100k: Option<usize>,
    /// Length in the splitter's own unit (embed: content tokens).
    pub unit_len: usize,
}

impl MeasuredChunk {
    pub fn measure(doc: &DocView, index: usize, chunk: Chunk, unit: Unit) -> MeasuredChunk {
        let token_starts: Vec<u32> = match &chunk.text {
            None => doc
                .tokens
                .embed_spans_in(doc.text, chunk.start, chunk.end, doc.tok)
                .into_iter()
                .map(|(s, _)| (s - chunk.start) as u32)
                .collect(),
            Some(own) => doc
                .tok
                .spans(own)
                .map(|v| v.into_iter().map(|t| t.start).collect())
                .unwrap_or_default(),
        };
        let text = chunk.text(doc.text);
        let chars = text.chars().count();
        let cl100k = (unit == Unit::Cl100k).then(|| cl100k_count(text));
        let unit_len = match unit {
            Unit::Chars => chars,
            Unit::Cl100k => cl100k.unwrap_or(0),
            Unit::Embed => token_starts.len(),
        };
        MeasuredChunk {
            index,
            chunk,
            token_starts,
            chars,
            cl100k,
            unit_len,
        }
    }

    pub fn text<'a>(&'a self, doc: &'a str) -> &'a str {
        self.chunk.text(doc)
    }

    /// Length in cl100k_base tokens (computed now unless the splitter counted them).
    pub fn cl100k_tokens(&self, doc: &str) -> usize {
        self.cl100k.unwrap_or_else(|| cl100k_count(self.text(doc)))
    }

    /// Embed tokens the model would be given, specials included.
    pub fn embed_tokens(&self, specials: usize) -> usize {
        self.token_starts.len() + specials
    }

    pub fn tail(&self, window: usize, specials: usize) -> Option<InvisibleTail> {
        invisible_tail(&self.token_starts, window, specials)
    }

    /// Length of the tail in the splitter's own unit.
    pub fn tail_in_unit(&self, doc: &str, tail: &InvisibleTail, unit: Unit) -> usize {
        let rest = &self.text(doc)[tail.start_byte..];
        match unit {
            Unit::Chars => rest.chars().count(),
            Unit::Cl100k => cl100k_count(rest),
            Unit::Embed => tail.tokens,
        }
    }
}
