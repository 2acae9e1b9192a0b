//! Per-chunk measurements in the three units, and the invisible tail at any window.

use std::borrow::Cow;
use std::sync::Arc;

use super::chunk::{Chunk, DocView, Heading};
use super::tokenize::{cl100k_count, Unit};
use super::window::{invisible_tail, InvisibleTail};

mod token_starts;

pub use token_starts::{StartsBuilder, TokenStarts};

/// A chunk with everything the screens and exports need, independent of the window in force.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredChunk {
    /// Place among its file's chunks. The counts below are u32 (a document is under 4 GiB), to
    /// keep each chunk small: every chunk of two chunkings is held while a knob turns.
    pub index: u32,
    /// Byte range in the document.
    start: u32,
    end: u32,
    /// The splitter's text when it differs from the document's bytes in the range, boxed once
    /// more so that the chunks without one (most) pay a pointer, not two words.
    own_text: Option<Box<Box<str>>>,
    /// The heading path governing the chunk, shared by the chunks of a section.
    heading: Option<Heading>,
    /// Start byte, relative to the chunk text, of each content embed token (specials excluded).
    pub token_starts: TokenStarts,
    pub chars: u32,
    /// Known when the splitter counts cl100k (`u32::MAX`: not known); otherwise computed on
    /// demand (`cl100k_tokens()`), since encoding every chunk again would dominate a knob change.
    cl100k: u32,
    /// Metadata embedded ahead of the text ("section: A > B" lines and a blank line), if any,
    /// with its content tokens: they come first in the window and push the tail forward.
    prefix: Option<Arc<Prefix>>,
    /// Index of the parent section in `FileChunks::parents` (embed small, return big);
    /// `u32::MAX`: none.
    parent: u32,
}

/// Give `chunks` (measured by `measure_into` into `buf`, from the document `doc`) their token
/// starts: one allocation of the exact size for all of them.
pub fn share_starts(chunks: &mut [MeasuredChunk], buf: Vec<u8>, doc: &DocView) {
    token_starts::share_all(
        chunks.iter_mut().map(|c| &mut c.token_starts),
        &buf,
        Some(doc.tokens),
    );
}

/// What a chunk embeds ahead of its text, and its content tokens.
#[derive(Debug, PartialEq)]
struct Prefix {
    text: Box<str>,
    tokens: usize,
}

/// The token starts of a chunk's own text when it is the document's bytes between replacement
/// characters (a window cut inside characters, decoded as Spring AI decodes it), for a tokenizer
/// that drops U+FFFD before it reads the text: the slice's tokens, moved by the replacement
/// characters ahead of it. None otherwise (the text is then tokenized on its own).
fn starts_between_replacements(doc: &DocView, chunk: &Chunk, own: &str) -> Option<StartsBuilder> {
    const REPLACEMENT: char = '\u{fffd}';
    if !doc.tok.drops_replacement() {
        return None;
    }
    let rest = own.trim_start_matches(REPLACEMENT);
    let lead = own.len() - rest.len();
    let inner = rest.trim_end_matches(REPLACEMENT);
    if inner.is_empty() || inner.len() == own.len() {
        return None;
    }
    // The slice starts at the chunk's start or just past the bytes that decoded to U+FFFD.
    let from = chunk.start.min(doc.text.len());
    let at = (from..=from + 4)
        .filter(|&a| doc.text.is_char_boundary(a))
        .find(|&a| doc.text.get(a..a + inner.len()) == Some(inner))?;
    let mut starts = StartsBuilder::with_capacity(inner.len() / 3 + 1);
    doc.tokens
        .each_embed_span(doc.text, at, at + inner.len(), doc.tok, |s, _| {
            starts.push((s - at + lead) as u32)
        });
    Some(starts)
}

impl MeasuredChunk {
    /// The chunk measured, its token starts in a buffer of their own.
    pub fn measure(doc: &DocView, index: usize, chunk: Chunk, unit: Unit) -> MeasuredChunk {
        let mut buf = Vec::new();
        let mut m = MeasuredChunk::measure_into(doc, index, chunk, unit, &mut buf);
        share_starts(std::slice::from_mut(&mut m), buf, doc);
        m
    }

    /// The chunk measured, its token starts appended to `buf` (a file's chunks' starts, shared
    /// by them once all are measured: `share_starts`).
    pub fn measure_into(
        doc: &DocView,
        index: usize,
        chunk: Chunk,
        unit: Unit,
        buf: &mut Vec<u8>,
    ) -> MeasuredChunk {
        let slice = match &chunk.text {
            None => doc
                .tokens
                .embed_slice(doc.text, chunk.start, chunk.end, doc.tok),
            Some(_) => None,
        };
        // The embed unit's length is read back from the starts (`unit_len`), once shared.
        let token_starts = match slice {
            // The document's own tokens but at the cut words: a few bytes for the chunk.
            Some(slice) => token_starts::run_into(&slice, chunk.start, buf),
            None => Self::own_starts(doc, &chunk).finish_into(buf),
        };
        let text = chunk.text(doc.text);
        let chars = text.chars().count();
        let cl100k = (unit == Unit::Cl100k).then(|| match &chunk.text {
            None => doc.count(Unit::Cl100k, chunk.start, chunk.end),
            Some(own) => cl100k_count(own),
        });
        let Chunk {
            start,
            end,
            text,
            heading,
        } = chunk;
        MeasuredChunk {
            index: index as u32,
            start: start as u32,
            end: end as u32,
            own_text: text.map(Box::new),
            heading,
            token_starts,
            chars: chars as u32,
            cl100k: cl100k.map_or(u32::MAX, |n| n as u32),
            prefix: None,
            parent: u32::MAX,
        }
    }

