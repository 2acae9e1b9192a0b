//! Recursive separator splitting with greedy merging: LangChain's RecursiveCharacterTextSplitter
//! semantics (separator kept at the start of the next piece, overlap only inside one merge run,
//! whitespace stripped from merged chunks), and our `recursive` variant that keeps each separator at
//! the end of the piece it closes, so a sentence keeps its full stop.

use std::collections::VecDeque;

use super::{Chunk, Chunker, DocView};
use crate::text::{is_python_space, strip_range};
use crate::tokenize::Unit;

pub struct Recursive {
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
    pub separators: Vec<String>,
    pub keep_at_end: bool,
}

/// A piece of the document with its length in the splitter's unit.
#[derive(Clone, Copy)]
struct Piece {
    start: usize,
    end: usize,
    len: usize,
}

impl Chunker for Recursive {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let mut out = Vec::new();
        self.split(doc, 0, doc.text.len(), &self.separators, &mut out);
        out
    }
}

impl Recursive {
    pub(super) fn split(
        &self,
        doc: &DocView,
        start: usize,
        end: usize,
        seps: &[String],
        out: &mut Vec<Chunk>,
    ) {
        let text = &doc.text[start..end];
        // The first separator present wins; "" (characters) ends the list.
        let mut sep = seps.last().map(String::as_str).unwrap_or("");
        let mut rest: &[String] = &[];
        for (i, s) in seps.iter().enumerate() {
            if s.is_empty() {
                sep = "";
                break;
            }
            if memchr::memmem::find(text.as_bytes(), s.as_bytes()).is_some() {
                sep = s;
                rest = &seps[i + 1..];
                break;
            }
        }
        let mut good: Vec<Piece> = Vec::new();
        for (a, b) in self.pieces(text, start, sep) {
            let len = doc.count(self.unit, a, b);
            if len < self.size {
                good.push(Piece {
                    start: a,
                    end: b,
                    len,
                });
                continue;
            }
            if !good.is_empty() {
                self.merge(doc, &good, out);
                good.clear();
            }
            if rest.is_empty() {
                out.push(Chunk::slice(a, b));
            } else {
                self.split(doc, a, b, rest, out);
            }
        }
        if !good.is_empty() {
            self.merge(doc, &good, out);
        }
    }

    /// Split `text` (which starts at byte `base` of the document) at every occurrence of `sep`,
    /// keeping the separator with one side; empty pieces are dropped.
    fn pieces(&self, text: &str, base: usize, sep: &str) -> Vec<(usize, usize)> {
        if sep.is_empty() {
            return text
                .char_indices()
                .map(|(i, c)| (base + i, base + i + c.len_utf8()))
                .collect();
        }
        let shift = if self.keep_at_end { sep.len() } else { 0 };
        // memchr's substring search (SIMD, a memchr for one byte) finds what `match_indices` finds:
        // non-overlapping occurrences, left to right.
        let mut cuts = vec![0];
        cuts.extend(memchr::memmem::find_iter(text.as_bytes(), sep.as_bytes()).map(|i| i + shift));
        cuts.push(text.len());
        cuts.windows(2)
            .filter(|w| w[1] > w[0])
            .map(|w| (base + w[0], base + w[1]))
            .collect()
    }

    /// Greedily merge consecutive pieces into chunks of at most `size`, carrying up to `overlap`
    /// units of trailing pieces into the next chunk.
    fn merge(&self, doc: &DocView, pieces: &[Piece], out: &mut Vec<Chunk>) {
        let mut run: VecDeque<Piece> = VecDeque::new();
        let mut total = 0usize;
        for &p in pieces {
            if total + p.len > self.size && !run.is_empty() {
                emit(doc, &run, out);
                while total > self.overlap || (total + p.len > self.size && total > 0) {
                    match run.pop_front() {
                        Some(front) => total -= front.len,
                        None => break,
                    }
                }
            }
            run.push_back(p);
            total += p.len;
        }
        emit(doc, &run, out);
    }
}

/// The joined run, stripped of surrounding whitespace; nothing when it is all whitespace.
fn emit(doc: &DocView, run: &VecDeque<Piece>, out: &mut Vec<Chunk>) {
    let (Some(first), Some(last)) = (run.front(), run.back()) else {
        return;
    };
    let (s, e) = strip_range(doc.text, first.start, last.end, is_python_space);
    if e > s {
        out.push(Chunk::slice(s, e));
    }
}
