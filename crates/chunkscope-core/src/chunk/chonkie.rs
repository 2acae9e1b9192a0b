//! chonkie 1.7.0's `RecursiveChunker` and `TokenChunker` at their default tokenizer
//! ("character": one token per Python code point), reproduced offset for offset.
//!
//! RecursiveChunker walks five levels: paragraphs (`"\n\n"`, `"\r\n"`, `"\n"`, `"\r"`), sentences
//! (`". "`, `"! "`, `"? "`), pauses (`{ } " [ ] < > ( ) : ; , — | ~ - ... ` '`), spaces, then fixed
//! groups of `size` characters. At each level the text is cut after every delimiter (the delimiter
//! stays on the piece before it; where several delimiters start at one place the one listed first
//! wins, as chonkie-core's leftmost-first automaton picks); then neighbouring pieces are glued,
//! left to right, while either the glued run or the next piece is shorter than
//! `min_characters_per_chunk` -- measured in UTF-8 bytes, as chonkie-core measures them. The pieces
//! are merged greedily (as many consecutive pieces as fit in `size` characters, at least one); a
//! merged piece over the size goes down one level, the others are chunks. Nothing is stripped or
//! dropped: the chunks tile the text.
//!
//! TokenChunker cuts windows of `size` characters every `size - overlap` characters, the last
//! window ending at the text's end; a text that is empty or all whitespace has no chunks.
//!
//! Both count characters whatever the unit knob says (chonkie's default tokenizer); the unit only
//! changes what the panes measure.

use super::{Chunk, Chunker, DocView};
use crate::text::is_python_space;

/// `RecursiveChunker(chunk_size=size, min_characters_per_chunk=min_chars)` with the default rules.
pub struct ChonkieRecursive {
    /// `chunk_size`, in characters.
    pub size: usize,
    /// `min_characters_per_chunk` (chonkie's default: 24), compared with UTF-8 byte lengths.
    pub min_chars: usize,
}

/// chonkie's default `min_characters_per_chunk`.
pub const CHONKIE_MIN_CHARS: usize = 24;

/// `TokenChunker(chunk_size=size, chunk_overlap=overlap)` with the character tokenizer.
pub struct ChonkieTokens {
    pub size: usize,
    pub overlap: usize,
}

const PARAGRAPHS: &[&str] = &["\n\n", "\r\n", "\n", "\r"];
const SENTENCES: &[&str] = &[". ", "! ", "? "];
const PAUSES: &[&str] = &[
    "{", "}", "\"", "[", "]", "<", ">", "(", ")", ":", ";", ",", "—", "|", "~", "-", "...", "`",
    "'",
];
const SPACES: &[&str] = &[" "];
/// The delimiter levels, followed by the level of fixed groups of characters.
const LEVELS: [&[&str]; 4] = [PARAGRAPHS, SENTENCES, PAUSES, SPACES];

impl Chunker for ChonkieRecursive {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let mut out = Vec::new();
        if self.size > 0 {
            self.recurse(doc.text, 0, doc.text.len(), 0, &mut out);
        }
        out.into_iter().map(|(s, e)| Chunk::slice(s, e)).collect()
    }
}

impl ChonkieRecursive {
    fn recurse(&self, text: &str, a: usize, b: usize, level: usize, out: &mut Vec<(usize, usize)>) {
        if a == b {
            return;
        }
        let Some(delimiters) = LEVELS.get(level) else {
            // The last level: groups of `size` characters, never merged.
            out.extend(char_groups(text, a, b, self.size));
            return;
        };
        let pieces = split_after(text, a, b, delimiters, self.min_chars);
        let counts: Vec<usize> = pieces
            .iter()
            .map(|&(x, y)| text[x..y].chars().count())
            .collect();
        let mut i = 0;
        while i < pieces.len() {
            // As many pieces as fit, at least one.
            let mut j = i + 1;
            let mut sum = counts[i];
            while j < pieces.len() && sum + counts[j] <= self.size {
                sum += counts[j];
                j += 1;
            }
            let (x, y) = (pieces[i].0, pieces[j - 1].1);
            if sum > self.size {
                self.recurse(text, x, y, level + 1, out);
            } else {
                out.push((x, y));
            }
            i = j;
        }
    }
}

