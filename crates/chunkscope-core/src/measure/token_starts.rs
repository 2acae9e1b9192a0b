//! Where each embed token of a chunk starts, held in a few bytes a chunk: every chunking on
//! screen keeps this for all its chunks (two while a knob is turned).
//!
//! A chunk that is a slice of its document, under a word-local tokenizer, has the document's
//! own tokens but for the words its boundaries cut: it keeps the run of the document's tokens it
//! covers (first and count) and the starts of the cut words' tokens, and reads the rest from the
//! document's tokens (`DocTokens`, shared with the engine). Other chunks keep each token as the
//! distance from the previous token's start, a byte each; a distance of 255 or more, or one that
//! goes back, is marked and its start kept aside.

use std::sync::Arc;

use crate::tokenize::{DocTokens, SliceTokens};

/// The mark of a start kept aside, after the steps.
const FAR: u8 = u8::MAX;

/// The bit of `TokenStarts::size` that says the segment is a run of the document's tokens.
const RUN: u32 = 1 << 31;

/// A chunk's starts: a segment of a buffer shared by the file's chunks (`StartsBuilder::
/// finish_into`, `share_all`; one allocation per file rather than per chunk, so a dropped
/// chunking leaves large free blocks, not a small hole beside every chunk's starts), in one of
/// two layouts:
/// - steps: a byte a token, then the starts kept aside as (token, start) pairs by token, then
///   the number of those pairs;
/// - run (`size & RUN`): the chunk's first byte in the document, the run's first token in the
///   document and its length, the number of head starts, the head starts, the tail starts (all
///   relative to the chunk but the run, as little-endian u32s).
///
/// No tokens: an empty segment.
#[derive(Clone, Default)]
pub struct TokenStarts {
    buf: Option<Arc<Shared>>,
    at: u32,
    size: u32,
}

/// A file's chunks' segments, and the document's tokens their runs are read from.
struct Shared {
    bytes: Box<[u8]>,
    doc: Option<Arc<DocTokens>>,
}

impl PartialEq for TokenStarts {
    fn eq(&self, other: &TokenStarts) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for TokenStarts {}

impl std::fmt::Debug for TokenStarts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

impl FromIterator<u32> for TokenStarts {
    fn from_iter<I: IntoIterator<Item = u32>>(starts: I) -> Self {
        let starts = starts.into_iter();
        let mut b = StartsBuilder::with_capacity(starts.size_hint().0);
        starts.for_each(|s| b.push(s));
        b.finish()
    }
}

/// `TokenStarts` built one start at a time, in order.
pub struct StartsBuilder {
    steps: Vec<u8>,
    far: Vec<(u32, u32)>,
    prev: u32,
}

impl StartsBuilder {
    /// A builder with room for `tokens` starts.
    pub fn with_capacity(tokens: usize) -> StartsBuilder {
        StartsBuilder {
            steps: Vec::with_capacity(tokens),
            far: Vec::new(),
            prev: 0,
        }
    }

    /// The starts pushed so far.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn push(&mut self, start: u32) {
        match start.checked_sub(self.prev) {
            Some(d) if d < u32::from(FAR) => self.steps.push(d as u8),
            _ => {
                self.far.push((self.steps.len() as u32, start));
                self.steps.push(FAR);
            }
        }
        self.prev = start;
    }

    /// The starts in a buffer of their own.
    pub fn finish(self) -> TokenStarts {
        let mut buf = Vec::new();
        let mut t = self.finish_into(&mut buf);
        share_all([&mut t], &buf, None);
        t
    }

    /// The starts appended to `buf` (a file's chunks' starts, one after another): the segment
    /// they take there, to `share_all` with the buffer once it is complete.
    pub fn finish_into(self, buf: &mut Vec<u8>) -> TokenStarts {
        let at = buf.len();
        if !self.steps.is_empty() {
            buf.extend_from_slice(&self.steps);
            for (token, start) in &self.far {
                buf.extend_from_slice(&token.to_le_bytes());
                buf.extend_from_slice(&start.to_le_bytes());
            }
            buf.extend_from_slice(&(self.far.len() as u32).to_le_bytes());
        }
        TokenStarts {
            buf: None,
            at: at as u32,
            size: (buf.len() - at) as u32,
        }
    }
}

