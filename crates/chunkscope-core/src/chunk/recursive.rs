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

    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        let mut out = Vec::new();
        let whole = self.split_up_to(doc, (0, doc.text.len()), &self.separators, &mut out, n);
        Some((out, whole))
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
        self.split_up_to(doc, (start, end), seps, out, usize::MAX);
    }

    /// `split`, stopping before the next piece once `out` holds `limit` chunks (pieces are
    /// merged in order and a chunk once out never changes: these begin the whole answer); true
    /// when the whole range was split.
    fn split_up_to(
        &self,
        doc: &DocView,
        (start, end): (usize, usize),
        seps: &[String],
        out: &mut Vec<Chunk>,
        limit: usize,
    ) -> bool {
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
        let mut good = Merge::default();
        for (a, b) in self.pieces(text, start, sep) {
            if out.len() >= limit {
                return false;
            }
            let len = doc.count(self.unit, a, b);
            if len < self.size {
                good.push(
                    self,
                    doc,
                    Piece {
                        start: a,
                        end: b,
                        len,
                    },
                    out,
                );
                continue;
            }
            good.finish(doc, out);
            if rest.is_empty() {
                out.push(Chunk::slice(a, b));
            } else {
                self.split(doc, a, b, rest, out);
            }
        }
        good.finish(doc, out);
        true
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
}

/// Consecutive pieces merged greedily into chunks of at most `size`, carrying up to `overlap`
/// units of trailing pieces into the next chunk: the run being built.
#[derive(Default)]
struct Merge {
    run: VecDeque<Piece>,
    total: usize,
}

impl Merge {
    fn push(&mut self, r: &Recursive, doc: &DocView, p: Piece, out: &mut Vec<Chunk>) {
        if self.total + p.len > r.size && !self.run.is_empty() {
            emit(doc, &self.run, out);
            while self.total > r.overlap || (self.total + p.len > r.size && self.total > 0) {
                match self.run.pop_front() {
                    Some(front) => self.total -= front.len,
                    None => break,
                }
            }
        }
        self.run.push_back(p);
        self.total += p.len;
    }

    /// The run out as the last chunk of its merge; the next piece starts a new merge.
    fn finish(&mut self, doc: &DocView, out: &mut Vec<Chunk>) {
        emit(doc, &self.run, out);
        self.run.clear();
        self.total = 0;
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
