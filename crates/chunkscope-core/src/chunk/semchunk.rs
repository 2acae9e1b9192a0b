//! semchunk 4.1's `chunk` (Isaacus), reproduced offset for offset (its AI chunking aside).
//!
//! A text over the size is split at the most meaningful splitter it holds: the longest run of
//! newlines / carriage returns (else a single one), else the longest run of tabs (else one tab),
//! else the longest run of whitespace (else a single whitespace character, preferably one that
//! follows a sentence terminator, clause separator, interrupter or word joiner: `.` `?` `!` `;` `,`
//! `(` `)` `[` `]` `“` `”` `‘` `’` `'` `"` `` ` `` `*` `:` `—` `…` `/` `\` `–` `&` `-`, in that order),
//! else the first of those characters present, else characters. Splits over the size are chunked
//! again (recursively); runs of splits that fit are merged by semchunk's own search (a bisection
//! guided by the characters-per-token average seen so far, which decides where a chunk ends when
//! token counts are not monotonic). A non-whitespace splitter is put back on the end of the chunk
//! before it when that fits, else it becomes a chunk of its own. Empty and all-whitespace chunks are
//! dropped; nothing is stripped. Overlap (semchunk's `overlap` in tokens; a fraction f is the
//! overlap `floor(size × f)`) chunks at `min(overlap, size - overlap)` and joins
//! `floor(size / that)` sub-chunks per chunk, advancing `floor((size - overlap) / that)`.
//!
//! The size is the `size` knob, or with `size` 0 what `semchunk.chunkerify` takes for a
//! transformers tokenizer: `model_max_length` (tokenizer_config.json) less the tokens of an empty
//! encoding (the specials). The counter is the unit's: embed tokens without specials (a
//! tokenizers-based counter), characters (`len`) or cl100k.

use super::{Chunk, Chunker, DocView, StartCounter};
use crate::text::is_python_space;
use crate::tokenize::Unit;

pub struct Semchunk {
    pub unit: Unit,
    /// `chunk_size`; 0 = chunkerify's default for the model's tokenizer.
    pub size: usize,
    /// `overlap` in tokens (0 = none).
    pub overlap: usize,
}

/// What chunkerify takes when the tokenizer declares no `model_max_length` (transformers then
/// sets 1e30): nothing is ever over the size.
const UNBOUNDED: usize = usize::MAX >> 12;

/// semchunk's non-whitespace splitters, most desirable first.
const SPLITTERS: [char; 25] = [
    '.', '?', '!', ';', ',', '(', ')', '[', ']', '“', '”', '‘', '’', '\'', '"', '`', '*', ':', '—',
    '…', '/', '\\', '–', '&', '-',
];

impl Semchunk {
    /// The chunk size this chunker uses for `doc`'s tokenizer.
    pub fn chunk_size(&self, doc: &DocView) -> usize {
        if self.size > 0 {
            return self.size;
        }
        match doc.tok.model_max_length() {
            Some(m) => m.saturating_sub(doc.tok.specials()),
            None => UNBOUNDED,
        }
    }
}

impl Chunker for Semchunk {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let text = Text::new(doc, self.unit);
        let chunk_size = self.chunk_size(doc);
        text.chunks(text.chunk(chunk_size, self.overlap))
    }

    /// Without overlap (semchunk's default): chunks come out of the first split's pieces in
    /// order, so the first of them are found without the rest. With overlap, the windows over
    /// them are numbered from the whole count: none.
    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        if self.overlap > 0 {
            return None;
        }
        let text = Text::new(doc, self.unit);
        let chunk_size = self.chunk_size(doc);
        let (offsets, whole) = text.chunk_rec(0, text.chars.len(), chunk_size, n);
        let kept = offsets.into_iter().filter(|&r| text.kept(r)).collect();
        Some((text.chunks(kept), whole))
    }
}

/// The document as characters (semchunk counts Python code points), with byte offsets.
struct Text<'a> {
    /// Counts from the last start asked: a merge's binary search asks sizes from one split.
    counter: StartCounter<'a>,
    unit: Unit,
    chars: Vec<char>,
    /// Byte offset of each character, and the text's length last (a document's text is under
    /// 4 GiB: the corpus reads none larger than `max_document_bytes`).
    at: Vec<u32>,
}

/// How `_split_text` split a piece: the splitter's characters, whether it is whitespace, and the
/// splits as character ranges.
struct Splitting {
    splitter_len: usize,
    whitespace: bool,
    splits: Vec<(usize, usize)>,
}

impl<'a> Text<'a> {
    fn new(doc: &'a DocView<'a>, unit: Unit) -> Self {
        let mut chars = Vec::with_capacity(doc.text.len());
        let mut at = Vec::with_capacity(doc.text.len() + 1);
        for (i, c) in doc.text.char_indices() {
            chars.push(c);
            at.push(i as u32);
        }
        at.push(doc.text.len() as u32);
        Text {
            counter: StartCounter::new(doc),
            unit,
            chars,
            at,
        }
    }

