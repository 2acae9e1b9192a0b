//! LlamaIndex's node parsers (llama-index-core 0.14.25) as `get_nodes_from_documents` runs them on
//! a `Document(text=...)` without metadata, chunk for chunk:
//!
//! - `SentenceSplitter` (strategy `llamaindex`): a text over the size is cut at the paragraph
//!   separator `"\n\n\n"` (kept at the start of the piece after it), else into sentences by NLTK's
//!   untrained Punkt (see `punkt`; a sentence runs to where the next one starts), else by the
//!   regex `[^,.;。？！]+[,.;。？！]?|[,.;。？！]`, else at single spaces (kept at the start of the
//!   piece), else into characters; pieces still over the size are cut again the same way. The
//!   first two cuts mark their pieces as sentences, the others not. Pieces are merged greedily;
//!   a closed chunk hands its last pieces, whole, up to `overlap` tokens, to the next, which drops
//!   them from its front again while the next piece would not fit; a non-sentence piece that does
//!   not fit closes the chunk. Chunks are stripped (Python whitespace) and empty ones dropped.
//!   With `include_metadata` the tokens of the node's metadata string come off the size (none for
//!   a document without metadata).
//! - `TokenTextSplitter` (strategy `llamaindex-tokens`): cut at `" "`, else at `"\n"`, else into
//!   characters (separators kept at the start of the piece after them), recursively; merged
//!   greedily, a new chunk starting from the previous one's pieces less those from the front
//!   until it holds at most `overlap` tokens and the next piece fits. Stripped, empties dropped.
//!   The node parser takes 2 tokens for the metadata format off the size even with no metadata.
//! - `[MarkdownNodeParser(), SentenceSplitter()]` (strategy `llamaindex-markdown`): the text is cut
//!   before every `#…` heading line outside ``` fences; a section is its heading rebuilt as
//!   `"#" * level + " " + title`, its lines, stripped. Each section then goes through the
//!   SentenceSplitter with its `header_path` metadata (`"/"`, or the enclosing headings as
//!   `"/A/B/"`) taken off the size as `"header_path: /A/B/"`.
//!
//! Tokens are tiktoken's cl100k_base as LlamaIndex's default tokenizer counts them (special-token
//! text such as `<|endoftext|>` is one token), or characters, or the embedder's content tokens,
//! following the unit knob.
//!
//! Offsets are found as LlamaIndex finds `start_char_idx`: a chunk's start is the first
//! occurrence of its text in the document at or after one character past the previous chunk's
//! start (which can be an earlier, identical passage). Markdown chunks are found in the document
//! by the same rule (in the two-parser pipeline LlamaIndex's own `start_char_idx` is relative to
//! the section and, past each first section, mostly unset, so it is no offset to reproduce); a
//! chunk whose text is not found (past the previous chunk's start, or at all: a heading rebuilt
//! differently from the file, e.g. `#\tTitle`) has no offset in LlamaIndex: it carries its own
//! text, placed at the last chunk found.
//!
//! Not reproduced: LlamaIndex raises errors where these chunkers go on (a single character over
//! the size is a chunk of its own; a size the metadata leaves no room in counts as 1), and it
//! returns one empty node for an empty document, where these return no chunks.

mod md;
mod token;

use md::markdown;
use token::token_split;

use super::{punkt, span_list, Chunk, Chunker, DocView};
use crate::text::{is_python_space, strip_range};
use crate::tokenize::{cl100k, count, Remembered, Unit};

/// LlamaIndex's default tokenizer: cl100k_base with every special token allowed.
pub fn cl100k_tokens(text: &str) -> usize {
    if text.contains("<|") {
        cl100k().encode_with_special_tokens(text).len()
    } else {
        cl100k().encode_ordinary(text).len()
    }
}

/// Which LlamaIndex parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlamaParser {
    Sentence,
    Token,
    Markdown,
}

pub struct LlamaIndex {
    pub parser: LlamaParser,
    pub unit: Unit,
    /// `chunk_size`.
    pub size: usize,
    /// `chunk_overlap`.
    pub overlap: usize,
}

/// Counts tokens of any text in the unit.
struct Counter<'a> {
    doc: &'a DocView<'a>,
    unit: Unit,
    /// The document holds `<|` somewhere: only then can a slice of it hold a special token
    /// (looked for once, not in every slice counted: that search was a sixth of the time).
    specials: bool,
}