/// The starts of the chunk `start..` of a document, as `DocTokens::embed_slice` found its tokens
/// (`slice`), appended to `buf` as `StartsBuilder::finish_into` does: the run's starts are read
/// from the document's tokens given to `share_all`.
pub fn run_into(slice: &SliceTokens, start: usize, buf: &mut Vec<u8>) -> TokenStarts {
    if slice.is_empty() {
        return TokenStarts::default();
    }
    let at = buf.len();
    let rel = |a: &u32| a.saturating_sub(start as u32);
    let words = [start as u32, slice.run.0 as u32, slice.run.1 as u32]
        .into_iter()
        .chain([slice.head.len() as u32])
        .chain(slice.head.iter().map(rel))
        .chain(slice.tail.iter().map(rel));
    for w in words {
        buf.extend_from_slice(&w.to_le_bytes());
    }
    TokenStarts {
        buf: None,
        at: at as u32,
        size: (buf.len() - at) as u32 | RUN,
    }
}

/// Give `segments` (from `finish_into` and `run_into` into `buf`, now complete) their starts:
/// one allocation of the exact size for all of them (a shrunk one would leave a small free piece
/// beside it), beside `doc`, the document's tokens that runs are read from.
pub fn share_all<'a>(
    segments: impl IntoIterator<Item = &'a mut TokenStarts>,
    buf: &[u8],
    doc: Option<&Arc<DocTokens>>,
) {
    if buf.is_empty() {
        return;
    }
    let buf = Arc::new(Shared {
        bytes: Box::from(buf),
        doc: doc.cloned(),
    });
    for t in segments {
        t.share(&buf);
    }
}

/// The length of a run's header: the chunk's start, the run's first token and length, the
/// number of head starts.
const RUN_HEADER: usize = 16;

impl TokenStarts {
    /// The segment, now in `buf` (what `finish_into` appended to, complete).
    fn share(&mut self, buf: &Arc<Shared>) {
        debug_assert!(self.at as usize + self.bytes_len() <= buf.bytes.len());
        debug_assert!(
            !self.reads_document() || buf.doc.is_some(),
            "a run needs its document"
        );
        if self.size > 0 {
            self.buf = Some(Arc::clone(buf));
        }
    }

    /// Whether the starts are read from the document's tokens (a run) rather than kept.
    pub fn reads_document(&self) -> bool {
        self.size & RUN != 0
    }

    fn bytes_len(&self) -> usize {
        (self.size & !RUN) as usize
    }

    fn bytes(&self) -> &[u8] {
        match &self.buf {
            Some(b) => &b.bytes[self.at as usize..][..self.bytes_len()],
            None => {
                debug_assert_eq!(self.size, 0, "token starts used before `share_all`");
                &[]
            }
        }
    }

    /// A run's chunk start, first token, run length, head length and tail length, and the
    /// document's tokens.
    fn run(&self) -> Option<(Run, &DocTokens)> {
        if !self.reads_document() {
            return None;
        }
        let shared = self.buf.as_deref()?;
        let bytes = self.bytes();
        let head = u32_at(bytes, 12) as usize;
        Some((
            Run {
                start: u32_at(bytes, 0),
                first: u32_at(bytes, 4) as usize,
                len: u32_at(bytes, 8) as usize,
                head,
                tail: (bytes.len() - RUN_HEADER) / 4 - head,
            },
            shared.doc.as_deref()?,
        ))
    }

    /// How many starts are kept aside (steps layout).
    fn far_count(&self) -> usize {
        let bytes = self.bytes();
        match bytes.len() {
            0 => 0,
            n => u32_at(bytes, n - 4) as usize,
        }
    }

    fn steps(&self) -> &[u8] {
        &self.bytes()[..self.len()]
    }

    /// The `i`th (token, start) kept aside.
    fn far(&self, i: usize) -> (u32, u32) {
        let (bytes, at) = (self.bytes(), self.len() + i * 8);
        (u32_at(bytes, at), u32_at(bytes, at + 4))
    }