    /// The token counter on characters `[a, b)`.
    fn count(&self, a: usize, b: usize) -> usize {
        if b <= a {
            return 0;
        }
        match self.unit {
            Unit::Chars => b - a,
            u => self
                .counter
                .count(u, self.at[a] as usize, self.at[b] as usize),
        }
    }

    /// Whether the first call keeps a chunk of characters `[s, e)`: not empty, not all whitespace.
    fn kept(&self, (s, e): (usize, usize)) -> bool {
        e > s && !self.is_space(s, e)
    }

    /// Character ranges as the document's chunks.
    fn chunks(&self, ranges: Vec<(usize, usize)>) -> Vec<Chunk> {
        ranges
            .into_iter()
            .map(|(s, e)| Chunk::slice(self.at[s] as usize, self.at[e] as usize))
            .collect()
    }

    fn is_space(&self, a: usize, b: usize) -> bool {
        b > a && self.chars[a..b].iter().all(|&c| is_python_space(c))
    }

    /// `_split_text` on characters `[a, b)`.
    fn split_text(&self, a: usize, b: usize) -> Splitting {
        let s = &self.chars[a..b];
        // Maximal runs of characters matching `is` that are at least two long; the first longest.
        let longest_run = |is: &dyn Fn(char) -> bool| -> Option<(usize, usize)> {
            let mut best: Option<(usize, usize)> = None;
            let mut i = 0;
            while i < s.len() {
                if !is(s[i]) {
                    i += 1;
                    continue;
                }
                let j = (i..s.len()).find(|&j| !is(s[j])).unwrap_or(s.len());
                if j - i >= 2 && best.is_none_or(|(x, y)| j - i > y - x) {
                    best = Some((i, j));
                }
                i = j;
            }
            best
        };
        let newline = |c: char| c == '\n' || c == '\r';
        let splitter: Vec<char>;
        let mut whitespace = true;
        if s.iter().any(|&c| newline(c)) {
            splitter = match longest_run(&newline) {
                Some((x, y)) => s[x..y].to_vec(),
                None => vec![*s.iter().find(|&&c| newline(c)).unwrap()],
            };
        } else if s.contains(&'\t') {
            splitter = match longest_run(&|c| c == '\t') {
                Some((x, y)) => s[x..y].to_vec(),
                None => vec!['\t'],
            };
        } else if let Some(&first_ws) = s.iter().find(|&&c| is_python_space(c)) {
            match longest_run(&|c| is_python_space(c)) {
                Some((x, y)) => splitter = s[x..y].to_vec(),
                None => {
                    // A whitespace character after a splitter, for the first splitter that has one:
                    // split only at that character where it follows that splitter.
                    for p in SPLITTERS {
                        let hit = s
                            .windows(2)
                            .find(|w| w[0] == p && is_python_space(w[1]))
                            .map(|w| w[1]);
                        if let Some(ws) = hit {
                            let mut splits = Vec::new();
                            let mut from = 0;
                            for i in 1..s.len() {
                                if s[i] == ws && s[i - 1] == p {
                                    splits.push((a + from, a + i));
                                    from = i + 1;
                                }
                            }
                            splits.push((a + from, b));
                            return Splitting {
                                splitter_len: 1,
                                whitespace: true,
                                splits,
                            };
                        }
                    }
                    splitter = vec![first_ws];
                }
            }
        } else if let Some(p) = SPLITTERS.iter().find(|p| s.contains(p)) {
            splitter = vec![*p];
            whitespace = false;
        } else {
            return Splitting {
                splitter_len: 0,
                whitespace: true,
                splits: (a..b).map(|i| (i, i + 1)).collect(),
            };
        }
        // str.split(splitter): non-overlapping occurrences, left to right.
        let l = splitter.len();
        let mut splits = Vec::new();
        let mut from = 0;
        let mut i = 0;
        while i + l <= s.len() {
            // The first character alone before the slice: most positions differ there.
            if s[i] == splitter[0] && s[i..i + l] == splitter[..] {
                splits.push((a + from, a + i));
                i += l;
                from = i;
            } else {
                i += 1;
            }
        }
        splits.push((a + from, b));
        Splitting {
            splitter_len: l,
            whitespace,
            splits,
        }
    }