impl Counter<'_> {
    fn count(&self, s: &str) -> usize {
        // Most texts counted are slices of the document: count them from its tokens, which
        // re-encodes only the slice's two ends. Text with `<|` is left to the full encoder, which
        // reads special tokens there as LlamaIndex does.
        let inside = self.offset_in_doc(s);
        match (self.unit, inside) {
            (Unit::Chars, _) => s.chars().count(),
            (Unit::Cl100k, Some(at)) if !self.specials || !s.contains("<|") => {
                self.doc.count(Unit::Cl100k, at, at + s.len())
            }
            (Unit::Embed, Some(at)) => self.doc.count(Unit::Embed, at, at + s.len()),
            (unit, _) => self.remembered(unit, s),
        }
    }

    /// The count of a text that is not a slice of the document: a metadata line such as
    /// `header_path: /A/B/` repeats across a document's sections and across documents, and was
    /// counted again on every knob turn. Texts of up to 256 bytes are remembered per thread, by
    /// unit and tokenizer.
    fn remembered(&self, unit: Unit, s: &str) -> usize {
        const SHORT: usize = 256;
        thread_local! {
            static SEEN: std::cell::RefCell<Remembered<(Unit, u64)>> = Default::default();
        }
        let fresh = || match unit {
            Unit::Cl100k => cl100k_tokens(s),
            _ => count(unit, s, self.doc.tok),
        };
        if s.len() > SHORT {
            return fresh();
        }
        SEEN.with_borrow_mut(|seen| seen.count_or((unit, self.doc.tok.id()), s, fresh))
    }

    /// Punkt's sentence spans of `slice`, kept with the document when it is a slice of it.
    fn sentences(&self, slice: &str) -> std::sync::Arc<[(u32, u32)]> {
        let fits = slice.len() <= u32::MAX as usize;
        match (self.doc.memo, self.offset_in_doc(slice)) {
            (Some(memo), Some(at)) if fits => {
                memo.get_or(at, at + slice.len(), || punkt::spans(slice))
            }
            _ => span_list(punkt::spans(slice)),
        }
    }

    /// Where `s` starts in the document, when it is a slice of the document's text.
    fn offset_in_doc(&self, s: &str) -> Option<usize> {
        let base = self.doc.text.as_ptr() as usize;
        let at = (s.as_ptr() as usize).checked_sub(base)?;
        (at + s.len() <= self.doc.text.len()).then_some(at)
    }
}

impl Chunker for LlamaIndex {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let counter = Counter {
            doc,
            unit: self.unit,
            specials: memchr::memmem::find(doc.text.as_bytes(), b"<|").is_some(),
        };
        let text = doc.text;
        match self.parser {
            LlamaParser::Sentence => {
                let ranges = sentence_split(text, self.size, self.overlap, &counter);
                locate_all(text, &ranges)
            }
            LlamaParser::Token => self.tokens_up_to(doc, usize::MAX).0,
            LlamaParser::Markdown => markdown(text, self.size, self.overlap, &counter),
        }
    }

    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        (self.parser == LlamaParser::Token).then(|| self.tokens_up_to(doc, n))
    }
}

impl LlamaIndex {
    /// TokenTextSplitter's first `limit` chunks (all of them for `usize::MAX`), located, and
    /// whether they are all of them.
    fn tokens_up_to(&self, doc: &DocView, limit: usize) -> (Vec<Chunk>, bool) {
        let counter = Counter {
            doc,
            unit: self.unit,
            specials: memchr::memmem::find(doc.text.as_bytes(), b"<|").is_some(),
        };
        let size = self.size.saturating_sub(2).max(1);
        let (ranges, whole) = token_split(doc.text, size, self.overlap, &counter, limit);
        (locate_all(doc.text, &ranges), whole)
    }
}

/// Python's `haystack.find(needle, from)` in bytes (`from` on a char boundary).
fn find_from(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    if from > haystack.len() {
        return None;
    }
    haystack[from..].find(needle).map(|i| i + from)
}

/// Chunks for `ranges` of `doc`, located as LlamaIndex locates them.
fn locate_all(doc: &str, ranges: &[(usize, usize)]) -> Vec<Chunk> {
    let mut place = Locator::default();
    ranges
        .iter()
        .map(|&(s, e)| place.slice(doc, s, e))
        .collect()
}

/// `find_from(doc, &doc[s..e], from)` for `from <= s`, which is at most `s`: an earlier match
/// must begin with the text's first few characters, so only their matches are compared in full
/// (a long text's searcher is not built for every chunk).
fn find_slice(doc: &str, s: usize, e: usize, from: usize) -> usize {
    let needle = &doc[s..e];
    let mut head = needle.len().min(16);
    while !needle.is_char_boundary(head) {
        head += 1;
    }
    let (head, limit) = (&needle[..head], s + head);
    let mut at = from;
    // memchr's search (SIMD) rather than std's: this scans about the whole document per
    // chunking. A match of UTF-8 text begins on a character boundary, as std's would.
    while let Some(i) = memchr::memmem::find(&doc.as_bytes()[at..limit], head.as_bytes()) {
        let q = at + i;
        if q == s || doc[q..].starts_with(needle) {
            return q;
        }
        at = q + doc[q..].chars().next().map_or(1, char::len_utf8);
    }
    s
}