/// `text[a..b]` cut after every leftmost-first occurrence of a delimiter, then short pieces glued
/// to their neighbours: a run grows while it or the next piece is under `min_bytes` bytes.
fn split_after(
    text: &str,
    a: usize,
    b: usize,
    delimiters: &[&str],
    min_bytes: usize,
) -> Vec<(usize, usize)> {
    let bytes = &text.as_bytes()[..b];
    // Only a byte that begins some delimiter is compared with the delimiters.
    let mut begins = [false; 256];
    for d in delimiters {
        begins[usize::from(d.as_bytes()[0])] = true;
    }
    let mut cuts = Vec::new();
    let mut from = a;
    let mut i = a;
    while i < b {
        if !begins[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        match delimiters
            .iter()
            .find(|d| bytes[i..].starts_with(d.as_bytes()))
        {
            Some(d) => {
                i += d.len();
                cuts.push((from, i));
                from = i;
            }
            None => i += 1,
        }
    }
    if from < b {
        cuts.push((from, b));
    }
    if min_bytes == 0 {
        return cuts;
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for (x, y) in cuts {
        run = Some(match run {
            None => (x, y),
            Some((rx, ry)) if ry - rx < min_bytes || y - x < min_bytes => (rx, y),
            Some(r) => {
                out.push(r);
                (x, y)
            }
        });
    }
    out.extend(run);
    out
}

/// `text[a..b]` in consecutive groups of `size` characters, as byte ranges.
fn char_groups(text: &str, a: usize, b: usize, size: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = a;
    let mut n = 0;
    for (i, _) in text[a..b].char_indices() {
        if n == size {
            out.push((from, a + i));
            from = a + i;
            n = 0;
        }
        n += 1;
    }
    if from < b {
        out.push((from, b));
    }
    out
}

impl Chunker for ChonkieTokens {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        token_windows(doc.text, self.size, self.overlap)
            .into_iter()
            .map(|(s, e)| Chunk::slice(s, e))
            .collect()
    }
}

/// TokenChunker's windows over the characters of `text`, as byte ranges.
fn token_windows(text: &str, size: usize, overlap: usize) -> Vec<(usize, usize)> {
    if size == 0 || overlap >= size || text.chars().all(is_python_space) {
        return Vec::new();
    }
    // Byte offset of every character, and the text's length last.
    let at: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let n = at.len() - 1;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + size).min(n);
        out.push((at[start], at[end]));
        if end == n {
            break;
        }
        start += size - overlap;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recursive(t: &str, size: usize) -> Vec<&str> {
        let c = ChonkieRecursive {
            size,
            min_chars: CHONKIE_MIN_CHARS,
        };
        let mut out = Vec::new();
        c.recurse(t, 0, t.len(), 0, &mut out);
        out.into_iter().map(|(s, e)| &t[s..e]).collect()
    }

    #[test]
    fn delimiters_stay_on_the_piece_before_and_short_pieces_glue() {
        assert_eq!(
            split_after("a\n\nb\nc", 0, 6, PARAGRAPHS, 0),
            [(0, 3), (3, 5), (5, 6)]
        );
        assert_eq!(
            split_after("x\r\n\n", 0, 4, PARAGRAPHS, 0),
            [(0, 3), (3, 4)]
        );
        assert_eq!(split_after("a....b", 0, 6, PAUSES, 0), [(0, 4), (4, 6)]);
        // "ab " is under 4 bytes: it takes the next piece, and so on.
        assert_eq!(
            split_after("ab cdefg hijkl m", 0, 16, SPACES, 4),
            [(0, 9), (9, 16)]
        );
    }

    #[test]
    fn chunks_tile_the_text() {
        let t = "One sentence here. Another one follows! And a third? Yes.\n\nA new paragraph, with pauses; and words.";
        for size in [1, 5, 17, 40, 2048] {
            let c = recursive(t, size);
            assert_eq!(c.concat(), t, "size {size}");
            assert!(c.iter().all(|x| x.chars().count() <= size), "{size}: {c:?}");
        }
        assert_eq!(recursive(t, 2048), [t]);
        assert!(recursive("", 10).is_empty());
    }

    #[test]
    fn token_windows_advance_by_size_less_overlap() {
        let t = "abcdefghij";
        let groups = |size, overlap| -> Vec<&str> {
            token_windows(t, size, overlap)
                .into_iter()
                .map(|(s, e)| &t[s..e])
                .collect()
        };
        assert_eq!(groups(4, 0), ["abcd", "efgh", "ij"]);
        assert_eq!(groups(4, 2), ["abcd", "cdef", "efgh", "ghij"]);
        assert_eq!(groups(20, 0), ["abcdefghij"]);
        assert!(token_windows(" \n\u{3000}", 4, 0).is_empty());
        assert_eq!(token_windows("é中😀x", 2, 1).len(), 3);
    }
}