    /// The token starts of a chunk that is not a run of its document's tokens: a slice under a
    /// tokenizer that is not word-local, or a text of the splitter's own.
    fn own_starts(doc: &DocView, chunk: &Chunk) -> StartsBuilder {
        match &chunk.text {
            None => {
                // About one token per four bytes of prose: room for a few more.
                let mut starts = StartsBuilder::with_capacity((chunk.end - chunk.start) / 3 + 1);
                let from = chunk.start;
                doc.tokens
                    .each_embed_span(doc.text, from, chunk.end, doc.tok, |s, _| {
                        starts.push((s - from) as u32)
                    });
                starts
            }
            Some(own) => starts_between_replacements(doc, chunk, own).unwrap_or_else(|| {
                let spans = doc.tok.spans(own).unwrap_or_default();
                let mut starts = StartsBuilder::with_capacity(spans.len());
                spans.iter().for_each(|t| starts.push(t.start));
                starts
            }),
        }
    }

    /// Embed `prefix` ahead of the text (its token count is taken as given).
    pub fn with_prefix(mut self, prefix: Option<(String, usize)>) -> MeasuredChunk {
        self.prefix = prefix.map(|(text, tokens)| {
            Arc::new(Prefix {
                text: text.into_boxed_str(),
                tokens,
            })
        });
        self
    }

    /// Index of the parent section in `FileChunks::parents`, if any.
    pub fn parent(&self) -> Option<usize> {
        (self.parent != u32::MAX).then_some(self.parent as usize)
    }

    pub fn set_parent(&mut self, parent: Option<usize>) {
        self.parent = parent.map_or(u32::MAX, |p| p as u32);
    }

    /// First byte in the document.
    pub fn start(&self) -> usize {
        self.start as usize
    }

    /// End byte in the document (exclusive).
    pub fn end(&self) -> usize {
        self.end as usize
    }

    /// The splitter's text when it differs from the document's bytes `start()..end()`.
    pub fn own_text(&self) -> Option<&str> {
        self.own_text.as_deref().map(|t| &**t)
    }

    /// The heading path governing the chunk ("Runbook > Rotate keys > Staging"), for splitters
    /// that know the document's structure.
    pub fn heading(&self) -> Option<&str> {
        self.heading.as_deref().map(String::as_str)
    }

    /// Length in the splitter's own unit (embed: content tokens); `unit` is the chunking's
    /// (`ChunkSettings::unit`), the only one whose cl100k count is sure to be known.
    pub fn unit_len(&self, unit: Unit) -> usize {
        match unit {
            Unit::Chars => self.chars as usize,
            Unit::Cl100k => self.cl100k as usize,
            Unit::Embed => self.token_starts.len(),
        }
    }

    /// The metadata embedded ahead of the text, if any.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref().map(|p| &*p.text)
    }

    /// The prefix's content tokens (0 without one).
    pub fn prefix_tokens(&self) -> usize {
        self.prefix.as_deref().map_or(0, |p| p.tokens)
    }

    /// What the embedder is given: the prefix, then the text.
    pub fn embed_text<'a>(&'a self, doc: &'a str) -> Cow<'a, str> {
        match &self.prefix {
            None => Cow::Borrowed(self.text(doc)),
            Some(p) => Cow::Owned(format!("{}{}", p.text, self.text(doc))),
        }
    }

    /// Content tokens of the text that fit in `window` after the specials and the prefix.
    pub fn readable(&self, window: usize, specials: usize) -> usize {
        window.saturating_sub(specials + self.prefix_tokens())
    }

    /// Position in the model's input ([CLS] = 0) of the text's content token `token`.
    pub fn input_position(&self, token: usize, specials: usize) -> usize {
        specials / 2 + self.prefix_tokens() + token
    }

    pub fn text<'a>(&'a self, doc: &'a str) -> &'a str {
        self.own_text().unwrap_or(&doc[self.start()..self.end()])
    }

    /// Length in cl100k_base tokens (computed now unless the splitter counted them).
    pub fn cl100k_tokens(&self, doc: &str) -> usize {
        match self.cl100k {
            u32::MAX => cl100k_count(self.text(doc)),
            n => n as usize,
        }
    }

    /// Embed tokens the model would be given, specials and prefix included.
    pub fn embed_tokens(&self, specials: usize) -> usize {
        self.token_starts.len() + specials + self.prefix_tokens()
    }

    /// The part of the text past the window; an embedded prefix moves its start forward by exactly
    /// the prefix's tokens.
    pub fn tail(&self, window: usize, specials: usize) -> Option<InvisibleTail> {
        invisible_tail(&self.token_starts, window, specials + self.prefix_tokens())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chunk of two chunkings is held while a knob turns (about 400,000 each at 100 MB of
    /// corpus): each byte here is 0.8 MB of the peak. 168 bytes before the counts were u32 and
    /// the token starts one allocation; 96 before the range was two u32s, the own text and the
    /// heading a pointer each, and the length in the unit read from the other counts.
    #[test]
    fn a_measured_chunk_stays_small() {
        assert_eq!(std::mem::size_of::<MeasuredChunk>(), 64);
    }
}