/// LlamaIndex's search for chunk texts in the document, in order.
#[derive(Default)]
struct Locator {
    /// Where the next search starts: one character past the last chunk found.
    from: usize,
    /// The last chunk found's start.
    last: usize,
}

impl Locator {
    /// The chunk for `doc[s..e]`, as `chunk` finds it.
    fn slice(&mut self, doc: &str, s: usize, e: usize) -> Chunk {
        if self.from > s || s == e {
            return self.chunk(doc, &doc[s..e]);
        }
        let at = find_slice(doc, s, e, self.from);
        self.found(doc, at, e - s)
    }

    /// The chunk of `len` bytes found at `at`; the next search starts one character later.
    fn found(&mut self, doc: &str, at: usize, len: usize) -> Chunk {
        self.from = at + doc[at..].chars().next().map_or(1, char::len_utf8);
        self.last = at;
        Chunk::slice(at, at + len)
    }

    /// The chunk for text `t`: where it is found, or (not found: LlamaIndex leaves it without an
    /// offset) its own text placed at the last chunk found.
    fn chunk(&mut self, doc: &str, t: &str) -> Chunk {
        match find_from(doc, t, self.from) {
            Some(at) => self.found(doc, at, t.len()),
            None => Chunk {
                start: self.last,
                end: self.last,
                text: Some(t.into()),
                heading: None,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SentenceSplitter

struct Piece {
    start: usize,
    end: usize,
    sentence: bool,
    tokens: usize,
}

/// `split_text_keep_separator`: pieces of `text[s..e]` cut before each `sep`, empties dropped.
fn keep_sep(text: &str, s: usize, e: usize, sep: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = s;
    for (i, _) in text[s..e].match_indices(sep) {
        let at = s + i;
        if at > from {
            out.push((from, at));
        }
        from = at;
    }
    if e > from {
        out.push((from, e));
    }
    out
}

/// The secondary regex: runs of non-marks with one optional mark after them, or a lone mark.
fn clause_pieces(text: &str, s: usize, e: usize) -> Vec<(usize, usize)> {
    let mark = |c: char| matches!(c, ',' | '.' | ';' | '。' | '？' | '！');
    let mut out = Vec::new();
    let mut it = text[s..e].char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let start = s + i;
        let mut end = start + c.len_utf8();
        if !mark(c) {
            while let Some(&(j, d)) = it.peek() {
                if mark(d) {
                    break;
                }
                end = s + j + d.len_utf8();
                it.next();
            }
            if let Some(&(j, d)) = it.peek() {
                end = s + j + d.len_utf8();
                it.next();
            }
        }
        out.push((start, end));
    }
    out
}

fn char_pieces(text: &str, s: usize, e: usize) -> Vec<(usize, usize)> {
    text[s..e]
        .char_indices()
        .map(|(i, c)| (s + i, s + i + c.len_utf8()))
        .collect()
}

/// Punkt's sentences of `text[s..e]`, each running to the next one's start.
fn sentence_pieces(text: &str, s: usize, e: usize, counter: &Counter) -> Vec<(usize, usize)> {
    let spans = counter.sentences(&text[s..e]);
    let start = |i: usize| spans[i].0 as usize;
    (0..spans.len())
        .map(|i| {
            let end = if i + 1 < spans.len() {
                start(i + 1)
            } else {
                e - s
            };
            (s + start(i), s + end.max(start(i)))
        })
        .collect()
}

/// `_get_splits_by_fns`: the first cut that gives more than one piece, and whether its pieces
/// count as sentences.
fn cut_sentence(text: &str, s: usize, e: usize, counter: &Counter) -> (Vec<(usize, usize)>, bool) {
    let p = keep_sep(text, s, e, "\n\n\n");
    if p.len() > 1 {
        return (p, true);
    }
    let p = sentence_pieces(text, s, e, counter);
    if p.len() > 1 {
        return (p, true);
    }
    let mut p = clause_pieces(text, s, e);
    if p.len() <= 1 {
        p = keep_sep(text, s, e, " ");
        if p.len() <= 1 {
            p = char_pieces(text, s, e);
        }
    }
    (p, false)
}

fn sentence_pieces_of(
    text: &str,
    s: usize,
    e: usize,
    size: usize,
    counter: &Counter,
    out: &mut Vec<Piece>,
) {
    let tokens = counter.count(&text[s..e]);
    if tokens <= size {
        out.push(Piece {
            start: s,
            end: e,
            sentence: true,
            tokens,
        });
        return;
    }
    let (cut, sentence) = cut_sentence(text, s, e, counter);
    let single = cut.len() == 1;
    for (a, b) in cut {
        let tokens = counter.count(&text[a..b]);
        if tokens <= size || single {
            out.push(Piece {
                start: a,
                end: b,
                sentence,
                tokens,
            });
        } else {
            sentence_pieces_of(text, a, b, size, counter, out);
        }
    }
}

/// The merge of SentenceSplitter: chunks as (first piece, past the last piece) indices.
fn sentence_merge(pieces: &[Piece], size: usize, overlap: usize) -> Vec<(usize, usize)> {
    let mut chunks = Vec::new();
    // The current chunk: pieces [from, to) (always consecutive), and its tokens.
    let (mut from, mut to, mut len) = (0usize, 0usize, 0usize);
    let mut fresh = true;
    let mut i = 0;
    let close = |from: &mut usize, to: &mut usize, len: &mut usize, chunks: &mut Vec<_>| {
        chunks.push((*from, *to));
        let last = (*from, *to);
        *from = last.1;
        *len = 0;
        // Whole pieces from the end of the closed chunk, while they fit in the overlap.
        while *from > last.0 && *len + pieces[*from - 1].tokens <= overlap {
            *from -= 1;
            *len += pieces[*from].tokens;
        }
        *to = last.1;
    };
    while i < pieces.len() {
        let p = &pieces[i];
        if len + p.tokens > size && !fresh {
            close(&mut from, &mut to, &mut len, &mut chunks);
            fresh = true;
            continue;
        }
        if fresh && len + p.tokens > size {
            while from < to && len + p.tokens > size {
                len -= pieces[from].tokens;
                from += 1;
            }
        }
        if p.sentence || len + p.tokens <= size || fresh {
            len += p.tokens;
            to = i + 1;
            i += 1;
            fresh = false;
        } else {
            close(&mut from, &mut to, &mut len, &mut chunks);
            fresh = true;
        }
    }
    if !fresh {
        chunks.push((from, to));
    }
    chunks
}

/// SentenceSplitter's chunks of `text` as byte ranges (stripped, non-empty).
fn sentence_split(
    text: &str,
    size: usize,
    overlap: usize,
    counter: &Counter,
) -> Vec<(usize, usize)> {
    let size = size.max(1);
    let mut pieces = Vec::new();
    sentence_pieces_of(text, 0, text.len(), size, counter, &mut pieces);
    stripped(
        text,
        sentence_merge(&pieces, size, overlap)
            .into_iter()
            .filter(|&(a, b)| b > a)
            .map(|(a, b)| (pieces[a].start, pieces[b - 1].end)),
    )
}

fn stripped(text: &str, ranges: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    ranges
        .map(|(s, e)| strip_range(text, s, e, is_python_space))
        .filter(|(s, e)| e > s)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searching a slice's text from before it finds what `str::find` finds, overlapping and
    /// repeated occurrences included.
    #[test]
    fn slice_search_equals_find() {
        for doc in [
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
            "the cat. the cat. the cat sat. the cat sat on it. the cat",
            "\u{e9}\u{e9}x \u{e9}\u{e9}x \u{e9}\u{e9}\u{e9}x \u{4E2D}\u{6587}\u{4E2D}\u{6587}\u{4E2D}",
        ] {
            let bounds: Vec<usize> = (0..=doc.len()).filter(|&i| doc.is_char_boundary(i)).collect();
            for (k, &s) in bounds.iter().enumerate() {
                for &e in &bounds[k + 1..] {
                    for &from in bounds.iter().take_while(|&&f| f <= s) {
                        let want = find_from(doc, &doc[s..e], from);
                        assert_eq!(Some(find_slice(doc, s, e, from)), want, "{doc:?} {s}..{e} from {from}");
                    }
                }
            }
        }
    }

    #[test]
    fn clause_regex_pieces() {
        let t = "a, b. c;d。e";
        let p: Vec<&str> = clause_pieces(t, 0, t.len())
            .into_iter()
            .map(|(s, e)| &t[s..e])
            .collect();
        assert_eq!(p, ["a,", " b.", " c;", "d。", "e"]);
        let t = ",,x";
        let p: Vec<&str> = clause_pieces(t, 0, t.len())
            .into_iter()
            .map(|(s, e)| &t[s..e])
            .collect();
        assert_eq!(p, [",", ",", "x"]);
    }

    #[test]
    fn separators_start_the_next_piece() {
        let t = " a  b ";
        let p: Vec<&str> = keep_sep(t, 0, t.len(), " ")
            .into_iter()
            .map(|(s, e)| &t[s..e])
            .collect();
        assert_eq!(p, [" a", " ", " b", " "]);
    }
}