    pub fn len(&self) -> usize {
        if let Some((r, _)) = self.run() {
            return r.head + r.len + r.tail;
        }
        match self.bytes_len() {
            0 => 0,
            n => n - 4 - self.far_count() * 8,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every start, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (run, steps, far_count) = match self.run() {
            Some(_) => (0..self.len(), &[][..], 0),
            None => (0..0, self.steps(), self.far_count()),
        };
        let mut far = (0..far_count).map(|i| self.far(i));
        let stepped = steps.iter().scan(0u32, move |at, &d| {
            *at = match d {
                FAR => far.next().map_or(*at, |(_, s)| s),
                d => *at + u32::from(d),
            };
            Some(*at)
        });
        run.filter_map(|k| self.get(k)).chain(stepped)
    }

    /// The start of token `k`.
    pub fn get(&self, k: usize) -> Option<u32> {
        if let Some((r, doc)) = self.run() {
            let bytes = self.bytes();
            let listed = |i: usize| u32_at(bytes, RUN_HEADER + 4 * i);
            return if k < r.head {
                Some(listed(k))
            } else if k < r.head + r.len {
                Some(
                    doc.embed
                        .start(r.first + k - r.head)
                        .saturating_sub(r.start),
                )
            } else if k < r.head + r.len + r.tail {
                Some(listed(k - r.len))
            } else {
                None
            };
        }
        let steps = self.steps();
        if k >= steps.len() {
            return None;
        }
        // Walk from the last start kept aside at or before `k`: the first one after it, by a
        // binary search over the pairs.
        let (mut lo, mut hi) = (0, self.far_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.far(mid).0 as usize <= k {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (from, mut at) = match lo.checked_sub(1) {
            Some(i) => {
                let (t, s) = self.far(i);
                (t as usize, s)
            }
            None => (0, u32::from(steps[0])),
        };
        for &d in &steps[from + 1..=k] {
            at += u32::from(d);
        }
        Some(at)
    }

    /// The token that byte `b` falls in: the last one starting at or before `b` (0 if none).
    pub fn token_at_byte(&self, b: usize) -> usize {
        if self.reads_document() {
            // A run's starts rise token after token: a binary search.
            let (mut lo, mut hi) = (0, self.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.get(mid).is_some_and(|s| s as usize <= b) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo.saturating_sub(1);
        }
        self.iter()
            .take_while(|&s| s as usize <= b)
            .count()
            .saturating_sub(1)
    }

    /// Heap bytes held (the document's tokens a run reads are the engine's).
    pub fn heap_bytes(&self) -> usize {
        self.bytes_len()
    }
}

/// A run segment's header, read.
struct Run {
    /// The chunk's first byte in the document.
    start: u32,
    /// The run's first token in the document, and its length.
    first: usize,
    len: usize,
    /// Starts listed before and after the run.
    head: usize,
    tail: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_come_back() {
        let want = [0u32, 3, 3, 7, 400, 401, 2, 2000, 2254, 2255];
        let t: TokenStarts = want.iter().copied().collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), want);
        let got: Vec<u32> = (0..want.len()).map(|k| t.get(k).unwrap()).collect();
        assert_eq!(got, want);
        assert_eq!(t.get(want.len()), None);
        assert_eq!(t.token_at_byte(5), 2);
        assert_eq!(t.token_at_byte(0), 0);
        assert!(t.heap_bytes() < want.len() * 4);
        // A first start past 254 is kept aside too.
        let t: TokenStarts = [300u32, 301].into_iter().collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), [300, 301]);
        assert_eq!(t.get(1), Some(301));
        // No tokens: nothing held.
        let t: TokenStarts = std::iter::empty().collect();
        assert_eq!((t.len(), t.heap_bytes(), t.get(0)), (0, 0, None));
        assert!(t.is_empty());
    }

    /// Chunks' starts one after another in a shared buffer read back as each chunk's own.
    #[test]
    fn starts_in_a_shared_buffer_are_each_chunks_own() {
        let chunks: [&[u32]; 4] = [&[0, 3, 700, 704], &[], &[5, 2, 9], &[0, 1000, 1001, 3000]];
        let mut buf = Vec::new();
        let mut segments: Vec<TokenStarts> = chunks
            .iter()
            .map(|starts| {
                let mut b = StartsBuilder::with_capacity(starts.len());
                starts.iter().for_each(|&s| b.push(s));
                b.finish_into(&mut buf)
            })
            .collect();
        share_all(&mut segments, &buf, None);
        for (t, want) in segments.iter().zip(chunks) {
            assert_eq!(t.iter().collect::<Vec<_>>(), want);
            assert_eq!(t.len(), want.len());
            assert_eq!(*t, want.iter().copied().collect::<TokenStarts>());
            for (k, &w) in want.iter().enumerate() {
                assert_eq!(t.get(k), Some(w));
            }
        }
    }

    /// Steps of every size around the mark, starts that go back, long runs kept aside: every
    /// start comes back by `iter` and by `get`.
    #[test]
    fn every_start_comes_back_from_mixed_steps() {
        let mut want = Vec::new();
        let mut at = 0u32;
        let mut seed = 7u64;
        for _ in 0..5000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            at = match seed >> 60 {
                0 => at.saturating_sub((seed >> 40) as u32 % 50),
                1 => at + 254,
                2 => at + 255,
                3 => at + 256 + (seed >> 32) as u32 % 100_000,
                _ => at + (seed >> 32) as u32 % 12,
            };
            want.push(at);
        }
        let t: TokenStarts = want.iter().copied().collect();
        assert_eq!(t.len(), want.len());
        assert_eq!(t.iter().collect::<Vec<_>>(), want);
        for (k, &w) in want.iter().enumerate() {
            assert_eq!(t.get(k), Some(w), "start {k}");
        }
    }
}