    /// `merge_splits`: the index of the first split not merged into the chunk that starts at split
    /// `start`. `cum` holds the splits' starts relative to `base` (each split's length plus the
    /// splitter's, accumulated from 0).
    #[allow(clippy::too_many_arguments)]
    fn merge(
        &self,
        base: usize,
        len: usize,
        cum: &[usize],
        splitter_len: usize,
        chunk_size: usize,
        start: usize,
        mut high: usize,
    ) -> usize {
        let mut average = 0.2f64;
        let mut low = start;
        let offset = cum[start];
        let mut target = offset as f64 + chunk_size as f64 * average;
        while low < high {
            // bisect_left(cum, target, lo=low, hi=high)
            let i = low + cum[low..high].partition_point(|&c| (c as f64) < target);
            let mid = i.min(high - 1);
            let (x, y) = py_slice(
                len,
                cum[start] as isize,
                cum[mid] as isize - splitter_len as isize,
            );
            let tokens = self.count(base + x, base + y);
            let local_cum = cum[mid] - offset;
            if local_cum != 0 && tokens > 0 {
                average = local_cum as f64 / tokens as f64;
                target = offset as f64 + chunk_size as f64 * average;
            }
            if tokens > chunk_size {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        // Python returns `low - 1`; a chunk always takes its first split (it fits on its own),
        // so this is past `start` (kept so for safety: the loop must advance).
        low.max(start + 2) - 1
    }

    /// `chunk` on characters `[a, b)` with `chunk_size` (already the local size): character
    /// offsets, before the first call's filtering; stopping once `limit` of them are not empty
    /// or whitespace (the first split's pieces are chunked in order: these begin the whole
    /// answer), with whether they are all of them.
    fn chunk_rec(
        &self,
        a: usize,
        b: usize,
        chunk_size: usize,
        limit: usize,
    ) -> (Vec<(usize, usize)>, bool) {
        let sp = self.split_text(a, b);
        let l = sp.splitter_len;
        let n = sp.splits.len();
        let mut cum = Vec::with_capacity(n + 1);
        cum.push(0usize);
        for &(x, y) in &sp.splits {
            cum.push(cum[cum.len() - 1] + (y - x) + l);
        }
        let mut offsets: Vec<(usize, usize)> = Vec::new();
        let (mut checked, mut kept) = (0, 0);
        let mut i = 0;
        while i < n {
            if limit != usize::MAX {
                kept += offsets[checked..].iter().filter(|&&r| self.kept(r)).count();
                checked = offsets.len();
                if kept >= limit {
                    return (offsets, false);
                }
            }
            let (x, y) = sp.splits[i];
            let next;
            if self.count(x, y) > chunk_size && y - x == 1 {
                // One character over the size (a rare character is several byte tokens):
                // it stands alone. semchunk itself recurses on it without end.
                offsets.push((x, y));
                next = i + 1;
            } else if self.count(x, y) > chunk_size {
                offsets.extend(self.chunk_rec(x, y, chunk_size, usize::MAX).0);
                next = i + 1;
            } else {
                next = self.merge(a, b - a, &cum, l, chunk_size, i, n + 1);
                // Python's end offset: the next split's start less the splitter.
                let end = (a + cum[next]) as isize - l as isize;
                offsets.push((a + cum[i], end.max(0) as usize));
            }
            if !sp.whitespace && next < n {
                let last = *offsets.last().unwrap();
                if self.count(last.0, last.1 + l) <= chunk_size {
                    offsets.last_mut().unwrap().1 += l;
                } else {
                    offsets.push((last.1, last.1 + l));
                }
            }
            i = next;
        }
        (offsets, true)
    }

    /// The first call: chunk, drop empty and all-whitespace chunks, overlap.
    fn chunk(&self, chunk_size: usize, overlap: usize) -> Vec<(usize, usize)> {
        let mut local = chunk_size;
        let mut overlap = if overlap > 0 {
            overlap.min(chunk_size.saturating_sub(1))
        } else {
            0
        };
        let unoverlapped = chunk_size - overlap;
        if overlap > 0 {
            local = overlap.min(unoverlapped);
        } else {
            overlap = 0;
        }
        let offsets: Vec<(usize, usize)> = self
            .chunk_rec(0, self.chars.len(), local, usize::MAX)
            .0
            .into_iter()
            .filter(|&r| self.kept(r))
            .collect();
        if overlap == 0 || offsets.is_empty() {
            return offsets;
        }
        let subs = offsets.len();
        let per = chunk_size / local;
        let stride = unoverlapped / local;
        let windows =
            (((subs as f64 - per as f64) / stride as f64).ceil() as i64 + 1).max(1) as usize;
        (0..windows)
            .map(|i| {
                let start = i * stride;
                (offsets[start].0, offsets[(start + per).min(subs) - 1].1)
            })
            .collect()
    }
}

/// Python's `text[x:y]` bounds on a text of `len` characters (a negative end counts from the end).
fn py_slice(len: usize, x: isize, y: isize) -> (usize, usize) {
    let fix = |v: isize| -> usize {
        if v < 0 {
            (v + len as isize).max(0) as usize
        } else {
            (v as usize).min(len)
        }
    };
    let (x, y) = (fix(x), fix(y));
    (x, y.max(x))
}
